//! The statements and declarations the region form understands, parsed from a kernel's tokens:
//! statement structure (blocks, `if`, loops, `switch`, jumps, simple statements), what a
//! declaration declares (its slot type, variables, initializers), the calls of warp collectives
//! in an expression, and the words that name them. Token ranges point into the kernel's
//! [`Tokens`]; nothing here decides how a statement runs (see `analysis`).

use super::super::lex::{Kind, Tokens};

/// A result whose error says why a kernel keeps its fibers.
pub type PResult<T> = Result<T, String>;

/// Barriers and warp collectives: the calls a region form splits lane loops at.
pub const COLLECTIVES: &[&str] = &[
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
    "__syncwarp",
    // The cpu header's names for AMD's `readfirstlane` and cooperative groups' tile `reduce`
    // (collectives of their own in the region form; see `groups`).
    "__rk_readfirstlane",
    "__rk_tile_reduce",
];

/// Assignment operators.
pub const ASSIGN_OPS: &[&str] = &[
    "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=",
];

/// Words that can precede a name in an expression, so `word name =` or `word name[` is no
/// declaration.
pub const NOT_TYPES: &[&str] = &[
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
pub const EXPR_WORDS: &[&str] = &[
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

// Statements.

/// A `for` header: `init ;` (with its semicolon), condition, step, as token ranges.
pub type ForParts = ((usize, usize), (usize, usize), (usize, usize));

#[derive(Debug)]
pub enum St {
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
pub struct Stmt {
    /// Tokens [start, end) (a leading `#pragma` included).
    pub start: usize,
    pub end: usize,
    pub st: St,
}

pub struct Parser<'s, 'a> {
    pub src: &'s Tokens<'a>,
}

impl Parser<'_, '_> {
    fn expect(&self, i: usize, s: &str) -> PResult<()> {
        if self.src.is(i, s) {
            Ok(())
        } else {
            Err(format!("expected `{s}` but found `{}`", self.src.tok(i)))
        }
    }

    fn paren(&self, open: usize) -> PResult<usize> {
        self.expect(open, "(")?;
        self.src
            .close(open)
            .ok_or_else(|| "unbalanced parentheses".to_string())
    }

    /// Statements from `i` up to the `}` at `end`.
    pub fn block(&self, mut i: usize, end: usize) -> PResult<Vec<Stmt>> {
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

    pub fn stmt(&self, i: usize) -> PResult<Stmt> {
        let src = self.src;
        if i >= src.len() {
            return Err("unexpected end of the kernel".into());
        }
        if src.kind(i) == Some(Kind::Pragma) {
            if i + 1 >= src.len() || src.is(i + 1, "}") {
                // The last thing in its block: a statement of its own.
                return Ok(Stmt {
                    start: i,
                    end: i + 1,
                    st: St::Simple,
                });
            }
            let mut s = self.stmt(i + 1)?;
            s.start = i;
            return Ok(s);
        }
        let mk = |end: usize, st: St| Ok(Stmt { start: i, end, st });
        match src.tok(i) {
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
                    match src.tok(k) {
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
                while k < src.len() && !src.is(k, ":") {
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
    pub fn simple_end(&self, i: usize) -> PResult<usize> {
        let mut depth = 0i32;
        for k in i..self.src.len() {
            match self.src.tok(k) {
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

// Declarations.

#[derive(Debug, Clone)]
pub enum Init {
    None,
    /// `= expr`
    Expr(usize, usize),
    /// `(args)` or `{args}` (direct or list initialisation; the bool: braces)
    Args(usize, usize, bool),
}

#[derive(Debug, Clone)]
pub struct DeclVar {
    pub name: String,
    pub init: Init,
    /// Array dimensions text, e.g. `[4][8]`.
    pub dims: String,
}

/// What a simple statement declares, as far as the region form cares.
#[derive(Debug, Clone)]
pub enum Declaration {
    /// Not a declaration: an expression statement, or a shape the rewrite leaves in lane code.
    None,
    /// A declaration that is the same for every lane by what it is: a type (`typedef`, `using`,
    /// `struct`...), `static_assert`, or a `static`, `constexpr`, `thread_local` (`__shared__`),
    /// `extern` or `register` variable.
    Static,
    /// Variables, each of which could need one slot per lane.
    Variables {
        /// The slot type: the declared type without its top-level `const` (and `__restrict__`
        /// on a pointer); None for `auto` and `decltype(...)`.
        ty: Option<String>,
        vars: Vec<DeclVar>,
        /// Declared `const` at the top level (`const int`, `float *const`).
        top_const: bool,
    },
}

/// What the simple statement [a, end) (`end` just past its `;`) declares. Err for declarations
/// the region form cannot give slots to (a reference, an initialized array, `auto` without
/// `= expression`, several pointers in one declaration).
pub fn declaration(src: &Tokens, a: usize, end: usize) -> PResult<Declaration> {
    let b = end - 1; // the `;`
    if a >= b {
        return Ok(Declaration::None);
    }
    let first = src.tok(a);
    if matches!(
        first,
        "typedef" | "using" | "static_assert" | "struct" | "class" | "union" | "enum"
    ) {
        return Ok(Declaration::Static);
    }
    if !src.ident(a) || EXPR_WORDS.contains(&first) {
        return Ok(Declaration::None);
    }
    // The first declarator's name: the identifier before the first `=`, `(`, `{`, `[`, `,`
    // or `;` outside template arguments.
    let mut k = a;
    let mut stop = None;
    while k < end {
        let t = src.tok(k);
        if t == "<" && k > a && src.ident(k - 1) {
            match src.close_angle(k) {
                Some(c) => {
                    k = c + 1;
                    continue;
                }
                None => return Ok(Declaration::None),
            }
        }
        if matches!(t, "=" | "(" | "{" | "[" | "," | ";") {
            stop = Some(k);
            break;
        }
        let typeish = src.ident(k) || matches!(t, "::" | "*" | "&" | "&&" | ">");
        if !typeish {
            return Ok(Declaration::None);
        }
        k += 1;
    }
    let Some(stop) = stop else {
        return Ok(Declaration::None);
    };
    if stop < a + 2 || !src.ident(stop - 1) {
        return Ok(Declaration::None);
    }
    let before = src.tok(stop - 2);
    if !(src.ident(stop - 2) || matches!(before, ">" | "*" | "&" | "&&")) {
        return Ok(Declaration::None);
    }
    let spec: Vec<&str> = (a..stop - 1).map(|i| src.tok(i)).collect();
    if spec.last() == Some(&"::") || spec.iter().any(|w| EXPR_WORDS.contains(w)) {
        return Ok(Declaration::None);
    }
    if spec.iter().any(|w| {
        matches!(
            *w,
            "static" | "constexpr" | "thread_local" | "extern" | "__shared__" | "register"
        )
    }) {
        return Ok(Declaration::Static);
    }
    if spec.iter().any(|w| matches!(*w, "&" | "&&")) {
        return Err(format!(
            "the reference `{}` is declared at the level of a barrier",
            src.tok(stop - 1)
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
        let name = src.tok(da).to_string();
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
                return Ok(Declaration::None);
            }
            Init::Args(k + 1, c, src.is(k, "{"))
        } else {
            return Ok(Declaration::None);
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
    let last_star = spec.iter().rposition(|w| *w == "*");
    let top_const = match last_star {
        Some(star) => spec[star..].contains(&"const"),
        None => spec.contains(&"const"),
    };
    if is_auto {
        return Ok(Declaration::Variables {
            ty: None,
            vars,
            top_const,
        });
    }
    // The slot type: the declared type without its top-level const.
    let mut words: Vec<&str> = spec.clone();
    if let Some(star) = last_star {
        let (head, tail) = words.split_at(star);
        let tail: Vec<&str> = tail
            .iter()
            .copied()
            .filter(|w| !matches!(*w, "const" | "__restrict__" | "__restrict"))
            .collect();
        words = head.iter().copied().chain(tail).collect();
    } else {
        words.retain(|w| *w != "const");
    }
    Ok(Declaration::Variables {
        ty: Some(join_words(&words)),
        vars,
        top_const,
    })
}

/// Words joined as C++ with spaces only between names (`unsigned int*`).
pub fn join_words(words: &[&str]) -> String {
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

/// Parameters of a kernel: (name, token index of the name).
pub fn param_names(src: &Tokens, (a, b): (usize, usize)) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (p, q) in src.split_commas(a, b) {
        let end = (p..q)
            .find(|&i| src.is(i, "=") || src.is(i, "["))
            .unwrap_or(q);
        if end > p + 1 && src.ident(end - 1) {
            out.push((src.tok(end - 1).to_string(), end - 1));
        }
    }
    out
}

/// Whether the condition [a, b) declares a variable (`if (int x = f())`, a `for` header).
pub fn declares_in_condition(src: &Tokens, a: usize, b: usize) -> bool {
    (a..b).any(|i| src.is(i, ";")) || (b > a + 1 && src.ident(a) && src.ident(a + 1))
}

/// A call of a warp collective or barrier inside an expression.
#[derive(Debug)]
pub struct CollectiveCall<'a> {
    pub name: &'a str,
    /// The name's token, and the `)` closing the call.
    pub at: usize,
    pub close: usize,
    /// The arguments' token ranges.
    pub args: Vec<(usize, usize)>,
}

/// The collective calls in [a, b). Err when a collective is used other than by a call, inside
/// another one's operands, inside a lambda (it runs where the lambda is called), or where only
/// some threads would evaluate it (see [`conditional_operator`]).
pub fn collective_calls<'a>(
    src: &Tokens<'a>,
    a: usize,
    b: usize,
) -> PResult<Vec<CollectiveCall<'a>>> {
    let mut calls = Vec::new();
    let mut i = a;
    while i < b {
        if src.ident(i) && COLLECTIVES.contains(&src.tok(i)) {
            let name = src.tok(i);
            if !src.is(i + 1, "(") {
                return Err(format!("`{name}` used other than by a call"));
            }
            let close = src.close(i + 1).ok_or("unbalanced call")?;
            if has_collective(src, i + 2, close) {
                return Err("a collective inside another one's operands".into());
            }
            if in_lambda(src, a, i) {
                return Err(format!(
                    "`{name}` inside a lambda (it waits where the lambda is called)"
                ));
            }
            if let Some(op) = conditional_operator(src, a, i) {
                return Err(format!(
                    "`{name}` is under `{op}`, so only some threads may reach it"
                ));
            }
            calls.push(CollectiveCall {
                name: src.tok(i),
                at: i,
                close,
                args: src.split_commas(i + 2, close),
            });
            i = close + 1;
            continue;
        }
        i += 1;
    }
    Ok(calls)
}

/// Whether tokens [a, b) name a barrier or collective.
pub fn has_collective(src: &Tokens, a: usize, b: usize) -> bool {
    (a..b).any(|i| src.ident(i) && COLLECTIVES.contains(&src.tok(i)))
}

/// Whether the `{` at `brace` opens a lambda's body: `] {`, `] (params) {`, with `mutable`,
/// `constexpr`, `noexcept` or a trailing return type between.
pub fn lambda_body(src: &Tokens, brace: usize) -> bool {
    let mut j = brace;
    while j > 0 && matches!(src.tok(j - 1), "mutable" | "constexpr" | "noexcept") {
        j -= 1;
    }
    // `-> type`: back to the arrow, over names, `::`, `<...>`, `*`, `&`.
    if let Some(arrow) = (j.saturating_sub(16)..j)
        .rev()
        .take_while(|&k| {
            src.ident(k) || matches!(src.tok(k), "::" | "<" | ">" | "*" | "&" | "->" | ",")
        })
        .find(|&k| src.is(k, "->"))
    {
        j = arrow;
    }
    if j == 0 {
        return false;
    }
    if src.is(j - 1, "]") {
        return true;
    }
    src.is(j - 1, ")")
        && src
            .open_of(j - 1)
            .is_some_and(|open| open > 0 && src.is(open - 1, "]"))
}

/// Whether token `at` lies inside the body of a lambda that opens in [a, at).
fn in_lambda(src: &Tokens, a: usize, at: usize) -> bool {
    (a..at).any(|k| src.is(k, "{") && src.close(k).is_some_and(|c| c > at) && lambda_body(src, k))
}

/// The operator (`?:`, `&&` or `||`) whose conditionally evaluated operand token `at` lies in,
/// within the expression starting at `a`: the second or third operand of `?:`, the right-hand
/// side of `&&` or `||`. A barrier or collective there is reached only by the threads for which
/// the condition holds.
pub fn conditional_operator(src: &Tokens, a: usize, at: usize) -> Option<&'static str> {
    // Operators whose conditional operand is still open, with the bracket depth they sit at.
    let mut open: Vec<(&'static str, usize)> = Vec::new();
    let mut depth = 0usize;
    for k in a..at {
        let t = src.tok(k);
        match t {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth = depth.saturating_sub(1);
                open.retain(|&(_, d)| d <= depth);
            }
            _ => {}
        }
        // What ends an operand at its own depth: `,` and `;` end all three; `?`, `:` and
        // assignments end the right-hand side of `&&` and `||`, and `||` that of `&&`.
        let ends = |op: &str| match t {
            "," | ";" => true,
            "?" | ":" => op != "?:",
            "||" => op == "&&",
            _ => op != "?:" && ASSIGN_OPS.contains(&t),
        };
        open.retain(|&(op, d)| d != depth || !ends(op));
        match t {
            "?" => open.push(("?:", depth)),
            "&&" | "||" if src.kind(k) == Some(Kind::Punct) => {
                open.push((if t == "&&" { "&&" } else { "||" }, depth))
            }
            _ => {}
        }
    }
    open.first().map(|&(op, _)| op)
}
