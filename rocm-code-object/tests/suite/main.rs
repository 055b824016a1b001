//! The integration tests of `rocm-code-object`, one binary (see `testkit`): code objects written by
//! real compilers and committed fixtures.

mod code_object_compiler;
mod code_object_fixtures;

fn main() -> std::process::ExitCode {
    testkit::main()
}
