//! What every reader produces: one [`Dispatch`] per profiled kernel launch, whatever tool measured
//! it, and the kernel names all tools are brought to (the runtime's one spelling: `saxpy`,
//! `scale<float>`).

use std::collections::BTreeMap;

use rocm_kernels_core::Backend;
use serde::Serialize;

/// One profiled kernel launch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dispatch {
    /// The kernel, in the runtime's spelling (see [`kernel_name`]).
    pub kernel: String,
    /// How long the kernel ran, in nanoseconds.
    pub duration_ns: f64,
    /// When it started, in the tool's clock (nanoseconds), where the tool says.
    pub start_ns: Option<u64>,
    /// Blocks (workgroups) in the grid, where the tool says.
    pub grid: Option<[u64; 3]>,
    /// Threads (work-items) in a block, where the tool says.
    pub block: Option<[u32; 3]>,
    /// LDS / shared memory per block the dispatch was given (static and dynamic), bytes.
    pub shared_bytes: Option<u32>,
    /// Hardware counters and metrics of this dispatch, by the tool's name, in base units.
    pub counters: BTreeMap<String, f64>,
}

impl Collected {
    /// Nothing collected yet, from `tool` reading `source`.
    pub fn new(tool: &str, source: impl Into<String>, backend: Backend) -> Collected {
        Collected {
            tool: tool.to_owned(),
            source: source.into(),
            backend,
            device: None,
            arch: None,
            dispatches: Vec::new(),
            notes: Vec::new(),
        }
    }
}

impl Dispatch {
    /// A dispatch with only a name and a duration.
    pub fn new(kernel: impl Into<String>, duration_ns: f64) -> Dispatch {
        Dispatch {
            kernel: kernel.into(),
            duration_ns,
            start_ns: None,
            grid: None,
            block: None,
            shared_bytes: None,
            counters: BTreeMap::new(),
        }
    }
}

/// What one tool measured in one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Collected {
    /// The tool: `rocprofv3`, `ncu`, `rocm-kernels launch log`.
    pub tool: String,
    /// What was read: `rocpd database, schema 3`, `kernel_trace.csv`, `ncu CSV`.
    pub source: String,
    /// The backend the dispatches ran on.
    pub backend: Backend,
    /// The device, for people, where the tool says (`AMD Instinct MI300X`).
    pub device: Option<String>,
    /// The device's architecture, where the tool says (`gfx942`, `sm_90`).
    pub arch: Option<String>,
    /// Every dispatch, in the order the tool listed them.
    pub dispatches: Vec<Dispatch>,
    /// Statements of what is missing or was skipped (a partial result says so here).
    pub notes: Vec<String>,
}

/// The runtime's spelling of a kernel name as a profiler prints it: a mangled symbol
/// (`_Z5saxpyifPKfPf`, with `--mangled-kernels` or ncu's `--print-kernel-base mangled`), a
/// demangled signature (`void scale<float>(float*, int)`), a bare name, or any of them with a
/// `.kd` suffix. Return types, parameter lists and spaces inside template brackets go, so every
/// tool's name for a kernel meets the launch log's and the code object's.
pub fn kernel_name(printed: &str) -> String {
    let s = printed.trim();
    if s.starts_with("_Z") || s.ends_with(".kd") {
        return rocm_code_object::symbols::kernel_name(s);
    }
    let mut s = s;
    // Drop a balanced trailing parameter list.
    if s.ends_with(')') {
        let mut depth = 0i32;
        for (i, c) in s.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 {
                        s = s[..i].trim_end();
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    // Drop a return type: the last space outside template brackets splits it off.
    let mut depth = 0i32;
    let mut cut = None;
    for (i, c) in s.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ' ' if depth == 0 => cut = Some(i),
            _ => {}
        }
    }
    if let Some(i) = cut {
        s = &s[i + 1..];
    }
    rocm_kernels_core::library::canonical_kernel_name(s)
}

#[cfg(test)]
mod tests {
    use super::kernel_name;

    #[test]
    fn every_tool_spelling_meets_the_runtime_name() {
        assert_eq!(kernel_name("_Z5saxpyifPKfPf"), "saxpy");
        assert_eq!(kernel_name("saxpy"), "saxpy");
        assert_eq!(
            kernel_name("saxpy(int, float, float const*, float*)"),
            "saxpy"
        );
        assert_eq!(
            kernel_name("void scale<float>(float*, int)"),
            "scale<float>"
        );
        assert_eq!(
            kernel_name("void scale<float >(float*, int)"),
            "scale<float>"
        );
        assert_eq!(kernel_name("block_sum.kd"), "block_sum");
        assert_eq!(kernel_name("  ns::reduce<256>  "), "ns::reduce<256>");
        assert_eq!(kernel_name("void (anonymous namespace)::k(int)"), "k");
    }
}
