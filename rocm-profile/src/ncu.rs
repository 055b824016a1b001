//! Nsight Compute (`ncu`): running a workload under it and reading its CSV by column name.
//!
//! `ncu --csv --log-file F --metrics M,... --print-units base --print-kernel-base mangled` writes
//! one row per kernel launch and metric: `"ID","Process ID","Process Name","Host Name","Kernel
//! Name",...,"Block Size","Grid Size",...,"Metric Name","Metric Unit","Metric Value"` (columns
//! between vary with the release: `Kernel Time`, `Context`, `Stream`, `Device`, `CC`, `Section
//! Name`). The raw page (`--page raw`), one row per launch and one column per metric with a
//! row of units under the header, is read too. `==PROF==` lines are skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use rocm_kernels_core::Backend;

use crate::dispatch::{kernel_name, Collected, Dispatch};
use crate::error::ProfileError;
use crate::rocprof::csv::Table;
use crate::tool::{self, Workload};

/// How to get ncu.
pub(crate) const INSTALL: &str = "install Nsight Compute: it comes with the CUDA toolkit \
    (`apt-get install cuda-nsight-compute-12-8` from NVIDIA's repository, or the toolkit's \
    installer), then put its folder (e.g. /usr/local/cuda/bin) on PATH";

/// The kernel duration metric.
pub const DURATION: &str = "gpu__time_duration.sum";

/// What `cargo rocm profile` asks ncu for: the duration, and what the launch and the
/// occupancy calculator know (which cost no extra replay pass).
pub(crate) const DEFAULT_METRICS: &[&str] = &[
    DURATION,
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "sm__maximum_warps_per_active_cycle_pct",
    "dram__bytes.sum",
];

/// An installed ncu.
#[derive(Debug, Clone)]
pub struct Ncu {
    /// The program found.
    pub(crate) path: PathBuf,
}

impl Ncu {
    /// Find ncu (`program` may be a path).
    ///
    /// # Errors
    ///
    /// [`ProfileError::ToolMissing`] (with how to install it) when it is not on `PATH`.
    pub fn find(program: &str) -> Result<Ncu, ProfileError> {
        let path = tool::which(program).ok_or_else(|| ProfileError::ToolMissing {
            tool: program.to_owned(),
            install: INSTALL.to_owned(),
        })?;
        Ok(Ncu { path })
    }

    /// The command that profiles `workload`, writing the CSV to `csv`.
    pub(crate) fn command(
        &self,
        csv: &Path,
        metrics: &[String],
        launch_count: Option<u64>,
        extra: &[String],
        workload: &Workload,
    ) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.args([
            "--csv",
            "--print-units",
            "base",
            "--print-kernel-base",
            "mangled",
        ])
        .arg("--log-file")
        .arg(csv)
        .arg("--metrics")
        .arg(metrics.join(","));
        if let Some(n) = launch_count {
            cmd.arg("--launch-count").arg(n.to_string());
        }
        cmd.args(extra).arg(&workload.program).args(&workload.args);
        cmd
    }
}

/// Profile `workload` under ncu with the default metrics and `extra_metrics`. A metric the GPU
/// or this ncu does not know makes ncu refuse to run; the run is then repeated with the default
/// metrics only and a note says which were dropped.
pub fn profile(
    ncu: &Ncu,
    workload: &Workload,
    extra_metrics: &[String],
    launch_count: Option<u64>,
    extra_args: &[String],
    root: &Path,
) -> Result<Collected, ProfileError> {
    let mut metrics: Vec<String> = DEFAULT_METRICS.iter().map(|m| m.to_string()).collect();
    metrics.extend(extra_metrics.iter().cloned());
    let csv = root.join("ncu.csv");
    let log = root.join("ncu.log");
    let mut ran = tool::run(
        ncu.command(&csv, &metrics, launch_count, extra_args, workload),
        workload,
        &log,
    )?;
    let mut notes = Vec::new();
    if !ran.success && !extra_metrics.is_empty() {
        let text = ran.output.clone() + &std::fs::read_to_string(&csv).unwrap_or_default();
        let unknown: Vec<&String> = extra_metrics
            .iter()
            .filter(|m| text.contains(m.as_str()))
            .collect();
        if !unknown.is_empty() {
            notes.push(format!(
                "metric(s) {} are not available with this ncu and GPU and are left out (`ncu --query-metrics` lists them)",
                unknown.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", ")
            ));
            metrics.retain(|m| !unknown.contains(&m));
            ran = tool::run(
                ncu.command(&csv, &metrics, launch_count, extra_args, workload),
                workload,
                &log,
            )?;
        }
    }
    if !ran.success {
        let text = std::fs::read_to_string(&csv).unwrap_or_default();
        return Err(ProfileError::Failed {
            what: format!(
                "the workload under ncu (`{}`)",
                workload.command_line().join(" ")
            ),
            status: ran.status,
            output: ran.output + &text,
        });
    }
    let text = std::fs::read_to_string(&csv).map_err(|e| ProfileError::io(&csv, e))?;
    let mut collected = read(&csv, &text)?;
    if collected.dispatches.is_empty() {
        return Err(ProfileError::NoOutput {
            tool: "ncu".into(),
            what: "kernel rows".into(),
            dir: root.to_owned(),
        });
    }
    collected.notes.splice(0..0, notes);
    if let Some(n) = launch_count {
        if collected.dispatches.len() as u64 >= n {
            collected.notes.push(format!(
                "ncu profiled the first {n} launches (--launch-count); later launches ran unprofiled"
            ));
        }
    }
    Ok(collected)
}

/// Convert a value in `unit` to the base unit (nanoseconds, bytes; others unchanged).
fn in_base_unit(value: f64, unit: &str) -> f64 {
    let scale = match unit.trim() {
        "usecond" => 1e3,
        "msecond" => 1e6,
        "second" => 1e9,
        "Kbyte" => 1e3,
        "Mbyte" => 1e6,
        "Gbyte" => 1e9,
        "Tbyte" => 1e12,
        _ => 1.0,
    };
    value * scale
}

/// `(256, 1, 1)` → `[256, 1, 1]`.
fn dims(text: &str) -> Option<[u64; 3]> {
    let v: Vec<u64> = text
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(|p| p.trim().parse().ok())
        .collect::<Option<_>>()?;
    match v.as_slice() {
        [x] => Some([*x, 1, 1]),
        [x, y] => Some([*x, *y, 1]),
        [x, y, z] => Some([*x, *y, *z]),
        _ => None,
    }
}

/// Read ncu's CSV (`path` is for messages).
pub fn read(path: &Path, text: &str) -> Result<Collected, ProfileError> {
    let body: String = text
        .lines()
        .skip_while(|l| !l.starts_with("\"ID\""))
        .filter(|l| !l.starts_with("=="))
        .map(|l| format!("{l}\n"))
        .collect();
    if body.is_empty() {
        return Err(ProfileError::NoOutput {
            tool: "ncu".into(),
            what: "CSV header (\"ID\",...)".into(),
            dir: path.to_owned(),
        });
    }
    let t = Table::parse(path, body.as_bytes())?;
    let id = t.require(&["ID"])?;
    let name = t.require(&["Kernel Name"])?;
    let block = t.column(&["Block Size"]);
    let grid = t.column(&["Grid Size"]);
    let device = t.column(&["Device"]);
    let mut out = Collected::new("ncu", "ncu CSV", Backend::Nvidia);
    let mut order: Vec<String> = Vec::new();
    let mut launches: BTreeMap<String, Dispatch> = BTreeMap::new();
    let metric = t.column(&["Metric Name"]);
    let rows = t.rows();
    // The raw page: metrics are columns, and the first row holds their units.
    let (units, data) = match metric {
        Some(_) => (None, rows),
        None => rows
            .split_first()
            .map_or((None, rows), |(u, rest)| (Some(u), rest)),
    };
    for row in data {
        let key = row.get(id).unwrap_or_default().to_owned();
        let d = launches.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            let mut d = Dispatch::new(kernel_name(row.get(name).unwrap_or_default()), f64::NAN);
            d.block = block
                .and_then(|c| dims(row.get(c)?))
                .map(|b| b.map(|v| u32::try_from(v).unwrap_or(u32::MAX)));
            d.grid = grid.and_then(|c| dims(row.get(c)?));
            d
        });
        if out.device.is_none() {
            out.device = device.and_then(|c| row.get(c)).map(str::to_owned);
        }
        match (metric, units) {
            (Some(m), _) => {
                let unit = t
                    .column(&["Metric Unit"])
                    .and_then(|c| row.get(c))
                    .unwrap_or("");
                let value = crate::rocprof::csv::number(row, t.column(&["Metric Value"]));
                if let (Some(metric), Some(v)) = (row.get(m), value) {
                    d.counters.insert(metric.to_owned(), in_base_unit(v, unit));
                }
            }
            (None, Some(units)) => {
                for (c, header) in t.header().iter().enumerate() {
                    if !header.contains("__") {
                        continue;
                    }
                    if let Some(v) = crate::rocprof::csv::number(row, Some(c)) {
                        d.counters
                            .insert(header.clone(), in_base_unit(v, units.get(c).unwrap_or("")));
                    }
                }
            }
            (None, None) => {}
        }
    }
    let mut missing = 0;
    for key in order {
        let mut d = launches.remove(&key).expect("every key was inserted");
        match d.counters.remove(DURATION) {
            Some(ns) => {
                d.duration_ns = ns;
                if let Some(s) = d
                    .counters
                    .get("launch__shared_mem_per_block_static")
                    .copied()
                {
                    let dynamic = d
                        .counters
                        .get("launch__shared_mem_per_block_dynamic")
                        .copied()
                        .unwrap_or(0.0);
                    d.shared_bytes = Some((s + dynamic) as u32);
                }
                out.dispatches.push(d);
            }
            None => missing += 1,
        }
    }
    if missing > 0 {
        out.notes.push(format!(
            "{missing} ncu row(s) have no {DURATION} and are left out"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_dimensions() {
        assert_eq!(in_base_unit(1.5, "usecond"), 1500.0);
        assert_eq!(in_base_unit(2.0, "Mbyte"), 2e6);
        assert_eq!(in_base_unit(7.0, "register/thread"), 7.0);
        assert_eq!(dims("(256, 1, 1)"), Some([256, 1, 1]));
        assert_eq!(dims("4096"), Some([4096, 1, 1]));
        assert_eq!(dims("(a, 1)"), None);
    }
}
