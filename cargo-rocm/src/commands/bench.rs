//! `cargo rocm bench`: run the selected packages' benchmarks (or a suite such as gpu-benches)
//! on the devices asked for, record every result in the history database as it arrives
//! (`<target-dir>/rocm/bench/history.sqlite`), and draw the report
//! (`<target-dir>/rocm/bench/report/index.html`). Subcommands read the history: `list`,
//! `compare`, `baseline`, `export`, `report`.
//!
//! Bench binaries are built with `cargo bench --no-run` and run one by one, so a crash is told
//! apart from a build failure and named. They report each finished benchmark through the file
//! `ROCM_BENCH_EVENTS` names (`rocm_protocol::bench`); this command polls it and commits each
//! result in its own transaction, so a crash or a kill keeps everything measured before it.

mod machine;
mod run;
mod show;

use std::path::PathBuf;

use rocm_bench_history::history::RunSelector;
use rocm_kernels_core::Backend;

use crate::cargo_flags::{BenchProfile, CargoFlags};
use crate::cli::{FormatArgs, GlobalArgs, MessageFormat};
use crate::exit::CommandError;
use crate::output::Output;

/// The suites `--suite` knows: name, and the package that holds it.
pub const SUITES: &[(&str, &str)] = &[("gpu-benches", "gpu-benches")];

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  cargo rocm bench                            run this package's benches on every device, record them
  cargo rocm bench --backend cpu -- saxpy     only cpu, only benchmarks matching `saxpy`
  cargo rocm bench --suite gpu-benches        the gpu-benches microbenchmarks (small sizes on cpu)
  cargo rocm bench list                       the recorded runs
  cargo rocm bench compare                    the latest run against the one before it
  cargo rocm bench compare main latest        the latest run against the baseline `main`
  cargo rocm bench baseline save main         name the latest run `main`
  cargo rocm bench export --format csv -o results.csv

Runs are named by id (`12`), commit prefix (`3f2a9c1`), baseline name, `latest` or `previous`.

Exit codes: 0 success, 1 a bench binary crashed (what it measured before is kept) or `compare
--fail-on-regression` found a slower benchmark, 2 usage error (unknown suite, backend or run),
3 a backend asked for has no device here, 4 the benches did not build, 5 the history file is
damaged or not a history.")]
pub struct BenchArgs {
    #[command(subcommand)]
    pub action: Option<Action>,

    #[command(flatten)]
    pub run: RunArgs,

    /// History database (default: <target-dir>/rocm/bench/history.sqlite)
    #[arg(long, value_name = "PATH", global = true)]
    pub history: Option<PathBuf>,

    /// Output format (also after a subcommand)
    #[arg(long, value_enum, value_name = "FMT", default_value_t = MessageFormat::Human, global = true)]
    pub message_format: MessageFormat,
}

#[derive(Debug, Default, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub cargo: CargoFlags<BenchProfile>,

    /// Only this bench target (repeatable)
    #[arg(long = "bench", value_name = "NAME")]
    pub bench: Vec<String>,

    /// Run a benchmark suite instead of the packages' benches: gpu-benches
    #[arg(long, value_name = "NAME", conflicts_with_all = ["package", "workspace", "bench"])]
    pub suite: Option<String>,

    /// Only benchmark on these backends: cpu, amd, nvidia (repeatable or comma separated)
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub backend: Vec<Backend>,

    /// Only devices whose place (`nvidia/sm_90`, `cpu/w64`) or name contains this (repeatable)
    #[arg(long, value_name = "WORD", value_delimiter = ',')]
    pub device: Vec<String>,

    /// Samples per benchmark (criterion's sample size, at least 10; suites: repetitions)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(10..))]
    pub samples: Option<u64>,

    /// Criterion warm-up time per benchmark, in milliseconds
    #[arg(long, value_name = "MS")]
    pub warm_up_ms: Option<u64>,

    /// Criterion measurement time per benchmark, in milliseconds
    #[arg(long, value_name = "MS")]
    pub measurement_ms: Option<u64>,

    /// Suites: the small (smoke-test) sizes even on a GPU
    #[arg(long)]
    pub small: bool,

    /// Do not write the HTML report after the run
    #[arg(long)]
    pub no_report: bool,

    /// Arguments for the bench binaries (criterion's filters and flags), after `--`
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// List the recorded runs, newest first
    List,
    /// Show the results of one run (default: the latest)
    Show {
        /// The run: id, commit prefix, baseline name, `latest`, `previous`
        #[arg(value_name = "RUN", default_value = "latest")]
        run: String,
    },
    /// Compare two runs benchmark by benchmark: faster, slower or no change
    Compare(CompareArgs),
    /// Save or list named baselines
    Baseline {
        #[command(subcommand)]
        action: BaselineAction,
    },
    /// Write the results as CSV or JSON
    Export {
        /// csv or json
        #[arg(long, value_name = "FMT", default_value = "csv", value_parser = ["csv", "json"])]
        format: String,
        /// Only this run (default: every run)
        #[arg(long, value_name = "RUN")]
        run: Option<String>,
        /// Write here instead of stdout
        #[arg(short, long, value_name = "PATH")]
        output: Option<PathBuf>,
    },
    /// Draw the HTML report and SVG plots from the history again
    Report,
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The run compared against (default: `previous`, the run before NEW)
    #[arg(value_name = "BASE")]
    pub base: Option<String>,
    /// The run compared (default: `latest`)
    #[arg(value_name = "NEW")]
    pub new: Option<String>,
    /// Changes of the median within this band are "no change" (percent; default 2)
    #[arg(long, value_name = "PERCENT")]
    pub threshold: Option<f64>,
    /// Exit 1 when a benchmark got slower
    #[arg(long)]
    pub fail_on_regression: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum BaselineAction {
    /// Name a run (default: the latest) so that `compare NAME` finds it
    Save {
        name: String,
        #[arg(value_name = "RUN", default_value = "latest")]
        run: String,
    },
    /// List the baselines
    List,
}

pub fn run(global: &GlobalArgs, args: BenchArgs, out: &Output) -> anyhow::Result<u8> {
    let format = FormatArgs {
        message_format: args.message_format,
    };
    match args.action {
        None => run::run(global, &args.run, args.history.as_deref(), format, out),
        Some(action) => show::run(
            global,
            action,
            &args.run,
            args.history.as_deref(),
            format,
            out,
        ),
    }
}

/// A run named on the command line: an id, a commit prefix (4+ hex digits), `latest`,
/// `previous` (the run before the latest), or a baseline name.
pub(crate) enum RunName {
    Selector(RunSelector),
    Previous,
}

pub(crate) fn parse_run_name(text: &str, baselines: &[String]) -> RunName {
    let t = text.trim();
    if t == "latest" {
        return RunName::Selector(RunSelector::Latest);
    }
    if t == "previous" {
        return RunName::Previous;
    }
    if let Some(name) = t.strip_prefix("baseline:") {
        return RunName::Selector(RunSelector::Baseline(name.to_owned()));
    }
    if baselines.iter().any(|b| b == t) {
        return RunName::Selector(RunSelector::Baseline(t.to_owned()));
    }
    // Up to 6 decimal digits is a run id; a commit prefix is usually 7+ and has letters.
    if let (true, Ok(id)) = (t.len() < 7, t.parse::<i64>()) {
        return RunName::Selector(RunSelector::Id(id));
    }
    if t.len() >= 4 && t.chars().all(|c| c.is_ascii_hexdigit()) {
        return RunName::Selector(RunSelector::Commit(t.to_owned()));
    }
    RunName::Selector(RunSelector::Baseline(t.to_owned()))
}

/// A history error; its kind decides the exit code ([`CommandError::process_exit_code`]: a
/// damaged or foreign file is 5, an unknown run 2).
pub(crate) fn history_error(e: rocm_bench_history::HistoryError) -> anyhow::Error {
    CommandError::History(e).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(t: &str) -> RunSelector {
        match parse_run_name(t, &["main".to_owned()]) {
            RunName::Selector(s) => s,
            RunName::Previous => panic!("previous"),
        }
    }

    #[test]
    fn run_names() {
        assert_eq!(sel("latest"), RunSelector::Latest);
        assert_eq!(sel("12"), RunSelector::Id(12));
        assert_eq!(sel("1234"), RunSelector::Id(1234));
        assert_eq!(sel("3f2a9c1"), RunSelector::Commit("3f2a9c1".into()));
        assert_eq!(sel("main"), RunSelector::Baseline("main".into()));
        assert_eq!(sel("baseline:1234"), RunSelector::Baseline("1234".into()));
        assert!(matches!(parse_run_name("previous", &[]), RunName::Previous));
    }
}
