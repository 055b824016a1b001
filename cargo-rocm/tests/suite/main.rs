//! The integration tests of `cargo-rocm`, one binary (see `testkit`): each module below was a
//! test binary of its own.

mod bench_command;
mod build_command;
mod cli;
mod harness_common;
mod profile_command;
mod test_example;
mod test_llm_template;
mod test_partition;
mod test_planted;
mod test_races;
mod test_realworld;
mod test_tune;
mod toolchain_build;
mod toolchain_e2e;
mod toolchain_interrupt;
mod toolchain_system;

fn main() -> std::process::ExitCode {
    testkit::main()
}
