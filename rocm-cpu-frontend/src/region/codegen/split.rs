//! Splitting a lane loop at the bounds of its bounds check. A lane loop whose statements are
//! declarations of plain integer values followed by `if (cond) body` (the shape of most kernels:
//! `int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) ...`) keeps the test in every
//! lane, and the host compiler neither if-converts it (it would need masked stores) nor splits
//! the loop at the bound (an `int` index computed from the unsigned `threadIdx.x` may wrap, as
//! far as it knows). So the region form computes, once per run of lanes, the lanes for which
//! `cond` holds, and runs `body` on those alone without the test (`RK_RUN_SPAN`), with every
//! `int` variable of the form `... + threadIdx.x` written as its value in the run's first lane
//! plus the lane's `int` counter: affine indices the compiler vectorises. Where that cannot be
//! shown exact the run takes the loop as it was.
//!
//! Exact because: `cond` is a conjunction of terms that read no memory and call nothing (only
//! coordinates, literals, parameters the kernel never changes, recomputed or just declared
//! integer variables, and variables of lockstep loops, which no lane changes), so `body` cannot
//! change what they say and they may be evaluated before it; each term is either the same in
//! every lane of the run (evaluated once) or compares an `int` variable `x`, worth `x0 + j` in
//! lane j, with such a value (`rk::split_cmp`: an interval of lanes, for signed integer
//! comparisons only, checked by the C++ types); terms are evaluated in order only while some lane
//! still passes, as `&&` would; `x0 + cols - 1` must not overflow `int` (checked per run); and the
//! lanes run in order, so only the variant that does not publish coordinates (no reversed
//! order, no fault attribution: a checked launch that faults reruns with publishing) splits.

use super::super::super::lex::{lex, Kind, Tokens};
use super::super::analysis::Decl;
use super::super::parse::{DeclVar, Init, St, Stmt};
use super::{remat_parts, remat_type, Gen, LaneCtx, REMAT};

/// How an expression depends on the lane's x coordinate, modulo 2^32.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(super) enum Lane {
    /// Not at all.
    Invariant,
    /// `threadIdx.x` plus something that does not depend on it: one more per lane along x.
    PlusOne,
}

/// Integer types a cast around `threadIdx.x` may have and keep it one more per lane modulo 2^32.
fn wide_int(ty: &str) -> bool {
    let words: Vec<&str> = ty.split_whitespace().filter(|w| *w != "const").collect();
    !words.is_empty()
        && words.iter().all(|w| {
            matches!(
                *w,
                "int"
                    | "unsigned"
                    | "signed"
                    | "long"
                    | "size_t"
                    | "std::size_t"
                    | "uint32_t"
                    | "int32_t"
                    | "uint64_t"
                    | "int64_t"
            )
        })
}

/// The type of a variable `split` may write as `x0 + rk_jn`: `int` (32 bits, signed).
fn int_type(ty: &str) -> bool {
    let words: Vec<&str> = ty.split_whitespace().filter(|w| *w != "const").collect();
    matches!(
        words.as_slice(),
        ["int"] | ["signed"] | ["signed", "int"] | ["int32_t"]
    )
}

/// Whether tokens [a, b) are `( rk_cur . thread_idx ) . x` (the preprocessed `threadIdx.x`).
fn is_lane_x(src: &Tokens, a: usize, b: usize) -> bool {
    b == a + 7
        && ["(", "rk_cur", ".", "thread_idx", ")", ".", "x"]
            .iter()
            .enumerate()
            .all(|(k, t)| src.is(a + k, t))
}

fn mentions_lane_x(src: &Tokens, a: usize, b: usize) -> bool {
    (a..b).any(|i| {
        src.is(i, "thread_idx") && src.is(i + 1, ")") && src.is(i + 2, ".") && src.is(i + 3, "x")
    })
}

/// Whether a number token is an integer literal (`12`, `0x1fu`, `3ll`), not a floating one.
fn integer_literal(t: &str) -> bool {
    let hex = t.starts_with("0x") || t.starts_with("0X");
    let floating = if hex {
        t.contains(['.', 'p', 'P'])
    } else {
        t.contains(['.', 'e', 'E', 'f', 'F'])
    };
    !floating
}

/// Indices of the tokens of [a, b) at bracket depth 0, `static_cast<...>` type lists skipped.
fn top_level(src: &Tokens, a: usize, b: usize) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    let mut i = a;
    while i < b {
        let t = src.tok(i);
        if matches!(t, "(" | "[" | "{") {
            i = src.close(i)? + 1;
            continue;
        }
        if t == "static_cast" && src.is(i + 1, "<") {
            out.push(i);
            i = src.close_angle(i + 1)? + 1;
            continue;
        }
        out.push(i);
        i += 1;
    }
    Some(out)
}

/// How the expression [a, b) depends on the lane's x coordinate (see [`Lane`]); None when it
/// depends on it some other way (a product, a comparison, a cast to a narrow type...), or
/// might not be integer arithmetic (a floating literal). The C++ types are checked too, where
/// the split is emitted: the value must be of an integral type.
pub(super) fn lane_dependence(src: &Tokens, mut a: usize, mut b: usize) -> Option<Lane> {
    if (a..b).any(|i| src.kind(i) == Some(Kind::Number) && !integer_literal(src.tok(i))) {
        return None;
    }
    // Enclosing parentheses.
    while a < b && src.is(a, "(") && src.close(a) == Some(b - 1) {
        a += 1;
        b -= 1;
    }
    if a >= b {
        return None;
    }
    if is_lane_x(src, a, b) {
        return Some(Lane::PlusOne);
    }
    if !mentions_lane_x(src, a, b) {
        return Some(Lane::Invariant);
    }
    // `static_cast<T>(e)` around an expression one more per lane, T 32 bits or wider.
    if src.is(a, "static_cast") && src.is(a + 1, "<") {
        let close = src.close_angle(a + 1)?;
        let open = close + 1;
        if src.is(open, "(") && src.close(open) == Some(b - 1) {
            if !wide_int(src.text(a + 2, close).trim()) {
                return None;
            }
            return match lane_dependence(src, open + 1, b - 1)? {
                Lane::PlusOne => Some(Lane::PlusOne),
                Lane::Invariant => Some(Lane::Invariant),
            };
        }
        return None;
    }
    // A sum: exactly one summand, added, one more per lane; the others invariant.
    let top = top_level(src, a, b)?;
    let mut cuts = Vec::new();
    for &i in &top {
        let t = src.tok(i);
        let binary = i > a && src.ends_operand(i - 1);
        match t {
            "+" | "-" if binary => cuts.push(i),
            "*" | "/" | "%" | "static_cast" => {}
            "+" | "-" | "~" | "!" => {}
            _ if src.ident(i) || src.kind(i) == Some(Kind::Number) || t == "." => {}
            _ => return None,
        }
    }
    if cuts.is_empty() {
        return None;
    }
    let mut found = 0;
    let mut start = a;
    let mut sign_plus = true;
    for cut in cuts.iter().copied().chain([b]) {
        match lane_dependence(src, start, cut)? {
            Lane::Invariant => {}
            Lane::PlusOne if sign_plus => found += 1,
            Lane::PlusOne => return None,
        }
        if cut < b {
            sign_plus = src.is(cut, "+");
            start = cut + 1;
        }
    }
    (found == 1).then_some(Lane::PlusOne)
}

/// A comparison operator of a term, as `rk::split_cmp` takes it, seen from the variable's side.
fn split_op(op: &str, var_on_left: bool) -> Option<&'static str> {
    Some(match (op, var_on_left) {
        ("<", true) | (">", false) => "rk::SPLIT_LT",
        ("<=", true) | (">=", false) => "rk::SPLIT_LE",
        (">", true) | ("<", false) => "rk::SPLIT_GT",
        (">=", true) | ("<=", false) => "rk::SPLIT_GE",
        _ => return None,
    })
}

/// One term of the condition: the same in the whole run (its text), or `var OP bound`.
enum Term {
    Invariant(String),
    Bound {
        op: &'static str,
        var: String,
        bound: String,
    },
}

/// What a split lane loop needs, found by [`Gen::split_plan`].
pub(super) struct SplitPlan {
    terms: Vec<Term>,
    /// `int` variables one more per lane (name, declared type, value): written as
    /// `x0 + rk_jn` in the split loop.
    affine: Vec<(String, String, String)>,
}

impl Gen<'_, '_> {
    /// Variables lane code may name that no lane changes while a lane loop runs and that are the
    /// same in every lane: those of the lockstep and uniform loops around it.
    pub(super) fn is_uniform(&self, name: &str) -> bool {
        self.uniform.iter().any(|u| u == name)
    }

    /// The plan for splitting the lane loop of `run` (see the module's doc), or None where it
    /// does not apply. `pending`: the run's lane variables with their storage.
    pub(super) fn split_plan(
        &self,
        run: &[(&Stmt, Decl)],
        pending: &[(String, String)],
    ) -> Option<SplitPlan> {
        let src = self.src;
        if !self.full() || self.coordinates_from_tls {
            return None;
        }
        let ((last, last_decl), prefix) = run.split_last()?;
        // Variables declared before the test, as recomputed ones (their values pure).
        let mut env: Vec<(String, String)> = Vec::new();
        for (s, d) in prefix {
            match d {
                Decl::Lanes { vars, .. } => {
                    for v in vars {
                        let (_, st) = pending.iter().rev().find(|(n, _)| *n == v.name)?;
                        remat_parts(st)?;
                        env.push((v.name.clone(), st.clone()));
                    }
                }
                Decl::No if matches!(s.st, St::Simple) => {
                    let Ok(Decl::Lanes {
                        ty: Some(ty),
                        vars,
                        declared: true,
                    }) = self.classify(s.start, s.end)
                    else {
                        return None;
                    };
                    if !remat_type(&ty) {
                        return None;
                    }
                    for DeclVar { name, init, dims } in &vars {
                        let Init::Expr(x, y) = init else { return None };
                        if !dims.is_empty() || env.iter().any(|(n, _)| n == name) {
                            return None;
                        }
                        let value = self.pure_value(*x, *y, &env, true)?;
                        env.push((name.clone(), format!("{REMAT}{ty}{REMAT}{value}")));
                    }
                }
                _ => return None,
            }
        }
        let (
            Decl::No,
            St::If {
                cond: (ca, cb),
                then,
                els: None,
                constexpr: false,
            },
        ) = (last_decl, &last.st)
        else {
            return None;
        };
        let (ca, cb) = (*ca, *cb);
        // The body runs twice in the text: nothing in it may mind (a `static` local would be two,
        // a lane leaving the loop would need the loop's label).
        if (then.start..then.end).any(|i| {
            matches!(
                src.tok(i),
                "return"
                    | "break"
                    | "continue"
                    | "goto"
                    | "static"
                    | "thread_local"
                    | "asm"
                    | "__asm__"
            )
        }) {
            return None;
        }
        // Bound names, innermost first: this run's, then the enclosing scopes'.
        let bound: Vec<(String, String)> = env
            .iter()
            .rev()
            .cloned()
            .chain(
                pending
                    .iter()
                    .rev()
                    .chain(self.scopes.iter().rev().flat_map(|sc| sc.iter().rev()))
                    .cloned(),
            )
            .collect();
        let lookup = |name: &str| {
            bound
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, s)| s.clone())
        };
        // The `int` variables one more per lane (each name once, as the body sees it).
        let mut affine: Vec<(String, String, String)> = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for (n, st) in &bound {
            if seen.contains(&n.as_str()) {
                continue;
            }
            seen.push(n);
            let Some((ty, value)) = remat_parts(st) else {
                continue;
            };
            let toks = lex(value);
            if int_type(ty) && lane_dependence(&toks, 0, toks.len()) == Some(Lane::PlusOne) {
                affine.push((n.clone(), ty.to_string(), value.to_string()));
            }
        }
        // The terms of the condition.
        let top = top_level(src, ca, cb)?;
        if top
            .iter()
            .any(|&i| matches!(src.tok(i), "||" | "?" | ":" | "," | "="))
        {
            return None;
        }
        let mut cuts: Vec<usize> = top.iter().copied().filter(|&i| src.is(i, "&&")).collect();
        cuts.push(cb);
        let mut terms = Vec::new();
        let mut start = ca;
        // Values of the env's variables (and the enclosing ones) for the purity check.
        let scope_env: Vec<(String, String)> = env.clone();
        for cut in cuts {
            let (ta, tb) = (start, cut);
            start = cut + 1;
            if ta >= tb {
                return None;
            }
            let text = self.local_coordinates(src.text(ta, tb));
            let tops = top_level(src, ta, tb)?;
            let cmps: Vec<usize> = tops
                .iter()
                .copied()
                .filter(|&i| matches!(src.tok(i), "<" | "<=" | ">" | ">=" | "==" | "!="))
                .collect();
            let low = tops
                .iter()
                .any(|&i| matches!(src.tok(i), "&" | "^" | "|" | "<<" | ">>"));
            if let ([at], false) = (cmps.as_slice(), low) {
                let at = *at;
                let side = |x: usize, y: usize| {
                    (y == x + 1 && src.ident(x))
                        .then(|| src.tok(x))
                        .filter(|n| affine.iter().any(|(a, _, _)| a == n))
                        .filter(|n| lookup(n).is_some())
                };
                let other_invariant = |x: usize, y: usize| {
                    let v = self.pure_value(x, y, &scope_env, true)?;
                    (!v.replace(' ', "").contains("thread_idx).x"))
                        .then(|| self.local_coordinates(src.text(x, y)))
                };
                let bound_term = match (side(ta, at), side(at + 1, tb)) {
                    (Some(var), _) => other_invariant(at + 1, tb)
                        .and_then(|b| Some((split_op(src.tok(at), true)?, var, b))),
                    (None, Some(var)) => other_invariant(ta, at)
                        .and_then(|b| Some((split_op(src.tok(at), false)?, var, b))),
                    _ => None,
                };
                if let Some((op, var, b)) = bound_term {
                    terms.push(Term::Bound {
                        op,
                        var: var.to_string(),
                        bound: b,
                    });
                    continue;
                }
            }
            // Else the same in the whole run.
            let v = self.pure_value(ta, tb, &scope_env, true)?;
            if v.replace(' ', "").contains("thread_idx).x") {
                return None;
            }
            terms.push(Term::Invariant(text));
        }
        Some(SplitPlan { terms, affine })
    }

    /// Rewrite the lane loop just generated (`self.out[mark..]`, the last statement's code at
    /// `last`) as a split one: per run, the lanes passing the test computed from the run's first
    /// lane, then either those lanes without the test or, where the split does not apply, the
    /// loop as it was.
    pub(super) fn emit_split(
        &mut self,
        plan: &SplitPlan,
        mark: usize,
        last: (usize, usize),
        then: &Stmt,
    ) -> Option<()> {
        const HEAD: &str = "\nRK_ALL_LANES(rkr) {";
        const LANE: &str = "\nrkr.lane<rk_pub, RK_TLS>(rk_tidx); (void)rk_t;";
        let whole = self.out.get(mark..)?.to_string();
        if !whole.starts_with(HEAD) || !whole.ends_with("\n}") {
            return None;
        }
        let inner = &whole[HEAD.len()..whole.len() - 2];
        let (la, lb) = (last.0 - mark - HEAD.len(), last.1 - mark - HEAD.len());
        if !inner.starts_with(LANE) || lb > inner.len() {
            return None;
        }
        let bindings = &inner[LANE.len()..la];
        let tail = &inner[lb..];
        let opened = self.scopes.len() + 1;
        let body = self
            .lane_stmt(
                then,
                LaneCtx {
                    in_loop: false,
                    in_switch: false,
                },
            )
            .ok()?;
        let id = self.id();
        let mut shadows = String::new();
        let mut checks = String::new();
        let mut decls = format!(
            "\nbool rk_sp{id} = false; int rk_lo{id} = 0, rk_hi{id} = 0; (void)rk_lo{id}; (void)rk_hi{id};"
        );
        let mut keep = String::new();
        for (k, (name, ty, value)) in plan.affine.iter().enumerate() {
            let value = self.local_coordinates(value);
            decls.push_str(&format!(" int rk_a{id}_{k} = 0;"));
            shadows.push_str(&format!(
                "{ty} {name} = rk_a{id}_{k} + rk_jn; (void){name}; "
            ));
            checks.push_str(&format!(
                " && std::is_integral<std::decay_t<decltype({value})>>::value && {name} <= 2147483647 - static_cast<int>(rkr.cols - 1)"
            ));
            keep.push_str(&format!(" rk_a{id}_{k} = {name};"));
        }
        let mut terms = String::new();
        for t in &plan.terms {
            match t {
                Term::Invariant(text) => terms.push_str(&format!(
                    "\nif (rk_l < rk_h && !static_cast<bool>({text})) rk_h = rk_l;"
                )),
                Term::Bound { op, var, bound } => terms.push_str(&format!(
                    "\nif (rk_l < rk_h) rk_ok = rk_ok && rk::split_cmp<{op}>(rk_l, rk_h, {var}, ({bound}));"
                )),
            }
        }
        let fast = self.local_coordinates(&format!("\n{{ {shadows}{body}\n}}"));
        let code = format!(
            "\nRK_RUNS(rkr) {{{decls}\
             \nif (!rk_pub && rkr.cols > 0) {{ const uint32_t rk_j = 0, rk_t = rk_i * rkr.cols; (void)rk_j; (void)rk_t; \
             const rk_uint3 rk_tidx{{rk_run.x, rk_run.y, rk_run.z}}; (void)rk_tidx;{bindings}\
             \nif (true{checks}) {{\nlong long rk_l = 0, rk_h = rkr.cols; bool rk_ok = true;{terms}\
             \nif (rk_ok) {{ rk_sp{id} = true; rk_lo{id} = static_cast<int>(rk_l); rk_hi{id} = static_cast<int>(rk_h);{keep} }}\n}}\
             {}\n}}\
             \nif (rk_sp{id}) {{\nRK_RUN_SPAN(rkr, rk_lo{id}, rk_hi{id}) {{{LANE}{bindings}{fast}{tail}\n}}\n}} else {{\
             \nRK_RUN_LANES(rkr) {{{inner}\n}}\n}}\n}}",
            "}".repeat(opened),
        );
        self.out.truncate(mark);
        self.out.push_str(&code);
        Some(())
    }
}
