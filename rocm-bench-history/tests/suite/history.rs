//! The history database: round trip, queries, concurrent writers (threads and processes), a
//! killed run, damaged and foreign files, export, and comparing runs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::gen::Gen;
use rocm_bench_history::compare_runs;
use rocm_bench_history::history::{
    BenchFilter, DeviceRecord, ExportScope, History, HistoryError, NewResult, RunInfo, RunSelector,
    RunStatus, Throughput, ThroughputKind, APPLICATION_ID, SCHEMA_VERSION,
};
use rocm_stats::{summarize, CompareConfig, Stability, Verdict};

pub const CHILD_ROLE: &str = "ROCM_BENCH_HISTORY_CHILD_ROLE";
const CHILD_DB: &str = "ROCM_BENCH_HISTORY_CHILD_DB";

fn device(name: &str) -> DeviceRecord {
    DeviceRecord {
        backend: "amd".into(),
        place: "amd/gfx942".into(),
        name: name.into(),
        arch: Some("gfx942".into()),
        driver_version: Some("6.8.5".into()),
        toolchain_version: Some("hipcc 6.2.0".into()),
        gpu_clock_mhz: Some(2100.0),
        mem_clock_mhz: None,
    }
}

fn result(id: &str, samples: Vec<f64>) -> NewResult {
    NewResult {
        benchmark_id: id.into(),
        group: Some("g".into()),
        param_name: None,
        param_value: None,
        device: device("MI300X"),
        unit: "ns".into(),
        throughput: None,
        samples,
        note: None,
    }
}

fn info(commit: &str) -> RunInfo {
    RunInfo {
        git_commit: Some(commit.into()),
        git_dirty: Some(false),
        command_line: "cargo rocm bench".into(),
        host_name: "testhost".into(),
        tool_versions: "rustc 1.95; hipcc 6.2".into(),
    }
}

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("nested").join("history.sqlite")
}

/// Runs one `child_entry` test in a new process of this test binary.
fn spawn_child(role: &str, path: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ROLE, role)
        .env(CHILD_DB, path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Not a test: what a child process spawned by the tests below does (`main` calls it when
/// `CHILD_ROLE` is set).
pub fn child_entry(role: &str) {
    let path = PathBuf::from(std::env::var(CHILD_DB).unwrap());
    let mut h = History::open(&path).unwrap();
    match role {
        "abort" => {
            let run = h.begin_run(&info("abcdef0123")).unwrap();
            for i in 0..5 {
                h.insert_result(run, &result(&format!("sweep/{i}"), vec![1.0, 2.0, 3.0]))
                    .unwrap();
            }
            std::process::abort();
        }
        writer => {
            let run = h.begin_run(&info(writer)).unwrap();
            for i in 0..150 {
                h.insert_result(
                    run,
                    &result(&format!("{writer}/{i}"), vec![i as f64 + 1.0; 3]),
                )
                .unwrap();
            }
            h.finish_run(run, RunStatus::Complete).unwrap();
        }
    }
}

#[testkit::test]
fn round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let samples = Gen::new(1).normal(100, 1234.5, 3.0);
    let mut sweep = result("copy", vec![10.0, 11.0, 10.5, 10.2, 10.1]);
    sweep.param_name = Some("bytes".into());
    sweep.param_value = Some("4096".into());
    sweep.throughput = Some(Throughput {
        kind: ThroughputKind::Bytes,
        per_iteration: 4096.0,
    });
    let run = {
        let mut h = History::open(&path).unwrap();
        let run = h.begin_run(&info("ABCDEF0123456789")).unwrap();
        h.insert_result(run, &result("gemm", samples.clone()))
            .unwrap();
        h.insert_result(run, &sweep).unwrap();
        h.finish_run(run, RunStatus::Complete).unwrap();
        run
    };
    let h = History::open(&path).unwrap();
    let r = h.run(run).unwrap();
    assert_eq!(r.status, RunStatus::Complete);
    assert_eq!(r.git_commit.as_deref(), Some("abcdef0123456789"));
    assert_eq!(r.git_dirty, Some(false));
    assert_eq!(r.command_line, "cargo rocm bench");
    assert_eq!(r.host_name, "testhost");
    assert_eq!(r.tool_versions, "rustc 1.95; hipcc 6.2");
    assert_eq!(r.result_count, 2);
    assert!(r.finished_at_ms.unwrap() >= r.started_at_ms);

    let results = h.results_of_run(run).unwrap();
    assert_eq!(results.len(), 2);
    let g = &results[0];
    assert_eq!(g.benchmark_id, "gemm");
    assert_eq!(g.samples, samples, "samples must round-trip bit for bit");
    assert_eq!(g.device, device("MI300X"));
    let s = summarize(&samples).unwrap();
    assert_eq!(g.summary.median, s.median);
    assert_eq!(g.summary.mad, s.mad);
    assert_eq!(g.summary.count, 100);
    assert_eq!(g.summary.stability, Stability::Stable);
    assert_eq!(g.unit, "ns");
    let c = &results[1];
    assert_eq!(c.param_value.as_deref(), Some("4096"));
    assert_eq!(c.throughput, sweep.throughput);
    assert_eq!(c.summary.stability, Stability::Noisy); // MAD 0.30 on a median of 10.2

    // schema identity is in the header
    let raw = rusqlite::Connection::open(&path).unwrap();
    let app: i32 = raw
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .unwrap();
    let ver: i64 = raw
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    let mode: String = raw
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(
        (app, ver, mode.as_str()),
        (APPLICATION_ID, SCHEMA_VERSION, "wal")
    );
    h.verify().unwrap();
}

#[testkit::test]
fn queries() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = History::open(db(&dir)).unwrap();
    assert!(h.latest_run().unwrap().is_none());
    assert!(matches!(
        h.resolve(&RunSelector::Latest),
        Err(HistoryError::RunNotFound { .. })
    ));
    let mut ids = Vec::new();
    for (i, commit) in ["aaaa1111", "aaaa2222", "bbbb3333"].iter().enumerate() {
        let run = h.begin_run(&info(commit)).unwrap();
        h.insert_result(run, &result("k", vec![100.0 + i as f64; 10]))
            .unwrap();
        let mut other = result("k", vec![500.0; 10]);
        other.device = device("MI250");
        h.insert_result(run, &other).unwrap();
        h.finish_run(run, RunStatus::Complete).unwrap();
        ids.push(run);
    }
    let listed: Vec<i64> = h.list_runs().unwrap().iter().map(|r| r.id).collect();
    assert_eq!(listed, vec![ids[2], ids[1], ids[0]], "newest first");
    assert_eq!(h.latest_run().unwrap().unwrap().id, ids[2]);
    assert_eq!(h.run_by_commit("BBBB").unwrap().id, ids[2]);
    assert_eq!(
        h.resolve(&RunSelector::Commit("aaaa2".into())).unwrap().id,
        ids[1]
    );
    assert!(matches!(
        h.run_by_commit("aaaa"),
        Err(HistoryError::AmbiguousCommit { .. })
    ));
    assert!(matches!(
        h.run_by_commit("cccc"),
        Err(HistoryError::RunNotFound { .. })
    ));
    assert!(matches!(
        h.run_by_commit("a%"),
        Err(HistoryError::InvalidInput { .. })
    ));
    assert!(matches!(h.run(9999), Err(HistoryError::RunNotFound { .. })));
    assert!(matches!(
        h.results_of_run(9999),
        Err(HistoryError::RunNotFound { .. })
    ));

    // the same commit benchmarked twice: newest run wins, no ambiguity
    let again = h.begin_run(&info("bbbb3333")).unwrap();
    assert_eq!(h.run_by_commit("bbbb").unwrap().id, again);

    let series = h
        .benchmark_history(
            "k",
            &BenchFilter {
                device_name: Some("MI300X".into()),
                ..Default::default()
            },
        )
        .unwrap();
    let medians: Vec<f64> = series.iter().map(|p| p.result.summary.median).collect();
    assert_eq!(medians, vec![100.0, 101.0, 102.0], "oldest run first");
    assert_eq!(series[0].run.git_commit.as_deref(), Some("aaaa1111"));
    assert_eq!(
        h.benchmark_history("k", &BenchFilter::default())
            .unwrap()
            .len(),
        6
    );
    assert!(h
        .benchmark_history("nope", &BenchFilter::default())
        .unwrap()
        .is_empty());

    h.save_baseline("main", ids[0]).unwrap();
    assert_eq!(
        h.resolve(&RunSelector::Baseline("main".into())).unwrap().id,
        ids[0]
    );
    h.save_baseline("main", ids[1]).unwrap();
    assert_eq!(h.baseline_run("main").unwrap().id, ids[1]);
    assert_eq!(h.list_baselines().unwrap().len(), 1);
    assert!(matches!(
        h.baseline_run("x"),
        Err(HistoryError::BaselineNotFound { .. })
    ));
    assert!(matches!(
        h.save_baseline("x", 9999),
        Err(HistoryError::RunNotFound { .. })
    ));
}

#[testkit::test]
fn invalid_writes_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = History::open(db(&dir)).unwrap();
    let run = h.begin_run(&info("abcd")).unwrap();
    let err = h.insert_result(run, &result("x", vec![])).unwrap_err();
    assert!(matches!(err, HistoryError::InvalidSamples { .. }), "{err}");
    assert!(err.to_string().contains("`x`"));
    let err = h
        .insert_result(run, &result("x", vec![1.0, f64::NAN]))
        .unwrap_err();
    assert!(matches!(err, HistoryError::InvalidSamples { .. }));
    assert!(matches!(
        h.insert_result(run, &result(" ", vec![1.0])),
        Err(HistoryError::InvalidInput { .. })
    ));
    let mut bad = result("x", vec![1.0]);
    bad.device.gpu_clock_mhz = Some(f64::NAN);
    assert!(matches!(
        h.insert_result(run, &bad),
        Err(HistoryError::InvalidInput { .. })
    ));
    assert!(matches!(
        h.insert_result(9999, &result("x", vec![1.0])),
        Err(HistoryError::RunNotFound { .. })
    ));
    assert!(matches!(
        h.finish_run(run, RunStatus::Running),
        Err(HistoryError::InvalidInput { .. })
    ));
    h.finish_run(run, RunStatus::Complete).unwrap();
    assert!(matches!(
        h.insert_result(run, &result("x", vec![1.0])),
        Err(HistoryError::RunNotRunning { .. })
    ));
    assert!(matches!(
        h.finish_run(run, RunStatus::Complete),
        Err(HistoryError::RunNotRunning { .. })
    ));
    assert_eq!(h.results_of_run(run).unwrap().len(), 0);
}

#[testkit::test]
fn concurrent_writer_threads_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    // The threads race to create the file too.
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut h = History::open(&path).unwrap();
                let run = h.begin_run(&info(&format!("{t:04x}aaaa"))).unwrap();
                for i in 0..100 {
                    h.insert_result(run, &result(&format!("t{t}/{i}"), vec![i as f64 + 1.0; 5]))
                        .unwrap();
                }
                h.finish_run(run, RunStatus::Complete).unwrap();
                run
            })
        })
        .collect();
    let runs: Vec<i64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let h = History::open(&path).unwrap();
    for run in runs {
        let results = h.results_of_run(run).unwrap();
        assert_eq!(results.len(), 100);
        assert_eq!(h.run(run).unwrap().status, RunStatus::Complete);
    }
    h.verify().unwrap();
}

#[testkit::test]
fn concurrent_writer_processes_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    // The children race to create the file themselves.
    let children: Vec<_> = ["aaaa0001", "aaaa0002", "aaaa0003"]
        .iter()
        .map(|w| spawn_child(w, &path))
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a writer process failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let h = History::open(&path).unwrap();
    let runs = h.list_runs().unwrap();
    assert_eq!(runs.len(), 3);
    for r in &runs {
        assert_eq!(r.status, RunStatus::Complete);
        assert_eq!(r.result_count, 150);
        let results = h.results_of_run(r.id).unwrap();
        let prefix = r.git_commit.clone().unwrap();
        assert!(results.iter().all(|x| x.benchmark_id.starts_with(&prefix)));
    }
    h.verify().unwrap();
}

#[testkit::test]
fn killed_run_keeps_its_results_and_reads_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let status = spawn_child("abort", &path)
        .wait_with_output()
        .unwrap()
        .status;
    assert!(!status.success(), "the child must die by abort()");

    let mut h = History::open(&path).unwrap();
    let run = h.latest_run().unwrap().unwrap();
    assert_eq!(run.result_count, 5);
    if cfg!(target_os = "linux") {
        assert_eq!(run.status, RunStatus::Interrupted, "owner is dead");
        assert_eq!(h.mark_interrupted_runs().unwrap(), 1);
        assert_eq!(h.mark_interrupted_runs().unwrap(), 0);
        let raw = rusqlite::Connection::open(&path).unwrap();
        let stored: String = raw
            .query_row("SELECT status FROM runs WHERE id = ?1", [run.id], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(stored, "interrupted");
        assert!(h.run(run.id).unwrap().finished_at_ms.is_some());
    }
    let results = h.results_of_run(run.id).unwrap();
    let ids: Vec<&str> = results.iter().map(|r| r.benchmark_id.as_str()).collect();
    assert_eq!(ids, ["sweep/0", "sweep/1", "sweep/2", "sweep/3", "sweep/4"]);
    // Nothing more can be added to it; new runs work.
    if cfg!(target_os = "linux") {
        assert!(matches!(
            h.insert_result(run.id, &result("late", vec![1.0])),
            Err(HistoryError::RunNotRunning { .. })
        ));
    }
    let next = h.begin_run(&info("ffff")).unwrap();
    assert_eq!(
        h.run(next).unwrap().status,
        RunStatus::Running,
        "our own live run"
    );
    h.verify().unwrap();
}

#[testkit::test]
fn explicit_interrupt() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = History::open(db(&dir)).unwrap();
    let run = h.begin_run(&info("abcd")).unwrap();
    h.insert_result(run, &result("a", vec![1.0])).unwrap();
    h.finish_run(run, RunStatus::Interrupted).unwrap();
    assert_eq!(h.run(run).unwrap().status, RunStatus::Interrupted);
    assert_eq!(h.results_of_run(run).unwrap().len(), 1);
}

// ---------------------------------------------------------------- bad files

fn file_bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

fn assert_untouched(path: &Path, before: &[u8], err: &HistoryError) {
    assert_eq!(file_bytes(path), before, "file modified after {err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains(&path.display().to_string()),
        "message must name the file: {msg}"
    );
    assert!(msg.contains("left untouched"), "{msg}");
}

fn populated(dir: &tempfile::TempDir, name: &str, results: usize) -> PathBuf {
    let path = dir.path().join(name);
    let mut h = History::open(&path).unwrap();
    let run = h.begin_run(&info("abcd")).unwrap();
    for i in 0..results {
        h.insert_result(
            run,
            &result(
                &format!("b{i}"),
                Gen::new(i as u64).normal(200, 1000.0, 5.0),
            ),
        )
        .unwrap();
    }
    h.finish_run(run, RunStatus::Complete).unwrap();
    drop(h); // last connection closes: WAL checkpointed and removed
    path
}

#[testkit::test]
fn random_bytes_are_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.sqlite");
    let mut g = Gen::new(5);
    let bytes: Vec<u8> = (0..8192).map(|_| (g.uniform() * 256.0) as u8).collect();
    std::fs::write(&path, &bytes).unwrap();
    let err = History::open(&path).unwrap_err();
    assert!(matches!(err, HistoryError::NotADatabase { .. }), "{err:?}");
    assert_untouched(&path, &bytes, &err);
    assert!(!dir.path().join("history.sqlite-wal").exists());

    let text = b"[package]\nname = \"oops\"\n";
    std::fs::write(&path, text).unwrap();
    let err = History::open(&path).unwrap_err();
    assert!(matches!(err, HistoryError::NotADatabase { .. }), "{err:?}");
    assert_untouched(&path, text, &err);
}

#[testkit::test]
fn truncated_files_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = populated(&dir, "t.sqlite", 50);
    let full = file_bytes(&path);
    assert!(full.len() > 16 * 1024, "need a multi-page file");
    for cut in [10, 99, full.len() / 2, full.len() - 1] {
        std::fs::write(&path, &full[..cut]).unwrap();
        let before = file_bytes(&path);
        let err = History::open(&path).unwrap_err();
        assert!(
            matches!(err, HistoryError::Truncated { .. }),
            "cut {cut}: {err:?}"
        );
        assert_untouched(&path, &before, &err);
    }
}

#[testkit::test]
fn damaged_pages_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = populated(&dir, "c.sqlite", 50);
    let mut bytes = file_bytes(&path);
    // Keep the header page, scramble everything after it.
    let mut g = Gen::new(8);
    for b in bytes.iter_mut().skip(4096) {
        *b = (g.uniform() * 256.0) as u8;
    }
    std::fs::write(&path, &bytes).unwrap();
    // Damage may surface at open (schema page) or on first read; either way
    // it is a typed Corrupt error and the file is left alone.
    let err = match History::open(&path) {
        Err(e) => e,
        Ok(h) => h
            .list_runs()
            .and_then(|runs| h.results_of_run(runs[0].id).map(|_| ()))
            .and_then(|_| h.verify())
            .unwrap_err(),
    };
    assert!(matches!(err, HistoryError::Corrupt { .. }), "{err:?}");
    assert_eq!(file_bytes(&path), bytes);
    assert!(err.to_string().contains("backup"));
}

#[testkit::test]
fn foreign_sqlite_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Someone else's database.
    let path = dir.path().join("foreign.sqlite");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users VALUES (1, 'a');")
            .unwrap();
    }
    let before = file_bytes(&path);
    let err = History::open(&path).unwrap_err();
    assert!(
        matches!(err, HistoryError::ForeignDatabase { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("users"));
    assert_untouched(&path, &before, &err);

    // Another application's id, even with no tables.
    let path = dir.path().join("app.sqlite");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.pragma_update(None, "application_id", 0x1234).unwrap();
    }
    let before = file_bytes(&path);
    let err = History::open(&path).unwrap_err();
    assert!(
        matches!(err, HistoryError::ForeignDatabase { .. }),
        "{err:?}"
    );
    assert_untouched(&path, &before, &err);
}

#[testkit::test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = populated(&dir, "n.sqlite", 2);
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
    }
    let before = file_bytes(&path);
    let err = History::open(&path).unwrap_err();
    match &err {
        HistoryError::NewerSchema {
            found, supported, ..
        } => {
            assert_eq!((*found, *supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("Upgrade cargo-rocm"));
    assert_untouched(&path, &before, &err);
}

#[testkit::test]
fn odd_paths() {
    let dir = tempfile::tempdir().unwrap();
    // a directory
    let err = History::open(dir.path()).unwrap_err();
    assert!(matches!(err, HistoryError::Io { .. }), "{err:?}");
    // an empty file is a fresh database
    let empty = dir.path().join("empty.sqlite");
    std::fs::write(&empty, b"").unwrap();
    let mut h = History::open(&empty).unwrap();
    h.begin_run(&info("abcd")).unwrap();
    // reopening an existing history is fine, twice in parallel too
    let a = History::open(&empty).unwrap();
    let b = History::open(&empty).unwrap();
    assert_eq!(a.list_runs().unwrap().len(), b.list_runs().unwrap().len());
}

// ------------------------------------------------------------------ exports

#[testkit::test]
fn csv_and_json_export() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = History::open(db(&dir)).unwrap();
    let r1 = h.begin_run(&info("abcd1")).unwrap();
    let mut tricky = result("has,comma \"quoted\"", vec![1.5, 2.25, 0.1]);
    tricky.throughput = Some(Throughput {
        kind: ThroughputKind::Flops,
        per_iteration: 2.0e12,
    });
    h.insert_result(r1, &tricky).unwrap();
    h.insert_result(r1, &result("plain", vec![3.0; 6])).unwrap();
    h.finish_run(r1, RunStatus::Complete).unwrap();
    let r2 = h.begin_run(&info("abcd2")).unwrap();
    h.insert_result(r2, &result("plain", vec![4.0; 6])).unwrap();
    let empty = h.begin_run(&info("abcd3")).unwrap();

    let mut out = Vec::new();
    assert_eq!(h.export_csv(ExportScope::Run(r1), &mut out).unwrap(), 2);
    let mut rd = csv::Reader::from_reader(out.as_slice());
    let headers = rd.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(&rows[0][col("benchmark_id")], "has,comma \"quoted\"");
    assert_eq!(&rows[0][col("throughput_kind")], "flops");
    assert_eq!(&rows[0][col("run_status")], "complete");
    assert_eq!(&rows[0][col("git_commit")], "abcd1");
    assert_eq!(&rows[0][col("median")], "1.5");
    assert_eq!(&rows[1][col("throughput_kind")], "");
    let samples: Vec<f64> = serde_json::from_str(&rows[0][col("samples")]).unwrap();
    assert_eq!(samples, vec![1.5, 2.25, 0.1]);
    assert!(rows[0][col("run_started_at")].ends_with('Z'));

    // all runs; an empty run still gives a header-only file
    let mut all = Vec::new();
    assert_eq!(h.export_csv(ExportScope::All, &mut all).unwrap(), 3);
    let mut none = Vec::new();
    assert_eq!(h.export_csv(ExportScope::Run(empty), &mut none).unwrap(), 0);
    let mut rd = csv::Reader::from_reader(none.as_slice());
    assert_eq!(
        rd.headers().unwrap(),
        &headers,
        "header-only export has the same columns"
    );
    assert_eq!(rd.records().count(), 0);

    let mut json = Vec::new();
    assert_eq!(h.export_json(ExportScope::All, &mut json).unwrap(), 3);
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["format"], "cargo-rocm-bench-history");
    assert_eq!(v["schema_version"], SCHEMA_VERSION);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0]["id"], empty, "newest first");
    assert_eq!(runs[1]["status"], "running");
    let r1_json = &runs[2];
    assert_eq!(r1_json["git_commit"], "abcd1");
    assert_eq!(
        r1_json["results"][0]["samples"],
        serde_json::json!([1.5, 2.25, 0.1])
    );
    assert_eq!(r1_json["results"][0]["throughput"]["kind"], "flops");
    assert_eq!(r1_json["results"][1]["summary"]["stability"], "stable");

    assert!(matches!(
        h.export_json(ExportScope::Run(999), Vec::new()),
        Err(HistoryError::RunNotFound { .. })
    ));
}

// ------------------------------------------------------------- compare runs

#[testkit::test]
fn compare_two_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = History::open(db(&dir)).unwrap();
    let mut g = Gen::new(42);
    let base = h.begin_run(&info("1111aaaa")).unwrap();
    h.insert_result(base, &result("same", g.normal(100, 1000.0, 10.0)))
        .unwrap();
    h.insert_result(base, &result("regressed", g.normal(100, 1000.0, 10.0)))
        .unwrap();
    h.insert_result(base, &result("improved", g.normal(100, 1000.0, 10.0)))
        .unwrap();
    h.insert_result(base, &result("removed", g.normal(100, 1000.0, 10.0)))
        .unwrap();
    let mut ms = result("units", vec![1.0; 10]);
    ms.unit = "ms".into();
    h.insert_result(base, &ms).unwrap();
    h.insert_result(base, &result("few", vec![1.0, 1.0]))
        .unwrap();
    let mut other_dev = result("same", g.normal(100, 2000.0, 10.0));
    other_dev.device = device("MI250");
    h.insert_result(base, &other_dev).unwrap();
    h.finish_run(base, RunStatus::Complete).unwrap();
    h.save_baseline("main", base).unwrap();

    let new = h.begin_run(&info("2222bbbb")).unwrap();
    h.insert_result(new, &result("same", g.normal(100, 1000.0, 10.0)))
        .unwrap();
    h.insert_result(new, &result("regressed", g.normal(100, 1100.0, 11.0)))
        .unwrap();
    h.insert_result(new, &result("improved", g.normal(100, 800.0, 8.0)))
        .unwrap();
    h.insert_result(new, &result("added", g.normal(100, 1000.0, 10.0)))
        .unwrap();
    h.insert_result(new, &result("units", vec![1000.0; 10]))
        .unwrap();
    h.insert_result(new, &result("few", vec![5.0, 5.0]))
        .unwrap();
    let mut other_dev = result("same", g.normal(100, 2000.0, 10.0));
    other_dev.device = device("MI250");
    h.insert_result(new, &other_dev).unwrap();
    h.finish_run(new, RunStatus::Complete).unwrap();

    let cmp = compare_runs(
        &h,
        &RunSelector::Baseline("main".into()),
        &RunSelector::Latest,
        &CompareConfig::default(),
    )
    .unwrap();
    assert_eq!((cmp.baseline.id, cmp.new.id), (base, new));
    let verdict = |id: &str, dev: &str| {
        cmp.compared
            .iter()
            .find(|c| c.key.benchmark_id == id && c.key.device_name == dev)
            .map(|c| c.comparison.verdict)
    };
    assert_eq!(verdict("same", "MI300X"), Some(Verdict::NoChange));
    assert_eq!(
        verdict("same", "MI250"),
        Some(Verdict::NoChange),
        "paired per device"
    );
    assert_eq!(verdict("regressed", "MI300X"), Some(Verdict::Slower));
    assert_eq!(verdict("improved", "MI300X"), Some(Verdict::Faster));
    assert_eq!(verdict("few", "MI300X"), Some(Verdict::TooFewSamples));
    let reg = cmp
        .compared
        .iter()
        .find(|c| c.key.benchmark_id == "regressed")
        .unwrap();
    assert!((reg.comparison.ratio - 1.1).abs() < 0.01);
    let ci = reg.comparison.ci.unwrap();
    assert!(ci.low > 1.02 && ci.low < ci.high);
    assert_eq!(cmp.compared.len(), 5);
    assert_eq!(cmp.incomparable.len(), 1);
    assert_eq!(cmp.incomparable[0].key.benchmark_id, "units");
    assert!(cmp.incomparable[0].reason.contains("units differ"));
    let names = |keys: &[rocm_bench_history::history::BenchKey]| {
        keys.iter()
            .map(|k| k.benchmark_id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&cmp.only_in_baseline), vec!["removed"]);
    assert_eq!(names(&cmp.only_in_new), vec!["added"]);

    // Deterministic: the same comparison twice is identical.
    let again = compare_runs(
        &h,
        &RunSelector::Id(base),
        &RunSelector::Commit("2222".into()),
        &CompareConfig::default(),
    )
    .unwrap();
    assert_eq!(again, cmp);
    assert!(matches!(
        compare_runs(
            &h,
            &RunSelector::Baseline("nope".into()),
            &RunSelector::Latest,
            &CompareConfig::default()
        ),
        Err(HistoryError::BaselineNotFound { .. })
    ));
    let bad = CompareConfig {
        resamples: 1,
        ..CompareConfig::default()
    };
    assert!(matches!(
        compare_runs(&h, &RunSelector::Id(base), &RunSelector::Id(new), &bad),
        Err(HistoryError::InvalidInput { .. })
    ));
}
