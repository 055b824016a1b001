//! Comparing two recorded runs benchmark by benchmark.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{BenchResult, History, HistoryError, Run, RunSelector};
use rocm_stats::{compare_samples, CompareConfig, Comparison};

/// What pairs a result in one run with a result in the other.
///
/// Benchmark id, backend and device name, plus the sweep parameter so that
/// each point of a sweep pairs with the same point (when the parameter is
/// already part of the id this changes nothing). The driver, clocks and
/// toolchain are *not* in the key: a driver upgrade is exactly the kind of
/// change a comparison should show, not hide.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BenchKey {
    /// Benchmark id.
    pub benchmark_id: String,
    /// Sweep parameter name.
    pub param_name: Option<String>,
    /// Sweep parameter value.
    pub param_value: Option<String>,
    /// Backend.
    pub backend: String,
    /// Device name.
    pub device_name: String,
}

impl BenchKey {
    /// The key of a result.
    pub(crate) fn of(r: &BenchResult) -> Self {
        BenchKey {
            benchmark_id: r.benchmark_id.clone(),
            param_name: r.param_name.clone(),
            param_value: r.param_value.clone(),
            backend: r.device.backend.clone(),
            device_name: r.device.name.clone(),
        }
    }
}

/// A benchmark present in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchComparison {
    /// The pairing key.
    pub key: BenchKey,
    /// Unit of both samples.
    pub unit: String,
    /// Result id in the baseline run.
    pub baseline_result_id: i64,
    /// Result id in the new run.
    pub new_result_id: i64,
    /// Verdict, ratio of medians and interval.
    pub comparison: Comparison,
}

/// A pair that could not be compared, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Incomparable {
    /// The pairing key.
    pub key: BenchKey,
    /// Why (e.g. different units, zero baseline median).
    pub reason: String,
}

/// Result of [`compare_runs`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunComparison {
    /// The baseline run.
    pub baseline: Run,
    /// The new run.
    pub new: Run,
    /// Benchmarks in both runs, sorted by key.
    pub compared: Vec<BenchComparison>,
    /// Pairs that exist in both runs but cannot be compared.
    pub incomparable: Vec<Incomparable>,
    /// Keys only in the baseline run (removed or not run this time).
    pub only_in_baseline: Vec<BenchKey>,
    /// Keys only in the new run (new benchmarks).
    pub only_in_new: Vec<BenchKey>,
}

/// Latest result per key (a benchmark re-measured within a run counts once,
/// by its last measurement).
fn by_key(results: Vec<BenchResult>) -> BTreeMap<BenchKey, BenchResult> {
    let mut map = BTreeMap::new();
    for r in results {
        map.insert(BenchKey::of(&r), r);
    }
    map
}

/// Compares the run chosen by `new` against the one chosen by `baseline`
/// (ids, commit prefixes, baseline names, latest), pairing results by
/// [`BenchKey`]. Every comparison uses the same seeded `config`, so the
/// report is reproducible.
pub fn compare_runs(
    history: &History,
    baseline: &RunSelector,
    new: &RunSelector,
    config: &CompareConfig,
) -> Result<RunComparison, HistoryError> {
    config.validate().map_err(|e| HistoryError::InvalidInput {
        what: "comparison settings".to_string(),
        reason: e.to_string(),
    })?;
    let base_run = history.resolve(baseline)?;
    let new_run = history.resolve(new)?;
    let mut base = by_key(history.results_of_run(base_run.id)?);
    let new_map = by_key(history.results_of_run(new_run.id)?);
    let mut compared = Vec::new();
    let mut incomparable = Vec::new();
    let mut only_in_new = Vec::new();
    for (key, n) in new_map {
        let Some(b) = base.remove(&key) else {
            only_in_new.push(key);
            continue;
        };
        if b.unit != n.unit {
            incomparable.push(Incomparable {
                reason: format!("units differ (`{}` vs `{}`)", b.unit, n.unit),
                key,
            });
            continue;
        }
        match compare_samples(&b.samples, &n.samples, config) {
            Ok(comparison) => compared.push(BenchComparison {
                key,
                unit: n.unit,
                baseline_result_id: b.id,
                new_result_id: n.id,
                comparison,
            }),
            Err(e) => incomparable.push(Incomparable {
                key,
                reason: e.to_string(),
            }),
        }
    }
    Ok(RunComparison {
        baseline: base_run,
        new: new_run,
        compared,
        incomparable,
        only_in_baseline: base.into_keys().collect(),
        only_in_new,
    })
}
