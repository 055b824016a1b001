//! Schema, migrations and the checks that keep us from touching files that
//! are not ours.
//!
//! Identity: `PRAGMA application_id` holds [`APPLICATION_ID`] and
//! `PRAGMA user_version` the schema version. Both live in the SQLite header,
//! so a file can be identified without reading any table.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use super::error::HistoryError;

/// `PRAGMA application_id` of a cargo-rocm history ("RCMB").
pub const APPLICATION_ID: i32 = 0x5243_4D42;

/// Schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = 1;

/// Migrations: `MIGRATIONS[i]` turns version `i` into version `i + 1`.
/// Append only; never edit a released step.
const MIGRATIONS: &[&str] = &[
    // 0 -> 1: initial schema.
    r#"
    CREATE TABLE runs (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        started_at_ms   INTEGER NOT NULL,
        finished_at_ms  INTEGER,
        git_commit      TEXT,
        git_dirty       INTEGER CHECK (git_dirty IN (0, 1)),
        command_line    TEXT NOT NULL,
        host_name       TEXT NOT NULL,
        tool_versions   TEXT NOT NULL,
        status          TEXT NOT NULL CHECK (status IN ('running', 'complete', 'interrupted')),
        owner_pid       INTEGER,
        owner_start     INTEGER,
        owner_boot_id   TEXT,
        owner_host      TEXT
    );
    CREATE INDEX runs_by_start ON runs (started_at_ms);
    CREATE INDEX runs_by_commit ON runs (git_commit);

    CREATE TABLE results (
        id                INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id            INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        measured_at_ms    INTEGER NOT NULL,
        benchmark_id      TEXT NOT NULL,
        group_name        TEXT,
        param_name        TEXT,
        param_value       TEXT,
        backend           TEXT NOT NULL,
        device_name       TEXT NOT NULL,
        arch              TEXT,
        driver_version    TEXT,
        toolchain_version TEXT,
        gpu_clock_mhz     REAL,
        mem_clock_mhz     REAL,
        unit              TEXT NOT NULL,
        sample_count      INTEGER NOT NULL,
        median            REAL NOT NULL,
        mean              REAL NOT NULL,
        min               REAL NOT NULL,
        max               REAL NOT NULL,
        stddev            REAL NOT NULL,
        mad               REAL NOT NULL,
        cv                REAL NOT NULL,
        rel_mad           REAL NOT NULL,
        stability         TEXT NOT NULL,
        bimodal           INTEGER NOT NULL CHECK (bimodal IN (0, 1)),
        throughput_kind   TEXT CHECK (throughput_kind IN ('bytes', 'elements', 'flops')),
        throughput_value  REAL,
        samples_json      TEXT NOT NULL,
        place             TEXT,
        note              TEXT
    );
    CREATE INDEX results_by_run ON results (run_id);
    CREATE INDEX results_by_bench ON results (benchmark_id, backend, device_name);

    CREATE TABLE baselines (
        name         TEXT PRIMARY KEY,
        run_id       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        saved_at_ms  INTEGER NOT NULL
    );
    "#,
];

/// Tables a current-version history must have.
const REQUIRED_TABLES: &[&str] = &["runs", "results", "baselines"];

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Looks at the raw header before SQLite touches the file, so random bytes
/// and truncated files get a precise error and are never modified.
/// An empty (0-byte) file is accepted: SQLite treats it as a new database and
/// nothing can be lost by initialising it.
pub(crate) fn check_header(path: &Path) -> Result<(), HistoryError> {
    let io = |source| HistoryError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if meta.is_dir() {
        return Err(HistoryError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory"),
        });
    }
    let len = meta.len();
    if len == 0 {
        return Ok(());
    }
    let mut header = Vec::with_capacity(100);
    std::fs::File::open(path)
        .map_err(io)?
        .take(100)
        .read_to_end(&mut header)
        .map_err(io)?;
    let magic_len = header.len().min(16);
    if header[..magic_len] != SQLITE_MAGIC[..magic_len] {
        return Err(HistoryError::NotADatabase {
            path: path.to_path_buf(),
        });
    }
    if header.len() < 100 {
        return Err(HistoryError::Truncated {
            path: path.to_path_buf(),
            actual: len,
            expected: 100,
        });
    }
    let raw_page = u16::from_be_bytes([header[16], header[17]]);
    let page_size: u64 = if raw_page == 1 {
        65_536
    } else {
        u64::from(raw_page)
    };
    if !(512..=65_536).contains(&page_size) || !page_size.is_power_of_two() {
        return Err(HistoryError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("invalid page size {raw_page} in the header"),
        });
    }
    let be32 =
        |o: usize| u32::from_be_bytes([header[o], header[o + 1], header[o + 2], header[o + 3]]);
    let change_counter = be32(24);
    let pages = u64::from(be32(28));
    let valid_for = be32(92);
    // The in-header size is only authoritative when the change counter
    // matches, and pages may legitimately live in the WAL file.
    let wal = {
        let mut p = path.as_os_str().to_owned();
        p.push("-wal");
        std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
    };
    let expected = pages * page_size;
    if change_counter == valid_for && pages > 0 && wal == 0 && len < expected {
        return Err(HistoryError::Truncated {
            path: path.to_path_buf(),
            actual: len,
            expected,
        });
    }
    Ok(())
}

fn table_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )?;
    let names = stmt.query_map([], |r| r.get(0))?.collect();
    names
}

fn ids(conn: &Connection) -> rusqlite::Result<(i32, i64)> {
    let app: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let ver: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    Ok((app, ver))
}

/// Read-only identification in one read transaction, so the application
/// id, version and table list come from one snapshot even while another
/// process is initialising the file. Returns `true` when it needs migrating.
fn identify(conn: &Connection, path: &Path, timeout: Duration) -> Result<bool, HistoryError> {
    let tx = conn
        .unchecked_transaction()
        .map_err(|e| HistoryError::sql(path, timeout, e))?;
    let verdict = identify_in(&tx, path, timeout);
    // Read-only: dropping the transaction rolls it back.
    drop(tx);
    verdict
}

/// [`identify`] without its own transaction (the caller holds one).
fn identify_in(conn: &Connection, path: &Path, timeout: Duration) -> Result<bool, HistoryError> {
    let sql = |e| HistoryError::sql(path, timeout, e);
    let (app, ver) = ids(conn).map_err(sql)?;
    if app == APPLICATION_ID {
        if ver < 0 {
            return Err(HistoryError::Corrupt {
                path: path.to_path_buf(),
                detail: format!("negative schema version {ver}"),
            });
        }
        if ver > SCHEMA_VERSION {
            return Err(HistoryError::NewerSchema {
                path: path.to_path_buf(),
                found: ver,
                supported: SCHEMA_VERSION,
            });
        }
        return Ok(ver < SCHEMA_VERSION);
    }
    if app != 0 {
        return Err(HistoryError::ForeignDatabase {
            path: path.to_path_buf(),
            detail: format!("application_id is {app:#x}, not {APPLICATION_ID:#x}"),
        });
    }
    let tables = table_names(conn).map_err(sql)?;
    if !tables.is_empty() || ver != 0 {
        let detail = if tables.is_empty() {
            format!("user_version {ver} but no cargo-rocm application_id")
        } else {
            format!(
                "it has tables {} but no cargo-rocm application_id",
                tables.join(", ")
            )
        };
        return Err(HistoryError::ForeignDatabase {
            path: path.to_path_buf(),
            detail,
        });
    }
    Ok(true) // empty database: initialise
}

/// Configures the connection and brings the schema to [`SCHEMA_VERSION`].
/// Identification happens before anything is written (even before switching
/// to WAL, which rewrites header bytes), so foreign, newer and damaged files
/// are left exactly as they were.
pub(crate) fn prepare(
    conn: &mut Connection,
    path: &Path,
    timeout: Duration,
) -> Result<(), HistoryError> {
    let sql = |e| HistoryError::sql(path, timeout, e);
    conn.busy_timeout(timeout).map_err(sql)?;
    let needs_migration = identify(conn, path, timeout)?;

    // WAL: readers never block the writer and a crashed writer loses only its
    // uncommitted transaction. NORMAL sync is durable against process crashes
    // (not power loss), which is the failure that matters for a bench run.
    set_wal(conn, path, timeout)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(sql)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(sql)?;

    if needs_migration {
        migrate(conn, path, timeout)?;
    }
    let tables = table_names(conn).map_err(sql)?;
    let missing: Vec<&str> = REQUIRED_TABLES
        .iter()
        .copied()
        .filter(|t| !tables.iter().any(|have| have == t))
        .collect();
    if !missing.is_empty() {
        return Err(HistoryError::Corrupt {
            path: path.to_path_buf(),
            detail: format!(
                "marked as a cargo-rocm history but table(s) {} are missing",
                missing.join(", ")
            ),
        });
    }
    Ok(())
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Switches to WAL unless already there. Switching needs an exclusive lock,
/// and SQLite may answer `SQLITE_BUSY` at once (without the busy handler)
/// while another process is creating or switching the same new file, so this
/// step retries by itself until the busy timeout. It happens once in the
/// life of a history file.
fn set_wal(conn: &Connection, path: &Path, timeout: Duration) -> Result<(), HistoryError> {
    let start = std::time::Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        let attempt = conn
            .pragma_query_value(None, "journal_mode", |r| r.get::<_, String>(0))
            .and_then(|mode| {
                if mode.eq_ignore_ascii_case("wal") {
                    Ok(mode)
                } else {
                    conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
                }
            });
        match attempt {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(mode) => {
                return Err(HistoryError::NoWal {
                    path: path.to_path_buf(),
                    mode,
                });
            }
            Err(e) if is_busy(&e) && start.elapsed() < timeout => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            Err(e) => return Err(HistoryError::sql(path, timeout, e)),
        }
    }
}

/// Applies pending migrations in one IMMEDIATE transaction. The version is
/// re-read inside the transaction, so two processes opening a new file at the
/// same time cannot both initialise it.
fn migrate(conn: &mut Connection, path: &Path, timeout: Duration) -> Result<(), HistoryError> {
    let sql = |e| HistoryError::sql(path, timeout, e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql)?;
    // Someone else may have changed the file between `identify` and here.
    if identify_in(&tx, path, timeout)? {
        let (_, from) = ids(&tx).map_err(sql)?;
        let from = usize::try_from(from).unwrap_or(0);
        for step in &MIGRATIONS[from..] {
            tx.execute_batch(step).map_err(sql)?;
        }
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(sql)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(sql)?;
    }
    tx.commit().map_err(sql)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_match_version() {
        assert_eq!(MIGRATIONS.len() as i64, SCHEMA_VERSION);
    }
}
