//! Typed errors of the history database.

use std::path::PathBuf;
use std::time::Duration;

use rusqlite::ErrorCode;
use thiserror::Error;

use rocm_stats::StatsError;

/// Errors of the history database. Every message names the file (where one
/// is involved) and ends with what to do. The file is never deleted or
/// overwritten when it is not ours or not healthy.
#[derive(Debug, Error)]
pub enum HistoryError {
    /// The file does not start with the SQLite header.
    #[error(
        "{path}: not a SQLite database (its first bytes are not the SQLite header), so it is not a cargo-rocm benchmark history; it was left untouched. Move it away or choose another history path"
    )]
    NotADatabase {
        /// The file.
        path: PathBuf,
    },
    /// Shorter than its own header says, or shorter than a header.
    #[error(
        "{path}: the database file is truncated ({actual} bytes, expected at least {expected}); it was left untouched. Restore it from a backup, or move it aside (e.g. rename it to *.corrupt) to start a new history"
    )]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Bytes on disk.
        actual: u64,
        /// Bytes the header requires.
        expected: u64,
    },
    /// SQLite found the file damaged.
    #[error(
        "{path}: the database is corrupt ({detail}); it was left untouched. Restore it from a backup, or move it aside (e.g. rename it to *.corrupt) to start a new history"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// SQLite's description.
        detail: String,
    },
    /// A SQLite database, but not a cargo-rocm history.
    #[error(
        "{path}: a SQLite database that is not a cargo-rocm benchmark history ({detail}); it was left untouched. Choose another history path"
    )]
    ForeignDatabase {
        /// The file.
        path: PathBuf,
        /// What gave it away.
        detail: String,
    },
    /// Written by a newer cargo-rocm.
    #[error(
        "{path}: history schema version {found} is newer than this cargo-rocm understands (up to {supported}); it was left untouched. Upgrade cargo-rocm, or use another history path"
    )]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// Version in the file.
        found: i64,
        /// Newest version this build knows.
        supported: i64,
    },
    /// Another process held the lock for longer than the busy timeout.
    #[error(
        "{path}: the database stayed locked by another process for more than {timeout:?} ({detail}); wait for the other `cargo rocm bench` to finish and retry"
    )]
    Busy {
        /// The file.
        path: PathBuf,
        /// SQLite's description.
        detail: String,
        /// The busy timeout that expired.
        timeout: Duration,
    },
    /// Filesystem error.
    #[error("{path}: {source}; check that the path exists and is readable and writable")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The database could not be switched to WAL mode.
    #[error(
        "{path}: could not switch the database to WAL journal mode (it stayed `{mode}`), which concurrent writers need; put the history on a local filesystem"
    )]
    NoWal {
        /// The file.
        path: PathBuf,
        /// The journal mode SQLite reported.
        mode: String,
    },
    /// Any other SQLite error.
    #[error("{path}: SQLite error: {source}; if it persists, run `History::verify` and report it")]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// No run matched a selector.
    #[error("no run matches {selector}; list the runs to see what is recorded")]
    RunNotFound {
        /// The selector, as text.
        selector: String,
    },
    /// A commit prefix matched runs of several commits.
    #[error(
        "commit prefix `{prefix}` matches several commits ({matches}); give more characters of the commit"
    )]
    AmbiguousCommit {
        /// The prefix given.
        prefix: String,
        /// The commits matched, comma separated.
        matches: String,
    },
    /// No baseline has that name.
    #[error("no baseline named `{name}`; save one first with `save_baseline`")]
    BaselineNotFound {
        /// The name given.
        name: String,
    },
    /// Results can only be added to a run that is still running.
    #[error("run {run_id} is {status}, not running; begin a new run to record more results")]
    RunNotRunning {
        /// The run.
        run_id: i64,
        /// Its status.
        status: String,
    },
    /// The caller passed invalid data.
    #[error("invalid {what}: {reason}; fix the value and retry")]
    InvalidInput {
        /// Which field.
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The samples cannot be summarised.
    #[error("benchmark `{benchmark_id}`: {source}")]
    InvalidSamples {
        /// The benchmark.
        benchmark_id: String,
        /// Why.
        #[source]
        source: StatsError,
    },
    /// A stored row holds a value this build cannot read.
    #[error(
        "{path}: unexpected value in the database ({detail}); run `History::verify`, and restore from a backup if it fails"
    )]
    BadRow {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
    /// Writing CSV failed.
    #[error("CSV export failed: {0}; check that the destination is writable")]
    Csv(#[from] csv::Error),
    /// Writing or reading JSON failed.
    #[error("JSON export failed: {0}; check that the destination is writable")]
    Json(#[from] serde_json::Error),
    /// Writing an export failed.
    #[error("export failed: {0}; check that the destination is writable")]
    ExportIo(#[source] std::io::Error),
}

impl HistoryError {
    /// Maps a SQLite error on `path` to the most specific variant.
    pub(crate) fn sql(path: &std::path::Path, timeout: Duration, e: rusqlite::Error) -> Self {
        let path = path.to_path_buf();
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseCorrupt) => HistoryError::Corrupt {
                path,
                detail: e.to_string(),
            },
            Some(ErrorCode::NotADatabase) => HistoryError::NotADatabase { path },
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => HistoryError::Busy {
                path,
                timeout,
                detail: e.to_string(),
            },
            _ => HistoryError::Sqlite { path, source: e },
        }
    }
}
