//! The README's first command: `cargo rocm test` on the example crate (examples/basic) passes on
//! the cpu backend, and a freshly generated `cargo rocm new` crate passes too.

use crate::harness_common;

use harness_common::*;

#[testkit::test(needs = [CXX])]
fn example_crate_passes() {
    let repo = repo();
    // `--test NAME` picks the harness, as `cargo test --test NAME` does.
    let out = cargo_rocm(
        &[
            "test",
            "-p",
            "basic",
            "--test",
            "kernels",
            "--backend",
            "cpu",
        ],
        &repo,
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("rocm-test summary"), "{stdout}");
    let row = |k: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("kernels: {k} ")))
            .unwrap_or_else(|| panic!("no row for {k}:\n{stdout}"))
            .to_owned()
    };
    for k in ["saxpy", "block_sum"] {
        let r = row(k);
        assert_eq!(r.matches("pass").count(), 2, "{k}: {r}");
    }
    // Every trial passed (`--backend cpu`: nothing is skipped), however many checks it has.
    let totals = stdout
        .lines()
        .find(|l| l.ends_with(" passed, 0 failed, 0 skipped"))
        .unwrap_or_else(|| panic!("no all-passed summary line:\n{stdout}"));
    let (trials, passed) = totals.split_once(" trials: ").unwrap();
    assert_eq!(
        passed,
        format!("{trials} passed, 0 failed, 0 skipped"),
        "{totals}"
    );
    // A name that is no rocm-test harness: exit 5, naming the harnesses there are.
    let out = cargo_rocm(&["test", "-p", "basic", "--test", "kernel"], &repo);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("no rocm-test harness named `kernel`")
            && stderr.contains("kernels (basic)"),
        "{stderr}"
    );
}

#[testkit::test(needs = [CXX])]
fn fresh_crate_passes_first_try() {
    let dir = tempfile::tempdir().unwrap();
    let krate = dir.path().join("fresh-kernels");
    let out = cargo_rocm(&["new", krate.to_str().unwrap()], dir.path());
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("Created crate `fresh-kernels`"), "{stderr}");
    copy_lock(&krate);
    // Every backend: amd and nvidia are skipped with their reasons on a machine without GPUs.
    let out = cargo_rocm(&["test"], &krate);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("saxpy"), "{stdout}");
    assert!(stdout.contains("block_sum"), "{stdout}");
    assert!(stdout.contains(" 0 failed"), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("pass") && l.contains("block_sum")),
        "{stdout}"
    );

    // A second `new` into the same place is refused.
    let out = cargo_rocm(&["new", krate.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("already exists and is not empty"));
}
