//! `cargo rocm test merge`: the results of several shards (`cargo rocm test --partition K/N`
//! jobs, or `cargo nextest run --partition` jobs with `ROCM_TEST_EVENTS` or JUnit) as one run:
//! `events.jsonl`, `summary.json`, `junit.xml` and the kernels × backends table.
//!
//! Inputs are events files (`events.jsonl`, or the stream of `--message-format json`), JUnit XML
//! (ours or cargo-nextest's: a trial's backend and target are read back from its name), or
//! folders holding one of them (`events.jsonl` first, else `junit.xml`). Within one input the last
//! record of a trial wins (nextest's retries append one per attempt; a trial that failed and then
//! passed is reported as flaky); a trial found in two inputs is reported as a duplicate (shards
//! must not overlap) and counts once, failed if any copy failed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use quick_junit::{Report, TestCaseStatus};
use rocm_protocol::{TrialEvent, TrialOutcome};
use serde::Serialize;

use super::report;
use crate::cli::FormatArgs;
use crate::exit::{self, CommandError};
use crate::output::Output;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  cargo rocm test merge shard-1 shard-2 shard-3     folders with each shard's events.jsonl
  cargo rocm test merge target/nextest/ci/*.xml     cargo-nextest JUnit files
  cargo rocm test merge --out merged shard-*/events.jsonl

Exit codes: 0 no trial failed, 1 a trial failed, 5 an input is unreadable or malformed.")]
pub struct MergeArgs {
    /// Shard results: events files (.jsonl, or --message-format json output), JUnit XML
    /// (.xml), or folders holding events.jsonl or junit.xml
    #[arg(required = true, value_name = "PATH")]
    pub inputs: Vec<PathBuf>,

    /// Folder for the merged events.jsonl, summary.json and junit.xml
    #[arg(long, value_name = "DIR", default_value = "target/rocm/test/merged")]
    pub out: PathBuf,

    #[command(flatten)]
    pub format: FormatArgs,
}

/// What the merge found besides the trials.
#[derive(Debug, Default, PartialEq, Serialize)]
pub struct Merged {
    pub events: Vec<TrialEvent>,
    /// Trials found in more than one input: `binary: name` and the inputs.
    pub duplicates: Vec<(String, Vec<String>)>,
    /// Trials that failed and then passed within one input (retries).
    pub flaky: Vec<String>,
}

/// The closing object: counts, inputs, duplicates and flaky trials.
#[derive(Debug, Serialize)]
struct MergeSummary<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    counts: report::Counts,
    total: usize,
    inputs: Vec<String>,
    duplicates: &'a [(String, Vec<String>)],
    flaky: &'a [String],
}

pub fn run(args: MergeArgs, out: &Output) -> anyhow::Result<u8> {
    let mut inputs = Vec::new();
    for path in &args.inputs {
        let file = resolve(path)?;
        let events = read_input(&file)?;
        inputs.push((file.display().to_string(), events));
    }
    let merged = merge(inputs.clone());
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut lines = String::new();
    for e in &merged.events {
        lines.push_str(&serde_json::to_string(e)?);
        lines.push('\n');
    }
    let write = |name: &str, text: &str| {
        let path = args.out.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    write("events.jsonl", &lines)?;
    write("junit.xml", &report::junit(&merged.events))?;
    let counts = report::Counts::of(&merged.events);
    let summary = MergeSummary {
        kind: "summary",
        counts,
        total: counts.total(),
        inputs: inputs.into_iter().map(|(name, _)| name).collect(),
        duplicates: &merged.duplicates,
        flaky: &merged.flaky,
    };
    write(
        "summary.json",
        &(serde_json::to_string_pretty(&summary)? + "\n"),
    )?;

    {
        use std::io::Write;
        let mut stdout = out.stdout();
        if args.format.json() {
            stdout.write_all(lines.as_bytes())?;
            writeln!(stdout, "{}", serde_json::to_string(&summary)?)?;
        } else {
            writeln!(
                stdout,
                "rocm-test summary of {} inputs ({}):",
                summary.inputs.len(),
                args.out.display()
            )?;
            write!(stdout, "{}", report::summary_table(&merged.events))?;
        }
    }
    for (trial, found_in) in &merged.duplicates {
        out.warn(format!(
            "`{trial}` is in more than one input ({}): shards should not overlap",
            found_in.join(", ")
        ));
    }
    for trial in &merged.flaky {
        out.note(format!("`{trial}` failed, then passed on a retry (flaky)"));
    }
    if counts.failed > 0 {
        return Err(CommandError::TrialsFailed {
            failed: counts.failed,
            total: counts.total(),
            names: None,
        }
        .into());
    }
    Ok(exit::OK)
}

/// A folder's events file (or JUnit file); a file as it is.
fn resolve(path: &Path) -> anyhow::Result<PathBuf> {
    if !path.is_dir() {
        return Ok(path.to_owned());
    }
    ["events.jsonl", "junit.xml"]
        .iter()
        .map(|name| path.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            CommandError::NoResultsFile {
                dir: path.to_owned(),
            }
            .into()
        })
}

/// The trials of one input.
fn read_input(path: &Path) -> anyhow::Result<Vec<TrialEvent>> {
    let text = std::fs::read_to_string(path).map_err(|reason| CommandError::CannotRead {
        path: path.to_owned(),
        reason,
    })?;
    let parsed = if path.extension().is_some_and(|e| e == "xml") {
        from_junit(&text)
    } else {
        from_json_lines(&text)
    };
    parsed.map_err(|e| {
        CommandError::BadFile {
            path: path.to_owned(),
            reason: e.to_string(),
        }
        .into()
    })
}

/// Trial events from an events file or a `--message-format json` stream (other objects skipped).
pub(crate) fn from_json_lines(text: &str) -> Result<Vec<TrialEvent>, String> {
    let mut events = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        if value.get("type").and_then(|t| t.as_str()) == Some("trial") {
            events.push(
                serde_json::from_value(value)
                    .map_err(|e| format!("line {}: not a trial event: {e}", n + 1))?,
            );
        }
    }
    Ok(events)
}

/// Trials from JUnit XML (ours: one suite per harness binary; cargo-nextest's: one per binary
/// id such as `basic::kernels`). Backend and target come from the name: `saxpy::cpu/w64`.
pub(crate) fn from_junit(text: &str) -> Result<Vec<TrialEvent>, String> {
    let report = Report::deserialize_from_str(text).map_err(|e| format!("not JUnit XML: {e}"))?;
    let mut events = Vec::new();
    for suite in &report.test_suites {
        for case in &suite.test_cases {
            let name = case.name.as_str().to_owned();
            let (outcome, message) = match &case.status {
                TestCaseStatus::Success { .. } => (TrialOutcome::Passed, None),
                TestCaseStatus::NonSuccess {
                    message,
                    description,
                    ..
                } => (
                    TrialOutcome::Failed,
                    description
                        .as_ref()
                        .or(message.as_ref())
                        .map(|m| m.as_str().to_owned()),
                ),
                TestCaseStatus::Skipped { message, .. } => (
                    TrialOutcome::Ignored,
                    message.as_ref().map(|m| m.as_str().to_owned()),
                ),
            };
            let (check, place) = name.rsplit_once("::").unwrap_or((name.as_str(), ""));
            let (backend, target) = match place.split_once('/') {
                Some((b, t)) if b.parse::<rocm_kernels_core::Backend>().is_ok() => {
                    (Some(b.to_owned()), Some(t.to_owned()))
                }
                _ if place.parse::<rocm_kernels_core::Backend>().is_ok() => {
                    (Some(place.to_owned()), None)
                }
                _ => (None, None),
            };
            events.push(TrialEvent {
                kind: "trial".into(),
                name: name.clone(),
                check: check.to_owned(),
                kernel: check.to_owned(),
                backend,
                target,
                outcome,
                message,
                duration_s: case.time.map_or(0.0, |t| t.as_secs_f64()),
                cases: None,
                seed: None,
                bandwidth: None,
                binary: suite.name.as_str().to_owned(),
            });
        }
    }
    Ok(events)
}

/// Merge the inputs (name, trials): the last record of a trial in an input wins; a trial in
/// several inputs is a duplicate, failed if any copy failed.
pub fn merge(inputs: Vec<(String, Vec<TrialEvent>)>) -> Merged {
    let mut merged = Merged::default();
    // key -> (index into events, inputs it came from)
    let mut seen: BTreeMap<(String, String), (usize, Vec<String>)> = BTreeMap::new();
    for (input, events) in inputs {
        let mut last: BTreeMap<(String, String), TrialEvent> = BTreeMap::new();
        let mut order: Vec<(String, String)> = Vec::new();
        for e in events {
            let key = (e.binary.clone(), e.name.clone());
            match last.get(&key) {
                Some(prev)
                    if prev.outcome == TrialOutcome::Failed
                        && e.outcome == TrialOutcome::Passed =>
                {
                    merged.flaky.push(format!("{}: {}", e.binary, e.name));
                }
                Some(_) => {}
                None => order.push(key.clone()),
            }
            last.insert(key, e);
        }
        for key in order {
            let e = last.remove(&key).expect("every key was inserted");
            match seen.get_mut(&key) {
                Some((i, from)) => {
                    from.push(input.clone());
                    if e.outcome == TrialOutcome::Failed {
                        merged.events[*i] = e;
                    }
                }
                None => {
                    seen.insert(key, (merged.events.len(), vec![input.clone()]));
                    merged.events.push(e);
                }
            }
        }
    }
    merged.duplicates = seen
        .into_iter()
        .filter(|(_, (_, from))| from.len() > 1)
        .map(|((binary, name), (_, from))| (format!("{binary}: {name}"), from))
        .collect();
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: &str, outcome: TrialOutcome) -> TrialEvent {
        let (check, place) = name.split_once("::").unwrap();
        let (backend, target) = place.split_once('/').unwrap();
        TrialEvent {
            kind: "trial".into(),
            name: name.into(),
            check: check.into(),
            kernel: check.into(),
            backend: Some(backend.into()),
            target: Some(target.into()),
            outcome,
            message: (outcome != TrialOutcome::Passed).then(|| "why".to_owned()),
            duration_s: 0.25,
            cases: None,
            seed: None,
            bandwidth: None,
            binary: "kernels".into(),
        }
    }

    #[test]
    fn shards_merge_to_the_whole_run() {
        use TrialOutcome::*;
        let shard1 = vec![ev("a::cpu/w32", Passed), ev("b::amd/gfx90a", Ignored)];
        let shard2 = vec![
            ev("a::cpu/w64", Failed),
            ev("b::cpu/w32", Failed),
            // A retry of b (nextest --retries): the last record wins, and it is flaky.
            ev("b::cpu/w32", Passed),
        ];
        let shard3 = vec![ev("a::cpu/w32", Failed)];
        let m = merge(vec![
            ("1".into(), shard1),
            ("2".into(), shard2),
            ("3".into(), shard3),
        ]);
        let got: Vec<(&str, TrialOutcome)> = m
            .events
            .iter()
            .map(|e| (e.name.as_str(), e.outcome))
            .collect();
        assert_eq!(
            got,
            [
                ("a::cpu/w32", Failed),
                ("b::amd/gfx90a", Ignored),
                ("a::cpu/w64", Failed),
                ("b::cpu/w32", Passed),
            ]
        );
        assert_eq!(
            m.duplicates,
            [(
                "kernels: a::cpu/w32".to_owned(),
                vec!["1".to_owned(), "3".to_owned()]
            )]
        );
        assert_eq!(m.flaky, ["kernels: b::cpu/w32"]);
    }

    #[test]
    fn junit_and_json_streams_read_back_as_events() {
        use TrialOutcome::*;
        let events = vec![
            ev("a::cpu/w32", Passed),
            ev("a::amd/gfx90a", Ignored),
            ev("b::nvidia/sm_90", Failed),
        ];
        let back = from_junit(&report::junit(&events)).unwrap();
        let strip =
            |v: &[TrialEvent]| -> Vec<(String, Option<String>, Option<String>, TrialOutcome)> {
                v.iter()
                    .map(|e| {
                        (
                            e.name.clone(),
                            e.backend.clone(),
                            e.target.clone(),
                            e.outcome,
                        )
                    })
                    .collect()
            };
        let mut want = strip(&events);
        want.sort_by(|a, b| a.0.cmp(&b.0));
        let mut got = strip(&back);
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(got, want);
        let mut stream: String = events
            .iter()
            .map(|e| serde_json::to_string(e).unwrap() + "\n")
            .collect();
        stream.push_str("{\"type\":\"summary\",\"passed\":1}\n");
        assert_eq!(from_json_lines(&stream).unwrap(), events);
        assert!(from_json_lines("{not json").unwrap_err().contains("line 1"));
    }
}
