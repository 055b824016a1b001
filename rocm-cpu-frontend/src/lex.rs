//! The one C++ lexer of the cpu front end, and the token list the rest of it reads; public for
//! tools that read HIP sources the way the build does (`scripts/public-suite`).
//!
//! Used on kernel sources as written (the `extern __shared__` rewrite) and on the preprocessed
//! translation unit (finding kernels, the region form). It knows what it must not misread:
//! comments, string and character literals (with encoding prefixes, raw strings and
//! user-defined suffixes), pp-numbers (`1.5e-3f`, `1'000`), multi-character punctuators, and
//! preprocessor lines: `#pragma` lines are tokens (the region form keeps a pragma with the
//! statement it precedes), every other directive is set aside, line markers (`# 12 "file" 2`)
//! read from them (`Tokens::line_markers`, inside the crate).
//!
//! Tokens keep byte spans into the text, so generated code copies the user's text as written,
//! and their line. Brackets are matched once, here, so finding the end of a body is a lookup.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A name or keyword.
    Ident,
    /// A pp-number: `42`, `1.5e-3f`, `0x1p4`, `1'000`.
    Number,
    /// A string or character literal, prefixes and suffix included.
    Literal,
    /// An operator or punctuator, longest match (`<<=`, `::`, `->`).
    Punct,
    /// A whole `#pragma` line.
    Pragma,
}

/// One token: its kind, its bytes in the text, and the line it starts on (1-based).
#[derive(Debug, Clone, Copy)]
pub struct Token {
    /// What it is.
    pub kind: Kind,
    /// Its first byte in the text.
    pub start: usize,
    /// Just past its last byte.
    pub end: usize,
    /// The line it starts on, 1-based.
    pub line: u32,
}

/// A preprocessor line other than `#pragma` (`#include`, `#define`, a line marker `# 12 "f"`):
/// its bytes.
#[derive(Debug, Clone, Copy)]
struct Directive {
    start: usize,
    end: usize,
}

/// A line marker of preprocessed output: `# LINE "FILE" FLAGS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineMarker<'a> {
    /// The line of `file` that the next line of the text is.
    pub line: u32,
    /// The file, as the preprocessor names it (`<built-in>` for its own).
    pub file: &'a str,
    /// `1` entering an include, `2` returning, `3` a system header, `4` extern "C".
    pub flags: Vec<&'a str>,
}

/// The tokens of a text.
pub struct Tokens<'a> {
    text: &'a str,
    toks: Vec<Token>,
    /// For each bracket token `(`, `[`, `{`, the index of the one closing it, and the reverse
    /// (`NONE` where unbalanced): brackets pair up regardless of their kind, as a depth count
    /// over all three would.
    partner: Vec<u32>,
    directives: Vec<Directive>,
}

const NONE: u32 = u32::MAX;

/// The length of the punctuator at `i`, longest match: `<<=` `>>=` `...` `->*` (3), `::` `->`
/// `++` `--` `<<` `>>` `<=` `>=` `==` `!=` `&&` `||` `+=` `-=` `*=` `/=` `%=` `&=` `|=` `^=`
/// `.*` (2), else 1.
fn punct_len(b: &[u8], i: usize) -> usize {
    let at = |k: usize| b.get(i + k).copied().unwrap_or(0);
    match (b[i], at(1), at(2)) {
        (b'<', b'<', b'=') | (b'>', b'>', b'=') | (b'.', b'.', b'.') | (b'-', b'>', b'*') => 3,
        (b':', b':', _)
        | (b'-', b'>', _)
        | (b'+', b'+', _)
        | (b'-', b'-', _)
        | (b'<', b'<', _)
        | (b'>', b'>', _)
        | (b'&', b'&', _)
        | (b'|', b'|', _)
        | (b'.', b'*', _)
        | (
            b'<' | b'>' | b'=' | b'!' | b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^',
            b'=',
            _,
        ) => 2,
        _ => 1,
    }
}

/// Encoding prefixes of a raw string literal (`R"x(...)x"`).
const RAW_PREFIXES: &[&str] = &["R", "u8R", "uR", "UR", "LR"];

fn ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// Just past the string or character literal whose opening quote is at `open`.
fn end_of_quoted(b: &[u8], open: usize) -> usize {
    let q = b[open];
    let mut i = open + 1;
    while i < b.len() && b[i] != q {
        if b[i] == b'\\' {
            i += 1;
        }
        i += 1;
    }
    (i + 1).min(b.len())
}

/// Just past the raw string literal whose `"` is at `open`: `"delim( ... )delim"`.
fn end_of_raw(text: &str, open: usize) -> usize {
    let rest = &text[open + 1..];
    let Some(paren) = rest.find('(') else {
        return text.len();
    };
    let closing = format!("){}\"", &rest[..paren]);
    match rest[paren..].find(&closing) {
        Some(at) => open + 1 + paren + at + closing.len(),
        None => text.len(),
    }
}

/// Just past a pp-number starting at `start`: digits, letters, `.`, `'` and a sign after an
/// exponent letter.
fn end_of_number(b: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < b.len() {
        let d = b[i];
        let exponent_sign =
            (d == b'+' || d == b'-') && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P');
        if d.is_ascii_alphanumeric() || d == b'.' || d == b'_' || d == b'\'' || exponent_sign {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// Tokenise `text`.
pub fn lex(text: &str) -> Tokens<'_> {
    let b = text.as_bytes();
    let mut toks = Vec::with_capacity(text.len() / 4);
    let mut directives = Vec::new();
    let mut line: u32 = 1;
    let mut i = 0;
    let mut line_start = true;
    // Newlines in [from, to), for tokens and skipped text that span lines.
    let count_lines =
        |from: usize, to: usize| b[from..to].iter().filter(|&&c| c == b'\n').count() as u32;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line_start = true;
            line += 1;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if line_start && c == b'#' {
            // To the end of the line, backslash continuations included.
            while i < b.len() && b[i] != b'\n' {
                if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                i += 1;
            }
            if text[start + 1..i].trim_start().starts_with("pragma") {
                toks.push(Token {
                    kind: Kind::Pragma,
                    start,
                    end: i,
                    line,
                });
            } else {
                directives.push(Directive { start, end: i });
            }
            line += count_lines(start, i);
            continue;
        }
        line_start = false;
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i = (i + 2).min(b.len());
            line += count_lines(start, i);
            continue;
        }
        let kind = if c == b'"' || c == b'\'' {
            i = end_of_quoted(b, i);
            Kind::Literal
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            i = end_of_number(b, i);
            Kind::Number
        } else if ident_byte(c) {
            while i < b.len() && ident_byte(b[i]) {
                i += 1;
            }
            match b.get(i) {
                // Encoding prefixes (`u8"..."`, `L'x'`) and raw strings (`R"(...)"`).
                Some(b'"') if RAW_PREFIXES.contains(&&text[start..i]) => {
                    i = end_of_raw(text, i);
                    Kind::Literal
                }
                Some(b'"' | b'\'') => {
                    i = end_of_quoted(b, i);
                    Kind::Literal
                }
                _ => Kind::Ident,
            }
        } else {
            i += punct_len(b, i);
            // Keep byte boundaries valid for non-ASCII punctuation (never expected in C++).
            while !text.is_char_boundary(i) {
                i += 1;
            }
            Kind::Punct
        };
        if kind == Kind::Literal {
            // A user-defined literal's suffix (`"abc"_s`) belongs to it.
            while i < b.len() && ident_byte(b[i]) {
                i += 1;
            }
        }
        toks.push(Token {
            kind,
            start,
            end: i,
            line,
        });
        if kind == Kind::Literal {
            line += count_lines(start, i);
        }
    }
    let partner = pair_brackets(text, &toks);
    Tokens {
        text,
        toks,
        partner,
        directives,
    }
}

fn pair_brackets(text: &str, toks: &[Token]) -> Vec<u32> {
    let mut partner = vec![NONE; toks.len()];
    let mut open: Vec<usize> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t.kind != Kind::Punct || t.end != t.start + 1 {
            continue;
        }
        match text.as_bytes()[t.start] {
            b'(' | b'[' | b'{' => open.push(i),
            b')' | b']' | b'}' => {
                if let Some(o) = open.pop() {
                    partner[o] = i as u32;
                    partner[i] = o as u32;
                }
            }
            _ => {}
        }
    }
    partner
}

impl<'a> Tokens<'a> {
    /// The text that was lexed.
    pub(crate) fn source_text(&self) -> &'a str {
        self.text
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.toks.len()
    }

    /// Whether the text has no tokens.
    pub fn is_empty(&self) -> bool {
        self.toks.is_empty()
    }

    /// The byte spans of the preprocessor lines other than `#pragma` (`#include`, `#if`, line
    /// markers), in order.
    pub fn directives(&self) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        self.directives.iter().map(|d| d.start..d.end)
    }

    /// Token `i` (its kind, span and line).
    pub fn token(&self, i: usize) -> Token {
        self.toks[i]
    }

    /// The kind of token `i`, `None` past the end.
    pub fn kind(&self, i: usize) -> Option<Kind> {
        self.toks.get(i).map(|t| t.kind)
    }

    /// The text of token `i`, or "" past the end.
    pub fn tok(&self, i: usize) -> &'a str {
        self.toks.get(i).map_or("", |t| &self.text[t.start..t.end])
    }

    /// Whether token `i` is `s`.
    pub fn is(&self, i: usize, s: &str) -> bool {
        self.tok(i) == s
    }

    /// Whether token `i` is a name or keyword.
    pub fn ident(&self, i: usize) -> bool {
        self.kind(i) == Some(Kind::Ident)
    }

    /// Whether token `i` ends an operand (a name, a number, `)` or `]`): an operator after it
    /// is binary (`a & b`, `x * y`), not unary (`&a`, `*p`).
    pub(crate) fn ends_operand(&self, i: usize) -> bool {
        matches!(self.kind(i), Some(Kind::Ident | Kind::Number)) || matches!(self.tok(i), ")" | "]")
    }

    /// Source text of tokens [a, b), as written (spaces and comments between them included).
    pub fn text(&self, a: usize, b: usize) -> &'a str {
        if a >= b {
            return "";
        }
        &self.text[self.toks[a].start..self.toks[b - 1].end]
    }

    /// Index of the bracket closing the `(`, `[` or `{` at `open`.
    pub fn close(&self, open: usize) -> Option<usize> {
        match self.partner.get(open) {
            Some(&p) if p != NONE && p as usize > open => Some(p as usize),
            _ => None,
        }
    }

    /// Index of the bracket opening the `)`, `]` or `}` at `close`.
    pub(crate) fn open_of(&self, close: usize) -> Option<usize> {
        match self.partner.get(close) {
            Some(&p) if p != NONE && (p as usize) < close => Some(p as usize),
            _ => None,
        }
    }

    /// Index of the `>` closing the template argument list opened at `open` (a `>>` closes
    /// two).
    pub fn close_angle(&self, open: usize) -> Option<usize> {
        let mut depth = 0i32;
        let mut paren = 0i32;
        for i in open..self.toks.len() {
            match self.tok(i) {
                "(" | "[" => paren += 1,
                ")" | "]" => paren -= 1,
                "<" if paren == 0 => depth += 1,
                ">" if paren == 0 => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                ">>" if paren == 0 => {
                    depth -= 2;
                    if depth <= 0 {
                        return Some(i);
                    }
                }
                ";" | "{" | "}" => return None,
                _ => {}
            }
        }
        None
    }

    /// Split [a, b) at commas outside brackets.
    pub fn split_commas(&self, a: usize, b: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut depth = 0i32;
        let mut start = a;
        for i in a..b {
            match self.tok(i) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => depth -= 1,
                "," if depth == 0 => {
                    out.push((start, i));
                    start = i + 1;
                }
                _ => {}
            }
        }
        if start < b {
            out.push((start, b));
        }
        out
    }

    /// Where token `i` comes from: the line marker in force there (the file, and flags such as
    /// `3` for a system header) and the token's line in that file. None in text without line
    /// markers.
    pub(crate) fn origin(&self, i: usize) -> Option<(LineMarker<'a>, u32)> {
        let at = self.toks.get(i)?.start;
        let before = self.directives.partition_point(|d| d.start < at);
        self.directives[..before].iter().rev().find_map(|d| {
            let marker = self.marker(d)?;
            // The marker names the line after it; count on from there.
            let marker_line =
                self.text[..d.start].bytes().filter(|&c| c == b'\n').count() as u32 + 1;
            let line = marker.line + self.toks[i].line.saturating_sub(marker_line + 1);
            Some((marker, line))
        })
    }

    /// The line marker a directive is, if it is one.
    fn marker(&self, d: &Directive) -> Option<LineMarker<'a>> {
        let rest = self.text[d.start + 1..d.end].trim_start();
        let rest = rest.strip_prefix("line").unwrap_or(rest).trim_start();
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let line = rest[..digits].parse().ok()?;
        let rest = rest[digits..].trim_start().strip_prefix('"')?;
        let close = rest.find('"')?;
        Some(LineMarker {
            line,
            file: &rest[..close],
            flags: rest[close + 1..].split_whitespace().collect(),
        })
    }

    /// The line markers of preprocessed output (`# 12 "file" 1 3`).
    pub(crate) fn line_markers(&self) -> impl Iterator<Item = LineMarker<'a>> + '_ {
        self.directives.iter().filter_map(|d| self.marker(d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_know_the_file_and_line_they_come_from() {
        let t = lex("# 1 \"k.hip\"\nint a;\n# 7 \"h.h\" 1 3\n\nint b;\n# 3 \"k.hip\" 2\nint c;");
        let at = |name: &str| {
            let i = (0..t.len()).find(|&i| t.is(i, name)).unwrap();
            let (m, line) = t.origin(i).unwrap();
            (m.file.to_string(), line, m.flags.contains(&"3"))
        };
        assert_eq!(at("a"), ("k.hip".into(), 1, false));
        assert_eq!(at("b"), ("h.h".into(), 8, true));
        assert_eq!(at("c"), ("k.hip".into(), 3, false));
        assert!(lex("int x;").origin(0).is_none());
    }

    fn texts(t: &Tokens) -> Vec<String> {
        (0..t.len()).map(|i| t.tok(i).to_string()).collect()
    }

    #[test]
    fn comments_and_directives_are_not_tokens_but_pragmas_are() {
        let t = lex("#include <x.h>\n#define A(x) \\\n  (x)\n// a { comment\nint /* } */ a;\n  #pragma unroll\nfor");
        assert_eq!(texts(&t), ["int", "a", ";", "#pragma unroll", "for"]);
        assert_eq!(t.kind(3), Some(Kind::Pragma));
        // Lines count the continuation and the comment.
        assert_eq!(t.token(0).line, 5);
        assert_eq!(t.token(4).line, 7);
    }

    #[test]
    fn literals_are_whole_tokens() {
        let src = r#"a = "x\"}" + 'y' + u8"z" + L'w' + R"d(a ")" b)d" + "s"_op; '}';"#;
        let t = lex(src);
        let lits: Vec<&str> = (0..t.len())
            .filter(|&i| t.kind(i) == Some(Kind::Literal))
            .map(|i| t.tok(i))
            .collect();
        assert_eq!(
            lits,
            [
                r#""x\"}""#,
                "'y'",
                r#"u8"z""#,
                "L'w'",
                r#"R"d(a ")" b)d""#,
                r#""s"_op"#,
                "'}'"
            ]
        );
        assert!(t.close(0).is_none(), "no brackets outside literals");
    }

    #[test]
    fn numbers_and_punctuators_take_the_longest_match() {
        let t = lex("x+=1'000+1.5e-3f>>=a->b::c...0x1p+4;p->*m|=a||b!=c..d");
        assert_eq!(
            texts(&t),
            [
                "x", "+=", "1'000", "+", "1.5e-3f", ">>=", "a", "->", "b", "::", "c", "...",
                "0x1p+4", ";", "p", "->*", "m", "|=", "a", "||", "b", "!=", "c", ".", ".", "d"
            ]
        );
        assert_eq!(t.kind(2), Some(Kind::Number));
    }

    #[test]
    fn brackets_are_paired_and_angles_counted() {
        let t = lex("f(a[1], {b}) < x; t<a<b>> y;");
        // f ( a [ 1 ] , { b } ) ...
        assert_eq!(t.close(1), Some(10));
        assert_eq!(t.open_of(10), Some(1));
        assert_eq!(t.close(3), Some(5));
        assert_eq!(t.close(7), Some(9));
        let lt = (0..t.len()).find(|&i| t.is(i, "t")).unwrap() + 1;
        assert!(t.is(t.close_angle(lt).unwrap(), ">>"));
        assert_eq!(t.split_commas(2, 10).len(), 2);
        assert_eq!(t.text(0, 2), "f(");
    }

    #[test]
    fn line_markers_are_read_from_directives() {
        let t = lex("# 1 \"a.hip\"\n# 12 \"/usr/include/x.h\" 1 3 4\n#line 3 \"b.h\"\nint x;\n");
        let m: Vec<LineMarker> = t.line_markers().collect();
        assert_eq!(m.len(), 3);
        assert_eq!(m[1].file, "/usr/include/x.h");
        assert_eq!(m[1].line, 12);
        assert_eq!(m[1].flags, ["1", "3", "4"]);
        assert_eq!(m[2].file, "b.h");
    }
}
