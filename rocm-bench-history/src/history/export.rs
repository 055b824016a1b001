//! CSV and JSON export.
//!
//! CSV is one flat row per result with its run's metadata repeated, so it
//! opens directly in a spreadsheet or pandas; the raw samples are one JSON
//! array cell. JSON keeps the nesting (runs → results) and is the lossless
//! format.

use std::io::Write;

use serde::Serialize;

use super::{BenchResult, History, HistoryError, Run, SCHEMA_VERSION};
use crate::sys::rfc3339_utc;

/// What to export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportScope {
    /// One run.
    Run(i64),
    /// Every run, newest first.
    All,
}

#[derive(Serialize)]
struct CsvRow<'a> {
    run_id: i64,
    run_started_at: String,
    run_status: &'static str,
    git_commit: Option<&'a str>,
    git_dirty: Option<bool>,
    host_name: &'a str,
    result_id: i64,
    measured_at: String,
    benchmark_id: &'a str,
    group: Option<&'a str>,
    param_name: Option<&'a str>,
    param_value: Option<&'a str>,
    backend: &'a str,
    place: &'a str,
    device_name: &'a str,
    arch: Option<&'a str>,
    driver_version: Option<&'a str>,
    toolchain_version: Option<&'a str>,
    gpu_clock_mhz: Option<f64>,
    mem_clock_mhz: Option<f64>,
    unit: &'a str,
    sample_count: u64,
    median: f64,
    mean: f64,
    min: f64,
    max: f64,
    stddev: f64,
    mad_scaled: f64,
    cv: f64,
    rel_mad: f64,
    stability: &'static str,
    bimodal: bool,
    throughput_kind: Option<&'static str>,
    throughput_per_iteration: Option<f64>,
    samples: String,
    note: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonRun {
    #[serde(flatten)]
    run: Run,
    started_at: String,
    finished_at: Option<String>,
    results: Vec<BenchResult>,
}

#[derive(Serialize)]
struct JsonExport {
    format: &'static str,
    schema_version: i64,
    runs: Vec<JsonRun>,
}

impl History {
    fn export_set(&self, scope: ExportScope) -> Result<Vec<(Run, Vec<BenchResult>)>, HistoryError> {
        let runs = match scope {
            ExportScope::Run(id) => vec![self.run(id)?],
            ExportScope::All => self.list_runs()?,
        };
        runs.into_iter()
            .map(|run| {
                let results = self.results_of_run(run.id)?;
                Ok((run, results))
            })
            .collect()
    }

    /// Writes the results in `scope` as CSV (header row first) and returns
    /// the number of result rows.
    pub fn export_csv<W: Write>(&self, scope: ExportScope, out: W) -> Result<usize, HistoryError> {
        let set = self.export_set(scope)?;
        let mut w = csv::Writer::from_writer(out);
        let mut rows = 0;
        for (run, results) in &set {
            for r in results {
                w.serialize(CsvRow {
                    run_id: run.id,
                    run_started_at: rfc3339_utc(run.started_at_ms),
                    run_status: run.status.as_str(),
                    git_commit: run.git_commit.as_deref(),
                    git_dirty: run.git_dirty,
                    host_name: &run.host_name,
                    result_id: r.id,
                    measured_at: rfc3339_utc(r.measured_at_ms),
                    benchmark_id: &r.benchmark_id,
                    group: r.group.as_deref(),
                    param_name: r.param_name.as_deref(),
                    param_value: r.param_value.as_deref(),
                    backend: &r.device.backend,
                    place: &r.device.place,
                    device_name: &r.device.name,
                    arch: r.device.arch.as_deref(),
                    driver_version: r.device.driver_version.as_deref(),
                    toolchain_version: r.device.toolchain_version.as_deref(),
                    gpu_clock_mhz: r.device.gpu_clock_mhz,
                    mem_clock_mhz: r.device.mem_clock_mhz,
                    unit: &r.unit,
                    sample_count: r.summary.count,
                    median: r.summary.median,
                    mean: r.summary.mean,
                    min: r.summary.min,
                    max: r.summary.max,
                    stddev: r.summary.std_dev,
                    mad_scaled: r.summary.mad,
                    cv: r.summary.cv,
                    rel_mad: r.summary.rel_mad,
                    stability: r.summary.stability.as_str(),
                    bimodal: r.summary.bimodal,
                    throughput_kind: r.throughput.map(|t| t.kind.as_str()),
                    throughput_per_iteration: r.throughput.map(|t| t.per_iteration),
                    samples: serde_json::to_string(&r.samples)?,
                    note: r.note.as_deref(),
                })?;
                rows += 1;
            }
        }
        if rows == 0 {
            // Still emit the header so the file is self-describing.
            w.write_record(CSV_HEADER)?;
        }
        w.flush().map_err(HistoryError::ExportIo)?;
        Ok(rows)
    }

    /// Writes the runs in `scope`, each with its results, as one pretty JSON
    /// document `{format, schema_version, runs: [...]}`; returns the number
    /// of results written.
    pub fn export_json<W: Write>(
        &self,
        scope: ExportScope,
        mut out: W,
    ) -> Result<usize, HistoryError> {
        let set = self.export_set(scope)?;
        let count = set.iter().map(|(_, r)| r.len()).sum();
        let doc = JsonExport {
            format: "cargo-rocm-bench-history",
            schema_version: SCHEMA_VERSION,
            runs: set
                .into_iter()
                .map(|(run, results)| JsonRun {
                    started_at: rfc3339_utc(run.started_at_ms),
                    finished_at: run.finished_at_ms.map(rfc3339_utc),
                    run,
                    results,
                })
                .collect(),
        };
        serde_json::to_writer_pretty(&mut out, &doc)?;
        out.write_all(b"\n").map_err(HistoryError::ExportIo)?;
        out.flush().map_err(HistoryError::ExportIo)?;
        Ok(count)
    }
}

const CSV_HEADER: &[&str] = &[
    "run_id",
    "run_started_at",
    "run_status",
    "git_commit",
    "git_dirty",
    "host_name",
    "result_id",
    "measured_at",
    "benchmark_id",
    "group",
    "param_name",
    "param_value",
    "backend",
    "place",
    "device_name",
    "arch",
    "driver_version",
    "toolchain_version",
    "gpu_clock_mhz",
    "mem_clock_mhz",
    "unit",
    "sample_count",
    "median",
    "mean",
    "min",
    "max",
    "stddev",
    "mad_scaled",
    "cv",
    "rel_mad",
    "stability",
    "bimodal",
    "throughput_kind",
    "throughput_per_iteration",
    "samples",
    "note",
];
