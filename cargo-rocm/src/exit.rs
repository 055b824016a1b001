//! Exit codes, documented in `docs/exit-codes.md` and in `cargo rocm --help`. The codes are
//! defined once, with the protocol (`rocm_protocol::exit::RocmExitCode`); which failure gets
//! which code is decided in one place, [`CommandError::process_exit_code`].
//!
//! Commands return `anyhow::Result`, so that any step can add context ("while reading X"); the
//! failures a user can act on are [`CommandError`]s somewhere in that chain, and [`code_for`]
//! finds the first one. An error with no `CommandError` in it is a bug: [`RocmExitCode::INTERNAL`].

use std::path::PathBuf;
use std::process::ExitStatus;

use rocm_bench_history::HistoryError;
use rocm_profile::ProfileError;
use rocm_protocol::exit::RocmExitCode;
use rocm_protocol::tune::TuneFailure;
use rocm_toolkit::home::HomeError;

/// Everything asked for worked.
pub const OK: u8 = RocmExitCode::OK;

/// The table printed at the end of `--help`.
pub const HELP_TABLE: &str = RocmExitCode::HELP_TABLE;

/// A failure of a command that the user can act on, with what it concerns. Its message is what
/// `cargo rocm` prints after `error: `; its exit code is [`CommandError::process_exit_code`].
///
/// Errors of other crates are held whole where their kind decides the code (a toolchain, home,
/// history or profiler error); none is a `source`, so the message is printed once.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    // The command line asked for something that cannot be (`USAGE`).
    /// `--package` names a crate outside the workspace.
    #[error(
        "package `{package}` is not a member of this workspace (members: {})",
        members.join(", ")
    )]
    NotAMember {
        package: String,
        members: Vec<String>,
    },
    /// `--exclude` is neither a name nor a glob pattern.
    #[error("--exclude `{spec}` is not a package name or glob pattern: {reason}")]
    BadExclude {
        spec: String,
        reason: glob::PatternError,
    },
    /// `--exclude` matches no member.
    #[error(
        "--exclude `{spec}` matches no member of this workspace (members: {})",
        members.join(", ")
    )]
    ExcludeMatchesNothing { spec: String, members: Vec<String> },
    /// No `Cargo.toml` in the current folder or above it.
    #[error("could not find `Cargo.toml` in `{}` or any parent directory", dir.display())]
    NoManifest { dir: PathBuf },
    /// `bench --suite` names no known suite.
    #[error("unknown benchmark suite `{name}` (known: {})", known.join(", "))]
    UnknownSuite { name: String, known: Vec<String> },
    /// `bench show`/`compare` before any `cargo rocm bench`.
    #[error("no benchmark history at {}: run `cargo rocm bench` first", path.display())]
    NoHistory { path: PathBuf },
    /// A comparison with the run before one that has none before it (`None`: the latest run).
    #[error(
        "there is no run before {} to compare with",
        before.map_or_else(|| "the latest one".to_owned(), |id| format!("run {id}"))
    )]
    NoEarlierRun { before: Option<i64> },
    /// `toolchain install WHAT` where WHAT is nothing it knows.
    #[error(
        "`{what}` is not a version (7.0.0rc20250818), a channel (release, prerelease, \
         nightly), `system`, an archive file or a URL"
    )]
    NotAVersion { what: String },
    /// `cargo rocm profile` with nothing to run.
    #[error(
        "nothing to profile: name a target (--bench, --test, --example, --bin), give \
         a command after `--`, or read earlier output with --from"
    )]
    NothingToProfile,
    /// `cargo rocm new` into a folder that has files.
    #[error("destination `{}` already exists and is not empty", path.display())]
    DestinationNotEmpty { path: PathBuf },
    /// `cargo rocm new --path-deps DIR` where DIR is not a cargo-rocm checkout.
    #[error("--path-deps: {} has no rocm-kernels/ and rocm-test/ crates", dir.display())]
    NotACheckout { dir: PathBuf },
    /// Another value of an argument that cannot be used; the message says which and why.
    #[error("{0}")]
    BadArgument(String),

    // The environment lacks something (`ENVIRONMENT`).
    /// `--toolchain-path` is not a ROCm install.
    #[error(
        "{} is not a ROCm install: no HIP compiler, device libraries, libamdhip64 \
         or version file under it. Point --toolchain-path at the install prefix \
         (the folder holding bin/ and lib/, e.g. /opt/rocm-6.2.0)",
        path.display()
    )]
    NotAToolchain { path: PathBuf },
    /// `toolchain default` with none set.
    #[error("no default toolchain; set one with `cargo rocm toolchain default NAME`")]
    NoDefaultToolchain,
    /// cargo itself could not be started.
    #[error("cannot run cargo: {reason} (is it on PATH, or $CARGO set?)")]
    CargoNotRunnable { reason: std::io::Error },
    /// `bench --backend B` where B has no device.
    #[error(
        "backend `{backend}` has no device here: {why}; `cargo rocm detect` lists the devices \
         and `cargo rocm doctor --backend {backend}` says what is missing"
    )]
    NoDevice { backend: String, why: String },
    /// `bench --device` matches no device.
    #[error("no device here matches --device {wanted} (devices: {})", devices.join(", "))]
    NoDeviceMatches {
        wanted: String,
        devices: Vec<String>,
    },
    /// `bench --suite` outside a checkout that has the suite.
    #[error(
        "suite `{name}` is not in this workspace and this cargo-rocm was not built from \
         a checkout that has it; run from a cargo-rocm checkout \
         (`cargo rocm bench --suite {name} --manifest-path <checkout>/Cargo.toml`)"
    )]
    SuiteNotHere { name: String },
    /// An output file could not be written.
    #[error("cannot write {}: {reason}", path.display())]
    CannotWrite {
        path: PathBuf,
        reason: std::io::Error,
    },
    /// The benchmark report could not be written.
    #[error("{0}")]
    BenchReport(rocm_bench_history::report::ReportError),

    // Building the user's crate failed (`BUILD`).
    /// `cargo test --no-run` for a package's harnesses failed.
    #[error("building the tests of `{package}` failed (see cargo's messages above)")]
    TestsBuildFailed { package: String },
    /// A cargo build (`what`: which one) failed.
    #[error("{what} failed ({status}); cargo's errors are above")]
    BuildFailed { what: String, status: ExitStatus },

    // A check failed (`FAILED`).
    /// Test trials failed (`names`: which, where the command lists them).
    #[error(
        "{failed} of {total} trials failed{}",
        names.as_ref().map_or_else(String::new, |n| format!(": {}", n.join(", ")))
    )]
    TrialsFailed {
        failed: usize,
        total: usize,
        names: Option<Vec<String>>,
    },
    /// `cargo test` failed though no trial did.
    #[error(
        "`cargo test` for `{package}` exited with {status} although no trial failed: a \
         harness could not start or rejected its arguments (see its output above)"
    )]
    HarnessFailed { package: String, status: ExitStatus },
    /// `doctor`: a required backend cannot work.
    #[error(
        "required backend{} cannot work here: {} (run the `fix:` commands above)",
        if backends.len() == 1 { "" } else { "s" },
        backends.join(", ")
    )]
    BackendsUnusable { backends: Vec<String> },
    /// Bench binaries failed; what they measured is recorded.
    #[error(
        "{}; the {measured} result(s) measured are recorded in run {run_id}",
        failures.join("; ")
    )]
    BenchesFailed {
        failures: Vec<String>,
        measured: usize,
        run_id: i64,
    },
    /// `bench compare --fail-on-regression` found slower benchmarks.
    #[error("{slower} benchmark(s) got slower from run {base} to run {new}")]
    Regressions { slower: usize, base: i64, new: i64 },
    /// `tune --cmd-template`: the parameters span no valid configuration.
    #[error("the search space: {0}")]
    SearchSpace(String),
    /// Tuning failed for some kernels (one line each); the first failure decides the code.
    #[error("{}", tune_failures(.0))]
    TuneFailed(Vec<TuneFailure>),

    // An input was missing, unreadable or malformed (`INPUT`).
    /// `cargo metadata` refused the manifest.
    #[error("`cargo metadata` failed:\n{stderr}")]
    CargoMetadataFailed { stderr: String },
    /// A file could not be read.
    #[error("cannot read {}: {reason}", path.display())]
    CannotRead {
        path: PathBuf,
        reason: std::io::Error,
    },
    /// A file could not be read or parsed: "PATH: why".
    #[error("{}: {reason}", path.display())]
    BadFile { path: PathBuf, reason: String },
    /// A malformed input whose message names it (a build manifest, a tuning cache, wisdom).
    #[error("{0}")]
    BadInput(String),
    /// The selected packages have no rocm-test harness (the message says how to add one).
    #[error("{0}")]
    NoHarness(String),
    /// `toolchain install FILE.tar.gz` where the file is not there.
    #[error("{what}: no such archive file")]
    NoSuchArchive { what: String },
    /// `cargo rocm bench` in packages without benches.
    #[error(
        "no benches in {}: add a `[[bench]]` with `harness = false` that uses \
         `rocm_bench::DeviceGroup` (`cargo rocm new` writes one), or run a suite \
         (`--suite gpu-benches`)",
        packages.join(", ")
    )]
    NoBenches { packages: Vec<String> },
    /// cargo built no bench binary.
    #[error("cargo built no bench binary")]
    NoBenchBinary,
    /// cargo built no executable for the target to profile.
    #[error("cargo built no executable for the {kind} `{name}`")]
    NoExecutable { kind: String, name: String },
    /// `test merge DIR` where DIR has no results file.
    #[error(
        "{} holds neither events.jsonl nor junit.xml: name the shard's results \
         file instead",
        dir.display()
    )]
    NoResultsFile { dir: PathBuf },
    /// `tune merge` given something that is not a folder.
    #[error(
        "{} is not a folder: name each job's tune folder (`<target-dir>/rocm/tune`)",
        path.display()
    )]
    NotATuneFolder { path: PathBuf },
    /// A `results.json` that is not a tuning report.
    #[error("{} is not a tuning report: {reason}", path.display())]
    NotATuningReport { path: PathBuf, reason: String },
    /// `tune merge` found no caches in the folders given.
    #[error(
        "no tuning caches under {}: name the jobs' tune folders (`<target-dir>/rocm/tune`)",
        dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NoTuningCaches { dirs: Vec<PathBuf> },
    /// Tuning caches that cannot be merged.
    #[error("cannot merge {}: {reason}", path.display())]
    CannotMerge { path: PathBuf, reason: String },
    /// A tuning cache made for other parameters.
    #[error("{reason} (another command with other parameters? use --fresh)")]
    StaleTuneCache { reason: String },
    /// `cargo rocm new` made the crate but could not add it to the enclosing workspace.
    #[error(
        "created `{name}` at {}, but {why}: add \"{member}\" to `members` (or to `exclude`) \
         under [workspace] in {} before building it",
        crate_dir.display(),
        manifest.display()
    )]
    NotJoined {
        name: String,
        crate_dir: PathBuf,
        why: String,
        member: String,
        manifest: PathBuf,
    },

    // Something went wrong inside cargo-rocm or a harness it ran (`INTERNAL`).
    /// `cargo metadata`'s output could not be read.
    #[error("could not read `cargo metadata` output: {0}")]
    CargoMetadataUnreadable(cargo_metadata::Error),
    /// The harnesses' events file is malformed.
    #[error("{} is malformed: {reason}", path.display())]
    MalformedEvents { path: PathBuf, reason: String },
    /// A harness's tuning report is malformed.
    #[error("the harness's tuning report is malformed: {0}")]
    MalformedTuneReport(String),
    /// Any other failure inside cargo-rocm (the message says which).
    #[error("{0}")]
    Internal(String),

    // Errors of other crates; their kind decides the code.
    /// A toolchain install, link or lookup failed.
    #[error("{0}")]
    Toolchain(rocm_toolchains::Error),
    /// The toolchain home (settings, pins, names) failed.
    #[error("{0}")]
    Home(HomeError),
    /// The benchmark history failed.
    #[error("{0}")]
    History(HistoryError),
    /// A profiler run failed.
    #[error("{0}")]
    Profile(ProfileError),
}

fn tune_failures(failures: &[TuneFailure]) -> String {
    failures
        .iter()
        .map(|e| {
            if e.kernel.is_empty() {
                e.message.clone()
            } else {
                format!("{}: {}", e.kernel, e.message)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl CommandError {
    /// The exit code of this failure: the one place that decides it (`docs/exit-codes.md`).
    pub fn process_exit_code(&self) -> u8 {
        use CommandError as E;
        match self {
            E::NotAMember { .. }
            | E::BadExclude { .. }
            | E::ExcludeMatchesNothing { .. }
            | E::NoManifest { .. }
            | E::UnknownSuite { .. }
            | E::NoHistory { .. }
            | E::NoEarlierRun { .. }
            | E::NotAVersion { .. }
            | E::NothingToProfile
            | E::DestinationNotEmpty { .. }
            | E::NotACheckout { .. }
            | E::BadArgument(_) => RocmExitCode::USAGE,

            E::NotAToolchain { .. }
            | E::NoDefaultToolchain
            | E::CargoNotRunnable { .. }
            | E::NoDevice { .. }
            | E::NoDeviceMatches { .. }
            | E::SuiteNotHere { .. }
            | E::CannotWrite { .. }
            | E::BenchReport(_) => RocmExitCode::ENVIRONMENT,

            E::TestsBuildFailed { .. } | E::BuildFailed { .. } => RocmExitCode::BUILD,

            E::TrialsFailed { .. }
            | E::HarnessFailed { .. }
            | E::BackendsUnusable { .. }
            | E::BenchesFailed { .. }
            | E::Regressions { .. }
            | E::SearchSpace(_) => RocmExitCode::FAILED,
            E::TuneFailed(failures) => match failures.first() {
                Some(e) if e.message.starts_with("cannot tune on") => RocmExitCode::ENVIRONMENT,
                Some(e)
                    if e.message.contains("declares no tunable")
                        || e.message.contains("no tunable matches") =>
                {
                    RocmExitCode::INPUT
                }
                _ => RocmExitCode::FAILED,
            },

            E::CargoMetadataFailed { .. }
            | E::CannotRead { .. }
            | E::BadFile { .. }
            | E::BadInput(_)
            | E::NoHarness(_)
            | E::NoSuchArchive { .. }
            | E::NoBenches { .. }
            | E::NoBenchBinary
            | E::NoExecutable { .. }
            | E::NoResultsFile { .. }
            | E::NotATuneFolder { .. }
            | E::NotATuningReport { .. }
            | E::NoTuningCaches { .. }
            | E::CannotMerge { .. }
            | E::StaleTuneCache { .. }
            | E::NotJoined { .. } => RocmExitCode::INPUT,

            E::CargoMetadataUnreadable(_)
            | E::MalformedEvents { .. }
            | E::MalformedTuneReport(_)
            | E::Internal(_) => RocmExitCode::INTERNAL,

            // What the user must fix decides it.
            E::Toolchain(e) => {
                use rocm_toolchains::Error as T;
                match e {
                    T::Home(h) => home_code(h),
                    T::BadChecksum { .. } => RocmExitCode::USAGE,
                    T::UnsafeArchive { .. }
                    | T::BadArchive { .. }
                    | T::NotAToolchainArchive { .. }
                    | T::ChecksumMismatch { .. } => RocmExitCode::INPUT,
                    _ => RocmExitCode::ENVIRONMENT,
                }
            }
            E::Home(h) => home_code(h),
            // A damaged or foreign file is an input error, an unknown run a usage error.
            E::History(e) => {
                use HistoryError as H;
                match e {
                    H::NotADatabase { .. }
                    | H::Truncated { .. }
                    | H::Corrupt { .. }
                    | H::ForeignDatabase { .. }
                    | H::NewerSchema { .. }
                    | H::BadRow { .. } => RocmExitCode::INPUT,
                    H::RunNotFound { .. }
                    | H::AmbiguousCommit { .. }
                    | H::BaselineNotFound { .. }
                    | H::InvalidInput { .. } => RocmExitCode::USAGE,
                    H::Busy { .. } | H::Io { .. } | H::NoWal { .. } => RocmExitCode::ENVIRONMENT,
                    _ => RocmExitCode::INTERNAL,
                }
            }
            E::Profile(e) => match e {
                ProfileError::ToolMissing { .. } | ProfileError::ToolTooOld { .. } => {
                    RocmExitCode::ENVIRONMENT
                }
                ProfileError::Failed { .. } | ProfileError::NoOutput { .. } => RocmExitCode::FAILED,
                ProfileError::Io { .. } | ProfileError::Report(_) | ProfileError::Stats { .. } => {
                    RocmExitCode::INTERNAL
                }
                _ => RocmExitCode::INPUT,
            },
        }
    }
}

fn home_code(e: &HomeError) -> u8 {
    use HomeError as H;
    match e {
        H::BadSettings { .. } | H::BadPinFile { .. } | H::BadMetadata { .. } => RocmExitCode::INPUT,
        H::InvalidName { .. } => RocmExitCode::USAGE,
        _ => RocmExitCode::ENVIRONMENT,
    }
}

/// Map an error chain to an exit code: the first [`CommandError`] in the chain decides it;
/// none is a bug ([`RocmExitCode::INTERNAL`]).
pub fn code_for(err: &anyhow::Error) -> u8 {
    err.chain()
        .find_map(|e| e.downcast_ref::<CommandError>())
        .map_or(RocmExitCode::INTERNAL, CommandError::process_exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_errors_keep_their_code_through_context() {
        let err =
            anyhow::Error::new(CommandError::NoDefaultToolchain).context("while running doctor");
        assert_eq!(code_for(&err), RocmExitCode::ENVIRONMENT);
        assert_eq!(code_for(&anyhow::anyhow!("plain")), RocmExitCode::INTERNAL);
    }

    #[test]
    fn messages_read_as_before() {
        let e = CommandError::TrialsFailed {
            failed: 1,
            total: 3,
            names: None,
        };
        assert_eq!(e.to_string(), "1 of 3 trials failed");
        let e = CommandError::TrialsFailed {
            failed: 1,
            total: 3,
            names: Some(vec!["a".into()]),
        };
        assert_eq!(e.to_string(), "1 of 3 trials failed: a");
        assert_eq!(
            CommandError::NoEarlierRun { before: None }.to_string(),
            "there is no run before the latest one to compare with"
        );
        assert_eq!(
            CommandError::NoEarlierRun { before: Some(4) }.to_string(),
            "there is no run before run 4 to compare with"
        );
        assert_eq!(
            CommandError::NotAVersion { what: "x".into() }.to_string(),
            "`x` is not a version (7.0.0rc20250818), a channel (release, prerelease, nightly), \
             `system`, an archive file or a URL"
        );
        let one = CommandError::BackendsUnusable {
            backends: vec!["cpu".into()],
        };
        assert_eq!(
            one.to_string(),
            "required backend cannot work here: cpu (run the `fix:` commands above)"
        );
    }
}
