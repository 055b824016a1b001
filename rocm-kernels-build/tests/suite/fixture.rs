//! Temporary crates whose build.rs calls `rocm_kernels_build::Build`, built by a real `cargo`.
//!
//! All fixtures share one target directory (under `CARGO_TARGET_TMPDIR`) so rocm-kernels and its
//! dependencies are compiled once per test run, not once per fixture.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Variables that would change what the fixture builds; removed so the host environment cannot
/// leak into a test.
const ROCM_VARS: [&str; 7] = [
    "HIP_CLANG_PATH",
    "ROCM_OFFLOAD_ARCH",
    "ROCM_BACKENDS",
    "ROCM_HIP_COMPILER",
    "ROCM_HIPFLAGS",
    "ROCM_PATH",
    "HIP_PATH",
];

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub name: String,
}

/// Where a program is on PATH.
pub fn which(program: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

pub fn target_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fixtures")
}

const MAIN_RS: &str = r#"
static KERNELS: &rocm_kernels::KernelLibrary = rocm_kernels::include_kernels!("kernels");

fn main() {
    println!("library {}", KERNELS.name);
    for o in KERNELS.code_objects {
        let magic = o.bytes.starts_with(b"\x7fELF");
        println!("object {} {} {} {} {} magic={magic}", o.backend, o.source, o.target, o.format, o.bytes.len());
    }
    for k in KERNELS.kernels {
        let params: Vec<String> = k.params.iter().map(|p| format!("{}:{}:{}:{:?}", p.name, p.type_name.replace(' ', "_"), p.size, p.kind)).collect();
        println!("kernel {} {} {}", k.name, k.source, params.join(","));
        for s in k.symbols {
            println!("symbol {} {} {}", k.name, KERNELS.code_objects[s.object as usize].target, s.symbol);
        }
        if let Some(cpu) = k.cpu {
            println!("cpu {} entry_null={} {}", k.name, cpu.entry.is_null(), cpu.execution);
        }
    }
}
"#;

impl Fixture {
    /// A crate named `name` with `build_rs` as its build script, `files` (path, content) written
    /// under its root, and `metadata` appended to its Cargo.toml.
    pub fn new(name: &str, build_rs: &str, files: &[(&str, &str)], metadata: &str) -> Fixture {
        let dir = tempfile::Builder::new()
            .prefix(&format!("{name}-"))
            .tempdir()
            .expect("temp dir");
        let builder = Path::new(env!("CARGO_MANIFEST_DIR"));
        let workspace = builder.parent().unwrap();
        let runtime = workspace.join("rocm-kernels");
        let cargo_toml = format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nrocm-kernels = {{ path = {runtime:?} }}\n\n\
             [build-dependencies]\nrocm-kernels-build = {{ path = {builder:?} }}\n\n\
             [workspace]\n\n{metadata}\n",
        );
        let f = Fixture {
            dir,
            name: name.to_string(),
        };
        f.forget_earlier_builds();
        f.write("Cargo.toml", &cargo_toml);
        f.write("build.rs", build_rs);
        f.write("src/main.rs", MAIN_RS);
        // Same dependency versions as this workspace, so the shared target dir is reused.
        let lock = workspace.join("Cargo.lock");
        if lock.is_file() {
            std::fs::copy(&lock, f.path().join("Cargo.lock")).unwrap();
        }
        for (p, c) in files {
            f.write(p, c);
        }
        f
    }

    /// Removes what earlier test runs built for a fixture of this name (cargo gives a path
    /// package the same build directory whatever its path), so logs and caches start empty.
    fn forget_earlier_builds(&self) {
        for sub in ["build", ".fingerprint"] {
            let dir = target_dir().join("debug").join(sub);
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                if e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{}-", self.name))
                {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, content: &str) {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    /// Runs `cargo <args>` in the fixture with exactly the ROCm variables given.
    pub fn cargo(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(args)
            .arg("--offline")
            .current_dir(self.path())
            .env("CARGO_TARGET_DIR", target_dir())
            .env("CARGO_TERM_COLOR", "never");
        for v in ROCM_VARS {
            cmd.env_remove(v);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("running cargo")
    }

    /// `cargo run`, asserting success; returns stdout and stderr.
    pub fn run_ok(&self, env: &[(&str, &str)]) -> (String, String) {
        let out = self.cargo(&["run"], env);
        let (stdout, stderr) = texts(&out);
        assert!(
            out.status.success(),
            "cargo run failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        );
        (stdout, stderr)
    }

    /// `cargo build`, asserting failure; returns stdout and stderr together.
    pub fn build_fails(&self, env: &[(&str, &str)]) -> String {
        let out = self.cargo(&["build"], env);
        let (stdout, stderr) = texts(&out);
        assert!(
            !out.status.success(),
            "build unexpectedly succeeded\n{stderr}"
        );
        format!("{stdout}\n{stderr}")
    }

    /// The OUT_DIR of the fixture's build script (the newest, if several).
    pub fn out_dir(&self) -> PathBuf {
        let build = target_dir().join("debug").join("build");
        let mut dirs: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&build)
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{}-", self.name))
            })
            .map(|e| e.path().join("out"))
            .filter(|p| p.join("rocm-kernels").is_dir())
            .map(|p| (std::fs::metadata(&p).unwrap().modified().unwrap(), p))
            .collect();
        dirs.sort();
        dirs.pop().expect("the fixture's OUT_DIR").1
    }

    /// The log lines of the builder's last run for library `lib`.
    pub fn last_run(&self, lib: &str) -> Vec<String> {
        let log = std::fs::read_to_string(
            self.out_dir()
                .join("rocm-kernels")
                .join(format!("{lib}.log")),
        )
        .unwrap_or_default();
        let runs: Vec<&str> = log.split("run unix_ms=").collect();
        runs.last()
            .unwrap()
            .lines()
            .skip(1)
            .map(str::to_string)
            .collect()
    }

    /// How many runs the builder's log records.
    pub fn runs(&self, lib: &str) -> usize {
        std::fs::read_to_string(
            self.out_dir()
                .join("rocm-kernels")
                .join(format!("{lib}.log")),
        )
        .unwrap_or_default()
        .matches("run unix_ms=")
        .count()
    }
}

pub fn texts(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
