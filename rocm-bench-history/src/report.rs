//! The report: SVG plots and one HTML page under `target/rocm/bench/report/`, opened from disk
//! (no server, no script, no external file).
//!
//! - **History**: for every benchmark that is not a sweep point, its median (or its rate, where
//!   it declared a throughput) in each run that measured it, oldest first, labelled by commit.
//! - **Sweeps**: for every sweep of the newest run that has one (results sharing a group and a
//!   parameter), the rate (or median) against the parameter; logarithmic when the parameter spans
//!   more than two decades.
//! - A table of the newest run's results.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rocm_report::plotters::prelude::*;
use rocm_report::{escape, table_head, table_row, Page, Td, TABLE_END};

use crate::history::{BenchResult, History, HistoryError, Run, ThroughputKind};

/// Errors of [`write_report`].
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading the runs and results out of the history failed.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// Creating the report folder or writing a file in it failed.
    #[error("{path}: {source}; check that the target directory is writable")]
    Io {
        /// The folder or file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Plotters could not draw a plot.
    #[error("drawing {path}: {detail}")]
    Draw {
        /// The SVG file being drawn.
        path: PathBuf,
        /// Plotters' error.
        detail: String,
    },
}

/// What [`write_report`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFiles {
    /// The page to open.
    pub index: PathBuf,
    /// Every SVG file.
    pub plots: Vec<PathBuf>,
}

/// The value a result is drawn by: its rate when it declared a throughput, else its median.
pub fn headline(r: &BenchResult) -> (f64, String) {
    match (&r.throughput, r.unit.as_str()) {
        (Some(t), "ns") if r.summary.median > 0.0 => {
            let per_s = t.per_iteration / (r.summary.median * 1e-9);
            match t.kind {
                ThroughputKind::Bytes => (per_s / 1e9, "GB/s".to_owned()),
                ThroughputKind::Elements => (per_s / 1e9, "G elements/s".to_owned()),
                ThroughputKind::Flops => (per_s / 1e9, "GFLOP/s".to_owned()),
            }
        }
        _ => (r.summary.median, r.unit.clone()),
    }
}

fn slug(id: &str) -> String {
    id.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn short_commit(run: &Run) -> String {
    match &run.git_commit {
        Some(c) => format!(
            "{}{}",
            &c[..c.len().min(7)],
            if run.git_dirty == Some(true) { "+" } else { "" }
        ),
        None => format!("run {}", run.id),
    }
}

/// One line of a plot: a label and its points.
struct Series {
    label: String,
    points: Vec<(f64, f64)>,
}

/// Draws `series` into `path`; `x_labels` names integer x positions (history), `log_x` draws x
/// as log10 (sweeps).
fn draw(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    x_labels: Option<&[String]>,
    log_x: bool,
) -> Result<(), ReportError> {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (mut x0, mut x1) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let y1 = ys.fold(0.0f64, f64::max);
    if x0 >= x1 {
        x0 -= 0.5;
        x1 += 0.5;
    }
    let pad = (x1 - x0) * 0.03;
    let y1 = if y1 > 0.0 { y1 * 1.1 } else { 1.0 };
    let svg = rocm_report::svg((760, 380), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d((x0 - pad)..(x1 + pad), 0.0..y1)?;
        let label_of = |x: &f64| -> String {
            if let Some(labels) = x_labels {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                    return labels[i as usize].clone();
                }
                return String::new();
            }
            if log_x {
                return human(10f64.powf(*x));
            }
            human(*x)
        };
        let x_count = x_labels.map_or(8, |l| l.len().clamp(2, 12));
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels(x_count)
            .y_labels(8)
            .x_label_formatter(&label_of)
            .y_label_formatter(&|y| human(*y))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()?;
        for (i, s) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    color.stroke_width(2),
                ))?
                .label(s.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                });
            chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        }
        if series.len() > 1 {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::LowerRight)
                .draw()?;
        }
        Ok(())
    })
    .map_err(|detail| ReportError::Draw {
        path: path.to_owned(),
        detail,
    })?;
    std::fs::write(path, svg).map_err(|source| ReportError::Io {
        path: path.to_owned(),
        source,
    })
}

/// A value in its unit for people: times in ns as `812 ns`, `1.07 ms`, `2.31 s`; other units as
/// [`human`] numbers.
pub fn with_unit(v: f64, unit: &str) -> String {
    if unit != "ns" {
        return format!("{} {unit}", human(v));
    }
    let (v, u) = if v >= 1e9 {
        (v / 1e9, "s")
    } else if v >= 1e6 {
        (v / 1e6, "ms")
    } else if v >= 1e3 {
        (v / 1e3, "µs")
    } else {
        (v, "ns")
    };
    format!("{} {u}", human(v))
}

/// `1.5k`, `2.3M`, `0.25`: short numbers for axes.
pub fn human(v: f64) -> String {
    let a = v.abs();
    let (v, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let text = if v.abs() >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    format!("{text}{suffix}")
}

/// Writes `index.html` and the SVG files into `dir` from everything in `history`.
pub fn write_report(history: &History, dir: &Path) -> Result<ReportFiles, ReportError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ReportError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    // Plots of an earlier report that this one does not draw again must not linger.
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.path().extension().is_some_and(|x| x == "svg") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let mut runs = history.list_runs()?;
    runs.reverse(); // oldest first
    let mut results: Vec<(Run, Vec<BenchResult>)> = Vec::new();
    for run in &runs {
        results.push((run.clone(), history.results_of_run(run.id)?));
    }
    let mut plots = Vec::new();
    let newest = results.iter().rev().find(|(_, r)| !r.is_empty());

    // History over runs: benchmark id -> (run index, value); one plot per benchmark.
    let run_labels: Vec<String> = runs.iter().map(short_commit).collect();
    let mut by_id: BTreeMap<String, (String, Vec<(f64, f64)>)> = BTreeMap::new();
    for (i, (_, rs)) in results.iter().enumerate() {
        for r in rs.iter().filter(|r| r.param_name.is_none()) {
            let (v, unit) = headline(r);
            let entry = by_id
                .entry(r.benchmark_id.clone())
                .or_insert_with(|| (unit, Vec::new()));
            entry.1.retain(|p| p.0 != i as f64);
            entry.1.push((i as f64, v));
        }
    }
    let mut history_html = String::new();
    for (id, (unit, points)) in &by_id {
        let file = format!("history-{}.svg", slug(id));
        let path = dir.join(&file);
        draw(
            &path,
            id,
            "run (commit; + = uncommitted changes)",
            &unit_axis(unit),
            &[Series {
                label: id.clone(),
                points: points.clone(),
            }],
            Some(&run_labels),
            false,
        )?;
        let _ = writeln!(
            history_html,
            "<figure><img src=\"{file}\" alt=\"history of {id}\"><figcaption>{id}: {n} run(s)</figcaption></figure>",
            id = escape(id),
            n = points.len()
        );
        plots.push(path);
    }

    // Sweeps of the newest run: (group, parameter) -> points.
    let mut sweep_html = String::new();
    if let Some((run, rs)) = newest {
        // (group, parameter) -> (unit, points, note)
        type Sweep = (String, Vec<(f64, f64)>, Option<String>);
        let mut sweeps: BTreeMap<(String, String), Sweep> = BTreeMap::new();
        for r in rs {
            let (Some(name), Some(value), Some(group)) = (&r.param_name, &r.param_value, &r.group)
            else {
                continue;
            };
            let Ok(x) = value.parse::<f64>() else {
                continue;
            };
            let (v, unit) = headline(r);
            let e = sweeps
                .entry((group.clone(), name.clone()))
                .or_insert_with(|| (unit, Vec::new(), r.note.clone()));
            e.1.push((x, v));
        }
        // Sweeps of one suite benchmark on one device share a plot when they share parameter
        // and unit (stream's init/read/scale/triad... against occupancy).
        let mut plots_of: BTreeMap<(String, String, String), Vec<Series>> = BTreeMap::new();
        let mut notes: BTreeMap<(String, String, String), String> = BTreeMap::new();
        for ((group, param), (unit, mut points, note)) in sweeps {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (parent, leaf) = group.rsplit_once('/').unwrap_or(("", &group));
            let key = (parent.to_owned(), param.clone(), unit);
            if let Some(n) = note {
                notes.insert(key.clone(), n);
            }
            plots_of.entry(key).or_default().push(Series {
                label: leaf.to_owned(),
                points,
            });
        }
        for ((parent, param, unit), mut series) in plots_of {
            let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
            let (lo, hi) = xs.fold((f64::MAX, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
            let log_x = lo > 0.0 && hi / lo > 100.0;
            if log_x {
                for s in &mut series {
                    for p in &mut s.points {
                        p.0 = p.0.log10();
                    }
                }
            }
            let title = if parent.is_empty() {
                param.clone()
            } else {
                parent.clone()
            };
            let file = format!("sweep-{}-{}.svg", slug(&parent), slug(&param));
            let path = dir.join(&file);
            draw(
                &path,
                &title,
                &if log_x {
                    format!("{param} (log scale)")
                } else {
                    param.clone()
                },
                &unit_axis(&unit),
                &series,
                None,
                log_x,
            )?;
            let note = notes
                .get(&(parent.clone(), param.clone(), unit.clone()))
                .map(|n| format!(" <em>({})</em>", escape(n)))
                .unwrap_or_default();
            let _ = writeln!(
                sweep_html,
                "<figure><img src=\"{file}\" alt=\"{t} against {p}\"><figcaption>{t} against {p}, run {id} ({c}){note}</figcaption></figure>",
                t = escape(&title),
                p = escape(&param),
                id = run.id,
                c = escape(&short_commit(run)),
            );
            plots.push(path);
        }
    }

    let mut html = Page::new(
        "cargo rocm bench report",
        "body{max-width:1600px}table{font-size:0.9em;margin-bottom:1.5em}\
         figure{display:inline-block;margin:0.5em;vertical-align:top}\
         figure img{width:760px;border:1px solid #ddd}\
         figcaption{font-size:0.85em;color:#555;max-width:760px}",
    );
    let _ = write!(
        html,
        "<h1>cargo rocm bench</h1>\n\
         <p>{} run(s) in {}. Every figure comes from this history: regenerate with \
         <code>cargo rocm bench report</code>.</p>\n",
        runs.len(),
        escape(&history.path().display().to_string())
    );
    html.push_str("<h2>Runs</h2>\n");
    html.push_str(&table_head(&[
        "run", "commit", "started", "status", "results", "command",
    ]));
    for run in runs.iter().rev() {
        html.push_str(&table_row([
            Td::num(run.id),
            Td::from(format!("<code>{}</code>", escape(&short_commit(run)))),
            Td::from(crate::sys::rfc3339_utc(run.started_at_ms)),
            Td::from(run.status.as_str()),
            Td::num(run.result_count),
            Td::from(format!("<code>{}</code>", escape(&run.command_line))),
        ]));
    }
    html.push_str(TABLE_END);
    if !sweep_html.is_empty() {
        html.push_str("<h2>Sweeps (newest run)</h2>\n");
        html.push_str(&sweep_html);
    }
    if !history_html.is_empty() {
        html.push_str("<h2>History over runs</h2>\n");
        html.push_str(&history_html);
    }
    if let Some((run, rs)) = newest {
        let _ = writeln!(
            html,
            "<h2>Results of run {} ({})</h2>",
            run.id,
            escape(&short_commit(run))
        );
        html.push_str(&table_head(&[
            "benchmark",
            "device",
            "median",
            "rate",
            "MAD",
            "samples",
            "stability",
            "note",
        ]));
        for r in rs {
            let (v, unit) = headline(r);
            let rate = if r.throughput.is_some() {
                format!("{} {unit}", human(v))
            } else {
                String::new()
            };
            html.push_str(&table_row([
                Td::from(format!("<code>{}</code>", escape(&r.benchmark_id))),
                Td::from(escape(&r.device.name)),
                Td::num(escape(&with_unit(r.summary.median, &r.unit))),
                Td::num(rate),
                Td::num(escape(&with_unit(r.summary.mad, &r.unit))),
                Td::num(r.summary.count),
                Td::from(r.summary.stability.as_str()),
                Td::from(escape(r.note.as_deref().unwrap_or(""))),
            ]));
        }
        html.push_str(TABLE_END);
    }
    if runs.is_empty() {
        html.push_str("<p>No runs recorded yet: run <code>cargo rocm bench</code>.</p>\n");
    }
    let html = html.finish();
    let index = dir.join("index.html");
    std::fs::write(&index, html).map_err(io(&index))?;
    Ok(ReportFiles { index, plots })
}

fn unit_axis(unit: &str) -> String {
    match unit {
        "ns" => "median time per iteration (ns)".to_owned(),
        u => u.to_owned(),
    }
}
