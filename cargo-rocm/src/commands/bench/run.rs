//! Running benches: build them, run each binary, record every result as it arrives, report.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Context;
use rocm_bench_history::history::{NewResult, RunInfo, RunStatus};
use rocm_bench_history::History;
use rocm_kernels::place::named;
use rocm_protocol::bench::BenchSelection;
use rocm_protocol::bench::{BenchEvent, EventReader};

use super::machine::MachineInfo;
use super::{history_error, RunArgs, SUITES};
use crate::cargo_flags::Packages;
use crate::cli::{FormatArgs, GlobalArgs};
use crate::exit::{self, CommandError};
use crate::harness::{self, build_env, Workspace};
use crate::output::Output;

/// Where results go under the target directory.
pub fn bench_dir(target_dir: &Path) -> PathBuf {
    target_dir.join("rocm").join("bench")
}

/// The history file: `--history`, else `<target-dir>/rocm/bench/history.sqlite`.
pub fn history_path(
    global: &GlobalArgs,
    run: &RunArgs,
    given: Option<&Path>,
) -> anyhow::Result<PathBuf> {
    if let Some(p) = given {
        return Ok(p.to_owned());
    }
    Ok(bench_dir(&harness::target_dir(
        global,
        run.cargo.target_dir.as_deref(),
    )?)
    .join("history.sqlite"))
}

/// One bench binary to run.
struct BenchBinary {
    package: String,
    name: String,
    exe: PathBuf,
    /// The package's directory: cargo runs benches there.
    dir: PathBuf,
}

/// Refuses backends and devices that cannot run here before anything is built.
fn check_devices(args: &RunArgs) -> anyhow::Result<()> {
    if args.backend.is_empty() && args.device.is_empty() {
        return Ok(());
    }
    let probe = rocm_kernels::runtime::Device::probe();
    for b in &args.backend {
        if let Some((_, why)) = probe.unavailable.iter().find(|(u, _)| u == b) {
            return Err(CommandError::NoDevice {
                backend: b.to_string(),
                why: why.to_string(),
            }
            .into());
        }
    }
    let selection = BenchSelection {
        backends: args.backend.clone(),
        devices: args.device.clone(),
    };
    // The places the bench binaries will name (`rocm_bench::targets`: the runtime's rule).
    let named = named(&probe.available);
    let places: Vec<String> = named
        .iter()
        .map(|(place, d)| (place.to_string(), *d))
        .filter(|(place, d)| selection.admits(d.backend(), place, &d.info().name))
        .map(|(place, _)| place)
        .collect();
    if places.is_empty() {
        let all: Vec<String> = named
            .iter()
            .map(|(place, d)| format!("{place} ({})", d.info().name))
            .collect();
        return Err(CommandError::NoDeviceMatches {
            wanted: args.device.join(","),
            devices: all,
        }
        .into());
    }
    Ok(())
}

/// The manifest and package of `--suite NAME`: a member of this workspace, else the suite in
/// the cargo-rocm checkout this binary was built from.
fn suite_package(
    name: &str,
    meta: &harness::Metadata,
) -> anyhow::Result<(String, Option<PathBuf>)> {
    let Some((_, package)) = SUITES.iter().find(|(s, _)| *s == name) else {
        return Err(CommandError::UnknownSuite {
            name: name.to_owned(),
            known: SUITES.iter().map(|s| s.0.to_owned()).collect(),
        }
        .into());
    };
    if meta
        .packages
        .iter()
        .any(|p| p.name == *package && meta.workspace_members.contains(&p.id))
    {
        return Ok(((*package).to_owned(), None));
    }
    let manifest = crate::commands::new::own_checkout()
        .map(|c| c.join(package).join("Cargo.toml"))
        .filter(|m| m.is_file())
        .ok_or_else(|| CommandError::SuiteNotHere {
            name: name.to_owned(),
        })?;
    Ok(((*package).to_owned(), Some(manifest)))
}

/// `cargo bench --no-run` for these packages, with the manifest `global` names.
fn cargo_bench_args(global: &GlobalArgs, args: &RunArgs, packages: &[String]) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec![
        "bench".into(),
        "--no-run".into(),
        "--message-format=json-render-diagnostics".into(),
    ];
    for b in &args.bench {
        a.extend(["--bench".into(), b.into()]);
    }
    a.extend(args.cargo.cargo_args(global, Packages::Only(packages)));
    a
}

/// The variables bench binaries read (`rocm_protocol::bench::vars`), and the build's backend limit.
fn bench_env(args: &RunArgs, events: &Path, criterion_home: &Path) -> Vec<(&'static str, String)> {
    use rocm_protocol::bench::vars;
    let mut env = vec![
        (vars::EVENTS, events.display().to_string()),
        ("CRITERION_HOME", criterion_home.display().to_string()),
    ];
    if !args.backend.is_empty() {
        let list: Vec<&str> = args.backend.iter().map(|b| b.as_str()).collect();
        env.push((vars::BACKEND, list.join(",")));
    }
    if !args.device.is_empty() {
        env.push((vars::DEVICE, args.device.join(",")));
    }
    if let Some(n) = args.samples {
        env.push((vars::SAMPLES, n.to_string()));
    }
    if let Some(n) = args.warm_up_ms {
        env.push((vars::WARMUP_MS, n.to_string()));
    }
    if let Some(n) = args.measurement_ms {
        env.push((vars::MEASURE_MS, n.to_string()));
    }
    if args.small {
        env.push((vars::SMALL, "1".to_owned()));
    }
    env
}

/// The commit of the work tree at `dir` and whether it has uncommitted changes.
fn git_state(dir: &Path) -> (Option<String>, Option<bool>) {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "HEAD"]).filter(|c| !c.is_empty());
    let dirty = commit
        .as_ref()
        .and_then(|_| git(&["status", "--porcelain", "--untracked-files=no"]))
        .map(|s| !s.is_empty());
    (commit, dirty)
}

fn tool_versions() -> String {
    let mut v = vec![format!("cargo-rocm {}", env!("CARGO_PKG_VERSION"))];
    if let Ok(o) = Command::new("rustc").arg("-V").output() {
        v.push(String::from_utf8_lossy(&o.stdout).trim().to_owned());
    }
    v.join("; ")
}

pub fn run(
    global: &GlobalArgs,
    args: &RunArgs,
    history: Option<&Path>,
    format: FormatArgs,
    out: &Output,
) -> anyhow::Result<u8> {
    let ws = Workspace::open(global)?;
    let meta = &ws.meta;
    let (packages, suite_manifest): (Vec<String>, Option<PathBuf>) = match &args.suite {
        Some(name) => {
            let (package, manifest) = suite_package(name, meta)?;
            (vec![package], manifest)
        }
        None => {
            let selected = ws.selected(&args.cargo)?;
            let with_benches: Vec<String> = selected
                .iter()
                .filter(|p| p.targets.iter().any(|t| t.is_bench()))
                .map(|p| p.name.to_string())
                .collect();
            if with_benches.is_empty() {
                return Err(CommandError::NoBenches {
                    packages: selected.iter().map(|p| p.name.to_string()).collect(),
                }
                .into());
            }
            (with_benches, None)
        }
    };
    // A suite outside this workspace builds from its own manifest.
    let build_global = GlobalArgs {
        manifest_path: suite_manifest.or_else(|| global.manifest_path.clone()),
        ..global.clone()
    };
    check_devices(args)?;

    let target_dir = ws.target_dir(args.cargo.target_dir.as_deref());
    let dir = bench_dir(&target_dir);
    let history_file = history
        .map(Path::to_owned)
        .unwrap_or_else(|| dir.join("history.sqlite"));
    // Opened before building: a damaged history is said at once, and left as it is.
    let mut db = History::open(&history_file).map_err(history_error)?;

    // Build.
    out.status("Building", format!("benches of {}", packages.join(", ")));
    let mut build = Command::new(&ws.cargo);
    build
        .args(cargo_bench_args(&build_global, args, &packages))
        .envs(build_env(&args.backend));
    let what = format!("building the benches of {}", packages.join(", "));
    let built = harness::build_executables(build, &what, out)?;
    let mut binaries = Vec::new();
    for exe in built.executables {
        if !exe.kinds.iter().any(|k| k == "bench") {
            continue;
        }
        let package = meta
            .packages
            .iter()
            .find(|p| p.id.repr == exe.package_id)
            .and_then(|p| {
                let dir = p.manifest_path.parent()?.to_path_buf().into_std_path_buf();
                Some((p.name.to_string(), dir))
            });
        let (package, dir) = package.unwrap_or_else(|| {
            let dir = exe.src_path.parent().map(Path::to_path_buf);
            (exe.target.clone(), dir.unwrap_or_default())
        });
        binaries.push(BenchBinary {
            package,
            name: exe.target,
            exe: exe.path,
            dir,
        });
    }
    if binaries.is_empty() {
        return Err(CommandError::NoBenchBinary.into());
    }

    // Record.
    let workspace_root = meta.workspace_root.clone().into_std_path_buf();
    let (git_commit, git_dirty) = git_state(&workspace_root);
    let command_line = std::iter::once("cargo rocm".to_owned())
        .chain(std::env::args().skip(1).skip_while(|a| a == "rocm"))
        .collect::<Vec<_>>()
        .join(" ");
    let run_id = db
        .begin_run(&RunInfo {
            git_commit,
            git_dirty,
            tool_versions: tool_versions(),
            ..RunInfo::new(command_line)
        })
        .map_err(history_error)?;
    let events = dir.join(format!("events-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&events);
    let criterion_home = dir.join("criterion");
    let mut machine = MachineInfo::default();
    let progress = progress_bar(out);
    let mut recorded = 0usize;
    let mut failures = Vec::new();
    let mut stdout = out.stdout();
    for bin in &binaries {
        out.status("Running", format!("{} ({})", bin.name, bin.package));
        let mut cmd = Command::new(&bin.exe);
        cmd.arg("--bench")
            .args(&args.args)
            .current_dir(&bin.dir)
            .envs(bench_env(args, &events, &criterion_home))
            .stdin(Stdio::null());
        if format.json() {
            cmd.stdout(Stdio::from(std::io::stderr()));
        }
        progress.suspend(|| out.verbose(format!("running {cmd:?}")));
        let mut child = cmd
            .spawn()
            .with_context(|| format!("could not run {}", bin.exe.display()))?;
        let mut reader = EventReader::default();
        let mut current: Option<String> = None;
        let mut handle = |reader: &mut EventReader,
                          current: &mut Option<String>,
                          db: &mut History|
         -> anyhow::Result<()> {
            for event in reader.poll(&events)? {
                match event {
                    Ok(BenchEvent::Start { id }) => {
                        progress.set_message(format!("{recorded} recorded; measuring {id}"));
                        *current = Some(id);
                    }
                    Ok(BenchEvent::Result(mut record)) => {
                        machine.complete(&mut record.device);
                        let id = record.id.clone();
                        let result = NewResult::from((*record).clone());
                        let result_id = db.insert_result(run_id, &result).map_err(history_error)?;
                        recorded += 1;
                        progress.set_message(format!("{recorded} recorded; last {id}"));
                        progress.tick();
                        if format.json() {
                            let line = serde_json::json!({
                                "kind": "result", "run_id": run_id, "result_id": result_id, "record": record,
                            });
                            writeln!(stdout, "{line}")?;
                        }
                        *current = None;
                    }
                    Err(bad) => {
                        progress.suspend(|| out.warn(format!("{}: {bad}", bin.name)));
                    }
                }
            }
            Ok(())
        };
        let status = loop {
            handle(&mut reader, &mut current, &mut db)?;
            if let Some(status) = child.try_wait()? {
                break status;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        handle(&mut reader, &mut current, &mut db)?;
        if !status.success() {
            let how = describe_exit(status);
            let during = current
                .as_deref()
                .map(|id| format!(" while measuring `{id}`"))
                .unwrap_or_default();
            failures.push(format!(
                "bench binary `{}` of `{}` {how}{during}",
                bin.name, bin.package
            ));
            progress.suspend(|| {
                out.warn(format!(
                    "bench binary `{}` ({}) {how}{during}; results measured before it are kept",
                    bin.name,
                    bin.exe.display()
                ))
            });
        }
    }
    progress.finish_and_clear();
    let _ = std::fs::remove_file(&events);
    let status = if failures.is_empty() {
        RunStatus::Complete
    } else {
        RunStatus::Interrupted
    };
    db.finish_run(run_id, status).map_err(history_error)?;

    let results = db.results_of_run(run_id).map_err(history_error)?;
    if format.json() {
        let line = serde_json::json!({
            "kind": "summary", "run_id": run_id, "results": results.len(),
            "history": history_file, "failed": failures,
        });
        writeln!(stdout, "{line}")?;
    } else {
        writeln!(
            stdout,
            "\ncargo rocm bench: run {run_id}, {} result(s) recorded in {}",
            results.len(),
            history_file.display()
        )?;
        write!(stdout, "{}", super::show::results_table(&results))?;
    }
    if !args.no_report {
        match rocm_bench_history::report::write_report(&db, &dir.join("report")) {
            Ok(files) => out.status("Report", files.index.display()),
            Err(e) => out.warn(format!("the report was not written: {e}")),
        }
    }
    if !failures.is_empty() {
        return Err(CommandError::BenchesFailed {
            failures,
            measured: results.len(),
            run_id,
        }
        .into());
    }
    if results.is_empty() {
        out.warn("no benchmark recorded a result (did a filter after `--` match nothing?)");
    }
    Ok(exit::OK)
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return format!(
                "was killed by signal {sig}{}",
                rocm_protocol::signal::signal_suffix(sig)
            );
        }
    }
    match status.code() {
        Some(code) => format!("exited with code {code}"),
        None => "stopped".to_owned(),
    }
}

fn progress_bar(out: &Output) -> indicatif::ProgressBar {
    let bar = if out.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new_spinner()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::bench::BenchArgs;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        global: GlobalArgs,
        #[command(flatten)]
        bench: BenchArgs,
    }

    fn parse(v: &[&str]) -> Result<Wrap, clap::Error> {
        Wrap::try_parse_from(std::iter::once("bench").chain(v.iter().copied()))
    }

    #[test]
    fn cargo_bench_gets_the_cargo_flags_and_debug_picks_the_dev_profile() {
        let w = parse(&[
            "--bench",
            "kernels",
            "-F",
            "f",
            "--debug",
            "--locked",
            "--target-dir",
            "/t",
            "--manifest-path",
            "/w/Cargo.toml",
        ])
        .unwrap();
        let args: Vec<String> = cargo_bench_args(&w.global, &w.bench.run, &["k".to_owned()])
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "bench",
                "--no-run",
                "--message-format=json-render-diagnostics",
                "--bench",
                "kernels",
                "--manifest-path",
                "/w/Cargo.toml",
                "--package",
                "k",
                "--features",
                "f",
                "--profile",
                "dev",
                "--target-dir",
                "/t",
                "--locked",
            ]
        );
        assert!(
            parse(&["--release"]).is_err(),
            "cargo bench has no --release"
        );
        assert!(parse(&["--suite", "gpu-benches", "-p", "k"]).is_err());
        assert!(parse(&["--suite", "gpu-benches", "--workspace"]).is_err());
    }
}
