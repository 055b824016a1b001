//! Distribution packages: `install system --dry-run` and linking the Debian install in /usr.

use assert_cmd::Command;
use predicates::prelude::*;

fn cmd(home: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cargo-rocm"));
    c.env("CARGO_ROCM_HOME", home)
        .env_remove("CARGO_ROCM_TOOLCHAIN")
        .env("CARGO_TERM_COLOR", "never");
    c
}

fn debian_like() -> bool {
    std::fs::read_to_string("/etc/os-release").is_ok_and(|t| {
        t.lines().any(|l| {
            l.starts_with("ID=debian")
                || l.starts_with("ID=ubuntu")
                || (l.starts_with("ID_LIKE=") && l.contains("debian"))
        })
    })
}

#[testkit::test]
fn install_system_dry_run_prints_the_apt_command() {
    if !debian_like() {
        eprintln!("skipped: not a Debian-like system");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let out = cmd(home.path())
        .args(["toolchain", "install", "system", "--dry-run"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let line = String::from_utf8(out).unwrap();
    let expected = "apt-get install hipcc libamdhip64-dev rocm-device-libs rocminfo\n";
    // Root runs apt-get directly; anyone else through sudo.
    assert!(
        line == expected || line == format!("sudo {expected}"),
        "{line}"
    );
    // Nothing was installed or linked.
    assert!(!home.path().join("toolchains").exists());
    cmd(home.path())
        .args([
            "toolchain",
            "install",
            "system",
            "--dry-run",
            "-y",
            "--message-format",
            "json",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"-y\""))
        .stdout(predicate::str::contains("\"prefix\": \"/usr\""));
}

#[testkit::test]
fn link_the_debian_install() {
    if !std::path::Path::new("/usr/bin/hipcc").exists() {
        eprintln!(
            "skipped: Debian's hipcc is not installed (apt-get install hipcc rocm-device-libs)"
        );
        return;
    }
    let home = tempfile::tempdir().unwrap();
    cmd(home.path())
        .args(["toolchain", "link", "debian", "/usr"])
        .assert()
        .success()
        .stderr(predicate::str::contains("Linked debian"));
    let out = cmd(home.path())
        .env("CARGO_ROCM_TOOLCHAIN", "debian")
        .args(["toolchain", "which", "--message-format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["toolchain"]["root"], "/usr");
    assert_eq!(v["toolchain"]["name"], "debian");
    assert!(v["toolchain"]["device_lib_targets"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == "gfx90a"));
    // Linking again is a no-op; uninstalling removes the link only.
    cmd(home.path())
        .args(["toolchain", "link", "debian", "/usr"])
        .assert()
        .success()
        .stderr(predicate::str::contains("Unchanged"));
    cmd(home.path())
        .args(["toolchain", "uninstall", "debian"])
        .assert()
        .success();
    assert!(std::path::Path::new("/usr/bin/hipcc").exists());
    assert!(!home.path().join("toolchains/debian").exists());
}
