//! The report as a page: the summary table, and per kernel its table and an SVG chart of every
//! dispatch's time in launch order (with the median), where noise, drift and two modes show.
//! The SVGs are inline, so the page is one file that opens anywhere.

use std::fmt::Write;

use rocm_report::plotters::prelude::*;
use rocm_report::{color, escape, table_head, table_row, Page, Td, TABLE_END};

use crate::dispatch::Dispatch;
use crate::render::{self, duration};
use crate::report::ProfileReport;

/// The SVG chart of one kernel's dispatch times, in microseconds.
pub(crate) fn timeline_svg(name: &str, times_ns: &[f64], median_ns: f64) -> Result<String, String> {
    rocm_report::svg((760, 300), |root| {
        let n = times_ns.len().max(1) as f64;
        let top = times_ns.iter().copied().fold(0.0f64, f64::max) / 1e3;
        let top = if top > 0.0 { top * 1.1 } else { 1.0 };
        let mut chart = ChartBuilder::on(root)
            .caption(format!("{name}: time of each dispatch"), ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..n, 0.0..top)?;
        chart
            .configure_mesh()
            .x_desc("dispatch")
            .y_desc("µs")
            .light_line_style(RGBColor(235, 235, 235))
            .draw()?;
        chart.draw_series(
            times_ns
                .iter()
                .enumerate()
                .map(|(i, t)| Circle::new((i as f64 + 0.5, t / 1e3), 2, color(0).filled())),
        )?;
        // The median, in red.
        chart.draw_series(LineSeries::new(
            [(0.0, median_ns / 1e3), (n, median_ns / 1e3)],
            color(3).stroke_width(1),
        ))?;
        Ok(())
    })
}

/// The whole page. `dispatches` are the profiled dispatches (for the charts).
pub fn page(report: &ProfileReport, dispatches: &[Dispatch]) -> String {
    let mut out = Page::new(
        "cargo rocm profile",
        "body{max-width:1100px}table{margin:0.5em 0}\
         td,th{padding:2px 10px;border:0;border-bottom:1px solid #ddd;text-align:right}\
         td:first-child,th:first-child{text-align:left}pre{background:#f6f6f6;padding:8px}\
         .stable{color:#2a7}.noisy{color:#c80}.unstable{color:#c22}",
    );
    let _ = writeln!(
        out,
        "<h1>Profile</h1><p><code>{}</code> on {} ({}{}), measured by {} ({}): {} dispatches, {} of kernel time.</p>",
        escape(&report.command.join(" ")),
        escape(report.device.as_deref().unwrap_or("an unknown device")),
        report.backend,
        report.arch.as_deref().map(|a| format!(" {}", escape(a))).unwrap_or_default(),
        escape(&report.tool.name),
        escape(&report.tool.source),
        report.dispatches,
        duration(report.total_time_ns)
    );
    out.push_str(&table_head(&[
        "kernel",
        "calls",
        "total",
        "share",
        "median",
        "min",
        "max",
        "occupancy",
        "GB/s",
        "stability",
    ]));
    for (i, k) in report.kernels.iter().enumerate() {
        let class = k.stability.class.as_str();
        out.push_str(&table_row([
            Td::from(format!("<a href=\"#k{i}\">{}</a>", escape(&k.name))),
            Td::from(k.calls.to_string()),
            Td::from(duration(k.time.total_ns)),
            Td::from(format!("{:.1}%", 100.0 * k.share)),
            Td::from(duration(k.time.median_ns)),
            Td::from(duration(k.time.min_ns)),
            Td::from(duration(k.time.max_ns)),
            Td::from(
                k.occupancy
                    .as_ref()
                    .map_or_else(|| "-".into(), |o| format!("{}/{}", o.waves, o.max_waves)),
            ),
            Td::from(
                k.throughput
                    .as_ref()
                    .and_then(|t| t.gb_per_s)
                    .map_or_else(|| "-".into(), |g| format!("{g:.1}")),
            ),
            Td::with_class(class, class.replace('_', " ")),
        ]));
    }
    out.push_str(TABLE_END);
    for (i, k) in report.kernels.iter().enumerate() {
        let _ = writeln!(out, "<h2 id=\"k{i}\">{}</h2>", escape(&k.name));
        let _ = writeln!(out, "<pre>{}</pre>", escape(&render::kernel(k)));
        let times: Vec<f64> = dispatches
            .iter()
            .filter(|d| d.kernel == k.name)
            .map(|d| d.duration_ns)
            .collect();
        match timeline_svg(&k.name, &times, k.time.median_ns) {
            Ok(svg) => out.push_str(&svg),
            Err(e) => {
                let _ = writeln!(out, "<p>(no chart: {})</p>", escape(&e));
            }
        }
    }
    if !report.notes.is_empty() {
        out.push_str("<h2>Notes</h2><ul>\n");
        for n in &report.notes {
            let _ = writeln!(out, "<li>{}</li>", escape(n));
        }
        out.push_str("</ul>\n");
    }
    out.finish()
}
