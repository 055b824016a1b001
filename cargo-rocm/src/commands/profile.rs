//! `cargo rocm profile`: build a workload (a bench, test, example or binary of the crate) or take
//! a command, run it under the backend's profiler (rocprofv3 on amd, Nsight Compute on nvidia,
//! the runtime's own launch timings on cpu) with the runtime's launch log on, and print one table
//! per kernel: times, stability, resources, occupancy, declared-work throughput. The work lives
//! in `rocm-profile`; this module parses options, builds, and writes the results under
//! `<target-dir>/rocm/profile/` (`profile.json`, `profile.html`, the tools' raw output).

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use rocm_kernels_core::manifest::BuildManifest;
use rocm_kernels_core::{Backend, ObjectFormat};
use rocm_profile::{ncu, rocprof, AmdKernel, ProfileError, ReportInput, Workload};

use crate::cargo_flags::{CargoFlags, Packages, Release};
use crate::cli::{FormatArgs, GlobalArgs};
use crate::exit::{self, CommandError};
use crate::harness;
use crate::output::Output;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
With --bench/--test/--example/--bin the target is built (benches in release mode, as `cargo bench`
does) and the arguments after `--` go to it; without one, the arguments after `--` are the command
to profile.

Examples:
  cargo rocm profile --bench kernels                    the example's benchmarks
  cargo rocm profile --bench kernels -- --warm-up-time 1 --measurement-time 2
  cargo rocm profile --backend amd --pmc SQ_WAVES,SQ_INSTS_VALU --pmc TCC_HIT --test kernels
  cargo rocm profile --backend nvidia --launch-count 500 -- ./my-app --size 4096
  cargo rocm profile --from run/pass_results.db         read rocprofv3 output made elsewhere

Results: <target-dir>/rocm/profile/profile.json (schema: docs/profile-schema.json) and profile.html.
Exit codes: 0 profiled, 1 the workload failed, 2 usage, 3 profiler or device missing,
4 the workload did not build, 5 unreadable or unknown profiler output.")]
pub struct ProfileArgs {
    /// Profile this benchmark target (run with `--bench`, as cargo bench does)
    #[arg(long, value_name = "NAME", group = "target")]
    pub bench: Option<String>,
    /// Profile this test target
    #[arg(long, value_name = "NAME", group = "target")]
    pub test: Option<String>,
    /// Profile this example
    #[arg(long, value_name = "NAME", group = "target")]
    pub example: Option<String>,
    /// Profile this binary target
    #[arg(long, value_name = "NAME", group = "target")]
    pub bin: Option<String>,
    /// Read profiler output made elsewhere instead of running: a rocpd database (.db), a folder
    /// of rocprofv3 output, a rocprofv3 kernel_trace.csv, or an ncu CSV
    #[arg(long, value_name = "PATH", group = "target")]
    pub from: Option<PathBuf>,
    /// The workload's launch log to join with --from (ROCM_LAUNCH_LOG of that run)
    #[arg(long, value_name = "PATH", requires = "from")]
    pub launch_log: Option<PathBuf>,

    #[command(flatten)]
    pub cargo: CargoFlags,

    /// The backend to profile: amd, nvidia, cpu (default: the first GPU found, else cpu)
    #[arg(long, value_name = "NAME")]
    pub backend: Option<Backend>,
    /// amd: counters for one rocprofv3 pass, comma or space separated (repeatable: one pass each;
    /// a set that does not fit one pass is split)
    #[arg(long, value_name = "COUNTERS")]
    pub pmc: Vec<String>,
    /// nvidia: ncu metrics to collect beside the defaults, comma separated
    #[arg(long, value_name = "METRICS", value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// nvidia: profile only the first N kernel launches (ncu --launch-count); later ones run
    /// unprofiled
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub launch_count: u64,
    /// nvidia: one more argument for ncu (repeatable), e.g. --ncu-arg=--clock-control=none
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub ncu_arg: Vec<String>,
    /// The rocprofv3 to run [env: ROCPROFV3]
    #[arg(
        long,
        value_name = "PATH",
        env = "ROCPROFV3",
        default_value = "rocprofv3"
    )]
    pub rocprofv3: String,
    /// The ncu to run [env: NCU]
    #[arg(long, value_name = "PATH", env = "NCU", default_value = "ncu")]
    pub ncu: String,

    /// Where results go (default: <target-dir>/rocm/profile)
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Also write the HTML report here
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub format: FormatArgs,

    /// Arguments for the target, or the command to profile when no target is named
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<OsString>,
}

/// The library's errors; their kind decides the exit code ([`CommandError::process_exit_code`]).
fn coded(e: ProfileError) -> anyhow::Error {
    CommandError::Profile(e).into()
}

pub fn run(global: &GlobalArgs, args: ProfileArgs, out: &Output) -> anyhow::Result<u8> {
    let built = match target_kind(&args) {
        Some((kind, name)) => Some(build(global, &args, kind, name, out)?),
        None => None,
    };
    let output_dir = match (&args.output_dir, &built) {
        (Some(d), _) => d.clone(),
        (None, Some(b)) => b.target_dir.join("rocm").join("profile"),
        (None, None) => harness::target_dir(global, None)
            .unwrap_or_else(|_| PathBuf::from("target"))
            .join("rocm")
            .join("profile"),
    };
    let raw = output_dir.join("raw");
    let _ = std::fs::remove_dir_all(&raw);
    std::fs::create_dir_all(&raw).with_context(|| format!("cannot create {}", raw.display()))?;
    let log_path = output_dir.join("launches.jsonl");
    let _ = std::fs::remove_file(&log_path);

    let (collected, records, command, amd_kernels) = if let Some(from) = &args.from {
        let collected = read_from(from).map_err(coded)?;
        let records = match &args.launch_log {
            Some(p) => rocm_profile::launch_log::read(p).map_err(coded)?,
            None => Vec::new(),
        };
        (
            collected,
            records,
            vec![from.display().to_string()],
            Vec::new(),
        )
    } else {
        let workload = workload(&args, built.as_ref())?;
        let backend = args.backend.unwrap_or_else(default_backend);
        let mut workload = workload;
        workload.env.push((
            rocm_protocol::launch_log::ENV_LAUNCH_LOG.into(),
            log_path.clone().into(),
        ));
        workload
            .env
            .push(("ROCM_DEFAULT_BACKEND".into(), backend.as_str().into()));
        // rocm-bench's benches run on every device unless told which.
        workload.env.push((
            rocm_protocol::bench::vars::BACKEND.into(),
            backend.as_str().into(),
        ));
        out.status(
            "Profiling",
            format!("`{}` on {backend}", workload.command_line().join(" ")),
        );
        let collected = profile(&args, backend, &workload, &raw, out).map_err(coded)?;
        let records = rocm_profile::launch_log::read(&log_path).map_err(coded)?;
        let amd = match (backend, &built) {
            (Backend::Amd, Some(b)) => b.amd_kernels.clone(),
            _ => Vec::new(),
        };
        (collected, records, workload.command_line(), amd)
    };
    let dispatches = collected.dispatches.clone();
    let report = rocm_profile::build(ReportInput {
        collected,
        launches: records,
        amd_kernels,
        command,
    })
    .map_err(coded)?;

    let json = serde_json::to_string_pretty(&report)?;
    let json_path = output_dir.join("profile.json");
    std::fs::write(&json_path, json.clone() + "\n")
        .with_context(|| format!("cannot write {}", json_path.display()))?;
    let html = rocm_profile::html::page(&report, &dispatches);
    let html_path = output_dir.join("profile.html");
    std::fs::write(&html_path, &html)
        .with_context(|| format!("cannot write {}", html_path.display()))?;
    if let Some(p) = &args.html {
        std::fs::write(p, &html).with_context(|| format!("cannot write {}", p.display()))?;
    }
    let mut stdout = out.stdout();
    if args.format.json() {
        writeln!(stdout, "{}", serde_json::to_string(&report)?)?;
    } else {
        write!(stdout, "{}", rocm_profile::render::render(&report))?;
        out.status(
            "Finished",
            format!("{} and {}", json_path.display(), html_path.display()),
        );
    }
    if report.kernels.is_empty() {
        out.warn("no kernel dispatch was profiled");
    }
    Ok(exit::OK)
}

fn target_kind(args: &ProfileArgs) -> Option<(&'static str, &str)> {
    [
        ("bench", &args.bench),
        ("test", &args.test),
        ("example", &args.example),
        ("bin", &args.bin),
    ]
    .into_iter()
    .find_map(|(kind, name)| Some((kind, name.as_deref()?)))
}

/// The first GPU backend with a device here, else cpu (what `Device::default()` picks).
fn default_backend() -> Backend {
    rocm_kernels::runtime::Device::probe()
        .available
        .first()
        .map_or(Backend::Cpu, |d| d.backend())
}

/// The built target and what the build knows.
struct Built {
    executable: PathBuf,
    kind: &'static str,
    target_dir: PathBuf,
    amd_kernels: Vec<AmdKernel>,
}

/// The `cargo build` command line for the target `--{kind} {name}`.
fn build_command(global: &GlobalArgs, args: &ProfileArgs, kind: &str, name: &str) -> Command {
    // Benches build in release mode, as `cargo bench` builds them.
    let flags = CargoFlags {
        profile: Release {
            release: args.cargo.profile.release || kind == "bench",
        },
        ..args.cargo.clone()
    };
    let mut cmd = Command::new(harness::cargo());
    cmd.args(["build", "--message-format", "json-render-diagnostics"])
        .arg(format!("--{kind}"))
        .arg(name)
        .args(flags.cargo_args(global, Packages::AsGiven));
    cmd
}

fn build(
    global: &GlobalArgs,
    args: &ProfileArgs,
    kind: &'static str,
    name: &str,
    out: &Output,
) -> anyhow::Result<Built> {
    let cmd = build_command(global, args, kind, name);
    let report = harness::build_executables(cmd, &format!("building the {kind} `{name}`"), out)?;
    let executable = report
        .executables
        .iter()
        .rev()
        .find(|e| {
            e.target == name
                && e.kinds
                    .iter()
                    .any(|k| k == kind || (kind == "example" && k == "bin"))
        })
        .or_else(|| report.executables.iter().rev().find(|e| e.target == name))
        .map(|e| e.path.clone())
        .ok_or_else(|| CommandError::NoExecutable {
            kind: kind.to_owned(),
            name: name.to_owned(),
        })?;
    let mut amd_kernels = Vec::new();
    for script in &report.build_scripts {
        let manifests = BuildManifest::find_in(&script.out_dir)
            .map_err(|e| CommandError::BadInput(e.to_string()))?;
        for (_, manifest) in manifests {
            for object in manifest
                .objects
                .iter()
                .filter(|o| o.format == ObjectFormat::AmdgpuElf)
            {
                let bytes = std::fs::read(&object.path)
                    .with_context(|| format!("cannot read {}", object.path.display()))?;
                amd_kernels.extend(rocm_profile::amd_kernels(&bytes).map_err(|e| {
                    CommandError::BadFile {
                        path: object.path.clone(),
                        reason: e.to_string(),
                    }
                })?);
            }
        }
    }
    // The target directory: the executable is at <target>/<profile>/deps/… or …/examples/….
    let target_dir = args.cargo.target_dir.clone().unwrap_or_else(|| {
        executable
            .ancestors()
            .nth(3)
            .map_or_else(|| PathBuf::from("target"), Path::to_path_buf)
    });
    Ok(Built {
        executable,
        kind,
        target_dir,
        amd_kernels,
    })
}

/// The command to profile.
fn workload(args: &ProfileArgs, built: Option<&Built>) -> anyhow::Result<Workload> {
    match built {
        Some(b) => {
            let mut a: Vec<OsString> = Vec::new();
            // As cargo bench runs a bench target; criterion and libtest both take it.
            if b.kind == "bench" {
                a.push("--bench".into());
            }
            a.extend(args.args.iter().cloned());
            Ok(Workload {
                program: b.executable.clone().into(),
                args: a,
                ..Workload::default()
            })
        }
        None => {
            let (program, rest) = args
                .args
                .split_first()
                .ok_or(CommandError::NothingToProfile)?;
            Ok(Workload {
                program: program.clone(),
                args: rest.to_vec(),
                ..Workload::default()
            })
        }
    }
}

/// Run the workload under the backend's profiler.
fn profile(
    args: &ProfileArgs,
    backend: Backend,
    workload: &Workload,
    raw: &Path,
    out: &Output,
) -> Result<rocm_profile::Collected, ProfileError> {
    match backend {
        Backend::Cpu => {
            let mut cmd = Command::new(&workload.program);
            cmd.args(&workload.args);
            let ran = rocm_profile::tool::run(cmd, workload, &raw.join("workload.log"))?;
            out.verbose(format_args!(
                "workload output: {}",
                raw.join("workload.log").display()
            ));
            if !ran.success {
                return Err(ProfileError::Failed {
                    what: format!("the workload `{}`", workload.command_line().join(" ")),
                    status: ran.status,
                    output: ran.output,
                });
            }
            let log = raw.parent().unwrap_or(raw).join("launches.jsonl");
            let records = rocm_profile::launch_log::read(&log)?;
            Ok(rocm_profile::launch_log::dispatches(&records, Backend::Cpu))
        }
        Backend::Amd => {
            let tool = rocprof::run::Rocprofv3::find(&args.rocprofv3)?;
            out.verbose(format_args!(
                "{} ({} output)",
                tool.path.display(),
                if tool.rocpd { "rocpd" } else { "CSV" }
            ));
            let sets: Vec<Vec<String>> = args
                .pmc
                .iter()
                .map(|s| {
                    s.split([',', ' '])
                        .filter(|c| !c.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .collect();
            rocprof::run::profile(&tool, workload, &sets, raw)
        }
        Backend::Nvidia => {
            let tool = ncu::Ncu::find(&args.ncu)?;
            ncu::profile(
                &tool,
                workload,
                &args.metrics,
                Some(args.launch_count),
                &args.ncu_arg,
                raw,
            )
        }
    }
}

/// `--from`: a rocpd database, a rocprofv3 output folder, a kernel trace CSV, or an ncu CSV.
fn read_from(path: &Path) -> Result<rocm_profile::Collected, ProfileError> {
    if path.is_dir() {
        return rocprof::read_output(path);
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some("db") => rocprof::rocpd::read(path),
        _ => {
            let text = std::fs::read_to_string(path).map_err(|e| ProfileError::Io {
                path: path.to_owned(),
                source: e,
            })?;
            if text.lines().any(|l| l.starts_with("\"ID\"")) {
                ncu::read(path, &text)
            } else {
                rocprof::csv::read(path, None, None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        p: ProfileArgs,
    }

    fn parse(v: &[&str]) -> Result<ProfileArgs, clap::Error> {
        Wrap::try_parse_from(std::iter::once("profile").chain(v.iter().copied())).map(|w| w.p)
    }

    #[test]
    fn targets_exclude_each_other_and_args_follow_the_dashes() {
        let a = parse(&["--bench", "kernels", "--", "--warm-up-time", "1"]).unwrap();
        assert_eq!(target_kind(&a), Some(("bench", "kernels")));
        assert_eq!(a.args, ["--warm-up-time", "1"]);
        assert!(parse(&["--bench", "a", "--test", "b"]).is_err());
        let c = parse(&[
            "--backend",
            "nvidia",
            "--ncu-arg=--clock-control=none",
            "--",
            "./app",
            "-n",
            "4",
        ])
        .unwrap();
        assert_eq!(c.backend, Some(Backend::Nvidia));
        assert_eq!(c.ncu_arg, ["--clock-control=none"]);
        let w = workload(&c, None).unwrap();
        assert_eq!(w.command_line(), ["./app", "-n", "4"]);
        assert!(workload(&parse(&[]).unwrap(), None).is_err());
        assert!(parse(&["--backend", "tpu"]).is_err());
        assert!(
            parse(&["--launch-log", "x"]).is_err(),
            "--launch-log needs --from"
        );
    }

    #[test]
    fn benches_build_in_release_mode_and_cargo_flags_follow_the_target() {
        let global = GlobalArgs {
            verbose: 0,
            quiet: true,
            color: None,
            manifest_path: None,
        };
        let cargo_args = |v: &[&str]| {
            let a = parse(v).unwrap();
            let (kind, name) = target_kind(&a).unwrap();
            let cmd = build_command(&global, &a, kind, name);
            cmd.get_args()
                .map(|s| s.to_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            cargo_args(&["--bench", "kernels", "-p", "k", "-F", "f"]),
            [
                "build",
                "--message-format",
                "json-render-diagnostics",
                "--bench",
                "kernels",
                "--package",
                "k",
                "--features",
                "f",
                "--release",
                "--quiet"
            ]
        );
        assert!(!cargo_args(&["--test", "kernels"]).contains(&"--release".to_owned()));
        assert!(cargo_args(&["--test", "kernels", "-r"]).contains(&"--release".to_owned()));
    }
}
