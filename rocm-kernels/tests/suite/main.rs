//! The integration tests of `rocm-kernels`, one binary (see `testkit`): the runtime's backends
//! (cpu on the kernel corpora, amd against a stand-in libamdhip64, nvidia on a GPU).

mod amd_abi;
mod amd_absent;
mod amd_bundle;
mod amd_common;
mod amd_fake_hip;
mod amd_hiprtc;
mod amd_no_device;
mod cpu_bugs;
mod cpu_corpus;
mod cpu_fidelity;
mod cpu_regions;
mod cpu_runtime;
mod nvidia_backend;
mod nvidia_rtc_parity;

fn main() -> std::process::ExitCode {
    testkit::main()
}
