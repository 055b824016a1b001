//! Summaries for the race detector: in the race variant (`__SANITIZE_THREAD__`), a lane loop
//! whose memory accesses can be described ahead tells the detector, run of lanes by run, what
//! each place of the source will access (`rk_race_sum_add`: the first, second and last lane's
//! address), and then runs uninstrumented (`RK_SUMMARY_FN`), instead of one hook call per access.
//! The detector (`rocm-kernels/cpu-runtime/race.cpp`) checks the summaries against each other and
//! turns them back into hooked accesses the moment it cannot show them apart, so what it reports
//! is what the hooks alone would have found.
//!
//! A lane loop qualifies when every statement is one of: a declaration of a value (arithmetic or
//! a HIP vector type, initialised with `=`, `{...}` or `(...)`), an expression statement, an `if`
//! (or a block) of those, where
//! - memory is reached only through subscripts (`p[i]`, `tile[a][b]`, `p[i].x`) of the kernel's
//!   pointer parameters (never changed, not `volatile`) and its static `__shared__` arrays, each
//!   index affine in `threadIdx.x` (sums, differences and products by lane-independent values of
//!   the lane's coordinates, parameters, literals, uniform loop variables and variables declared
//!   from such values): along a run of lanes (x varies, y and z do not) the address is then
//!   affine in the lane modulo the index type's width, which the detector checks with the last
//!   lane (a wrap shows there);
//! - the conditions that decide whether a place is reached (`if`, a top-level `?:`) read no
//!   memory and call nothing but arithmetic, so they can be evaluated for every lane first;
//! - nothing takes an address, dereferences a pointer, calls a function outside a list of math
//!   functions, names a variable the kernel does not declare (a `__device__` variable is memory
//!   the detector checks), or changes a variable that a condition or an index reads.
//!
//! A lane loop that touches lane storage alone (its own variables, a collective's operand slots:
//! [`Gen::lane_storage_only`]) runs uninstrumented with nothing to tell. Anything else keeps the
//! lane loop hooked as before. The uninstrumented runs take the block function's variables as
//! parameters ([`Gen::fast_lambda`]), and the build warns where the instrumented compile rejected
//! the region forms (`race::build`), which the corpora's test holds at none.

use std::collections::{BTreeMap, BTreeSet};

use super::super::super::lex::{lex, Kind, Tokens};
use super::super::analysis::Decl;
use super::super::parse::{declaration, Declaration, Init, St, Stmt, ASSIGN_OPS, COLLECTIVES};
use super::{remat_parts, Gen};

/// How an expression depends on the lane along a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cls {
    /// Not at all.
    Inv,
    /// Affine in `threadIdx.x`.
    Aff,
    /// Some other way (usable in a condition, not in an index).
    Opaque,
    /// `rk_cur.thread_idx` itself (its `.x` is affine, `.y` and `.z` invariant).
    Tidx,
}

/// Functions a condition or a value may call: arithmetic on their arguments alone.
const PURE_CALLS: &[&str] = &[
    "min",
    "max",
    "fminf",
    "fmaxf",
    "fmin",
    "fmax",
    "abs",
    "fabsf",
    "fabs",
    "sqrtf",
    "sqrt",
    "rsqrtf",
    "expf",
    "exp",
    "exp2f",
    "__expf",
    "logf",
    "log",
    "log2f",
    "__logf",
    "sinf",
    "cosf",
    "tanhf",
    "tanh",
    "powf",
    "floorf",
    "ceilf",
    "roundf",
    "fmaf",
    "__fdividef",
    "__fmul_rn",
    "__fadd_rn",
    "__saturatef",
    "truncf",
];

/// Whether a declared type is a value (arithmetic, a HIP vector type, `auto`), whose
/// initialisation calls nothing of the kernel's.
fn value_type(ty: &str) -> bool {
    let words: Vec<&str> = ty
        .split(|c: char| c.is_whitespace() || c == ':')
        .filter(|w| !w.is_empty())
        .collect();
    !words.is_empty()
        && words.iter().all(|w| {
            TYPE_WORDS.contains(w)
                || matches!(
                    *w,
                    "auto"
                        | "float2"
                        | "float3"
                        | "float4"
                        | "int2"
                        | "int3"
                        | "int4"
                        | "uint2"
                        | "uint3"
                        | "uint4"
                        | "double2"
                        | "__half"
                        | "half"
                )
        })
}

/// Words that name no variable.
const KEYWORDS: &[&str] = &[
    "true",
    "false",
    "nullptr",
    "sizeof",
    "static_cast",
    "decltype",
    "std",
    "float2",
    "float4",
    "int2",
    "int4",
];

/// Type words a cast may consist of.
const TYPE_WORDS: &[&str] = &[
    "int",
    "unsigned",
    "signed",
    "long",
    "short",
    "char",
    "float",
    "double",
    "bool",
    "size_t",
    "uint32_t",
    "int32_t",
    "uint64_t",
    "int64_t",
    "uint16_t",
    "int16_t",
    "uint8_t",
    "int8_t",
    "const",
    "std",
    "::",
    "ptrdiff_t",
];

fn type_words(src: &Tokens, a: usize, b: usize) -> bool {
    a < b && (a..b).all(|i| TYPE_WORDS.contains(&src.tok(i)))
}

/// A place of the source the lane loop reaches memory at.
struct Site {
    /// The subscript expression, e.g. `y[i]` (lane code spelling).
    text: String,
    write: bool,
    /// Index into [`Plan::guards`].
    guard: usize,
    /// `#line` for the statement.
    line: String,
}

#[derive(Default)]
struct Plan {
    guards: Vec<String>,
    sites: Vec<Site>,
    /// Declarations evaluated per lane before the conditions and addresses.
    prelude: Vec<String>,
}

/// The analysis of one lane loop's statements.
struct Scan<'g, 's, 'a> {
    g: &'g Gen<'s, 'a>,
    /// Names of variables usable in conditions and indices, with how they depend on the lane.
    vars: BTreeMap<String, Cls>,
    /// Names conditions, indices or declared values read.
    used: BTreeSet<String>,
    /// Names the statements assign.
    assigned: BTreeSet<String>,
    plan: Plan,
    line: String,
    /// Warp collectives may be called (the lane loops around a collective: see
    /// [`Gen::lane_storage_only`]).
    collectives: bool,
}

impl Scan<'_, '_, '_> {
    fn guard(&mut self, text: String) -> usize {
        if let Some(k) = self.plan.guards.iter().position(|g| *g == text) {
            return k;
        }
        self.plan.guards.push(text);
        self.plan.guards.len() - 1
    }

    /// How tokens [a, b) of `src` depend on the lane, if they read no memory and change
    /// nothing.
    fn class(&mut self, src: &Tokens, a: usize, b: usize) -> Option<Cls> {
        let mut p = Ex {
            s: self,
            src,
            i: a,
            end: b,
        };
        let c = p.expr(0)?;
        (p.i == b).then_some(c)
    }

    /// How each argument of the comma-separated list [a, b) depends on the lane, if every one
    /// reads no memory and changes nothing.
    fn arg_classes(&mut self, src: &Tokens, a: usize, b: usize) -> Option<Vec<Cls>> {
        src.split_commas(a, b)
            .into_iter()
            .map(|(x, y)| self.class(src, x, y))
            .collect()
    }

    /// Finds the memory accesses of the expression [a, b) under guard `guard` (C++ text), and
    /// checks it does nothing else the summary cannot describe.
    fn accesses(&mut self, a: usize, b: usize, guard: &str) -> Option<()> {
        let src = self.g.src;
        // A top-level `c ? x : y`: x under c, y under !c.
        if let Some((q, colon)) = top_ternary(src, a, b) {
            let mut start = a;
            // `lhs = c ? x : y`: the condition starts after the assignment.
            if let Some(eq) = (a..q)
                .rev()
                .find(|&i| depth0(src, a, i) && ASSIGN_OPS.contains(&src.tok(i)))
            {
                self.accesses(a, eq, guard)?;
                start = eq + 1;
            }
            self.class(src, start, q)?;
            let cond = self.g.local_coordinates(src.text(start, q));
            self.accesses(q + 1, colon, &format!("{guard} && ({cond})"))?;
            return self.accesses(colon + 1, b, &format!("{guard} && !({cond})"));
        }
        let arrays = &self.g.arrays;
        let mut i = a;
        while i < b {
            let t = src.tok(i);
            match src.kind(i) {
                Some(Kind::Ident) if arrays.iter().any(|n| n == t) => {
                    if !src.is(i + 1, "[") {
                        return None;
                    }
                    if i > a && src.is(i - 1, "&") && (i < a + 2 || !src.ends_operand(i - 2)) {
                        return None;
                    }
                    let mut j = i + 1;
                    let mut subscripts = 0;
                    while src.is(j, "[") {
                        let close = src.close(j)?;
                        if !matches!(self.class(src, j + 1, close)?, Cls::Inv | Cls::Aff) {
                            return None;
                        }
                        j = close + 1;
                        subscripts += 1;
                    }
                    // A pointer parameter takes one subscript: `pp[i][j]` would read the pointer
                    // `pp[i]` unseen (a `__shared__` array's dimensions are its own).
                    if subscripts > 1 && self.g.params.iter().any(|n| n == t) {
                        return None;
                    }
                    if src.is(j, ".") && src.ident(j + 1) {
                        j += 2;
                    }
                    if matches!(src.tok(j), "[" | "." | "->" | "(") {
                        return None;
                    }
                    let write = ASSIGN_OPS.contains(&src.tok(j))
                        || matches!(src.tok(j), "++" | "--")
                        || (i > a && matches!(src.tok(i - 1), "++" | "--"));
                    let guard = self.guard(guard.to_string());
                    self.plan.sites.push(Site {
                        text: self.g.local_coordinates(src.text(i, j)),
                        write,
                        guard,
                        line: self.line.clone(),
                    });
                    i = j;
                    continue;
                }
                Some(Kind::Ident) => {
                    if matches!(
                        t,
                        "new" | "delete" | "throw" | "asm" | "__asm__" | "goto" | "this"
                    ) {
                        return None;
                    }
                    // A collective (`lane_storage_only`): the region form computes it from lane
                    // storage; its arguments are scanned as they come.
                    if src.is(i + 1, "(") && self.collectives && COLLECTIVES.contains(&t) {
                        i += 1;
                        continue;
                    }
                    if ASSIGN_OPS.contains(&src.tok(i + 1))
                        || matches!(src.tok(i + 1), "++" | "--")
                        || (i > a && matches!(src.tok(i - 1), "++" | "--"))
                    {
                        self.assigned.insert(t.to_string());
                    }
                    if src.is(i + 1, "(")
                        && !PURE_CALLS.contains(&t)
                        && !TYPE_WORDS.contains(&t)
                        && !matches!(t, "static_cast" | "sizeof")
                    {
                        return None;
                    }
                    // A name the kernel does not declare may be a `__device__` variable: memory
                    // the detector checks, which the summary would not describe.
                    let member = i > a && matches!(src.tok(i - 1), "." | "->");
                    if !member
                        && !src.is(i + 1, "(")
                        && !self.g.locals.contains(t)
                        && !self.g.template_names.iter().any(|n| n == t)
                        && !self.g.uniform.iter().any(|n| n == t)
                        && !TYPE_WORDS.contains(&t)
                        && !KEYWORDS.contains(&t)
                        // `rk_cur`, and the names the region form gives inlined helpers' variables.
                        && !t.starts_with("rk_")
                    {
                        return None;
                    }
                    if src.is(i + 1, "[") {
                        // A subscript of something else: a local array is fine only if it is
                        // one (never device memory); the summary cannot tell, so no.
                        return None;
                    }
                }
                Some(Kind::Punct) => {
                    if matches!(t, "->" | "?" | "&&" | "||" | "{" | "::") {
                        return None;
                    }
                    if matches!(t, "*" | "&") && (i == a || !src.ends_operand(i - 1)) {
                        return None;
                    }
                    if t == "[" {
                        // A lambda, or a subscript of an expression.
                        return None;
                    }
                }
                Some(Kind::Pragma) => return None,
                _ => {}
            }
            i += 1;
        }
        Some(())
    }

    /// A statement nested in the lane loop's, under `guard`.
    fn stmt(&mut self, s: &Stmt, guard: &str) -> Option<()> {
        let src = self.g.src;
        match &s.st {
            St::Simple => {
                if s.end <= s.start + 1 {
                    return Some(());
                }
                if looks_declared(src, s.start) {
                    return None;
                }
                self.line = self.g.source_line(s.start);
                self.accesses(s.start, s.end - 1, guard)
            }
            St::Block(body) => body.iter().try_for_each(|c| self.stmt(c, guard)),
            St::If {
                cond,
                then,
                els,
                constexpr: false,
            } => {
                self.class(src, cond.0, cond.1)?;
                let c = self.g.local_coordinates(src.text(cond.0, cond.1));
                self.stmt(then, &format!("{guard} && ({c})"))?;
                match els {
                    Some(e) => self.stmt(e, &format!("{guard} && !({c})")),
                    None => Some(()),
                }
            }
            _ => None,
        }
    }
}

/// A recursive-descent reading of an expression for [`Cls`].
struct Ex<'x, 'g, 's, 'a, 't> {
    s: &'x mut Scan<'g, 's, 'a>,
    src: &'x Tokens<'t>,
    i: usize,
    end: usize,
}

fn prec(op: &str) -> Option<u8> {
    Some(match op {
        "*" | "/" | "%" => 13,
        "+" | "-" => 12,
        "<<" | ">>" => 11,
        "<" | "<=" | ">" | ">=" => 10,
        "==" | "!=" => 9,
        "&" => 8,
        "^" => 7,
        "|" => 6,
        "&&" => 5,
        "||" => 4,
        "?" => 3,
        _ => return None,
    })
}

fn combine(op: &str, l: Cls, r: Cls) -> Option<Cls> {
    if l == Cls::Tidx || r == Cls::Tidx {
        return None;
    }
    Some(match op {
        "+" | "-" => {
            if l == Cls::Opaque || r == Cls::Opaque {
                Cls::Opaque
            } else if l == Cls::Aff || r == Cls::Aff {
                Cls::Aff
            } else {
                Cls::Inv
            }
        }
        "*" => match (l, r) {
            (Cls::Inv, Cls::Inv) => Cls::Inv,
            (Cls::Aff, Cls::Inv) | (Cls::Inv, Cls::Aff) => Cls::Aff,
            _ => Cls::Opaque,
        },
        _ => {
            if l == Cls::Inv && r == Cls::Inv {
                Cls::Inv
            } else {
                Cls::Opaque
            }
        }
    })
}

impl Ex<'_, '_, '_, '_, '_> {
    fn tok(&self) -> &str {
        if self.i < self.end {
            self.src.tok(self.i)
        } else {
            ""
        }
    }

    fn expr(&mut self, min: u8) -> Option<Cls> {
        let mut l = self.unary()?;
        loop {
            let op = self.tok().to_string();
            let Some(p) = prec(&op) else { break };
            if p < min {
                break;
            }
            self.i += 1;
            if op == "?" {
                let a = self.expr(0)?;
                if self.tok() != ":" {
                    return None;
                }
                self.i += 1;
                let b = self.expr(3)?;
                l = if [l, a, b].iter().all(|c| *c == Cls::Inv) {
                    Cls::Inv
                } else if [l, a, b].contains(&Cls::Tidx) {
                    return None;
                } else {
                    Cls::Opaque
                };
                continue;
            }
            let r = self.expr(p + 1)?;
            l = combine(&op, l, r)?;
        }
        Some(l)
    }

    fn unary(&mut self) -> Option<Cls> {
        let t = self.tok().to_string();
        match t.as_str() {
            "-" | "+" => {
                self.i += 1;
                let c = self.unary()?;
                return (c != Cls::Tidx).then_some(c);
            }
            "~" | "!" => {
                self.i += 1;
                return match self.unary()? {
                    Cls::Inv => Some(Cls::Inv),
                    Cls::Tidx => None,
                    _ => Some(Cls::Opaque),
                };
            }
            _ => {}
        }
        let c = self.primary()?;
        self.postfix(c)
    }

    fn primary(&mut self) -> Option<Cls> {
        let src = self.src;
        let i = self.i;
        if i >= self.end {
            return None;
        }
        let t = src.tok(i);
        if t == "(" {
            let close = src.close(i).filter(|&c| c < self.end)?;
            if type_words(src, i + 1, close) {
                self.i = close + 1;
                return self.unary();
            }
            let c = self.s.class(src, i + 1, close)?;
            self.i = close + 1;
            return Some(c);
        }
        match src.kind(i) {
            Some(Kind::Number) => {
                self.i += 1;
                Some(Cls::Inv)
            }
            Some(Kind::Ident) => {
                if t == "static_cast" && src.is(i + 1, "<") {
                    let gt = (i + 2..self.end).find(|&k| src.is(k, ">"))?;
                    if !type_words(src, i + 2, gt) || !src.is(gt + 1, "(") {
                        return None;
                    }
                    let close = src.close(gt + 1).filter(|&c| c < self.end)?;
                    let c = self.s.class(src, gt + 2, close)?;
                    self.i = close + 1;
                    return Some(c);
                }
                if t == "rk_cur" && src.is(i + 1, ".") && src.ident(i + 2) {
                    self.i = i + 3;
                    return Some(if src.is(i + 2, "thread_idx") {
                        Cls::Tidx
                    } else {
                        Cls::Inv
                    });
                }
                if matches!(t, "true" | "false") {
                    self.i += 1;
                    return Some(Cls::Inv);
                }
                if t == "sizeof" && src.is(i + 1, "(") {
                    self.i = src.close(i + 1).filter(|&c| c < self.end)? + 1;
                    return Some(Cls::Inv);
                }
                if src.is(i + 1, "(") && (PURE_CALLS.contains(&t) || TYPE_WORDS.contains(&t)) {
                    let close = src.close(i + 1).filter(|&c| c < self.end)?;
                    let args = self.s.arg_classes(src, i + 2, close)?;
                    self.i = close + 1;
                    // A functional cast keeps an affine value affine (a wrap shows at the last
                    // lane); a math function does not.
                    if TYPE_WORDS.contains(&t) {
                        return match args[..] {
                            [c] => Some(c),
                            _ => None,
                        };
                    }
                    return Some(if args.iter().all(|&c| c == Cls::Inv) {
                        Cls::Inv
                    } else {
                        Cls::Opaque
                    });
                }
                let c = *self.s.vars.get(t)?;
                self.s.used.insert(t.to_string());
                self.i += 1;
                Some(c)
            }
            _ => None,
        }
    }

    fn postfix(&mut self, mut c: Cls) -> Option<Cls> {
        while self.tok() == "." && self.i + 1 < self.end && self.src.ident(self.i + 1) {
            let field = self.src.tok(self.i + 1);
            c = match c {
                Cls::Tidx if field == "x" => Cls::Aff,
                Cls::Tidx if matches!(field, "y" | "z") => Cls::Inv,
                Cls::Tidx => return None,
                other => other,
            };
            self.i += 2;
        }
        if matches!(self.tok(), "[" | "(" | "->" | "++" | "--") || ASSIGN_OPS.contains(&self.tok())
        {
            return None;
        }
        Some(c)
    }
}

/// Whether the simple statement at `a` declares something (`T x`, `T *p = ...`, `const ...`):
/// not taken apart here. (`parse::declaration` reads `a * x[i] + ...` as one.)
fn looks_declared(src: &Tokens, a: usize) -> bool {
    src.ident(a)
        && (src.ident(a + 1)
            || matches!(
                src.tok(a),
                "const" | "auto" | "static" | "unsigned" | "signed"
            )
            || (matches!(src.tok(a + 1), "*" | "&" | "<" | "::")
                && src.ident(a + 2)
                && matches!(
                    src.tok(a + 3),
                    "=" | ";" | "[" | "(" | "{" | "," | ">" | "::"
                )))
}

/// Whether token `at` lies outside every bracket opened in [a, at).
fn depth0(src: &Tokens, a: usize, at: usize) -> bool {
    let mut d = 0i32;
    for i in a..at {
        match src.tok(i) {
            "(" | "[" | "{" => d += 1,
            ")" | "]" | "}" => d -= 1,
            _ => {}
        }
    }
    d == 0
}

/// The `?` and its `:` of a conditional at the top level of [a, b), if there is exactly one.
fn top_ternary(src: &Tokens, a: usize, b: usize) -> Option<(usize, usize)> {
    let mut d = 0i32;
    let mut q = None;
    let mut colon = None;
    for i in a..b {
        match src.tok(i) {
            "(" | "[" | "{" => d += 1,
            ")" | "]" | "}" => d -= 1,
            "?" if d == 0 => {
                if q.is_some() {
                    return None;
                }
                q = Some(i);
            }
            ":" if d == 0 && q.is_some() => {
                if colon.is_some() {
                    return None;
                }
                colon = Some(i);
            }
            _ => {}
        }
    }
    Some((q?, colon?))
}

impl Gen<'_, '_> {
    /// The summary of the lane loop of `run` (its scope's variables in `self.scopes`), if it has
    /// one.
    fn summary_plan(&self, run: &[(&Stmt, Decl)]) -> Option<Plan> {
        let src = self.src;
        let mut s = Scan {
            g: self,
            vars: BTreeMap::new(),
            used: BTreeSet::new(),
            assigned: BTreeSet::new(),
            plan: Plan::default(),
            line: String::new(),
            collectives: false,
        };
        for p in self
            .unchanged_params
            .iter()
            .chain(&self.uniform)
            .chain(&self.template_names)
        {
            if !self.arrays.contains(p) {
                s.vars.insert(p.clone(), Cls::Inv);
            }
        }
        // The variables bound at the top of the lane loop: recomputed ones by their values,
        // slots by what they hold (which the lane loop may change: see `assigned`).
        for scope in &self.scopes {
            for (name, storage) in scope {
                let c = match remat_parts(storage) {
                    Some((_, value)) => {
                        let toks = lex(value);
                        s.class(&toks, 0, toks.len()).unwrap_or(Cls::Opaque)
                    }
                    None => Cls::Opaque,
                };
                s.vars.insert(name.clone(), c);
            }
        }
        for (st, d) in run {
            // A declaration the lane loop keeps to itself is `Decl::No` (see settle_liveness).
            let local;
            let (ty, vars) = match d {
                Decl::Lanes {
                    ty,
                    vars,
                    declared: true,
                } => (ty.clone(), vars),
                Decl::No if matches!(st.st, St::Simple) && looks_declared(src, st.start) => {
                    match declaration(src, st.start, st.end).ok()? {
                        Declaration::Variables { ty, vars, .. } => {
                            local = vars;
                            (ty, &local)
                        }
                        _ => return None,
                    }
                }
                // An assignment the region form treats as a new declaration (a variable's life
                // begun anew): a declaration.
                Decl::Lanes { ty, vars, .. } => (ty.clone(), vars),
                Decl::Renewed(code)
                    if src.ident(st.start)
                        && src.is(st.start + 1, "=")
                        && st.end > st.start + 3 =>
                {
                    let name = src.tok(st.start).to_string();
                    let (x, y) = (st.start + 2, st.end - 1);
                    // The declaration's type: the code up to the name.
                    let ty = code
                        .trim()
                        .split(&format!(" {name}"))
                        .next()
                        .unwrap_or_default();
                    if !value_type(ty) {
                        return None;
                    }
                    s.line = self.source_line(st.start);
                    match s.class(src, x, y) {
                        Some(c) if c != Cls::Tidx => {
                            s.plan.prelude.push(format!(
                                "{} (void){name};",
                                self.local_coordinates(code.trim())
                            ));
                            s.vars.insert(name, c);
                        }
                        _ => {
                            s.accesses(x, y, "true")?;
                            s.vars.remove(&name);
                        }
                    }
                    continue;
                }
                Decl::No => {
                    s.stmt(st, "true")?;
                    continue;
                }
                _ => return None,
            };
            let ty = ty.as_deref().unwrap_or("auto");
            // Values only: a class's constructor could reach memory unseen.
            if !value_type(ty) {
                return None;
            }
            s.line = self.source_line(st.start);
            for v in vars {
                if !v.dims.is_empty() {
                    return None;
                }
                match v.init {
                    Init::Expr(x, y) => {
                        let before = s.used.clone();
                        match s.class(src, x, y) {
                            Some(c) if c != Cls::Tidx => {
                                let text = self.local_coordinates(src.text(x, y));
                                s.plan
                                    .prelude
                                    .push(format!("{ty} {} = {text}; (void){};", v.name, v.name));
                                s.vars.insert(v.name.clone(), c);
                            }
                            _ => {
                                s.used = before;
                                s.accesses(x, y, "true")?;
                                s.vars.remove(&v.name);
                            }
                        }
                    }
                    Init::None => {
                        s.vars.remove(&v.name);
                    }
                    // `T v{...}`, `T v(...)`: the arguments one by one.
                    Init::Args(x, y, brace) => {
                        let before = s.used.clone();
                        let class = match s.arg_classes(src, x, y).as_deref() {
                            None => None,
                            Some(args) if args.contains(&Cls::Tidx) => None,
                            Some([]) => Some(Cls::Inv),
                            Some(&[c]) => Some(c),
                            Some(args) if args.iter().all(|&c| c == Cls::Inv) => Some(Cls::Inv),
                            Some(_) => Some(Cls::Opaque),
                        };
                        match class {
                            Some(c) => {
                                let text = self.local_coordinates(src.text(x, y));
                                let (open, close) = if brace { ("{", "}") } else { ("(", ")") };
                                s.plan.prelude.push(format!(
                                    "{ty} {}{open}{text}{close}; (void){};",
                                    v.name, v.name
                                ));
                                s.vars.insert(v.name.clone(), c);
                            }
                            None => {
                                s.used = before;
                                s.accesses(x, y, "true")?;
                                s.vars.remove(&v.name);
                            }
                        }
                    }
                }
            }
        }
        if s.used.iter().any(|n| s.assigned.contains(n)) {
            return None;
        }
        Some(s.plan)
    }

    /// Whether the statement [a, b), with the warp collectives it calls, touches nothing the
    /// race detector checks (lane variables only): its lane loops then run uninstrumented
    /// ([`Gen::uninstrumented`]).
    pub(super) fn lane_storage_only(&self, a: usize, b: usize) -> bool {
        let mut s = Scan {
            g: self,
            vars: BTreeMap::new(),
            used: BTreeSet::new(),
            assigned: BTreeSet::new(),
            plan: Plan::default(),
            line: String::new(),
            collectives: true,
        };
        s.accesses(a, b, "true").is_some() && s.plan.sites.is_empty()
    }

    /// The lane loop just generated (`self.out[mark..]`) run uninstrumented in the race variant
    /// while summaries are on: it touches nothing the detector checks, so there is nothing to
    /// tell it.
    pub(super) fn uninstrumented(&mut self, mark: usize) {
        let lanes = self.out[mark..].to_string();
        let id = self.id();
        let body = format!(
            "\nif (!rk_race_sum_on()) return false;\
             \nconstexpr bool rk_pub = false; (void)rk_pub;\n{{{lanes}\n}}\nreturn true;"
        );
        let c = self.fast_lambda(id, &body, &lanes);
        self.out.truncate(mark);
        self.out.push_str(&c);
    }

    /// The race variant's uninstrumented run of a lane loop: a lambda `rk_sum{id}` with `body`,
    /// called first, and `lanes` (the loop hooked) where it returns false. The block function's
    /// variables the body names come in as parameters: captured, they would be fields of the
    /// closure, which the lambda (not inlined into instrumented code) reloads after every store
    /// to memory (the cpu build does not assume strict aliasing) and cannot vectorise around.
    fn fast_lambda(&self, id: usize, body: &str, lanes: &str) -> String {
        let toks = lex(body);
        let named: BTreeSet<&str> = (0..toks.len())
            .filter(|&i| toks.ident(i) && !(i > 0 && matches!(toks.tok(i - 1), "." | "->" | "::")))
            .map(|i| toks.tok(i))
            .collect();
        let mut outer: Vec<String> = ["rk_bidx", "rk_bdim", "rk_gdim", "rk_wsz"]
            .iter()
            .map(|s| s.to_string())
            .chain(self.unchanged_params.iter().cloned())
            .chain(self.uniform.iter().cloned())
            .chain(
                self.scopes
                    .iter()
                    .flatten()
                    .filter(|(_, st)| {
                        remat_parts(st).is_none()
                            && st.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    })
                    .map(|(_, st)| st.clone()),
            )
            .chain(
                named
                    .iter()
                    .filter(|n| n.starts_with("rk_x"))
                    .map(|n| n.to_string()),
            )
            .filter(|n| named.contains(n.as_str()))
            .collect();
        outer.sort();
        outer.dedup();
        let params: Vec<String> = outer.iter().map(|n| format!("auto {n}")).collect();
        format!(
            "\n#ifdef __SANITIZE_THREAD__\nauto rk_sum{id} = [=, &rkr]({}) mutable RK_SUMMARY_FN -> bool {{{body}\n}};\
             \nif (!rk_sum{id}({}))\n#endif\n{{{lanes}\n}}",
            params.join(", "),
            outer.join(", ")
        )
    }

    /// Put the summary of the lane loop just generated (`self.out[mark..]`) before it, in the
    /// race variant.
    pub(super) fn summarize(&mut self, run: &[(&Stmt, Decl)], mark: usize) {
        let Some(plan) = self.summary_plan(run) else {
            return;
        };
        if plan.sites.is_empty() {
            self.uninstrumented(mark);
            return;
        }
        let lanes = self.out[mark..].to_string();
        let id = self.id();
        let mut binds = String::new();
        for scope in &self.scopes {
            for (n, st) in scope {
                binds.push_str(&match remat_parts(st) {
                    Some((ty, v)) => {
                        format!("{ty} {n} = {}; (void){n}; ", self.local_coordinates(v))
                    }
                    None => format!("auto &{n} = {st}[rk_t]; (void){n}; "),
                });
            }
        }
        // Each declaration in a block of its own: a variable declared anew may shadow one bound
        // before it (the blocks close after the conditions and addresses).
        let prelude: String = plan.prelude.iter().map(|d| format!("{{ {d} ")).collect();
        let close = "}".repeat(plan.prelude.len());
        let lane = "const uint32_t rk_t = rk_i * rkr.cols + rk_j; (void)rk_t; \
                    const rk_uint3 rk_tidx{rk_run.x + rk_j, rk_run.y, rk_run.z}; (void)rk_tidx;";
        let on = if self.full() {
            "true"
        } else {
            "RK_RAW(rkr.act[rk_t]) != 0"
        };
        let ng = plan.guards.len();
        let mut c = String::new();
        c.push_str(&format!(
            "\nif (!rk_race_sum_on()) return false;\
             \nconstexpr bool rk_pub = false; (void)rk_pub;\
             \nRK_RUNS(rkr) {{\
             \nuint8_t rk_g[{ng}][1024];\
             \nfor (uint32_t rk_j = 0; rk_j < rkr.cols; ++rk_j) {{ {lane} {binds}{prelude}\
             \nconst bool rk_on = {on}; (void)rk_on;"
        ));
        for (k, g) in plan.guards.iter().enumerate() {
            c.push_str(&format!("\nrk_g[{k}][rk_j] = rk_on && ({g});"));
        }
        c.push_str(&format!(
            "{close}\n}}\nauto rk_at = [&](uint32_t rk_j, int rk_k, uint64_t &rk_sz) RK_SUMMARY_FN -> uintptr_t {{ {lane} {binds}{prelude}\
             \nswitch (rk_k) {{"
        ));
        for (k, site) in plan.sites.iter().enumerate() {
            c.push_str(&format!(
                "\ncase {k}: rk_sz = sizeof({t}) | ({w}ull << 16); return reinterpret_cast<uintptr_t>(&({t}));",
                t = site.text,
                w = u8::from(site.write)
            ));
        }
        c.push_str(&format!("\n}}\nreturn 0; {close} }};"));
        for g in 0..ng {
            c.push_str(&format!(
                "\nfor (uint32_t rk_j = 0; rk_j < rkr.cols;) {{\
                 \nconst uint32_t rk_lo = rk::sum_skip(rk_g[{g}], rk_j, rkr.cols, 0); if (rk_lo == rkr.cols) break;\
                 \nrk_j = rk::sum_skip(rk_g[{g}], rk_lo, rkr.cols, 1);\
                 \nconst uint32_t rk_nl = rk_j - rk_lo, rk_tid = rkr.base + rk_i * rkr.cols + rk_lo;\
                 \nuint64_t rk_sz = 0; uintptr_t rk_a0, rk_a1, rk_an;"
            ));
            for (k, site) in plan.sites.iter().enumerate().filter(|(_, s)| s.guard == g) {
                c.push_str(&format!(
                    "\nrk_a0 = rk_at(rk_lo, {k}, rk_sz); rk_a1 = rk_at(rk_nl > 1 ? rk_lo + 1 : rk_lo, {k}, rk_sz); \
                     rk_an = rk_at(rk_j - 1, {k}, rk_sz);{line}\
                     \nif (!rk_race_sum_add(rk_sz, rk_a0, rk_a1, rk_an, rk_nl, rk_tid)) {{ rk_race_sum_abort(); return false; }}",
                    line = site.line
                ));
            }
            c.push_str("\n}");
        }
        c.push_str(&format!(
            "\n}}\nif (!rk_race_sum_commit()) return false;\n{{{lanes}\n}}\nreturn true;"
        ));
        let c = self.fast_lambda(id, &c, &lanes);
        self.out.truncate(mark);
        self.out.push_str(&c);
    }
}
