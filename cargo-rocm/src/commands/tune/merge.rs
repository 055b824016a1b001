//! `cargo rocm tune merge`: join the tuning caches of partitioned runs — the jobs of a Slurm
//! array or a CI matrix, each run with `--partition K/N` and its own target folder — into one
//! folder, pool what they measured and write the best configurations to the wisdom file.
//!
//! Each input is a job's tune folder (`<target-dir>/rocm/tune`): its caches
//! (`<tunable>/<device>/<problem>.jsonl`) and its `results.json`, which says what each cache
//! is of (the kernel's parameters, the device, the problem). Caches at the same place in
//! several inputs are merged with `rocm_tune::cache::merge`: exact duplicates are dropped and
//! different measurements of one configuration are all kept (and reported), never overwritten.
//! The best configuration is the lowest mean over every sample of a configuration.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Context;
use rocm_kernels_core::wisdom::Wisdom;
use rocm_protocol::tune::{Measured, ParamKind, TuneFailure, TuneReport, TuneRun};
use rocm_tune::cache::{aggregate, Aggregate};

use crate::cli::FormatArgs;
use crate::exit::CommandError;
use crate::output::Output;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  cargo rocm tune merge job-1/target/rocm/tune job-2/target/rocm/tune job-3/target/rocm/tune
  cargo rocm tune merge /scratch/tune-*/rocm/tune --out target/rocm/tune --wisdom tune/wisdom.json

Exit codes: 0 merged, 1 a cache holds no valid configuration, 2 usage error, 5 an input is
not a tune folder or a cache is unreadable.")]
pub struct MergeArgs {
    /// The jobs' tune folders (`<target-dir>/rocm/tune`, each with results.json and caches)
    #[arg(required = true, value_name = "DIR")]
    pub inputs: Vec<PathBuf>,

    /// Where the merged caches, results.json and report.html go
    #[arg(long, value_name = "DIR", default_value = "target/rocm/tune")]
    pub out: PathBuf,

    /// The wisdom file to update with the best configurations (default: tune/wisdom.json)
    #[arg(long, value_name = "PATH")]
    pub wisdom: Option<PathBuf>,

    /// Do not update a wisdom file
    #[arg(long, conflicts_with = "wisdom")]
    pub no_wisdom: bool,

    #[command(flatten)]
    pub format: FormatArgs,
}

/// A cache's place under a tune folder: `<tunable>/<device>/<problem>.jsonl`.
fn cache_places(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let level = |d: &Path| -> anyhow::Result<Vec<PathBuf>> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .with_context(|| format!("cannot read {}", d.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        v.sort();
        Ok(v)
    };
    for tunable in level(dir)?.into_iter().filter(|p| p.is_dir()) {
        // The compiled-variant cache is not a tuning cache.
        if tunable.file_name().is_some_and(|n| n == "compiled") {
            continue;
        }
        for device in level(&tunable)?.into_iter().filter(|p| p.is_dir()) {
            for file in level(&device)? {
                if file.extension().is_some_and(|e| e == "jsonl") && file.is_file() {
                    out.push(file.strip_prefix(dir).expect("under dir").to_path_buf());
                }
            }
        }
    }
    Ok(out)
}

/// The last three components of a run's cache path: its place in any tune folder.
fn place_of(run: &TuneRun) -> Option<PathBuf> {
    let path = run.cache_file.as_ref()?;
    let parts: Vec<_> = path.components().rev().take(3).collect();
    (parts.len() == 3).then(|| parts.into_iter().rev().collect())
}

pub fn run(args: &MergeArgs, out: &Output) -> anyhow::Result<u8> {
    let mut runs: Vec<TuneRun> = Vec::new();
    let mut places: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    for dir in &args.inputs {
        if !dir.is_dir() {
            return Err(CommandError::NotATuneFolder { path: dir.clone() }.into());
        }
        let results = dir.join("results.json");
        match std::fs::read_to_string(&results) {
            Ok(text) => {
                let report: TuneReport =
                    serde_json::from_str(&text).map_err(|e| CommandError::NotATuningReport {
                        path: results.clone(),
                        reason: e.to_string(),
                    })?;
                runs.extend(report.runs);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => out.warn(format!(
                "{} has no results.json (a job that did not finish?): its caches are merged, \
                 but only caches another job describes get a wisdom entry",
                dir.display()
            )),
            Err(reason) => {
                return Err(CommandError::CannotRead {
                    path: results,
                    reason,
                }
                .into())
            }
        }
        for place in cache_places(dir)? {
            places
                .entry(place.clone())
                .or_default()
                .push(dir.join(place));
        }
    }
    if places.is_empty() {
        return Err(CommandError::NoTuningCaches {
            dirs: args.inputs.clone(),
        }
        .into());
    }

    let mut report = TuneReport::default();
    for (place, inputs) in &places {
        let target = args.out.join(place);
        if let Some(d) = target.parent() {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
        }
        let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        let merged =
            rocm_tune::cache::merge(&refs, &target).map_err(|e| CommandError::CannotMerge {
                path: place.clone(),
                reason: e.to_string(),
            })?;
        out.status(
            "Merged",
            format!(
                "{} ({} cache(s), {} records, {} duplicates dropped)",
                place.display(),
                inputs.len(),
                merged.records_written,
                merged.duplicates_dropped
            ),
        );
        let described: Vec<&TuneRun> = runs
            .iter()
            .filter(|r| place_of(r).as_deref() == Some(place.as_path()))
            .collect();
        let Some(base) = described.first() else {
            out.warn(format!(
                "no results.json describes {}: merged, but it gets no wisdom entry",
                place.display()
            ));
            continue;
        };
        let records = rocm_tune::cache::read(&target)
            .map_err(|e| CommandError::BadInput(e.to_string()))?
            .records;
        report
            .runs
            .push(merged_run(base, &described, &records, &target));
    }

    let wisdom_path = (!args.no_wisdom).then(|| {
        args.wisdom
            .clone()
            .unwrap_or_else(|| PathBuf::from("tune").join("wisdom.json"))
    });
    if let Some(path) = &wisdom_path {
        let mut wisdom = Wisdom::load(path).map_err(|e| CommandError::BadInput(e.to_string()))?;
        let mut recorded = 0;
        for run in &report.runs {
            if let Some(entry) = rocm_protocol::tune::wisdom_entry(std::slice::from_ref(run)) {
                let defines: Vec<String> = run
                    .parameters
                    .iter()
                    .filter(|p| p.kind == ParamKind::Define)
                    .map(|p| p.name.clone())
                    .collect();
                wisdom.record(&run.kernel, &defines, entry);
                recorded += 1;
            }
        }
        if recorded > 0 {
            if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(d)
                    .with_context(|| format!("cannot create {}", d.display()))?;
            }
            wisdom
                .save(path)
                .map_err(|e| CommandError::Internal(e.to_string()))?;
            report.wisdom = Some(path.clone());
        }
    }
    for run in &report.runs {
        if run.best.is_none() {
            report.errors.push(TuneFailure {
                kernel: run.kernel.clone(),
                message: format!(
                    "no valid configuration in the merged cache of {} on {}",
                    run.kernel, run.device.name
                ),
            });
        }
    }
    super::present_report(&args.out, None, &args.format, false, report, out)
}

/// One run standing for every job's runs of a cache: the best over all pooled samples.
fn merged_run(
    base: &TuneRun,
    described: &[&TuneRun],
    records: &[rocm_tune::CacheRecord],
    cache: &Path,
) -> TuneRun {
    let mut by_key: BTreeMap<&str, Vec<&rocm_tune::CacheRecord>> = BTreeMap::new();
    for r in records {
        by_key.entry(r.key.as_str()).or_default().push(r);
    }
    // The work of one launch, from any job's best (throughput = work / time).
    let work = described.iter().find_map(|r| {
        let b = r.best.as_ref()?;
        Some(b.throughput? * b.time_ms? * 1e-3)
    });
    let mut failures: BTreeMap<String, usize> = BTreeMap::new();
    let mut best: Option<Measured> = None;
    let mut conflicts = Vec::new();
    for (key, recs) in &by_key {
        let distinct: BTreeSet<String> = recs
            .iter()
            .map(|r| format!("{:?}{:?}", r.times, r.failure))
            .collect();
        if distinct.len() > 1 {
            conflicts.push((*key).to_owned());
        }
        match aggregate(recs.iter().copied()) {
            Some(Aggregate::Ok { times, .. }) if !times.is_empty() => {
                let mean = times.iter().sum::<f64>() / times.len() as f64;
                if best
                    .as_ref()
                    .and_then(|b| b.time_ms)
                    .is_none_or(|t| mean < t)
                {
                    best = Some(Measured {
                        config: recs[0]
                            .params
                            .iter()
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect(),
                        time_ms: Some(mean),
                        cv: Some(rocm_tune::eval::coefficient_of_variation(&times)),
                        throughput: work.map(|w| w / (mean * 1e-3)),
                        failure: None,
                    });
                }
            }
            Some(Aggregate::Failed { kind, .. }) => {
                let name = serde_json::to_value(kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "other".into());
                *failures.entry(name).or_default() += 1;
            }
            _ => {}
        }
    }
    let mut warnings = Vec::new();
    if !conflicts.is_empty() {
        warnings.push(format!(
            "{} configuration(s) measured differently by several jobs (every measurement kept \
             in the cache and pooled): {}",
            conflicts.len(),
            conflicts
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
                + if conflicts.len() > 5 { ", …" } else { "" }
        ));
    }
    let strategies: BTreeSet<&str> = described.iter().map(|r| r.strategy.as_str()).collect();
    let mut devices: Vec<String> = described.iter().flat_map(|r| r.devices.clone()).collect();
    devices.sort();
    devices.dedup();
    let speedup = match (&base.default, &best) {
        (Some(d), Some(b)) => d.time_ms.zip(b.time_ms).map(|(d, b)| d / b),
        _ => None,
    };
    TuneRun {
        strategy: format!(
            "merged ({})",
            strategies.into_iter().collect::<Vec<_>>().join(", ")
        ),
        budget: None,
        evaluations: by_key.len(),
        failures,
        cache_hits: 0,
        remeasurements: described.iter().map(|r| r.remeasurements).sum(),
        best,
        speedup,
        overhead: Default::default(),
        stop: "merged".into(),
        warnings,
        trace: Vec::new(),
        cache_file: Some(cache.to_path_buf()),
        devices,
        partition: None,
        ..base.clone()
    }
}
