//! The C++ text of a kernel's region form: a function `rk_block_<kernel>` that runs one wave
//! of a block (or a whole block) as loops over its lanes between barriers, written against the
//! spellings of the cpu header `detail/region.h` (`rk::region`, `RK_LANES`, `RK_ALL_LANES`,
//! `rkr.barrier`, `rk::scope`...). The decisions it follows (slots, uniform loops, liveness,
//! whole blocks) come from `analysis`; the statements from `parse`.

use std::collections::{BTreeMap, BTreeSet};

use super::super::lex::{Kind, Tokens};
use super::analysis::{self, lanes_can_leave, param_mutated, settle_liveness, whole_block, Decl};
use super::parse::{
    collective_calls, declares_in_condition, has_collective, lambda_body, param_names,
    CollectiveCall, DeclVar, Init, PResult, Parser, St, Stmt, ASSIGN_OPS,
};
use super::unit::KernelDef;

mod split;
mod summary;

/// The generator of one kernel's region form: the text so far and where it stands.
struct Gen<'s, 'a> {
    src: &'s Tokens<'a>,
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
    /// Lane code reads the lane's coordinates from `rk_cur` (set for every lane), not from the
    /// lane loop's local copy: lambdas of the kernel read them.
    coordinates_from_tls: bool,
    /// Lane code reads `warpSize` from a local copy (`rk_wsz`), not from thread-local storage
    /// (reloaded after every store, as the coordinates were): no lambda of the kernel reads it.
    wave_size_local: bool,
    /// Parameters the kernel never changes (they may appear in a recomputed variable's value).
    fixed_params: Vec<String>,
    /// Statements `x = value;` that give a recomputed variable (see [`REMAT`]) its next value:
    /// statement start -> (name, the value as an expression that stands alone).
    remat_assign: BTreeMap<usize, (String, String)>,
    /// Variables of the lockstep and uniform loops around the code being generated: the same in
    /// every lane, and no lane changes them (see `split`).
    uniform: Vec<String>,
    /// Kernel pointer parameters (never changed, not `volatile`) and static `__shared__`
    /// arrays: the memory a race-variant summary may describe (see `summary`).
    arrays: Vec<String>,
    /// The kernel template's parameter names (lane-independent values).
    template_names: Vec<String>,
    /// Names the kernel declares (its parameters and, as far as a glance at the tokens tells,
    /// its local variables): any other name in lane code may be a variable in device memory.
    locals: BTreeSet<String>,
    /// Parameters the kernel never changes nor declares again (a closer reading than
    /// `fixed_params`, which takes `y * n` for a declaration of `n`): see `summary`.
    unchanged_params: Vec<String>,
    /// The kernel's parameters.
    params: Vec<String>,
}

/// Marks the storage of a lane variable that has no slot: one whose value is a function of the
/// lane's and block's coordinates and the parameters alone, recomputed at the top of each lane
/// loop (`REMAT type REMAT value`). A slot is memory the compiler must load per lane; the
/// recomputed value is arithmetic it can strength-reduce along the lane loop (the tiled
/// transpose's indices).
const REMAT: char = '\u{1}';

/// The type and value of a recomputed variable's storage string.
fn remat_parts(storage: &str) -> Option<(&str, &str)> {
    storage.strip_prefix(REMAT)?.split_once(REMAT)
}

/// Types a recomputed variable may have: plain integers.
fn remat_type(ty: &str) -> bool {
    !ty.is_empty()
        && ty.split_whitespace().all(|w| {
            matches!(
                w,
                "const"
                    | "int"
                    | "unsigned"
                    | "signed"
                    | "long"
                    | "short"
                    | "size_t"
                    | "uint32_t"
                    | "int32_t"
                    | "uint64_t"
                    | "int64_t"
                    | "std::size_t"
            )
        })
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

    /// For the race variant only (compiled with `__SANITIZE_THREAD__`): a `#line` giving the
    /// code after it token `i`'s line in the user's source, so that a race report names the
    /// kernel's line rather than the generated file's. Empty where the token has no origin.
    fn source_line(&self, i: usize) -> String {
        match self.src.origin(i) {
            // `#line` names the line after it, here the `#endif`'s.
            Some((marker, line)) if line > 1 => format!(
                "\n#ifdef __SANITIZE_THREAD__\n#line {} \"{}\"\n#endif",
                line - 1,
                marker.file
            ),
            _ => String::new(),
        }
    }

    fn sync(&self, s: &Stmt) -> bool {
        has_collective(self.src, s.start, s.end)
    }

    fn is_lane_var(&self, name: &str) -> bool {
        self.scopes.iter().any(|s| s.iter().any(|(n, _)| n == name))
    }

    // ---- decisions, asked with the lane variables in scope here ----

    fn classify(&self, a: usize, end: usize) -> PResult<Decl> {
        analysis::classify(self.src, a, end, &|n| self.is_lane_var(n))
    }

    fn lockstep_loop(&self, s: &Stmt) -> PResult<bool> {
        analysis::lockstep_loop(self.src, s, &|n| self.is_lane_var(n))
    }

    fn uniform_for(
        &self,
        init: (usize, usize),
        cond: (usize, usize),
        inc: (usize, usize),
        body: &Stmt,
    ) -> PResult<bool> {
        analysis::uniform_for(self.src, init, cond, inc, body, &|n| self.is_lane_var(n))
    }

    // ---- declarations ----

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
                        match remat_parts(s) {
                            Some((ty, _)) => refs.push_str(&format!("{ty} {n}{{}}; (void){n}; ")),
                            None => refs.push_str(&format!("auto &{n} = {s}[0]; (void){n}; ")),
                        }
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

    /// The lane code of a declaration: bind each name to its slot, then construct the variable
    /// there as its declaration would (slots are raw storage: default member initialisers run
    /// each time the declaration does, and a type without a default constructor needs none).
    fn decl_lane_code(
        &self,
        vars: &[DeclVar],
        storage: &[(String, String)],
        reps: &[(usize, usize, String)],
    ) -> String {
        let mut s = String::from("\n");
        for (v, (_, st)) in vars.iter().zip(storage) {
            let name = &v.name;
            if let (Some((ty, _)), Init::Expr(x, y)) = (remat_parts(st), &v.init) {
                s.push_str(&format!("{ty} {name} = {}; ", self.text_with(*x, *y, reps)));
                continue;
            }
            s.push_str(&format!("auto &{name} = {st}[rk_t]; "));
            let place = format!(
                "::new (static_cast<void *>(&{name})) std::remove_reference_t<decltype({name})>"
            );
            match &v.init {
                Init::None => s.push_str(&format!("rk::default_init({name});")),
                Init::Expr(x, y) => {
                    let e = self.text_with(*x, *y, reps);
                    // `T x = {..};` is list-initialisation; anything else a copy of the value.
                    let braced = self.src.is(*x, "{") && self.src.close(*x) == Some(y - 1);
                    if braced {
                        s.push_str(&format!("{place}{e};"));
                    } else {
                        s.push_str(&format!("{place}({e});"));
                    }
                }
                Init::Args(x, y, brace) => {
                    let (l, r) = if *brace { ("{", "}") } else { ("(", ")") };
                    s.push_str(&format!("{place}{l}{}{r};", self.text_with(*x, *y, reps)))
                }
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
        let code = self.local_coordinates(code);
        self.out.push_str(&code);
    }

    /// Lane code with the coordinates read from the lane loop's and the block function's locals
    /// (`rk_tidx`, and `rk_bidx`, `rk_bdim`, `rk_gdim`, copied from `rk_cur` once per call: the
    /// compiler must otherwise reload them from thread-local storage after every store the
    /// kernel makes, since the cpu build does not assume strict aliasing).
    fn local_coordinates(&self, code: &str) -> String {
        if self.coordinates_from_tls {
            return code.to_string();
        }
        let code = code
            .replace("(rk_cur.thread_idx)", "(rk_tidx)")
            .replace("(rk_cur.block_idx)", "(rk_bidx)")
            .replace("(rk_cur.block_dim)", "(rk_bdim)")
            .replace("(rk_cur.grid_dim)", "(rk_gdim)");
        if self.wave_size_local {
            code.replace("(rk_cur.wave_size)", "(rk_wsz)")
        } else {
            code
        }
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
                let bind = match remat_parts(s) {
                    Some((ty, v)) => {
                        let v = self.local_coordinates(v);
                        format!("{ty} {n} = {v}; (void){n}; ")
                    }
                    None => format!("auto &{n} = {s}[rk_t]; (void){n}; "),
                };
                self.push(&bind);
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
        let (start, pragma) = if src.kind(s.start) == Some(Kind::Pragma) {
            (s.start + 1, format!("{}\n", src.tok(s.start)))
        } else {
            (s.start, String::new())
        };
        out.push_str(&pragma);
        let line = self.source_line(start);
        if !line.is_empty() {
            out.push_str(&line);
            out.push('\n');
        }
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
    /// The tokens [a, b) as an expression that stands alone, if its value is a function of the
    /// lane's and block's coordinates, literals, parameters the kernel never changes and
    /// recomputed variables (their values put in) alone.
    /// With `uniform`, variables of the lockstep loops around count too (for a value used within
    /// one lane loop only: a recomputed variable's value must not change between lane loops).
    fn pure_value(
        &self,
        a: usize,
        b: usize,
        pending: &[(String, String)],
        uniform: bool,
    ) -> Option<String> {
        let src = self.src;
        if a >= b {
            return None;
        }
        let raw = src.text(a, b);
        if raw.contains("//") || raw.contains("/*") || raw.contains('#') {
            return None;
        }
        let mut reps = Vec::new();
        let mut i = a;
        while i < b {
            let t = src.tok(i);
            if t == "rk_cur" {
                if !(src.is(i + 1, ".")
                    && matches!(
                        src.tok(i + 2),
                        "thread_idx" | "block_idx" | "block_dim" | "grid_dim" | "wave_size"
                    ))
                {
                    return None;
                }
                i += 3;
            } else if t == "." {
                if !(i > a && src.is(i - 1, ")") && matches!(src.tok(i + 1), "x" | "y" | "z")) {
                    return None;
                }
                i += 2;
            } else if t == "static_cast" && src.is(i + 1, "<") {
                let close = src.close_angle(i + 1)?;
                if close >= b || !remat_type(src.text(i + 2, close).trim()) {
                    return None;
                }
                i = close + 1;
            } else if src.kind(i) == Some(Kind::Number) {
                i += 1;
            } else if src.ident(i) {
                let bound = pending
                    .iter()
                    .rev()
                    .chain(self.scopes.iter().rev().flat_map(|sc| sc.iter().rev()))
                    .find(|(n, _)| n == t);
                match bound {
                    Some((_, st)) => {
                        let (ty, v) = remat_parts(st)?;
                        reps.push((i, i + 1, format!("(static_cast<{ty}>({v}))")));
                    }
                    None if self.fixed_params.iter().any(|p| p == t) => {}
                    None if uniform && self.is_uniform(t) && !src.is(i + 1, "(") => {}
                    None => return None,
                }
                i += 1;
            } else if matches!(
                t,
                "(" | ")"
                    | "+"
                    | "-"
                    | "*"
                    | "/"
                    | "%"
                    | "<<"
                    | ">>"
                    | "&"
                    | "|"
                    | "^"
                    | "~"
                    | "<"
                    | ">"
                    | "<="
                    | ">="
                    | "=="
                    | "!="
                    | "&&"
                    | "||"
                    | "!"
                    | "?"
                    | ":"
            ) {
                i += 1;
            } else {
                return None;
            }
        }
        Some(format!(
            "({})",
            self.text_with(a, b, &reps).replace('\n', " ")
        ))
    }

    /// Storage for lane variable `v` declared with type `ty` (ending at token `decl_end`) that
    /// needs no slot: its value is a [`pure_value`](Self::pure_value), and nothing changes it
    /// until `live_until` but statements `v = value;` among `later` (statements at the same level)
    /// whose values are pure too. Those are noted in `remat_assign`.
    fn remat(
        &mut self,
        ty: &Option<String>,
        v: &DeclVar,
        decl_end: usize,
        later: &[&Stmt],
        live_until: usize,
        pending: &[(String, String)],
    ) -> Option<String> {
        let src = self.src;
        let ty = ty.as_deref()?;
        if !remat_type(ty) || !v.dims.is_empty() {
            return None;
        }
        let Init::Expr(x, y) = v.init else {
            return None;
        };
        let value = self.pure_value(x, y, pending, false)?;
        let name = v.name.as_str();
        let mut assigns = Vec::new();
        for i in decl_end..live_until.min(src.len()) {
            if !(src.ident(i) && src.tok(i) == name) || matches!(src.tok(i - 1), "." | "->") {
                continue;
            }
            let next = src.tok(i + 1);
            let prev = src.tok(i - 1);
            // A whole argument of a call may be bound to a reference and changed there.
            if matches!(prev, "(" | ",") && matches!(next, ")" | ",") {
                return None;
            }
            let changed = ASSIGN_OPS.contains(&next)
                || matches!(next, "++" | "--")
                || matches!(prev, "++" | "--")
                || (prev == "&" && !src.ends_operand(i - 2));
            if !changed {
                continue;
            }
            let s = later.iter().find(|s| s.start == i)?;
            let names_it = (i + 2..s.end).any(|j| {
                src.ident(j) && src.tok(j) == name && !matches!(src.tok(j - 1), "." | "->")
            });
            if next != "=" || !matches!(s.st, St::Simple) || names_it {
                return None;
            }
            // Pure with what is bound now (a variable recomputed only later does not count).
            self.pure_value(i + 2, s.end - 1, pending, false)?;
            assigns.push(i);
        }
        for i in assigns {
            self.remat_assign
                .insert(i, (name.to_string(), String::new()));
        }
        Some(format!("{REMAT}{ty}{REMAT}{value}"))
    }

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
                let depth = self.uniform.len();
                let vars = self.loop_vars(*init, body);
                self.uniform.extend(vars);
                let r = self.branch(body);
                self.uniform.truncate(depth);
                r?;
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

    /// The variables the header of a uniform loop declares (no lane changes them), less any the
    /// body declares again.
    fn loop_vars(&self, init: (usize, usize), body: &Stmt) -> Vec<String> {
        let Ok(Decl::Lanes { vars, .. }) = self.classify(init.0, init.1) else {
            return Vec::new();
        };
        vars.into_iter()
            .map(|v| v.name)
            .filter(|n| !redeclared(self.src, n, body.start, body.end))
            .collect()
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
                    // The race variant keeps the thread-local: the detector checks the
                    // worker's TLS block as static shared memory and names the variable from
                    // its symbol.
                    let mut out = format!(
                        "\n#ifdef __SANITIZE_THREAD__\n{}\n#else",
                        src.text(s.start, s.end)
                    );
                    for v in &vars {
                        out.push_str(&format!(
                            "\nauto &{} = rkr.shared<{ty}{}>();",
                            v.name, v.dims
                        ));
                    }
                    out.push_str("\n#endif");
                    return Ok(out);
                }
            }
        }
        Ok(format!("\n{}", src.text(s.start, s.end)))
    }

    /// One lane loop over statements without barriers, with slots for the variables it declares
    /// that stay live after it. Returns the assignments after it that begin a variable's life
    /// anew, to be treated as declarations (see [`settle_liveness`]).
    fn region(
        &mut self,
        mut run: Vec<(&Stmt, Decl)>,
        rest: &[Stmt],
        live_until: usize,
    ) -> PResult<Vec<(usize, (String, String))>> {
        let reborn = settle_liveness(self.src, &mut run, rest, live_until)?;
        // Slots for the lane variables declared here, before the loop (or none, for variables
        // recomputed in each lane loop).
        let mut pending: Vec<(String, String)> = Vec::new();
        let mut storages = Vec::new();
        // How many of `pending` each statement sees (those declared before it).
        let mut seen = Vec::new();
        for (k, (s, d)) in run.iter().enumerate() {
            seen.push(pending.len());
            if let Decl::Lanes { ty, vars, .. } = d {
                let mut st = Vec::new();
                for v in vars {
                    let later: Vec<&Stmt> =
                        run[k + 1..].iter().map(|(s, _)| *s).chain(rest).collect();
                    match self.remat(ty, v, s.end, &later, live_until, &pending) {
                        Some(storage) => st.push((v.name.clone(), storage)),
                        None => st.extend(self.slots(ty, std::slice::from_ref(v), &pending)),
                    }
                    pending.push(st.last().cloned().expect("one per variable"));
                }
                storages.push(st);
            } else {
                storages.push(Vec::new());
            }
        }
        let mark = self.out.len();
        // Where the last statement's code lies (see `split`).
        let mut last = (0, 0);
        self.open_lanes();
        let top = LaneCtx {
            in_loop: false,
            in_switch: false,
        };
        for (((s, d), st), seen) in run.iter().zip(storages.iter_mut()).zip(seen) {
            // A recomputed variable's value with the values bound here (an earlier statement
            // of this lane loop may have given another one its next value).
            if let Decl::Lanes { vars, .. } = d {
                for (k, (v, (name, storage))) in vars.iter().zip(st.iter_mut()).enumerate() {
                    let (Some((ty, _)), Init::Expr(x, y)) = (remat_parts(storage), &v.init) else {
                        continue;
                    };
                    let value = self
                        .pure_value(*x, *y, &pending[..seen + k], false)
                        .ok_or_else(|| format!("the value of `{name}` changed meaning"))?;
                    *storage = format!("{REMAT}{ty}{REMAT}{value}");
                    if let Some(p) = pending.iter_mut().rev().find(|(n, _)| n == name) {
                        p.1 = storage.clone();
                    }
                }
            }
            let code = match d {
                Decl::Lanes { vars, .. } => {
                    format!(
                        "{}{}",
                        self.source_line(s.start),
                        self.decl_lane_code(vars, st, &[])
                    )
                }
                Decl::Renewed(code) => format!("{}\n{code}", self.source_line(s.start)),
                _ => self.lane_stmt(s, top)?,
            };
            last.0 = self.out.len();
            self.push_lane(&code);
            last.1 = self.out.len();
            // A recomputed variable's next value: later lane loops start from it.
            if let Some((name, _)) = self.remat_assign.get(&s.start).cloned() {
                let value = self
                    .pure_value(s.start + 2, s.end - 1, &pending[..seen], false)
                    .ok_or_else(|| format!("the value of `{name}` changed meaning"))?;
                let entry = pending
                    .iter_mut()
                    .rev()
                    .chain(
                        self.scopes
                            .iter_mut()
                            .rev()
                            .flat_map(|sc| sc.iter_mut().rev()),
                    )
                    .find(|(n, _)| *n == name)
                    .ok_or_else(|| format!("`{name}` is not in scope"))?;
                let (ty, _) = remat_parts(&entry.1).ok_or("not a recomputed variable")?;
                entry.1 = format!("{REMAT}{ty}{REMAT}{value}");
            }
        }
        let label_used = self.labels.last().is_some_and(|l| l.1);
        self.close_lanes();
        // A bounds check affine in the lane taken out of the loop, where that is exact.
        if !label_used && !self.returned_here {
            if let (Some(plan), Some((last_stmt, _))) =
                (self.split_plan(&run, &pending), run.last())
            {
                if let St::If { then, .. } = &last_stmt.st {
                    let before = self.out.clone();
                    if self.emit_split(&plan, mark, last, then).is_none() {
                        self.out = before;
                    }
                }
            }
        }
        // The race variant's summary of the lane loop (see `summary`).
        if !label_used && !self.returned_here {
            self.summarize(&run, mark);
        }
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
        let exits = lanes_can_leave(src, body);
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
                let depth = self.uniform.len();
                let vars = self.loop_vars(i, body);
                self.uniform.extend(vars);
                let r = self.branch(body);
                self.uniform.truncate(depth);
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
        if declares_in_condition(self.src, a, b) {
            return Err("a declaration in the condition of a loop or `if` with a barrier".into());
        }
        let dst = dst.to_string();
        self.phased(a, b, None, &move |t| {
            format!(
                "RK_RAW_SET({dst}[rk_t], static_cast<uint8_t>(static_cast<bool>({t}) ? 1 : 0));"
            )
        })
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
            let line = self.source_line(s.start);
            self.push(&format!("{line}\n{code};"));
            return Ok(());
        }
        let decl = self.classify(s.start, s.end)?;
        match decl {
            Decl::Hoist | Decl::Renewed(_) => {
                // Why the collective cannot be taken apart (inside a lambda...), if it says.
                collective_calls(src, s.start, s.end)?;
                Err("a barrier in a static or constant declaration".into())
            }
            Decl::No => self.phased(s.start, s.end - 1, None, &|t| format!("{t};")),
            Decl::Lanes { ty, vars, .. } => {
                let storage = self.slots(&ty, &vars, &[]);
                self.phased(s.start, s.end - 1, Some((&vars, &storage)), &|t| {
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
        decl: Option<(&[DeclVar], &[(String, String)])>,
        wrap: &dyn Fn(String) -> String,
    ) -> PResult<()> {
        let src = self.src;
        let calls = collective_calls(src, a, b)?;
        let id = self.id();
        self.push("\n{ rk::scope rk_sp(rkr);");
        // Phase 1: operands.
        let mut reps = Vec::new();
        let mut stores = String::new();
        let mut after = String::new();
        for (k, call) in calls.iter().enumerate() {
            let CollectiveCall {
                name,
                at,
                close,
                args,
            } = call;
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
                        "RK_RAW_SET({x}[rk_t], static_cast<uint64_t>(static_cast<int>({}) != 0)); ",
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
                // The lanes of a wave run in step: a wave's own barrier only ends the lane loop.
                "__syncwarp" => "(void)0".into(),
                "__rk_readfirstlane" => {
                    let value = arg(0)?;
                    stores.push_str(&format!("RK_RAW_SET({x}[rk_t], rk::bits({value})); "));
                    after.push_str(&format!("\nrkr.reduce({x});"));
                    format!("rkr.first_active<std::decay_t<decltype({value})>>({x}, rk_t)")
                }
                "__rk_tile_reduce" => {
                    // (value, operator, tile width): the tile's butterfly, computed once per
                    // tile by the first of its lanes the result loop reaches.
                    let value = arg(0)?;
                    stores.push_str(&format!("RK_RAW_SET({x}[rk_t], rk::bits({value})); "));
                    let done = format!("rk_done{id}_{k}");
                    after.push_str(&format!(
                        "\nuint8_t *{done} = rkr.bytes(); std::memset({done}, 0, rkr.n);"
                    ));
                    format!(
                        "rkr.tile_reduce<std::decay_t<decltype({value})>>({x}, {done}, rk_t, static_cast<int>({}), {})",
                        arg(2)?,
                        arg(1)?
                    )
                }
                "__ballot" | "__ballot64" | "__ballot_sync" | "__any" | "__any_sync" | "__all"
                | "__all_sync" => {
                    stores.push_str(&format!(
                        "RK_RAW_SET({x}[rk_t], static_cast<uint64_t>(static_cast<int>({}) != 0)); ",
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
                    stores.push_str(&format!("RK_RAW_SET({x}[rk_t], rk::bits({value})); "));
                    let width = match args.get(v + 2) {
                        Some(&(p, q)) => format!("static_cast<int>({})", src.text(p, q)),
                        None => "(static_cast<int>(rk_cur.wave_size))".into(),
                    };
                    // Every lane of the wave active: no lane's source is skipped for being idle.
                    let full = self.full();
                    format!(
                        "rkr.shfl<std::decay_t<decltype({value})>, {full}>({x}, rk_t, {op}, static_cast<int>({}), {width})",
                        arg(v + 1)?
                    )
                }
            };
            if !matches!(*name, "__syncthreads" | "__activemask" | "__syncwarp") {
                self.push(&format!("\nuint64_t *{x} = rkr.xbuf();"));
            }
            // The race variant counts the collectives each lane took part in (as the per-thread
            // run does in rk_warp_op: readfirstlane is two there).
            if !name.starts_with("__syncthreads") {
                let count = if *name == "__rk_readfirstlane" { 2 } else { 1 };
                after.push_str(&format!("\nRK_COLLECTIVE(rkr, {count});"));
            }
            reps.push((*at, close + 1, rep));
        }
        let line = self.source_line(a);
        // Lane loops that touch lane variables alone run uninstrumented in the race variant.
        let fast = self.lane_storage_only(a, b);
        if !stores.is_empty() {
            let mark = self.out.len();
            self.open_lanes();
            self.push(&line);
            self.push("\n");
            self.push_lane(&stores);
            self.close_lanes();
            if fast {
                self.uninstrumented(mark);
            }
        }
        // Phase 2: barriers checked, ballots reduced per wave.
        self.push(&line);
        self.push(&after);
        // Phase 3: the statement per lane.
        let mark = self.out.len();
        self.open_lanes();
        self.push(&line);
        let code = match decl {
            Some((vars, storage)) => self.decl_lane_code(vars, storage, &reps),
            None => format!("\n{}", wrap(self.text_with(a, b, &reps))),
        };
        self.push_lane(&code);
        let label_used = self.labels.last().is_some_and(|l| l.1);
        self.close_lanes();
        if fast && !label_used {
            self.uninstrumented(mark);
        }
        self.push("\n}");
        Ok(())
    }
}

/// Whether [a, b) may declare a variable `name` (as far as a glance at the tokens tells: the
/// name after a type or a `*`/`&` after one).
fn redeclared(src: &Tokens, name: &str, a: usize, b: usize) -> bool {
    (a..b).any(|i| {
        src.ident(i)
            && src.tok(i) == name
            && i > 0
            && ((src.ident(i - 1) && !matches!(src.tok(i - 1), "return" | "case"))
                || (matches!(src.tok(i - 1), "*" | "&" | "&&") && i > 1 && src.ident(i - 2)))
    })
}

/// Whether a lambda defined in [a, b) reads the thread's coordinates.
fn lambdas_read_coordinates(src: &Tokens, a: usize, b: usize) -> bool {
    lambdas_read(src, a, b, "thread_idx")
}

/// Whether a lambda defined in [a, b) names `what`.
fn lambdas_read(src: &Tokens, a: usize, b: usize, what: &str) -> bool {
    (a..b).any(|k| {
        src.is(k, "{")
            && lambda_body(src, k)
            && src
                .close(k)
                .is_some_and(|c| (k..c).any(|i| src.is(i, what)))
    })
}

/// The names kernel `def` declares: its parameters, and each name in its body right after a name
/// (`float v`, `int i`) or after a `*` or `&` that follows one (`float *p`).
fn declared_names(src: &Tokens, def: &KernelDef) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = param_names(src, def.params)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let (a, b) = def.body;
    for i in a + 1..b {
        if !src.ident(i) || matches!(src.tok(i - 1), "." | "->") {
            continue;
        }
        let prev_name = |k: usize| {
            src.ident(k) && !matches!(src.tok(k), "return" | "case" | "else" | "do" | "goto")
        };
        if prev_name(i - 1)
            || (matches!(src.tok(i - 1), "*" | "&") && i >= a + 2 && prev_name(i - 2))
        {
            out.insert(src.tok(i).to_string());
        }
    }
    out
}

/// Whether the body assigns `name`, takes its address, or declares another `name` (member
/// accesses `.name` and `->name` are other things).
fn changed_or_shadowed(src: &Tokens, name: &str, (a, b): (usize, usize)) -> bool {
    (a..b).any(|i| {
        if !src.is(i, name) || !src.ident(i) {
            return false;
        }
        let prev = if i > a { src.tok(i - 1) } else { "" };
        if matches!(prev, "." | "->") {
            return false;
        }
        let next = src.tok(i + 1);
        ASSIGN_OPS.contains(&next)
            || matches!(next, "++" | "--")
            || matches!(prev, "++" | "--" | "&")
            || (i > a && src.ident(i - 1) && !matches!(prev, "return" | "case" | "else" | "do"))
            || (matches!(prev, "*" | "&")
                && i > a + 2
                && src.ident(i - 2)
                && matches!(src.tok(i - 3), ";" | "{" | "}" | "const" | "("))
    })
}

/// The kernel's pointer parameters that it never changes and that are not `volatile`, and its
/// static `__shared__` arrays (`thread_local` in the preprocessed body): see `summary`.
fn summary_arrays(src: &Tokens, def: &KernelDef) -> Vec<String> {
    let mut out = Vec::new();
    for (name, at) in param_names(src, def.params) {
        let start = (def.params.0..at)
            .rev()
            .find(|&i| src.is(i, ",") || src.is(i, "("))
            .map_or(def.params.0, |i| i + 1);
        let words = (start..at).map(|i| src.tok(i));
        let (mut pointer, mut volatile) = (false, false);
        for w in words {
            pointer |= w == "*";
            volatile |= w == "volatile";
        }
        if pointer && !volatile && !changed_or_shadowed(src, &name, def.body) {
            out.push(name);
        }
    }
    let (ba, bb) = def.body;
    let mut i = ba;
    while i < bb {
        if src.is(i, "thread_local") {
            let end = (i..bb).find(|&k| src.is(k, ";")).unwrap_or(bb);
            if !(i..end).any(|k| matches!(src.tok(k), "volatile" | "extern" | "=" | ",")) {
                if let Some(k) = (i..end).find(|&k| src.ident(k) && src.is(k + 1, "[")) {
                    out.push(src.tok(k).to_string());
                }
            }
            i = end;
        }
        i += 1;
    }
    out
}

/// The region form of kernel `def` (a function definition, in the kernel's namespaces), and
/// whether it runs whole blocks ([`whole_block`]); Err(why) where the rewrite does not apply.
/// `readers`: functions that read the running thread's coordinates (see `analysis`).
pub fn block_function(
    src: &Tokens,
    def: &KernelDef,
    readers: &BTreeSet<String>,
) -> PResult<(String, bool)> {
    let (ba, bb) = def.body;
    let parser = Parser { src };
    let body = parser.block(ba, bb)?;
    // Parameters the body changes get a copy per lane.
    let params = param_names(src, def.params);
    // Parameters a recomputed variable's value may name: never changed, and never (as far as
    // a glance at the tokens tells) declared again in the body under the same name.
    let fixed_params: Vec<String> = params
        .iter()
        .filter(|(n, _)| !param_mutated(src, n, def.body))
        .filter(|(n, _)| !redeclared(src, n, ba, bb))
        .map(|(n, _)| n.clone())
        .collect();
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
        coordinates_from_tls: lambdas_read_coordinates(src, ba, bb),
        wave_size_local: !lambdas_read_coordinates(src, ba, bb)
            && !lambdas_read(src, ba, bb, "wave_size"),
        arrays: summary_arrays(src, def),
        locals: declared_names(src, def),
        params: param_names(src, def.params)
            .into_iter()
            .map(|(n, _)| n)
            .collect(),
        unchanged_params: param_names(src, def.params)
            .into_iter()
            .map(|(n, _)| n)
            .filter(|n| !changed_or_shadowed(src, n, def.body))
            .collect(),
        template_names: def
            .template_head
            .map(|(x, y)| {
                (x..y)
                    .filter(|&i| src.ident(i) && matches!(src.tok(i + 1), "," | ">" | "="))
                    .map(|i| src.tok(i).to_string())
                    .collect()
            })
            .unwrap_or_default(),
        fixed_params,
        remat_assign: BTreeMap::new(),
        uniform: Vec::new(),
    };
    for (n, _) in &mutated {
        g.push(&format!(
            "\nauto *const rk_p_{n} = rkr.alloc<rk::slot_of_t<decltype(rk_arg_{n})>>();\
             \nfor (uint32_t rk_t = 0; rk_t < rkr.n; ++rk_t) ::new (static_cast<void *>(rk_p_{n} + rk_t)) \
             rk::slot_of_t<decltype(rk_arg_{n})>(rk_arg_{n});"
        ));
        g.scopes[0].push((n.clone(), format!("rk_p_{n}")));
    }
    g.seq(&body, bb)?;
    // Whether functions the kernel calls, or lambdas it defines, read the running thread's
    // coordinates from `rk_cur` (which then must be set for every lane even when faults need
    // not name it). Lambdas keep reading `rk_cur` (one that captures nothing cannot read the lane
    // loop's local copy).
    // Any mention of such a function counts: a call with explicit template arguments
    // (`f<T>(...)`) is one, where a `(` right after the name missed it and every lane read
    // thread 0's coordinates.
    let tls =
        g.coordinates_from_tls || (ba..bb).any(|i| src.ident(i) && readers.contains(src.tok(i)));
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
        "rkr.tile_reduce",
    ]
    .iter()
    .any(|m| g.out.contains(m));
    let mut code = String::new();
    for ns in &def.namespaces {
        if ns.is_empty() {
            // Anonymous namespaces and extern "C" blocks: the block function needs neither.
            continue;
        }
        code.push_str(&format!("namespace {ns} {{ "));
    }
    code.push('\n');
    // Lane loops of kernels indexed by threadIdx.x alone are unrolled (see RK_LANE_UNROLL in
    // region.h: measured faster for 1-D kernels, slower for the 2-D tiled transpose).
    let one_d = ![
        "(rk_tidx).y",
        "(rk_tidx).z",
        "thread_idx).y",
        "thread_idx).z",
    ]
    .iter()
    .any(|c| g.out.contains(c));
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
         constexpr bool RK_TLS = {tls}; (void)RK_TLS;\n\
         const auto rk_bidx = rk_cur.block_idx; const auto rk_bdim = rk_cur.block_dim; \
         const auto rk_gdim = rk_cur.grid_dim; const auto rk_wsz = rk_cur.wave_size; \
         (void)rk_bidx; (void)rk_bdim; (void)rk_gdim; (void)rk_wsz;{}\n}};\n\
         if (rkr.publish) rk_body(std::true_type{{}}); else rk_body(std::false_type{{}});\n}}\n",
        def.name, g.out
    ));
    for ns in &def.namespaces {
        if !ns.is_empty() {
            code.push('}');
        }
    }
    code.push('\n');
    Ok((code, whole))
}
