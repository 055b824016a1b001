//! The command line, cargo-style: `cargo rocm <sub>` (cargo runs `cargo-rocm rocm <sub>`),
//! `cargo-rocm <sub>` directly, and `cargo rocm +TOOLCHAIN <sub>` like rustup.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, ValueEnum};

use crate::commands;

/// `--help`'s closing text: the exit-code table lives in `exit.rs` so it has one source.
fn after_help() -> String {
    format!(
        "Run `cargo rocm <COMMAND> --help` for a command's options.\n\n{}\n\n\
         Docs: docs/exit-codes.md, docs/architecture.md",
        crate::exit::HELP_TABLE
    )
}

#[derive(Debug, Parser)]
#[command(
    name = "cargo rocm",
    bin_name = "cargo rocm",
    version,
    about = "Build and test HIP kernels in Rust crates, and manage ROCm toolchains",
    long_about = "Build and test HIP kernels in Rust crates, and manage ROCm toolchains.\n\n\
        Kernels are tested against Rust references on every backend that can run here: \
        amd (ROCm/HIP), nvidia (CUDA) and cpu (always available).",
    after_help = after_help(),
    styles = cargo_styles(),
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: commands::Command,
}

/// Options every subcommand accepts, named and behaving as cargo's do.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Use verbose output (-vv very verbose)
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    /// Do not print cargo-rocm log messages
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Coloring: auto, always, never [env: CARGO_TERM_COLOR]
    #[arg(long, value_name = "WHEN", global = true)]
    pub color: Option<ColorChoice>,

    /// Path to Cargo.toml
    #[arg(long, value_name = "PATH", global = true)]
    pub manifest_path: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// `--message-format` for commands whose output is data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum MessageFormat {
    /// Tables and text for people
    #[default]
    Human,
    /// One JSON document (or one JSON object per line for streams) for machines
    Json,
}

#[derive(Debug, Clone, Copy, Default, Args)]
pub struct FormatArgs {
    /// Output format
    #[arg(long, value_enum, value_name = "FMT", default_value_t = MessageFormat::Human)]
    pub message_format: MessageFormat,
}

impl FormatArgs {
    pub fn json(&self) -> bool {
        self.message_format == MessageFormat::Json
    }
}

impl Cli {
    pub fn try_parse_from_args(args: Vec<OsString>) -> Result<Self, clap::Error> {
        Cli::try_parse_from(args)
    }
}

/// Drop the `rocm` that cargo passes as the first argument, and turn a leading `+NAME`
/// into `CARGO_ROCM_TOOLCHAIN=NAME` for this process (rustup's `cargo +nightly` convention).
pub fn normalize_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    if args.get(1).is_some_and(|a| a == "rocm") {
        args.remove(1);
    }
    if let Some(name) = args
        .get(1)
        .and_then(|a| a.to_str())
        .and_then(|a| a.strip_prefix('+'))
        .map(str::to_owned)
    {
        // Safe: single-threaded at this point, before any other thread starts.
        std::env::set_var("CARGO_ROCM_TOOLCHAIN", name);
        args.remove(1);
    }
    args
}

fn cargo_styles() -> clap::builder::Styles {
    use anstyle::{AnsiColor, Effects};
    clap::builder::Styles::styled()
        .header(AnsiColor::Green.on_default().effects(Effects::BOLD))
        .usage(AnsiColor::Green.on_default().effects(Effects::BOLD))
        .literal(AnsiColor::Cyan.on_default().effects(Effects::BOLD))
        .placeholder(AnsiColor::Cyan.on_default())
        .error(AnsiColor::Red.on_default().effects(Effects::BOLD))
        .valid(AnsiColor::Cyan.on_default().effects(Effects::BOLD))
        .invalid(AnsiColor::Yellow.on_default().effects(Effects::BOLD))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn cargo_style_invocation_drops_rocm() {
        assert_eq!(
            normalize_args(os(&["cargo-rocm", "rocm", "detect"])),
            os(&["cargo-rocm", "detect"])
        );
        assert_eq!(
            normalize_args(os(&["cargo-rocm", "detect"])),
            os(&["cargo-rocm", "detect"])
        );
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
