//! The barrier-region form of kernels for the cpu backend: the facade the build calls.
//!
//! A GPU runs the threads of a block in lockstep waves; the per-thread fibers of the cpu runtime
//! emulate that faithfully but pay a context switch per thread at every barrier and collective.
//! This module rewrites a kernel into a second C++ function that runs a wave (or a whole block)
//! without fibers, in the manner of loop fission over barriers (MCUDA, POCL's work-group loops):
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
//! The input is the translation unit after preprocessing (so macros cannot hide a barrier),
//! lexed once; the output is C++ appended to the unit, compiled by the same compiler. Only the
//! kernels and the functions they reach are analysed ([`unit`]); helpers that wait are inlined
//! into the kernel's own text ([`inline`]), whose statements are parsed ([`parse`]), analysed
//! ([`analysis`]) and written out ([`codegen`]). A kernel gets no region form, and keeps running
//! on fibers, whenever something is outside what this rewrite handles (a call to a function that
//! itself contains a barrier or collective, `goto`, `switch` or range-`for` around a barrier, a
//! reference declared between barriers...): the reason is kept. The build also drops a kernel's
//! region form if its code does not compile.
//!
//! Hand-written rather than built on a C++ front end (libclang): the rewrite needs statement
//! structure only, and the cpu backend must keep working with just a host C++ compiler.

mod analysis;
mod codegen;
mod groups;
mod inline;
mod parse;
mod unit;

use std::collections::{BTreeMap, BTreeSet};

use super::lex::{lex, Tokens};
use unit::{kernel_defs, kernel_in, FunctionIndex, KernelDef};

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

/// A kernel the cpu backend cannot run at all, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The kernel's qualified name (`ns::scale`).
    pub kernel: String,
    /// Where the offending code is: `file:line`.
    pub location: String,
    /// What it is, as a phrase: "inline assembly (in `helper`)".
    pub what: String,
}

/// What [`generate`] made of a translation unit.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub forms: Vec<RegionForm>,
    /// Kernels (qualified names) that keep running on fibers, with why.
    pub fibers: Vec<(String, String)>,
    /// Kernels that cannot run on the cpu backend in any form.
    pub refused: Vec<Refusal>,
}

/// The words that start inline assembly.
const ASM: &[&str] = &["asm", "__asm__", "__asm"];

/// Whether token `i` of a preprocessed unit is the user's code: not from a system header nor from
/// the cpu kernel-language headers (whose inline assembly is x86 compiler barriers, and theirs to
/// have).
fn users_code(unit: &Tokens, i: usize) -> bool {
    let Some((marker, _)) = unit.origin(i) else {
        return true;
    };
    if marker.flags.contains(&"3") {
        return false;
    }
    let headers = super::cpu_include_dir();
    let canonical = std::fs::canonicalize(&headers).unwrap_or_else(|_| headers.clone());
    let file = std::path::Path::new(marker.file);
    !file.starts_with(&headers) && !file.starts_with(&canonical)
}

/// Inline assembly a kernel reaches in the user's code: where, and in which function (None: the
/// kernel's own body).
fn inline_assembly(
    unit: &Tokens,
    def: &KernelDef,
    index: &FunctionIndex,
    instantiated_with: &[&str],
) -> Option<(usize, Option<String>)> {
    let found = |(a, b): (usize, usize)| {
        (a..b).find(|&i| unit.ident(i) && ASM.contains(&unit.tok(i)) && users_code(unit, i))
    };
    if let Some(i) = found(def.body) {
        return Some((i, None));
    }
    index
        .reachable(unit, &[def.body], instantiated_with)
        .into_iter()
        .find_map(|f| found(f.body).map(|i| (i, Some(f.name.clone()))))
}

/// A kernel named as [`super::scan`] names it (`ns::scale<float>`): its definition's name and
/// its template arguments (`ns::scale`, `<float>`).
fn split_template_args(cpp_ref: &str) -> (&str, &str) {
    match cpp_ref.find('<') {
        Some(at) => (&cpp_ref[..at], &cpp_ref[at..]),
        None => (cpp_ref, ""),
    }
}

impl Outcome {
    /// The region form of a kernel named as [`super::scan`] names it (`ns::scale<float>`): the
    /// C++ expression naming its block function (`ns::rk_block_scale<float>`).
    #[cfg(test)]
    pub fn block_ref(&self, cpp_ref: &str) -> Option<String> {
        self.form(cpp_ref)
            .map(|(k, args)| format!("{}{args}", self.forms[k].block_fn))
    }

    /// The form of a kernel named as [`super::scan`] names it: its index in `forms`, and the
    /// kernel's template arguments (`<float>`, or "").
    pub fn form<'a>(&self, cpp_ref: &'a str) -> Option<(usize, &'a str)> {
        let (base, args) = split_template_args(cpp_ref);
        self.forms
            .iter()
            .position(|f| f.kernel == base)
            .map(|k| (k, args))
    }

    /// Why a kernel named as [`super::scan`] names it keeps its fibers, if the rewrite said.
    pub fn why_fibers(&self, cpp_ref: &str) -> Option<&str> {
        let (base, _) = split_template_args(cpp_ref);
        self.fibers
            .iter()
            .find(|(k, _)| k == base)
            .map(|(_, why)| why.as_str())
    }
}

/// Region forms for the kernels defined in a preprocessed translation unit.
pub fn generate(unit: &Tokens) -> Outcome {
    let (defs, specialized) = kernel_defs(unit);
    // Only the kernels and what they can call are looked into.
    let index = FunctionIndex::new(unit);
    // What kernel templates are instantiated with can be called by them too (a functor type).
    let template_args: Vec<(String, Vec<String>)> = super::scan::scan(unit)
        .into_iter()
        .filter_map(|k| {
            let (base, args) = split_template_args(&k.cpp_ref);
            let args = lex(args);
            let names = (0..args.len())
                .filter(|&i| args.ident(i))
                .map(|i| args.tok(i).to_string())
                .collect::<Vec<_>>();
            (!names.is_empty()).then(|| (base.to_string(), names))
        })
        .collect();
    let roots: Vec<(usize, usize)> = defs.iter().map(|d| d.body).collect();
    let named: Vec<&str> = template_args
        .iter()
        .flat_map(|(_, names)| names.iter().map(String::as_str))
        .collect();
    let reachable = index.reachable(unit, &roots, &named);
    let mut waiting = analysis::waiting_functions(unit, &reachable);
    let readers = analysis::reading_functions(unit, &reachable, &["thread_idx"]);
    let helpers = inline::Helpers::new(unit, &reachable, &waiting);
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
    let reaches_assembly = reachable
        .iter()
        .map(|f| f.body)
        .chain(roots.iter().copied())
        .any(|(a, b)| (a..b).any(|i| unit.ident(i) && ASM.contains(&unit.tok(i))));
    for def in &defs {
        // The names kernel templates are instantiated with (functor types...).
        let instantiated_with: Vec<&str> = template_args
            .iter()
            .filter(|(base, _)| *base == def.qualified)
            .flat_map(|(_, names)| names.iter().map(String::as_str))
            .collect();
        if reaches_assembly {
            if let Some((at, function)) = inline_assembly(unit, def, &index, &instantiated_with) {
                let location = match unit.origin(at) {
                    Some((marker, line)) => format!("{}:{line}", marker.file),
                    None => format!("line {}", unit.token(at).line),
                };
                let what = match function {
                    Some(f) => format!("inline assembly (in `{f}`)"),
                    None => "inline assembly".to_string(),
                };
                out.refused.push(Refusal {
                    kernel: def.qualified.clone(),
                    location,
                    what,
                });
                continue;
            }
        }
        if count[def.qualified.as_str()] > 1 {
            out.fibers
                .push((def.qualified.clone(), "it is overloaded".into()));
            continue;
        }
        // The region form is one for all of a template's instantiations.
        let waiting_argument = instantiated_with.iter().find(|n| waiting.contains(**n));
        if let Some(name) = waiting_argument {
            out.fibers.push((
                def.qualified.clone(),
                format!(
                    "it is instantiated with `{name}`, which waits for other threads (a call \
                     operator or function it is called through)"
                ),
            ));
            continue;
        }
        if specialized.contains(&def.qualified) {
            out.fibers.push((
                def.qualified.clone(),
                "it has explicit specializations".into(),
            ));
            continue;
        }
        // Kernels calling helpers that wait get their region form from a copy of their text
        // with the calls inlined, and kernels using cooperative groups from one with the groups'
        // collectives lowered to the ones the region form knows.
        let inlined = inline::inline_helpers(unit, def, &helpers);
        let lowered = match &inlined {
            Some(text) => groups::lower(text),
            None if uses_groups(unit, def) => groups::lower(unit.text(def.start, def.body.1 + 1)),
            None => None,
        };
        let form = match lowered.or(inlined) {
            Some(text) => {
                let toks = lex(&text);
                match kernel_in(&toks, def) {
                    Some(rewritten) => form_for(&toks, &rewritten, &waiting, &readers),
                    None => Err("its text with helpers inlined could not be read back".into()),
                }
            }
            None => form_for(unit, def, &waiting, &readers),
        };
        // Kernels in anonymous namespaces are reachable by their unqualified names only within
        // this unit, which is where the block function goes.
        match form {
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

/// Whether a kernel's text names cooperative groups (see `groups`).
fn uses_groups(unit: &Tokens, def: &KernelDef) -> bool {
    (def.start..def.body.1).any(|i| {
        matches!(
            unit.tok(i),
            "thread_block" | "thread_block_tile" | "this_thread_block" | "tiled_partition"
        )
    })
}

/// The region form of one kernel: Err(why) when it calls a function that waits (a helper the
/// inlining left as a call), or when it has barriers in a shape the rewrite does not take; None
/// for a kernel without barriers the rewrite does not take (the per-thread loop runs it just as
/// well: it never switches).
fn form_for(
    toks: &Tokens,
    def: &KernelDef,
    waiting: &BTreeSet<String>,
    readers: &BTreeSet<String>,
) -> parse::PResult<Option<(String, bool)>> {
    let (ba, bb) = def.body;
    // Any use of such a name (a call, a function passed on, a functor's class), except where the
    // kernel declares a variable of that name and does not call it (`int any = tile.any(p);`).
    let mut locals = inline::declared_names(toks, ba, bb);
    locals.extend(
        parse::param_names(toks, def.params)
            .into_iter()
            .map(|(n, _)| n),
    );
    let waits = |i: usize| {
        toks.ident(i)
            && waiting.contains(toks.tok(i))
            && (!locals.contains(toks.tok(i)) || toks.is(i + 1, "("))
    };
    if let Some(i) = (ba..bb).find(|&i| waits(i)) {
        let name = toks.tok(i);
        let member = i >= 2 && toks.ident(i - 2) && matches!(toks.tok(i - 1), "." | "->");
        return Err(if member {
            format!(
                "it calls `{}{}{name}()`, which waits for other threads inside another function",
                toks.tok(i - 2),
                toks.tok(i - 1)
            )
        } else if matches!(toks.tok(i + 1), "(" | "<" | "::") {
            format!("it calls `{name}`, which waits for other threads inside another function")
        } else if toks.ident(i + 1) || toks.is(i + 1, "{") {
            format!("it uses `{name}`, whose call operator waits for other threads")
        } else {
            format!("it takes `{name}`, which waits for other threads, to call it elsewhere")
        });
    }
    if !parse::has_collective(toks, ba, bb) {
        return Ok(codegen::block_function(toks, def, readers).ok());
    }
    codegen::block_function(toks, def, readers).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(src: &str) -> Outcome {
        generate(&lex(src))
    }

    #[test]
    fn kernels_without_barriers_are_one_lane_loop_without_slots() {
        let o = form(
            "__rk_kernel__ void k(float* x, int n) { int i = (rk_cur.thread_idx).x; if (i < n) x[i] = 1; }\n\
             __rk_kernel__ void g(float* x) { l: x[0] = 1; goto l; }",
        );
        assert_eq!(o.forms.len(), 1, "{o:?}");
        let code = &o.forms[0].code;
        // One lane loop (split at `i < n`, see codegen::split; the loop as written for the runs
        // where the split does not apply).
        assert!(code.contains("RK_RUN_LANES(rkr)"), "{code}");
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
        // `t` is the lane's coordinate: recomputed in each lane loop, no slot.
        assert!(!code.contains("rkr.alloc<unsigned>()"), "{code}");
        assert!(code.contains("unsigned t = ((rk_tidx).x);"), "{code}");
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
    fn indices_of_coordinates_are_recomputed_not_stored() {
        // The tiled transpose's shape: indices from coordinates and parameters, live across a
        // lockstep loop and a barrier, given new values after it.
        let o = form(
            "__rk_kernel__ void t(const float* in, float* out, int w) {\n\
             thread_local float tile[32][33];\n\
             int x = (rk_cur.block_idx).x * 32 + (rk_cur.thread_idx).x;\n\
             int y = (rk_cur.block_idx).y * 32 + (rk_cur.thread_idx).y;\n\
             for (int j = 0; j < 32; j += 8) if (x < w) tile[(rk_cur.thread_idx).y + j][(rk_cur.thread_idx).x] = in[(y + j) * w + x];\n\
             __syncthreads();\n\
             x = (rk_cur.block_idx).y * 32 + (rk_cur.thread_idx).x;\n\
             int z = x + w;\n\
             for (int j = 0; j < 32; j += 8) out[(y + j) * w + x + z] = tile[(rk_cur.thread_idx).x][(rk_cur.thread_idx).y + j];\n}",
        );
        let code = &o.forms[0].code;
        assert!(!code.contains("rkr.alloc"), "{code}");
        // After the barrier, lane loops start from x's new value; z's value has x's put in.
        assert!(
            code.contains("int x = ((rk_bidx).y * 32 + (rk_tidx).x);"),
            "{code}"
        );
        assert!(
            code.replace(' ', "")
                .contains("intz=((static_cast<int>(((rk_bidx).y*32+(rk_tidx).x)))+w);"),
            "{code}"
        );
        // Changed other ways (compound assignment, under a condition, through a reference, from a
        // value that is not the coordinates'), a variable keeps its slot.
        for change in [
            "x += 1;",
            "if (w) x = 1;",
            "f(x);",
            "x = (int)in[0];",
            "x = y;",
        ] {
            let o = form(&format!(
                "__rk_kernel__ void t(const float* in, float* out, int w) {{\n\
                 int x = (rk_cur.thread_idx).x;\n\
                 float y = in[x];\n\
                 __syncthreads();\n\
                 {change}\n\
                 __syncthreads();\n\
                 out[x] = y;\n}}"
            ));
            let code = &o.forms[0].code;
            assert!(code.contains("rkr.alloc<int>()"), "{change}: {code}");
        }
    }

    /// `code` without the race variant's summaries (`#ifdef __SANITIZE_THREAD__` blocks that
    /// define `rk_sum...`).
    fn without_summaries(code: &str) -> String {
        let mut out = String::new();
        let mut rest = code;
        while let Some(at) = rest.find("#ifdef __SANITIZE_THREAD__\nauto rk_sum") {
            out.push_str(&rest[..at]);
            // To its own `#endif` (the `#line` blocks inside nest).
            let mut depth = 0;
            let mut end = rest.len();
            let mut pos = at;
            for line in rest[at..].split_inclusive('\n') {
                pos += line.len();
                if line.starts_with("#if") {
                    depth += 1;
                } else if line.starts_with("#endif") {
                    depth -= 1;
                    if depth == 0 {
                        end = pos;
                        break;
                    }
                }
            }
            rest = &rest[end..];
        }
        out.push_str(rest);
        out
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
        // (The race variant's summaries repeat a lane loop for its uninstrumented run.)
        let plain = without_summaries(code);
        let lockstep = plain.find("for (int j = 0").unwrap();
        let lanes = plain[..lockstep].matches("RK_ALL_LANES").count();
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
        assert!(
            code.contains("::new (static_cast<void *>(rk_p_p + rk_t)) rk::slot_of_t<decltype(rk_arg_p)>(rk_arg_p)"),
            "{code}"
        );
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
    fn collectives_only_some_threads_evaluate_keep_fibers_with_the_operator_named() {
        let o = form(
            "__rk_kernel__ void a(int* p) { int c = (rk_cur.thread_idx).x < 64 ? __syncthreads_count(p[0]) : 0; p[1] = c; }\n\
             __rk_kernel__ void b(int* p) { int c = p[0] > 1 && __syncthreads_or(p[1]); p[2] = c; }\n\
             __rk_kernel__ void c(int* p) { if (p[0] || __any(p[1])) p[2] = 1; }\n\
             __rk_kernel__ void d(int* p) { int v = p[0] ? 1 : 2; v += __shfl(v, 0) > 0 && p[1]; p[2] = v; }\n\
             __rk_kernel__ void e(int* p) { int v = (p[0] && p[1]) + __shfl(p[2], 0); p[3] = v; }",
        );
        let why: BTreeMap<_, _> = o.fibers.iter().cloned().collect();
        assert!(
            why["a"].contains("`__syncthreads_count` is under `?:`"),
            "{why:?}"
        );
        assert!(
            why["b"].contains("`__syncthreads_or` is under `&&`"),
            "{why:?}"
        );
        assert!(why["c"].contains("`__any` is under `||`"), "{why:?}");
        // Every thread evaluates these: the condition is before the collective, or closed.
        for k in ["d", "e"] {
            assert!(o.forms.iter().any(|f| f.kernel == k), "{k}: {why:?}");
        }
    }

    #[test]
    fn lambdas_are_hoisted_or_keep_fibers_with_a_reason() {
        let o = form(
            "__rk_kernel__ void a(float* p) { auto sq = [](float x) { return x * x; };\n\
               float v = p[(rk_cur.thread_idx).x]; __syncthreads(); p[0] = sq(v); }\n\
             __rk_kernel__ void b(float* p) { float base = p[1]; auto add = [&](float x) { return x + base; };\n\
               __syncthreads(); p[0] = add(1.0f); }\n\
             __rk_kernel__ void c(float* p) { auto step = [&]() { p[0] = 1; __syncthreads(); }; step(); }\n\
             __rk_kernel__ void d(float* p) { auto id = []() { return (rk_cur.thread_idx).x; }; __syncthreads(); p[id()] = 1; }",
        );
        let why: BTreeMap<_, _> = o.fibers.iter().cloned().collect();
        let a = &o.forms.iter().find(|f| f.kernel == "a").expect("a").code;
        // Declared once, between lane loops, not in a slot.
        assert!(a.contains("\nauto sq = [](float x)"), "{a}");
        assert!(!a.contains("decltype(rk_ty"), "{a}");
        assert!(
            why["b"].contains("the lambda `add` captures variables"),
            "{why:?}"
        );
        assert!(
            why["c"].contains("`__syncthreads` inside a lambda"),
            "{why:?}"
        );
        // A lambda reading the coordinates reads them where every lane sets them.
        let d = &o.forms.iter().find(|f| f.kernel == "d").expect("d").code;
        assert!(d.contains("constexpr bool RK_TLS = true;"), "{d}");
        assert!(!d.contains("(rk_tidx).x; }"), "{d}");
    }

    #[test]
    fn functors_and_helpers_with_trailing_return_types_are_seen_to_wait() {
        let o = form(
            "struct Sum { float operator()(float v) const { return v + __shfl_xor(v, 1); } };\n\
             struct Far { float operator()(float v) const; };\n\
             float Far::operator()(float v) const { __syncthreads(); return v; }\n\
             auto twice(float v) -> float { return __shfl_xor(v, 1) * 2.0f; }\n\
             __rk_kernel__ void a(float* p) { Sum s; p[0] = s(p[0]); }\n\
             __rk_kernel__ void b(float* p) { p[0] = Far{}(p[0]); }\n\
             __rk_kernel__ void c(float* p) { float t = twice(p[0]); p[0] = t; }\n\
             __rk_kernel__ void d(float* p) { auto f = &twice; p[0] = f(p[0]); }\n\
             __rk_kernel__ void e(float* p) { float twice = p[0]; p[1] = twice * 2; }",
        );
        let why: BTreeMap<_, _> = o.fibers.iter().cloned().collect();
        assert!(
            why["a"].starts_with("it uses `Sum`, whose call operator waits"),
            "{why:?}"
        );
        assert!(why["b"].starts_with("it uses `Far`"), "{why:?}");
        // A function that waits, taken to be called through a pointer; a variable of its name.
        assert!(why["d"].starts_with("it takes `twice`"), "{why:?}");
        assert!(!why.contains_key("e"), "{why:?}");
        // The trailing return type names the result's type: inlined.
        let c = &o.forms.iter().find(|f| f.kernel == "c").expect("c").code;
        assert!(c.contains("rk_h1_r") && !c.contains("twice("), "{c}");
    }

    #[test]
    fn template_helpers_that_wait_keep_fibers_also_with_attributes() {
        // `__device__` as the scan spells it: an attribute between `template <...>` and the
        // return type. Inlined, the body would name `T`, which the kernel does not know.
        let o = form(
            "__attribute__((__rk_device__)) float block_max(float v, float* red) { \
                 red[(rk_cur.thread_idx).x] = v; __syncthreads(); return red[0]; }\n\
             template <typename T>\n\
             __attribute__((__rk_device__)) void row(const T* x, T* y, float* red) { \
                 T m = x[(rk_cur.thread_idx).x]; y[0] = block_max(m, red); }\n\
             __rk_kernel__ void k(const float* x, float* y) { \
                 thread_local float red[64]; row(x, y, red); }",
        );
        let why: BTreeMap<_, _> = o.fibers.iter().cloned().collect();
        assert_eq!(
            why["k"], "it calls `row`, which waits for other threads inside another function",
            "{o:?}"
        );
        assert!(o.forms.iter().all(|f| f.kernel != "k"), "{o:?}");
    }

    #[test]
    fn kernel_templates_instantiated_with_a_functor_that_waits_keep_fibers() {
        let o = form(
            "struct Max { int operator()(int v) const { return v + __shfl_xor(v, 1); } };\n\
             struct Twice { int operator()(int v) const { return 2 * v; } };\n\
             template <class Op> __rk_kernel__ void k(int* p) { Op op; p[0] = op(p[0]); }\n\
             template __rk_kernel__ void k<Max>(int*);\n\
             template <class Op> __rk_kernel__ void t(int* p) { Op op; p[0] = op(p[0]); }\n\
             template __rk_kernel__ void t<Twice>(int*);",
        );
        let why: BTreeMap<_, _> = o.fibers.iter().cloned().collect();
        assert!(
            why["k"].starts_with("it is instantiated with `Max`, which waits"),
            "{why:?}"
        );
        assert!(o.forms.iter().any(|f| f.kernel == "t"), "{o:?}");
    }

    #[test]
    fn an_auto_slot_typed_from_a_local_gives_that_local_a_slot() {
        let o = form(
            "__rk_kernel__ void k(const float* in, float* out) {\n\
             thread_local float s[64];\n\
             int t = (rk_cur.thread_idx).x;\n\
             float v = in[t];\n\
             auto w = v * 2.0f;\n\
             s[t] = w;\n\
             __syncthreads();\n\
             out[t] = s[63 - t] + w;\n}",
        );
        let code = &o.forms.iter().find(|f| f.kernel == "k").expect("k").code;
        // `v` is not used after the barrier, but `w`'s type is found from it before the loop.
        assert!(code.contains("rkr.alloc<float>();"), "{code}");
        assert!(code.contains("auto &v = rk_v"), "{code}");
        assert!(code.contains("decltype(rk_ty"), "{code}");
    }

    #[test]
    fn slots_are_constructed_where_their_variables_are_declared() {
        let o = form(
            "struct Acc { int sum = 5; };\n\
             __rk_kernel__ void k(int* p) { Acc a; int b{p[0]}; int c = p[1]; __syncthreads(); p[2] = a.sum + b + c; }",
        );
        let code = &o.forms[0].code;
        assert!(code.contains("rk::default_init(a);"), "{code}");
        assert!(
            code.contains(
                "::new (static_cast<void *>(&b)) std::remove_reference_t<decltype(b)>{p[0]};"
            ),
            "{code}"
        );
        assert!(
            code.contains(
                "::new (static_cast<void *>(&c)) std::remove_reference_t<decltype(c)>(p[1]);"
            ),
            "{code}"
        );
    }

    #[test]
    fn a_pragma_closing_a_block_is_a_statement_of_its_own() {
        let o = form(
            "__rk_kernel__ void k(int* p) { for (int i = 0; i < 4; ++i) { p[i] = i; __syncthreads();\n#pragma unroll\n} }",
        );
        assert_eq!(o.forms.len(), 1, "{o:?}");
    }

    #[test]
    fn inline_assembly_a_kernel_reaches_is_refused_with_its_line() {
        let o = form(
            "# 1 \"k.hip\"\n\
             __device__ int lanes() { int r; asm volatile(\"s_mov %0, 1\" : \"=s\"(r)); return r; }\n\
             __rk_kernel__ void a(int* p) { p[0] = lanes(); }\n\
             __rk_kernel__ void b(int* p) {\n p[0] = 1;\n __asm__(\"v_nop\");\n}\n\
             __rk_kernel__ void c(int* p) { p[0] = 2; }",
        );
        let refused: Vec<_> = o
            .refused
            .iter()
            .map(|r| (r.kernel.as_str(), r.location.as_str(), r.what.as_str()))
            .collect();
        assert_eq!(
            refused,
            [
                ("a", "k.hip:1", "inline assembly (in `lanes`)"),
                ("b", "k.hip:5", "inline assembly")
            ]
        );
        assert!(o.forms.iter().any(|f| f.kernel == "c"), "{o:?}");
    }

    #[test]
    fn cooperative_groups_of_known_kinds_run_in_region_form() {
        let o = form(
            "__rk_kernel__ void a(int* p) {\n\
               auto block = cooperative_groups::this_thread_block();\n\
               auto tile = cooperative_groups::tiled_partition<16>(block);\n\
               p[block.thread_rank()] = 1;\n\
               block.sync();\n\
               int v = cooperative_groups::reduce(tile, p[0], cooperative_groups::plus<int>());\n\
               p[1] = tile.shfl_down(v, 1);\n}\n\
             struct thread_group { void sync() const { __syncthreads(); } };\n\
             __rk_kernel__ void b(thread_group g, int* p) { g.sync(); p[0] = 1; }",
        );
        let a = &o.forms.iter().find(|f| f.kernel == "a").expect("a").code;
        assert!(a.contains("rkr.barrier_full("), "{a}");
        assert!(a.contains("rkr.tile_reduce<"), "{a}");
        assert!(a.contains("RK_WARP_SHFL_DOWN"), "{a}");
        // A `thread_group` could be either kind: its sync() stays a call.
        let why: BTreeMap<_, _> = o.fibers.iter().cloned().collect();
        assert!(why["b"].starts_with("it calls `g.sync()`"), "{why:?}");
    }

    #[test]
    fn bounds_checks_affine_in_the_lane_split_the_lane_loop() {
        // The tiled transpose's shape: `x` one more per lane, `y + j < h` the same in a run.
        let o = form(
            "__rk_kernel__ void t(const float* in, float* out, int w, int h) {\n\
             thread_local float tile[32][33];\n\
             int x = (rk_cur.block_idx).x * 32 + (rk_cur.thread_idx).x;\n\
             int y = (rk_cur.block_idx).y * 32 + (rk_cur.thread_idx).y;\n\
             for (int j = 0; j < 32; j += 8) if (x < w && y + j < h) tile[(rk_cur.thread_idx).y + j][(rk_cur.thread_idx).x] = in[(y + j) * w + x];\n\
             __syncthreads();\n\
             out[x] = tile[0][0];\n}",
        );
        let code = &o.forms[0].code;
        assert!(code.contains("RK_RUN_SPAN(rkr, rk_lo"), "{code}");
        assert!(
            code.contains("rk::split_cmp<rk::SPLIT_LT>(rk_l, rk_h, x, (w))"),
            "{code}"
        );
        // The invariant term, evaluated once per run and only while some lane passes.
        assert!(
            code.contains("if (rk_l < rk_h && !static_cast<bool>(y + j < h)) rk_h = rk_l;"),
            "{code}"
        );
        // In the split loop x is the run's first value plus the lane's int counter, and the
        // body runs without the test; the loop as written stays for the other runs.
        assert!(code.contains("int x = rk_a"), "{code}");
        assert!(code.contains("+ rk_jn;"), "{code}");
        assert!(code.contains("RK_RUN_LANES(rkr)"), "{code}");
        assert!(code.contains("!rk_pub && rkr.cols > 0"), "{code}");
        assert!(
            code.contains("x <= 2147483647 - static_cast<int>(rkr.cols - 1)"),
            "{code}"
        );

        // A declaration before the test, the variable on either side, a lower bound, casts of
        // `threadIdx.x` to a wide type.
        let o = form(
            "__rk_kernel__ void s(float* y, int lo, int n) {\n\
             int i = (rk_cur.block_idx).x * (rk_cur.block_dim).x + static_cast<int>((rk_cur.thread_idx).x) - 1;\n\
             if (n > i && i >= lo) y[i] = 2 * y[i];\n}",
        );
        let code = &o.forms[0].code;
        assert!(
            code.contains("rk::split_cmp<rk::SPLIT_LT>(rk_l, rk_h, i, (n))"),
            "{code}"
        );
        assert!(
            code.contains("rk::split_cmp<rk::SPLIT_GE>(rk_l, rk_h, i, (lo))"),
            "{code}"
        );
    }

    #[test]
    fn lane_loops_keep_their_test_where_a_split_would_not_be_exact() {
        let kernel = |decl: &str, stmt: &str| {
            form(&format!(
                "int g;\n__rk_kernel__ void k(float* y, int n, unsigned m) {{\n{decl}\n{stmt}\n}}"
            ))
        };
        let int_i = "int i = (rk_cur.block_idx).x * 256 + (rk_cur.thread_idx).x;";
        for (decl, stmt, why) in [
            (
                "unsigned i = (rk_cur.thread_idx).x;",
                "if (i < n) y[i] = 1;",
                "unsigned index",
            ),
            (
                "int i = 2 * (rk_cur.thread_idx).x;",
                "if (i < n) y[i] = 1;",
                "not one more per lane",
            ),
            (
                "int i = (rk_cur.thread_idx).x + 1.5;",
                "if (i < n) y[i] = 1;",
                "floating arithmetic",
            ),
            (
                "long i = (rk_cur.thread_idx).x;",
                "if (i < n) y[i] = 1;",
                "not an int",
            ),
            (int_i, "if (i < n && y[i] > 0) y[i] = 1;", "reads memory"),
            (int_i, "if (i < n || n < 0) y[i] = 1;", "a disjunction"),
            (int_i, "if (i == n) y[i] = 1;", "not an interval"),
            (
                int_i,
                "if (i < g) y[i] = 1;",
                "a global, which the body may change",
            ),
            (
                int_i,
                "if (i < n) y[i] = 1; else y[0] = 0;",
                "an else branch",
            ),
            (
                int_i,
                "y[0] = 0; if (i < n) y[i] = 1;",
                "a statement before",
            ),
            (int_i, "if (i < n) y[i] = 1; y[0] = 0;", "a statement after"),
            (int_i, "if (i < n) { y[i] = 1; return; }", "a lane leaving"),
            (
                int_i,
                "if (i < n) { static int c; y[i] = c; }",
                "a static local",
            ),
            (int_i, "if (i < m) y[i] = 1;", "an unsigned comparison"),
        ] {
            let o = kernel(decl, stmt);
            let code = &o.forms[0].code;
            if why == "an unsigned comparison" {
                // Split by the analysis, but rk::split_cmp refuses it by type (false: the run
                // keeps the test), which the C++ side decides.
                assert!(
                    code.contains("rk::split_cmp<rk::SPLIT_LT>(rk_l, rk_h, i, (m))"),
                    "{code}"
                );
                continue;
            }
            assert!(!code.contains("RK_RUN_SPAN"), "{why}: {code}");
        }
    }
}
