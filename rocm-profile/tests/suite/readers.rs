//! rocpd databases (two layouts, extra columns, unknown versions), rocprofv3 CSV (two releases)
//! and ncu CSV all read to the same dispatches, by name.

use rocm_profile::{ncu, rocprof, Collected, ProfileError};

use crate::fixtures;

/// What every reader must find in the fixtures.
fn check(c: &Collected, shared: bool) {
    assert_eq!(c.dispatches.len(), 30, "{}", c.source);
    let saxpy: Vec<_> = c
        .dispatches
        .iter()
        .filter(|d| d.kernel == "saxpy")
        .collect();
    let block_sum: Vec<_> = c
        .dispatches
        .iter()
        .filter(|d| d.kernel == "block_sum")
        .collect();
    assert_eq!((saxpy.len(), block_sum.len()), (20, 10), "{}", c.source);
    let expect: Vec<f64> = fixtures::rows().iter().map(|r| r.duration as f64).collect();
    let got: Vec<f64> = c.dispatches.iter().map(|d| d.duration_ns).collect();
    assert_eq!(got, expect, "{}", c.source);
    assert_eq!(saxpy[0].block, Some([256, 1, 1]));
    assert_eq!(
        saxpy[0].grid,
        Some([4096, 1, 1]),
        "grid sizes count work-items"
    );
    if shared {
        assert_eq!(block_sum[0].shared_bytes, Some(1024));
    }
}

fn check_counters(c: &Collected) {
    let waves: Vec<f64> = c
        .dispatches
        .iter()
        .map(|d| d.counters["SQ_WAVES"])
        .collect();
    let expect: Vec<f64> = fixtures::rows().iter().map(|r| r.waves).collect();
    assert_eq!(waves, expect, "{}", c.source);
}

#[testkit::test]
fn both_rocpd_layouts_read_to_the_same_dispatches() {
    let dir = tempfile::tempdir().unwrap();
    let early = dir.path().join("early.db");
    let late = dir.path().join("late.db");
    fixtures::rocpd_early(&early, "3");
    fixtures::rocpd_late(&late);
    for path in [&early, &late] {
        let c = rocprof::rocpd::read(path).unwrap();
        check(&c, true);
        check_counters(&c);
        assert_eq!(c.arch.as_deref(), Some("gfx90a"));
        assert_eq!(c.device.as_deref(), Some("AMD Instinct MI210"));
        assert!(c.notes.is_empty(), "{:?}", c.notes);
    }
    assert_eq!(
        rocprof::rocpd::read(&early).unwrap().source,
        "rocpd database, schema 3"
    );
    assert!(rocprof::rocpd::read(&late)
        .unwrap()
        .source
        .contains("3.1.0"));
}

#[testkit::test]
fn unknown_rocpd_versions_and_foreign_databases_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let future = dir.path().join("future.db");
    fixtures::rocpd_early(&future, "4.0.0");
    let err = rocprof::rocpd::read(&future).unwrap_err();
    assert!(
        matches!(err, ProfileError::UnknownSchemaVersion { .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("schema version 4.0.0") && text.contains("rocpd convert -f csv"),
        "{text}"
    );

    let foreign = dir.path().join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE t (x INTEGER);")
        .unwrap();
    let err = rocprof::rocpd::read(&foreign).unwrap_err();
    assert!(err.to_string().contains("not a rocpd database"), "{err}");

    let text_file = dir.path().join("not-sqlite.db");
    std::fs::write(&text_file, "hello").unwrap();
    assert!(rocprof::rocpd::read(&text_file).is_err());

    // A `kernels` view without a column this reader needs: named in the error.
    let broken = dir.path().join("broken.db");
    fixtures::rocpd_early(&broken, "3");
    let db = rusqlite::Connection::open(&broken).unwrap();
    db.execute_batch("DROP VIEW kernels; CREATE VIEW kernels AS SELECT id, start, end FROM rocpd_kernel_dispatch;")
        .unwrap();
    drop(db);
    let err = rocprof::rocpd::read(&broken).unwrap_err();
    assert!(
        err.to_string().contains("`name` in the `kernels` view"),
        "{err}"
    );
}

#[testkit::test]
fn both_csv_releases_read_to_the_same_dispatches() {
    let dir = tempfile::tempdir().unwrap();
    let early = dir.path().join("early");
    let late = dir.path().join("late/host/5678");
    std::fs::create_dir_all(&early).unwrap();
    std::fs::create_dir_all(&late).unwrap();
    fixtures::csv_early(&early);
    fixtures::csv_late(&late);
    let e = rocprof::read_output(&early).unwrap();
    check(&e, true);
    check_counters(&e);
    let l = rocprof::read_output(&dir.path().join("late")).unwrap();
    check(&l, true);
    assert_eq!(l.arch.as_deref(), Some("gfx90a"));
}

#[testkit::test]
fn csv_without_a_needed_column_and_empty_output_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("x_kernel_trace.csv"),
        "\"Kind\",\"Kernel_Name\",\"Start_Timestamp\"\n\"KERNEL_DISPATCH\",\"k\",1\n",
    )
    .unwrap();
    let err = rocprof::read_output(dir.path()).unwrap_err();
    assert!(
        err.to_string().contains("no column `End_Timestamp`"),
        "{err}"
    );
    let empty = tempfile::tempdir().unwrap();
    let err = rocprof::read_output(empty.path()).unwrap_err();
    assert!(matches!(err, ProfileError::NoOutput { .. }), "{err}");
}

#[testkit::test]
fn ncu_csv_reads_by_column_name_in_base_units() {
    let c = ncu::read("ncu.csv".as_ref(), &fixtures::ncu_csv()).unwrap();
    check(&c, false);
    let d = &c.dispatches[0];
    assert_eq!(d.counters["launch__registers_per_thread"], 16.0);
    assert_eq!(d.counters["dram__bytes.sum"], 12.58e6);
    assert!(
        !d.counters.contains_key(ncu::DURATION),
        "the duration is the dispatch's time"
    );
    let err = ncu::read("empty.csv".as_ref(), "==PROF== nothing\n").unwrap_err();
    assert!(matches!(err, ProfileError::NoOutput { .. }), "{err}");
}
