//! `cargo rocm toolchain` end to end: install from a loopback TheRock index → pin in a crate →
//! the pinned toolchain is the one resolved for that crate → uninstall.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use rocm_toolchains::test_support::{
    fake_rocm_entries, index_html, sha256_hex, tarball, Compression, TestServer,
};

const NAME: &str = "therock-dist-linux-gfx94X-dcgpu-7.0.0rc20250818.tar.gz";
const NIGHTLY: &str = "therock-dist-linux-gfx90a-7.10.0a20251106.tar.gz";

struct World {
    tmp: tempfile::TempDir,
    server: TestServer,
}

impl World {
    fn new() -> World {
        let server = TestServer::start();
        for (name, version) in [(NAME, "7.0.0rc20250818"), (NIGHTLY, "7.10.0a20251106")] {
            let bytes = tarball(&fake_rocm_entries(version), Compression::Gz);
            server.put(&format!("dist/{name}.sha256"), sha256_hex(&bytes));
            server.put(&format!("dist/{name}"), bytes);
        }
        server.put("dist/", index_html(&[NAME, NIGHTLY]));
        World {
            tmp: tempfile::tempdir().unwrap(),
            server,
        }
    }

    fn home(&self) -> PathBuf {
        self.tmp.path().join("rocm-home")
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cargo-rocm"));
        c.env("CARGO_ROCM_HOME", self.home())
            .env("CARGO_ROCM_DIST_URL", self.server.url("dist/"))
            .env("CARGO_ROCM_HTTP_BACKOFF_MS", "10")
            .env_remove("CARGO_ROCM_TOOLCHAIN")
            .env_remove("CARGO_ROCM_NO_AUTO_INSTALL")
            .env("CARGO_TERM_COLOR", "never")
            .current_dir(self.tmp.path());
        c
    }

    /// A crate with a pin file.
    fn krate(&self, pin: &str) -> PathBuf {
        let dir = self.tmp.path().join("kernels");
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"kernels\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )
        .unwrap();
        std::fs::write(dir.join("src/lib.rs"), "").unwrap();
        std::fs::write(dir.join("rocm-toolchain.toml"), pin).unwrap();
        dir
    }
}

fn json(out: &[u8]) -> serde_json::Value {
    serde_json::from_slice(out).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(out)))
}

#[testkit::test]
fn install_pin_which_uninstall() {
    let w = World::new();
    // What is published, for gfx942.
    let out = w
        .cmd()
        .args([
            "toolchain",
            "list",
            "--available",
            "--target",
            "gfx942",
            "--message-format",
            "json",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let rows = json(&out);
    assert_eq!(rows.as_array().unwrap().len(), 1);
    assert_eq!(rows[0]["family"], "gfx94X-dcgpu");
    assert_eq!(rows[0]["channel"], "prerelease");
    assert_eq!(rows[0]["installed"], false);

    // Install it by version.
    let out = w
        .cmd()
        .args([
            "toolchain",
            "install",
            "7.0.0rc20250818",
            "--target",
            "gfx942",
            "--message-format",
            "json",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "Installed therock-7.0.0rc20250818-gfx94X-dcgpu",
        ))
        .get_output()
        .stdout
        .clone();
    let report = json(&out);
    let root = w
        .home()
        .join("toolchains/therock-7.0.0rc20250818-gfx94X-dcgpu");
    assert_eq!(report["toolchain"]["root"], root.to_str().unwrap());
    assert_eq!(
        report["installed"]["metadata"]["archive"]["sha256_verified"],
        true
    );
    assert_eq!(
        report["toolchain"]["device_lib_targets"],
        serde_json::json!(["gfx90a", "gfx942"])
    );

    // Pin it in a crate; the crate resolves to it, and says why.
    let krate = w.krate("[toolchain]\nversion = \"7.0.0rc20250818\"\nfamily = \"gfx94X-dcgpu\"\n");
    let manifest = krate.join("Cargo.toml");
    let out = w
        .cmd()
        .args([
            "toolchain",
            "which",
            "--message-format",
            "json",
            "--manifest-path",
        ])
        .arg(&manifest)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let which = json(&out);
    assert_eq!(which["toolchain"]["root"], root.to_str().unwrap());
    assert_eq!(which["toolchain"]["version"], "7.0.0rc20250818");
    assert_eq!(which["rule"]["rule"], "pin-file");
    assert!(which["reason"]
        .as_str()
        .unwrap()
        .contains("rocm-toolchain.toml"));
    // The same from inside the crate, in people's format.
    w.cmd()
        .current_dir(krate.join("src"))
        .args(["toolchain", "which"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "therock-7.0.0rc20250818-gfx94X-dcgpu\t",
        ));

    // `+NAME` wins over the pin.
    let linked = w.tmp.path().join("other-rocm");
    rocm_toolchains::test_support::write_fake_prefix(&linked, "6.4.1");
    w.cmd()
        .args(["toolchain", "link", "other"])
        .arg(&linked)
        .assert()
        .success();
    w.cmd()
        .current_dir(&krate)
        .args(["+other", "toolchain", "which"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("other\t"));

    // The installed list shows both; uninstall removes only the toolchain's own folder.
    let out = w
        .cmd()
        .args(["toolchain", "list", "--message-format", "json"])
        .output()
        .unwrap();
    let names: Vec<_> = json(&out.stdout)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["other", "therock-7.0.0rc20250818-gfx94X-dcgpu"]);
    w.cmd()
        .args([
            "toolchain",
            "uninstall",
            "therock-7.0.0rc20250818-gfx94X-dcgpu",
            "other",
        ])
        .assert()
        .success();
    assert!(!root.exists());
    assert!(
        linked.join("bin/hipcc").is_file(),
        "a link's target is never touched"
    );
    assert!(krate.join("rocm-toolchain.toml").is_file());

    // Now the pin is unmet: with auto-install off, a clear environment error (exit 3)...
    w.cmd()
        .current_dir(&krate)
        .env("CARGO_ROCM_NO_AUTO_INSTALL", "1")
        .args(["toolchain", "which"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("CARGO_ROCM_NO_AUTO_INSTALL"));
    // ...and by default it is installed again on demand.
    w.cmd()
        .current_dir(&krate)
        .args(["toolchain", "which"])
        .assert()
        .success()
        .stderr(predicate::str::contains("pinned, was missing"))
        .stdout(predicate::str::starts_with(
            "therock-7.0.0rc20250818-gfx94X-dcgpu\t",
        ));
    assert!(root.join("bin/hipcc").is_file());
}

#[testkit::test]
fn channels_defaults_and_overrides() {
    let w = World::new();
    // `nightly` for gfx90a picks the nightly tarball; --default makes it the default.
    w.cmd()
        .args([
            "toolchain",
            "install",
            "nightly",
            "--target",
            "gfx90a",
            "--default",
        ])
        .assert()
        .success();
    w.cmd()
        .args(["toolchain", "default"])
        .assert()
        .success()
        .stdout("therock-7.10.0a20251106-gfx90a\n");
    let elsewhere = w.tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    w.cmd()
        .current_dir(&elsewhere)
        .args(["toolchain", "which", "--message-format", "json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"rule\": \"default\""));
    // A directory override beats the default.
    let prefix = w.tmp.path().join("opt-rocm-6.4.1");
    rocm_toolchains::test_support::write_fake_prefix(&prefix, "6.4.1");
    w.cmd()
        .args(["toolchain", "link", "six"])
        .arg(&prefix)
        .assert()
        .success();
    w.cmd()
        .args(["toolchain", "override", "set", "six", "--path"])
        .arg(&elsewhere)
        .assert()
        .success();
    w.cmd()
        .current_dir(&elsewhere)
        .args(["toolchain", "which"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("six\t"));
    // Uninstalling what settings name clears those settings.
    w.cmd()
        .args([
            "toolchain",
            "uninstall",
            "six",
            "therock-7.10.0a20251106-gfx90a",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains("was the default toolchain"))
        .stderr(predicate::str::contains("removed the override"));
    assert!(prefix.join("bin/hipcc").is_file());
}

#[testkit::test]
fn errors_have_codes_and_advice() {
    let w = World::new();
    w.cmd()
        .args(["toolchain", "install", "9.9.9", "--family", "gfx94X-dcgpu"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains(
            "no TheRock build for version 9.9.9",
        ))
        .stderr(predicate::str::contains("list --available"));
    w.cmd()
        .args(["toolchain", "install", "banana"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not a version"));
    w.cmd()
        .args(["toolchain", "uninstall", "nope"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("not installed"));
    w.cmd()
        .args(["toolchain", "link", "../evil", "/usr"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a valid toolchain name"));
    let krate = w.krate("[toolchain]\nversion = \"7\"\nchannel = \"nightly\"\n");
    w.cmd()
        .current_dir(&krate)
        .args(["toolchain", "which"])
        .assert()
        .code(5)
        .stderr(predicate::str::contains("exactly one of"));
    // --dry-run downloads nothing.
    w.cmd()
        .args([
            "toolchain",
            "install",
            "release",
            "--family",
            "gfx94X-dcgpu",
            "--dry-run",
        ])
        .assert()
        .code(3); // there is no release build in this index
    w.cmd()
        .args([
            "toolchain",
            "install",
            "prerelease",
            "--family",
            "gfx94X-dcgpu",
            "--dry-run",
        ])
        .assert()
        .success()
        .stdout(predicate::str::ends_with(format!("{NAME}\n")));
    assert!(
        !w.home().join("toolchains").exists()
            || std::fs::read_dir(w.home().join("toolchains"))
                .unwrap()
                .next()
                .is_none()
    );
    let _ = Path::new("");
}

/// The "must show": the pinned toolchain is what `cargo rocm env` prints for the crate.
/// Ignored until `env` (and `doctor`, `build`) select through `commands::toolchain::resolve`.
#[testkit::test]

fn env_prints_the_pinned_toolchain() {
    let w = World::new();
    w.cmd()
        .args([
            "toolchain",
            "install",
            "7.0.0rc20250818",
            "--family",
            "gfx94X-dcgpu",
        ])
        .assert()
        .success();
    let root = w
        .home()
        .join("toolchains/therock-7.0.0rc20250818-gfx94X-dcgpu");
    let krate = w.krate("[toolchain]\nversion = \"7.0.0rc20250818\"\ntargets = [\"gfx942\"]\n");
    let out = w
        .cmd()
        .args(["env", "--message-format", "json", "--manifest-path"])
        .arg(krate.join("Cargo.toml"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let env = json(&out);
    assert_eq!(env["toolchain"], "therock-7.0.0rc20250818-gfx94X-dcgpu");
    assert_eq!(env["root"], root.to_str().unwrap());
    assert_eq!(env["vars"]["ROCM_PATH"], root.to_str().unwrap());
    w.cmd()
        .args([
            "toolchain",
            "uninstall",
            "therock-7.0.0rc20250818-gfx94X-dcgpu",
        ])
        .assert()
        .success();
    assert!(!root.exists());
}
