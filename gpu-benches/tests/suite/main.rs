//! The integration tests of `gpu-benches`, one binary (see `testkit`).

mod smoke;

fn main() -> std::process::ExitCode {
    testkit::main()
}
