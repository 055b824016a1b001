//! Exit codes: those of `cargo rocm` ([`RocmExitCode`], documented in `docs/exit-codes.md` and
//! at the end of `cargo rocm --help`) and those of a rocm-test harness binary as `cargo rocm`
//! reads them ([`HarnessExitCode`]). Scripts and CI can rely on both.

/// The exit codes of `cargo rocm`. A namespace of constants (as cargo-nextest's
/// `NextestExitCode`): `std::process::ExitCode::from(RocmExitCode::BUILD)`.
pub enum RocmExitCode {}

impl RocmExitCode {
    /// Everything asked for worked.
    pub const OK: u8 = 0;
    /// A check failed: a test trial failed, or `doctor` found a requested backend unusable.
    pub const FAILED: u8 = 1;
    /// The command line was wrong (unknown flag, bad value).
    pub const USAGE: u8 = 2;
    /// The environment is missing something: no toolchain, compiler, library or device for what
    /// was asked.
    pub const ENVIRONMENT: u8 = 3;
    /// Building the user's crate (cargo or a kernel compiler) failed.
    pub const BUILD: u8 = 4;
    /// An input file (manifest, pin file, code object, settings) was unreadable or malformed.
    pub const INPUT: u8 = 5;
    /// Something went wrong inside cargo-rocm itself (a bug: please report it).
    pub const INTERNAL: u8 = 101;

    /// The table printed at the end of `cargo rocm --help` (`docs/exit-codes.md` has a row for
    /// each code in it, a test checks).
    pub const HELP_TABLE: &'static str = "\
Exit codes:
  0    success
  1    a check failed (test trial, doctor check for a requested backend)
  2    usage error (bad flag or value)
  3    environment problem (missing toolchain, compiler, library or device)
  4    build failed (cargo or a kernel compiler)
  5    malformed or unreadable input file
  101  internal error (a bug in cargo-rocm)";
}

/// The exit codes of a rocm-test harness binary (`rocm_test::main`).
pub enum HarnessExitCode {}

impl HarnessExitCode {
    /// Every selected trial passed or was ignored; in tune mode, every tunable was tuned.
    pub const OK: u8 = 0;
    /// Tune mode: a tunable could not be tuned (the report says why).
    pub const TUNE_FAILED: u8 = 1;
    /// The harness could not start: a bad flag or option variable, an unreadable request, an
    /// events or report file it cannot write.
    pub const USAGE: u8 = 2;
    /// Tune mode: a GPU kernel ran past the time limit and the process had to end (the cache
    /// keeps what was measured; a rerun resumes).
    pub const TUNE_HANG: u8 = 3;
    /// A trial failed (libtest's code, `libtest_mimic::Conclusion::exit_code`).
    pub const TRIALS_FAILED: u8 = 101;
}
