//! Running a workload under rocprofv3: one kernel-trace pass for the timings, then one pass per
//! counter set (`--pmc`). A set the hardware cannot count in one pass is split in halves and
//! run again; a counter the GPU does not have is dropped with a note (a stated partial result).
//! Counters join the trace pass's dispatches by kernel and launch order.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::dispatch::Collected;
use crate::error::ProfileError;
use crate::tool::{self, Workload};

/// How to get rocprofv3.
pub(crate) const INSTALL: &str =
    "install ROCprofiler-SDK (rocprofv3), ROCm 6.2 or later (7.0 or later \
    for rocpd databases): `apt-get install rocprofiler-sdk` from AMD's ROCm repository, or put the \
    bin/ of a ROCm 7 install on PATH";

/// An installed rocprofv3 and what it can do.
#[derive(Debug, Clone)]
pub struct Rocprofv3 {
    /// The program found (a full path).
    pub path: PathBuf,
    /// It writes rocpd databases (`--output-format rocpd`); else CSV is asked for.
    pub rocpd: bool,
    /// It takes `--mangled-kernels` (names then match the code objects' symbols exactly).
    pub mangled: bool,
}

impl Rocprofv3 {
    /// Find rocprofv3 (`program` may be a path) and ask its `--help` what it supports.
    pub fn find(program: &str) -> Result<Rocprofv3, ProfileError> {
        let path = tool::which(program).ok_or_else(|| ProfileError::ToolMissing {
            tool: program.to_owned(),
            install: INSTALL.to_owned(),
        })?;
        let help =
            Command::new(&path)
                .arg("--help")
                .output()
                .map_err(|e| ProfileError::Failed {
                    what: format!("`{} --help`", path.display()),
                    status: format!("an error before it started ({e})"),
                    output: String::new(),
                })?;
        let text = String::from_utf8_lossy(&help.stdout).into_owned()
            + &String::from_utf8_lossy(&help.stderr);
        if !text.contains("--kernel-trace") {
            return Err(ProfileError::ToolTooOld {
                tool: path.display().to_string(),
                why: "its --help lists no --kernel-trace (rocprofv3 has it from ROCm 6.2; is this the older rocprof?)".into(),
                install: INSTALL.to_owned(),
            });
        }
        Ok(Rocprofv3 {
            rocpd: text.contains("rocpd"),
            mangled: text.contains("--mangled-kernels"),
            path,
        })
    }

    /// The command of one pass writing under `dir`.
    pub(crate) fn command(&self, dir: &Path, counters: &[String], workload: &Workload) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.arg("--kernel-trace");
        if self.mangled {
            cmd.arg("--mangled-kernels");
        }
        if !counters.is_empty() {
            cmd.arg("--pmc").args(counters);
        }
        cmd.arg("-d").arg(dir).args(["-o", "pass"]);
        cmd.args(["--output-format", if self.rocpd { "rocpd" } else { "csv" }]);
        cmd.arg("--").arg(&workload.program).args(&workload.args);
        cmd
    }
}

/// Profile `workload`: the trace pass, then the counter sets. `root` receives one folder per
/// pass (`trace`, `counters-1`, ...) with the tool's output and a log of what was printed.
pub fn profile(
    tool: &Rocprofv3,
    workload: &Workload,
    counter_sets: &[Vec<String>],
    root: &Path,
) -> Result<Collected, ProfileError> {
    let trace_dir = root.join("trace");
    let ran = tool::run(
        tool.command(&trace_dir, &[], workload),
        workload,
        &root.join("trace.log"),
    )?;
    if !ran.success {
        return Err(ProfileError::Failed {
            what: format!(
                "the workload under rocprofv3 (`{}`)",
                workload.command_line().join(" ")
            ),
            status: ran.status,
            output: ran.output,
        });
    }
    let mut collected = super::read_output(&trace_dir)?;
    let mut queue: Vec<Vec<String>> = counter_sets
        .iter()
        .filter(|s| !s.is_empty())
        .cloned()
        .collect();
    let mut pass = 0;
    while let Some(set) = queue.pop() {
        pass += 1;
        let dir = root.join(format!("counters-{pass}"));
        let log = root.join(format!("counters-{pass}.log"));
        let ran = tool::run(tool.command(&dir, &set, workload), workload, &log)?;
        let read = if ran.success {
            super::read_output(&dir).ok()
        } else {
            None
        };
        match read {
            Some(c) => join_counters(&mut collected, c),
            None if set.len() > 1 => {
                // The trace pass ran, so the counters are what failed: maybe too many for one
                // pass. Halves go back on the queue.
                let (a, b) = set.split_at(set.len() / 2);
                collected.notes.push(format!(
                    "counters {} did not fit one rocprofv3 pass ({}); collected in two",
                    set.join(" "),
                    last_line(&ran.output)
                ));
                queue.push(b.to_vec());
                queue.push(a.to_vec());
            }
            None => collected.notes.push(format!(
                "counter {} could not be collected on this GPU and is left out (rocprofv3: {}; `rocprofv3 --list-avail` lists what it has)",
                set[0],
                last_line(&ran.output)
            )),
        }
    }
    Ok(collected)
}

fn last_line(output: &str) -> String {
    output
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no output")
        .trim()
        .to_owned()
}

/// Add the counters of a counter pass to the trace pass's dispatches: the n-th dispatch of a
/// kernel in one pass is the n-th in the other (the workload is deterministic in its launches;
/// where the counts differ, the extra dispatches are left out and a note says so).
pub(crate) fn join_counters(trace: &mut Collected, pass: Collected) {
    let mut slots: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, d) in trace.dispatches.iter().enumerate() {
        slots.entry(d.kernel.as_str()).or_default().push(i);
    }
    let slots: HashMap<String, Vec<usize>> =
        slots.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut unmatched = 0;
    for d in pass.dispatches {
        let n = seen.entry(d.kernel.clone()).or_default();
        match slots.get(&d.kernel).and_then(|v| v.get(*n)) {
            Some(&i) => trace.dispatches[i].counters.extend(d.counters),
            None => unmatched += 1,
        }
        *n += 1;
    }
    if unmatched > 0 {
        trace.notes.push(format!(
            "{unmatched} dispatch(es) of a counter pass had no match in the trace pass (the workload launched differently); their counters are left out"
        ));
    }
    trace.notes.extend(pass.notes);
}
