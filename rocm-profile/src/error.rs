//! What can go wrong profiling: every bad input (a workload that fails, a profiler that is
//! missing, crashes or writes nothing, output of an unknown schema, a counter the GPU lacks) is
//! one of these, with what to do; none is a panic.

use std::path::PathBuf;

/// An error of `rocm-profile`.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// A file or folder could not be read, created or written.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The profiler is not installed (or not on `PATH`).
    #[error("`{tool}` was not found on PATH: {install}")]
    ToolMissing {
        /// The program asked for (`rocprofv3`, `ncu`, or a path).
        tool: String,
        /// How to install it.
        install: String,
    },
    /// The profiler runs but lacks what is needed.
    #[error("`{tool}` is too old: {why}; {install}")]
    ToolTooOld {
        /// The program found.
        tool: String,
        /// What it lacks.
        why: String,
        /// How to install a newer one.
        install: String,
    },
    /// The profiler (or the workload under it) exited with an error.
    #[error("{what} exited with {status}{}", tail_of(.output))]
    Failed {
        /// The profiler or the workload, as a command line.
        what: String,
        /// `exit status 3`, `signal 11 (SIGSEGV)`.
        status: String,
        /// The last lines it printed.
        output: String,
    },
    /// The profiler finished but wrote nothing this reader can use.
    #[error("{tool} wrote no {what} under {}: the workload launched no kernel, or the profiler could not attach to it (run it with -v to see its output)", .dir.display())]
    NoOutput {
        /// The profiler.
        tool: String,
        /// What was looked for (`kernel rows`, `rocpd database (*.db) or kernel_trace.csv`).
        what: String,
        /// Where it was looked for.
        dir: PathBuf,
    },
    /// A file is not what it should be.
    #[error("{}: {message}", .path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A CSV file lacks a column this reader needs.
    #[error("{}: no column {wanted} (it has {found}); this file was not written by a rocprofv3 or ncu this cargo-rocm reads", .path.display())]
    MissingColumn {
        /// The CSV file.
        path: PathBuf,
        /// The column (or its alternative spellings) that is needed.
        wanted: String,
        /// The columns the file has.
        found: String,
    },
    /// A rocpd database of a schema version this reader does not know.
    #[error("{}: rocpd schema version {found}, but this cargo-rocm reads schema major version(s) {supported}; convert the database with `rocpd convert -f csv -i {}` and profile from the CSV files (`--from DIR`), or update cargo-rocm", .path.display(), .path.display())]
    UnknownSchemaVersion {
        /// The database.
        path: PathBuf,
        /// The version it declares.
        found: String,
        /// The major versions this reader knows, comma-separated.
        supported: String,
    },
    /// A rocpd database could not be opened or queried.
    #[error("{}: {source}", .path.display())]
    Sqlite {
        /// The database.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The workload's launch log could not be read.
    #[error("{}: {source}", .path.display())]
    LaunchLog {
        /// The launch log file.
        path: PathBuf,
        /// What is wrong with it.
        source: rocm_protocol::launch_log::LaunchLogError,
    },
    /// A kernel's dispatch times could not be summarised (none, or one that is not finite).
    #[error("the timings of `{kernel}` cannot be summarised: {source}")]
    Stats {
        /// The kernel.
        kernel: String,
        /// Why the statistics failed.
        source: rocm_stats::StatsError,
    },
    /// Writing the report failed.
    #[error("writing the report: {0}")]
    Report(String),
}

/// The last lines of a tool's output, for an error message.
fn tail_of(output: &str) -> String {
    let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let start = lines.len().saturating_sub(12);
    format!("; its last output:\n  {}", lines[start..].join("\n  "))
}

impl ProfileError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> ProfileError {
        ProfileError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn malformed(path: impl Into<PathBuf>, message: impl Into<String>) -> ProfileError {
        ProfileError::Malformed {
            path: path.into(),
            message: message.into(),
        }
    }
}
