//! What `cargo rocm tune` shows: the table of best configurations and speed-ups for people, and
//! an HTML report with SVG plots (plotters): convergence (best so far against evaluations, one
//! line per strategy) and the time of every evaluated configuration against each parameter.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rocm_protocol::tune::{TuneReport, TuneRun};
use rocm_report::plotters::prelude::*;
use rocm_report::{color, escape, table_head, table_row, Page, TABLE_END};

/// `n=2048, m=512`.
pub fn problem_text(p: &BTreeMap<String, i64>) -> String {
    p.iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `BM=64 BN=128`.
pub fn config_text(c: &BTreeMap<String, serde_json::Value>) -> String {
    c.iter()
        .map(|(n, v)| match v {
            serde_json::Value::String(s) => format!("{n}={s}"),
            other => format!("{n}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn ms(t: Option<f64>) -> String {
    t.map(|t| format!("{t:.4}")).unwrap_or_else(|| "-".into())
}

/// The table printed at the end of a run.
/// `nvidia sm_90`, with the pooled devices (`×2: nvidia/sm_90#0, #1`) and the slice (`[2/3]`).
fn device_text(r: &TuneRun) -> String {
    let mut text = format!("{} {}", r.device.backend, r.device.arch);
    if r.devices.len() > 1 {
        text.push_str(&format!(" ×{}", r.devices.len()));
    }
    if let Some(p) = &r.partition {
        text.push_str(&format!(" [{p}]"));
    }
    text
}

pub fn table(report: &TuneReport) -> String {
    let mut rows: Vec<Vec<String>> = vec![vec![
        "kernel".into(),
        "device".into(),
        "problem".into(),
        "strategy".into(),
        "evals".into(),
        "failed".into(),
        "best ms".into(),
        "default ms".into(),
        "speed-up".into(),
        "overhead/eval ms".into(),
        "best configuration".into(),
    ]];
    for r in &report.runs {
        let best = r.best.as_ref();
        let mut time = ms(best.and_then(|b| b.time_ms));
        if let (Some(unit), Some(tp)) = (&r.throughput_unit, best.and_then(|b| b.throughput)) {
            time = format!("{time} ({tp:.1} {unit})");
        }
        rows.push(vec![
            r.kernel.clone(),
            device_text(r),
            problem_text(&r.problem),
            r.strategy.clone(),
            format!("{}/{}", r.evaluations, r.space),
            r.failures.values().sum::<usize>().to_string(),
            time,
            ms(r.default.as_ref().and_then(|d| d.time_ms)),
            r.speedup
                .map(|s| format!("{s:.2}x"))
                .unwrap_or_else(|| "-".into()),
            format!("{:.1}", r.overhead.per_eval_ms),
            best.map(|b| config_text(&b.config))
                .unwrap_or_else(|| "nothing valid".into()),
        ]);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
        if i == 0 {
            let _ = writeln!(
                out,
                "{}",
                widths
                    .iter()
                    .map(|w| "-".repeat(*w))
                    .collect::<Vec<_>>()
                    .join("  ")
            );
        }
    }
    for r in &report.runs {
        for w in &r.warnings {
            let _ = writeln!(out, "warning: {} ({}): {w}", r.kernel, r.strategy);
        }
    }
    out
}

/// Best time so far after each evaluation of one run: (evaluation, ms).
fn convergence(run: &TuneRun) -> Vec<(f64, f64)> {
    let mut best = f64::INFINITY;
    let mut points = Vec::new();
    for (i, s) in run.trace.iter().enumerate() {
        if let Some(t) = s.time_ms {
            best = best.min(t);
        }
        if best.is_finite() {
            points.push(((i + 1) as f64, best));
        }
    }
    points
}

/// An SVG of the convergence of every strategy run of one kernel, device and problem.
fn convergence_svg(runs: &[&TuneRun]) -> Result<String, String> {
    let series: Vec<(String, Vec<(f64, f64)>)> = runs
        .iter()
        .map(|r| (r.strategy.clone(), convergence(r)))
        .filter(|(_, p)| !p.is_empty())
        .collect();
    let all: Vec<&(f64, f64)> = series.iter().flat_map(|(_, p)| p.iter()).collect();
    if all.is_empty() {
        return Ok(String::new());
    }
    let max_x = all.iter().map(|p| p.0).fold(1.0, f64::max);
    let lo = all.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let hi = all.iter().map(|p| p.1).fold(0.0, f64::max);
    let pad = ((hi - lo) * 0.05).max(hi * 0.01);
    rocm_report::svg((720, 360), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption("best time so far", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..max_x + 1.0, (lo - pad).max(0.0)..hi + pad)?;
        chart
            .configure_mesh()
            .x_desc("evaluations")
            .y_desc("ms")
            .draw()?;
        for (i, (name, points)) in series.iter().enumerate() {
            let color = color(i);
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        Ok(())
    })
}

/// An SVG of the time of every valid evaluated configuration against one numeric parameter.
fn parameter_svg(runs: &[&TuneRun], param: &str) -> Result<String, String> {
    let mut points: Vec<(f64, f64)> = Vec::new();
    for r in runs {
        for s in &r.trace {
            let (Some(t), Some(v)) = (s.time_ms, s.config.get(param).and_then(|v| v.as_f64()))
            else {
                continue;
            };
            points.push((v, t));
        }
    }
    if points.len() < 2 {
        return Ok(String::new());
    }
    let positive = points.iter().all(|p| p.0 > 0.0);
    let (x_lo, x_hi) = points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.0), b.max(p.0))
        });
    // Powers of two spread evenly on a log scale.
    let log = positive && x_hi / x_lo >= 8.0;
    let x = |v: f64| if log { v.log2() } else { v };
    let (xa, xb) = (x(x_lo), x(x_hi));
    let xpad = ((xb - xa) * 0.08).max(0.5);
    let t_hi = points.iter().map(|p| p.1).fold(0.0, f64::max);
    rocm_report::svg((360, 260), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                if log {
                    format!("time vs {param} (log2)")
                } else {
                    format!("time vs {param}")
                },
                ("sans-serif", 15),
            )
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(56)
            .build_cartesian_2d(xa - xpad..xb + xpad, 0.0..t_hi * 1.05)?;
        chart
            .configure_mesh()
            .y_desc("ms")
            .x_label_formatter(&|v| {
                if log {
                    format!("{}", 2f64.powf(*v).round())
                } else {
                    format!("{v}")
                }
            })
            .draw()?;
        chart.draw_series(
            points
                .iter()
                .map(|p| Circle::new((x(p.0), p.1), 3, color(0).mix(0.5).filled())),
        )?;
        Ok(())
    })
}

/// The HTML report: per kernel, device and problem, a summary table, the convergence plot and
/// one plot per numeric parameter.
pub fn html(report: &TuneReport) -> String {
    let mut groups: BTreeMap<(String, String, String), Vec<&TuneRun>> = BTreeMap::new();
    for r in &report.runs {
        groups
            .entry((
                r.kernel.clone(),
                r.device.name.clone(),
                problem_text(&r.problem),
            ))
            .or_default()
            .push(r);
    }
    let mut h = Page::new(
        "cargo rocm tune",
        "body{max-width:1200px}.plots{display:flex;flex-wrap:wrap;gap:8px}",
    );
    h.push_str("<h1>cargo rocm tune</h1>\n");
    for e in &report.errors {
        let _ = writeln!(
            h,
            "<p class=\"err\">{}: {}</p>",
            escape(&e.kernel),
            escape(&e.message)
        );
    }
    for ((kernel, device, problem), runs) in &groups {
        let first = runs[0];
        let _ = writeln!(
            h,
            "<h2>{} on {} ({})</h2>\n<p>{} valid configurations of {} ({} restrictions); default: {} ms</p>",
            escape(kernel),
            escape(device),
            escape(problem),
            first.space,
            first.raw_space,
            first.restrictions.len(),
            ms(first.default.as_ref().and_then(|d| d.time_ms))
        );
        h.push_str(&table_head(&[
            "strategy",
            "evaluations",
            "failed",
            "best ms",
            "speed-up",
            "overhead/eval ms",
            "best configuration",
        ]));
        for r in runs {
            h.push_str(&table_row([
                escape(&r.strategy),
                r.evaluations.to_string(),
                r.failures.values().sum::<usize>().to_string(),
                ms(r.best.as_ref().and_then(|b| b.time_ms)),
                r.speedup.map(|s| format!("{s:.2}x")).unwrap_or_default(),
                format!("{:.1}", r.overhead.per_eval_ms),
                escape(
                    &r.best
                        .as_ref()
                        .map(|b| config_text(&b.config))
                        .unwrap_or_default(),
                ),
            ]));
        }
        h.push_str(TABLE_END);
        match convergence_svg(runs) {
            Ok(svg) => h.push_str(&svg),
            Err(e) => {
                let _ = writeln!(h, "<p class=\"err\">plot: {}</p>", escape(&e));
            }
        }
        h.push_str("<div class=\"plots\">\n");
        for p in &first.parameters {
            match parameter_svg(runs, &p.name) {
                Ok(svg) => h.push_str(&svg),
                Err(e) => {
                    let _ = writeln!(h, "<p class=\"err\">plot: {}</p>", escape(&e));
                }
            }
        }
        h.push_str("</div>\n");
        for r in runs {
            for w in &r.warnings {
                let _ = writeln!(
                    h,
                    "<p class=\"err\">{}: {}</p>",
                    escape(&r.strategy),
                    escape(w)
                );
            }
        }
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocm_protocol::tune::{
        DeviceDesc, Measured, Overhead, ParamInfo, ParamKind, TraceStep, TuneRun,
    };

    fn run(strategy: &str, times: &[f64]) -> TuneRun {
        TuneRun {
            kernel: "matmul".into(),
            device: DeviceDesc {
                backend: "cpu".into(),
                arch: "x86_64".into(),
                name: "cpu".into(),
                wave_size: 64,
            },
            problem: [("n".to_string(), 256)].into(),
            strategy: strategy.into(),
            seed: 0,
            parameters: vec![ParamInfo {
                name: "BM".into(),
                kind: ParamKind::Define,
                values: vec![16.into(), 32.into(), 64.into(), 128.into()],
            }],
            restrictions: vec![],
            space: 4,
            raw_space: 4,
            budget: Some(4),
            evaluations: times.len(),
            failures: BTreeMap::new(),
            cache_hits: 0,
            remeasurements: 0,
            best: Some(Measured {
                config: [("BM".to_string(), serde_json::json!(64))].into(),
                time_ms: Some(1.0),
                cv: Some(0.01),
                throughput: None,
                failure: None,
            }),
            default: None,
            speedup: Some(2.0),
            throughput_unit: None,
            overhead: Overhead::default(),
            stop: "budget_exhausted".into(),
            warnings: vec![],
            trace: times
                .iter()
                .enumerate()
                .map(|(i, t)| TraceStep {
                    config: [("BM".to_string(), serde_json::json!(16 << i))].into(),
                    outcome: "ok".into(),
                    time_ms: Some(*t),
                    elapsed_s: i as f64,
                    from_cache: false,
                })
                .collect(),
            cache_file: None,
            devices: Vec::new(),
            partition: None,
        }
    }

    #[test]
    fn convergence_is_the_running_minimum() {
        let r = run("random", &[3.0, 2.0, 4.0, 1.0]);
        assert_eq!(
            convergence(&r),
            vec![(1.0, 3.0), (2.0, 2.0), (3.0, 2.0), (4.0, 1.0)]
        );
    }

    #[test]
    fn report_has_a_table_and_plots() {
        let report = TuneReport {
            runs: vec![run("random", &[3.0, 2.0]), run("bayes", &[2.5, 1.0])],
            ..TuneReport::default()
        };
        let t = table(&report);
        assert!(t.contains("matmul"), "{t}");
        assert!(t.contains("2.00x") && t.contains("BM=64"), "{t}");
        let h = html(&report);
        assert_eq!(h.matches("<svg").count(), 2, "convergence and BM");
        assert!(h.contains("time vs BM") && h.contains("best time so far"));
        assert!(h.contains("bayes") && h.contains("random"));
    }
}
