//! Building and running the binaries the commands drive: `cargo rocm test` and `tune` run a
//! package's rocm-test harnesses (its `harness = false` tests) through `cargo test`, `bench` and
//! `profile` run executables that a `cargo bench --no-run` / `cargo build` reported.
//!
//! * [`Workspace`]: the manifest, `cargo metadata`, the target directory and the packages'
//!   harness targets ([`workspace`]).
//! * [`TestHarness`]: one package's harness tests, built first with `--no-run` (so a compile
//!   error is told apart from a failing trial: cargo says 101 for both) and then run with the
//!   same arguments and environment, or cargo would rebuild.
//! * [`build_executables`]: a cargo build whose JSON messages ([`cargo_json`]) say which
//!   executables and build scripts it produced.
//! * [`build_env`] / [`harness_build_env`]: what every kernel build of a command sees.

pub mod cargo_json;
pub mod workspace;

use std::ffi::OsString;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use rocm_kernels_core::Backend;

use crate::cargo_flags::{BuildProfile, CargoFlags, Packages};
use crate::cli::GlobalArgs;
use crate::exit::CommandError;
use crate::output::Output;
pub use cargo_json::CargoReport;
pub use workspace::{HarnessTargets, Metadata, Package};

/// The cargo program: `$CARGO` (set when we run as `cargo rocm`), else `cargo` from PATH.
pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

/// The workspace a command works on: its manifest and `cargo metadata --no-deps`.
pub struct Workspace {
    pub cargo: String,
    pub manifest: PathBuf,
    pub meta: Metadata,
}

impl Workspace {
    /// The workspace of `--manifest-path`, else of the current directory.
    pub fn open(global: &GlobalArgs) -> anyhow::Result<Workspace> {
        let cargo = cargo();
        let manifest = workspace::locate_manifest(global.manifest_path.as_deref())?;
        let meta = workspace::metadata(&cargo, Some(&manifest))?;
        Ok(Workspace {
            cargo,
            manifest,
            meta,
        })
    }

    /// `--target-dir` when given, else the workspace's.
    pub fn target_dir(&self, given: Option<&Path>) -> PathBuf {
        given.map_or_else(
            || self.meta.target_directory.clone().into_std_path_buf(),
            Path::to_path_buf,
        )
    }

    /// The packages the cargo options select.
    pub fn selected<P: BuildProfile>(
        &self,
        cargo: &CargoFlags<P>,
    ) -> anyhow::Result<Vec<&Package>> {
        cargo.selected(&self.meta, &self.manifest)
    }

    /// The selected packages that have rocm-test harnesses, each with its directory; none is an
    /// input error whose message is `none` (what to do about it).
    pub fn harnesses<P: BuildProfile>(
        &self,
        cargo: &CargoFlags<P>,
        none: impl FnOnce(&[&Package]) -> String,
    ) -> anyhow::Result<Vec<(HarnessTargets, PathBuf)>> {
        let packages = self.selected(cargo)?;
        let mut found = Vec::new();
        for p in &packages {
            let h = workspace::harness_targets(p)?;
            if !h.tests.is_empty() {
                let root = p
                    .manifest_path
                    .parent()
                    .map(|d| d.as_std_path().to_path_buf())
                    .unwrap_or_default();
                found.push((h, root));
            }
        }
        if found.is_empty() {
            return Err(CommandError::NoHarness(none(&packages)).into());
        }
        Ok(found)
    }
}

/// `--target-dir` when given, else the target directory of the workspace of `--manifest-path` (or
/// of the current directory), which asks `cargo metadata`.
pub fn target_dir(global: &GlobalArgs, given: Option<&Path>) -> anyhow::Result<PathBuf> {
    match given {
        Some(d) => Ok(d.to_path_buf()),
        None => Ok(Workspace::open(global)?.target_dir(None)),
    }
}

/// What the kernel builds see: `--backend` also limits the backends the build scripts compile
/// for (`ROCM_BACKENDS`), so a broken compiler of a backend not asked for cannot fail the build.
/// Every cargo invocation of a command gets it, or the next one would rebuild.
pub fn build_env(backends: &[Backend]) -> Vec<(&'static str, String)> {
    if backends.is_empty() {
        return Vec::new();
    }
    let list: Vec<&str> = backends.iter().map(|b| b.as_str()).collect();
    vec![(rocm_kernels_build::ENV_BACKENDS, list.join(","))]
}

/// The variable that keeps `--release` harnesses' line tables: cargo's release profile strips
/// debug information by default (`strip = "debuginfo"` where `debug` is off), which took the cpu
/// race variant's line tables (compiled with `-g1` whatever the profile) out of the test binary,
/// and race reports said `at code address 0x…` instead of `file:line`.
pub const KEEP_RELEASE_LINE_TABLES: &str = "CARGO_PROFILE_RELEASE_STRIP";

/// [`build_env`] for building and running test harnesses: also keeps the line tables of release
/// builds (see [`KEEP_RELEASE_LINE_TABLES`]), unless the user's environment sets the variable.
/// The harness is built and run with the same variables, or the run would rebuild it.
pub fn harness_build_env(backends: &[Backend]) -> Vec<(&'static str, String)> {
    let mut env = build_env(backends);
    if std::env::var_os(KEEP_RELEASE_LINE_TABLES).is_none() {
        env.push((KEEP_RELEASE_LINE_TABLES, "false".to_owned()));
    }
    env
}

/// Where a child's stdout goes: in JSON mode stdout carries only our events, so the child's
/// output goes to stderr.
pub fn child_stdout(json: bool) -> Stdio {
    if json {
        Stdio::from(std::io::stderr())
    } else {
        Stdio::inherit()
    }
}

/// One package's rocm-test harnesses, run through `cargo test`.
pub struct TestHarness {
    cargo: String,
    package: String,
    /// `test --test NAME… <cargo options>`, without `--no-run` or `--`.
    args: Vec<OsString>,
    env: Vec<(&'static str, String)>,
}

impl TestHarness {
    /// The harness tests `tests` of `package`, building kernels for `backends` (all when empty).
    pub fn new(
        cargo: &str,
        global: &GlobalArgs,
        flags: &CargoFlags,
        package: &str,
        tests: &[String],
        backends: &[Backend],
    ) -> TestHarness {
        let mut args: Vec<OsString> = vec!["test".into()];
        for t in tests {
            args.extend(["--test".into(), t.into()]);
        }
        args.extend(flags.cargo_args(global, Packages::Only(&[package.to_owned()])));
        TestHarness {
            cargo: cargo.to_owned(),
            package: package.to_owned(),
            args,
            env: harness_build_env(backends),
        }
    }

    /// Also pass `args` to cargo, building and running alike (e.g. `--features`).
    pub fn with_cargo_args(mut self, args: impl IntoIterator<Item = OsString>) -> TestHarness {
        self.args.extend(args);
        self
    }

    /// The `cargo test` arguments.
    #[cfg(test)]
    pub fn args(&self) -> &[OsString] {
        &self.args
    }

    /// Build the harnesses (`cargo test --no-run`); a failure is
    /// [`CommandError::TestsBuildFailed`].
    pub fn build(&self, stdout: Stdio) -> anyhow::Result<()> {
        let status = Command::new(&self.cargo)
            .args(&self.args)
            .envs(self.env.iter().cloned())
            .arg("--no-run")
            .stdout(stdout)
            .status()
            .with_context(|| format!("could not run `{} test`", self.cargo))?;
        if !status.success() {
            return Err(CommandError::TestsBuildFailed {
                package: self.package.clone(),
            }
            .into());
        }
        Ok(())
    }

    /// `cargo test …` as built by [`TestHarness::build`]; the caller adds `--` and the
    /// harness's arguments and environment.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.cargo);
        cmd.args(&self.args).envs(self.env.iter().cloned());
        cmd
    }
}

/// Run a cargo build that writes JSON messages (`--message-format json-render-diagnostics`):
/// cargo's progress and rendered diagnostics go to our stderr, other stdout lines (a build
/// script printing under `-vv`) too. A failed build is [`CommandError::BuildFailed`]: "`what`
/// failed".
pub fn build_executables(
    mut cmd: Command,
    what: &str,
    out: &Output,
) -> anyhow::Result<CargoReport> {
    out.verbose(format_args!("running {cmd:?}"));
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|reason| CommandError::CargoNotRunnable { reason })?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let report = cargo_json::read_messages(BufReader::new(stdout), |line| eprintln!("{line}"))
        .context("reading cargo's output")?;
    let status = child.wait().context("waiting for cargo")?;
    if !status.success() || report.success == Some(false) {
        return Err(CommandError::BuildFailed {
            what: what.to_owned(),
            status,
        }
        .into());
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backends_limit_the_kernel_builds() {
        assert!(build_env(&[]).is_empty());
        // Harnesses keep their line tables in release builds (race reports name source lines).
        if std::env::var_os(KEEP_RELEASE_LINE_TABLES).is_none() {
            assert_eq!(
                harness_build_env(&[]),
                [("CARGO_PROFILE_RELEASE_STRIP", "false".to_owned())]
            );
        }
        assert_eq!(
            build_env(&[Backend::Cpu, Backend::Nvidia]),
            [("ROCM_BACKENDS", "cpu,nvidia".to_owned())]
        );
    }
}
