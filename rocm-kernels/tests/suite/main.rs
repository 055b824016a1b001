//! The integration tests of `rocm-kernels`, one binary (see `testkit`): each module below was a
//! test binary of its own.

mod amd_abi;
mod amd_absent;
mod amd_bundle;
mod amd_common;
mod amd_fake_hip;
mod amd_no_device;
mod build_amd;
mod build_api;
mod code_object_compiler;
mod code_object_fixtures;
mod cpu_bugs;
mod cpu_corpus;
mod cpu_regions;
mod cpu_runtime;
mod detect_fixtures;
mod fixture;
mod nvidia_backend;
mod toolchain_fixtures;

fn main() -> std::process::ExitCode {
    testkit::main()
}
