//! The integration tests of `rocm-kernels-build`, one binary (see `testkit`): real crates built by cargo with `Build`
//! in their build scripts (AMD code objects, the cache, errors, compiler choice, the cpu build's
//! per-kernel fallback).

mod build_amd;
mod build_api;
mod cpu_build;
mod fixture;

fn main() -> std::process::ExitCode {
    testkit::main()
}
