//! The race variant of the cpu build: every kernel compiled once more, in its region form where
//! it has one (else per thread; all per thread where the unit's region forms do not compile
//! instrumented), with the host compiler's ThreadSanitizer instrumentation, for the cpu runtime's race
//! detector (`rocm-kernels/cpu-runtime/race.cpp`, which says how it checks).
//!
//! The instrumented objects go into the same static library as the normal ones, so every name
//! they define is renamed (`rkrace_` before it: kernels, device functions, inline and template
//! instantiations, static `__shared__` thread-locals) with `objcopy --redefine-syms` — COMDAT
//! group signatures follow their symbols, so the linker never mixes instrumented and plain copies
//! of one inline function. The instrumentation's `__tsan_*` calls become `rk_tsan_*` (the runtime
//! defines them; no ThreadSanitizer runtime is linked, and a real one elsewhere in the binary
//! would not clash), and the barrier and collective calls become the `rk_race_*` wrappers that
//! count them. Each kernel's race entry is then `rkrace_<entry symbol>`.
//!
//! What costs the variant needs: one more compile per source at `-O1` with line tables (the race
//! report names source lines), and an `objcopy` (binutils, or LLVM's). Without either, or when a
//! unit does not compile instrumented, the library has no race entries and the runtime falls back
//! to comparing two thread orders; the build says so in a warning.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use object::{Object, ObjectSymbol};

use super::generated::GeneratedUnit;
use super::{base_build, CpuBuildRequest};

/// What the race variant's symbols are called: `rkrace_` and the plain name.
pub const PREFIX: &str = "rkrace_";

/// The runtime calls the race variant makes instead of the plain ones (race.cpp wraps them).
const WRAPPED: &[(&str, &str)] = &[
    ("rk_syncthreads", "rk_race_syncthreads"),
    ("rk_syncthreads_op", "rk_race_syncthreads_op"),
    ("rk_warp_op", "rk_race_warp_op"),
];

/// Whether race.cpp defines `rk_tsan_<rest>` for the instrumentation's `__tsan_<rest>`.
pub fn hook_supported(rest: &str) -> bool {
    const FIXED: &[&str] = &[
        "init",
        "func_entry",
        "func_exit",
        "vptr_update",
        "vptr_read",
        "acquire",
        "release",
        "read_range",
        "write_range",
        "memcpy",
        "memmove",
        "memset",
        "atomic_thread_fence",
        "atomic_signal_fence",
    ];
    const PLAIN: &[&str] = &[
        "read",
        "write",
        "unaligned_read",
        "unaligned_write",
        "volatile_read",
        "volatile_write",
        "unaligned_volatile_read",
        "unaligned_volatile_write",
    ];
    const ATOMIC: &[&str] = &[
        "load",
        "store",
        "exchange",
        "fetch_add",
        "fetch_sub",
        "fetch_and",
        "fetch_or",
        "fetch_xor",
        "fetch_nand",
        "compare_exchange_strong",
        "compare_exchange_weak",
        "compare_exchange_val",
    ];
    if FIXED.contains(&rest) {
        return true;
    }
    if let Some(n) = PLAIN.iter().find_map(|p| rest.strip_prefix(p)) {
        return matches!(n, "1" | "2" | "4" | "8" | "16");
    }
    if let Some(tail) = rest.strip_prefix("atomic") {
        for bits in ["8", "16", "32", "64", "128"] {
            if let Some(op) = tail.strip_prefix(bits).and_then(|t| t.strip_prefix('_')) {
                return ATOMIC.contains(&op);
            }
        }
    }
    false
}

/// The objcopy to rename with: `OBJCOPY`, else binutils' or LLVM's on `PATH`.
pub(super) fn find_objcopy() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(v) = std::env::var_os("OBJCOPY") {
        candidates.push(PathBuf::from(v));
    }
    candidates.push("objcopy".into());
    candidates.push("llvm-objcopy".into());
    for v in (14..=22).rev() {
        candidates.push(format!("llvm-objcopy-{v}").into());
    }
    candidates.into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Compile the race variant of `units` and rename its symbols. Returns the objects to add to the
/// kernel library, or why there are none (for a warning).
pub fn build(
    req: &CpuBuildRequest,
    units: &[GeneratedUnit],
    warnings: &mut Vec<String>,
) -> Result<Vec<PathBuf>, String> {
    let objcopy = find_objcopy().ok_or(
        "no objcopy found (install binutils, or LLVM's llvm-objcopy, or set OBJCOPY)".to_string(),
    )?;
    let dir = req.out_dir.join("race");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut build = base_build(req);
    build
        .out_dir(&dir)
        .opt_level(1)
        .cargo_metadata(false)
        .warnings(false)
        // A source error is reported once, by the build (`compile::source_errors`), not again
        // as this variant's compiler output.
        .cargo_warnings(false)
        .cargo_output(false)
        .flag("-fsanitize=thread");
    let compiler = build.try_get_compiler().map_err(|e| e.to_string())?;
    if compiler.is_like_clang() {
        build
            .flag("-gline-tables-only")
            .flag("-mllvm")
            .flag("-tsan-instrument-func-entry-exit=0")
            .flag("-mllvm")
            .flag("-tsan-distinguish-volatile=1");
    } else {
        build
            .flag("-g1")
            .flag("--param=tsan-instrument-func-entry-exit=0")
            .flag("--param=tsan-distinguish-volatile=1")
            .flag_if_supported("-Wno-tsan");
    }
    // With the region forms (the kernels' waves as lane loops, switching only at barriers), or,
    // where that does not compile, per thread alone.
    let compile = |with_forms: bool| -> Result<Vec<PathBuf>, String> {
        let mut build = build.clone();
        for u in units {
            let file = u.file.with_extension("race.cpp");
            let text = if with_forms {
                u.text_with(|f| u.forms[f].in_use)
            } else {
                u.text_with(|_| false)
            };
            std::fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))?;
            build.file(&file);
            if let Some(dir) = u.source.parent() {
                build.include(dir);
            }
        }
        build
            .try_compile_intermediates()
            .map_err(|e| first_error_line(&e.to_string()))
    };
    let objects = if units.iter().any(GeneratedUnit::uses_forms) {
        compile(true).or_else(|why| {
            // Said, since the race check then runs every thread on a fiber of its own (slower,
            // and no summaries): a region form the plain build took but the instrumented one
            // did not is a bug of the region form.
            warnings.push(format!(
                "rocm-kernels: the race variant of `{}` runs per thread: its region forms did \
                 not compile instrumented ({why})",
                req.name
            ));
            compile(false)
        })?
    } else {
        compile(false)?
    };
    let map = rename_map(&objects)?;
    let map_file = dir.join("rename.map");
    std::fs::write(&map_file, map).map_err(|e| format!("{}: {e}", map_file.display()))?;
    let mut renamed = Vec::new();
    for (k, obj) in objects.iter().enumerate() {
        let out = dir.join(format!("race_{k}.o"));
        let status = Command::new(&objcopy)
            .arg(format!("--redefine-syms={}", map_file.display()))
            .arg(obj)
            .arg(&out)
            .output()
            .map_err(|e| format!("{}: {e}", objcopy.display()))?;
        if !status.status.success() {
            return Err(format!(
                "{} failed: {}",
                objcopy.display(),
                String::from_utf8_lossy(&status.stderr).trim()
            ));
        }
        renamed.push(out);
    }
    Ok(renamed)
}

fn first_error_line(text: &str) -> String {
    text.lines()
        .find(|l| l.contains("error"))
        .unwrap_or(text)
        .trim()
        .to_string()
}

/// The `--redefine-syms` map: every name the objects define, the hooks and the wrapped calls.
fn rename_map(objects: &[PathBuf]) -> Result<String, String> {
    let mut defined: BTreeSet<String> = BTreeSet::new();
    let mut hooks: BTreeSet<String> = BTreeSet::new();
    for path in objects {
        let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let file = object::File::parse(&*data).map_err(|e| format!("{}: {e}", path.display()))?;
        for sym in file.symbols() {
            let Ok(name) = sym.name() else { continue };
            if name.is_empty() {
                continue;
            }
            if sym.is_undefined() {
                if let Some(rest) = name.strip_prefix("__tsan_") {
                    if !hook_supported(rest) {
                        return Err(format!(
                            "the instrumented code calls `{name}`, which the cpu race detector \
                             does not provide"
                        ));
                    }
                    hooks.insert(rest.to_string());
                }
            } else if sym.is_global() || sym.is_weak() {
                defined.insert(name.to_string());
            }
        }
    }
    let mut map = String::new();
    for name in &defined {
        map.push_str(&format!("{name} {PREFIX}{name}\n"));
    }
    for rest in &hooks {
        map.push_str(&format!("__tsan_{rest} rk_tsan_{rest}\n"));
    }
    for (from, to) in WRAPPED {
        map.push_str(&format!("{from} {to}\n"));
    }
    Ok(map)
}

/// The race entry of a kernel whose entry is `symbol`.
pub fn entry_symbol(symbol: &str) -> String {
    format!("{PREFIX}{symbol}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_the_runtime_defines() {
        assert!(hook_supported("read4"));
        assert!(hook_supported("unaligned_write16"));
        assert!(hook_supported("volatile_read1"));
        assert!(hook_supported("atomic32_fetch_add"));
        assert!(hook_supported("atomic128_compare_exchange_val"));
        assert!(hook_supported("read_range"));
        assert!(!hook_supported("read3"));
        assert!(!hook_supported("atomic32_fetch_min"));
        assert!(!hook_supported("mutex_lock"));
    }
}
