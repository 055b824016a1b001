//! The planted-bug corpus (tests/fixtures/planted): every bug fails on the cpu backend with the
//! message that points at it, the correct kernels pass, and the JSON events and JUnit XML that
//! `cargo rocm test` writes parse and carry the right counts.

use crate::harness_common;

use std::collections::HashMap;

use harness_common::*;
use rocm_protocol::{TrialEvent, TrialOutcome};

#[testkit::test(needs = [CXX])]
fn planted_bugs_fail_with_the_expected_messages() {
    let fixture = repo().join("tests/fixtures/planted");
    copy_lock(&fixture);
    let junit = tempfile::tempdir().unwrap();
    let junit_path = junit.path().join("out/junit.xml");
    let manifest = fixture.join("Cargo.toml");
    let out = cargo_rocm(
        &[
            "test",
            "--manifest-path",
            manifest.to_str().unwrap(),
            "--backend",
            "cpu",
            "--cases",
            "16",
            "--message-format",
            "json",
            "--junit",
            junit_path.to_str().unwrap(),
        ],
        &fixture,
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "exit code 1 (a trial failed)\n{stderr}"
    );

    // stdout is only JSON: one event per trial, then the summary.
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let summary = lines.last().unwrap();
    assert_eq!(summary["type"], "summary", "{stdout}");
    let events: HashMap<String, TrialEvent> = lines[..lines.len() - 1]
        .iter()
        .map(|v| serde_json::from_value::<TrialEvent>(v.clone()).unwrap())
        .map(|e| (e.name.clone(), e))
        .collect();
    // 9 checks × 2 wave sizes, and `orphan` without a check. `missing_barrier` uses blocks of
    // 64 threads, one wave at wave 64: the race detector reports the missing barrier there too
    // (lanes of a wave need one as much: the compiler may reorder their loads and stores).
    assert_eq!(events.len(), 19, "{:?}", events.keys());
    assert_eq!(summary["passed"], 4, "{summary}");
    assert_eq!(summary["failed"], 15, "{summary}");
    assert_eq!(summary["skipped"], 0, "{summary}");

    let expect = |name: &str, outcome: TrialOutcome, needles: &[&str]| {
        let e = events
            .get(name)
            .unwrap_or_else(|| panic!("no trial {name}"));
        let msg = e.message.clone().unwrap_or_default();
        assert_eq!(e.outcome, outcome, "{name}: {msg}");
        for n in needles {
            assert!(msg.contains(n), "{name}: expected `{n}` in\n{msg}");
        }
    };
    for w in ["w32", "w64"] {
        let t = |k: &str| format!("{k}::cpu/{w}");
        // A kernel that kills its process fails as itself, saying how and what it was doing.
        expect(
            &t("aborts"),
            TrialOutcome::Failed,
            &[
                "the trial's process was killed by signal 6 (SIGABRT) while launching `aborts`",
                "the other trials still run",
            ],
        );
        expect(&t("correct_copy"), TrialOutcome::Passed, &[]);
        expect(&t("sqrt_nan_allowed"), TrialOutcome::Passed, &[]);
        expect(
            &t("wrong_index"),
            TrialOutcome::Failed,
            &[
                "kernel `wrong_index` (grid (2, 1, 1) block (64, 1, 1)) differs from the reference",
                "1 of 66 elements differ",
                "worst: y[65]: got NaN",
                "never written: still the poison value",
                "input (shrunk): size n = 66",
                "reproduce with: cargo rocm test --seed=0x",
            ],
        );
        expect(
            &t("missing_barrier"),
            TrialOutcome::Failed,
            &[
                "data race on static __shared__ variable `tile` of `missing_barrier` at byte \
                 offset",
                "kernels/planted.hip:",
                "no __syncthreads() between them",
            ],
        );
        expect(
            &t("unwritten_output"),
            TrialOutcome::Failed,
            &[
                "1 of 4 elements differ",
                "worst: y[3]: got NaN, want 0.0",
                "never written: still the poison value",
                "input (shrunk): size n = 4, n = 4i32, x = [f32; 4] [0.0, 0.0, 0.0, 0.0]",
            ],
        );
        expect(
            &t("over_tolerance"),
            TrialOutcome::Failed,
            &[
                "4 of 4 elements differ",
                "tolerance: |got-want| <= 1e-5 + 1e-5*|want|",
                "got 2e-5, want 0.0 (abs err 2.000e-5",
            ],
        );
        expect(
            &t("nan_output"),
            TrialOutcome::Failed,
            &[
                "1 of 4 elements differ",
                "worst: y[3]: got NaN, want 0.0 (abs err inf, rel err inf)",
            ],
        );
        expect(
            &t("out_of_bounds"),
            TrialOutcome::Failed,
            &["out-of-bounds write", "input (shrunk): size n = 4"],
        );
    }
    expect(
        "orphan::no-check",
        TrialOutcome::Failed,
        &["kernel `orphan` (kernels/planted.hip) has no check"],
    );

    // The JUnit file parses and agrees.
    let xml = std::fs::read_to_string(&junit_path).unwrap();
    let report = quick_junit::Report::deserialize_from_str(&xml).unwrap();
    assert_eq!(report.tests, 19);
    assert_eq!(report.failures, 15);
    assert_eq!(report.test_suites[0].name.as_str(), "planted");
    // And the copies under the target directory exist.
    let results = fixture_target_dir().join("rocm/test");
    assert!(results.join("junit.xml").is_file());
    assert!(results.join("events.jsonl").is_file());
    assert!(stderr.contains("15 of 19 trials failed"), "{stderr}");
}
