//! The example crate's trials split into 3 shards, by `cargo rocm test --partition` (count, hash,
//! and duration from the unpartitioned run's events) and by `cargo nextest run --partition`: the shards together are the unpartitioned run,
//! each trial exactly once, and `cargo rocm test merge` of the three is its summary. Under
//! nextest, trials that cannot run here are listed as ignored (nextest skips them) and fail when
//! run anyway.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use rocm_protocol::{TrialEvent, TrialOutcome};

use crate::harness_common::*;

/// cargo-nextest, which this machine may lack (CI's image has it; nothing installs it).
fn nextest_missing() -> Result<(), String> {
    match Command::new("cargo-nextest").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err("cargo-nextest is not on PATH".to_owned()),
    }
}

const NEXTEST: testkit::Need = testkit::Need::check(
    "cargo-nextest",
    "cargo install --locked cargo-nextest",
    testkit::Kind::Machine,
    nextest_missing,
);

/// Quick trials: cpu only, two cases, no race check.
const QUICK: [&str; 9] = [
    "test",
    "-p",
    "basic",
    "--backend",
    "cpu",
    "--cases",
    "2",
    "--race-check=off",
    "--message-format=json",
];

/// `cargo rocm test QUICK EXTRA`: its JSON stream (saved to `save`) and its trials by name.
fn rocm_test(extra: &[&str], save: &Path) -> BTreeMap<String, TrialOutcome> {
    let args: Vec<&str> = QUICK.iter().chain(extra).copied().collect();
    let out = cargo_rocm(&args, &repo());
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{args:?}\n{stdout}\n{stderr}");
    std::fs::write(save, &stdout).unwrap();
    by_name(&events_of(&stdout))
}

fn events_of(jsonl: &str) -> Vec<TrialEvent> {
    jsonl
        .lines()
        .filter(|l| l.contains(r#""type":"trial""#))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn by_name(events: &[TrialEvent]) -> BTreeMap<String, TrialOutcome> {
    events
        .iter()
        .map(|e| (format!("{}: {}", e.binary, e.name), e.outcome))
        .collect()
}

/// Shards together are `whole`, each trial in exactly one of them.
fn assert_union_is_whole(
    what: &str,
    shards: &[Vec<TrialEvent>],
    whole: &BTreeMap<String, TrialOutcome>,
) {
    let mut union: BTreeMap<String, TrialOutcome> = BTreeMap::new();
    for (k, shard) in shards.iter().enumerate() {
        assert!(!shard.is_empty(), "{what}: shard {} is empty", k + 1);
        for e in shard {
            let key = format!("{}: {}", e.binary, e.name);
            assert!(
                union.insert(key.clone(), e.outcome).is_none(),
                "{what}: {key} is in two shards"
            );
        }
    }
    assert_eq!(&union, whole, "{what}");
}

/// `cargo rocm test merge --message-format json INPUTS`: the merged trials by name, and the
/// summary line.
fn merge(inputs: &[&Path], out_dir: &Path) -> (BTreeMap<String, TrialOutcome>, serde_json::Value) {
    let mut args = vec![
        "test".to_owned(),
        "merge".to_owned(),
        "--message-format=json".to_owned(),
        "--out".to_owned(),
        out_dir.display().to_string(),
    ];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cargo_rocm(&args, &repo());
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let summary: serde_json::Value = serde_json::from_str(
        stdout
            .lines()
            .find(|l| l.contains(r#""type":"summary""#))
            .expect("a summary line"),
    )
    .unwrap();
    for file in ["events.jsonl", "junit.xml", "summary.json"] {
        assert!(out_dir.join(file).is_file(), "no merged {file}");
    }
    (by_name(&events_of(&stdout)), summary)
}

#[testkit::test(needs = [CXX])]
fn our_shards_are_the_whole_run_and_merge_back() {
    let dir = tempfile::tempdir().unwrap();
    let whole = rocm_test(&[], &dir.path().join("whole.jsonl"));
    assert!(whole.len() >= 6, "{whole:?}");
    assert!(
        whole.values().all(|o| *o == TrialOutcome::Passed),
        "{whole:?}"
    );
    // The duration partition splits by the unpartitioned run's recorded durations.
    let history = format!(":{}", dir.path().join("whole.jsonl").display());
    for kind in ["count", "hash", "duration"] {
        let mut shards = Vec::new();
        let mut files = Vec::new();
        let suffix = if kind == "duration" {
            history.as_str()
        } else {
            ""
        };
        for k in 1..=3 {
            let file = dir.path().join(format!("{kind}-{k}.jsonl"));
            rocm_test(&["--partition", &format!("{kind}:{k}/3{suffix}")], &file);
            shards.push(events_of(&std::fs::read_to_string(&file).unwrap()));
            files.push(file);
        }
        assert_union_is_whole(kind, &shards, &whole);
        if kind == "count" {
            // Round-robin: shard sizes differ by at most one per harness binary.
            let sizes: Vec<usize> = shards.iter().map(Vec::len).collect();
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(max - min <= 1, "{sizes:?}");
        }
        let inputs: Vec<&Path> = files.iter().map(|f| f.as_path()).collect();
        let (merged, summary) = merge(&inputs, &dir.path().join(format!("merged-{kind}")));
        assert_eq!(merged, whole, "{kind}");
        assert_eq!(summary["passed"], whole.len(), "{summary}");
        assert_eq!(summary["failed"], 0, "{summary}");
        assert_eq!(summary["duplicates"], serde_json::json!([]), "{summary}");
    }
    // Overlapping inputs are reported: the same shard twice.
    let one = dir.path().join("count-1.jsonl");
    let out = cargo_rocm(
        &[
            "test",
            "merge",
            "--out",
            dir.path().join("dup").to_str().unwrap(),
            one.to_str().unwrap(),
            one.to_str().unwrap(),
        ],
        &repo(),
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("is in more than one input"), "{stderr}");
}

/// `cargo nextest ARGS` on the example crate, with the harness's variables in `env`.
fn nextest(args: &[&str], env: &[(&str, String)]) -> Output {
    let mut cmd = Command::new("cargo");
    cmd.arg("nextest")
        .args(args)
        .current_dir(repo())
        .env("CARGO_TARGET_DIR", fixture_target_dir())
        .env("CARGO_TERM_COLOR", "never")
        // The cpu backend only, as `cargo rocm test --backend cpu` builds it (shares its build).
        .env("ROCM_BACKENDS", "cpu");
    for var in [
        "ROCM_TEST_BACKEND",
        "ROCM_TEST_EVENTS",
        "ROCM_TEST_PARTITION",
        "ROCM_TEST_CASES",
        "ROCM_TEST_RACE_CHECK",
        "NEXTEST_PROFILE",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    cmd.output().expect("run cargo nextest")
}

#[testkit::test(needs = [CXX, NEXTEST])]
fn nextest_shards_are_the_whole_run_and_skip_what_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("nextest.toml");
    std::fs::write(&config, "[profile.default.junit]\npath = \"junit.xml\"\n").unwrap();
    let junit = fixture_target_dir().join("nextest/default/junit.xml");
    let run = |partition: Option<String>, events: &Path| {
        let mut args = vec![
            "run",
            "-p",
            "basic",
            "--test",
            "kernels",
            "--no-fail-fast",
            "--config-file",
            config.to_str().unwrap(),
        ];
        let p = partition.map(|p| format!("--partition={p}"));
        args.extend(p.as_deref());
        let env = [
            ("ROCM_TEST_BACKEND", "cpu".to_owned()),
            ("ROCM_TEST_CASES", "2".to_owned()),
            ("ROCM_TEST_RACE_CHECK", "off".to_owned()),
            ("ROCM_TEST_EVENTS", events.display().to_string()),
        ];
        let out = nextest(&args, &env);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}\n{stdout}\n{stderr}");
        events_of(&std::fs::read_to_string(events).unwrap_or_default())
    };
    let whole = by_name(&run(None, &dir.path().join("whole.jsonl")));
    assert!(whole.len() >= 6, "{whole:?}");
    assert!(
        whole.values().all(|o| *o == TrialOutcome::Passed),
        "{whole:?}"
    );
    let mut shards = Vec::new();
    let mut junits = Vec::new();
    for k in 1..=3 {
        shards.push(run(
            Some(format!("count:{k}/3")),
            &dir.path().join(format!("nx-{k}.jsonl")),
        ));
        let copy = dir.path().join(format!("nx-{k}.xml"));
        std::fs::copy(&junit, &copy).expect("nextest wrote its JUnit file");
        junits.push(copy);
    }
    assert_union_is_whole("nextest count", &shards, &whole);
    // nextest's JUnit of the three shards merges to the whole run (its suites are named by
    // binary id, `basic::kernels`, so compare trial names and outcomes).
    let inputs: Vec<&Path> = junits.iter().map(|f| f.as_path()).collect();
    let (merged, summary) = merge(&inputs, &dir.path().join("merged-nextest"));
    let strip = |m: &BTreeMap<String, TrialOutcome>| -> BTreeMap<String, TrialOutcome> {
        m.iter()
            .map(|(k, v)| (k.rsplit(": ").next().unwrap().to_owned(), *v))
            .collect()
    };
    assert_eq!(strip(&merged), strip(&whole));
    assert_eq!(summary["passed"], whole.len(), "{summary}");

    // Without ROCM_TEST_BACKEND the amd and nvidia trials exist but cannot run here: nextest
    // lists them as ignored ...
    let out = nextest(
        &[
            "list",
            "-p",
            "basic",
            "--test",
            "kernels",
            "--run-ignored",
            "only",
        ],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("saxpy::amd"), "{stdout}");
    assert!(stdout.contains("saxpy::nvidia"), "{stdout}");
    assert!(!stdout.contains("saxpy::cpu/w64"), "{stdout}");
    // ... and one run anyway fails with the reason instead of passing.
    let out = nextest(
        &[
            "run",
            "-p",
            "basic",
            "--test",
            "kernels",
            "--run-ignored",
            "only",
            "--no-fail-fast",
            "-E",
            "test(/^saxpy::nvidia/)",
        ],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(100), "{stdout}\n{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("this trial cannot run here"),
        "{stdout}\n{stderr}"
    );
}
