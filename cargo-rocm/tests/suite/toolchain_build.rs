//! A crate pinned with `rocm-toolchain.toml` is built with the pinned toolchain: Debian's ROCm
//! linked as a managed toolchain compiles the crate's AMD code objects under `cargo rocm build`,
//! `cargo rocm env` in the crate shows it, and a pin to a toolchain that is not installed makes
//! the build say so (and skip `amd`) instead of silently using another install.

use crate::harness_common;

use std::path::Path;
use std::process::{Command, Output};

use harness_common::{copy_lock, fixture_target_dir, text, CXX};

fn cargo_rocm(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-rocm"))
        .args(args)
        .env("CARGO_ROCM_HOME", home)
        .env("CARGO_ROCM_NO_AUTO_INSTALL", "1")
        .env("CARGO_TARGET_DIR", fixture_target_dir())
        .env("CARGO_TERM_COLOR", "never")
        .env_remove("CARGO_ROCM_TOOLCHAIN")
        .env_remove("ROCM_OFFLOAD_ARCH")
        .env_remove("ROCM_BACKENDS")
        .output()
        .expect("run cargo-rocm")
}

#[testkit::test(needs = [CXX, testkit::needs::AMD_CLANG_19])]
fn cargo_rocm_build_uses_the_pinned_toolchain() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let krate = dir.path().join("pinned-kernels");
    let manifest = krate.join("Cargo.toml");
    let manifest = manifest.to_str().unwrap();

    let out = cargo_rocm(home.path(), &["new", krate.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out).1);
    copy_lock(&krate);
    let out = cargo_rocm(home.path(), &["toolchain", "link", "debian", "/usr"]);
    assert!(out.status.success(), "{}", text(&out).1);
    std::fs::write(
        krate.join("rocm-toolchain.toml"),
        "[toolchain]\nname = \"debian\"\n",
    )
    .unwrap();

    // `env` in the crate resolves the pin.
    let out = cargo_rocm(
        home.path(),
        &[
            "env",
            "--message-format",
            "json",
            "--manifest-path",
            manifest,
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let env: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(env["vars"]["ROCM_PATH"], "/usr", "{stdout}");

    // `build` compiles the amd code objects with it, for the crate's targets.
    let out = cargo_rocm(
        home.path(),
        &[
            "build",
            "--message-format",
            "json",
            "--manifest-path",
            manifest,
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = doc["libraries"][0]["kernels"].as_array().unwrap();
    for target in ["gfx90a", "gfx1030"] {
        assert!(
            rows.iter()
                .any(|r| r["target"].as_str().is_some_and(|t| t.starts_with(target))),
            "no {target} rows: {stdout}"
        );
    }

    // A pin to a toolchain that is not installed: the build says so and builds no amd code.
    std::fs::write(
        krate.join("rocm-toolchain.toml"),
        "[toolchain]\nname = \"not-installed\"\n",
    )
    .unwrap();
    let out = cargo_rocm(
        home.path(),
        &[
            "build",
            "--message-format",
            "json",
            "--manifest-path",
            manifest,
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("not-installed"), "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let amd_rows = doc["libraries"][0]["kernels"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(amd_rows, 0, "{stdout}");
}
