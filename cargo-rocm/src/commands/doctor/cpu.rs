//! Checks for the `cpu` backend: a host C++17 compiler (found as the `cc` crate finds it: `CXX`,
//! else `c++`) that compiles the kind of code the emulation header needs, and the cores it
//! runs on.

use std::path::PathBuf;

use rocm_kernels_core::Backend;
use rocm_toolkit::process::{probe, version_line, which};

use super::{BackendReport, Check, Context, Status};
use crate::fix;

/// Exercises what the emulation header relies on: C++17, atomics, threads, math.
const PROBE_SOURCE: &str = "\
#include <atomic>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>
int main() {
    std::atomic<std::uint32_t> n{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < 2; ++i) ts.emplace_back([&] { n.fetch_add(1); });
    for (auto& t : ts) t.join();
    if constexpr (sizeof(float) == 4) { return std::sqrt(4.0f) == 2.0f && n == 2 ? 0 : 1; }
}
";

pub fn check(ctx: &Context) -> BackendReport {
    let mut checks = Vec::new();
    let compiler_ok = compiler_check(&mut checks);
    if let Some(cpu) = ctx.detection.devices_of(Backend::Cpu).next() {
        let cores = cpu
            .compute_units
            .map_or("unknown".to_owned(), |n| n.to_string());
        checks.push(Check::new(
            "cores",
            Status::Info,
            format!(
                "{} logical cores usable ({}); wave sizes 32 and 64",
                cores, cpu.name
            ),
        ));
    }
    let summary = if compiler_ok {
        "cpu: ready: kernels build with the host compiler and run on this CPU".to_owned()
    } else {
        "cpu: cannot build kernels: no working C++17 compiler".to_owned()
    };
    BackendReport::new(Backend::Cpu, checks, compiler_ok, compiler_ok, summary)
}

/// The compiler the `cc` crate would use: `CXX` if set, else `c++` (then `g++`, `clang++`).
fn host_compiler() -> Option<PathBuf> {
    if let Some(cxx) = std::env::var_os("CXX").filter(|v| !v.is_empty()) {
        let cxx = PathBuf::from(cxx);
        // CXX may be a bare name or a path; either way, resolve what would run.
        return Some(which(&cxx.to_string_lossy()).unwrap_or(cxx));
    }
    ["c++", "g++", "clang++"].iter().find_map(|n| which(n))
}

fn compiler_check(checks: &mut Vec<Check>) -> bool {
    let fix = fix::install_or(
        &["g++"],
        "install a C++17 compiler (g++ or clang++) and put it on PATH",
    );
    let Some(cxx) = host_compiler() else {
        checks.push(
            Check::new(
                "C++ compiler",
                Status::Error,
                "no C++ compiler: CXX is unset and c++, g++, clang++ are not on PATH",
            )
            .fix(fix),
        );
        return false;
    };
    let version = version_line(&cxx).unwrap_or_else(|| "did not report a version".to_owned());
    let result = (|| -> Result<(), String> {
        let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
        let source = tmp.path().join("probe.cpp");
        std::fs::write(&source, PROBE_SOURCE).map_err(|e| e.to_string())?;
        let exe = tmp.path().join("probe");
        let (src, out) = (source.display().to_string(), exe.display().to_string());
        probe(&cxx, &["-std=c++17", "-O0", "-pthread", &src, "-o", &out])
            .map_err(|e| e.to_string())?;
        probe(&exe, &[])
            .map(|_| ())
            .map_err(|e| format!("the test program failed: {e}"))
    })();
    match result {
        Ok(()) => {
            checks.push(Check::ok(
                "C++ compiler",
                format!(
                    "{} ({version}) builds and runs C++17 with threads",
                    cxx.display()
                ),
            ));
            true
        }
        Err(e) => {
            checks.push(
                Check::new(
                    "C++ compiler",
                    Status::Error,
                    format!(
                        "{} ({version}) could not build a C++17 test program: {e}",
                        cxx.display()
                    ),
                )
                .fix(fix),
            );
            false
        }
    }
}
