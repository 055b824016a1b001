//! placeholder
fn main() -> std::process::ExitCode {
    testkit::main()
}
