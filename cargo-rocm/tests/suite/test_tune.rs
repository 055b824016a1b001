//! `cargo rocm tune` on the cpu backend: the planted fixture (tests/fixtures/tuning) shows that
//! every candidate is verified (wrong results, hangs and compile failures are recorded and never
//! chosen), that restrictions hold, that a killed run resumes from its cache without losing a
//! measurement, that caches round-trip through Kernel Tuner's format, and that bad declarations
//! are clear errors that leave the caches alone. An external program is tuned too.

use crate::harness_common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness_common::*;
use rocm_protocol::tune::TuneReport;

fn fixture() -> PathBuf {
    let f = repo().join("tests/fixtures/tuning");
    copy_lock(&f);
    f
}

fn tune(args: &[&str]) -> (Option<i32>, TuneReport, String) {
    let fixture = fixture();
    let manifest = fixture.join("Cargo.toml");
    let mut all = vec![
        "tune",
        "--manifest-path",
        manifest.to_str().unwrap(),
        "--backend",
        "cpu",
        "--time-limit",
        "2",
        "--no-wisdom",
        "--message-format",
        "json",
    ];
    all.extend_from_slice(args);
    let out = cargo_rocm(&all, &fixture);
    let (stdout, stderr) = text(&out);
    let report = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("stdout is not a report ({e}):\n{stdout}\n{stderr}"));
    (out.status.code(), report, stderr)
}

/// The cache files of tunable `name`.
fn caches(name: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![fixture_target_dir().join("rocm/tune").join(name)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out
}

/// The configurations measured in a cache (`"BLOCK=64,UNROLL=2"`), in order.
fn measured(cache: &Path) -> Vec<String> {
    std::fs::read_to_string(cache)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "result")
        .map(|v| v["key"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[testkit::test(needs = [CXX])]
fn tuning_verifies_restricts_resumes_and_refuses_bad_declarations() {
    // Every configuration: the planted failures are recorded by class and never chosen.
    let (code, report, stderr) = tune(&[
        "--fresh",
        "--strategy",
        "brute_force",
        "--export-kt",
        "--",
        "scale",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let run = &report.runs[0];
    assert_eq!((run.space, run.raw_space, run.evaluations), (18, 24, 18));
    assert_eq!(
        run.failures.get("wrong_result"),
        Some(&3),
        "UNROLL=3: {run:?}"
    );
    assert_eq!(run.failures.get("launch"), Some(&2), "UNROLL=5 hangs");
    assert_eq!(run.failures.get("compile"), Some(&2), "UNROLL=7");
    let best = run.best.as_ref().expect("a best configuration");
    let unroll = best.config["UNROLL"].as_i64().unwrap();
    assert!([1, 2, 4].contains(&unroll), "{best:?}");
    // The restriction: BLOCK * UNROLL <= 512 for everything evaluated.
    for s in &run.trace {
        let (b, u) = (
            s.config["BLOCK"].as_i64().unwrap(),
            s.config["UNROLL"].as_i64().unwrap(),
        );
        assert!(b * u <= 512, "{:?}", s.config);
        if [3, 5, 7].contains(&u) {
            assert_ne!(s.outcome, "ok", "{:?}", s);
        }
    }
    assert!(run.default.as_ref().and_then(|d| d.time_ms).is_some());
    assert!(run.speedup.is_some());
    let html = fixture_target_dir().join("rocm/tune/report.html");
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));

    // Kernel Tuner's format: the exported cache, imported into a fresh cache, answers every
    // configuration without measuring, with the same best.
    let cache = run.cache_file.clone().unwrap();
    let kt = cache.with_extension("kt.json");
    assert!(kt.is_file(), "{}", kt.display());
    let kt_text = std::fs::read_to_string(&kt).unwrap();
    assert!(kt_text.contains("\"CompilationFailedConfig\""), "{kt_text}");
    let (code, again, stderr) = tune(&[
        "--fresh",
        "--strategy",
        "brute_force",
        "--import-kt",
        kt.to_str().unwrap(),
        "--",
        "scale",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let r = &again.runs[0];
    assert_eq!(r.cache_hits, 18, "{r:?}");
    assert_eq!(r.overhead.measured, 0);
    assert_eq!(r.best.as_ref().unwrap().config, best.config);

    // Killed mid-run, then run again: everything measured before the kill is still in the
    // cache, is not measured again, and the rerun (same seed) retraces and finishes the run.
    let fixture = fixture();
    let manifest = fixture.join("Cargo.toml");
    let args = [
        "tune",
        "--manifest-path",
        manifest.to_str().unwrap(),
        "--backend",
        "cpu",
        "--time-limit",
        "2",
        "--no-wisdom",
        "--strategy",
        "random",
        "--seed",
        "11",
        "--budget",
        "14",
        "--",
        "scale",
    ];
    let mut fresh = args.to_vec();
    fresh.insert(1, "--fresh");
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_cargo-rocm"))
        .args(&fresh)
        .current_dir(&fixture)
        .env("CARGO_TARGET_DIR", fixture_target_dir())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let before = loop {
        let m = measured(&cache);
        // The default, then at least three of the strategy's.
        if m.len() >= 4 || started.elapsed() > Duration::from_secs(120) {
            break m;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // kill(2) on the process group the child leads (process_group(0) above), not the `kill`
    // program: procps-ng 4.0.2's (Debian 12) turns `kill -9 -PGID` into kill(-1, SIGKILL), which
    // as root ends every process of the machine, the CI runner included.
    let pgid = i32::try_from(child.id()).unwrap();
    // Safety: a plain syscall on a process group this test created.
    let rc = unsafe { libc::kill(-pgid, libc::SIGKILL) };
    assert_eq!(
        rc,
        0,
        "kill(-{pgid}, SIGKILL): {}",
        std::io::Error::last_os_error()
    );
    let _ = child.wait();
    assert!(
        before.len() >= 4,
        "the run measured too little before the kill: {before:?}"
    );
    let before = measured(&cache);
    let out = cargo_rocm(
        &[
            &args[..args.len() - 2],
            &["--message-format", "json", "--", "scale"],
        ]
        .concat(),
        &fixture,
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let resumed: TuneReport = serde_json::from_str(stdout.trim()).unwrap();
    let r = &resumed.runs[0];
    assert_eq!(r.evaluations, 14);
    let after = measured(&cache);
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "nothing measured was lost"
    );
    let unique: HashSet<&String> = after.iter().collect();
    assert_eq!(
        unique.len(),
        after.len(),
        "nothing was measured twice: {after:?}"
    );
    // Every evaluation the first run had measured is answered from the cache (all of them when
    // the first run got further than the resumed run's budget before the kill landed).
    let from_cache = r.trace.iter().filter(|s| s.from_cache).count();
    assert!(
        from_cache >= before.len().min(r.evaluations as usize) - 1,
        "{from_cache} answered from the cache, {} measured before the kill",
        before.len()
    );

    // Bad declarations: clear errors, exit 1, no cache written or changed.
    let snapshot = std::fs::read(&cache).unwrap();
    for (name, needle) in [
        ("empty", "the search space is empty"),
        ("missing", "`NOT_IN_KERNEL` does not appear in"),
        ("panics", "the reference of check `copy` panicked: planted"),
    ] {
        let (code, report, stderr) = tune(&["--", name]);
        assert_eq!(code, Some(1), "{name}: {stderr}");
        let message = &report.errors[0].message;
        assert!(message.contains(needle), "{name}: {message}");
        assert!(
            caches(name).iter().all(|c| measured(c).is_empty()),
            "{name}"
        );
    }
    assert_eq!(std::fs::read(&cache).unwrap(), snapshot);
}

#[testkit::test]
fn an_external_program_is_tuned_through_its_command_template() {
    let dir = tempfile::tempdir().unwrap();
    let out = cargo_rocm(
        &[
            "tune",
            "--target-dir",
            dir.path().to_str().unwrap(),
            "--cmd-template",
            "echo time_ms={A}{B}; test {B} -ne 9",
            "--param",
            "A=1,2,3",
            "--param",
            "B=9,4,5",
            "--restrict",
            "A != 3",
            "--time-key",
            "time_ms",
            "--strategy",
            "brute_force",
            "--default",
            "A=2,B=5",
            "--message-format",
            "json",
        ],
        dir.path(),
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: TuneReport = serde_json::from_str(stdout.trim()).unwrap();
    let run = &report.runs[0];
    assert_eq!(run.evaluations, 6);
    assert_eq!(run.failures.get("launch"), Some(&2), "B=9 exits with 1");
    let best = run.best.as_ref().unwrap();
    assert_eq!(best.time_ms, Some(14.0));
    assert_eq!(run.speedup, Some(25.0 / 14.0));
    // A placeholder that is not a parameter is a usage error.
    let out = cargo_rocm(
        &["tune", "--cmd-template", "./app {X} {Y}", "--param", "X=1"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("{Y}"), "{}", text(&out).1);
}

/// `--partition K/N` (the jobs of a Slurm array, `SLURM_ARRAY_TASK_ID` set by hand) splits a
/// brute force into three caches that, merged by `cargo rocm tune merge`, hold exactly the
/// unsplit run's configurations with the same outcomes, and give a wisdom entry.
#[testkit::test(needs = [CXX])]
fn a_space_split_in_three_jobs_and_merged_equals_the_unsplit_brute_force() {
    let scratch = tempfile::tempdir().unwrap();
    let job = |partition: Option<&str>, name: &str| {
        let dir = scratch.path().join(name);
        let mut args = vec![
            "--fresh",
            "--strategy",
            "brute_force",
            "--out-dir",
            dir.to_str().unwrap(),
        ];
        if let Some(p) = partition {
            args.extend(["--partition", p]);
        }
        args.extend(["--", "scale"]);
        let (code, report, stderr) = tune(&args);
        assert_eq!(code, Some(0), "{name}: {stderr}");
        (dir, report.runs[0].clone())
    };
    let (_, whole) = job(None, "whole");
    let outcome = |r: &rocm_protocol::tune::TuneRun| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = r
            .trace
            .iter()
            .map(|s| (format!("{:?}", s.config), s.outcome.clone()))
            .collect();
        v.sort();
        v
    };
    let mut union = Vec::new();
    let mut dirs = Vec::new();
    for k in 1..=3 {
        let (dir, run) = job(Some(&format!("{k}/3")), &format!("job{k}"));
        assert_eq!(run.partition.as_deref(), Some(format!("{k}/3").as_str()));
        // The default configuration is measured by every job (the speed-up is against it);
        // everything else by exactly one.
        union.extend(outcome(&run));
        dirs.push(dir);
    }
    let default = whole.default.as_ref().unwrap().config.clone();
    let default_key = format!("{default:?}");
    union.retain(|(c, _)| *c != default_key);
    union.sort();
    let mut expected = outcome(&whole);
    expected.retain(|(c, _)| *c != default_key);
    assert_eq!(
        union, expected,
        "each configuration exactly once, same outcome"
    );

    let merged_dir = scratch.path().join("merged");
    let wisdom = scratch.path().join("wisdom.json");
    let mut args = vec!["tune", "merge"];
    let dir_texts: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    args.extend(dir_texts.iter().map(String::as_str));
    args.extend([
        "--out",
        merged_dir.to_str().unwrap(),
        "--wisdom",
        wisdom.to_str().unwrap(),
        "--message-format",
        "json",
    ]);
    let out = cargo_rocm(&args, &fixture());
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let merged: TuneReport = serde_json::from_str(stdout.trim()).unwrap();
    let m = &merged.runs[0];
    assert_eq!(m.evaluations, whole.evaluations, "{m:?}");
    assert_eq!(m.failures, whole.failures);
    let best = m.best.as_ref().unwrap();
    let unroll = best.config["UNROLL"].as_i64().unwrap();
    assert!([1, 2, 4].contains(&unroll), "{best:?}");
    let mut merged_keys = measured(m.cache_file.as_ref().unwrap());
    merged_keys.sort();
    merged_keys.dedup();
    let mut whole_keys = measured(whole.cache_file.as_ref().unwrap());
    whole_keys.sort();
    whole_keys.dedup();
    assert_eq!(merged_keys, whole_keys);
    let w = std::fs::read_to_string(&wisdom).unwrap();
    assert!(w.contains("\"scale\"") && w.contains("UNROLL"), "{w}");

    // Not a tune folder: a clear error, exit 5.
    let out = cargo_rocm(
        &[
            "tune",
            "merge",
            scratch.path().join("nope").to_str().unwrap(),
        ],
        &fixture(),
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("is not a folder"), "{stderr}");
}
