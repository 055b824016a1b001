//! The report: plots of the history over runs and of sweeps, and an HTML page linking them.

use rocm_bench_history::history::{
    DeviceRecord, History, NewResult, RunInfo, RunStatus, Throughput, ThroughputKind,
};
use rocm_bench_history::report::write_report;

fn record(history: &mut History, commit: &str, scale: f64) {
    let run = history
        .begin_run(&RunInfo {
            git_commit: Some(commit.into()),
            git_dirty: Some(false),
            ..RunInfo::new("cargo rocm bench")
        })
        .unwrap();
    let device = DeviceRecord {
        backend: "cpu".into(),
        place: "cpu/w64".into(),
        name: "cpu (2 threads, wave 64)".into(),
        ..Default::default()
    };
    let mut add = |id: &str, param: Option<(&str, &str)>, median: f64| {
        history
            .insert_result(
                run,
                &NewResult {
                    benchmark_id: id.into(),
                    group: Some(id.rsplit_once('/').map_or(id, |p| p.0).into()),
                    param_name: param.map(|p| p.0.into()),
                    param_value: param.map(|p| p.1.into()),
                    device: device.clone(),
                    unit: "ns".into(),
                    throughput: Some(Throughput {
                        kind: ThroughputKind::Bytes,
                        per_iteration: 1e6,
                    }),
                    samples: (0..10).map(|i| median * scale + i as f64).collect(),
                    note: param.map(|_| "smoke test".into()),
                },
            )
            .unwrap();
    };
    add("saxpy/cpu/w64/n=1M", None, 1000.0);
    for (i, size) in ["1024", "65536", "4194304"].iter().enumerate() {
        add(
            &format!("stream/cpu/w64/triad/{size}"),
            Some(("size", size)),
            100.0 * (i + 1) as f64,
        );
        add(
            &format!("stream/cpu/w64/read/{size}"),
            Some(("size", size)),
            80.0 * (i + 1) as f64,
        );
    }
    history.finish_run(run, RunStatus::Complete).unwrap();
}

#[testkit::test]
fn report_draws_history_and_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    let mut history = History::open(dir.path().join("h.sqlite")).unwrap();
    record(&mut history, "1111111aaaa", 1.0);
    record(&mut history, "2222222bbbb", 1.5);
    let out = dir.path().join("report");
    let files = write_report(&history, &out).unwrap();
    let html = std::fs::read_to_string(&files.index).unwrap();
    assert!(html.contains("history-saxpy-cpu-w64-n-1M.svg"), "{html}");
    assert!(html.contains("sweep-stream-cpu-w64-size.svg"), "{html}");
    assert!(html.contains("smoke test"), "{html}");
    assert_eq!(files.plots.len(), 2, "{:?}", files.plots);
    for p in &files.plots {
        let svg = std::fs::read_to_string(p).unwrap();
        assert!(svg.starts_with("<svg"), "{}", p.display());
        assert!(svg.contains("<polyline"), "{}: no line drawn", p.display());
    }
    let sweep = std::fs::read_to_string(out.join("sweep-stream-cpu-w64-size.svg")).unwrap();
    assert!(
        sweep.contains("triad") && sweep.contains("read"),
        "both series in one plot"
    );
    let hist = std::fs::read_to_string(out.join("history-saxpy-cpu-w64-n-1M.svg")).unwrap();
    assert!(
        hist.contains("1111111") && hist.contains("2222222"),
        "runs labelled by commit"
    );
}
