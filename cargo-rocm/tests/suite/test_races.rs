//! The synchronisation-bug corpus (tests/fixtures/races): every planted bug fails the default
//! `cargo rocm test --backend cpu` with a message naming the place, its "reproduce with" line
//! reproduces it (execution mode included), and every correct kernel passes in every mode at
//! both wave sizes: the synchronisation idioms of real code (kernels/idioms.hip: CAS loops seeded
//! by a plain read, last-block tickets, locks and flags, `__syncwarp`, cooperative groups,
//! atomics then plain reads) without a false race report, and each one's broken twin failing.

use crate::harness_common;

use std::collections::HashMap;
use std::path::Path;

use harness_common::*;
use rocm_protocol::{TrialEvent, TrialOutcome};

/// `cargo rocm test` on the fixture with `extra` arguments: the trials' events by name.
fn run(fixture: &Path, extra: &[&str]) -> HashMap<String, TrialEvent> {
    run_with_env(fixture, extra, &[])
}

/// [`run`] with variables `env` set.
fn run_with_env(
    fixture: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> HashMap<String, TrialEvent> {
    let manifest = fixture.join("Cargo.toml");
    let mut args = vec![
        "test",
        "--manifest-path",
        manifest.to_str().unwrap(),
        "--backend",
        "cpu",
        "--message-format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = cargo_rocm_command(&args, fixture)
        .envs(env.iter().copied())
        .output()
        .expect("run cargo-rocm");
    let (stdout, stderr) = text(&out);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "cargo rocm test {extra:?} ran its trials\n{stderr}"
    );
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    lines
        .iter()
        .filter(|v| v["type"] != "summary")
        .map(|v| serde_json::from_value::<TrialEvent>(v.clone()).unwrap())
        .map(|e| (e.name.clone(), e))
        .collect()
}

fn message(events: &HashMap<String, TrialEvent>, name: &str) -> (TrialOutcome, String) {
    let e = events
        .get(name)
        .unwrap_or_else(|| panic!("no trial {name} in {:?}", events.keys()));
    (e.outcome, e.message.clone().unwrap_or_default())
}

#[testkit::test(needs = [CXX])]
fn every_planted_race_fails_by_default_naming_the_place() {
    let fixture = repo().join("tests/fixtures/races");
    copy_lock(&fixture);
    let events = run(&fixture, &[]);
    assert_eq!(events.len(), 100, "{:?}", events.keys());
    // Static `__shared__` arrays by name (the binary's TLS symbols): "`s` of `bug_reverse`".
    let shared = [
        "data race on static __shared__ variable `s` of `",
        "no __syncthreads() between them",
        "kernels/races.hip:",
    ];
    let partial = ["partial barrier", "(the barrier at kernels/races.hip:"];
    let idiom_shared = [
        "data race on static __shared__ variable `",
        "kernels/idioms.hip:",
    ];
    let expected: Vec<(&str, Vec<&str>)> = vec![
        ("bug_before_loop", shared.to_vec()),
        ("bug_inside_loop", shared.to_vec()),
        ("bug_after_loop", shared.to_vec()),
        ("bug_upsweep", shared.to_vec()),
        ("bug_downsweep", shared.to_vec()),
        (
            "bug_reverse",
            [
                &shared[..],
                &["static __shared__ variable `s` of `bug_reverse` at byte offset"],
            ]
            .concat(),
        ),
        ("bug_pair_swap", shared.to_vec()),
        (
            "bug_shared_histogram",
            vec![
                "data race on static __shared__ variable `local` of `bug_shared_histogram` at \
                 byte offset",
                "no __syncthreads() between them",
                "kernels/races.hip:",
            ],
        ),
        (
            "bug_global_histogram",
            vec![
                "data race on `hist` (parameter #1, unsigned int*)",
                "no __syncthreads() between them",
            ],
        ),
        (
            "bug_dot",
            vec![
                "data race on `out` (parameter #2, float*) at byte offset 0",
                "the blocks of a launch run in any order",
            ],
        ),
        (
            "bug_block_prefix",
            vec![
                "data race on `totals` (parameter #1, float*)",
                "of block (1,0,0)",
                "the blocks of a launch run in any order",
            ],
        ),
        ("bug_barrier_under_if", partial.to_vec()),
        ("bug_count_ternary", partial.to_vec()),
        (
            "bug_pair_sum",
            vec!["out-of-bounds read", "`x` (parameter #0, const float*)"],
        ),
        ("bug_copy2", vec!["never written: still the poison value"]),
        // kernels/idioms.hip: the broken twins of correct idioms.
        (
            "bug_cas_max",
            vec![
                "data race on `m` (parameter #1, float*) at byte offset 0",
                "kernels/idioms.hip:",
            ],
        ),
        (
            "bug_cas_add",
            vec!["data race on `s` (parameter #1, float*) at byte offset 0"],
        ),
        (
            "bug_last_block",
            vec![
                "data race on `partial` (parameter #1, float*)",
                "the blocks of a launch run in any order",
            ],
        ),
        (
            "bug_lock",
            vec![
                "data race on `total` (parameter #2, float*)",
                "the blocks of a launch run in any order",
            ],
        ),
        (
            "bug_flag",
            vec![
                "data race on `first` (parameter #1, float*)",
                "no __syncthreads() between them",
            ],
        ),
        ("bug_warp_tail", idiom_shared.to_vec()),
        ("bug_shfl_sync", idiom_shared.to_vec()),
        ("bug_cg_block", idiom_shared.to_vec()),
        ("bug_cg_tile", idiom_shared.to_vec()),
        // Atomics read plainly without the barrier: a wrong count, not a race report (a plain
        // read racing an atomic write is reported in strict mode only).
        ("bug_count_then_read", vec!["differs from the reference"]),
    ];
    for wave in ["w32", "w64"] {
        for (kernel, needles) in &expected {
            let (outcome, msg) = message(&events, &format!("{kernel}::cpu/{wave}"));
            assert_eq!(outcome, TrialOutcome::Failed, "{kernel} at {wave} passed");
            for n in needles
                .iter()
                .chain(&["reproduce with: cargo rocm test --seed=0x"])
            {
                assert!(
                    msg.contains(n),
                    "{kernel} at {wave}: expected `{n}` in\n{msg}"
                );
            }
        }
        for (name, outcome) in events.iter().map(|(n, e)| (n, e.outcome)) {
            if name.starts_with("ok_") {
                assert_eq!(outcome, TrialOutcome::Passed, "{name}: {:?}", events[name]);
            }
        }
    }
    // Assuming waves of 32 lanes is right at wave 32 and wrong at 64.
    assert_eq!(
        message(&events, "bug_group_broadcast::cpu/w32").0,
        TrialOutcome::Passed
    );
    let (outcome, msg) = message(&events, "bug_group_broadcast::cpu/w64");
    assert_eq!(outcome, TrialOutcome::Failed);
    assert!(msg.contains("worst: y[32]"), "{msg}");

    // The reproduce line reproduces: run what it says (on one trial).
    let (_, msg) = message(&events, "bug_inside_loop::cpu/w32");
    let line = msg
        .lines()
        .find_map(|l| l.split("reproduce with: cargo rocm test ").nth(1))
        .expect("a reproduce line");
    let words: Vec<String> = line
        .split_whitespace()
        .map(|w| w.trim_matches('\'').to_owned())
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let again = run(&fixture, &words);
    assert_eq!(again.len(), 1, "{:?}", again.keys());
    let (outcome, again_msg) = message(&again, "bug_inside_loop::cpu/w32");
    assert_eq!(outcome, TrialOutcome::Failed);
    assert_eq!(
        again_msg.lines().next(),
        msg.lines().next(),
        "the same failure"
    );
}

#[testkit::test(needs = [CXX])]
fn correct_kernels_pass_in_every_mode_and_reproduce_lines_carry_the_mode() {
    let fixture = repo().join("tests/fixtures/races");
    copy_lock(&fixture);
    for mode in [
        &["--race-check=all"][..],
        &["--no-race-check", "--cpu-exec", "regions"],
        &["--no-race-check", "--cpu-exec", "fibers"],
        &["--no-race-check", "--cpu-exec", "blocks"],
    ] {
        let mut args = mode.to_vec();
        args.extend(["--", "ok_"]);
        let events = run(&fixture, &args);
        assert_eq!(events.len(), 48, "{mode:?}: {:?}", events.keys());
        for (name, e) in &events {
            assert_eq!(e.outcome, TrialOutcome::Passed, "{mode:?}: {name}: {e:?}");
        }
    }
    // A failure found in a non-default mode says how to run in it again.
    let events = run(
        &fixture,
        &[
            "--no-race-check",
            "--cpu-exec",
            "blocks",
            "--",
            "bug_group_broadcast::cpu/w64",
        ],
    );
    let (outcome, msg) = message(&events, "bug_group_broadcast::cpu/w64");
    assert_eq!(outcome, TrialOutcome::Failed);
    assert!(
        msg.contains(
            "--race-check=off --cpu-exec=blocks -- 'bug_group_broadcast::cpu/w64' --exact"
        ),
        "{msg}"
    );
}

#[testkit::test(needs = [CXX])]
fn strict_mode_reports_a_plain_read_racing_an_atomic_write() {
    // The CAS loop seeded by a plain read passes by default (above) but is a formal data race,
    // which ROCM_RACE_STRICT=1 (CpuOptions::race_strict) reports.
    let fixture = repo().join("tests/fixtures/races");
    copy_lock(&fixture);
    let events = run_with_env(
        &fixture,
        &["--", "ok_cas_max"],
        &[("ROCM_RACE_STRICT", "1")],
    );
    assert_eq!(events.len(), 2, "{:?}", events.keys());
    for wave in ["w32", "w64"] {
        let (outcome, msg) = message(&events, &format!("ok_cas_max::cpu/{wave}"));
        assert_eq!(outcome, TrialOutcome::Failed, "{wave}");
        assert!(
            msg.contains("data race on `m` (parameter #1, float*) at byte offset 0")
                && msg.contains("updated it atomically"),
            "{wave}: {msg}"
        );
    }
}

/// Issue 26: race reports name both source lines under `--release` too. Cargo's release profile
/// strips debug information by default, which took the race variant's line tables out of the
/// test binary (`at code address 0x…`); `cargo rocm test` keeps them
/// (`CARGO_PROFILE_RELEASE_STRIP=false` for the harness builds).
#[testkit::test(needs = [CXX])]
fn a_release_build_race_report_names_both_source_lines() {
    let fixture = repo().join("tests/fixtures/races");
    copy_lock(&fixture);
    let name = "bug_global_histogram::cpu/w64";
    let events = run(&fixture, &["--release", "--", name, "--exact"]);
    let (outcome, msg) = message(&events, name);
    assert_eq!(outcome, TrialOutcome::Failed, "{msg}");
    assert!(!msg.contains("code address"), "{msg}");
    assert!(
        msg.matches("kernels/races.hip:").count() >= 2,
        "both accesses' lines: {msg}"
    );
}
