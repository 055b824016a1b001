//! The built `cargo-rocm` binary, run as cargo runs it (`cargo-rocm rocm <sub>`) and directly.

use std::fs;
use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;

fn cargo_rocm() -> Command {
    let mut cmd = Command::cargo_bin("cargo-rocm").unwrap();
    cmd.env("CARGO_TERM_COLOR", "never")
        .env_remove("CARGO_ROCM_TOOLCHAIN");
    cmd
}

fn json_of(output: &[u8]) -> serde_json::Value {
    serde_json::from_slice(output).expect("stdout is one JSON document")
}

/// Tests that need Debian's ROCm packages say so and pass where they are absent; CI installs them.
fn have_debian_rocm() -> bool {
    let present = Path::new("/usr/bin/hipcc").exists()
        && Path::new("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc").exists();
    if !present {
        eprintln!("skipped: Debian's hipcc and rocm-device-libs are not installed");
    }
    present
}

#[testkit::test]
fn help_lists_commands_and_exit_codes() {
    for args in [&["--help"][..], &["rocm", "--help"][..]] {
        cargo_rocm().args(args).assert().success().stdout(
            predicate::str::contains("detect")
                .and(predicate::str::contains("doctor"))
                .and(predicate::str::contains("env"))
                .and(predicate::str::contains("Exit codes:")),
        );
    }
}

#[testkit::test]
fn detect_json_lists_the_cpu_backend() {
    let out = cargo_rocm()
        .args(["rocm", "detect", "--message-format", "json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let report = json_of(&out);
    let devices = report["devices"].as_array().unwrap();
    let cpu: Vec<_> = devices.iter().filter(|d| d["backend"] == "cpu").collect();
    assert_eq!(cpu.len(), 1, "{report:#}");
    assert!(cpu[0]["compute_units"].as_u64().unwrap() >= 1);
    assert_eq!(cpu[0]["wave_sizes"], serde_json::json!([32, 64]));
    assert!(report["notes"].is_array());
}

#[testkit::test]
fn detect_table_has_a_cpu_row() {
    cargo_rocm()
        .arg("detect")
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"(?m)^BACKEND +# +DEVICE").unwrap())
        .stdout(predicate::str::is_match(r"(?m)^cpu +0 ").unwrap());
}

#[testkit::test]
fn doctor_finds_debian_rocm_and_names_its_targets() {
    if !have_debian_rocm() {
        return;
    }
    let assert = cargo_rocm().args(["rocm", "doctor"]).assert().success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    assert!(stdout.contains("ROCm 5.2"), "{stdout}");
    let line = |prefix: &str| {
        stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix(prefix).map(str::to_owned))
            .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{stdout}"))
    };
    let can: Vec<String> = line("builds for:")
        .split_whitespace()
        .map(String::from)
        .collect();
    let cannot: Vec<String> = line("cannot build for:")
        .split_whitespace()
        .map(String::from)
        .collect();
    for t in ["gfx90a", "gfx940", "gfx1030"] {
        assert!(
            can.contains(&t.to_owned()),
            "{t} should be buildable: {can:?}"
        );
    }
    for t in ["gfx942", "gfx1100"] {
        assert!(
            cannot.contains(&t.to_owned()),
            "{t} should not be buildable: {cannot:?}"
        );
    }
    assert!(stdout.contains("test compile"), "{stdout}");
    assert!(stdout.contains("cpu: ready"), "{stdout}");
}

#[testkit::test]
fn doctor_json_reports_every_backend() {
    let out = cargo_rocm()
        .args(["doctor", "--backend", "cpu", "--message-format", "json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let report = json_of(&out);
    let backends: Vec<&str> = report["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["backend"].as_str().unwrap())
        .collect();
    assert_eq!(backends, ["amd", "nvidia", "cpu"]);
    let cpu = &report["backends"][2];
    assert_eq!(cpu["ok"], true, "{cpu:#}");
    assert_eq!(report["failed"], serde_json::json!([]));
    if have_debian_rocm() {
        let amd = &report["backends"][0];
        assert_eq!(amd["can_build"], true, "{amd:#}");
        let targets = report["toolchains"]["toolchains"][0]["device_lib_targets"]
            .as_array()
            .unwrap();
        assert!(targets.contains(&"gfx90a".into()) && !targets.contains(&"gfx942".into()));
    }
}

/// A ROCm prefix whose clang always fails: doctor must fail `--backend amd` and say why.
#[testkit::test]
fn doctor_fails_a_required_backend_that_cannot_build() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("rocm-9.9.9");
    fs::create_dir_all(root.join(".info")).unwrap();
    fs::write(root.join(".info/version"), "9.9.9\n").unwrap();
    let clang = root.join("lib/llvm/bin/clang++");
    fs::create_dir_all(clang.parent().unwrap()).unwrap();
    fs::write(
        &clang,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'fake clang version 1.0'; exit 0; }\n\
         case \"$1\" in -print-prog-name=*) echo \"$(dirname \"$0\")/${1#-print-prog-name=}\"; exit 0;; esac\n\
         echo 'error: broken compiler' >&2\nexit 1\n",
    )
    .unwrap();
    // Its linker, bundler and the bundler's llvm-objcopy are there: it is complete, only broken
    // (without llvm-objcopy beside it, a fresh machine, where none is on PATH either, reports it
    // incomplete instead).
    let bin = root.join("lib/llvm/bin");
    fs::write(bin.join("ld.lld"), "#!/bin/sh\n").unwrap();
    fs::write(bin.join("clang-offload-bundler"), "#!/bin/sh\n").unwrap();
    fs::write(bin.join("llvm-objcopy"), "#!/bin/sh\n").unwrap();
    for f in [
        &clang,
        &bin.join("ld.lld"),
        &bin.join("clang-offload-bundler"),
        &bin.join("llvm-objcopy"),
    ] {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(f, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let bitcode = root.join("amdgcn/bitcode");
    fs::create_dir_all(&bitcode).unwrap();
    fs::write(bitcode.join("oclc_isa_version_90a.bc"), "BC").unwrap();

    cargo_rocm()
        .args(["doctor", "--backend", "amd", "--toolchain-path"])
        .arg(&root)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("rocm-9.9.9 (ROCm 9.9.9)"))
        .stdout(predicate::str::contains("error test compile"))
        .stdout(predicate::str::contains("broken compiler"))
        .stderr(predicate::str::contains(
            "required backend cannot work here: amd",
        ));
}

fn fixture_install(root: &Path) {
    fs::create_dir_all(root.join(".info")).unwrap();
    fs::write(root.join(".info/version"), "6.2.0-66\n").unwrap();
    fs::create_dir_all(root.join("bin")).unwrap();
    fs::create_dir_all(root.join("amdgcn/bitcode")).unwrap();
    fs::write(root.join("amdgcn/bitcode/oclc_isa_version_942.bc"), "BC").unwrap();
}

#[testkit::test]
fn env_prints_fish_sh_and_json_for_a_given_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("rocm-6.2.0");
    fixture_install(&root);
    let r = root.display().to_string();

    cargo_rocm()
        .args(["rocm", "env", "--shell", "fish", "--toolchain-path", &r])
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "set -gx ROCM_PATH '{r}'\n"
        )))
        .stdout(predicate::str::contains(format!(
            "set -gx HIP_DEVICE_LIB_PATH '{r}/amdgcn/bitcode'\n"
        )))
        .stdout(predicate::str::contains(format!(
            "set -gx PATH '{r}/bin' $PATH\n"
        )));

    // The sh form is valid shell: evaluate it and read the variables back.
    let sh = cargo_rocm()
        .args(["env", "--shell", "sh", "--toolchain-path", &r])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{}\nprintf '%s|%s' \"$ROCM_PATH\" \"${{PATH%%:*}}\"",
            String::from_utf8(sh).unwrap()
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{r}|{r}/bin"));

    let json = cargo_rocm()
        .args(["env", "--message-format", "json", "--toolchain-path", &r])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let json = json_of(&json);
    assert_eq!(json["vars"]["ROCM_PATH"], r.as_str());
    assert_eq!(json["version"], "6.2.0-66");
    assert!(json["PATH"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{r}/bin:")));
}

#[testkit::test]
fn env_without_a_usable_toolchain_is_an_environment_error() {
    cargo_rocm()
        .args(["env", "--toolchain-path", "/nonexistent/rocm"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("is not a ROCm install"));
    cargo_rocm()
        .args(["env"])
        .env("CARGO_ROCM_TOOLCHAIN", "no-such-toolchain")
        .env("CARGO_ROCM_HOME", tempfile::tempdir().unwrap().path())
        .assert()
        .code(3)
        .stderr(predicate::str::contains(
            "toolchain `no-such-toolchain` (CARGO_ROCM_TOOLCHAIN",
        ))
        .stderr(predicate::str::contains("is not installed"));
}

#[testkit::test]
fn usage_errors_exit_2() {
    cargo_rocm()
        .args(["doctor", "--backend", "tpu"])
        .assert()
        .code(2);
}

/// docs/exit-codes.md stays true to `--help`: every code line of the help table is in its table.
#[testkit::test]
fn exit_code_docs_match_help() {
    let help = cargo_rocm()
        .arg("--help")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let help = String::from_utf8(help).unwrap();
    let docs =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/exit-codes.md"))
            .unwrap();
    let table = help
        .split("Exit codes:")
        .nth(1)
        .expect("help has an exit-code table");
    let mut seen = 0;
    for line in table
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
    {
        let (code, meaning) = line.split_once(char::is_whitespace).unwrap();
        let row = docs
            .lines()
            .find(|l| l.starts_with(&format!("| {code} ")))
            .unwrap_or_else(|| panic!("docs/exit-codes.md has no row for {code}"));
        assert!(
            row.contains(meaning.trim()),
            "row for {code} should say `{}`: {row}",
            meaning.trim()
        );
        seen += 1;
    }
    assert_eq!(seen, 7);
}
