//! The integration tests of `rocm-toolchains`, one binary (see `testkit`): each module below was a
//! test binary of its own.

mod common;
mod concurrent;
mod hostile_archives;
mod install_e2e;
mod resume;

fn main() -> std::process::ExitCode {
    testkit::main()
}
