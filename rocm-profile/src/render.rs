//! The report for people: a summary table (one row per kernel, the most time first), then one
//! table per kernel with its times, stability, resources, occupancy, throughput and counters.

use std::fmt::Write;

use crate::report::{KernelReport, ProfileReport};

/// A duration in nanoseconds with a unit that keeps 3–4 significant digits.
pub(crate) fn duration(ns: f64) -> String {
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    if v >= 100.0 {
        format!("{v:.0} {unit}")
    } else if v >= 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// A counter value: plain where short, scientific where large or tiny.
fn number(v: f64) -> String {
    if v == 0.0 || (1e-2..1e6).contains(&v.abs()) {
        format!("{v:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    } else {
        format!("{v:.3e}")
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// Columns padded to their widest cell; the first left-aligned, the rest right-aligned.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::from(" ");
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            let pad = w - c.chars().count();
            if i == 0 {
                let _ = write!(s, " {c}{}", " ".repeat(pad));
            } else {
                let _ = write!(s, "  {}{c}", " ".repeat(pad));
            }
        }
        s.trim_end().to_owned() + "\n"
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out += &line(row.iter().map(String::as_str).collect());
    }
    out
}

/// The whole report as text.
pub fn render(r: &ProfileReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "profile of `{}` on {} ({}{}), measured by {} ({})",
        r.command.join(" "),
        r.device.as_deref().unwrap_or("an unknown device"),
        r.backend,
        r.arch
            .as_deref()
            .map(|a| format!(" {a}"))
            .unwrap_or_default(),
        r.tool.name,
        r.tool.source
    );
    let _ = writeln!(
        out,
        "{} dispatches of {} kernels, {} of kernel time\n",
        r.dispatches,
        r.kernels.len(),
        duration(r.total_time_ns)
    );
    let rows: Vec<Vec<String>> = r
        .kernels
        .iter()
        .map(|k| {
            vec![
                k.name.clone(),
                k.calls.to_string(),
                duration(k.time.total_ns),
                format!("{:.1}%", 100.0 * k.share),
                duration(k.time.median_ns),
                k.occupancy
                    .as_ref()
                    .map_or_else(|| "-".into(), |o| format!("{}/{}", o.waves, o.max_waves)),
                k.throughput
                    .as_ref()
                    .and_then(|t| t.gb_per_s)
                    .map_or_else(|| "-".into(), |g| format!("{g:.1}")),
                k.stability.class.as_str().replace('_', " "),
            ]
        })
        .collect();
    out += &table(
        &[
            "kernel",
            "calls",
            "total",
            "share",
            "median",
            "occupancy",
            "GB/s",
            "stability",
        ],
        &rows,
    );
    for k in &r.kernels {
        out.push('\n');
        out += &kernel(k);
    }
    if !r.notes.is_empty() {
        out.push('\n');
        for n in &r.notes {
            let _ = writeln!(out, "note: {n}");
        }
    }
    out
}

/// One kernel's table.
pub(crate) fn kernel(k: &KernelReport) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut row = |a: &str, b: String| rows.push(vec![a.to_owned(), b]);
    let t = &k.time;
    row("calls", k.calls.to_string());
    row(
        "time total / mean / median",
        format!(
            "{} / {} / {}",
            duration(t.total_ns),
            duration(t.mean_ns),
            duration(t.median_ns)
        ),
    );
    row(
        "time min / max",
        format!("{} / {}", duration(t.min_ns), duration(t.max_ns)),
    );
    row("share of kernel time", format!("{:.1}%", 100.0 * k.share));
    let s = &k.stability;
    let mut verdict = format!(
        "{} (CV {:.1}%, MAD {} = {:.1}% of the median)",
        s.class.as_str().replace('_', " "),
        100.0 * s.cv,
        duration(t.mad_ns),
        100.0 * s.rel_mad
    );
    if let Some([a, b]) = s.modes_ns {
        let _ = write!(verdict, "; bimodal: {} and {}", duration(a), duration(b));
    }
    row("stability", verdict);
    if let Some(l) = &k.launch {
        let grid = l
            .grid
            .map_or_else(|| "?".to_owned(), |g| format!("{}x{}x{}", g[0], g[1], g[2]));
        let mut text = format!(
            "grid {grid}, block {}x{}x{}",
            l.block[0], l.block[1], l.block[2]
        );
        if let Some(b) = l.dynamic_shared_bytes.filter(|b| *b > 0) {
            let _ = write!(text, ", {b} B dynamic shared");
        }
        row("launch", text);
    }
    if let Some(r) = &k.resources {
        let regs = match (r.sgprs, r.agprs) {
            (Some(s), Some(a)) => format!("{} VGPR ({a} AGPR), {s} SGPR", opt(r.vgprs)),
            (Some(s), None) => format!("{} VGPR, {s} SGPR", opt(r.vgprs)),
            _ => format!("{} per thread", opt(r.vgprs)),
        };
        row("registers", regs);
        row(
            "LDS / scratch",
            format!(
                "{} B static / {} B per thread",
                opt(r.lds_bytes),
                opt(r.scratch_bytes)
            ),
        );
        if r.vgpr_spills.is_some() || r.sgpr_spills.is_some() {
            row(
                "spills VGPR / SGPR",
                format!("{} / {}", opt(r.vgpr_spills), opt(r.sgpr_spills)),
            );
        }
        row("from", r.source.clone());
    }
    if let Some(o) = &k.occupancy {
        let unit = if o.source.starts_with("driver") {
            "warps/SM"
        } else {
            "waves/SIMD"
        };
        let mut text = format!(
            "{}/{} {unit} ({:.0}%) at {} threads per block",
            o.waves,
            o.max_waves,
            100.0 * o.fraction,
            o.block_threads
        );
        if let Some(l) = &o.limiter {
            let _ = write!(text, ", limited by {}", l.replace('_', " "));
        }
        if let Some(p) = o.profiler_fraction {
            let _ = write!(text, "; profiler: {:.0}%", 100.0 * p);
        }
        row("occupancy", text);
        row("occupancy from", o.source.clone());
    }
    if let Some(tp) = &k.throughput {
        if let Some(g) = tp.gb_per_s {
            row("bandwidth (declared bytes)", format!("{g:.1} GB/s"));
        }
        if let Some(g) = tp.gflop_per_s {
            row("FLOP rate (declared)", format!("{g:.1} GFLOP/s"));
        }
    }
    for (name, v) in &k.counters {
        row(name, number(*v));
    }
    let width = rows.iter().map(|r| r[0].chars().count()).max().unwrap_or(0);
    let mut out = format!("`{}`\n", k.name);
    for r in &rows {
        let _ = writeln!(out, "  {:<width$}  {}", r[0], r[1]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::duration;

    #[test]
    fn durations_keep_a_few_significant_digits() {
        assert_eq!(duration(512.0), "512 ns");
        assert_eq!(duration(1_500.0), "1.50 µs");
        assert_eq!(duration(42_000_000.0), "42.0 ms");
        assert_eq!(duration(3.2e9), "3.20 s");
    }
}
