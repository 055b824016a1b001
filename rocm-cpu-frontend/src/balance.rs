//! Unbalanced brackets, found by the front end before any compiler runs: a missing `}` makes the
//! host compiler read the generated entry points as part of the user's kernel and print hundreds
//! of lines about generated files; this names the bracket left open, at the user's file and line.
//!
//! Which `{` lacks its `}` is a guess the compiler cannot make either (it only knows the file
//! ended); indentation tells: a `}` that begins its line to the left of the line that opened the
//! `{` it closes most likely belongs to an outer bracket, so the `{` it closes is the one missing
//! its `}`.

use super::lex::{Kind, Tokens};

/// A bracket the front end found unbalanced: where (file as in the line markers, line, column)
/// and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unbalanced {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub message: String,
}

/// The first unbalanced bracket of a preprocessed unit, if any.
pub fn check(toks: &Tokens) -> Option<Unbalanced> {
    let mut open: Vec<usize> = Vec::new();
    // Each `{` closed by a `}` indented left of it: the likely culprit when one stays open
    // (libstdc++ has such pairs too: only those after the outermost bracket left open count).
    let mut suspects: Vec<(usize, usize)> = Vec::new();
    for i in 0..toks.len() {
        if toks.kind(i) != Some(Kind::Punct) {
            continue;
        }
        let t = toks.tok(i);
        match t {
            "(" | "[" | "{" => open.push(i),
            ")" | "]" | "}" => {
                let Some(o) = open.pop() else {
                    return Some(at(
                        toks,
                        i,
                        format!("unmatched `{t}`: no bracket is open here"),
                    ));
                };
                let opener = toks.tok(o);
                if pair(opener) != t {
                    let (line, _) = position(toks, i);
                    return Some(at(
                        toks,
                        o,
                        format!(
                            "this `{opener}` is not closed: a `{t}` on line {line} comes first \
                             (a missing `{}`?)",
                            pair(opener)
                        ),
                    ));
                }
                if t == "}" && starts_line(toks, i) && indent(toks, i) < indent(toks, o) {
                    suspects.push((o, i));
                }
            }
            _ => {}
        }
    }
    let innermost = *open.last()?;
    let outermost = open[0];
    let suspect = suspects.into_iter().find(|&(o, _)| o > outermost);
    let (o, why) = match suspect {
        Some((o, close)) => {
            let (line, _) = position(toks, close);
            (
                o,
                format!(
                    "this `{{` has no matching `}}`: the file ends with brackets still open, and \
                     the `}}` on line {line}, indented left of this line, most likely closes an \
                     outer bracket"
                ),
            )
        }
        None => (
            innermost,
            format!(
                "this `{}` has no matching `{}`: the file ends first",
                toks.tok(innermost),
                pair(toks.tok(innermost))
            ),
        ),
    };
    Some(at(toks, o, why))
}

/// [`check`] on a source file as written (not preprocessed: both sides of an `#if` count), for a
/// compile that already failed, where the compiler's own message may only say "at end of source".
pub(crate) fn check_file(
    path: &std::path::Path,
    crate_root: &std::path::Path,
) -> Option<crate::Diagnostic> {
    let text = std::fs::read_to_string(path).ok()?;
    let toks = super::lex::lex(&text);
    let u = check(&toks)?;
    Some(crate::Diagnostic {
        file: crate::diagnostics::display_name(path, crate_root),
        line: u.line,
        column: Some(u.column),
        severity: "error".into(),
        message: u.message,
    })
}

fn pair(open: &str) -> &'static str {
    match open {
        "(" => ")",
        "[" => "]",
        _ => "}",
    }
}

fn at(toks: &Tokens, i: usize, message: String) -> Unbalanced {
    let (fallback_line, column) = position(toks, i);
    let (file, line) = match toks.origin(i) {
        Some((marker, line)) => (marker.file.to_string(), line),
        None => (String::new(), fallback_line),
    };
    Unbalanced {
        file,
        line,
        column,
        message,
    }
}

/// The token's line in the text and its column (1-based, in bytes).
fn position(toks: &Tokens, i: usize) -> (u32, u32) {
    let t = toks.token(i);
    let text = toks.source_text();
    let line_start = text[..t.start].rfind('\n').map_or(0, |p| p + 1);
    (t.line, (t.start - line_start + 1) as u32)
}

/// Whether token `i` is the first on its line.
fn starts_line(toks: &Tokens, i: usize) -> bool {
    i == 0 || toks.token(i - 1).line != toks.token(i).line
}

/// The column of the first token on token `i`'s line.
fn indent(toks: &Tokens, i: usize) -> u32 {
    let line = toks.token(i).line;
    let mut first = i;
    while first > 0 && toks.token(first - 1).line == line {
        first -= 1;
    }
    position(toks, first).1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lex::lex;

    fn check_text(text: &str) -> Option<(u32, u32, String)> {
        let toks = lex(text);
        check(&toks).map(|u| (u.line, u.column, u.message))
    }

    #[test]
    fn balanced_code_passes() {
        assert_eq!(
            check_text("void f(int* a) {\n  if (a[0]) { a[1] = (2); }\n}\n"),
            None
        );
    }

    #[test]
    fn a_missing_close_brace_is_found_by_indentation() {
        let src = "__global__ void k(float* y, int n) {\n    int i = threadIdx.x;\n    if (i < n) {\n        y[i] = 1.0f;\n\n}\n__global__ void j(float* y) { y[0] = 2.0f; }\n";
        let (line, column, message) = check_text(src).unwrap();
        assert_eq!((line, column), (3, 16), "{message}");
        assert!(message.contains("no matching `}`"), "{message}");
        assert!(message.contains("line 6"), "{message}");
    }

    #[test]
    fn without_a_hint_the_innermost_open_bracket_is_named() {
        let (line, column, message) = check_text("void f() {\n  g();\n").unwrap();
        assert_eq!((line, column), (1, 10), "{message}");
    }

    #[test]
    fn a_stray_close_and_a_mismatch_are_named() {
        let (line, _, message) = check_text("void f() {}\n}\n").unwrap();
        assert_eq!(line, 2);
        assert!(message.contains("unmatched `}`"), "{message}");
        let (line, column, message) = check_text("void f() {\n  g(1;\n}\n").unwrap();
        assert_eq!((line, column), (2, 4), "{message}");
        assert!(message.contains("missing `)`"), "{message}");
    }

    #[test]
    fn line_markers_give_the_users_file_and_line() {
        let text = "# 1 \"gen.cpp\"\n# 1 \"/c/kernels.hip\"\nvoid a() {}\nvoid f() {\n";
        let toks = lex(text);
        let u = check(&toks).unwrap();
        assert_eq!((u.file.as_str(), u.line), ("/c/kernels.hip", 2));
    }
}
