//! The integration tests of `rocm-bench`, one binary (see `testkit`).

mod timing;

fn main() -> std::process::ExitCode {
    testkit::main()
}
