//! `cargo rocm build` end to end on a fixture crate whose build script compiles HIP with
//! clang++-19 and writes a build manifest.

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

fn clang() -> String {
    std::env::var("ROCM_KERNELS_TEST_CLANG").unwrap_or_else(|_| "clang++-19".into())
}

/// A copy of the fixture crate in a temporary folder (its target dir inside it).
fn fixture() -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo-kernels");
    let dir = tempfile::tempdir().unwrap();
    for rel in ["Cargo.toml", "build.rs", "src/lib.rs", "kernels/k.hip"] {
        let to = dir.path().join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(src.join(rel), to).unwrap();
    }
    dir
}

fn cargo_rocm_build(dir: &Path, clang: &str, extra: &[&str]) -> std::process::Output {
    let manifest: PathBuf = dir.join("Cargo.toml");
    Command::cargo_bin("cargo-rocm")
        .unwrap()
        .args(["build", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(dir.join("target"))
        .args(extra)
        .env("CARGO_TERM_COLOR", "never")
        .env("ROCM_KERNELS_TEST_CLANG", clang)
        .output()
        .unwrap()
}

#[testkit::test(needs = [testkit::needs::CLANG_BUNDLER_19])]
fn builds_and_reports_kernel_resources_per_target() {
    let clang = clang();
    let dir = fixture();

    let out = cargo_rocm_build(dir.path(), &clang, &["--message-format", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let lib = &doc["libraries"][0];
    assert_eq!(lib["name"], "demo");
    assert_eq!(lib["package"], "demo-kernels");
    let rows = lib["kernels"].as_array().unwrap();
    assert_eq!(rows.len(), 6, "3 kernels x 2 targets: {rows:#?}");
    let find = |kernel: &str, target: &str| {
        rows.iter()
            .find(|r| r["kernel"] == kernel && r["target"] == target)
            .unwrap_or_else(|| panic!("{kernel} on {target} missing"))
    };
    assert_eq!(find("_Z5stagePKfPf", "gfx90a")["lds_bytes"], 1024);
    assert_eq!(find("axpy", "gfx1030")["wavefront_size"], 32);
    assert_eq!(find("axpy", "gfx90a")["agpr_count"], 0);
    assert!(find("axpy", "gfx1030")["agpr_count"].is_null());
    let spill = find("_Z6spillsPKfPfi", "gfx1030");
    assert!(spill["vgpr_spill_count"].as_u64().unwrap() > 0);
    assert_eq!(spill["demangled"], "spills(float const*, float*, int)");
    // Occupancy from the model (clang's own remark agrees, docs/benchmarks.md): a small kernel
    // at 1024 work-items fills gfx90a's 8 waves per SIMD.
    let axpy = &find("axpy", "gfx90a")["occupancy"];
    assert_eq!(
        (
            axpy["waves_per_simd"].as_u64(),
            axpy["max_waves_per_simd"].as_u64()
        ),
        (Some(8), Some(8)),
        "{axpy}"
    );
    assert!(
        rows.iter()
            .all(|r| r["occupancy"]["waves_per_simd"].as_u64().is_some()),
        "{rows:#?}"
    );
    assert_eq!(lib["notes"][0]["format"], "cubin");
    assert!(lib["notes"][0]["note"]
        .as_str()
        .unwrap()
        .contains("no ptxas resource report beside it"));
    let warnings = doc["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("spills on gfx1030")),
        "{warnings:?}"
    );
    assert!(
        stderr.contains("warning: `spills(float const*, float*, int)` spills on gfx1030"),
        "{stderr}"
    );

    // Second run: nothing to rebuild, the build script is fresh, the table is still there.
    let out = cargo_rocm_build(dir.path(), &clang, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        stdout.starts_with("kernel library `demo` (package demo-kernels)\n"),
        "{stdout}"
    );
    assert!(stdout.contains("kernels/k.hip (amd)"));
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("kernel ") && l.ends_with("occupancy")),
        "{stdout}"
    );
    let spill_line = stdout
        .lines()
        .find(|l| l.contains("spills(") && l.contains("gfx1030"))
        .unwrap();
    assert!(
        spill_line
            .split_whitespace()
            .any(|c| c.ends_with("/0") && c != "0/0"),
        "{spill_line}"
    );
    assert!(stdout.contains("no ptxas resource report beside it"));
}

#[testkit::test(needs = [testkit::needs::CLANG_BUNDLER_19])]
fn a_failing_cargo_build_exits_with_the_build_code() {
    let clang = clang();
    let dir = fixture();
    std::fs::write(dir.path().join("src/lib.rs"), "this is not rust").unwrap();
    let out = cargo_rocm_build(dir.path(), &clang, &[]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("`cargo build` failed"));
}
