//! `cargo rocm test`: build and run the workspace's rocm-test harnesses through cargo, then
//! report every trial (kernel × backend × target) as a table, JSON events and JUnit XML.
//!
//! The harness options travel to the test binaries as environment variables (`ROCM_TEST_*`,
//! see `rocm_test::HarnessOptions`), so the arguments after `--` reach them unchanged and
//! every libtest flag works there. Results are written under `<target-dir>/rocm/test/`:
//! `events.jsonl` (one object per trial), `summary.json` and `junit.xml`.

pub mod merge;
mod report;

use std::path::{Path, PathBuf};

use anyhow::Context;
use rocm_kernels::runtime::CpuExec;
use rocm_kernels_core::Backend;
use rocm_protocol::partition::Partition;
use rocm_protocol::{read_events, TrialEvent, TrialOutcome};

use crate::cargo_flags::CargoFlags;
use crate::cli::{FormatArgs, GlobalArgs};
use crate::exit::{self, CommandError};
use crate::harness::{child_stdout, HarnessTargets, TestHarness, Workspace};
use crate::output::Output;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  cargo rocm test                          test the package here on every backend that can run
  cargo rocm test --backend cpu -- saxpy   only cpu trials of checks matching `saxpy`
  cargo rocm test --require-backend amd    fail (not skip) when the AMD GPU cannot run
  cargo rocm test --devices 0,1            trials on GPUs 0 and 1 (default: every GPU)
  cargo rocm test --message-format json --junit target/junit.xml
  cargo rocm test --partition count:2/3    the second of three shards (a CI matrix job)
  cargo rocm test merge shard-1 shard-2 shard-3   one summary of the shards' results

Exit codes: 0 all trials passed or were skipped, 1 a trial failed, 2 usage error,
4 the crate or its kernels did not build, 5 no harness found or a manifest is unreadable.")]
pub struct TestArgs {
    #[command(subcommand)]
    pub action: Option<TestAction>,

    #[command(flatten)]
    pub cargo: CargoFlags,

    /// Only run these rocm-test harnesses (their `[[test]]` names), as `cargo test --test NAME`
    /// (repeatable or comma separated; default: every rocm-test harness of the selected packages)
    #[arg(long = "test", value_name = "NAME", value_delimiter = ',')]
    pub test: Vec<String>,

    /// Only run trials of these backends: cpu, amd, nvidia (repeatable or comma separated)
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub backend: Vec<Backend>,

    /// Fail (instead of skipping) trials of this backend when it cannot run here
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub require_backend: Vec<Backend>,

    /// Wave sizes to test on the cpu backend (default: 32,64)
    #[arg(long, value_name = "N", value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(["32", "64"]))]
    pub wave_size: Vec<String>,

    /// Seed for generated inputs (decimal or 0x…); default: a fixed seed per check
    #[arg(long, value_name = "N")]
    pub seed: Option<String>,

    /// Generated cases per trial (default: 32)
    #[arg(long, value_name = "N")]
    pub cases: Option<u32>,

    /// Which cpu launches run under the race detector: first (default: the first 3 cases of each
    /// trial, and all launches once one failed), N (first cases), all, off; alone: all
    #[arg(long, value_name = "WHEN", num_args = 0..=1, default_missing_value = "all", value_parser = parse_race_check)]
    pub race_check: Option<String>,

    /// Run no cpu launch under the race detector (--race-check=off)
    #[arg(long, conflicts_with = "race_check")]
    pub no_race_check: bool,

    /// How cpu trials run a block's threads: regions (default), fibers, blocks
    #[arg(long, value_name = "MODE", value_parser = clap::builder::PossibleValuesParser::new(CpuExec::ALL.map(CpuExec::as_str)))]
    pub cpu_exec: Option<String>,

    /// GPUs that get trials: all (default), N (the first N), ordinals (0,1; one is #1). With
    /// several of one architecture each has trials of its own (`saxpy::nvidia/sm_90#1`), run
    /// at the same time
    #[arg(long, value_name = "SEL", value_parser = rocm_protocol::DeviceSelection::parse)]
    pub devices: Option<rocm_protocol::DeviceSelection>,
    /// Run only shard K of N: count:K/N (round-robin over each harness's trials sorted by name)
    /// or hash:K/N (FNV-1a of the trial name), as cargo-nextest's --partition; or
    /// duration:K/N[:EVENTS] (longest first by an earlier run's durations; default: the last
    /// run's <target-dir>/rocm/test/events.jsonl)
    #[arg(long, value_name = "KIND:K/N", value_parser = clap::value_parser!(Partition))]
    pub partition: Option<Partition>,

    #[command(flatten)]
    pub format: FormatArgs,

    /// Also write JUnit XML to PATH (it is always written to <target-dir>/rocm/test/junit.xml)
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,

    /// Arguments for the harness binaries (libtest flags and filters), after `--`
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

/// The harnesses `--test` names (all when it names none); a name that is no rocm-test harness of
/// the selected packages is an input error that lists those there are.
fn only_tests<T>(
    harnesses: Vec<(HarnessTargets, T)>,
    names: &[String],
) -> anyhow::Result<Vec<(HarnessTargets, T)>> {
    if names.is_empty() {
        return Ok(harnesses);
    }
    if let Some(missing) = names
        .iter()
        .find(|n| !harnesses.iter().any(|(h, _)| h.tests.contains(n)))
    {
        let known: Vec<String> = harnesses
            .iter()
            .flat_map(|(h, _)| h.tests.iter().map(move |t| format!("{t} ({})", h.package)))
            .collect();
        return Err(CommandError::NoHarness(format!(
            "no rocm-test harness named `{missing}`: the selected packages have {} (a plain \
             `cargo test` target is run by `cargo test --test {missing}`)",
            known.join(", ")
        ))
        .into());
    }
    Ok(harnesses
        .into_iter()
        .filter_map(|(mut h, extra)| {
            h.tests.retain(|t| names.contains(t));
            (!h.tests.is_empty()).then_some((h, extra))
        })
        .collect())
}

/// What `cargo rocm test` does besides running the harnesses.
#[derive(Debug, clap::Subcommand)]
pub enum TestAction {
    /// Merge the results of several shards (events, JSON output or JUnit) into one summary
    Merge(merge::MergeArgs),
}

pub fn run(global: &GlobalArgs, args: TestArgs, out: &Output) -> anyhow::Result<u8> {
    if let Some(TestAction::Merge(merge_args)) = args.action {
        return merge::run(merge_args, out);
    }
    let ws = Workspace::open(global)?;
    let harnesses = ws.harnesses(&args.cargo, |packages| {
        let names: Vec<&str> = packages.iter().map(|p| p.name.as_str()).collect();
        format!(
            "no rocm-test harness in {}: add `rocm-test` to [dev-dependencies] and a \
             `[[test]]` with `harness = false` whose `main` calls `rocm_test::main` \
             (`cargo rocm new` writes a complete example)",
            if names.is_empty() {
                "this workspace".to_owned()
            } else {
                format!("package(s) {}", names.join(", "))
            }
        )
    })?;
    let harnesses = only_tests(harnesses, &args.test)?;

    let target_dir = ws.target_dir(args.cargo.target_dir.as_deref());
    let results = target_dir.join("rocm").join("test");
    std::fs::create_dir_all(&results)
        .with_context(|| format!("cannot create {}", results.display()))?;
    // This run's own events file (another `cargo rocm test` may be running on the same target
    // directory); it becomes `events.jsonl` at the end.
    let events_path = results.join(format!("events-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&events_path);

    let mut cargo_failures = Vec::new();
    for (h, _) in &harnesses {
        out.status("Testing", format!("{} ({})", h.package, h.tests.join(", ")));
        let harness = TestHarness::new(
            &ws.cargo,
            global,
            &args.cargo,
            &h.package,
            &h.tests,
            &args.backend,
        );
        harness.build(child_stdout(args.format.json()))?;
        let mut cmd = harness.command();
        cmd.arg("--no-fail-fast");
        if !args.args.is_empty() {
            cmd.arg("--").args(&args.args);
        }
        for (k, v) in harness_env(&args, &events_path) {
            cmd.env(k, v);
        }
        out.verbose(format!("running {cmd:?}"));
        let status = cmd
            .stdout(child_stdout(args.format.json()))
            .status()
            .with_context(|| format!("could not run `{} test`", ws.cargo))?;
        if !status.success() {
            cargo_failures.push((h.package.clone(), status));
        }
    }

    let text = std::fs::read_to_string(&events_path).unwrap_or_default();
    let events: Vec<TrialEvent> =
        read_events(&text).map_err(|e| CommandError::MalformedEvents {
            path: events_path.clone(),
            reason: e.to_string(),
        })?;
    let _ = std::fs::rename(&events_path, results.join("events.jsonl"));
    let counts = report::Counts::of(&events);

    let xml = report::junit(&events);
    std::fs::write(results.join("junit.xml"), &xml)
        .with_context(|| format!("cannot write {}", results.join("junit.xml").display()))?;
    if let Some(path) = &args.junit {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::write(path, &xml).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let junit_str = args.junit.as_ref().map(|p| p.display().to_string());
    let summary = report::SummaryEvent {
        kind: "summary",
        counts,
        total: counts.total(),
        junit: junit_str.as_deref(),
    };
    std::fs::write(
        results.join("summary.json"),
        serde_json::to_string_pretty(&summary)? + "\n",
    )?;

    {
        use std::io::Write;
        let mut stdout = out.stdout();
        if args.format.json() {
            for e in &events {
                writeln!(stdout, "{}", serde_json::to_string(e)?)?;
            }
            writeln!(stdout, "{}", serde_json::to_string(&summary)?)?;
        } else if !events.is_empty() {
            writeln!(stdout, "\nrocm-test summary ({}):", results.display())?;
            write!(stdout, "{}", report::summary_table(&events))?;
        }
    }

    if counts.failed > 0 {
        let failed: Vec<String> = events
            .iter()
            .filter(|e| e.outcome == TrialOutcome::Failed)
            .map(|e| e.name.clone())
            .collect();
        return Err(CommandError::TrialsFailed {
            failed: counts.failed,
            total: counts.total(),
            names: Some(failed),
        }
        .into());
    }
    if let Some((package, status)) = cargo_failures.first() {
        return Err(CommandError::HarnessFailed {
            package: package.clone(),
            status: *status,
        }
        .into());
    }
    if events.is_empty() {
        out.warn("no trials ran (did a filter after `--` match nothing?)");
    }
    Ok(exit::OK)
}

/// The `ROCM_TEST_*` variables that carry our options to the harnesses.
fn harness_env(args: &TestArgs, events: &Path) -> Vec<(&'static str, String)> {
    let join = |v: &[Backend]| v.iter().map(|b| b.as_str()).collect::<Vec<_>>().join(",");
    use rocm_protocol::env as var;
    let mut env = vec![(var::EVENTS, events.display().to_string())];
    if !args.backend.is_empty() {
        env.push((var::BACKEND, join(&args.backend)));
    }
    if !args.require_backend.is_empty() {
        env.push((var::REQUIRE_BACKEND, join(&args.require_backend)));
    }
    if !args.wave_size.is_empty() {
        env.push((var::WAVE_SIZE, args.wave_size.join(",")));
    }
    if let Some(s) = &args.seed {
        env.push((var::SEED, s.clone()));
    }
    if let Some(n) = args.cases {
        env.push((var::CASES, n.to_string()));
    }
    if args.no_race_check {
        env.push((var::RACE_CHECK, "off".to_owned()));
    } else if let Some(when) = &args.race_check {
        env.push((var::RACE_CHECK, when.clone()));
    }
    if let Some(mode) = &args.cpu_exec {
        env.push((var::CPU_EXEC, mode.clone()));
    }
    if let Some(devices) = &args.devices {
        env.push((var::DEVICES, devices.to_string()));
    }
    if let Some(p) = &args.partition {
        // A duration partition without its events: the last run's, beside this run's events.
        let mut p = p.clone();
        if p.kind == rocm_protocol::partition::PartitionKind::Duration && p.history.is_none() {
            p.history = Some(events.with_file_name("events.jsonl"));
        }
        env.push((var::PARTITION, p.to_string()));
    }
    env
}

/// `--race-check`'s value: first, all, off, or a number of first cases.
fn parse_race_check(value: &str) -> Result<String, String> {
    rocm_protocol::RaceCheck::parse(value)
        .map(|_| value.to_owned())
        .ok_or_else(|| format!("`{value}` is not first, all, off or a number of cases"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::build_env;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        t: TestArgs,
    }

    fn parse(v: &[&str]) -> TestArgs {
        Wrap::try_parse_from(std::iter::once("test").chain(v.iter().copied()))
            .unwrap()
            .t
    }

    #[test]
    fn test_selects_harnesses_by_name_and_refuses_unknown_ones() {
        let a = parse(&["--test", "kernels", "--test", "more,other"]);
        assert_eq!(a.test, ["kernels", "more", "other"]);
        let h = |package: &str, tests: &[&str]| {
            (
                HarnessTargets {
                    package: package.into(),
                    tests: tests.iter().map(|t| t.to_string()).collect(),
                    rocm_test: "rocm-test".into(),
                },
                (),
            )
        };
        let all = || vec![h("a", &["kernels", "slow"]), h("b", &["other"])];
        let names = |v: &[(HarnessTargets, ())]| -> Vec<String> {
            v.iter()
                .flat_map(|(h, _)| h.tests.iter().map(|t| format!("{}/{t}", h.package)))
                .collect()
        };
        assert_eq!(
            names(&only_tests(all(), &[]).unwrap()),
            ["a/kernels", "a/slow", "b/other"]
        );
        assert_eq!(
            names(&only_tests(all(), &["slow".into()]).unwrap()),
            ["a/slow"]
        );
        let err = only_tests(all(), &["kernels".into(), "nope".into()]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("`nope`") && text.contains("kernels (a), slow (a), other (b)"),
            "{text}"
        );
        assert!(matches!(
            err.downcast_ref::<CommandError>(),
            Some(CommandError::NoHarness(_))
        ));
    }

    #[test]
    fn cargo_flags_are_forwarded_and_harness_options_become_env() {
        let a = parse(&[
            "-p",
            "k",
            "--features",
            "x,y",
            "--release",
            "--target-dir",
            "/t",
            "--backend",
            "cpu",
            "--require-backend",
            "amd,nvidia",
            "--wave-size",
            "32",
            "--seed",
            "0x2a",
            "--cases",
            "4",
            "--",
            "saxpy",
            "--exact",
        ]);
        let global = GlobalArgs {
            verbose: 0,
            quiet: false,
            color: None,
            manifest_path: Some("/w/Cargo.toml".into()),
        };
        assert_eq!(
            TestHarness::new("cargo", &global, &a.cargo, "k", &["kernels".into()], &[]).args(),
            [
                "test",
                "--test",
                "kernels",
                "--manifest-path",
                "/w/Cargo.toml",
                "--package",
                "k",
                "--features",
                "x,y",
                "--release",
                "--target-dir",
                "/t"
            ]
        );
        assert_eq!(a.args, ["saxpy", "--exact"]);
        let env = harness_env(&a, Path::new("/t/e.jsonl"));
        assert!(env.contains(&("ROCM_TEST_EVENTS", "/t/e.jsonl".into())));
        assert!(env.contains(&("ROCM_TEST_BACKEND", "cpu".into())));
        assert!(env.contains(&("ROCM_TEST_REQUIRE_BACKEND", "amd,nvidia".into())));
        assert!(env.contains(&("ROCM_TEST_WAVE_SIZE", "32".into())));
        assert!(env.contains(&("ROCM_TEST_SEED", "0x2a".into())));
        assert!(env.contains(&("ROCM_TEST_CASES", "4".into())));
        assert!(!env.iter().any(|(k, _)| *k == "ROCM_TEST_RACE_CHECK"));
        assert_eq!(build_env(&a.backend), [("ROCM_BACKENDS", "cpu".to_owned())]);
        let env_of = |v: &[&str]| harness_env(&parse(v), Path::new("/e"));
        assert!(env_of(&["--race-check"]).contains(&("ROCM_TEST_RACE_CHECK", "all".into())));
        assert!(env_of(&["--race-check=5"]).contains(&("ROCM_TEST_RACE_CHECK", "5".into())));
        assert!(env_of(&["--no-race-check"]).contains(&("ROCM_TEST_RACE_CHECK", "off".into())));
        assert!(env_of(&["--cpu-exec", "fibers"]).contains(&("ROCM_CPU_EXEC", "fibers".into())));
        assert!(build_env(&parse(&[]).backend).is_empty());
        assert!(env_of(&["--partition", "duration:1/2"])
            .contains(&("ROCM_TEST_PARTITION", "duration:1/2:/events.jsonl".into())));
        assert!(env_of(&["--partition", "hash:2/3"])
            .contains(&("ROCM_TEST_PARTITION", "hash:2/3".into())));
    }

    #[test]
    fn merge_is_a_subcommand_and_partition_is_checked() {
        let a = parse(&["merge", "s1", "s2", "--out", "m"]);
        let Some(TestAction::Merge(m)) = a.action else {
            panic!("not merge: {:?}", a.action)
        };
        assert_eq!(m.inputs, [PathBuf::from("s1"), PathBuf::from("s2")]);
        assert_eq!(m.out, PathBuf::from("m"));
        assert!(parse(&["--", "merge"]).action.is_none());
        let err = Wrap::try_parse_from(["test", "--partition", "count:4/3"])
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("count:K/N"), "{err}");
    }

    #[test]
    fn bad_backend_and_wave_size_are_usage_errors() {
        let err = |v: &[&str]| {
            Wrap::try_parse_from(std::iter::once("test").chain(v.iter().copied()))
                .err()
                .unwrap()
                .to_string()
        };
        assert!(err(&["--backend", "tpu"]).contains("unknown backend `tpu`"));
        assert!(err(&["--wave-size", "16"]).contains("16"));
    }
}
