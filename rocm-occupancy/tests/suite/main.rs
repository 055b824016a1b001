//! The integration tests of `rocm-occupancy`, one binary (see `testkit`): the model against
//! clang's own "Occupancy [waves/SIMD]" remark.

mod compiler_agreement;

fn main() -> std::process::ExitCode {
    testkit::main()
}
