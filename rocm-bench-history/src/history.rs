//! The benchmark history: a SQLite file recording every run and result.
//!
//! Design choices and why:
//! - **One IMMEDIATE transaction per result**: a run killed mid-sweep keeps
//!   everything it measured up to the kill; IMMEDIATE takes the write lock up
//!   front, so concurrent writers queue on the busy timeout instead of failing
//!   with a lock-upgrade deadlock.
//! - **WAL + busy timeout**: two `cargo rocm bench` processes (or threads with
//!   their own [`History`]) can write at once; readers never block writers.
//! - **Owner identity on each run** (pid, process start time, boot id, host):
//!   a run whose process died without finishing is *reported* as
//!   [`RunStatus::Interrupted`] without anyone having to clean up, and
//!   [`History::mark_interrupted_runs`] persists that.
//! - **Never destroy a file**: see [`History::open`].

mod compare;
mod error;
mod export;
mod schema;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};

pub use compare::{compare_runs, BenchComparison, BenchKey, Incomparable, RunComparison};
pub use error::HistoryError;
pub use export::ExportScope;
pub use rocm_protocol::bench::{DeviceRecord, ThroughputKind};
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};

use crate::sys::{self, ProcessIdentity};
use rocm_stats::stats::{self, Stability, Summary};

/// How long a connection waits for another writer's lock before giving up.
/// Each transaction writes a single result, so 30 s is generous even on a
/// loaded machine.
pub(crate) const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Lifecycle of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Its process is (as far as we can tell) still measuring.
    Running,
    /// Finished normally.
    Complete,
    /// Stopped before finishing: marked so, or its process is provably dead.
    Interrupted,
}

impl RunStatus {
    /// Text stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
        }
    }

    /// Inverse of [`RunStatus::as_str`].
    pub(crate) fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => RunStatus::Running,
            "complete" => RunStatus::Complete,
            "interrupted" => RunStatus::Interrupted,
            _ => return None,
        })
    }
}

/// What the caller knows about a run when it starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Full commit hash (stored lower-case), if in a git checkout.
    pub git_commit: Option<String>,
    /// Whether the work tree had uncommitted changes.
    pub git_dirty: Option<bool>,
    /// The command line, as typed.
    pub command_line: String,
    /// Host name shown to users.
    pub host_name: String,
    /// Tool versions as free text (e.g. `rustc 1.80; hipcc 6.1`).
    pub tool_versions: String,
}

impl RunInfo {
    /// A `RunInfo` with the detected host name and nothing else filled in.
    pub fn new(command_line: impl Into<String>) -> Self {
        RunInfo {
            git_commit: None,
            git_dirty: None,
            command_line: command_line.into(),
            host_name: sys::host_name().unwrap_or_else(|| "unknown".to_string()),
            tool_versions: String::new(),
        }
    }
}

/// A recorded run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Row id.
    pub id: i64,
    /// Start, Unix milliseconds.
    pub started_at_ms: i64,
    /// End, Unix milliseconds (`None` while running or if it died).
    pub finished_at_ms: Option<i64>,
    /// Commit hash.
    pub git_commit: Option<String>,
    /// Dirty work tree.
    pub git_dirty: Option<bool>,
    /// Command line.
    pub command_line: String,
    /// Host name.
    pub host_name: String,
    /// Tool versions.
    pub tool_versions: String,
    /// Effective status: a stored `running` whose process is provably gone is
    /// reported as `interrupted`.
    pub status: RunStatus,
    /// Number of results recorded.
    pub result_count: u64,
}

/// Work done by **one iteration** (as criterion's `Throughput`); the rate is
/// `per_iteration / median time`. Stored as the amount, not the rate, so it
/// stays correct whatever statistic is later used for the time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// What is counted.
    pub kind: ThroughputKind,
    /// Amount per iteration.
    pub per_iteration: f64,
}

/// A result to record.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NewResult {
    /// Full benchmark id (e.g. `gemm/f16/4096`).
    pub benchmark_id: String,
    /// Criterion group, if any.
    pub group: Option<String>,
    /// Sweep parameter name, e.g. `n`.
    pub param_name: Option<String>,
    /// Sweep parameter value, as text.
    pub param_value: Option<String>,
    /// Device and software.
    pub device: DeviceRecord,
    /// Unit of the samples, e.g. `ns`.
    pub unit: String,
    /// Work per iteration, if declared.
    pub throughput: Option<Throughput>,
    /// Raw timings, one per sample, in `unit`.
    pub samples: Vec<f64>,
    /// A note shown with the result (`smoke test: small sizes`).
    pub note: Option<String>,
}

/// The summary numbers stored with a result (as computed when recorded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredSummary {
    /// Sample count.
    pub count: u64,
    /// Median.
    pub median: f64,
    /// Mean.
    pub mean: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Sample standard deviation.
    pub std_dev: f64,
    /// MAD scaled by 1.4826.
    pub mad: f64,
    /// Coefficient of variation.
    pub cv: f64,
    /// MAD / median.
    pub rel_mad: f64,
    /// Stability class.
    pub stability: Stability,
    /// Bimodality flag.
    pub bimodal: bool,
}

impl From<&Summary> for StoredSummary {
    fn from(s: &Summary) -> Self {
        StoredSummary {
            count: s.count as u64,
            median: s.median,
            mean: s.mean,
            min: s.min,
            max: s.max,
            std_dev: s.std_dev,
            mad: s.mad,
            cv: s.cv,
            rel_mad: s.rel_mad,
            stability: s.stability,
            bimodal: s.bimodality.bimodal,
        }
    }
}

/// A recorded result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// Row id.
    pub id: i64,
    /// Owning run.
    pub run_id: i64,
    /// When it was recorded, Unix milliseconds.
    pub measured_at_ms: i64,
    /// Benchmark id.
    pub benchmark_id: String,
    /// Group.
    pub group: Option<String>,
    /// Sweep parameter name.
    pub param_name: Option<String>,
    /// Sweep parameter value.
    pub param_value: Option<String>,
    /// Device and software.
    pub device: DeviceRecord,
    /// Unit of the samples.
    pub unit: String,
    /// Work per iteration.
    pub throughput: Option<Throughput>,
    /// Stored summary.
    pub summary: StoredSummary,
    /// Raw samples.
    pub samples: Vec<f64>,
    /// A note shown with the result (`smoke test: small sizes`).
    pub note: Option<String>,
}

/// One point of a benchmark's history: the run and its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryPoint {
    /// The run (commit, time).
    pub run: Run,
    /// The result in that run.
    pub result: BenchResult,
}

/// Narrows [`History::benchmark_history`]; `None` fields match anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BenchFilter {
    /// Only this backend.
    pub backend: Option<String>,
    /// Only this device name.
    pub device_name: Option<String>,
    /// Only this sweep parameter value.
    pub param_value: Option<String>,
}

/// Ways to name a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunSelector {
    /// The most recently started run.
    Latest,
    /// A run id.
    Id(i64),
    /// A commit hash prefix (≥ 4 hex digits); the newest run of that commit.
    Commit(String),
    /// A saved baseline name.
    Baseline(String),
}

impl std::fmt::Display for RunSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunSelector::Latest => write!(f, "the latest run"),
            RunSelector::Id(id) => write!(f, "run id {id}"),
            RunSelector::Commit(c) => write!(f, "commit `{c}`"),
            RunSelector::Baseline(b) => write!(f, "baseline `{b}`"),
        }
    }
}

/// A saved baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    /// Name.
    pub name: String,
    /// The run it points at.
    pub run_id: i64,
    /// When it was saved, Unix milliseconds.
    pub saved_at_ms: i64,
}

/// An open history database. Not `Sync`: give each thread its own (opening
/// is cheap), which is also what makes concurrent writing safe.
#[derive(Debug)]
pub struct History {
    conn: Connection,
    path: PathBuf,
    busy_timeout: Duration,
}

const RUN_COLS: &str = "id, started_at_ms, finished_at_ms, git_commit, git_dirty, command_line, \
     host_name, tool_versions, status, owner_pid, owner_start, owner_boot_id, owner_host, \
     (SELECT count(*) FROM results r WHERE r.run_id = runs.id)";

const RESULT_COLS: &str = "id, run_id, measured_at_ms, benchmark_id, group_name, param_name, \
     param_value, backend, device_name, arch, driver_version, toolchain_version, gpu_clock_mhz, \
     mem_clock_mhz, unit, sample_count, median, mean, min, max, stddev, mad, cv, rel_mad, \
     stability, bimodal, throughput_kind, throughput_value, samples_json, place, note";

struct RawRun {
    run: Run,
    stored_status: String,
    owner: Option<ProcessIdentity>,
}

fn raw_run(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRun> {
    let pid: Option<i64> = r.get(9)?;
    let owner = pid
        .and_then(|p| u32::try_from(p).ok())
        .map(|pid| ProcessIdentity {
            pid,
            start_ticks: r
                .get::<_, Option<i64>>(10)
                .ok()
                .flatten()
                .and_then(|t| u64::try_from(t).ok()),
            boot_id: r.get(11).ok().flatten(),
            host: r.get(12).ok().flatten(),
        });
    Ok(RawRun {
        run: Run {
            id: r.get(0)?,
            started_at_ms: r.get(1)?,
            finished_at_ms: r.get(2)?,
            git_commit: r.get(3)?,
            git_dirty: r.get::<_, Option<i64>>(4)?.map(|d| d != 0),
            command_line: r.get(5)?,
            host_name: r.get(6)?,
            tool_versions: r.get(7)?,
            status: RunStatus::Running, // replaced in `finish_raw_run`
            result_count: u64::try_from(r.get::<_, i64>(13)?).unwrap_or(0),
        },
        stored_status: r.get(8)?,
        owner,
    })
}

struct RawResult {
    result: BenchResult,
    stability: String,
    throughput_kind: Option<String>,
    throughput_value: Option<f64>,
    samples_json: String,
}

fn raw_result(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawResult> {
    Ok(RawResult {
        result: BenchResult {
            id: r.get(0)?,
            run_id: r.get(1)?,
            measured_at_ms: r.get(2)?,
            benchmark_id: r.get(3)?,
            group: r.get(4)?,
            param_name: r.get(5)?,
            param_value: r.get(6)?,
            device: DeviceRecord {
                backend: r.get(7)?,
                place: r.get::<_, Option<String>>(29)?.unwrap_or_default(),
                name: r.get(8)?,
                arch: r.get(9)?,
                driver_version: r.get(10)?,
                toolchain_version: r.get(11)?,
                gpu_clock_mhz: r.get(12)?,
                mem_clock_mhz: r.get(13)?,
            },
            unit: r.get(14)?,
            throughput: None,
            summary: StoredSummary {
                count: u64::try_from(r.get::<_, i64>(15)?).unwrap_or(0),
                median: r.get(16)?,
                mean: r.get(17)?,
                min: r.get(18)?,
                max: r.get(19)?,
                std_dev: r.get(20)?,
                mad: r.get(21)?,
                cv: r.get(22)?,
                rel_mad: r.get(23)?,
                stability: Stability::Unstable, // replaced in `finish_raw_result`
                bimodal: r.get::<_, i64>(25)? != 0,
            },
            samples: Vec::new(),
            note: r.get(30)?,
        },
        stability: r.get(24)?,
        throughput_kind: r.get(26)?,
        throughput_value: r.get(27)?,
        samples_json: r.get(28)?,
    })
}

fn check_text(what: &str, value: &str) -> Result<(), HistoryError> {
    if value.trim().is_empty() {
        return Err(HistoryError::InvalidInput {
            what: what.to_string(),
            reason: "must not be empty".to_string(),
        });
    }
    Ok(())
}

fn check_positive(what: &str, value: Option<f64>) -> Result<(), HistoryError> {
    match value {
        Some(v) if !(v.is_finite() && v >= 0.0) => Err(HistoryError::InvalidInput {
            what: what.to_string(),
            reason: format!("{v} is not a finite, non-negative number"),
        }),
        _ => Ok(()),
    }
}

impl History {
    /// Opens (or creates) the history at `path`; a write waits up to 30 s for another writer's
    /// lock.
    ///
    /// A missing file (and its missing parent folders) is created; a 0-byte
    /// file is initialised. Anything else must already be a cargo-rocm
    /// history of this or an older schema version (older ones are migrated).
    /// Otherwise a typed error names the file — [`HistoryError::NotADatabase`],
    /// [`HistoryError::Truncated`], [`HistoryError::Corrupt`],
    /// [`HistoryError::ForeignDatabase`], [`HistoryError::NewerSchema`] — and
    /// the file is not modified, deleted or replaced.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, HistoryError> {
        Self::open_with_timeout(path, DEFAULT_BUSY_TIMEOUT)
    }

    /// [`History::open`], waiting up to `busy_timeout` for another writer's lock.
    fn open_with_timeout(
        path: impl AsRef<Path>,
        busy_timeout: Duration,
    ) -> Result<Self, HistoryError> {
        let path = path.as_ref().to_path_buf();
        match std::fs::metadata(&path) {
            Ok(_) => schema::check_header(&path)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|source| HistoryError::Io {
                        path: parent.to_path_buf(),
                        source,
                    })?;
                }
            }
            Err(source) => return Err(HistoryError::Io { path, source }),
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(&path, flags)
            .map_err(|e| HistoryError::sql(&path, busy_timeout, e))?;
        schema::prepare(&mut conn, &path, busy_timeout)?;
        Ok(History {
            conn,
            path,
            busy_timeout,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, e: rusqlite::Error) -> HistoryError {
        HistoryError::sql(&self.path, self.busy_timeout, e)
    }

    /// Full integrity check (`PRAGMA quick_check`): reads every page, so it
    /// is not done on every open. Returns [`HistoryError::Corrupt`] on damage.
    pub fn verify(&self) -> Result<(), HistoryError> {
        let mut stmt = self
            .conn
            .prepare("PRAGMA quick_check")
            .map_err(|e| self.sql(e))?;
        let lines: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .map_err(|e| self.sql(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.sql(e))?;
        if lines.len() == 1 && lines[0] == "ok" {
            Ok(())
        } else {
            Err(HistoryError::Corrupt {
                path: self.path.clone(),
                detail: lines.join("; "),
            })
        }
    }

    /// Starts a run owned by this process and returns its id. Also marks
    /// runs of dead processes as interrupted (see
    /// [`History::mark_interrupted_runs`]).
    pub fn begin_run(&mut self, info: &RunInfo) -> Result<i64, HistoryError> {
        check_text("command line", &info.command_line)?;
        let commit = match &info.git_commit {
            Some(c) => {
                let c = c.trim().to_ascii_lowercase();
                check_text("git commit", &c)?;
                Some(c)
            }
            None => None,
        };
        self.mark_interrupted_runs()?;
        let me = sys::current_process();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| HistoryError::sql(&self.path, self.busy_timeout, e))?;
        tx.execute(
            "INSERT INTO runs (started_at_ms, git_commit, git_dirty, command_line, host_name, \
             tool_versions, status, owner_pid, owner_start, owner_boot_id, owner_host) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?8, ?9, ?10)",
            params![
                sys::now_ms(),
                commit,
                info.git_dirty.map(i64::from),
                info.command_line,
                info.host_name,
                info.tool_versions,
                i64::from(me.pid),
                me.start_ticks.and_then(|t| i64::try_from(t).ok()),
                me.boot_id,
                me.host,
            ],
        )
        .map_err(|e| HistoryError::sql(&self.path, self.busy_timeout, e))?;
        let id = tx.last_insert_rowid();
        tx.commit()
            .map_err(|e| HistoryError::sql(&self.path, self.busy_timeout, e))?;
        Ok(id)
    }

    /// Records one result in its own transaction and returns its id. The
    /// summary columns are computed here from the samples, so they always
    /// agree with them. The run must still be running.
    pub fn insert_result(&mut self, run_id: i64, result: &NewResult) -> Result<i64, HistoryError> {
        check_text("benchmark id", &result.benchmark_id)?;
        check_text("backend", &result.device.backend)?;
        check_text("device name", &result.device.name)?;
        check_text("unit", &result.unit)?;
        check_positive("GPU clock", result.device.gpu_clock_mhz)?;
        check_positive("memory clock", result.device.mem_clock_mhz)?;
        check_positive("throughput", result.throughput.map(|t| t.per_iteration))?;
        let summary =
            stats::summarize(&result.samples).map_err(|source| HistoryError::InvalidSamples {
                benchmark_id: result.benchmark_id.clone(),
                source,
            })?;
        let samples_json = serde_json::to_string(&result.samples)?;
        let (path, timeout) = (self.path.clone(), self.busy_timeout);
        let sql = |e| HistoryError::sql(&path, timeout, e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        require_running(&tx, run_id, &sql)?;
        let d = &result.device;
        tx.execute(
            &format!(
                "INSERT INTO results ({}) VALUES (NULL, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, \
                 ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30)",
                RESULT_COLS
            ),
            params![
                run_id,
                sys::now_ms(),
                result.benchmark_id,
                result.group,
                result.param_name,
                result.param_value,
                d.backend,
                d.name,
                d.arch,
                d.driver_version,
                d.toolchain_version,
                d.gpu_clock_mhz,
                d.mem_clock_mhz,
                result.unit,
                summary.count as i64,
                summary.median,
                summary.mean,
                summary.min,
                summary.max,
                summary.std_dev,
                summary.mad,
                summary.cv,
                summary.rel_mad,
                summary.stability.as_str(),
                i64::from(summary.bimodality.bimodal),
                result.throughput.map(|t| t.kind.as_str()),
                result.throughput.map(|t| t.per_iteration),
                samples_json,
                d.place,
                result.note,
            ],
        )
        .map_err(sql)?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(sql)?;
        Ok(id)
    }

    /// Ends a running run as `Complete` or `Interrupted` (e.g. from a Ctrl-C
    /// handler).
    pub fn finish_run(&mut self, run_id: i64, status: RunStatus) -> Result<(), HistoryError> {
        if status == RunStatus::Running {
            return Err(HistoryError::InvalidInput {
                what: "final run status".to_string(),
                reason: "must be complete or interrupted".to_string(),
            });
        }
        let (path, timeout) = (self.path.clone(), self.busy_timeout);
        let sql = |e| HistoryError::sql(&path, timeout, e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        require_running(&tx, run_id, &sql)?;
        tx.execute(
            "UPDATE runs SET status = ?2, finished_at_ms = ?3 WHERE id = ?1",
            params![run_id, status.as_str(), sys::now_ms()],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)
    }

    /// Persists `interrupted` for every stored `running` run whose owning
    /// process is provably gone (same host and boot, pid gone or reused; or
    /// same host, different boot). Its finish time becomes its last result's
    /// time. Returns how many runs were marked.
    pub fn mark_interrupted_runs(&mut self) -> Result<usize, HistoryError> {
        let dead: Vec<i64> = self
            .query_runs("WHERE status = 'running'", [])?
            .into_iter()
            .filter(|r| r.status == RunStatus::Interrupted)
            .map(|r| r.id)
            .collect();
        let mut marked = 0;
        for id in dead {
            let (path, timeout) = (self.path.clone(), self.busy_timeout);
            let sql = |e| HistoryError::sql(&path, timeout, e);
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(sql)?;
            marked += tx
                .execute(
                    "UPDATE runs SET status = 'interrupted', finished_at_ms = \
                     coalesce((SELECT max(measured_at_ms) FROM results WHERE run_id = ?1), started_at_ms) \
                     WHERE id = ?1 AND status = 'running'",
                    [id],
                )
                .map_err(sql)?;
            tx.commit().map_err(sql)?;
        }
        Ok(marked)
    }

    fn finish_raw_run(&self, raw: RawRun) -> Result<Run, HistoryError> {
        let mut run = raw.run;
        let stored = RunStatus::parse(&raw.stored_status).ok_or_else(|| HistoryError::BadRow {
            path: self.path.clone(),
            detail: format!("run {} has status `{}`", run.id, raw.stored_status),
        })?;
        run.status = match (stored, &raw.owner) {
            (RunStatus::Running, Some(owner)) if sys::owner_is_dead(owner) => {
                RunStatus::Interrupted
            }
            (s, _) => s,
        };
        Ok(run)
    }

    fn query_runs<P: rusqlite::Params>(&self, tail: &str, p: P) -> Result<Vec<Run>, HistoryError> {
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT {RUN_COLS} FROM runs {tail}"))
            .map_err(|e| self.sql(e))?;
        let raws: Vec<RawRun> = stmt
            .query_map(p, raw_run)
            .map_err(|e| self.sql(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.sql(e))?;
        raws.into_iter().map(|r| self.finish_raw_run(r)).collect()
    }

    /// All runs, newest first.
    pub fn list_runs(&self) -> Result<Vec<Run>, HistoryError> {
        self.query_runs("ORDER BY started_at_ms DESC, id DESC", [])
    }

    /// The most recently started run, if any.
    pub fn latest_run(&self) -> Result<Option<Run>, HistoryError> {
        Ok(self
            .query_runs("ORDER BY started_at_ms DESC, id DESC LIMIT 1", [])?
            .pop())
    }

    /// A run by id.
    pub fn run(&self, id: i64) -> Result<Run, HistoryError> {
        self.query_runs("WHERE id = ?1", [id])?
            .pop()
            .ok_or_else(|| HistoryError::RunNotFound {
                selector: RunSelector::Id(id).to_string(),
            })
    }

    /// The newest run whose commit starts with `prefix` (≥ 4 hex digits,
    /// case-insensitive). Several *different* commits matching is an error.
    pub fn run_by_commit(&self, prefix: &str) -> Result<Run, HistoryError> {
        let prefix = prefix.trim().to_ascii_lowercase();
        if prefix.len() < 4 || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(HistoryError::InvalidInput {
                what: "commit prefix".to_string(),
                reason: format!("`{prefix}` is not at least 4 hexadecimal digits"),
            });
        }
        let runs = self.query_runs(
            "WHERE substr(git_commit, 1, length(?1)) = ?1 ORDER BY started_at_ms DESC, id DESC",
            [&prefix],
        )?;
        let mut commits: Vec<&str> = runs
            .iter()
            .filter_map(|r| r.git_commit.as_deref())
            .collect();
        commits.sort_unstable();
        commits.dedup();
        if commits.len() > 1 {
            return Err(HistoryError::AmbiguousCommit {
                prefix,
                matches: commits.join(", "),
            });
        }
        runs.into_iter().next().ok_or(HistoryError::RunNotFound {
            selector: RunSelector::Commit(prefix).to_string(),
        })
    }

    /// Resolves any [`RunSelector`].
    pub fn resolve(&self, selector: &RunSelector) -> Result<Run, HistoryError> {
        match selector {
            RunSelector::Latest => self.latest_run()?.ok_or_else(|| HistoryError::RunNotFound {
                selector: selector.to_string(),
            }),
            RunSelector::Id(id) => self.run(*id),
            RunSelector::Commit(prefix) => self.run_by_commit(prefix),
            RunSelector::Baseline(name) => self.baseline_run(name),
        }
    }

    fn finish_raw_result(&self, raw: RawResult) -> Result<BenchResult, HistoryError> {
        let bad = |detail: String| HistoryError::BadRow {
            path: self.path.clone(),
            detail,
        };
        let mut res = raw.result;
        res.summary.stability = Stability::parse(&raw.stability).ok_or_else(|| {
            bad(format!(
                "result {} has stability `{}`",
                res.id, raw.stability
            ))
        })?;
        res.throughput = match (raw.throughput_kind, raw.throughput_value) {
            (Some(k), Some(v)) => Some(Throughput {
                kind: ThroughputKind::parse(&k)
                    .ok_or_else(|| bad(format!("result {} has throughput kind `{k}`", res.id)))?,
                per_iteration: v,
            }),
            _ => None,
        };
        res.samples = serde_json::from_str(&raw.samples_json)
            .map_err(|e| bad(format!("result {} has unreadable samples: {e}", res.id)))?;
        Ok(res)
    }

    fn query_results<P: rusqlite::Params>(
        &self,
        tail: &str,
        p: P,
    ) -> Result<Vec<BenchResult>, HistoryError> {
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT {RESULT_COLS} FROM results {tail}"))
            .map_err(|e| self.sql(e))?;
        let raws: Vec<RawResult> = stmt
            .query_map(p, raw_result)
            .map_err(|e| self.sql(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.sql(e))?;
        raws.into_iter()
            .map(|r| self.finish_raw_result(r))
            .collect()
    }

    /// Results of a run in the order they were recorded.
    pub fn results_of_run(&self, run_id: i64) -> Result<Vec<BenchResult>, HistoryError> {
        self.run(run_id)?;
        self.query_results("WHERE run_id = ?1 ORDER BY id", [run_id])
    }

    /// Every result of one benchmark id across runs, oldest run first — the
    /// series to plot over commits.
    pub fn benchmark_history(
        &self,
        benchmark_id: &str,
        filter: &BenchFilter,
    ) -> Result<Vec<HistoryPoint>, HistoryError> {
        let results = self.query_results(
            "WHERE benchmark_id = ?1 AND (?2 IS NULL OR backend = ?2) \
             AND (?3 IS NULL OR device_name = ?3) AND (?4 IS NULL OR param_value = ?4) \
             ORDER BY (SELECT started_at_ms FROM runs WHERE runs.id = results.run_id), run_id, id",
            params![
                benchmark_id,
                filter.backend,
                filter.device_name,
                filter.param_value
            ],
        )?;
        let mut points = Vec::with_capacity(results.len());
        let mut cached: Option<Run> = None;
        for result in results {
            let run = match cached.take() {
                Some(r) if r.id == result.run_id => r,
                _ => self.run(result.run_id)?,
            };
            cached = Some(run.clone());
            points.push(HistoryPoint { run, result });
        }
        Ok(points)
    }

    /// Saves (or moves) the baseline `name` to point at `run_id`.
    pub fn save_baseline(&mut self, name: &str, run_id: i64) -> Result<(), HistoryError> {
        check_text("baseline name", name)?;
        self.run(run_id)?;
        self.conn
            .execute(
                "INSERT INTO baselines (name, run_id, saved_at_ms) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (name) DO UPDATE SET run_id = excluded.run_id, saved_at_ms = excluded.saved_at_ms",
                params![name, run_id, sys::now_ms()],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// The run a baseline points at.
    pub fn baseline_run(&self, name: &str) -> Result<Run, HistoryError> {
        let id: Option<i64> = self
            .conn
            .query_row(
                "SELECT run_id FROM baselines WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        match id {
            Some(id) => self.run(id),
            None => Err(HistoryError::BaselineNotFound {
                name: name.to_string(),
            }),
        }
    }

    /// All baselines, by name.
    pub fn list_baselines(&self) -> Result<Vec<Baseline>, HistoryError> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, run_id, saved_at_ms FROM baselines ORDER BY name")
            .map_err(|e| self.sql(e))?;
        let baselines = stmt
            .query_map([], |r| {
                Ok(Baseline {
                    name: r.get(0)?,
                    run_id: r.get(1)?,
                    saved_at_ms: r.get(2)?,
                })
            })
            .map_err(|e| self.sql(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.sql(e));
        baselines
    }
}

/// Fails unless run `run_id` exists and is still running (results are added to, and runs finished
/// from, running runs only); `sql` says which database a query error came from.
fn require_running(
    tx: &rusqlite::Transaction<'_>,
    run_id: i64,
    sql: &impl Fn(rusqlite::Error) -> HistoryError,
) -> Result<(), HistoryError> {
    let status: Option<String> = tx
        .query_row("SELECT status FROM runs WHERE id = ?1", [run_id], |r| {
            r.get(0)
        })
        .optional()
        .map_err(sql)?;
    match status.as_deref() {
        None => Err(HistoryError::RunNotFound {
            selector: RunSelector::Id(run_id).to_string(),
        }),
        Some("running") => Ok(()),
        Some(other) => Err(HistoryError::RunNotRunning {
            run_id,
            status: other.to_string(),
        }),
    }
}

impl From<rocm_protocol::bench::BenchRecord> for NewResult {
    /// What a bench binary reported, as a row to record.
    fn from(r: rocm_protocol::bench::BenchRecord) -> Self {
        let (param_name, param_value) = match r.param {
            Some(p) => (Some(p.name), Some(p.value)),
            None => (None, None),
        };
        NewResult {
            benchmark_id: r.id,
            group: Some(r.group),
            param_name,
            param_value,
            device: r.device,
            unit: r.unit,
            throughput: r.throughput.map(|(kind, per_iteration)| Throughput {
                kind,
                per_iteration,
            }),
            samples: r.samples,
            note: r.note,
        }
    }
}
