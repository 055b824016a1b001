//! The barrier-region form of kernels for the cpu backend.
//!
//! A GPU runs the threads of a block in lockstep waves; the per-thread fibers of the cpu runtime
//! emulate that faithfully but pay a context switch per thread at every barrier and collective.
//! This module rewrites a kernel into a second C++ function that runs a *whole block* without
//! fibers, in the manner of loop fission over barriers (MCUDA, POCL's work-group loops):
//!
//! * the code between two barriers runs as a loop over the block's threads ("lanes");
//! * variables declared at the level of barriers (so possibly live across one) get one slot per
//!   lane; the lane loop binds the kernel's own names to the lane's slots (`auto& x = slot[t]`),
//!   so the kernel's text is kept as written;
//! * `if`/`for`/`while`/`do` that contain a barrier run once for the block, with a mask of the
//!   lanes that take them (as a GPU runs a wave under an execution mask); `break`, `continue` and
//!   `return` of a lane update its state;
//! * a warp collective inside a statement splits it in two: one lane loop evaluates the operand
//!   of every lane, then the statement runs per lane with the collective's result computed from
//!   the lanes of its wave. A barrier becomes a check that every live lane reached it.
//!
//! The input is the translation unit after preprocessing (so macros cannot hide a barrier); the
//! output is C++ appended to the unit, compiled by the same compiler. A kernel gets no region
//! form, and keeps running on fibers, whenever something is outside what this rewrite handles
//! (a call to a function that itself contains a barrier or collective, `goto`, `switch` or
//! range-`for` around a barrier, a reference declared between barriers...): the reason is kept.
//! The build also compiles without region forms if the generated code does not compile.
//!
//! Hand-written rather than built on a C++ front end (libclang): the rewrite needs statement
//! structure only, and the cpu backend must keep working with just a host C++ compiler.

use std::collections::{BTreeMap, BTreeSet};

/// A kernel definition's region form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionForm {
    /// The kernel's qualified name without template arguments (`ns::scale`).
    pub kernel: String,
    /// The block function's qualified name (`ns::rk_block_scale`).
    pub block_fn: String,
    /// C++ to append to the translation unit.
    pub code: String,
    /// The block function runs whole blocks (no barriers or collectives), not waves.
    pub whole_block: bool,
}

/// What [`generate`] made of a translation unit.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub forms: Vec<RegionForm>,
    /// Kernels (qualified names) that keep running on fibers, with why.
    pub fibers: Vec<(String, String)>,
}

impl Outcome {
    /// The region form of a kernel named as [`super::scan`] names it (`ns::scale<float>`): the
    /// C++ expression naming its block function (`ns::rk_block_scale<float>`).
    #[cfg(test)]
    pub fn block_ref(&self, cpp_ref: &str) -> Option<String> {
        self.form(cpp_ref)
            .map(|(f, args)| format!("{}{args}", f.block_fn))
    }

    /// The form of a kernel named as [`super::scan`] names it, with its template arguments.
    pub fn form<'a>(&self, cpp_ref: &'a str) -> Option<(&RegionForm, &'a str)> {
        let (base, args) = match cpp_ref.find('<') {
            Some(at) => (&cpp_ref[..at], &cpp_ref[at..]),
            None => (cpp_ref, ""),
        };
        self.forms
            .iter()
            .find(|f| f.kernel == base)
            .map(|f| (f, args))
    }
}

const COLLECTIVES: &[&str] = &[
    "__syncthreads",
    "__syncthreads_count",
    "__syncthreads_and",
    "__syncthreads_or",
    "__shfl",
    "__shfl_up",
    "__shfl_down",
    "__shfl_xor",
    "__shfl_sync",
    "__shfl_up_sync",
    "__shfl_down_sync",
    "__shfl_xor_sync",
    "__ballot",
    "__ballot64",
    "__ballot_sync",
    "__any",
    "__all",
    "__any_sync",
    "__all_sync",
    "__activemask",
];

/// What the runtime's collectives bottom out in: a function reaching one waits for other threads.
const RUNTIME_WAITS: &[&str] = &["rk_syncthreads", "rk_syncthreads_op", "rk_warp_op"];

const ASSIGN_OPS: &[&str] = &[
    "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=",
];

/// Words that can precede a name in an expression, so `word name =` or `word name[` is no
/// declaration.
const NOT_TYPES: &[&str] = &[
    "return",
    "else",
    "do",
    "case",
    "goto",
    "throw",
    "sizeof",
    "co_return",
];

/// Words that start an expression statement, never a declaration.
const EXPR_WORDS: &[&str] = &[
    "delete",
    "throw",
    "new",
    "sizeof",
    "alignof",
    "static_cast",
    "dynamic_cast",
    "reinterpret_cast",
    "const_cast",
    "this",
    "true",
    "false",
    "nullptr",
    "asm",
    "__asm__",
    "__asm",
    "typeid",
    "co_await",
    "co_yield",
    "co_return",
    "return",
    "operator",
];

// ---------------------------------------------------------------------------------------------
// Tokens.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ident,
    Num,
    Str,
    Punct,
    Pragma,
}

#[derive(Debug, Clone, Copy)]
struct Tok {
    kind: Kind,
    s: usize,
    e: usize,
}

const PUNCTS: &[&str] = &[
    "<<=", ">>=", "...", "->*", "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",
    "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*",
];

struct Src<'a> {
    text: &'a str,
    toks: Vec<Tok>,
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

impl<'a> Src<'a> {
    fn new(text: &'a str) -> Src<'a> {
        let b = text.as_bytes();
        let mut toks = Vec::new();
        let mut i = 0;
        let mut line_start = true;
        while i < b.len() {
            let c = b[i];
            if c == b'\n' {
                line_start = true;
                i += 1;
                continue;
            }
            if c.is_ascii_whitespace() {
                i += 1;
                continue;
            }
            if line_start && c == b'#' {
                let start = i;
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                let line = text[start + 1..i].trim_start();
                if line.starts_with("pragma") {
                    toks.push(Tok {
                        kind: Kind::Pragma,
                        s: start,
                        e: i,
                    });
                }
                // Line markers (`# 12 "file"`) are skipped; they stay inside copied text.
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
                i += 2;
                continue;
            }
            let start = i;
            if c == b'"' || c == b'\'' {
                i = end_of_quoted(b, i);
                toks.push(Tok {
                    kind: Kind::Str,
                    s: start,
                    e: i,
                });
                continue;
            }
            if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
                // A pp-number: digits, letters, `.`, `'` and a sign after an exponent letter.
                i += 1;
                while i < b.len() {
                    let d = b[i];
                    let exponent_sign =
                        (d == b'+' || d == b'-') && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P');
                    if d.is_ascii_alphanumeric()
                        || d == b'.'
                        || d == b'_'
                        || d == b'\''
                        || exponent_sign
                    {
                        i += 1;
                    } else {
                        break;
                    }
                }
                toks.push(Tok {
                    kind: Kind::Num,
                    s: start,
                    e: i,
                });
                continue;
            }
            if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80)
                {
                    i += 1;
                }
                // String literal prefixes (u8"..", L'..').
                if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
                    i = end_of_quoted(b, i);
                    toks.push(Tok {
                        kind: Kind::Str,
                        s: start,
                        e: i,
                    });
                    continue;
                }
                toks.push(Tok {
                    kind: Kind::Ident,
                    s: start,
                    e: i,
                });
                continue;
            }
            let len = PUNCTS
                .iter()
                .find(|p| text[i..].starts_with(**p))
                .map_or(1, |p| p.len());
            // Keep byte boundaries valid for non-ASCII punctuation (never expected after -E).
            let mut e = i + len;
            while !text.is_char_boundary(e) {
                e += 1;
            }
            toks.push(Tok {
                kind: Kind::Punct,
                s: i,
                e,
            });
            i = e;
        }
        Src { text, toks }
    }

    fn t(&self, i: usize) -> &'a str {
        self.toks.get(i).map_or("", |t| &self.text[t.s..t.e])
    }

    fn is(&self, i: usize, s: &str) -> bool {
        self.t(i) == s
    }

    fn ident(&self, i: usize) -> bool {
        self.toks.get(i).is_some_and(|t| t.kind == Kind::Ident)
    }

    /// Whether token `i` ends an operand (a name, a number, `)` or `]`): an operator after it
    /// is binary (`a & b`, `x * y`), not unary (`&a`, `*p`).
    fn ends_operand(&self, i: usize) -> bool {
        self.toks
            .get(i)
            .is_some_and(|t| matches!(t.kind, Kind::Ident | Kind::Num))
            || matches!(self.t(i), ")" | "]")
    }

    /// Source text of tokens [a, b).
    fn text(&self, a: usize, b: usize) -> &'a str {
        if a >= b {
            return "";
        }
        &self.text[self.toks[a].s..self.toks[b - 1].e]
    }

    /// Index of the bracket closing the one at `open` (`(`, `[` or `{`).
    fn close(&self, open: usize) -> Option<usize> {
        let mut depth = 0i32;
        for i in open..self.toks.len() {
            match self.t(i) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// Index of the `>` closing the template argument list opened at `open`.
    fn close_angle(&self, open: usize) -> Option<usize> {
        let mut depth = 0i32;
        let mut paren = 0i32;
        for i in open..self.toks.len() {
            match self.t(i) {
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
    fn split_commas(&self, a: usize, b: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut depth = 0i32;
        let mut start = a;
        for i in a..b {
            match self.t(i) {
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
}

// ---------------------------------------------------------------------------------------------
// Statements.

/// A `for` header: `init ;` (with its semicolon), condition, step, as token ranges.
type ForParts = ((usize, usize), (usize, usize), (usize, usize));

#[derive(Debug)]
enum St {
    Block(Vec<Stmt>),
    If {
        cond: (usize, usize),
        then: Box<Stmt>,
        els: Option<Box<Stmt>>,
        constexpr: bool,
    },
    For {
        /// `init ;` including the semicolon, `cond`, `inc`; None for a range-for.
        parts: Option<ForParts>,
        body: Box<Stmt>,
    },
    While {
        cond: (usize, usize),
        body: Box<Stmt>,
    },
    Do {
        body: Box<Stmt>,
        cond: (usize, usize),
    },
    Switch {
        body: Box<Stmt>,
    },
    /// `return [expr];` with the expression's range.
    Return((usize, usize)),
    Break,
    Continue,
    /// `case X:` / `default:` inside a switch.
    Case,
    /// An expression statement, a declaration, or `;`.
    Simple,
    /// Something the rewrite does not take apart (`goto`, a label, `try`).
    Other(&'static str),
}

#[derive(Debug)]
struct Stmt {
    /// Tokens [start, end) (a leading `#pragma` included).
    start: usize,
    end: usize,
    st: St,
}

struct Parser<'s, 'a> {
    src: &'s Src<'a>,
}

type PResult<T> = Result<T, String>;

impl Parser<'_, '_> {
    fn expect(&self, i: usize, s: &str) -> PResult<()> {
        if self.src.is(i, s) {
            Ok(())
        } else {
            Err(format!("expected `{s}` but found `{}`", self.src.t(i)))
        }
    }

    fn paren(&self, open: usize) -> PResult<usize> {
        self.expect(open, "(")?;
        self.src
            .close(open)
            .ok_or_else(|| "unbalanced parentheses".to_string())
    }

    /// Statements from `i` up to the `}` at `end`.
    fn block(&self, mut i: usize, end: usize) -> PResult<Vec<Stmt>> {
        let mut out = Vec::new();
        while i < end {
            let s = self.stmt(i)?;
            if s.end > end {
                return Err("a statement runs past its block".into());
            }
            i = s.end;
            out.push(s);
        }
        Ok(out)
    }

    fn stmt(&self, i: usize) -> PResult<Stmt> {
        let src = self.src;
        if i >= src.toks.len() {
            return Err("unexpected end of the kernel".into());
        }
        if src.toks[i].kind == Kind::Pragma {
            let mut s = self.stmt(i + 1)?;
            s.start = i;
            return Ok(s);
        }
        let mk = |end: usize, st: St| Ok(Stmt { start: i, end, st });
        match src.t(i) {
            "{" => {
                let close = src.close(i).ok_or("unbalanced braces")?;
                mk(close + 1, St::Block(self.block(i + 1, close)?))
            }
            "if" => {
                let constexpr = src.is(i + 1, "constexpr");
                let open = if constexpr { i + 2 } else { i + 1 };
                let close = self.paren(open)?;
                let then = self.stmt(close + 1)?;
                let (els, end) = if src.is(then.end, "else") {
                    let e = self.stmt(then.end + 1)?;
                    let end = e.end;
                    (Some(Box::new(e)), end)
                } else {
                    (None, then.end)
                };
                mk(
                    end,
                    St::If {
                        cond: (open + 1, close),
                        then: Box::new(then),
                        els,
                        constexpr,
                    },
                )
            }
            "for" => {
                let open = i + 1;
                let close = self.paren(open)?;
                let mut semis = Vec::new();
                let mut depth = 0i32;
                for k in open + 1..close {
                    match src.t(k) {
                        "(" | "[" | "{" => depth += 1,
                        ")" | "]" | "}" => depth -= 1,
                        ";" if depth == 0 => semis.push(k),
                        _ => {}
                    }
                }
                let parts = match semis[..] {
                    [s1, s2] => Some(((open + 1, s1 + 1), (s1 + 1, s2), (s2 + 1, close))),
                    [] => None,
                    _ => return Err("unexpected `for` header".into()),
                };
                let body = self.stmt(close + 1)?;
                mk(
                    body.end,
                    St::For {
                        parts,
                        body: Box::new(body),
                    },
                )
            }
            "while" => {
                let close = self.paren(i + 1)?;
                let body = self.stmt(close + 1)?;
                mk(
                    body.end,
                    St::While {
                        cond: (i + 2, close),
                        body: Box::new(body),
                    },
                )
            }
            "do" => {
                let body = self.stmt(i + 1)?;
                self.expect(body.end, "while")?;
                let close = self.paren(body.end + 1)?;
                self.expect(close + 1, ";")?;
                mk(
                    close + 2,
                    St::Do {
                        cond: (body.end + 2, close),
                        body: Box::new(body),
                    },
                )
            }
            "switch" => {
                let close = self.paren(i + 1)?;
                let body = self.stmt(close + 1)?;
                mk(
                    body.end,
                    St::Switch {
                        body: Box::new(body),
                    },
                )
            }
            "return" => {
                let end = self.simple_end(i)?;
                mk(end, St::Return((i + 1, end - 1)))
            }
            "break" => {
                self.expect(i + 1, ";")?;
                mk(i + 2, St::Break)
            }
            "continue" => {
                self.expect(i + 1, ";")?;
                mk(i + 2, St::Continue)
            }
            "case" | "default" => {
                let mut k = i + 1;
                while k < src.toks.len() && !src.is(k, ":") {
                    k += 1;
                }
                mk(k + 1, St::Case)
            }
            "goto" => mk(self.simple_end(i)?, St::Other("goto")),
            "try" => Err("`try` in a kernel".into()),
            "else" => Err("`else` without `if`".into()),
            _ if src.ident(i) && src.is(i + 1, ":") => mk(i + 2, St::Other("a label")),
            _ => mk(self.simple_end(i)?, St::Simple),
        }
    }

    /// End (after the `;`) of a simple statement starting at `i`.
    fn simple_end(&self, i: usize) -> PResult<usize> {
        let mut depth = 0i32;
        for k in i..self.src.toks.len() {
            match self.src.t(k) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => {
                    depth -= 1;
                    if depth < 0 {
                        return Err("unbalanced brackets in a statement".into());
                    }
                }
                ";" if depth == 0 => return Ok(k + 1),
                _ => {}
            }
        }
        Err("a statement without `;`".into())
    }
}

// ---------------------------------------------------------------------------------------------
// Declarations at barrier level.

#[derive(Debug, Clone)]
enum Init {
    None,
    /// `= expr`
    Expr(usize, usize),
    /// `(args)` or `{args}` (direct or list initialisation; the bool: braces)
    Args(usize, usize, bool),
}

#[derive(Debug, Clone)]
struct DeclVar {
    name: String,
    init: Init,
    /// Array dimensions text, e.g. `[4][8]`.
    dims: String,
}

#[derive(Debug, Clone)]
enum Decl {
    /// Not a declaration.
    No,
    /// Same for every lane and evaluated once (types, `static`, `constexpr`, `__shared__`,
    /// uniform constants): emitted between lane loops.
    Hoist,
    /// One slot per lane. `ty` is None for `auto`. `declared`: false for an assignment the
    /// rewrite treats as a new declaration (see [`Gen::region`]).
    Lanes {
        ty: Option<String>,
        vars: Vec<DeclVar>,
        declared: bool,
    },
    /// A renewed assignment turned back into a lane-local declaration (its code).
    Renewed(String),
}

// ---------------------------------------------------------------------------------------------
// Generation.

struct Gen<'s, 'a> {
    src: &'s Src<'a>,
    out: String,
    /// Lane variables in scope, innermost scope last: (name, storage).
    scopes: Vec<Vec<(String, String)>>,
    /// Barrier-level loops enclosing the code being generated.
    loops: usize,
    next_id: usize,
    /// Lane loop labels: (id, used).
    labels: Vec<(usize, bool)>,
    /// Inside code run under a mask (a branch, a loop with a per-lane condition).
    masked: usize,
    /// Some lane may have returned (lane code with `return` was emitted).
    returned: bool,
    /// The lane loop being generated contains a `return`.
    returned_here: bool,
}

/// Inside lane code: what a `break`/`continue` binds to.
#[derive(Clone, Copy)]
struct LaneCtx {
    in_loop: bool,
    in_switch: bool,
}

impl Gen<'_, '_> {
    fn id(&mut self) -> usize {
        self.next_id += 1;
        self.next_id
    }

    fn push(&mut self, s: &str) {
        self.out.push_str(s);
    }

    fn has_collective(&self, a: usize, b: usize) -> bool {
        (a..b).any(|i| self.src.ident(i) && COLLECTIVES.contains(&self.src.t(i)))
    }

    fn sync(&self, s: &Stmt) -> bool {
        self.has_collective(s.start, s.end)
    }

    fn is_lane_var(&self, name: &str) -> bool {
        self.scopes.iter().any(|s| s.iter().any(|(n, _)| n == name))
    }

    // ---- declarations ----

    fn classify(&self, a: usize, end: usize) -> PResult<Decl> {
        let src = self.src;
        let b = end - 1; // the `;`
        if a >= b {
            return Ok(Decl::No);
        }
        let first = src.t(a);
        if matches!(
            first,
            "typedef" | "using" | "static_assert" | "struct" | "class" | "union" | "enum"
        ) {
            return Ok(Decl::Hoist);
        }
        if !src.ident(a) || EXPR_WORDS.contains(&first) {
            return Ok(Decl::No);
        }
        // The first declarator's name: the identifier before the first `=`, `(`, `{`, `[`, `,`
        // or `;` outside template arguments.
        let mut k = a;
        let mut stop = None;
        while k < end {
            let t = src.t(k);
            if t == "<" && k > a && src.ident(k - 1) {
                match src.close_angle(k) {
                    Some(c) => {
                        k = c + 1;
                        continue;
                    }
                    None => return Ok(Decl::No),
                }
            }
            if matches!(t, "=" | "(" | "{" | "[" | "," | ";") {
                stop = Some(k);
                break;
            }
            let typeish = src.ident(k) || matches!(t, "::" | "*" | "&" | "&&" | ">");
            if !typeish {
                return Ok(Decl::No);
            }
            k += 1;
        }
        let Some(stop) = stop else {
            return Ok(Decl::No);
        };
        if stop < a + 2 || !src.ident(stop - 1) {
            return Ok(Decl::No);
        }
        let before = src.t(stop - 2);
        if !(src.ident(stop - 2) || matches!(before, ">" | "*" | "&" | "&&")) {
            return Ok(Decl::No);
        }
        let spec: Vec<&str> = (a..stop - 1).map(|i| src.t(i)).collect();
        if spec.last() == Some(&"::") || spec.iter().any(|w| EXPR_WORDS.contains(w)) {
            return Ok(Decl::No);
        }
        if spec.iter().any(|w| {
            matches!(
                *w,
                "static" | "constexpr" | "thread_local" | "extern" | "__shared__" | "register"
            )
        }) {
            return Ok(Decl::Hoist);
        }
        if spec.iter().any(|w| matches!(*w, "&" | "&&")) {
            return Err(format!(
                "the reference `{}` is declared at the level of a barrier",
                src.t(stop - 1)
            ));
        }
        let is_auto = spec.contains(&"auto") || spec.contains(&"decltype");
        let has_ptr = spec.contains(&"*");
        // Declarators.
        let mut vars = Vec::new();
        for (n, (da, db)) in src.split_commas(stop - 1, b).into_iter().enumerate() {
            if !src.ident(da) {
                return Err(format!(
                    "the declaration `{}` declares a pointer after a comma",
                    src.text(a, end)
                ));
            }
            if n > 0 && has_ptr {
                return Err(format!(
                    "`{}` declares several variables of a pointer type",
                    src.text(a, end)
                ));
            }
            let name = src.t(da).to_string();
            let mut k = da + 1;
            let mut dims = String::new();
            while src.is(k, "[") && k < db {
                let c = src.close(k).ok_or("unbalanced `[`")?;
                dims.push_str(src.text(k, c + 1));
                k = c + 1;
            }
            let init = if k >= db {
                Init::None
            } else if src.is(k, "=") {
                Init::Expr(k + 1, db)
            } else if src.is(k, "(") || src.is(k, "{") {
                let c = src.close(k).ok_or("unbalanced initializer")?;
                if c + 1 != db {
                    return Ok(Decl::No);
                }
                Init::Args(k + 1, c, src.is(k, "{"))
            } else {
                return Ok(Decl::No);
            };
            if !dims.is_empty() && !matches!(init, Init::None) {
                return Err(format!(
                    "the array `{name}` is initialized at the level of a barrier"
                ));
            }
            if is_auto && !matches!(init, Init::Expr(..)) {
                return Err(format!("`auto {name}` needs `= expression` here"));
            }
            vars.push(DeclVar { name, init, dims });
        }
        // A const of a value every lane computes alike (from literals, parameters, blockDim,
        // template arguments...) is evaluated once, so it stays a constant expression.
        let top_const = if has_ptr {
            let last_star = spec.iter().rposition(|w| *w == "*").unwrap_or(0);
            spec[last_star..].contains(&"const")
        } else {
            spec.contains(&"const")
        };
        if top_const
            && !is_auto
            && vars.iter().all(|v| match v.init {
                Init::Expr(x, y) | Init::Args(x, y, _) => self.uniform(x, y),
                Init::None => false,
            })
        {
            return Ok(Decl::Hoist);
        }
        if is_auto {
            return Ok(Decl::Lanes {
                ty: None,
                vars,
                declared: true,
            });
        }
        // The slot type: the declared type without its top-level const.
        let mut words: Vec<&str> = spec.clone();
        if has_ptr {
            let last_star = words.iter().rposition(|w| *w == "*").unwrap_or(0);
            let (head, tail) = words.split_at(last_star);
            let tail: Vec<&str> = tail
                .iter()
                .copied()
                .filter(|w| !matches!(*w, "const" | "__restrict__" | "__restrict"))
                .collect();
            words = head.iter().copied().chain(tail).collect();
        } else {
            words.retain(|w| *w != "const");
        }
        Ok(Decl::Lanes {
            ty: Some(join_words(&words)),
            vars,
            declared: true,
        })
    }

    /// Whether tokens [a, b) compute the same value in every lane.
    fn uniform(&self, a: usize, b: usize) -> bool {
        let src = self.src;
        for i in a..b {
            if !src.ident(i) {
                continue;
            }
            let t = src.t(i);
            if self.is_lane_var(t) || t == "thread_idx" || t == "rk_linear_tid" || t == "__lane_id"
            {
                return false;
            }
            if src.is(i + 1, "(")
                && !matches!(
                    t,
                    "sizeof"
                        | "alignof"
                        | "int"
                        | "unsigned"
                        | "float"
                        | "double"
                        | "long"
                        | "short"
                        | "char"
                        | "bool"
                        | "size_t"
                )
            {
                return false;
            }
        }
        true
    }

    /// Emit slots for the lane variables of a declaration; returns (name, storage) pairs.
    fn slots(
        &mut self,
        ty: &Option<String>,
        vars: &[DeclVar],
        pending: &[(String, String)],
    ) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for v in vars {
            let id = self.id();
            let storage = format!("rk_v{id}_{}", v.name);
            match ty {
                Some(ty) => self.push(&format!(
                    "\nauto *const {storage} = rkr.alloc<{ty}{}>();",
                    v.dims
                )),
                None => {
                    // `auto`: the type of the initializer, found by a lambda that is never called
                    // (it sees lane 0's variables under their names).
                    let Init::Expr(x, y) = v.init else {
                        unreachable!("classify checked it")
                    };
                    let mut refs = String::new();
                    for (n, s) in self.scopes.iter().flatten().chain(pending).chain(&out) {
                        refs.push_str(&format!("auto &{n} = {s}[0]; (void){n}; "));
                    }
                    self.push(&format!(
                        "\nauto rk_ty{id} = [&]() {{ {refs}return ({}); }};\
                         \nauto *const {storage} = rkr.alloc<std::decay_t<decltype(rk_ty{id}())>>();",
                        self.src.text(x, y)
                    ));
                }
            }
            out.push((v.name.clone(), storage));
        }
        out
    }

    /// The lane code of a declaration: bind each name to its slot, then initialize it.
    fn decl_lane_code(
        &self,
        ty: &Option<String>,
        vars: &[DeclVar],
        storage: &[(String, String)],
        reps: &[(usize, usize, String)],
    ) -> String {
        let mut s = String::from("\n");
        for (v, (_, st)) in vars.iter().zip(storage) {
            s.push_str(&format!("auto &{} = {st}[rk_t]; ", v.name));
            match (&v.init, ty) {
                (Init::None, _) => {}
                (Init::Expr(x, y), _) => {
                    s.push_str(&format!("{} = {};", v.name, self.text_with(*x, *y, reps)))
                }
                (Init::Args(x, y, brace), Some(ty)) => {
                    let (l, r) = if *brace { ("{", "}") } else { ("(", ")") };
                    s.push_str(&format!(
                        "{} = {ty}{l}{}{r};",
                        v.name,
                        self.text_with(*x, *y, reps)
                    ))
                }
                (Init::Args(..), None) => unreachable!("classify refuses it"),
            }
        }
        s
    }

    /// Source text of [a, b) with token ranges replaced.
    fn text_with(&self, a: usize, b: usize, reps: &[(usize, usize, String)]) -> String {
        let mut s = String::new();
        let mut i = a;
        for (x, y, r) in reps.iter().filter(|(x, _, _)| *x >= a && *x < b) {
            s.push_str(self.src.text(i, *x));
            s.push(' ');
            s.push_str(r);
            s.push(' ');
            i = *y;
        }
        s.push_str(self.src.text(i, b));
        s
    }

    // ---- lane loops ----

    /// Every lane of the block runs the code being generated (no mask, nobody returned): lane
    /// loops need not test the mask and barriers need no check.
    fn full(&self) -> bool {
        self.masked == 0 && !self.returned
    }

    /// Lane code reads the lane's coordinates from a local rather than the thread-local
    /// `rk_cur` (which is still set, for functions the kernel calls).
    fn push_lane(&mut self, code: &str) {
        self.out
            .push_str(&code.replace("(rk_cur.thread_idx)", "(rk_tidx)"));
    }

    fn open_lanes(&mut self) -> usize {
        let id = self.id();
        self.labels.push((id, false));
        if self.full() {
            self.push("\nRK_ALL_LANES(rkr) {");
        } else {
            self.push("\nRK_LANES(rkr) {");
        }
        self.push("\nrkr.lane<rk_pub, RK_TLS>(rk_tidx); (void)rk_t;");
        let scopes = self.scopes.clone();
        for scope in &scopes {
            self.push("\n{ ");
            for (n, s) in scope {
                self.push(&format!("auto &{n} = {s}[rk_t]; (void){n}; "));
            }
        }
        self.push("\n{");
        id
    }

    fn close_lanes(&mut self) {
        self.push("\n}");
        for _ in 0..self.scopes.len() {
            self.push("}");
        }
        let (id, used) = self.labels.pop().expect("open_lanes pushed it");
        if used {
            self.push(&format!("\nrk_next_{id}:;"));
        }
        self.push("\n}");
    }

    fn leave_lane(&mut self, what: &str) -> String {
        let last = self.labels.last_mut().expect("inside a lane loop");
        last.1 = true;
        format!("{{ {what}; goto rk_next_{}; }}", last.0)
    }

    /// Lane code for a statement without barriers.
    fn lane_stmt(&mut self, s: &Stmt, cx: LaneCtx) -> PResult<String> {
        let src = self.src;
        let mut out = String::from("\n");
        // A leading pragma stays on its own line.
        let (start, pragma) = if s.start < src.toks.len() && src.toks[s.start].kind == Kind::Pragma
        {
            (s.start + 1, format!("{}\n", src.t(s.start)))
        } else {
            (s.start, String::new())
        };
        out.push_str(&pragma);
        let inner = cx;
        match &s.st {
            St::Simple | St::Case => out.push_str(src.text(start, s.end)),
            St::Other(what) => return Err(format!("{what} in a kernel with barriers")),
            St::Return((a, b)) => {
                let expr = if a < b {
                    format!("(void)({}); ", src.text(*a, *b))
                } else {
                    String::new()
                };
                self.returned_here = true;
                out.push_str(&self.leave_lane(&format!("{expr}rkr.ret(rk_t)")));
            }
            St::Break if cx.in_loop || cx.in_switch => out.push_str("break;"),
            St::Continue if cx.in_loop => out.push_str("continue;"),
            St::Break | St::Continue => {
                if self.loops == 0 {
                    return Err("`break`/`continue` outside a loop".into());
                }
                let d = self.loops - 1;
                let what = if matches!(s.st, St::Break) {
                    format!("rkr.brk(rk_t, {d})")
                } else {
                    format!("rkr.cont(rk_t, {d})")
                };
                out.push_str(&self.leave_lane(&what));
            }
            St::Block(body) => {
                out.push('{');
                for c in body {
                    let c = self.lane_stmt(c, inner)?;
                    out.push_str(&c);
                }
                out.push_str("\n}");
            }
            St::If { then, els, .. } => {
                out.push_str(src.text(start, then.start));
                out.push_str(&self.lane_stmt(then, inner)?);
                if let Some(e) = els {
                    out.push_str("\nelse ");
                    out.push_str(&self.lane_stmt(e, inner)?);
                }
            }
            St::For { body, .. } | St::While { body, .. } => {
                out.push_str(src.text(start, body.start));
                let lc = LaneCtx {
                    in_loop: true,
                    in_switch: false,
                };
                out.push_str(&self.lane_stmt(body, lc)?);
            }
            St::Do { body, .. } => {
                out.push_str("do ");
                let lc = LaneCtx {
                    in_loop: true,
                    in_switch: false,
                };
                out.push_str(&self.lane_stmt(body, lc)?);
                out.push('\n');
                out.push_str(src.text(body.end, s.end));
            }
            St::Switch { body } => {
                out.push_str(src.text(start, body.start));
                let lc = LaneCtx {
                    in_switch: true,
                    ..cx
                };
                out.push_str(&self.lane_stmt(body, lc)?);
            }
        }
        Ok(out)
    }

    // ---- barrier-level code ----

    /// A sequence of statements at barrier level.
    ///
    /// `live_until`: where the scope of variables declared here ends (token index); a variable
    /// needs a slot per lane only if it is named again after its own stretch of code.
    fn seq(&mut self, stmts: &[Stmt], live_until: usize) -> PResult<()> {
        // Assignments that begin a variable's life anew: statement start -> (type, name).
        let mut reborn: BTreeMap<usize, (String, String)> = BTreeMap::new();
        let mut i = 0;
        while i < stmts.len() {
            if self.sync(&stmts[i]) {
                self.sync_stmt(&stmts[i])?;
                i += 1;
                continue;
            }
            // A run of statements without barriers is one lane loop; hoisted declarations split
            // it.
            let mut run: Vec<(&Stmt, Decl)> = Vec::new();
            while i < stmts.len() && !self.sync(&stmts[i]) {
                let s = &stmts[i];
                if self.lockstep_loop(s)? {
                    break;
                }
                let decl = if let Some((ty, name)) = reborn.get(&s.start) {
                    Decl::Lanes {
                        ty: Some(ty.clone()),
                        vars: vec![DeclVar {
                            name: name.clone(),
                            init: Init::Expr(s.start + 2, s.end - 1),
                            dims: String::new(),
                        }],
                        declared: false,
                    }
                } else if matches!(s.st, St::Simple) {
                    self.classify(s.start, s.end)?
                } else {
                    Decl::No
                };
                if matches!(decl, Decl::Hoist) {
                    break;
                }
                run.push((s, decl));
                i += 1;
            }
            if !run.is_empty() {
                reborn.extend(self.region(run, &stmts[i..], live_until)?);
            } else if self.lockstep_loop(&stmts[i])? {
                // A loop the same in every lane: the lanes step through it together.
                let s = &stmts[i];
                let St::For {
                    parts: Some((init, cond, inc)),
                    body,
                } = &s.st
                else {
                    unreachable!("lockstep_loop checked it")
                };
                let head = self.for_head(*init, *cond, *inc);
                self.push(&format!("\n{{ rk::scope rk_sc(rkr);{head}"));
                self.branch(body)?;
                self.push("\n}\n}");
                i += 1;
            } else {
                // A hoisted declaration: once, between lane loops.
                let s = &stmts[i];
                let code = self.hoisted(s)?;
                self.push(&code);
                i += 1;
            }
        }
        Ok(())
    }

    /// `for (init cond; inc) {` of a loop the wave runs once, opening the scope of one iteration.
    fn for_head(&self, init: (usize, usize), cond: (usize, usize), inc: (usize, usize)) -> String {
        let src = self.src;
        format!(
            "\nfor ({} {}; {}) {{ rk::scope rk_si(rkr);",
            src.text(init.0, init.1),
            src.text(cond.0, cond.1),
            src.text(inc.0, inc.1)
        )
    }

    /// A loop without barriers that every lane runs alike (see [`Gen::uniform_for`]), with no
    /// `return`, `break` or `continue` that could take a lane out of it: run once, the lanes
    /// stepping through it together (as a GPU's wave does) instead of each lane running the whole
    /// loop in turn. The inner loops over lanes are then runs along x, which the compiler
    /// streams through memory (a tiled transpose's row loads) or vectorises.
    fn lockstep_loop(&self, s: &Stmt) -> PResult<bool> {
        let St::For {
            parts: Some((init, cond, inc)),
            body,
        } = &s.st
        else {
            return Ok(false);
        };
        let src = self.src;
        if (body.start..body.end)
            .any(|k| src.ident(k) && matches!(src.t(k), "return" | "break" | "continue" | "goto"))
        {
            return Ok(false);
        }
        self.uniform_for(*init, *cond, *inc, body)
    }

    /// A declaration made once per block. Static `__shared__` arrays (`thread_local` after
    /// preprocessing) become references into the block's storage: plain memory is much cheaper
    /// to address than thread-local storage in position-independent code.
    fn hoisted(&self, s: &Stmt) -> PResult<String> {
        let src = self.src;
        if src.is(s.start, "thread_local") {
            if let Decl::Lanes {
                ty: Some(ty), vars, ..
            } = self.classify(s.start + 1, s.end)?
            {
                if vars.iter().all(|v| matches!(v.init, Init::None)) {
                    let mut out = String::new();
                    for v in &vars {
                        out.push_str(&format!(
                            "\nauto &{} = rkr.shared<{ty}{}>();",
                            v.name, v.dims
                        ));
                    }
                    return Ok(out);
                }
            }
        }
        Ok(format!("\n{}", src.text(s.start, s.end)))
    }

    /// One lane loop over statements without barriers.
    ///
    /// A variable declared here needs a slot per lane only if code after this stretch reads it.
    /// When the next statement naming it assigns it a new value (`x = ...;`, not reading `x`),
    /// it is dead here and that statement is returned (start -> type, name) to be treated as a
    /// new declaration: kernels often recompute their indices after a barrier.
    fn region(
        &mut self,
        mut run: Vec<(&Stmt, Decl)>,
        rest: &[Stmt],
        live_until: usize,
    ) -> PResult<Vec<(usize, (String, String))>> {
        let run_end = run.last().map_or(0, |(s, _)| s.end);
        let src = self.src;
        // Names, not members (`threadIdx.x` does not name `x`).
        let names = |a: usize, b: usize, n: &str| {
            (a..b).any(|i| {
                src.ident(i) && src.t(i) == n && !(i > 0 && matches!(src.t(i - 1), "." | "->"))
            })
        };
        let mut reborn = Vec::new();
        for (_, d) in run.iter_mut() {
            let Decl::Lanes { ty, vars, .. } = &*d else {
                continue;
            };
            let mut live = false;
            let mut renew = Vec::new();
            for v in vars.iter() {
                match rest.iter().find(|s| names(s.start, s.end, &v.name)) {
                    Some(s)
                        if matches!(s.st, St::Simple)
                            && !self.sync(s)
                            && src.is(s.start, &v.name)
                            && src.is(s.start + 1, "=")
                            && !names(s.start + 2, s.end, &v.name)
                            && ty.is_some()
                            && v.dims.is_empty() =>
                    {
                        renew.push((s.start, (ty.clone().unwrap_or_default(), v.name.clone())));
                    }
                    Some(_) => live = true,
                    None => {
                        let after = rest.last().map_or(run_end, |s| s.end);
                        live |= names(after, live_until.min(src.toks.len()), &v.name);
                    }
                }
            }
            if live {
                continue;
            }
            reborn.extend(renew);
            // Not live: the declaration stays in the lane code as written, or (a renewed
            // assignment) with its type put back in front.
            let new = match &*d {
                Decl::Lanes {
                    declared: false,
                    ty: Some(ty),
                    vars,
                } => {
                    let v = &vars[0];
                    let Init::Expr(x, y) = v.init else {
                        unreachable!("renewed assignments have `= expr`")
                    };
                    Decl::Renewed(format!("{ty} {} = {};", v.name, src.text(x, y)))
                }
                _ => Decl::No,
            };
            *d = new;
        }
        // Slots for the lane variables declared here, before the loop.
        let mut pending: Vec<(String, String)> = Vec::new();
        let mut storages = Vec::new();
        for (_, d) in &run {
            if let Decl::Lanes { ty, vars, .. } = d {
                let st = self.slots(ty, vars, &pending);
                pending.extend(st.iter().cloned());
                storages.push(st);
            } else {
                storages.push(Vec::new());
            }
        }
        self.open_lanes();
        let top = LaneCtx {
            in_loop: false,
            in_switch: false,
        };
        for ((s, d), st) in run.iter().zip(&storages) {
            let code = match d {
                Decl::Lanes { ty, vars, .. } => self.decl_lane_code(ty, vars, st, &[]),
                Decl::Renewed(code) => format!("\n{code}"),
                _ => self.lane_stmt(s, top)?,
            };
            self.push_lane(&code);
        }
        self.close_lanes();
        if let Some(scope) = self.scopes.last_mut() {
            scope.extend(pending);
        }
        self.returned |= std::mem::take(&mut self.returned_here);
        Ok(reborn)
    }

    fn sync_stmt(&mut self, s: &Stmt) -> PResult<()> {
        match &s.st {
            St::Simple => self.sync_simple(s),
            St::Block(body) => {
                self.push("\n{ rk::scope rk_sc(rkr);");
                self.scopes.push(Vec::new());
                self.seq(body, s.end)?;
                self.scopes.pop();
                self.push("\n}");
                Ok(())
            }
            St::If {
                cond,
                then,
                els,
                constexpr,
            } => {
                if *constexpr {
                    return Err("`if constexpr` around a barrier".into());
                }
                let id = self.id();
                self.push(&format!(
                    "\n{{ rk::scope rk_sc(rkr); uint8_t *rk_m{id} = rkr.save(); uint8_t *rk_c{id} = rkr.bytes();"
                ));
                self.cond(*cond, &format!("rk_c{id}"))?;
                self.push(&format!(
                    "\nrkr.take_branch(rk_m{id}, rk_c{id}, 1);\nif (rkr.any()) {{"
                ));
                self.masked += 1;
                let r = self.branch(then);
                self.masked -= 1;
                r?;
                self.push("\n}");
                if let Some(e) = els {
                    self.push(&format!(
                        "\nrkr.take_branch(rk_m{id}, rk_c{id}, 0);\nif (rkr.any()) {{"
                    ));
                    self.masked += 1;
                    let r = self.branch(e);
                    self.masked -= 1;
                    r?;
                    self.push("\n}");
                }
                self.push(&format!("\nrkr.restore(rk_m{id});\n}}"));
                Ok(())
            }
            St::While { cond, body } => self.sync_loop(None, Some(*cond), None, body, false),
            St::Do { body, cond } => self.sync_loop(None, Some(*cond), None, body, true),
            St::For {
                parts: Some((init, cond, inc)),
                body,
            } => self.sync_loop(Some(*init), Some(*cond), Some(*inc), body, false),
            St::For { parts: None, .. } => Err("a range-`for` around a barrier".into()),
            St::Switch { .. } => Err("a `switch` around a barrier".into()),
            St::Other(what) => Err(format!("{what} around a barrier")),
            St::Return(_) | St::Break | St::Continue | St::Case => {
                Err("a barrier inside `return`".into())
            }
        }
    }

    /// The body of a branch taken under a mask: its own scope.
    fn branch(&mut self, s: &Stmt) -> PResult<()> {
        self.scopes.push(Vec::new());
        let r = if let St::Block(body) = &s.st {
            self.seq(body, s.end)
        } else {
            self.seq(std::slice::from_ref(s), s.end)
        };
        self.scopes.pop();
        r
    }

    /// Whether a `for` loop with a barrier runs alike in every lane: its variables are declared
    /// in its header from lane-independent values, its condition and step depend only on them
    /// and other lane-independent values, and its body never changes them. Such a loop runs as
    /// one loop for the block, its variables shared.
    fn uniform_for(
        &self,
        (ia, ib): (usize, usize),
        (ca, cb): (usize, usize),
        (na, nb): (usize, usize),
        body: &Stmt,
    ) -> PResult<bool> {
        if ib <= ia + 1 {
            return Ok(false);
        }
        let Decl::Lanes {
            ty: Some(_), vars, ..
        } = self.classify(ia, ib)?
        else {
            return Ok(false);
        };
        let inits_uniform = vars.iter().all(|v| match v.init {
            Init::Expr(x, y) | Init::Args(x, y, _) => self.uniform(x, y),
            Init::None => false,
        });
        Ok(inits_uniform
            && vars.iter().all(|v| v.dims.is_empty())
            && cb > ca
            && self.uniform(ca, cb)
            && self.uniform(na, nb)
            && !vars
                .iter()
                .any(|v| param_mutated(self.src, &v.name, (body.start, body.end))))
    }

    fn sync_loop(
        &mut self,
        init: Option<(usize, usize)>,
        cond: Option<(usize, usize)>,
        inc: Option<(usize, usize)>,
        body: &Stmt,
        do_while: bool,
    ) -> PResult<()> {
        let id = self.id();
        let src = self.src;
        // `return`, `break` or `continue` in the body can take lanes out of the loop.
        let exits = (body.start..body.end)
            .any(|i| matches!(src.t(i), "return" | "break" | "continue") && src.ident(i));
        if let (Some(i), Some(c), Some(n)) = (init, cond, inc) {
            if self.uniform_for(i, c, n, body)? {
                let d = self.loops;
                let head = self.for_head(i, c, n);
                self.push(&format!(
                    "\n{{ rk::scope rk_sc(rkr); uint8_t *rk_m{id} = rkr.save();{head}"
                ));
                if exits {
                    self.push(&format!(
                        "\nif (!rkr.any()) break;\nuint8_t *rk_it{id} = rkr.save();"
                    ));
                    self.masked += 1;
                }
                self.loops += 1;
                let r = self.branch(body);
                self.loops -= 1;
                if exits {
                    self.masked -= 1;
                    self.push(&format!("\nrkr.end_iteration(rk_it{id}, {d});"));
                }
                r?;
                self.push(&format!("\n}}\nrkr.end_loop(rk_m{id}, {d});\n}}"));
                return Ok(());
            }
        }
        // Lanes leave the loop at different iterations: the body runs under a mask.
        self.masked += 1;
        let r = self.masked_loop(id, init, cond, inc, body, do_while);
        self.masked -= 1;
        r
    }

    fn masked_loop(
        &mut self,
        id: usize,
        init: Option<(usize, usize)>,
        cond: Option<(usize, usize)>,
        inc: Option<(usize, usize)>,
        body: &Stmt,
        do_while: bool,
    ) -> PResult<()> {
        let d = self.loops;
        self.push("\n{ rk::scope rk_sc(rkr);");
        self.scopes.push(Vec::new());
        if let Some((a, b)) = init {
            if b > a + 1 {
                // `init ;` is a statement of its own (a declaration's variables are lane
                // variables of the loop's scope).
                let parser = Parser { src: self.src };
                let s = parser.stmt(a)?;
                if s.end != b {
                    return Err("unexpected `for` initializer".into());
                }
                self.seq(std::slice::from_ref(&s), body.end)?;
            }
        }
        self.push(&format!(
            "\nuint8_t *rk_m{id} = rkr.save();\nfor (;;) {{ rk::scope rk_si(rkr);"
        ));
        let test = |g: &mut Self| -> PResult<()> {
            if let Some((a, b)) = cond {
                if b > a {
                    g.push(&format!("\nuint8_t *rk_c{id} = rkr.bytes();"));
                    g.cond((a, b), &format!("rk_c{id}"))?;
                    g.push(&format!("\nrkr.keep_if(rk_c{id});"));
                }
            }
            g.push("\nif (!rkr.any()) break;");
            Ok(())
        };
        if !do_while {
            test(self)?;
        }
        self.push(&format!("\nuint8_t *rk_it{id} = rkr.save();"));
        self.loops += 1;
        let r = self.branch(body);
        self.loops -= 1;
        r?;
        self.push(&format!("\nrkr.end_iteration(rk_it{id}, {d});"));
        if let Some((a, b)) = inc {
            if b > a {
                self.phased(a, b, None, &|t| format!("{t};"))?;
            }
        }
        if do_while {
            test(self)?;
        }
        self.push(&format!("\n}}\nrkr.end_loop(rk_m{id}, {d});"));
        self.scopes.pop();
        self.push("\n}");
        Ok(())
    }

    /// Evaluate a condition per active lane into the byte array `dst`.
    fn cond(&mut self, (a, b): (usize, usize), dst: &str) -> PResult<()> {
        if self.decl_in_cond(a, b) {
            return Err("a declaration in the condition of a loop or `if` with a barrier".into());
        }
        let dst = dst.to_string();
        self.phased(a, b, None, &move |t| {
            format!("{dst}[rk_t] = static_cast<bool>({t}) ? 1 : 0;")
        })
    }

    fn decl_in_cond(&self, a: usize, b: usize) -> bool {
        (a..b).any(|i| self.src.is(i, ";"))
            || (b > a + 1 && self.src.ident(a) && self.src.ident(a + 1))
    }

    /// A barrier of the block (a new site id): with every lane of the wave known to run this
    /// code there is nothing to check within the wave.
    fn barrier_call(&mut self, value: &str) -> String {
        let site = self.id();
        if self.full() {
            format!("rkr.barrier_full({site}, {value})")
        } else {
            format!("rkr.barrier({site}, {value})")
        }
    }

    /// A statement with barriers in it at the top level: `__syncthreads();`, or collectives
    /// inside an expression or a declaration's initializer.
    fn sync_simple(&mut self, s: &Stmt) -> PResult<()> {
        let src = self.src;
        if src.text(s.start, s.end).replace(' ', "") == "__syncthreads();" {
            let code = self.barrier_call("0");
            self.push(&format!("\n{code};"));
            return Ok(());
        }
        let decl = self.classify(s.start, s.end)?;
        match decl {
            Decl::Hoist | Decl::Renewed(_) => {
                Err("a barrier in a static or constant declaration".into())
            }
            Decl::No => self.phased(s.start, s.end - 1, None, &|t| format!("{t};")),
            Decl::Lanes { ty, vars, .. } => {
                let storage = self.slots(&ty, &vars, &[]);
                self.phased(s.start, s.end - 1, Some((&ty, &vars, &storage)), &|t| {
                    format!("{t};")
                })?;
                if let Some(scope) = self.scopes.last_mut() {
                    scope.extend(storage);
                }
                Ok(())
            }
        }
    }

    /// Run tokens [a, b) per active lane with the collectives in it resolved across lanes: one
    /// lane loop stores every lane's operands, then the statement (`wrap`ped, or a declaration's
    /// lane code) runs per lane with each collective replaced by its result.
    #[allow(clippy::type_complexity)]
    fn phased(
        &mut self,
        a: usize,
        b: usize,
        decl: Option<(&Option<String>, &[DeclVar], &[(String, String)])>,
        wrap: &dyn Fn(String) -> String,
    ) -> PResult<()> {
        let src = self.src;
        let mut calls = Vec::new(); // (name, at, close, args)
        let mut i = a;
        while i < b {
            if src.ident(i) && COLLECTIVES.contains(&src.t(i)) {
                if !src.is(i + 1, "(") {
                    return Err(format!("`{}` used other than by a call", src.t(i)));
                }
                let close = src.close(i + 1).ok_or("unbalanced call")?;
                if self.has_collective(i + 2, close) {
                    return Err("a collective inside another one's operands".into());
                }
                calls.push((src.t(i), i, close, src.split_commas(i + 2, close)));
                i = close + 1;
                continue;
            }
            i += 1;
        }
        let id = self.id();
        self.push("\n{ rk::scope rk_sp(rkr);");
        // Phase 1: operands.
        let mut reps = Vec::new();
        let mut stores = String::new();
        let mut after = String::new();
        for (k, (name, at, close, args)) in calls.iter().enumerate() {
            let x = format!("rk_x{id}_{k}");
            let arg = |n: usize| -> PResult<&str> {
                args.get(n)
                    .map(|&(p, q)| src.text(p, q))
                    .ok_or_else(|| format!("`{name}` with too few arguments"))
            };
            let sync_form = name.ends_with("_sync");
            let v = usize::from(sync_form);
            let rep = match *name {
                "__syncthreads" => {
                    let call = self.barrier_call("0");
                    after.push_str(&format!("\n{call};"));
                    "(void)0".to_string()
                }
                "__syncthreads_count" | "__syncthreads_and" | "__syncthreads_or" => {
                    stores.push_str(&format!(
                        "{x}[rk_t] = static_cast<uint64_t>(static_cast<int>({}) != 0); ",
                        arg(0)?
                    ));
                    // The block's count comes back from the barrier (summed over its waves).
                    let sum = format!("rk_sum{id}_{k}");
                    let call = self.barrier_call(&format!("rkr.count({x})"));
                    after.push_str(&format!("\nconst uint32_t {sum} = {call};"));
                    match *name {
                        "__syncthreads_count" => format!("static_cast<int>({sum})"),
                        "__syncthreads_and" => format!("static_cast<int>({sum} == rkr.nblock)"),
                        _ => format!("static_cast<int>({sum} != 0)"),
                    }
                }
                "__activemask" => "static_cast<unsigned long long>(rkr.activemask(rk_t))".into(),
                "__ballot" | "__ballot64" | "__ballot_sync" | "__any" | "__any_sync" | "__all"
                | "__all_sync" => {
                    stores.push_str(&format!(
                        "{x}[rk_t] = static_cast<uint64_t>(static_cast<int>({}) != 0); ",
                        arg(v)?
                    ));
                    after.push_str(&format!("\nrkr.reduce({x});"));
                    if name.starts_with("__ballot") {
                        format!("static_cast<unsigned long long>(rkr.ballot({x}, rk_t))")
                    } else if name.starts_with("__any") {
                        format!("static_cast<int>(rkr.ballot({x}, rk_t) != 0)")
                    } else {
                        format!("rkr.all({x}, rk_t)")
                    }
                }
                _ => {
                    // The shuffles.
                    let value = arg(v)?;
                    let op = match name.trim_end_matches("_sync") {
                        "__shfl" => "RK_WARP_SHFL",
                        "__shfl_up" => "RK_WARP_SHFL_UP",
                        "__shfl_down" => "RK_WARP_SHFL_DOWN",
                        _ => "RK_WARP_SHFL_XOR",
                    };
                    stores.push_str(&format!("{x}[rk_t] = rk::bits({value}); "));
                    let width = match args.get(v + 2) {
                        Some(&(p, q)) => format!("static_cast<int>({})", src.text(p, q)),
                        None => "warpSize".into(),
                    };
                    format!(
                        "rkr.shfl<std::decay_t<decltype({value})>>({x}, rk_t, {op}, static_cast<int>({}), {width})",
                        arg(v + 1)?
                    )
                }
            };
            if !matches!(*name, "__syncthreads" | "__activemask") {
                self.push(&format!("\nuint64_t *{x} = rkr.xbuf();"));
            }
            reps.push((*at, close + 1, rep));
        }
        if !stores.is_empty() {
            self.open_lanes();
            self.push("\n");
            self.push_lane(&stores);
            self.close_lanes();
        }
        // Phase 2: barriers checked, ballots reduced per wave.
        self.push(&after);
        // Phase 3: the statement per lane.
        self.open_lanes();
        let code = match decl {
            Some((ty, vars, storage)) => self.decl_lane_code(ty, vars, storage, &reps),
            None => format!("\n{}", wrap(self.text_with(a, b, &reps))),
        };
        self.push_lane(&code);
        self.close_lanes();
        self.push("\n}");
        Ok(())
    }
}

fn join_words(words: &[&str]) -> String {
    let mut s = String::new();
    for (i, w) in words.iter().enumerate() {
        let ident = |x: &str| x.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if i > 0 && ident(w) && ident(words[i - 1]) {
            s.push(' ');
        }
        s.push_str(w);
    }
    s
}

// ---------------------------------------------------------------------------------------------
// The translation unit.

/// A function definition: its name, the `(` opening its parameters, and its body's tokens
/// (between the braces).
struct FnBody {
    name: String,
    params_open: usize,
    body: (usize, usize),
}

/// Function definitions anywhere in the unit.
fn function_bodies(src: &Src) -> Vec<FnBody> {
    let mut out = Vec::new();
    for i in 0..src.toks.len() {
        if !src.is(i, "{") {
            continue;
        }
        // `name ( params ) [const|noexcept|override|final|attributes] {`
        let mut k = i;
        while k > 0 && matches!(src.t(k - 1), "const" | "noexcept" | "override" | "final") {
            k -= 1;
        }
        if k == 0 || !src.is(k - 1, ")") {
            continue;
        }
        // Find the matching `(`.
        let mut depth = 0i32;
        let mut open = None;
        for j in (0..k).rev() {
            match src.t(j) {
                ")" => depth += 1,
                "(" => {
                    depth -= 1;
                    if depth == 0 {
                        open = Some(j);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(open) = open else { continue };
        if open == 0 || !src.ident(open - 1) {
            continue;
        }
        let name = src.t(open - 1);
        if matches!(
            name,
            "if" | "for" | "while" | "switch" | "catch" | "__attribute__" | "decltype" | "sizeof"
        ) {
            continue;
        }
        if let Some(close) = src.close(i) {
            out.push(FnBody {
                name: name.to_string(),
                params_open: open,
                body: (i + 1, close),
            });
        }
    }
    out
}

/// Names of functions that wait for other threads (contain a barrier or collective, directly or
/// through calls), other than the collectives the rewrite handles itself.
fn waiting_functions(src: &Src, bodies: &[FnBody]) -> BTreeSet<String> {
    let mut waiting: BTreeSet<String> = RUNTIME_WAITS.iter().map(|s| s.to_string()).collect();
    waiting.extend(COLLECTIVES.iter().map(|s| s.to_string()));
    loop {
        let mut grew = false;
        for FnBody {
            name, body: (a, b), ..
        } in bodies
        {
            if waiting.contains(name) {
                continue;
            }
            if (*a..*b).any(|i| src.ident(i) && waiting.contains(src.t(i))) {
                waiting.insert(name.clone());
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    for c in COLLECTIVES {
        waiting.remove(*c);
    }
    waiting
}

/// Names of functions that read any of `words` (members of `rk_cur`), directly or through calls.
fn reading_functions(src: &Src, bodies: &[FnBody], words: &[&str]) -> BTreeSet<String> {
    let mut readers: BTreeSet<String> = BTreeSet::new();
    loop {
        let mut grew = false;
        for FnBody {
            name, body: (a, b), ..
        } in bodies
        {
            if readers.contains(name) {
                continue;
            }
            if (*a..*b)
                .any(|i| src.ident(i) && (words.contains(&src.t(i)) || readers.contains(src.t(i))))
            {
                readers.insert(name.clone());
                grew = true;
            }
        }
        if !grew {
            return readers;
        }
    }
}

struct KernelDef {
    qualified: String,
    scopes: Vec<String>,
    template_head: Option<(usize, usize)>,
    name: String,
    params: (usize, usize),
    body: (usize, usize),
}

/// Kernel definitions (`__rk_kernel__ void name(params) { body }`) with their namespaces.
fn kernel_defs(src: &Src) -> (Vec<KernelDef>, BTreeSet<String>) {
    const MARK: &str = "__rk_kernel__";
    let mut defs = Vec::new();
    let mut specialized = BTreeSet::new();
    // Some(namespace) for namespace-like scopes ("" for anonymous and extern "C"), None otherwise.
    let mut scopes: Vec<Option<String>> = Vec::new();
    let mut i = 0;
    while i < src.toks.len() {
        match src.t(i) {
            "{" => {
                let mut j = i;
                let mut parts = Vec::new();
                while j > 0 && (src.ident(j - 1) || src.is(j - 1, "::")) {
                    if src.is(j - 1, "namespace") {
                        break;
                    }
                    if src.ident(j - 1) {
                        parts.push(src.t(j - 1).to_string());
                    }
                    j -= 1;
                }
                if j > 0 && src.is(j - 1, "namespace") {
                    parts.reverse();
                    scopes.push(Some(parts.join("::")));
                } else if i >= 2 && src.is(i - 2, "extern") && src.toks[i - 1].kind == Kind::Str {
                    scopes.push(Some(String::new()));
                } else {
                    scopes.push(None);
                }
            }
            "}" => {
                scopes.pop();
            }
            MARK => {
                if let Some(def) = kernel_at(src, i, &scopes) {
                    match def {
                        Ok(d) => {
                            i = d.body.1;
                            defs.push(d);
                        }
                        Err(name) => {
                            specialized.insert(name);
                        }
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    (defs, specialized)
}

/// The kernel definition at a marker; Err(qualified name) for an explicit specialization.
fn kernel_at(
    src: &Src,
    mark: usize,
    scopes: &[Option<String>],
) -> Option<Result<KernelDef, String>> {
    let mut ns = Vec::new();
    for s in scopes {
        match s {
            Some(n) => ns.push(n.clone()),
            None => return None,
        }
    }
    // A template head ending just before the marker (maybe with `static`/`inline` between).
    let mut k = mark;
    while k > 0 && matches!(src.t(k - 1), "static" | "inline" | "extern") {
        k -= 1;
    }
    let mut template_head = None;
    if k > 0 && src.is(k - 1, ">") {
        // Walk back to the `template <` that this `>` closes.
        let mut j = k - 1;
        let mut found = None;
        while j > 0 {
            j -= 1;
            if src.is(j, "template") && src.is(j + 1, "<") && src.close_angle(j + 1) == Some(k - 1)
            {
                found = Some(j);
                break;
            }
            if matches!(src.t(j), ";" | "{" | "}") {
                break;
            }
        }
        template_head = Some((found?, k));
    } else if k > 0 && src.is(k - 1, "template") {
        return None; // an explicit instantiation
    }
    let void_at = (mark + 1..(mark + 8).min(src.toks.len())).find(|&j| src.is(j, "void"))?;
    let mut j = void_at + 1;
    while j < src.toks.len() && !src.is(j, "(") {
        if matches!(src.t(j), ";" | "{" | "}") {
            return None;
        }
        j += 1;
    }
    let name_toks: Vec<&str> = (void_at + 1..j).map(|x| src.t(x)).collect();
    let open = j;
    let close = src.close(open)?;
    let mut body_open = close + 1;
    while body_open < src.toks.len() && !src.is(body_open, "{") && !src.is(body_open, ";") {
        body_open += 1;
    }
    if !src.is(body_open, "{") {
        return None; // a declaration
    }
    let body_close = src.close(body_open)?;
    let qualify = |name: &str| {
        ns.iter()
            .filter(|n| !n.is_empty())
            .cloned()
            .chain([name.to_string()])
            .collect::<Vec<_>>()
            .join("::")
    };
    if name_toks.len() != 1 {
        let base = name_toks.first().copied().unwrap_or_default();
        return Some(Err(qualify(base)));
    }
    let name = name_toks[0].to_string();
    Some(Ok(KernelDef {
        qualified: qualify(&name),
        scopes: ns,
        template_head,
        name,
        params: (open + 1, close),
        body: (body_open + 1, body_close),
    }))
}

/// Parameters of a kernel: (name, token index of the name).
fn param_names(src: &Src, (a, b): (usize, usize)) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (p, q) in src.split_commas(a, b) {
        let end = (p..q)
            .find(|&i| src.is(i, "=") || src.is(i, "["))
            .unwrap_or(q);
        if end > p + 1 && src.ident(end - 1) {
            out.push((src.t(end - 1).to_string(), end - 1));
        }
    }
    out
}

/// Whether the body may change parameter `name` (assigns it, increments it, takes its address or
/// a member of it): such a parameter gets one copy per lane.
fn param_mutated(src: &Src, name: &str, (a, b): (usize, usize)) -> bool {
    (a..b).any(|i| {
        if !src.is(i, name) || !src.ident(i) {
            return false;
        }
        let next = src.t(i + 1);
        let prev = if i > a { src.t(i - 1) } else { "" };
        if ASSIGN_OPS.contains(&next) || matches!(next, "++" | "--" | ".") {
            return true;
        }
        if matches!(prev, "++" | "--") {
            return true;
        }
        if prev == "&" && i > a + 1 {
            return !src.ends_operand(i - 2);
        }
        false
    })
}

fn form_for(
    src: &Src,
    def: &KernelDef,
    waiting: &BTreeSet<String>,
    readers: &BTreeSet<String>,
) -> PResult<Option<(String, bool)>> {
    let (ba, bb) = def.body;
    if let Some(i) = (ba..bb).find(|&i| src.ident(i) && waiting.contains(src.t(i))) {
        return Err(format!(
            "it calls `{}`, which waits for other threads inside another function",
            src.t(i)
        ));
    }
    let has_barriers = (ba..bb).any(|i| src.ident(i) && COLLECTIVES.contains(&src.t(i)));
    if !has_barriers {
        // One lane loop for the block; where the rewrite does not apply, the per-thread loop
        // runs it just as well (it never switches).
        return Ok(rewrite(src, def, bb, readers).ok());
    }
    rewrite(src, def, bb, readers).map(Some)
}

/// Whether the region form may run a whole block per call (all waves in step) with results
/// identical to running its waves apart: when it has no barriers or collectives, or when
/// [`interleaving_free`] shows that no order of its threads between barriers can matter.
fn whole_block(src: &Src, def: &KernelDef) -> bool {
    let (ba, bb) = def.body;
    !(ba..bb).any(|i| src.ident(i) && COLLECTIVES.contains(&src.t(i)))
        || interleaving_free(src, def)
}

/// A conservative proof that the order in which a block's threads run between barriers cannot
/// change a kernel's results: between two barriers (which must be plain `__syncthreads();`
/// statements at the kernel's top level), no memory the threads share is both written and read.
/// Memory is named by what indexes it: each `__shared__` array, dynamic shared memory, and the
/// pointer parameters (one class for all of them unless declared `__restrict__`). Any pointer
/// variable of the kernel's own, or anything else the analysis cannot follow, fails the proof.
/// Kernels that pass (a tiled transpose: read `in`, write the tile; barrier; read the tile, write
/// `out`) run whole blocks per call even in `CpuExec::Regions`, since running their waves apart
/// could expose nothing.
fn interleaving_free(src: &Src, def: &KernelDef) -> bool {
    let (ba, bb) = def.body;
    // Memory classes by name.
    let mut class: BTreeMap<String, String> = BTreeMap::new();
    for (p, q) in src.split_commas(def.params.0, def.params.1) {
        let words: Vec<&str> = (p..q).map(|i| src.t(i)).collect();
        if !words.contains(&"*") && !words.contains(&"[") {
            continue;
        }
        let Some(name) = param_names(src, (p, q)).into_iter().next() else {
            return false;
        };
        let restrict = words
            .iter()
            .any(|w| matches!(*w, "__restrict__" | "__restrict"));
        let c = if restrict {
            format!("param:{}", name.0)
        } else {
            "global".to_string()
        };
        class.insert(name.0, c);
    }
    // Declarations in the body: shared arrays get their own class; pointers or references of
    // the kernel's own defeat the analysis (they could point anywhere).
    let mut stmt_start = ba;
    for i in ba..bb {
        if src.is(i, "thread_local") {
            // `thread_local T name[...]...;` (a __shared__ array): the name before `[` or `;`.
            let mut k = i + 1;
            while k < bb && !matches!(src.t(k), "[" | ";" | "=") {
                k += 1;
            }
            if k > i + 1 && src.ident(k - 1) {
                class.insert(src.t(k - 1).to_string(), format!("shared:{}", src.t(k - 1)));
            }
        }
        if src.is(i, "rk_dynamic_shared") || src.is(i, "dynamic_shared") {
            // The rewritten `extern __shared__ T name[];`: `T *const name = ...`.
            let mut k = i;
            while k > stmt_start && !src.is(k, "=") {
                k -= 1;
            }
            if k > ba && src.ident(k - 1) {
                class.insert(src.t(k - 1).to_string(), "dynamic".to_string());
            }
        }
        if matches!(src.t(i), ";" | "{" | "}") {
            stmt_start = i + 1;
        }
    }
    // Any other pointer or reference declared in the body (`T* p`, `T& r`, `auto p = &x`).
    for i in ba..bb {
        let t = src.t(i);
        if (t == "*" || t == "&" || t == "&&")
            && i > ba
            && (src.ident(i - 1) || src.is(i - 1, ">"))
            && !class.contains_key(src.t(i - 1))
            && src.ident(i + 1)
            && matches!(src.t(i + 2), "=" | ";" | "," | "(" | "{")
            && (i < 2
                || matches!(src.t(i - 2), ";" | "{" | "}" | "(" | "const")
                || src.ident(i - 2))
        {
            // `float* p = ...` or `float &r = ...` (a multiplication `a * b = c` is not C++).
            if !class.contains_key(src.t(i + 1)) && src.t(i + 2) != "(" {
                return false;
            }
        }
        if t == "&" && i > ba {
            // Address taken of something that is not shared memory: could alias anything.
            let unary = !src.ends_operand(i - 1);
            if unary && src.ident(i + 1) && !class.contains_key(src.t(i + 1)) {
                // &local is harmless only if the local is not a pointer: we cannot tell.
                return false;
            }
        }
    }
    // Memory reached through anything else (a pointer of the kernel's own, a struct pointer)
    // defeats it; arrays the kernel declares itself are per thread.
    let local_array = |name: &str| {
        (ba + 1..bb).any(|j| {
            src.is(j, name)
                && src.is(j + 1, "[")
                && src.ident(j - 1)
                && !NOT_TYPES.contains(&src.t(j - 1))
        })
    };
    for i in ba..bb {
        if !src.ident(i) || class.contains_key(src.t(i)) {
            continue;
        }
        if i > ba && matches!(src.t(i - 1), "." | "->") {
            continue;
        }
        let deref = i > ba + 1 && src.is(i - 1, "*") && !src.ends_operand(i - 2);
        let through = src.is(i + 1, "->") || deref || src.is(i + 1, "[");
        if through && !local_array(src.t(i)) {
            return false;
        }
    }
    // Intervals: split at top-level `__syncthreads();` statements; any other barrier defeats it.
    let mut cuts = vec![ba];
    let mut depth = 0i32;
    for i in ba..bb {
        match src.t(i) {
            "{" | "(" | "[" => depth += 1,
            "}" | ")" | "]" => depth -= 1,
            _ => {}
        }
        let t = src.t(i);
        if src.ident(i) && t.starts_with("__syncthreads") {
            let plain = t == "__syncthreads"
                && src.is(i + 1, "(")
                && src.is(i + 2, ")")
                && src.is(i + 3, ";")
                && depth == 0
                && (i == ba || matches!(src.t(i - 1), ";" | "{" | "}"));
            if !plain {
                return false;
            }
            cuts.push(i);
        }
    }
    cuts.push(bb);
    for w in cuts.windows(2) {
        let mut read: BTreeSet<&str> = BTreeSet::new();
        let mut written: BTreeSet<&str> = BTreeSet::new();
        for i in w[0]..w[1] {
            if !src.ident(i) {
                continue;
            }
            let Some(c) = class.get(src.t(i)) else {
                continue;
            };
            if i > ba && matches!(src.t(i - 1), "." | "->") {
                continue;
            }
            if i > ba && src.ident(i - 1) && !NOT_TYPES.contains(&src.t(i - 1)) {
                continue; // its declaration
            }
            // After the name: subscripts, then what is done with the element.
            let mut k = i + 1;
            while src.is(k, "[") {
                match src.close(k) {
                    Some(c) => k = c + 1,
                    None => return false,
                }
            }
            let deref = i > ba + 1 && src.is(i - 1, "*") && !src.ends_operand(i - 2);
            let subscripted = k > i + 1;
            let after = src.t(k);
            let before = if i > ba { src.t(i - 1) } else { "" };
            let store = ((subscripted || deref)
                && (ASSIGN_OPS.contains(&after) || matches!(after, "++" | "--")))
                || (subscripted && matches!(before, "++" | "--"));
            let address = before == "&";
            if address {
                // An element's address (atomics): read and written.
                read.insert(c);
                written.insert(c);
            } else if store {
                if after != "=" {
                    read.insert(c); // `+=`, `++`: read-modify-write
                }
                written.insert(c);
            } else if subscripted || deref {
                read.insert(c);
            } else if src.is(k, "(")
                || src.is(k, "+")
                || src.is(k, "-")
                || src.is(k, ",")
                || src.is(k, ")")
            {
                // The pointer itself passed on or offset: could be written through.
                read.insert(c);
                written.insert(c);
            } else {
                read.insert(c);
            }
        }
        if written.iter().any(|c| read.contains(c)) {
            return false;
        }
    }
    true
}

/// The region form's code, and whether it runs whole blocks ([`whole_block`]).
fn rewrite(
    src: &Src,
    def: &KernelDef,
    bb: usize,
    readers: &BTreeSet<String>,
) -> PResult<(String, bool)> {
    let (ba, _) = def.body;
    let parser = Parser { src };
    let body = parser.block(ba, bb)?;
    // Parameters the body changes get a copy per lane.
    let params = param_names(src, def.params);
    let mutated: Vec<(String, usize)> = params
        .into_iter()
        .filter(|(n, _)| param_mutated(src, n, def.body))
        .collect();
    let mut sig = String::new();
    let mut i = def.params.0;
    for (n, at) in &mutated {
        sig.push_str(src.text(i, *at));
        sig.push_str(&format!(" rk_arg_{n}"));
        i = at + 1;
    }
    sig.push_str(src.text(i, def.params.1));
    let mut g = Gen {
        src,
        out: String::new(),
        scopes: vec![Vec::new()],
        loops: 0,
        next_id: 0,
        labels: Vec::new(),
        masked: 0,
        returned: false,
        returned_here: false,
    };
    for (n, _) in &mutated {
        g.push(&format!(
            "\nauto *const rk_p_{n} = rkr.alloc<std::remove_cv_t<decltype(rk_arg_{n})>>();\
             \nfor (uint32_t rk_t = 0; rk_t < rkr.n; ++rk_t) rk_p_{n}[rk_t] = rk_arg_{n};"
        ));
        g.scopes[0].push((n.clone(), format!("rk_p_{n}")));
    }
    g.seq(&body, bb)?;
    // Whether functions the kernel calls read the running thread's coordinates from `rk_cur`
    // (which then must be set for every lane even when faults need not name it).
    let tls = (ba..bb).any(|i| src.ident(i) && src.is(i + 1, "(") && readers.contains(src.t(i)));
    // Without barriers or collectives a block's waves have nothing to interleave at: one call
    // runs the whole block.
    let whole = whole_block(src, def);
    // Whether the code tracks active lanes at all (see rk::region).
    let masks = [
        "RK_LANES(",
        "rkr.save",
        "rkr.barrier(",
        "rkr.ret",
        "rkr.brk",
        "rkr.cont",
        "rkr.shfl",
        "rkr.reduce",
        "rkr.activemask",
        "rkr.count",
        "rkr.any",
        "rkr.act",
    ]
    .iter()
    .any(|m| g.out.contains(m));
    let mut code = String::new();
    for ns in &def.scopes {
        if ns.is_empty() {
            // Anonymous namespaces and extern "C" blocks: the block function needs neither.
            continue;
        }
        code.push_str(&format!("namespace {ns} {{ "));
    }
    code.push('\n');
    // Lane loops of kernels indexed by threadIdx.x alone are unrolled (see RK_LANE_UNROLL in
    // region.h: measured faster for 1-D kernels, slower for the 2-D tiled transpose).
    let one_d = !g.out.contains("(rk_tidx).y") && !g.out.contains("(rk_tidx).z");
    code.push_str(&format!(
        "#undef RK_LANE_UNROLL\n#define RK_LANE_UNROLL{}\n",
        if one_d { " RK_UNROLL_4" } else { "" }
    ));
    if let Some((x, y)) = def.template_head {
        code.push_str(src.text(x, y));
        code.push('\n');
    }
    code.push_str(&format!(
        "RK_REGION_FN void rk_block_{}({sig}) {{\nrk::region rkr({masks}, {whole} || rk_cur.exec_blocks);\n\
         // Compiled twice: publishing each lane's coordinates before its memory accesses (checked\n\
         // launches, exact fault reports) or not (so the compiler can optimise across lanes).\n\
         auto rk_body = [=, &rkr](auto rk_pub_c) mutable {{ constexpr bool rk_pub = decltype(rk_pub_c)::value; (void)rk_pub;\n\
         constexpr bool RK_TLS = {tls}; (void)RK_TLS;{}\n}};\n\
         if (rkr.publish) rk_body(std::true_type{{}}); else rk_body(std::false_type{{}});\n}}\n",
        def.name, g.out
    ));
    for ns in &def.scopes {
        if !ns.is_empty() {
            code.push('}');
        }
    }
    code.push('\n');
    Ok((code, whole))
}

// ---------------------------------------------------------------------------------------------
// Helpers that wait, inlined into kernels.

/// A device function with a barrier or collective inside (a `warpReduceSum`), in the shape the
/// rewrite can put in place of a call: not a template, parameters by value, no `static` locals,
/// and one `return expr;` as its last statement (none, for `void`). (Templates are left alone:
/// their argument and result types could only be named with `auto`, and the region form types an
/// `auto` variable that lives across a collective from names it may not see.)
struct Helper {
    /// Per parameter: its type as written, and its name.
    params: Vec<(String, String)>,
    /// The return type; None for `void`.
    ret: Option<String>,
    /// Statements before the final `return`, and the returned expression.
    body: String,
    result: Option<String>,
    /// Identifiers the body uses but does not declare (globals, functions, types): a kernel
    /// declaring one of them would capture it, so such calls stay calls.
    free: BTreeSet<String>,
}

/// Names a token range declares (`type name =`, `type name;`, `type name,` `type name[`), by
/// the shape around them: enough to tell whether inlining could capture a name.
fn declared_names(src: &Src, a: usize, b: usize) -> BTreeSet<String> {
    // `T * name` is a declaration only where `T` starts a statement (else `v * name` is one).
    let pointer_decl = |i: usize| {
        i >= 2
            && src.ident(i - 1)
            && (i - 2 < a || matches!(src.t(i - 2), ";" | "{" | "}" | "(" | "," | "const"))
    };
    (a + 1..b)
        .filter(|&i| {
            src.ident(i)
                && matches!(src.t(i + 1), "=" | ";" | "," | "[" | ":" | ")" | "{")
                && ((src.ident(i - 1)
                    && !NOT_TYPES.contains(&src.t(i - 1))
                    && !EXPR_WORDS.contains(&src.t(i - 1)))
                    || src.is(i - 1, ">")
                    || (matches!(src.t(i - 1), "*" | "&") && pointer_decl(i - 1)))
        })
        .map(|i| src.t(i).to_string())
        .collect()
}

/// The helper defined by `f`, if it has the shape [`Helper`] needs.
fn helper_at(src: &Src, f: &FnBody) -> Option<Helper> {
    let popen = f.params_open;
    let pclose = src.close(popen)?;
    if (pclose + 1..f.body.0 - 1).any(|j| !matches!(src.t(j), "const" | "noexcept")) {
        return None; // `override`, `final`: a member function
    }
    let name = popen - 1;
    // The return type: names, `::` and `*` back to a boundary; storage words dropped.
    let mut r = name;
    while r > 0 && (src.ident(r - 1) || matches!(src.t(r - 1), "::" | "*")) {
        r -= 1;
    }
    if r > 0 && !matches!(src.t(r - 1), ";" | "{" | "}" | ")" | ">") {
        return None;
    }
    const STORAGE: &[&str] = &[
        "static",
        "inline",
        "__inline__",
        "constexpr",
        "extern",
        "__device__",
        "__host__",
        "__forceinline__",
        "__noinline__",
    ];
    let ret_words: Vec<&str> = (r..name)
        .map(|j| src.t(j))
        .filter(|w| !STORAGE.contains(w))
        .collect();
    if ret_words.is_empty() || ret_words.contains(&"auto") || ret_words.contains(&"operator") {
        return None;
    }
    if r > 0 && src.is(r - 1, ">") {
        return None; // a template
    }
    let mut params = Vec::new();
    let whole = src.split_commas(popen + 1, pclose);
    let only_void = whole.len() == 1 && whole[0].1 == whole[0].0 + 1 && src.is(whole[0].0, "void");
    if !only_void {
        for (x, y) in whole {
            if (x..y).any(|j| matches!(src.t(j), "&" | "&&" | "..." | "=" | "[" | "(")) {
                return None;
            }
            let pname = (y > x + 1 && src.ident(y - 1)).then(|| src.t(y - 1).to_string())?;
            params.push((src.text(x, y - 1).to_string(), pname));
        }
    }
    let ret = (ret_words != ["void"]).then(|| ret_words.join(" "));
    // The body: no `static` locals or `goto`; one `return` at the end.
    let (a, b) = f.body;
    if (a..b).any(|j| matches!(src.t(j), "static" | "goto" | "__rk_kernel__")) {
        return None;
    }
    let returns: Vec<usize> = (a..b).filter(|&j| src.is(j, "return")).collect();
    let (body_end, result) = match (&ret, returns.as_slice()) {
        (None, []) => (b, None),
        (None, [r]) if src.is(r + 1, ";") && r + 2 == b => (*r, None),
        (Some(_), [r]) if b > r + 2 && src.is(b - 1, ";") => {
            // The `return` must start the last statement at the body's own level.
            let mut depth = 0i32;
            for j in a..*r {
                match src.t(j) {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" => depth -= 1,
                    _ => {}
                }
            }
            if depth != 0 || !(a == *r || matches!(src.t(r - 1), ";" | "}" | "{")) {
                return None;
            }
            if (r + 1..b - 1).any(|j| src.is(j, ";")) || src.split_commas(r + 1, b - 1).len() != 1 {
                return None;
            }
            (*r, Some(src.text(r + 1, b - 1).to_string()))
        }
        _ => return None,
    };
    let mut declared = declared_names(src, a, b);
    declared.extend(params.iter().map(|(_, n)| n.clone()));
    let free = (a..b)
        .filter(|&j| src.ident(j) && !matches!(src.t(j.saturating_sub(1)), "." | "->" | "::"))
        .map(|j| src.t(j).to_string())
        .filter(|w| !declared.contains(w))
        .collect();
    Some(Helper {
        params,
        ret,
        body: src.text(a, body_end).to_string(),
        result,
        free,
    })
}

/// The text with calls of waiting helpers in kernel bodies replaced by the helpers' bodies, so
/// that the region form sees the collectives inside (`float s = warp_sum(v);` becomes
/// `float rk_h1_a0 = v; float rk_h1_r{}; { float v = rk_h1_a0; ...loop...; rk_h1_r = v; }
/// float s = rk_h1_r;`). A call is replaced when it is a whole statement or the right-hand side
/// of one (an assignment, a declaration) outside conditions and `?:`, `&&`, `||`; arguments
/// are evaluated first, as for a call. None when nothing was replaced.
fn inline_waiting_calls(text: &str) -> Option<String> {
    let mut cur = text.to_string();
    let mut changed = false;
    let mut serial = 0usize;
    // Helpers calling helpers: one level per round.
    for _ in 0..4 {
        let src = Src::new(&cur);
        let bodies = function_bodies(&src);
        let waiting = waiting_functions(&src, &bodies);
        let mut helpers: BTreeMap<&str, Option<Helper>> = BTreeMap::new();
        for f in &bodies {
            if !waiting.contains(&f.name) {
                continue;
            }
            // Overloads (two bodies of one name) stay calls.
            let overloaded = helpers.contains_key(f.name.as_str());
            let parsed = if overloaded { None } else { helper_at(&src, f) };
            helpers.insert(f.name.as_str(), parsed);
        }
        let (defs, _) = kernel_defs(&src);
        // (byte position, bytes replaced, new text)
        let mut edits: Vec<(usize, usize, String)> = Vec::new();
        for def in &defs {
            let (ba, bb) = def.body;
            let mut kernel_declared = declared_names(&src, ba, bb);
            kernel_declared.extend(param_names(&src, def.params).into_iter().map(|(n, _)| n));
            let mut i = ba;
            while i < bb {
                let Some(Some(h)) = helpers.get(src.t(i)) else {
                    i += 1;
                    continue;
                };
                let call = i;
                i += 1;
                if !src.ident(call)
                    || !src.is(call + 1, "(")
                    || matches!(src.t(call - 1), "." | "->" | "::")
                    || h.free.iter().any(|w| kernel_declared.contains(w))
                {
                    continue;
                }
                let Some(close) = src.close(call + 1) else {
                    continue;
                };
                // The statement's start: the call must not sit inside brackets (a condition, an
                // argument, a subscript) or after `?`, `:`, `&&`, `||` or `,` (which could skip it).
                let mut st = call;
                let mut ok = true;
                let mut depth = 0i32;
                while st > ba {
                    match src.t(st - 1) {
                        ";" | "{" | "}" if depth == 0 => break,
                        ")" | "]" => depth += 1,
                        "(" | "[" => {
                            depth -= 1;
                            if depth < 0 {
                                ok = false;
                                break;
                            }
                        }
                        "?" | ":" | "&&" | "||" | "," if depth == 0 => {
                            ok = false;
                            break;
                        }
                        _ => {}
                    }
                    st -= 1;
                }
                // And its end: the `;` closing it.
                let Ok(past) = (Parser { src: &src }).simple_end(close + 1) else {
                    continue;
                };
                let end = past - 1;
                if end >= bb {
                    continue;
                }
                if !ok
                    || matches!(
                        src.t(st),
                        "if" | "while"
                            | "for"
                            | "switch"
                            | "return"
                            | "else"
                            | "do"
                            | "case"
                            | "default"
                            | "goto"
                    )
                {
                    continue;
                }
                let args = src.split_commas(call + 2, close);
                if args.len() != h.params.len() {
                    continue;
                }
                if h.ret.is_none() && (st != call || end != close + 1) {
                    continue; // a void call inside an expression
                }
                serial += 1;
                let n = serial;
                let mut pre = String::from("\n");
                for (k, ((x, y), (ty, _))) in args.iter().zip(&h.params).enumerate() {
                    pre.push_str(&format!("{ty} rk_h{n}_a{k} = {};\n", src.text(*x, *y)));
                }
                if let Some(ty) = &h.ret {
                    pre.push_str(&format!("{ty} rk_h{n}_r{{}};\n"));
                }
                pre.push_str("{\n");
                for (k, (ty, name)) in h.params.iter().enumerate() {
                    pre.push_str(&format!("{ty} {name} = rk_h{n}_a{k};\n"));
                }
                pre.push_str(&h.body);
                if let Some(result) = &h.result {
                    pre.push_str(&format!("\nrk_h{n}_r = {result};"));
                }
                pre.push_str("\n}\n");
                let stmt_at = src.toks[st].s;
                let (cs, ce) = (src.toks[call].s, src.toks[close].e);
                if h.ret.is_none() || (st == call && end == close + 1) {
                    // The statement is the call: the block replaces it.
                    let semi = src.toks[close + 1].e;
                    edits.push((stmt_at, semi - stmt_at, pre));
                } else {
                    edits.push((cs, ce - cs, format!("rk_h{n}_r")));
                    edits.push((stmt_at, 0, pre));
                }
                i = end + 1;
            }
        }
        if edits.is_empty() {
            break;
        }
        edits.sort_by(|x, y| y.0.cmp(&x.0).then(y.1.cmp(&x.1)));
        for (at, len, with) in edits {
            cur.replace_range(at..at + len, &with);
        }
        changed = true;
    }
    changed.then_some(cur)
}

/// Region forms for the kernels defined in a preprocessed translation unit.
pub fn generate(preprocessed: &str) -> Outcome {
    // Kernels calling helpers that wait get their region form from a copy of the text with the
    // calls inlined (the kernels themselves, for the fiber path, keep calling them).
    let inlined = inline_waiting_calls(preprocessed);
    let src = Src::new(inlined.as_deref().unwrap_or(preprocessed));
    let bodies = function_bodies(&src);
    let (defs, specialized) = kernel_defs(&src);
    let mut waiting = waiting_functions(&src, &bodies);
    let readers = reading_functions(&src, &bodies, &["thread_idx"]);
    // Kernels cannot be called from device code: a kernel with barriers is no reason for another
    // one (with a variable of the same name) to keep fibers.
    for d in &defs {
        waiting.remove(&d.name);
    }
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &defs {
        *count.entry(d.qualified.as_str()).or_default() += 1;
    }
    let mut out = Outcome::default();
    for def in &defs {
        if count[def.qualified.as_str()] > 1 {
            out.fibers
                .push((def.qualified.clone(), "it is overloaded".into()));
            continue;
        }
        if specialized.contains(&def.qualified) {
            out.fibers.push((
                def.qualified.clone(),
                "it has explicit specializations".into(),
            ));
            continue;
        }
        // Kernels in anonymous namespaces are reachable by their unqualified names only within
        // this unit, which is where the block function goes.
        match form_for(&src, def, &waiting, &readers) {
            Ok(Some((code, whole_block))) => {
                let block_fn = match def.qualified.rfind("::") {
                    Some(at) => format!("{}::rk_block_{}", &def.qualified[..at], def.name),
                    None => format!("rk_block_{}", def.name),
                };
                out.forms.push(RegionForm {
                    kernel: def.qualified.clone(),
                    block_fn,
                    code,
                    whole_block,
                });
            }
            Ok(None) => {}
            Err(why) => out.fibers.push((def.qualified.clone(), why)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(src: &str) -> Outcome {
        generate(src)
    }

    #[test]
    fn kernels_without_barriers_are_one_lane_loop_without_slots() {
        let o = form(
            "__rk_kernel__ void k(float* x, int n) { int i = (rk_cur.thread_idx).x; if (i < n) x[i] = 1; }\n\
             __rk_kernel__ void g(float* x) { l: x[0] = 1; goto l; }",
        );
        assert_eq!(o.forms.len(), 1, "{o:?}");
        let code = &o.forms[0].code;
        assert!(code.contains("RK_ALL_LANES(rkr)"), "{code}");
        assert!(!code.contains("rkr.alloc"), "{code}");
        assert!(code.contains("int i = (rk_tidx).x;"), "{code}");
        // Where the rewrite does not apply, a kernel without barriers keeps the per-thread loop
        // and that is no reason to report.
        assert!(o.fibers.is_empty(), "{o:?}");
    }

    #[test]
    fn a_reduction_gets_lane_loops_and_masks() {
        let o = form(
            "__rk_kernel__ void r(const float* in, float* out) {\n\
             thread_local float s[256];\n\
             unsigned t = (rk_cur.thread_idx).x;\n\
             s[t] = in[t];\n\
             __syncthreads();\n\
             for (unsigned k = 128; k > 0; k >>= 1) { if (t < k) s[t] += s[t + k]; __syncthreads(); }\n\
             if (t == 0) out[0] = s[0];\n}",
        );
        assert_eq!(o.forms.len(), 1, "{o:?}");
        let code = &o.forms[0].code;
        assert!(
            code.contains("void rk_block_r(const float* in, float* out)"),
            "{code}"
        );
        assert!(code.contains("rkr.alloc<unsigned>()"), "{code}");
        // Every lane reaches every barrier: no checks, and the loop (the same in every lane)
        // runs once for the block with `k` shared.
        assert!(!code.contains("rkr.barrier("), "{code}");
        assert!(code.contains("rkr.barrier_full("), "{code}");
        assert!(
            code.contains("for (unsigned k = 128; k > 0; k >>= 1)"),
            "{code}"
        );
        assert!(!code.contains("RK_LANES(rkr)"), "{code}");
        // The shared array is declared once per block, not per lane.
        assert!(
            code.contains("auto &s = rkr.shared<float[256]>();"),
            "{code}"
        );
        assert_eq!(o.block_ref("r").as_deref(), Some("rk_block_r"));
    }

    #[test]
    fn indices_recomputed_after_a_barrier_need_no_slots() {
        let o = form(
            "__rk_kernel__ void t(const float* in, float* out) {\n\
             thread_local float tile[64];\n\
             int x = (rk_cur.thread_idx).x;\n\
             tile[x] = in[x];\n\
             __syncthreads();\n\
             x = 63 - (rk_cur.thread_idx).x;\n\
             out[x] = tile[x];\n}",
        );
        let code = &o.forms[0].code;
        assert!(!code.contains("rkr.alloc"), "{code}");
        assert!(code.contains("int x = 63 - (rk_tidx).x;"), "{code}");
    }

    #[test]
    fn uniform_loops_without_barriers_step_lanes_together() {
        let o = form(
            "__rk_kernel__ void t(const float* in, float* out, int w) {\n\
             int x = (rk_cur.thread_idx).x;\n\
             float acc = 0.0f;\n\
             for (int j = 0; j < 32; j += 8) acc += in[j * w + x];\n\
             for (int k = 0; k < x; ++k) acc += 1.0f;\n\
             for (int m = 0; m < 4; ++m) { if (acc > 9.0f) break; acc *= 2.0f; }\n\
             out[x] = acc;\n}",
        );
        let code = &o.forms[0].code;
        // The first loop runs once with a lane loop inside; `acc` and `x` live across lane loops.
        assert!(code.contains("for (int j = 0; j < 32; j += 8)"), "{code}");
        assert!(code.contains("rkr.alloc<float>()"), "{code}");
        // `k < x` differs per lane and the last loop can `break`: both stay inside lane code.
        assert!(code.contains("\nfor (int k = 0; k < x; ++k)"), "{code}");
        let lockstep = code.find("for (int j = 0").unwrap();
        let lanes = code[..lockstep].matches("RK_ALL_LANES").count();
        assert_eq!(lanes, 1, "one lane loop before the lockstep loop: {code}");
    }

    #[test]
    fn kernels_whose_thread_order_cannot_matter_run_whole_blocks() {
        let whole = |k: &str| {
            let o = form(k);
            assert_eq!(o.forms.len(), 1, "{o:?}");
            o.forms[0].whole_block
        };
        // Tiled transpose: read in, write tile | barrier | read tile, write out.
        assert!(whole(
            "__rk_kernel__ void t(const float* __restrict__ in, float* __restrict__ out) {\n\
             thread_local float tile[32][33];\n\
             int x = (rk_cur.thread_idx).x;\n\
             for (int j = 0; j < 32; j += 8) tile[j][x] = in[j * 32 + x];\n\
             __syncthreads();\n\
             for (int j = 0; j < 32; j += 8) out[j * 32 + x] = tile[x][j];\n}"
        ));
        // A missing barrier: the tile is written and read between the same barriers.
        assert!(!whole(
            "__rk_kernel__ void m(const float* __restrict__ in, float* __restrict__ out) {\n\
             thread_local float s[64];\n\
             int t = (rk_cur.thread_idx).x;\n\
             s[t] = in[t];\n\
             out[t] = s[(t + 1) % 64];\n\
             __syncthreads();\n}"
        ));
        // Parameters without __restrict__ may alias: reading one and writing another conflicts.
        assert!(!whole(
            "__rk_kernel__ void a(const float* in, float* out) {\n\
             int t = (rk_cur.thread_idx).x;\n\
             out[t] = in[t];\n\
             __syncthreads();\n}"
        ));
        // A pointer of the kernel's own defeats the proof, as does a barrier inside a loop.
        assert!(!whole(
            "__rk_kernel__ void p(float* __restrict__ out) {\n\
             thread_local float s[64];\n\
             float* q = s + 1;\n\
             int t = (rk_cur.thread_idx).x;\n\
             q[t] = 1.0f;\n\
             __syncthreads();\n\
             out[t] = s[t];\n}"
        ));
        assert!(!whole(
            "__rk_kernel__ void l(float* __restrict__ out) {\n\
             thread_local float s[64];\n\
             int t = (rk_cur.thread_idx).x;\n\
             for (int k = 0; k < 2; ++k) { s[t] = k; __syncthreads(); }\n\
             out[t] = s[t];\n}"
        ));
    }

    #[test]
    fn barriers_after_an_early_return_are_checked() {
        let o = form(
            "__rk_kernel__ void r(float* p, int n) {\n\
             int t = (rk_cur.thread_idx).x;\n\
             if (t >= n) return;\n\
             for (int k = 0; k < t; ++k) { p[t] += 1; __syncthreads(); }\n}",
        );
        let code = &o.forms[0].code;
        assert!(code.contains("rkr.ret(rk_t)"), "{code}");
        assert!(code.contains("rkr.barrier("), "{code}");
        // `k < t` differs between lanes: the loop runs under a mask.
        assert!(code.contains("rkr.keep_if("), "{code}");
        assert!(code.contains("RK_LANES(rkr)"), "{code}");
    }

    #[test]
    fn shuffles_split_into_operand_and_result_loops() {
        let o = form(
            "namespace n { template <int W> __rk_kernel__ void w(float* p) {\n\
             float v = p[(rk_cur.thread_idx).x];\n\
             for (int o = W / 2; o > 0; o /= 2) v += __shfl_down(v, o);\n\
             p[(rk_cur.thread_idx).x] = v; } }\n\
             template __rk_kernel__ void n::w<32>(float*);",
        );
        assert_eq!(o.forms.len(), 1, "{o:?}");
        let code = &o.forms[0].code;
        assert!(code.contains("rk::bits(v)"), "{code}");
        assert!(code.contains("RK_WARP_SHFL_DOWN"), "{code}");
        assert!(code.starts_with("namespace n {"), "{code}");
        assert_eq!(
            o.block_ref("n::w<32>").as_deref(),
            Some("n::rk_block_w<32>")
        );
    }

    #[test]
    fn mutated_parameters_get_lane_copies() {
        let o = form(
            "__rk_kernel__ void k(float* p, int n) { p += (rk_cur.thread_idx).x; __syncthreads(); *p = n; }",
        );
        let code = &o.forms[0].code;
        assert!(
            code.contains("rk_block_k(float* rk_arg_p, int n)"),
            "{code}"
        );
        assert!(code.contains("rk_p_p[rk_t] = rk_arg_p"), "{code}");
    }

    #[test]
    fn unsupported_shapes_keep_fibers_with_a_reason() {
        let o = form(
            "__device__ float helper(float v) { return __shfl_xor(v, 1); }\n\
             __rk_kernel__ void a(float* p) { if (helper(p[0]) > 0) p[0] = 1; }\n\
             __rk_kernel__ void b(float* p) { switch (p[0] > 0) { case 1: __syncthreads(); } }\n\
             __rk_kernel__ void c(float* p) { float& r = p[0]; __syncthreads(); r = 1; }",
        );
        assert!(o.forms.is_empty(), "{o:?}");
        let why: BTreeMap<_, _> = o.fibers.iter().cloned().collect();
        assert!(why["a"].contains("helper"), "{why:?}");
        assert!(why["b"].contains("switch"), "{why:?}");
        assert!(why["c"].contains("reference"), "{why:?}");
    }

    #[test]
    fn helpers_that_wait_are_inlined_where_calls_are_statements() {
        let o = form(
            "__device__ float sum(float v) {\n\
               for (int o = 16; o > 0; o /= 2) v += __shfl_xor(v, o);\n\
               return v;\n\
             }\n\
             template <typename T> __device__ T twice(T v) { return sum(v) * 2; }\n\
             __device__ float thrice(float v) { return sum(v) * 3; }\n\
             __device__ void fence(int* p) { p[0] = 1; __syncthreads(); }\n\
             __rk_kernel__ void a(float* p) { float s = sum(p[threadIdx.x]); p[threadIdx.x] = s; }\n\
             __rk_kernel__ void b(float* p) { float s = 0; s += twice(p[threadIdx.x]); p[0] = s; }\n\
             __rk_kernel__ void c(int* p) { fence(p); p[1] = 2; }\n\
             __rk_kernel__ void d(float* p) { float o = 1; p[0] = sum(p[0]) + o; }\n\
             __rk_kernel__ void e(float* p) { p[0] = p[1] > 0 ? sum(p[0]) : 0; }\n\
             __rk_kernel__ void f(float* p) { p[0] = thrice(p[0]); }",
        );
        let why: BTreeMap<_, _> = o.fibers.iter().cloned().collect();
        for k in ["a", "c"] {
            let f = o.forms.iter().find(|f| f.kernel == k);
            assert!(f.is_some(), "{k}: {why:?}");
        }
        let a = &o.forms.iter().find(|f| f.kernel == "a").unwrap().code;
        // Arguments first, the result declared outside the helper's scope, the call replaced.
        assert!(a.contains("rk_h1_a0"), "{a}");
        assert!(a.contains("rk_h1_r = v;"), "{a}");
        assert!(a.contains("s = rk_h1_r"), "{a}");
        assert!(!a.contains("sum("), "{a}");
        // Templates stay calls.
        assert!(why["b"].contains("twice"), "{why:?}");
        // `d` declares `o`, which `sum` declares too (fine), but `sum`'s loop variable is its own:
        // inlined. `e` calls it under `?:`: only some lanes would run it, so it stays a call.
        assert!(o.forms.iter().any(|f| f.kernel == "d"), "{why:?}");
        // `thrice` calls `sum` in its return expression: inlined in a second round.
        let f = &o
            .forms
            .iter()
            .find(|f| f.kernel == "f")
            .expect("f inlined")
            .code;
        assert!(!f.contains("thrice(") && !f.contains("sum("), "{f}");
        assert!(why["e"].contains("sum"), "{why:?}");
    }

    #[test]
    fn helpers_whose_names_a_kernel_would_capture_stay_calls() {
        // `scaled` reads a global `k`; kernel `a` declares its own `k`, `b` has a parameter `k`.
        let o = form(
            "__device__ int k = 3;\n\
             __device__ float scaled(float v) { v = __shfl_xor(v, 1); return v * k; }\n\
             __rk_kernel__ void a(float* p) { int k = 2; p[k] = scaled(p[0]); }\n\
             __rk_kernel__ void b(float* p, int k) { p[k] = scaled(p[0]); }",
        );
        assert!(o.forms.is_empty(), "{o:?}");
        assert!(
            o.fibers.iter().all(|(_, why)| why.contains("scaled")),
            "{o:?}"
        );
        assert_eq!(o.fibers.len(), 2, "{o:?}");
    }

    #[test]
    fn lane_loops_of_one_dimensional_kernels_are_unrolled() {
        let o = form(
            "__rk_kernel__ void a(float* p) { p[(rk_cur.thread_idx).x] += 1; }\n\
             __rk_kernel__ void b(float* p) { p[(rk_cur.thread_idx).y * 32 + (rk_cur.thread_idx).x] += 1; }",
        );
        let code = |k: &str| &o.forms.iter().find(|f| f.kernel == k).unwrap().code;
        assert!(
            code("a").contains("#define RK_LANE_UNROLL RK_UNROLL_4\n"),
            "{}",
            code("a")
        );
        assert!(
            code("b").contains("#define RK_LANE_UNROLL\n"),
            "{}",
            code("b")
        );
    }

    #[test]
    fn uniform_constants_are_hoisted() {
        let g_src =
            Src::new("const int w = 32 * sizeof(float); const int t = (rk_cur.thread_idx).x;");
        let g = Gen {
            src: &g_src,
            out: String::new(),
            scopes: vec![Vec::new()],
            loops: 0,
            next_id: 0,
            labels: Vec::new(),
            masked: 0,
            returned: false,
            returned_here: false,
        };
        assert!(matches!(g.classify(0, 10).unwrap(), Decl::Hoist));
        let second = (0..g_src.toks.len())
            .filter(|&i| g_src.is(i, ";"))
            .collect::<Vec<_>>();
        let d = g.classify(second[0] + 1, second[1] + 1).unwrap();
        assert!(
            matches!(d, Decl::Lanes { ty: Some(ref t), .. } if t == "int"),
            "{d:?}"
        );
    }
}
