//! What the region form decides about a kernel before any code is written: which declarations
//! need a slot per lane and which are the same for every lane, which values and loops are the
//! same in every lane (uniform), which variables stay live across a barrier, which parameters
//! the kernel changes, which functions wait for other threads or read the thread's coordinates,
//! and whether the order of a block's threads between barriers can matter at all (the
//! interleaving proof that lets a block run whole).

use std::collections::{BTreeMap, BTreeSet};

use super::super::lex::Tokens;
use super::parse::{
    declaration, has_collective, param_names, DeclVar, Declaration, Init, PResult, St, Stmt,
    ASSIGN_OPS, COLLECTIVES, NOT_TYPES,
};
use super::unit::{FnBody, KernelDef};

/// What the runtime's collectives bottom out in: a function reaching one waits for other threads.
const RUNTIME_WAITS: &[&str] = &["rk_syncthreads", "rk_syncthreads_op", "rk_warp_op"];

/// Whether a name is a lane variable (one slot per lane) where the question is asked.
pub type LaneVars<'f> = &'f dyn Fn(&str) -> bool;

/// How a simple statement at the level of barriers is treated.
#[derive(Debug, Clone)]
pub enum Decl {
    /// Not a declaration.
    No,
    /// Same for every lane and evaluated once (types, `static`, `constexpr`, `__shared__`,
    /// uniform constants): emitted between lane loops.
    Hoist,
    /// One slot per lane. `ty` is None for `auto`. `declared`: false for an assignment the
    /// rewrite treats as a new declaration (see [`settle_liveness`]).
    Lanes {
        ty: Option<String>,
        vars: Vec<DeclVar>,
        declared: bool,
    },
    /// A renewed assignment turned back into a lane-local declaration (its code).
    Renewed(String),
}

/// Whether a variable is initialised with a lambda (`auto f = [..](..) {..};`), and whether
/// that lambda captures nothing (`[]`).
fn lambda_init(src: &Tokens, v: &DeclVar) -> Option<bool> {
    match v.init {
        Init::Expr(x, _) if src.is(x, "[") => Some(src.is(x + 1, "]")),
        _ => None,
    }
}

/// How the simple statement [a, end) is treated at the level of barriers. A `const` of a value
/// every lane computes alike (from literals, parameters, blockDim, template arguments...) is
/// evaluated once, so it stays a constant expression; so is a lambda that captures nothing (its
/// closure is the same for every lane, and has no default constructor a slot could use).
pub fn classify(src: &Tokens, a: usize, end: usize, lane_var: LaneVars) -> PResult<Decl> {
    Ok(match declaration(src, a, end)? {
        Declaration::None => Decl::No,
        Declaration::Static => Decl::Hoist,
        Declaration::Variables { vars, .. }
            if vars.iter().all(|v| lambda_init(src, v) == Some(true)) =>
        {
            Decl::Hoist
        }
        Declaration::Variables {
            ty,
            vars,
            top_const,
        } => {
            let uniform_inits = || {
                vars.iter().all(|v| match v.init {
                    Init::Expr(x, y) | Init::Args(x, y, _) => uniform(src, x, y, lane_var),
                    Init::None => false,
                })
            };
            if top_const && ty.is_some() && uniform_inits() {
                Decl::Hoist
            } else {
                Decl::Lanes {
                    ty,
                    vars,
                    declared: true,
                }
            }
        }
    })
}

/// Whether tokens [a, b) compute the same value in every lane.
pub fn uniform(src: &Tokens, a: usize, b: usize, lane_var: LaneVars) -> bool {
    for i in a..b {
        if !src.ident(i) {
            continue;
        }
        let t = src.tok(i);
        if lane_var(t) || t == "thread_idx" || t == "rk_linear_tid" || t == "__lane_id" {
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

/// Whether a `for` loop runs alike in every lane: its variables are declared in its header from
/// lane-independent values, its condition and step depend only on them and other
/// lane-independent values, and its body never changes them. Such a loop runs as one loop for
/// the block, its variables shared.
pub fn uniform_for(
    src: &Tokens,
    (ia, ib): (usize, usize),
    (ca, cb): (usize, usize),
    (na, nb): (usize, usize),
    body: &Stmt,
    lane_var: LaneVars,
) -> PResult<bool> {
    if ib <= ia + 1 {
        return Ok(false);
    }
    let Decl::Lanes {
        ty: Some(_), vars, ..
    } = classify(src, ia, ib, lane_var)?
    else {
        return Ok(false);
    };
    let inits_uniform = vars.iter().all(|v| match v.init {
        Init::Expr(x, y) | Init::Args(x, y, _) => uniform(src, x, y, lane_var),
        Init::None => false,
    });
    Ok(inits_uniform
        && vars.iter().all(|v| v.dims.is_empty())
        && cb > ca
        && uniform(src, ca, cb, lane_var)
        && uniform(src, na, nb, lane_var)
        && !vars
            .iter()
            .any(|v| param_mutated(src, &v.name, (body.start, body.end))))
}

/// A loop without barriers that every lane runs alike (see [`uniform_for`]), with no `return`,
/// `break` or `continue` that could take a lane out of it: run once, the lanes stepping through
/// it together (as a GPU's wave does) instead of each lane running the whole loop in turn. The
/// inner loops over lanes are then runs along x, which the compiler streams through memory (a
/// tiled transpose's row loads) or vectorises.
pub fn lockstep_loop(src: &Tokens, s: &Stmt, lane_var: LaneVars) -> PResult<bool> {
    let St::For {
        parts: Some((init, cond, inc)),
        body,
    } = &s.st
    else {
        return Ok(false);
    };
    if (body.start..body.end)
        .any(|k| src.ident(k) && matches!(src.tok(k), "return" | "break" | "continue" | "goto"))
    {
        return Ok(false);
    }
    uniform_for(src, *init, *cond, *inc, body, lane_var)
}

/// Whether `return`, `break` or `continue` in a loop's body can take lanes out of the loop.
pub fn lanes_can_leave(src: &Tokens, body: &Stmt) -> bool {
    (body.start..body.end)
        .any(|i| matches!(src.tok(i), "return" | "break" | "continue") && src.ident(i))
}

/// A renewed assignment found by [`settle_liveness`]: the statement's start -> (type, name).
pub type Renewal = (usize, (String, String));

/// Liveness of the variables a run of statements without barriers declares (`run`, one lane
/// loop): a variable needs a slot per lane only if code after this stretch (`rest`, and up to
/// `live_until`, where its scope ends) reads it, or if the initializer of an `auto` variable
/// that does names it (the slot's type is found before the lane loop, from the slots). Declarations of variables
/// that are not live become lane code as written (`Decl::No`). When the next statement naming a
/// variable assigns it a new value (`x = ...;`, not reading `x`), it is dead here and that
/// statement is returned (start -> type, name) to be treated as a new declaration: kernels often
/// recompute their indices after a barrier. Err for a lambda that captures variables and lives
/// across a barrier (its captures belong to one lane loop).
pub fn settle_liveness(
    src: &Tokens,
    run: &mut [(&Stmt, Decl)],
    rest: &[Stmt],
    live_until: usize,
) -> PResult<Vec<Renewal>> {
    let run_end = run.last().map_or(0, |(s, _)| s.end);
    // Names, not members (`threadIdx.x` does not name `x`).
    let names = |a: usize, b: usize, n: &str| {
        (a..b).any(|i| {
            src.ident(i) && src.tok(i) == n && !(i > 0 && matches!(src.tok(i - 1), "." | "->"))
        })
    };
    // Per declaration: whether it stays live, and the renewed assignments that end its life.
    let mut verdicts: Vec<Option<(bool, Vec<Renewal>)>> = Vec::new();
    for (_, d) in run.iter() {
        let Decl::Lanes { ty, vars, .. } = d else {
            verdicts.push(None);
            continue;
        };
        let mut live = false;
        let mut renew = Vec::new();
        for v in vars.iter() {
            // A variable whose address is taken (`float2 *h = reinterpret_cast<float2 *>(&v)`)
            // may be reached through that pointer after its own stretch of code: it needs its
            // slot like one named later (a local of the first lane loop was read, dangling,
            // through the pointer in the next: HeCBench's relu).
            let run_start = run.first().map_or(0, |(s, _)| s.start);
            if (run_start.max(1)..live_until.min(src.len()))
                .any(|i| src.ident(i) && src.tok(i) == v.name && src.is(i - 1, "&"))
            {
                live = true;
            }
            match rest.iter().find(|s| names(s.start, s.end, &v.name)) {
                Some(s)
                    if matches!(s.st, St::Simple)
                        && !has_collective(src, s.start, s.end)
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
                    live |= names(after, live_until.min(src.len()), &v.name);
                }
            }
        }
        verdicts.push(Some((live, renew)));
    }
    // An `auto` slot's type is found from the slots: what its initializer names needs one too.
    loop {
        let mut grew = false;
        for k in 0..run.len() {
            let Some((true, _)) = verdicts[k] else {
                continue;
            };
            let Decl::Lanes { ty: None, vars, .. } = &run[k].1 else {
                continue;
            };
            for v in vars {
                let Init::Expr(x, y) = v.init else { continue };
                for j in 0..k {
                    let Some((live @ false, _)) = &mut verdicts[j] else {
                        continue;
                    };
                    let Decl::Lanes { vars: named, .. } = &run[j].1 else {
                        continue;
                    };
                    if named.iter().any(|n| names(x, y, &n.name)) {
                        *live = true;
                        grew = true;
                    }
                }
            }
        }
        if !grew {
            break;
        }
    }
    let mut reborn = Vec::new();
    for ((_, d), verdict) in run.iter_mut().zip(verdicts) {
        let Some((live, renew)) = verdict else {
            continue;
        };
        if live {
            if let Decl::Lanes { vars, .. } = &*d {
                if let Some(v) = vars.iter().find(|v| lambda_init(src, v).is_some()) {
                    return Err(format!(
                        "the lambda `{}` captures variables and is used after a barrier",
                        v.name
                    ));
                }
            }
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
    Ok(reborn)
}

/// Whether the body may change parameter `name` (assigns it, increments it, takes its address or
/// a member of it): such a parameter gets one copy per lane.
pub fn param_mutated(src: &Tokens, name: &str, (a, b): (usize, usize)) -> bool {
    (a..b).any(|i| {
        if !src.is(i, name) || !src.ident(i) {
            return false;
        }
        let next = src.tok(i + 1);
        let prev = if i > a { src.tok(i - 1) } else { "" };
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

/// Whether the region form may run a whole block per call (all waves in step) with results
/// identical to running its waves apart: when it has no barriers or collectives, or when
/// [`interleaving_free`] shows that no order of its threads between barriers can matter.
pub fn whole_block(src: &Tokens, def: &KernelDef) -> bool {
    let (ba, bb) = def.body;
    !has_collective(src, ba, bb) || interleaving_free(src, def)
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
pub fn interleaving_free(src: &Tokens, def: &KernelDef) -> bool {
    let (ba, bb) = def.body;
    // Memory classes by name.
    let mut class: BTreeMap<String, String> = BTreeMap::new();
    for (p, q) in src.split_commas(def.params.0, def.params.1) {
        let words: Vec<&str> = (p..q).map(|i| src.tok(i)).collect();
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
            while k < bb && !matches!(src.tok(k), "[" | ";" | "=") {
                k += 1;
            }
            if k > i + 1 && src.ident(k - 1) {
                class.insert(
                    src.tok(k - 1).to_string(),
                    format!("shared:{}", src.tok(k - 1)),
                );
            }
        }
        if src.is(i, "rk_dynamic_shared") || src.is(i, "dynamic_shared") {
            // The rewritten `extern __shared__ T name[];`: `T *const name = ...`.
            let mut k = i;
            while k > stmt_start && !src.is(k, "=") {
                k -= 1;
            }
            if k > ba && src.ident(k - 1) {
                class.insert(src.tok(k - 1).to_string(), "dynamic".to_string());
            }
        }
        if matches!(src.tok(i), ";" | "{" | "}") {
            stmt_start = i + 1;
        }
    }
    // Any other pointer or reference declared in the body (`T* p`, `T& r`, `auto p = &x`).
    for i in ba..bb {
        let t = src.tok(i);
        if (t == "*" || t == "&" || t == "&&")
            && i > ba
            && (src.ident(i - 1) || src.is(i - 1, ">"))
            && !class.contains_key(src.tok(i - 1))
            && src.ident(i + 1)
            && matches!(src.tok(i + 2), "=" | ";" | "," | "(" | "{")
            && (i < 2
                || matches!(src.tok(i - 2), ";" | "{" | "}" | "(" | "const")
                || src.ident(i - 2))
        {
            // `float* p = ...` or `float &r = ...` (a multiplication `a * b = c` is not C++).
            if !class.contains_key(src.tok(i + 1)) && src.tok(i + 2) != "(" {
                return false;
            }
        }
        if t == "&" && i > ba {
            // Address taken of something that is not shared memory: could alias anything.
            let unary = !src.ends_operand(i - 1);
            if unary && src.ident(i + 1) && !class.contains_key(src.tok(i + 1)) {
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
                && !NOT_TYPES.contains(&src.tok(j - 1))
        })
    };
    for i in ba..bb {
        if !src.ident(i) || class.contains_key(src.tok(i)) {
            continue;
        }
        if i > ba && matches!(src.tok(i - 1), "." | "->") {
            continue;
        }
        let deref = i > ba + 1 && src.is(i - 1, "*") && !src.ends_operand(i - 2);
        let through = src.is(i + 1, "->") || deref || src.is(i + 1, "[");
        if through && !local_array(src.tok(i)) {
            return false;
        }
    }
    // Intervals: split at top-level `__syncthreads();` statements; any other barrier defeats it.
    let mut cuts = vec![ba];
    let mut depth = 0i32;
    for i in ba..bb {
        match src.tok(i) {
            "{" | "(" | "[" => depth += 1,
            "}" | ")" | "]" => depth -= 1,
            _ => {}
        }
        let t = src.tok(i);
        if src.ident(i) && t.starts_with("__syncthreads") {
            let plain = t == "__syncthreads"
                && src.is(i + 1, "(")
                && src.is(i + 2, ")")
                && src.is(i + 3, ";")
                && depth == 0
                && (i == ba || matches!(src.tok(i - 1), ";" | "{" | "}"));
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
            let Some(c) = class.get(src.tok(i)) else {
                continue;
            };
            if i > ba && matches!(src.tok(i - 1), "." | "->") {
                continue;
            }
            if i > ba && src.ident(i - 1) && !NOT_TYPES.contains(&src.tok(i - 1)) {
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
            let after = src.tok(k);
            let before = if i > ba { src.tok(i - 1) } else { "" };
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

/// Names of functions that wait for other threads (contain a barrier or collective, directly or
/// through calls), other than the collectives the rewrite handles itself.
pub fn waiting_functions(src: &Tokens, bodies: &[&FnBody]) -> BTreeSet<String> {
    let mut waiting: BTreeSet<String> = RUNTIME_WAITS.iter().map(|s| s.to_string()).collect();
    waiting.extend(COLLECTIVES.iter().map(|s| s.to_string()));
    loop {
        let mut grew = false;
        for FnBody {
            name, body: (a, b), ..
        } in bodies.iter().copied()
        {
            if waiting.contains(name) {
                continue;
            }
            if (*a..*b).any(|i| src.ident(i) && waiting.contains(src.tok(i))) {
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
pub fn reading_functions(src: &Tokens, bodies: &[&FnBody], words: &[&str]) -> BTreeSet<String> {
    let mut readers: BTreeSet<String> = BTreeSet::new();
    loop {
        let mut grew = false;
        for FnBody {
            name, body: (a, b), ..
        } in bodies.iter().copied()
        {
            if readers.contains(name) {
                continue;
            }
            if (*a..*b).any(|i| {
                src.ident(i) && (words.contains(&src.tok(i)) || readers.contains(src.tok(i)))
            }) {
                readers.insert(name.clone());
                grew = true;
            }
        }
        if !grew {
            return readers;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::lex::lex;
    use super::*;

    #[test]
    fn uniform_constants_are_hoisted() {
        let src = lex("const int w = 32 * sizeof(float); const int t = (rk_cur.thread_idx).x;");
        let no_lane_vars = |_: &str| false;
        assert!(matches!(
            classify(&src, 0, 10, &no_lane_vars).unwrap(),
            Decl::Hoist
        ));
        let second = (0..src.len())
            .filter(|&i| src.is(i, ";"))
            .collect::<Vec<_>>();
        let d = classify(&src, second[0] + 1, second[1] + 1, &no_lane_vars).unwrap();
        assert!(
            matches!(d, Decl::Lanes { ty: Some(ref t), .. } if t == "int"),
            "{d:?}"
        );
        // A constant computed from a lane variable is per lane.
        let lane_w = |n: &str| n == "w";
        let u = lex("const int v = w + 1;");
        assert!(matches!(
            classify(&u, 0, u.len(), &lane_w).unwrap(),
            Decl::Lanes { .. }
        ));
    }
}
