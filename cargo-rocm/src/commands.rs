//! One module per subcommand. Each exposes an `Args` struct and `run(&GlobalArgs, Args, &Output)`
//! returning the process exit code (errors map through `exit::code_for`).

use clap::Subcommand;

use crate::cli::Cli;
use crate::output::Output;

pub mod bench;
pub mod build;
pub mod detect;
pub mod doctor;
pub mod env;
pub mod new;
pub mod profile;
pub mod test;
pub mod toolchain;
pub mod tune;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build the crate, then show each kernel's registers, LDS, scratch and spills per target
    Build(build::BuildArgs),
    /// List the compute devices of this machine (AMD and NVIDIA GPUs, the CPU backend)
    Detect(detect::DetectArgs),
    /// Check the toolchains and libraries each backend needs, and say how to fix what is missing
    Doctor(doctor::DoctorArgs),
    /// Print the environment for the selected ROCm toolchain (sh, fish or JSON)
    Env(env::EnvArgs),
    /// Install, list, link, pin and remove ROCm toolchains (like rustup for Rust)
    Toolchain(toolchain::ToolchainArgs),
    /// Run every kernel's checks against its Rust reference on every backend that can run here
    Test(test::TestArgs),
    /// Benchmark kernels on every device by device time, keep every result, compare runs, plot
    Bench(bench::BenchArgs),
    /// Create a crate with HIP kernels, their Rust references, a test harness and a benchmark
    New(new::NewArgs),
    /// Search kernels' launch and compile-time parameters, verifying every candidate, and keep
    /// the best per device and problem size
    Tune(Box<tune::TuneArgs>),
    /// Run a bench, test, example or command under the backend's profiler and show each kernel's
    /// times, stability, registers, occupancy and throughput
    Profile(Box<profile::ProfileArgs>),
}

pub fn run(cli: Cli, out: &Output) -> anyhow::Result<u8> {
    let global = cli.global;
    match cli.command {
        Command::Build(args) => build::run(&global, args, out),
        Command::Detect(args) => detect::run(&global, args, out),
        Command::Doctor(args) => doctor::run(&global, args, out),
        Command::Env(args) => env::run(&global, args, out),
        Command::Toolchain(args) => toolchain::run(&global, args, out),
        Command::Test(args) => test::run(&global, args, out),
        Command::New(args) => new::run(&global, args, out),
        Command::Tune(args) => tune::run(&global, *args, out),
        Command::Profile(args) => profile::run(&global, *args, out),
        Command::Bench(args) => bench::run(&global, args, out),
    }
}
