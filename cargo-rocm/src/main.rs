//! `cargo-rocm`: a thin dispatcher. The work lives in `rocm-kernels` and `rocm-test`;
//! each subcommand is one module under `commands/`.

mod cargo_flags;
mod cli;
mod commands;
mod exit;
mod fix;
mod harness;
mod output;
mod selection;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::normalize_args(std::env::args_os());
    let cli = match cli::Cli::try_parse_from_args(args) {
        Ok(cli) => cli,
        Err(err) => {
            // clap prints help/version to stdout with exit 0, usage errors to stderr.
            let code = if err.use_stderr() {
                rocm_protocol::exit::RocmExitCode::USAGE
            } else {
                exit::OK
            };
            let _ = err.print();
            return ExitCode::from(code);
        }
    };
    let out = output::Output::new(&cli.global);
    match commands::run(cli, &out) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            let code = exit::code_for(&err);
            out.error(&err);
            ExitCode::from(code)
        }
    }
}
