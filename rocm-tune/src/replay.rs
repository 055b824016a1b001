//! Offline evaluation: answer from a recorded brute-force table instead of a GPU.
//!
//! Comparing strategies needs many runs (strategies × budgets × seeds); with a table of every
//! configuration's measurements, each run costs milliseconds and all strategies see exactly
//! the same "device". Tables come from a Kernel Tuner cache ([`RecordedTable::from_kt`]), our
//! JSON Lines cache ([`RecordedTable::from_jsonl`]) or a synthetic model.

use crate::cache::{aggregate, index_records, Aggregate, CacheContents, CacheWarning};
use crate::eval::{mean, EvalError, Evaluator, FailureKind, Features, Measurement, Objective};
use crate::kt::{entry_failure, KtCache};
use crate::space::{Config, ConfigId, SearchSpace, SpaceError};
use crate::value::Value;

/// Errors building a table.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The parameters cannot form a search space.
    #[error(transparent)]
    Space(#[from] SpaceError),
    /// The source describes no usable parameters.
    #[error("cannot build a table: {0}")]
    Source(String),
    /// The table has no valid (successful) configuration: nothing to optimise or score.
    #[error("the table has no successful configuration")]
    NoValid,
}

/// One recorded configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum TableEntry {
    /// Measured.
    Valid {
        /// The objective (lower is better).
        objective: f64,
        /// The samples (may be empty when only the objective was recorded).
        times: Vec<f64>,
        /// Static features.
        features: Features,
    },
    /// Failed.
    Failed(FailureKind),
}

impl TableEntry {
    /// Objective of a valid entry.
    pub fn objective(&self) -> Option<f64> {
        match self {
            TableEntry::Valid { objective, .. } => Some(*objective),
            TableEntry::Failed(_) => None,
        }
    }
}

/// Options for importing a Kernel Tuner cache.
#[derive(Debug, Clone, Default)]
pub struct KtImport {
    /// Objective field; default: the header's `objective`, else `"time"`.
    pub objective: Option<String>,
    /// The objective is better when higher (e.g. `"GFLOP/s"`); the table then stores its
    /// reciprocal, which is positive and orders configurations the same way as a time.
    pub higher_is_better: bool,
    /// Numeric entry fields to expose as static features (e.g. `["vgprs", "lds_bytes"]`).
    pub feature_keys: Vec<String>,
}

/// A complete table of a search space's measurements.
#[derive(Debug, Clone)]
pub struct RecordedTable {
    space: SearchSpace,
    entries: Vec<TableEntry>,
    warnings: Vec<String>,
}

impl RecordedTable {
    /// A table from a space and one entry per configuration (in id order).
    pub fn new(space: SearchSpace, entries: Vec<TableEntry>) -> Result<RecordedTable, ReplayError> {
        if entries.len() != space.len() {
            return Err(ReplayError::Source(format!(
                "{} entries for {} configurations",
                entries.len(),
                space.len()
            )));
        }
        if !entries.iter().any(|e| e.objective().is_some()) {
            return Err(ReplayError::NoValid);
        }
        Ok(RecordedTable {
            space,
            entries,
            warnings: Vec::new(),
        })
    }

    /// Imports a Kernel Tuner cache. The space is the set of configurations present in the
    /// cache (valid or failed): those are what the original run could evaluate. Entries whose
    /// objective is neither a number nor an error marker are skipped with a warning.
    pub fn from_kt(kt: &KtCache, opts: &KtImport) -> Result<RecordedTable, ReplayError> {
        let params = kt.params().map_err(ReplayError::Source)?;
        let objective_key = opts
            .objective
            .clone()
            .unwrap_or_else(|| kt.objective_name().to_string());
        let mut warnings = Vec::new();
        let mut rows: Vec<(Vec<usize>, TableEntry)> = Vec::new();
        for (key, entry) in &kt.cache {
            let Some(entry) = entry.as_object() else {
                warnings.push(format!("entry `{key}` is not an object"));
                continue;
            };
            let idx = match locate_entry(&params, key, entry) {
                Some(i) => i,
                None => {
                    warnings.push(format!("entry `{key}` does not match tune_params"));
                    continue;
                }
            };
            let te = if let Some(kind) = entry_failure(entry) {
                TableEntry::Failed(kind)
            } else {
                match entry.get(&objective_key).and_then(|v| v.as_f64()) {
                    Some(v) if v.is_finite() && v > 0.0 => {
                        let objective = if opts.higher_is_better { 1.0 / v } else { v };
                        let times = if opts.higher_is_better {
                            Vec::new()
                        } else {
                            entry
                                .get("times")
                                .and_then(|t| t.as_array())
                                .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
                                .unwrap_or_default()
                        };
                        let features = opts
                            .feature_keys
                            .iter()
                            .filter_map(|k| Some((k.clone(), entry.get(k)?.as_f64()?)))
                            .collect();
                        TableEntry::Valid {
                            objective,
                            times,
                            features,
                        }
                    }
                    _ => {
                        warnings.push(format!("entry `{key}` has no usable `{objective_key}`"));
                        continue;
                    }
                }
            };
            rows.push((idx, te));
        }
        let mut t = RecordedTable::from_rows(params, rows)?;
        t.warnings = warnings;
        Ok(t)
    }

    /// Builds a table from our cache (which must contain a meta line describing the
    /// parameters). Several records of a configuration are pooled ([`aggregate`]); the
    /// objective is `objective` of the pooled samples.
    pub fn from_jsonl(
        contents: &CacheContents,
        objective: Objective,
    ) -> Result<RecordedTable, ReplayError> {
        let meta = contents
            .meta
            .as_ref()
            .ok_or_else(|| ReplayError::Source("cache has no meta line".into()))?;
        let params = meta.params();
        let configs: Vec<Vec<usize>> = contents
            .records
            .iter()
            .filter_map(|r| {
                params
                    .iter()
                    .map(|(n, vals)| {
                        let v = Value::from_json(r.params.get(n)?)?;
                        vals.iter().position(|x| *x == v)
                    })
                    .collect()
            })
            .collect();
        let space = SearchSpace::from_configs(params, configs)?;
        let mut warnings: Vec<CacheWarning> = contents.warnings.clone();
        let groups = index_records(&space, &contents.records, &mut warnings);
        let mut entries = Vec::with_capacity(space.len());
        for id in space.ids() {
            let agg = groups.get(&id).and_then(|g| aggregate(g.iter().copied()));
            entries.push(match agg {
                Some(Aggregate::Ok { times, features }) => match objective.reduce(&times) {
                    Some(o) => TableEntry::Valid {
                        objective: o,
                        times,
                        features,
                    },
                    None => TableEntry::Failed(FailureKind::BadMeasurement),
                },
                Some(Aggregate::Failed { kind, .. }) => TableEntry::Failed(kind),
                None => TableEntry::Failed(FailureKind::Other),
            });
        }
        let mut t = RecordedTable::new(space, entries)?;
        t.warnings = warnings.iter().map(|w| w.to_string()).collect();
        Ok(t)
    }

    fn from_rows(
        params: Vec<(String, Vec<Value>)>,
        rows: Vec<(Vec<usize>, TableEntry)>,
    ) -> Result<RecordedTable, ReplayError> {
        let space = SearchSpace::from_configs(params, rows.iter().map(|(i, _)| i.clone()))?;
        let mut entries: Vec<Option<TableEntry>> = vec![None; space.len()];
        for (idx, e) in rows {
            if let Some(id) = space.find_indices(&idx) {
                entries[id.index()] = Some(e);
            }
        }
        let entries = entries
            .into_iter()
            .map(|e| e.unwrap_or(TableEntry::Failed(FailureKind::Other)))
            .collect();
        RecordedTable::new(space, entries)
    }

    /// The space of recorded configurations.
    pub fn space(&self) -> &SearchSpace {
        &self.space
    }

    /// The entry of `id`.
    pub fn entry(&self, id: ConfigId) -> Option<&TableEntry> {
        self.entries.get(id.index())
    }

    /// Problems met while importing.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Objectives of the valid configurations, ascending.
    pub fn sorted_valid(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self
            .entries
            .iter()
            .filter_map(TableEntry::objective)
            .collect();
        v.sort_by(f64::total_cmp);
        v
    }

    /// The best objective in the table.
    pub fn optimum(&self) -> f64 {
        self.sorted_valid().first().copied().unwrap_or(f64::NAN)
    }

    /// Number of failed configurations.
    pub fn failed(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| e.objective().is_none())
            .count()
    }
}

fn locate_entry(
    params: &[(String, Vec<Value>)],
    key: &str,
    entry: &serde_json::Map<String, serde_json::Value>,
) -> Option<Vec<usize>> {
    // Preferred: the parameter fields of the entry.
    let from_fields: Option<Vec<usize>> = params
        .iter()
        .map(|(n, vals)| {
            let v = Value::from_json(entry.get(n)?)?;
            vals.iter().position(|x| *x == v)
        })
        .collect();
    if from_fields.is_some() {
        return from_fields;
    }
    // Fallback: the key, split on commas (ambiguous only for string values with commas).
    let parts: Vec<&str> = key.split(',').collect();
    if parts.len() != params.len() {
        return None;
    }
    params
        .iter()
        .zip(parts)
        .map(|((_, vals), s)| vals.iter().position(|x| x.python_str() == s))
        .collect()
}

/// An [`Evaluator`] answering from a [`RecordedTable`].
///
/// Samples are the recorded `times` rescaled so that their mean equals the recorded objective
/// exactly (Kernel Tuner's `time` can differ slightly from the mean of `times`, e.g. with
/// observers); their spread, and so stability gating, is preserved. A re-measure returns the
/// same samples: a table has no second opinion. Static features are those recorded; a failed
/// entry fails the same way, and a compile failure also fails the static-feature query.
#[derive(Debug, Clone)]
pub struct ReplayEvaluator<'a> {
    table: &'a RecordedTable,
    /// Evaluations answered (for tests and reports).
    pub calls: usize,
}

impl<'a> ReplayEvaluator<'a> {
    /// An evaluator over `table`.
    pub fn new(table: &'a RecordedTable) -> Self {
        ReplayEvaluator { table, calls: 0 }
    }

    fn lookup(&self, config: &Config) -> Result<&'a TableEntry, EvalError> {
        self.table
            .space
            .find_config(config)
            .and_then(|id| self.table.entry(id))
            .ok_or_else(|| EvalError::Invalid(format!("{config} is not in the recorded table")))
    }
}

fn failure_error(kind: FailureKind) -> EvalError {
    let m = "recorded failure".to_string();
    match kind {
        FailureKind::Compile => EvalError::Compile(m),
        FailureKind::Launch => EvalError::Launch(m),
        FailureKind::WrongResult => EvalError::WrongResult(m),
        FailureKind::Invalid | FailureKind::BadMeasurement | FailureKind::Other => {
            EvalError::Invalid(m)
        }
    }
}

impl Evaluator for ReplayEvaluator<'_> {
    fn evaluate(&mut self, config: &Config) -> Result<Measurement, EvalError> {
        self.calls += 1;
        match self.lookup(config)? {
            TableEntry::Valid {
                objective,
                times,
                features,
            } => {
                let m = mean(times);
                let times = if times.is_empty() || m <= 0.0 {
                    vec![*objective]
                } else {
                    times.iter().map(|t| t * objective / m).collect()
                };
                Ok(Measurement {
                    times,
                    features: features.clone(),
                })
            }
            TableEntry::Failed(kind) => Err(failure_error(*kind)),
        }
    }

    fn static_features(&mut self, config: &Config) -> Option<Result<Features, EvalError>> {
        match self.lookup(config) {
            Ok(TableEntry::Valid { features, .. }) if !features.is_empty() => {
                Some(Ok(features.clone()))
            }
            Ok(TableEntry::Failed(FailureKind::Compile)) => {
                Some(Err(EvalError::Compile("recorded failure".into())))
            }
            _ => None,
        }
    }
}
