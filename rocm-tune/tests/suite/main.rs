//! The integration tests of `rocm-tune`, one binary (see `testkit`): the append-only cache
//! (resume after a kill, concurrent appenders, merging), Kernel Tuner's cache format (byte-exact
//! round trip, open and torn files, replay, export), and the strategies on synthetic spaces.

mod jsonl_cache;
mod kt_format;
mod strategies;

fn main() -> std::process::ExitCode {
    testkit::main()
}
