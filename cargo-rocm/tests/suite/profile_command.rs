//! `cargo rocm profile`: a real run on the cpu backend (the example crate's kernel checks, timed
//! by the runtime's launch log) with its JSON, HTML and stability verdicts; and the clear errors
//! and exit codes of a failing workload and of missing profilers.

use crate::harness_common;

use harness_common::*;

#[testkit::test(needs = [CXX])]
fn example_checks_profile_on_the_cpu_backend() {
    let repo = repo();
    let out_dir = tempfile::tempdir().unwrap();
    let out = cargo_rocm(
        &[
            "profile",
            "-p",
            "basic",
            "--test",
            "kernels",
            "--backend",
            "cpu",
            "--message-format",
            "json",
            "--output-dir",
            out_dir.path().to_str().unwrap(),
        ],
        &repo,
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["schema"], "cargo-rocm-profile");
    assert_eq!(report["backend"], "cpu");
    assert_eq!(report["tool"]["name"], "rocm-kernels launch log");
    let kernels = report["kernels"].as_array().unwrap();
    for name in ["saxpy", "block_sum"] {
        let k = kernels
            .iter()
            .find(|k| k["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {stdout}"));
        assert!(k["calls"].as_u64().unwrap() >= 5, "{k}");
        assert!(k["time"]["median_ns"].as_f64().unwrap() > 0.0, "{k}");
        let class = k["stability"]["class"].as_str().unwrap();
        assert!(
            ["stable", "noisy", "unstable", "too_few_samples"].contains(&class),
            "{k}"
        );
        assert_eq!(k["launch"]["block"][0], 256, "{k}");
    }
    let share: f64 = kernels.iter().map(|k| k["share"].as_f64().unwrap()).sum();
    assert!((share - 1.0).abs() < 1e-6);
    let html = std::fs::read_to_string(out_dir.path().join("profile.html")).unwrap();
    assert!(
        html.contains("<svg") && html.contains("block_sum"),
        "{html}"
    );
    assert!(out_dir.path().join("profile.json").exists());
    assert!(out_dir.path().join("launches.jsonl").exists());
}

#[testkit::test]
fn failing_workloads_and_missing_profilers_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().to_str().unwrap();
    let out = cargo_rocm(
        &[
            "profile",
            "--backend",
            "cpu",
            "--output-dir",
            o,
            "--",
            "sh",
            "-c",
            "echo broken >&2; exit 7",
        ],
        dir.path(),
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("exit status 7") && stderr.contains("broken"),
        "{stderr}"
    );

    let out = cargo_rocm(
        &[
            "profile",
            "--backend",
            "amd",
            "--rocprofv3",
            "/nonexistent/rocprofv3",
            "--output-dir",
            o,
            "--",
            "true",
        ],
        dir.path(),
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("install ROCprofiler-SDK"), "{stderr}");

    let out = cargo_rocm(
        &[
            "profile",
            "--backend",
            "nvidia",
            "--ncu",
            "/nonexistent/ncu",
            "--output-dir",
            o,
            "--",
            "true",
        ],
        dir.path(),
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("Nsight Compute"), "{stderr}");

    let out = cargo_rocm(&["profile", "--output-dir", o], dir.path());
    assert_eq!(out.status.code(), Some(2));

    // A workload that launches nothing: an empty profile, said so.
    let out = cargo_rocm(
        &[
            "profile",
            "--backend",
            "cpu",
            "--output-dir",
            o,
            "--",
            "true",
        ],
        dir.path(),
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("0 dispatches") && stderr.contains("no kernel dispatch"),
        "{stdout}\n{stderr}"
    );

    let bad = dir.path().join("bad.db");
    std::fs::write(&bad, "not a database").unwrap();
    let out = cargo_rocm(
        &[
            "profile",
            "--from",
            bad.to_str().unwrap(),
            "--output-dir",
            o,
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(5), "{}", text(&out).1);
}
