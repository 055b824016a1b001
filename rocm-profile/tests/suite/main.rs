//! The integration tests of `rocm-profile`, one binary (see `testkit`): the profiler readers on
//! output built to the tools' documented schemas, the runners against stand-in profilers, the
//! report (statistics, occupancy, throughput) and its published JSON schema.

mod fixtures;
mod readers;
mod report;
mod runners;

fn main() -> std::process::ExitCode {
    testkit::main()
}
