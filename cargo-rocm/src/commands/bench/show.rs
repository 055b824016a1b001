//! The subcommands that read the history: list, show, compare, baseline, export, report.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use rocm_bench_history::history::{BenchResult, ExportScope, Run, RunComparison, RunSelector};
use rocm_bench_history::report::{headline, human, with_unit};
use rocm_bench_history::{compare_runs, History};
use rocm_stats::{CompareConfig, Verdict};

use super::run::{bench_dir, history_path};
use super::{history_error, parse_run_name, Action, BaselineAction, RunArgs, RunName};
use crate::cli::{FormatArgs, GlobalArgs};
use crate::exit::{self, CommandError};
use crate::output::Output;

/// The newest run's results, for people: one row each.
pub fn results_table(results: &[BenchResult]) -> String {
    let mut rows = vec![[
        "benchmark".to_owned(),
        "median".to_owned(),
        "±MAD".to_owned(),
        "rate".to_owned(),
        "n".to_owned(),
        "stability".to_owned(),
    ]];
    for r in results {
        let (v, unit) = headline(r);
        rows.push([
            r.benchmark_id.clone(),
            with_unit(r.summary.median, &r.unit),
            with_unit(r.summary.mad, &r.unit),
            if r.throughput.is_some() {
                format!("{} {unit}", human(v))
            } else {
                String::new()
            },
            r.summary.count.to_string(),
            format!(
                "{}{}",
                r.summary.stability.as_str(),
                r.note
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            ),
        ]);
    }
    table(&rows)
}

fn table<const N: usize>(rows: &[[String; N]]) -> String {
    let mut widths = [0usize; N];
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut s = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(widths).enumerate() {
            // First column left-aligned, numbers right-aligned, the last left-aligned.
            if i == 0 || i == N - 1 {
                let _ = write!(line, "{c:<w$}  ");
            } else {
                let _ = write!(line, "{c:>w$}  ");
            }
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

fn open(path: &Path) -> anyhow::Result<History> {
    if !path.exists() {
        return Err(CommandError::NoHistory {
            path: path.to_owned(),
        }
        .into());
    }
    History::open(path).map_err(history_error)
}

fn resolve(db: &History, name: &str) -> anyhow::Result<Run> {
    let baselines: Vec<String> = db
        .list_baselines()
        .map_err(history_error)?
        .into_iter()
        .map(|b| b.name)
        .collect();
    match parse_run_name(name, &baselines) {
        RunName::Selector(s) => db.resolve(&s).map_err(history_error),
        RunName::Previous => {
            let runs = db.list_runs().map_err(history_error)?;
            runs.into_iter()
                .nth(1)
                .ok_or_else(|| CommandError::NoEarlierRun { before: None }.into())
        }
    }
}

pub fn run(
    global: &GlobalArgs,
    action: Action,
    run_args: &RunArgs,
    history: Option<&Path>,
    format: FormatArgs,
    out: &Output,
) -> anyhow::Result<u8> {
    let path = history_path(global, run_args, history)?;
    let mut stdout = out.stdout();
    match action {
        Action::List => {
            let db = open(&path)?;
            let runs = db.list_runs().map_err(history_error)?;
            if format.json() {
                writeln!(stdout, "{}", serde_json::to_string(&runs)?)?;
                return Ok(exit::OK);
            }
            let mut rows = vec![[
                "run",
                "started (UTC)",
                "commit",
                "status",
                "results",
                "command",
            ]
            .map(String::from)];
            for r in &runs {
                rows.push([
                    r.id.to_string(),
                    rocm_bench_history::rfc3339_utc(r.started_at_ms),
                    r.git_commit
                        .as_deref()
                        .map(|c| {
                            format!(
                                "{}{}",
                                &c[..c.len().min(10)],
                                if r.git_dirty == Some(true) { "+" } else { "" }
                            )
                        })
                        .unwrap_or_else(|| "-".into()),
                    r.status.as_str().to_owned(),
                    r.result_count.to_string(),
                    r.command_line.clone(),
                ]);
            }
            write!(stdout, "{}", table(&rows))?;
        }
        Action::Show { run } => {
            let db = open(&path)?;
            let run = resolve(&db, &run)?;
            let results = db.results_of_run(run.id).map_err(history_error)?;
            if format.json() {
                writeln!(
                    stdout,
                    "{}",
                    serde_json::json!({"run": run, "results": results})
                )?;
            } else {
                writeln!(
                    stdout,
                    "run {} ({}), {}",
                    run.id,
                    run.git_commit.as_deref().unwrap_or("no commit"),
                    run.status.as_str()
                )?;
                write!(stdout, "{}", results_table(&results))?;
            }
        }
        Action::Compare(c) => {
            let db = open(&path)?;
            let new = resolve(&db, c.new.as_deref().unwrap_or("latest"))?;
            let base = match &c.base {
                Some(b) => resolve(&db, b)?,
                None => {
                    let runs = db.list_runs().map_err(history_error)?;
                    runs.into_iter()
                        .find(|r| {
                            r.started_at_ms < new.started_at_ms
                                || (r.started_at_ms == new.started_at_ms && r.id < new.id)
                        })
                        .ok_or(CommandError::NoEarlierRun {
                            before: Some(new.id),
                        })?
                }
            };
            let mut config = CompareConfig::default();
            if let Some(t) = c.threshold {
                config.noise_threshold = t / 100.0;
            }
            let report = compare_runs(
                &db,
                &RunSelector::Id(base.id),
                &RunSelector::Id(new.id),
                &config,
            )
            .map_err(history_error)?;
            let slower = report
                .compared
                .iter()
                .filter(|b| b.comparison.verdict == Verdict::Slower)
                .count();
            if format.json() {
                writeln!(stdout, "{}", serde_json::to_string(&report)?)?;
            } else {
                write!(stdout, "{}", comparison_table(&report, &config))?;
            }
            if c.fail_on_regression && slower > 0 {
                return Err(CommandError::Regressions {
                    slower,
                    base: base.id,
                    new: new.id,
                }
                .into());
            }
        }
        Action::Baseline { action } => {
            let mut db = open(&path)?;
            match action {
                BaselineAction::Save { name, run } => {
                    let run = resolve(&db, &run)?;
                    db.save_baseline(&name, run.id).map_err(history_error)?;
                    out.status("Saved", format!("baseline `{name}` = run {}", run.id));
                }
                BaselineAction::List => {
                    for b in db.list_baselines().map_err(history_error)? {
                        writeln!(
                            stdout,
                            "{}\trun {}\t{}",
                            b.name,
                            b.run_id,
                            rocm_bench_history::rfc3339_utc(b.saved_at_ms)
                        )?;
                    }
                }
            }
        }
        Action::Export {
            format: fmt,
            run,
            output,
        } => {
            let db = open(&path)?;
            let scope = match run {
                Some(r) => ExportScope::Run(resolve(&db, &r)?.id),
                None => ExportScope::All,
            };
            let mut buf = Vec::new();
            let n = if fmt == "json" {
                db.export_json(scope, &mut buf)
            } else {
                db.export_csv(scope, &mut buf)
            }
            .map_err(history_error)?;
            match output {
                Some(p) => {
                    std::fs::write(&p, &buf).map_err(|reason| CommandError::CannotWrite {
                        path: p.clone(),
                        reason,
                    })?;
                    out.status("Exported", format!("{n} result(s) to {}", p.display()));
                }
                None => stdout.write_all(&buf)?,
            }
        }
        Action::Report => {
            let db = open(&path)?;
            let dir = match history {
                Some(h) => h.parent().unwrap_or(Path::new(".")).join("report"),
                None => bench_dir(
                    path.parent()
                        .and_then(Path::parent)
                        .and_then(Path::parent)
                        .unwrap_or(Path::new(".")),
                )
                .join("report"),
            };
            let files = rocm_bench_history::report::write_report(&db, &dir)
                .map_err(CommandError::BenchReport)?;
            out.status("Report", files.index.display());
        }
    }
    Ok(exit::OK)
}

/// The verdicts, for people.
pub fn comparison_table(report: &RunComparison, config: &CompareConfig) -> String {
    let mut s = format!(
        "run {} ({}) against run {} ({}): verdicts from a {:.0}% bootstrap interval of the ratio of \
         medians, ±{:.1}% counted as no change\n",
        report.new.id,
        report.new.git_commit.as_deref().map(|c| &c[..c.len().min(10)]).unwrap_or("-"),
        report.baseline.id,
        report.baseline.git_commit.as_deref().map(|c| &c[..c.len().min(10)]).unwrap_or("-"),
        config.confidence * 100.0,
        config.noise_threshold * 100.0
    );
    let mut rows = vec![[
        "benchmark",
        "device",
        "base median",
        "new median",
        "ratio",
        "interval",
        "verdict",
    ]
    .map(String::from)];
    for b in &report.compared {
        let c = &b.comparison;
        rows.push([
            b.key.benchmark_id.clone(),
            b.key.device_name.clone(),
            with_unit(c.baseline_median, &b.unit),
            with_unit(c.new_median, &b.unit),
            format!("{:.3}", c.ratio),
            c.ci.as_ref()
                .map(|ci| format!("{:.3}..{:.3}", ci.low, ci.high))
                .unwrap_or_default(),
            c.verdict.as_str().replace('_', " "),
        ]);
    }
    s.push_str(&table(&rows));
    for i in &report.incomparable {
        let _ = writeln!(s, "not compared: {} ({})", i.key.benchmark_id, i.reason);
    }
    for k in &report.only_in_baseline {
        let _ = writeln!(s, "only in run {}: {}", report.baseline.id, k.benchmark_id);
    }
    for k in &report.only_in_new {
        let _ = writeln!(s, "only in run {}: {}", report.new.id, k.benchmark_id);
    }
    s
}
