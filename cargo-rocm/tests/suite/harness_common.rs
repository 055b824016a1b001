//! Shared by the `test_*` integration tests that drive `cargo rocm test` / `cargo rocm new` on
//! real crates (kernels built for the cpu backend with the host C++ compiler).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cargo-rocm is in the repository root")
        .to_owned()
}

/// The target directory `cargo test` is using (cargo releases its lock before running tests):
/// the crates these tests build reuse what it compiled, and each other's dependencies.
pub fn fixture_target_dir() -> PathBuf {
    let exe = Path::new(env!("CARGO_BIN_EXE_cargo-rocm"));
    exe.parent()
        .and_then(Path::parent)
        .expect("the binary is in <target>/<profile>/")
        .to_owned()
}

/// Why the cpu backend cannot build kernels here, if it cannot (no host C++ compiler).
fn cpu_backend_missing() -> Result<(), String> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned());
    match Command::new(&cxx).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err(format!(
            "no host C++ compiler (`{cxx}`): the cpu backend cannot build kernels"
        )),
    }
}

/// The host C++ compiler the cpu backend builds kernels with.
pub const CXX: testkit::Need = testkit::Need::check(
    "a host C++ compiler",
    "apt-get install g++",
    testkit::Kind::Tool,
    cpu_backend_missing,
);

/// `cargo-rocm ARGS` with the fixture target directory.
pub fn cargo_rocm(args: &[&str], cwd: &Path) -> Output {
    cargo_rocm_command(args, cwd)
        .output()
        .expect("run cargo-rocm")
}

/// The command [`cargo_rocm`] runs, for a test to add to its environment.
pub fn cargo_rocm_command(args: &[&str], cwd: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cargo-rocm"));
    command
        .args(args)
        .current_dir(cwd)
        .env("CARGO_TARGET_DIR", fixture_target_dir())
        .env("CARGO_TERM_COLOR", "never")
        // The harness's own variables must come from the command line under test only.
        .env_remove("ROCM_TEST_BACKEND")
        .env_remove("ROCM_TEST_REQUIRE_BACKEND")
        .env_remove("ROCM_TEST_WAVE_SIZE")
        .env_remove("ROCM_TEST_SEED")
        .env_remove("ROCM_TEST_CASES")
        .env_remove("ROCM_TEST_EVENTS")
        .env_remove("ROCM_TEST_RACE_CHECK")
        .env_remove("ROCM_TEST_ISOLATE")
        .env_remove("ROCM_TEST_PARTITION")
        .env_remove("ROCM_CPU_EXEC")
        .env_remove("ROCM_RACE_STRICT");
    command
}

/// Copy the workspace's lock file so a crate outside the workspace resolves the same versions
/// (and reuses what earlier tests compiled).
pub fn copy_lock(into: &Path) {
    std::fs::copy(repo().join("Cargo.lock"), into.join("Cargo.lock")).expect("copy Cargo.lock");
}

pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}
