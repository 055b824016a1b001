//! The integration tests of `rocm-toolkit`, one binary (see `testkit`): toolchain discovery and device
//! detection on fixture folders.

mod detect_fixtures;
mod toolchain_fixtures;

fn main() -> std::process::ExitCode {
    testkit::main()
}
