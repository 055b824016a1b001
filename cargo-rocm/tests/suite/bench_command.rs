//! `cargo rocm bench` end to end on the cpu backend: two runs of a fixture crate, then a
//! comparison that calls a deliberately slowed kernel slower and an unchanged one unchanged; a
//! crashing bench binary named with what it measured kept; a damaged history, an unknown suite
//! and a backend without a device refused with their names.

use std::path::PathBuf;
use std::process::{Command, Output};

use crate::harness_common::*;

fn fixture() -> PathBuf {
    repo().join("tests/fixtures/bench-regression")
}

fn bench(args: &[&str], history: &std::path::Path, env: &[(&str, &str)]) -> Output {
    let manifest = fixture().join("Cargo.toml");
    let mut all = vec![
        "bench",
        "--manifest-path",
        manifest.to_str().unwrap(),
        "--history",
        history.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-rocm"));
    cmd.args(&all)
        .current_dir(fixture())
        .env("CARGO_TARGET_DIR", fixture_target_dir())
        .env("CARGO_TERM_COLOR", "never")
        .env_remove("ROCM_BENCH_FIXTURE_SLOW")
        .env_remove("ROCM_BENCH_FIXTURE_CRASH");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run cargo-rocm")
}

const QUICK: &[&str] = &[
    "--backend",
    "cpu",
    "--debug",
    "--samples",
    "20",
    "--warm-up-ms",
    "200",
    "--measurement-ms",
    "600",
    "--no-report",
];

#[testkit::test(needs = [CXX])]
fn a_slowed_kernel_is_flagged_against_an_unchanged_one() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.sqlite");
    let first = bench(QUICK, &history, &[]);
    let (stdout, stderr) = text(&first);
    assert_eq!(first.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("spin/cpu/w64/steady"), "{stdout}");
    let second = bench(QUICK, &history, &[("ROCM_BENCH_FIXTURE_SLOW", "16")]);
    let (stdout, stderr) = text(&second);
    assert_eq!(second.status.code(), Some(0), "{stdout}\n{stderr}");

    // Other tests of this binary build and run crates beside this one, so the machine's load
    // can move an unchanged benchmark's median by 2x between the runs: the verdicts on real
    // samples are held to a sixteenfold slowdown against the unchanged benchmark's ratio, and
    // "no change" within the band is tested on fixed samples (rocm-stats, rocm-bench-history).
    let cmp = bench(&["compare", "--threshold", "25"], &history, &[]);
    let (stdout, stderr) = text(&cmp);
    assert_eq!(cmp.status.code(), Some(0), "{stdout}\n{stderr}");
    let row = |id: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("no row for {id}:\n{stdout}"))
            .to_owned()
    };
    let ratio = |id: &str| -> f64 {
        let r = row(id);
        let cols: Vec<&str> = r.split_whitespace().collect();
        // ... base median, new median, ratio, interval, verdict (one or two words)
        let at = cols
            .iter()
            .position(|c| c.contains(".."))
            .unwrap_or_else(|| panic!("no interval in {r}"));
        cols[at - 1]
            .parse()
            .unwrap_or_else(|_| panic!("no ratio in {r}"))
    };
    assert!(row("spin/cpu/w64/tunable").ends_with("slower"), "{stdout}");
    let (tunable, steady) = (ratio("spin/cpu/w64/tunable"), ratio("spin/cpu/w64/steady"));
    assert!(
        tunable > 4.0 * steady,
        "the slowed kernel's ratio {tunable} should stand far above the unchanged one's {steady}:\n{stdout}"
    );
    let gate = bench(
        &["compare", "--threshold", "25", "--fail-on-regression"],
        &history,
        &[],
    );
    assert_eq!(gate.status.code(), Some(1), "{}", text(&gate).1);

    // The runs, a baseline, the exports and the report.
    let list = bench(&["list"], &history, &[]);
    assert_eq!(text(&list).0.lines().count(), 3, "{}", text(&list).0);
    assert_eq!(
        bench(&["baseline", "save", "before", "1"], &history, &[])
            .status
            .code(),
        Some(0)
    );
    let vs = bench(
        &[
            "compare",
            "before",
            "latest",
            "--threshold",
            "25",
            "--message-format",
            "json",
        ],
        &history,
        &[],
    );
    let json: serde_json::Value = serde_json::from_str(&text(&vs).0).unwrap();
    assert_eq!(json["compared"].as_array().unwrap().len(), 2);
    let csv = bench(&["export", "--format", "csv"], &history, &[]);
    assert_eq!(text(&csv).0.lines().count(), 5, "header + 4 results");
    let report = bench(&["report"], &history, &[]);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report).1);
    assert!(dir.path().join("report/index.html").is_file());
}

#[testkit::test(needs = [CXX])]
fn a_crashing_bench_binary_is_named_and_what_it_measured_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.sqlite");
    let out = bench(QUICK, &history, &[("ROCM_BENCH_FIXTURE_CRASH", "1")]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("bench binary `spin` of `bench-regression`"),
        "{stderr}"
    );
    assert!(stderr.contains("SIGABRT"), "{stderr}");
    assert!(
        stderr.contains("1 result(s) measured are recorded"),
        "{stderr}"
    );
    let show = bench(&["show", "--message-format", "json"], &history, &[]);
    let json: serde_json::Value = serde_json::from_str(&text(&show).0).unwrap();
    assert_eq!(json["run"]["status"], "interrupted");
    assert_eq!(json["results"][0]["benchmark_id"], "spin/cpu/w64/steady");
}

#[testkit::test]
fn bad_input_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.sqlite");
    std::fs::write(&history, b"this is not a database, it is a note").unwrap();
    let out = bench(&["list"], &history, &[]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains(history.to_str().unwrap()), "{stderr}");
    assert!(stderr.contains("not a SQLite database"), "{stderr}");
    assert_eq!(
        std::fs::read(&history).unwrap(),
        b"this is not a database, it is a note"
    );

    let out = bench(
        &["--suite", "no-such-suite"],
        &dir.path().join("h2.sqlite"),
        &[],
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unknown benchmark suite `no-such-suite`"),
        "{stderr}"
    );

    // No NVIDIA GPU on the machines this suite runs on.
    if rocm_kernels::runtime::Device::probe()
        .available
        .iter()
        .all(|d| d.backend() != rocm_kernels::Backend::Nvidia)
    {
        let out = bench(&["--backend", "nvidia"], &dir.path().join("h3.sqlite"), &[]);
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert!(
            stderr.contains("backend `nvidia` has no device here"),
            "{stderr}"
        );
    }
}
