//! The workspace's integration-test harness.
//!
//! Each crate has one integration-test binary (`tests/suite/main.rs`, `harness = false`) whose
//! modules mark their tests `#[testkit::test]` and whose `main` calls [`main`]. It runs them with
//! libtest-mimic, so it takes the usual libtest flags, and adds what the standard harness lacks:
//!
//! * **Tests say what they need** (`#[testkit::test(needs = [needs::HIPCC])]`). When a need is
//!   not met the test is *ignored*, never silently passed, and the end of the run lists every such
//!   test with what is missing and how to install it. Under `CI` (the variable set to anything
//!   but `false` or `0`), a missing [`Kind::Tool`] fails the test instead: CI installs every tool
//!   the suite calls (`.ci/run`), so a missing one there is a broken install step. Needs of kind
//!   [`Kind::Machine`] (a GPU) are ignored everywhere they are absent, CI included.
//! * **Isolated tests** (`#[testkit::test(isolated)]`) run in a child process of their own,
//!   for tests that change process-wide state (environment variables, loaded libraries).
//!
//! ```ignore
//! // tests/suite/main.rs
//! mod build_amd;
//! fn main() -> std::process::ExitCode { testkit::main() }
//!
//! // tests/suite/build_amd.rs
//! #[testkit::test(needs = [testkit::needs::CLANG_19])]
//! fn compiles_for_two_targets() { /* ... */ }
//! ```

use std::process::ExitCode;
use std::sync::Mutex;

pub use inventory;
pub use testkit_macros::test;

/// One registered test (made by `#[testkit::test]`).
pub struct Test {
    /// `module_path!()` where it was written (`suite::build_amd`).
    pub module: &'static str,
    /// The test function's name.
    pub name: &'static str,
    /// The test function.
    pub run: fn(),
    /// What it needs; unmet, it is ignored (or fails under CI, for a [`Kind::Tool`]).
    pub needs: &'static [Need],
    /// It runs in a child process of its own.
    pub isolated: bool,
}

inventory::collect!(Test);

impl Test {
    /// The name libtest shows: the module path below the binary's root, then the function.
    pub(crate) fn full_name(&self) -> String {
        match self.module.split_once("::") {
            Some((_, rest)) => format!("{rest}::{}", self.name),
            None => self.name.to_owned(),
        }
    }
}

/// Whether a missing need fails the test under CI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A program or library CI installs (`.ci/run`): missing under CI is a failure.
    Tool,
    /// Something of the machine CI does not provide (a GPU and its driver, the CUDA toolkit
    /// that goes with it, or a machine *without* an AMD GPU): missing is a skip everywhere.
    Machine,
}

/// Something a test needs from the machine.
#[derive(Debug, Clone, Copy)]
pub struct Need {
    /// What it is, for people: `hipcc`, `an NVIDIA GPU`.
    pub(crate) what: &'static str,
    /// How to get it: `apt-get install hipcc`.
    pub(crate) install: &'static str,
    /// Whether its absence fails the test under CI.
    pub(crate) kind: Kind,
    /// How to tell whether it is here.
    pub(crate) probe: Probe,
}

/// How a need is checked.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Probe {
    /// A program on `PATH`.
    Program(&'static str),
    /// A file that must exist.
    File(&'static str),
    /// A check of its own: `Err` says what is missing.
    Check(fn() -> Result<(), String>),
    /// Several needs at once.
    All(&'static [Need]),
}

impl Need {
    /// A program on `PATH` that CI installs with `install`.
    pub(crate) const fn program(program: &'static str, install: &'static str) -> Need {
        Need {
            what: program,
            install,
            kind: Kind::Tool,
            probe: Probe::Program(program),
        }
    }

    /// All of `needs`, described as `what` and installed with `install`.
    pub const fn all(what: &'static str, install: &'static str, needs: &'static [Need]) -> Need {
        Need {
            what,
            install,
            kind: Kind::Tool,
            probe: Probe::All(needs),
        }
    }

    /// A file (a library, a header) that CI installs with `install`.
    pub(crate) const fn file(path: &'static str, install: &'static str) -> Need {
        Need {
            what: path,
            install,
            kind: Kind::Tool,
            probe: Probe::File(path),
        }
    }

    /// A need with a check of its own.
    pub const fn check(
        what: &'static str,
        install: &'static str,
        kind: Kind,
        check: fn() -> Result<(), String>,
    ) -> Need {
        Need {
            what,
            install,
            kind,
            probe: Probe::Check(check),
        }
    }

    /// `Ok` when met, else what is missing.
    pub(crate) fn met(&self) -> Result<(), String> {
        match self.probe {
            Probe::Program(p) if which(p).is_some() => Ok(()),
            Probe::Program(p) => Err(format!("`{p}` is not on PATH")),
            Probe::File(f) if std::path::Path::new(f).exists() => Ok(()),
            Probe::File(f) => Err(format!("{f} does not exist")),
            Probe::Check(check) => check(),
            Probe::All(needs) => {
                let missing: Vec<String> = needs.iter().filter_map(|n| n.met().err()).collect();
                if missing.is_empty() {
                    Ok(())
                } else {
                    Err(missing.join(", "))
                }
            }
        }
    }
}

/// Where a program is on `PATH`.
pub(crate) fn which(program: &str) -> Option<std::path::PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Whether this is a CI run: `CI` set to anything but empty, `false` or `0` (GitHub Actions,
/// GitLab and most others set `CI=true`).
pub(crate) fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "false" | "0"))
}

/// The tools this workspace's tests call, each with the install line `.ci/run` uses.
pub mod needs {
    use super::Need;

    /// Debian's `hipcc` on `PATH` (alone; [`AMD_HIPCC`] is what a build with it runs).
    pub const HIPCC: Need = Need::program("hipcc", "apt-get install hipcc");
    /// `clang++-19` on `PATH` (alone; [`AMD_CLANG_19`] is what an amd build with it runs).
    pub const CLANG_19: Need = Need::program("clang++-19", "apt-get install clang-19");
    /// `ld.lld-19`, the linker clang 19 runs for AMD code objects.
    pub const LLD_19: Need = Need::program("ld.lld-19", "apt-get install lld-19");
    /// clang 19's offload bundler, which it needs to build a HIP bundle of several targets.
    pub const CLANG_TOOLS_19: Need = Need::file(
        "/usr/lib/llvm-19/bin/clang-offload-bundler",
        "apt-get install clang-tools-19",
    );
    /// The `llvm-objcopy` that clang 19's offload bundler runs (it looks beside itself).
    pub const LLVM_19: Need = Need::file(
        "/usr/lib/llvm-19/bin/llvm-objcopy",
        "apt-get install llvm-19",
    );
    /// Debian's HIP headers (`hip/hip_runtime.h`).
    pub const HIP_HEADERS: Need = Need::file(
        "/usr/include/hip/hip_runtime.h",
        "apt-get install libamdhip64-dev",
    );
    /// Debian's HIP runtime library, `libamdhip64.so` (loading it needs no GPU).
    pub const LIBAMDHIP64: Need = Need::file(
        "/usr/lib/x86_64-linux-gnu/libamdhip64.so",
        "apt-get install libamdhip64-dev",
    );
    /// Debian's ROCm 5.2 device libraries (gfx90a, gfx1030, no gfx942).
    pub const ROCM_DEVICE_LIBS: Need = Need::file(
        "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode/oclc_isa_version_90a.bc",
        "apt-get install rocm-device-libs",
    );
    /// clang 19 and the offload bundler it needs for a HIP object of several targets.
    pub const CLANG_BUNDLER_19: Need = Need::all(
        "clang 19 with its offload bundler",
        "apt-get install clang-19 clang-tools-19 llvm-19",
        &[CLANG_19, CLANG_TOOLS_19, LLVM_19],
    );
    /// Everything a build with `clang++-19` for the amd backend runs: the compiler, its linker and
    /// offload bundler, Debian's device libraries and HIP headers.
    pub const AMD_CLANG_19: Need = Need::all(
        "clang 19 with lld, clang-offload-bundler, device libraries and HIP headers",
        "apt-get install clang-19 lld-19 clang-tools-19 rocm-device-libs libamdhip64-dev",
        &[
            CLANG_19,
            LLD_19,
            CLANG_TOOLS_19,
            ROCM_DEVICE_LIBS,
            HIP_HEADERS,
        ],
    );
    /// Debian's `hipcc` with its ROCm 5.2 device libraries and headers.
    pub const AMD_HIPCC: Need = Need::all(
        "hipcc with device libraries and HIP headers",
        "apt-get install hipcc rocm-device-libs libamdhip64-dev",
        &[HIPCC, ROCM_DEVICE_LIBS, HIP_HEADERS],
    );

    /// Every single program or file above (what `.ci/run` must install; a unit test checks it
    /// does).
    #[cfg(test)]
    pub(crate) const ALL: &[Need] = &[
        HIPCC,
        CLANG_19,
        LLD_19,
        CLANG_TOOLS_19,
        LLVM_19,
        HIP_HEADERS,
        LIBAMDHIP64,
        ROCM_DEVICE_LIBS,
        Need::program("cc", "apt-get install g++"),
        Need::program("c++", "apt-get install g++"),
    ];
}

/// Runs every registered test as libtest does (same flags, same output), then lists the tests
/// that were ignored because something they need is missing. Call it from the suite's `main`.
pub fn main() -> ExitCode {
    const CHILD: &str = "TESTKIT_ISOLATED_CHILD";
    let mut tests: Vec<&'static Test> = inventory::iter::<Test>.into_iter().collect();
    tests.sort_by_key(|t| t.full_name());

    // In the child process of an isolated test: run just that one.
    if let Ok(name) = std::env::var(CHILD) {
        let test = tests
            .iter()
            .find(|t| t.full_name() == name)
            .unwrap_or_else(|| panic!("no test named {name}"));
        (test.run)();
        return ExitCode::SUCCESS;
    }

    let args = libtest_mimic::Arguments::from_args();
    let ci = is_ci();
    let unmet: &'static Mutex<Vec<(String, String)>> = Box::leak(Box::default());
    let trials: Vec<libtest_mimic::Trial> = tests
        .iter()
        .map(|t| {
            let name = t.full_name();
            let test: &'static Test = t;
            libtest_mimic::Trial::ignorable_test(name.clone(), move || {
                // Needs are checked when the test runs, so filtered-out tests probe nothing.
                let missing: Vec<(&Need, String)> = test
                    .needs
                    .iter()
                    .filter_map(|n| n.met().err().map(|why| (n, why)))
                    .collect();
                let describe = |list: &[&(&Need, String)]| -> String {
                    list.iter()
                        .map(|(n, why)| format!("{} ({}; {})", n.what, short(why), n.install))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let tools: Vec<&(&Need, String)> = missing
                    .iter()
                    .filter(|(n, _)| n.kind == Kind::Tool)
                    .collect();
                if ci && !tools.is_empty() {
                    return Err(format!(
                        "this test needs {}, which CI must install: add it to .ci/run",
                        describe(&tools)
                    )
                    .into());
                }
                if !missing.is_empty() {
                    let all: Vec<&(&Need, String)> = missing.iter().collect();
                    let reason = format!("needs {}", describe(&all));
                    unmet
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((name.clone(), reason.clone()));
                    return Ok(libtest_mimic::Completion::ignored_with(reason));
                }
                if test.isolated {
                    run_isolated(CHILD, &name)?;
                } else {
                    (test.run)();
                }
                Ok(libtest_mimic::Completion::Completed)
            })
        })
        .collect();

    let conclusion = libtest_mimic::run(&args, trials);
    let unmet = unmet.lock().unwrap_or_else(|p| p.into_inner());
    if !unmet.is_empty() {
        eprintln!(
            "\n{} test(s) ignored because something they need is missing here (they checked nothing):",
            unmet.len()
        );
        for (name, why) in unmet.iter() {
            eprintln!("    {name}: {why}");
        }
    }
    conclusion.exit_code()
}

/// The start of a reason, for one line: up to the first `(`, `;` or sentence end, at most 100
/// characters.
fn short(why: &str) -> String {
    let end = why
        .find(['(', ';'])
        .into_iter()
        .chain(why.find(". "))
        .min()
        .unwrap_or(why.len());
    let mut s: String = why[..end].trim().chars().take(100).collect();
    if s.len() < why.trim().len() {
        s.push('…');
    }
    s
}

/// Runs one test in a child process of this binary, with `child_var` naming it.
fn run_isolated(child_var: &str, name: &str) -> Result<(), libtest_mimic::Failed> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this test binary: {e}"))?;
    let output = std::process::Command::new(exe)
        .env(child_var, name)
        .output()
        .map_err(|e| format!("cannot start the isolated test: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "the isolated test's process exited with {}:\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packages `.ci/run` installs.
    fn ci_packages() -> Vec<String> {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/run");
        let text = std::fs::read_to_string(&script).unwrap();
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("PACKAGES=\""))
            .expect(".ci/run sets PACKAGES=\"...\"");
        line.trim_end_matches('"')
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }

    /// Every tool the tests call comes from a package `.ci/run` installs, so a fresh CI machine has
    /// it (a hand-installed one on a developer's machine would otherwise hide the gap). Checked
    /// with `dpkg -S` where the tool is installed.
    #[::core::prelude::v1::test] // `test` alone is this crate's attribute

    fn every_tool_the_tests_need_is_installed_by_ci() {
        let packages = ci_packages();
        let dpkg_available = which("dpkg").is_some();
        let mut unchecked = Vec::new();
        for need in needs::ALL {
            let path = match need.probe {
                Probe::Program(p) => match which(p) {
                    Some(path) => path,
                    None => {
                        unchecked.push(need.what);
                        continue;
                    }
                },
                Probe::File(f) => std::path::PathBuf::from(f),
                _ => unreachable!("ALL lists single programs and files"),
            };
            // Also the install line names the package.
            let named = need
                .install
                .rsplit(' ')
                .next()
                .expect("an install line names a package");
            assert!(
                packages.iter().any(|p| p == named),
                "{} is installed with `{}`, but .ci/run does not install {named}",
                need.what,
                need.install
            );
            if !dpkg_available || !path.exists() {
                unchecked.push(need.what);
                continue;
            }
            let real = std::fs::canonicalize(&path).unwrap();
            let owner = [&path, &real].iter().find_map(|p| {
                let out = std::process::Command::new("dpkg")
                    .arg("-S")
                    .arg(p)
                    .output()
                    .ok()?;
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                out.status
                    .success()
                    .then(|| text.split(':').next().unwrap_or_default().trim().to_owned())
            });
            let Some(owner) = owner else {
                panic!(
                    "{} ({}) belongs to no Debian package",
                    need.what,
                    path.display()
                );
            };
            // Owned by an installed package that CI installs, or one of their dependencies
            // (g++ brings gcc's `cc` through gcc-12 and the alternatives).
            let depends_on = |pkg: &str| {
                std::process::Command::new("apt-cache")
                    .args(["depends", "--recurse", "--important"])
                    .args(&packages)
                    .output()
                    .map(|o| {
                        String::from_utf8_lossy(&o.stdout)
                            .lines()
                            .any(|l| l.trim().trim_start_matches("Depends: ") == pkg)
                    })
                    .unwrap_or(false)
            };
            assert!(
                owner
                    .split(", ")
                    .any(|o| packages.contains(&o.to_owned()) || depends_on(o)),
                "{} ({}) comes from {owner}, which .ci/run does not install",
                need.what,
                path.display()
            );
        }
        if is_ci() {
            assert!(
                unchecked.is_empty(),
                "not installed under CI: {unchecked:?}"
            );
        }
    }
}
