//! The harness's own options, taken from its command line (removed before libtest's flags are
//! parsed) or from the environment (how `cargo rocm test` passes them through cargo).
//!
//! | flag                      | environment                  | meaning |
//! |---------------------------|------------------------------|---------|
//! | `--backend NAME[,NAME]`   | `ROCM_TEST_BACKEND`          | only make trials for these backends (`cpu`, `amd`, `nvidia`) |
//! | `--require-backend NAME`  | `ROCM_TEST_REQUIRE_BACKEND`  | a trial of this backend that cannot run fails instead of being ignored |
//! | `--wave-size N[,N]`       | `ROCM_TEST_WAVE_SIZE`        | cpu wave sizes to test (default `32,64`) |
//! | `--seed N`                | `ROCM_TEST_SEED`             | seed of the case generator (decimal or `0x…`; default: per check, stable) |
//! | `--cases N`               | `ROCM_TEST_CASES`            | generated cases per trial (default 32) |
//! | `--events PATH`           | `ROCM_TEST_EVENTS`           | append one JSON object per finished trial to PATH |
//! | `--race-check[=WHEN]`     | `ROCM_TEST_RACE_CHECK=WHEN`  | which cpu launches run under the race detector (`CpuOptions::race_check`): `first` (default: the first 3 cases of each trial, and every launch once a case failed), `N` first cases, `all`, `off` (`--no-race-check`); `--race-check` alone is `all` |
//! | `--cpu-exec MODE`         | `ROCM_CPU_EXEC`              | how cpu trials run a block's threads (`CpuExec`): `regions` (default), `fibers`, `blocks` |
//! | `--no-isolate`            | `ROCM_TEST_ISOLATE=0`        | run trials in the harness's process instead of one process each (a crash then ends the run) |
//! | `--devices SEL`           | `ROCM_TEST_DEVICES`          | which GPUs of each backend get trials: `all` (default), `N` (the first N), `0,2` or `#1` (ordinals); with several devices of one architecture the trials are named per device (`saxpy::nvidia/sm_90#1`) |
//! | `--partition KIND:K/N`    | `ROCM_TEST_PARTITION`        | run shard K of N (`count` or `hash`, as cargo-nextest's `--partition`, or `duration:K/N:EVENTS` by an earlier run's durations; `rocm_protocol::partition`), after the name filters; trials of other shards are not run nor reported |
//!
//! A flag wins over its environment variable.

use std::path::PathBuf;

use rocm_protocol::env as var;

use rocm_kernels::runtime::CpuExec;
use rocm_kernels::Backend;

use crate::Error;

pub use rocm_protocol::partition::Partition;
pub use rocm_protocol::{DeviceSelection, RaceCheck, DEFAULT_RACE_CASES};

/// `regions`, `fibers` or `blocks`.
pub(crate) fn parse_cpu_exec(value: &str) -> Option<CpuExec> {
    value.trim().to_ascii_lowercase().parse().ok()
}

/// Parsed harness options.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HarnessOptions {
    /// Which cpu launches run under the race detector.
    pub race_check: RaceCheck,
    /// How cpu trials run a block's threads; `None`: the runtime's default.
    pub cpu_exec: Option<CpuExec>,
    /// `None`: every backend.
    pub backends: Option<Vec<Backend>>,
    /// Backends whose trials fail, rather than being ignored, when they cannot run here.
    pub require: Vec<Backend>,
    /// The cpu backend's wave sizes to make trials for (32, 64 or both; default both).
    pub wave_sizes: Vec<u32>,
    /// The case generator's seed; `None`: a stable seed per check.
    pub seed: Option<u64>,
    /// Generated cases per trial of a check that sets no count of its own; `None`:
    /// [`crate::DEFAULT_CASES`].
    pub cases: Option<u32>,
    /// The file each finished trial's event is appended to (one JSON object a line).
    pub events: Option<PathBuf>,
    /// Run each trial that launches kernels in a process of its own (a kernel that crashes it
    /// then fails only that trial).
    pub isolate: bool,
    /// Which GPUs of each backend get trials.
    pub devices: DeviceSelection,
    /// Only this shard of the trials.
    pub partition: Option<Partition>,
}

const FLAGS: [(&str, &str); 10] = [
    ("--devices", var::DEVICES),
    ("--race-check", var::RACE_CHECK),
    ("--cpu-exec", var::CPU_EXEC),
    ("--backend", var::BACKEND),
    ("--require-backend", var::REQUIRE_BACKEND),
    ("--wave-size", var::WAVE_SIZE),
    ("--seed", var::SEED),
    ("--cases", var::CASES),
    ("--events", var::EVENTS),
    ("--partition", var::PARTITION),
];

impl HarnessOptions {
    /// Take the harness's flags out of `args` (the rest is for libtest) and read the environment
    /// through `env`. Repeated flags accumulate for list options. Fails with [`Error::Option`]
    /// on a flag without its value or a value the option cannot take.
    pub fn parse(
        args: Vec<String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<(HarnessOptions, Vec<String>), Error> {
        let mut given: Vec<(&'static str, String)> = Vec::new();
        let mut rest = Vec::with_capacity(args.len());
        let mut no_isolate_flag = false;
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            // `--race-check` alone takes no value: it means all launches.
            if a == "--race-check" {
                given.push(("--race-check", "all".into()));
                continue;
            }
            if a == "--no-race-check" {
                given.push(("--race-check", "off".into()));
                continue;
            }
            if a == "--no-isolate" {
                no_isolate_flag = true;
                continue;
            }
            let Some((flag, inline)) = FLAGS.iter().find_map(|(f, _)| {
                if a == *f {
                    Some((*f, None))
                } else {
                    a.strip_prefix(f)
                        .and_then(|r| r.strip_prefix('='))
                        .map(|v| (*f, Some(v.to_owned())))
                }
            }) else {
                rest.push(a);
                continue;
            };
            let value = match inline {
                Some(v) => v,
                None => it
                    .next()
                    .ok_or_else(|| Error::Option(format!("`{flag}` needs a value")))?,
            };
            given.push((flag, value));
        }
        let values = |flag: &str, var: &str| -> Vec<String> {
            let from_args: Vec<String> = given
                .iter()
                .filter(|(f, _)| *f == flag)
                .map(|(_, v)| v.clone())
                .collect();
            if !from_args.is_empty() {
                from_args
            } else {
                env(var)
                    .filter(|v| !v.trim().is_empty())
                    .into_iter()
                    .collect()
            }
        };
        let list = |flag: &str, var: &str| -> Vec<String> {
            values(flag, var)
                .iter()
                .flat_map(|v| v.split(','))
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect()
        };
        let backends = |flag: &str, var: &str| -> Result<Vec<Backend>, Error> {
            list(flag, var)
                .iter()
                .map(|s| {
                    s.parse::<Backend>()
                        .map_err(|e| Error::Option(format!("{flag}: {e}")))
                })
                .collect()
        };
        let last = |flag: &str, var: &str| values(flag, var).pop();

        let selected = backends("--backend", var::BACKEND)?;
        let wave_sizes = list("--wave-size", var::WAVE_SIZE)
            .iter()
            .map(|s| match s.parse::<u32>() {
                Ok(w @ (32 | 64)) => Ok(w),
                _ => Err(Error::Option(format!(
                    "--wave-size: `{s}` is not a wave size (32 or 64)"
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let seed = last("--seed", var::SEED)
            .map(|s| {
                parse_u64(&s).ok_or_else(|| Error::Option(format!("--seed: `{s}` is not a number")))
            })
            .transpose()?;
        let cases = last("--cases", var::CASES)
            .map(|s| {
                s.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    Error::Option(format!("--cases: `{s}` is not a positive number"))
                })
            })
            .transpose()?;
        let opts = HarnessOptions {
            backends: (!selected.is_empty()).then_some(selected),
            require: backends("--require-backend", var::REQUIRE_BACKEND)?,
            wave_sizes: if wave_sizes.is_empty() {
                vec![32, 64]
            } else {
                wave_sizes
            },
            seed,
            cases,
            events: last("--events", var::EVENTS).map(PathBuf::from),
            race_check: match last("--race-check", var::RACE_CHECK) {
                None => RaceCheck::default(),
                Some(v) => RaceCheck::parse(&v).ok_or_else(|| {
                    Error::Option(format!(
                        "--race-check / {}: `{v}` is not first, all, off or a number of cases",
                        var::RACE_CHECK
                    ))
                })?,
            },
            cpu_exec: last("--cpu-exec", var::CPU_EXEC)
                .map(|v| {
                    parse_cpu_exec(&v).ok_or_else(|| {
                        Error::Option(format!(
                            "--cpu-exec / {}: `{v}` is not regions, fibers or blocks",
                            var::CPU_EXEC
                        ))
                    })
                })
                .transpose()?,
            devices: last("--devices", var::DEVICES)
                .map(|v| {
                    DeviceSelection::parse(&v)
                        .map_err(|e| Error::Option(format!("--devices / {}: {e}", var::DEVICES)))
                })
                .transpose()?
                .unwrap_or_default(),
            isolate: !no_isolate_flag
                && env(var::ISOLATE)
                    .map(|v| env_switch(Some(v), var::ISOLATE))
                    .transpose()?
                    .unwrap_or(true),
            partition: last("--partition", var::PARTITION)
                .map(|v| {
                    v.parse::<Partition>().map_err(|e| {
                        Error::Option(format!("--partition / {}: {e}", var::PARTITION))
                    })
                })
                .transpose()?,
        };
        Ok((opts, rest))
    }

    /// The flags that make a "reproduce with" line run cpu trials as these options did: the race
    /// check, execution mode and case count when they are not the defaults.
    pub fn reproduce_flags(&self) -> String {
        let mut flags = String::new();
        if self.race_check != RaceCheck::default() {
            flags.push(' ');
            flags.push_str(&self.race_check.flag());
        }
        if let Some(exec) = self.cpu_exec {
            flags.push_str(&format!(" --cpu-exec={}", exec.as_str()));
        }
        if let Some(cases) = self.cases {
            flags.push_str(&format!(" --cases={cases}"));
        }
        flags
    }

    /// Whether trials of `backend` are wanted.
    pub fn selects(&self, backend: Backend) -> bool {
        self.backends.as_ref().is_none_or(|b| b.contains(&backend))
    }
}

/// An on/off environment variable: unset, empty, `0`, `false`, `no`, `off` are off.
fn env_switch(value: Option<String>, var: &str) -> Result<bool, Error> {
    match value
        .as_deref()
        .map(|v| v.trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("" | "0" | "false" | "no" | "off") => Ok(false),
        Some("1" | "true" | "yes" | "on") => Ok(true),
        Some(other) => Err(Error::Option(format!("{var}: `{other}` is not 1 or 0"))),
    }
}

fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_are_removed_and_libtest_flags_kept() {
        let (o, rest) = HarnessOptions::parse(
            args(&[
                "bin",
                "--require-backend",
                "amd",
                "saxpy",
                "--exact",
                "--wave-size=32",
                "--seed",
                "0x2a",
                "--test-threads",
                "1",
            ]),
            |_| None,
        )
        .unwrap();
        assert_eq!(
            rest,
            args(&["bin", "saxpy", "--exact", "--test-threads", "1"])
        );
        assert_eq!(o.require, vec![Backend::Amd]);
        assert_eq!(o.wave_sizes, vec![32]);
        assert_eq!(o.seed, Some(42));
        assert!(o.selects(Backend::Nvidia));
        assert_eq!(o.race_check, RaceCheck::First(DEFAULT_RACE_CASES));
        assert_eq!(o.reproduce_flags(), "");
        assert_eq!(o.devices, DeviceSelection::All);
        let (o, _) = HarnessOptions::parse(args(&["bin", "--devices=0,1"]), |_| None).unwrap();
        assert_eq!(o.devices, DeviceSelection::Ordinals(vec![0, 1]));
        let (o, rest) =
            HarnessOptions::parse(args(&["bin", "--race-check", "saxpy"]), |_| None).unwrap();
        assert_eq!(o.race_check, RaceCheck::All);
        assert_eq!(rest, args(&["bin", "saxpy"]));
        let (o, _) = HarnessOptions::parse(
            args(&[
                "bin",
                "--no-race-check",
                "--cpu-exec",
                "fibers",
                "--cases=4",
            ]),
            |_| None,
        )
        .unwrap();
        assert_eq!(o.race_check, RaceCheck::Off);
        assert_eq!(o.cpu_exec, Some(CpuExec::Fibers));
        assert_eq!(
            o.reproduce_flags(),
            " --race-check=off --cpu-exec=fibers --cases=4"
        );
        let (o, _) = HarnessOptions::parse(args(&["bin", "--race-check=10"]), |_| None).unwrap();
        assert_eq!(o.race_check, RaceCheck::First(10));
    }

    #[test]
    fn environment_is_read_and_flags_win() {
        let env = |k: &str| match k {
            "ROCM_TEST_BACKEND" => Some("cpu, nvidia".to_owned()),
            "ROCM_TEST_CASES" => Some("5".to_owned()),
            "ROCM_TEST_EVENTS" => Some("/tmp/e.jsonl".to_owned()),
            _ => None,
        };
        let (o, _) = HarnessOptions::parse(args(&["bin"]), env).unwrap();
        assert_eq!(o.backends, Some(vec![Backend::Cpu, Backend::Nvidia]));
        assert!(!o.selects(Backend::Amd));
        assert_eq!(o.cases, Some(5));
        assert_eq!(o.wave_sizes, vec![32, 64]);
        assert_eq!(o.events, Some(PathBuf::from("/tmp/e.jsonl")));
        assert_eq!(o.race_check, RaceCheck::default());
        let race = |v: &str| {
            let v = v.to_owned();
            HarnessOptions::parse(args(&["bin"]), move |k| {
                (k == "ROCM_TEST_RACE_CHECK").then(|| v.clone())
            })
        };
        assert_eq!(race("1").unwrap().0.race_check, RaceCheck::All);
        assert_eq!(race("all").unwrap().0.race_check, RaceCheck::All);
        assert_eq!(race("0").unwrap().0.race_check, RaceCheck::Off);
        assert_eq!(race("first").unwrap().0.race_check, RaceCheck::default());
        assert_eq!(race("7").unwrap().0.race_check, RaceCheck::First(7));
        assert!(race("maybe")
            .unwrap_err()
            .to_string()
            .contains("ROCM_TEST_RACE_CHECK"));
        let exec = HarnessOptions::parse(args(&["bin"]), |k| {
            (k == "ROCM_CPU_EXEC").then(|| "blocks".to_owned())
        })
        .unwrap()
        .0;
        assert_eq!(exec.cpu_exec, Some(CpuExec::Blocks));
        let (o, _) = HarnessOptions::parse(args(&["bin", "--backend", "amd"]), env).unwrap();
        assert_eq!(o.backends, Some(vec![Backend::Amd]));
    }

    #[test]
    fn bad_values_are_errors() {
        let err = |v: &[&str]| {
            HarnessOptions::parse(args(v), |_| None)
                .unwrap_err()
                .to_string()
        };
        assert!(err(&["b", "--backend", "tpu"]).contains("unknown backend `tpu`"));
        assert!(err(&["b", "--wave-size", "16"]).contains("not a wave size"));
        assert!(err(&["b", "--cases", "0"]).contains("not a positive number"));
        assert!(err(&["b", "--seed"]).contains("`--seed` needs a value"));
        assert!(err(&["b", "--cpu-exec", "threads"]).contains("not regions, fibers or blocks"));
        assert!(err(&["b", "--race-check=sometimes"]).contains("not first, all, off"));
        assert!(err(&["b", "--devices", "none"]).contains("not a device selection"));
        assert!(err(&["b", "--partition", "count:4/3"]).contains("count:K/N"));
    }

    #[test]
    fn partition_from_flag_or_environment() {
        let env = |k: &str| (k == "ROCM_TEST_PARTITION").then(|| "hash:2/4".to_owned());
        let (o, rest) = HarnessOptions::parse(args(&["bin", "saxpy"]), env).unwrap();
        assert_eq!(
            o.partition.map(|p| p.to_string()).as_deref(),
            Some("hash:2/4")
        );
        assert_eq!(rest, args(&["bin", "saxpy"]));
        let (o, _) = HarnessOptions::parse(args(&["bin", "--partition=count:1/3"]), env).unwrap();
        assert_eq!(
            o.partition.map(|p| p.to_string()).as_deref(),
            Some("count:1/3")
        );
        assert_eq!(
            HarnessOptions::parse(args(&["bin"]), |_| None)
                .unwrap()
                .0
                .partition,
            None
        );
    }
}
