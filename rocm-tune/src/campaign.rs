//! One tuning campaign, as `cargo rocm tune` runs it: a space, an evaluator and one append-only
//! cache; the default configuration measured first (the report's speed-up is against it), then
//! each strategy in turn through the cache (a later strategy reuses what an earlier one
//! measured, and a rerun resumes), each strategy run becoming one [`TuneRun`] of the report.
//!
//! The one entry point of the tuning engine: a harness in tune mode calls [`run`] for each
//! tunable, device and problem size (with an evaluator that compiles, verifies and times the
//! kernel), and `cargo rocm tune --cmd-template` for an external program (with one that runs
//! the command). What differs between them comes in as arguments: the [`Evaluator`], what the
//! report says about the kernel and device ([`Subject`]), and the progress display
//! ([`Progress`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rocm_protocol::tune::{
    ConfigMap, DeviceDesc, Measured, Overhead, ParamInfo, TraceStep, TuneRun,
};

use crate::cache::{
    aggregate, now_unix, Aggregate, CacheError, CacheMeta, CacheRecord, JsonlCache,
};
use crate::eval::{coefficient_of_variation, Evaluator, FailureKind, Objective};
use crate::space::{Config, ConfigId, SearchSpace};
use crate::strategy::{self, Strategy};
use crate::tuner::{Budget, Outcome, Partition, TraceEntry, TuneError, Tuner};

/// Evaluations per strategy run when neither a budget nor a time limit is given: at most this
/// many (fewer for a smaller space).
pub const DEFAULT_MAX_EVALS: usize = 100;

/// The budget of each strategy run: `max_evals` if given; with neither limit,
/// min([`DEFAULT_MAX_EVALS`], the space); a time limit alone limits the time only.
pub fn budget(max_evals: Option<usize>, max_seconds: Option<f64>, space_len: usize) -> Budget {
    Budget {
        max_evals: max_evals.or_else(|| {
            max_seconds
                .is_none()
                .then(|| DEFAULT_MAX_EVALS.min(space_len))
        }),
        max_time: max_seconds.map(Duration::from_secs_f64),
    }
}

/// Why a campaign's cache could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// `fresh`: the old cache could not be moved aside.
    #[error("cannot set {} aside: {source}", path.display())]
    SetAside {
        /// The cache.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The cache's folder could not be made.
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The cache could not be read or created (or belongs to another space).
    #[error(transparent)]
    Cache(#[from] CacheError),
}

/// `--fresh`: the cache moves aside (`<name>.<unix time>.jsonl.old`), never deleted. Nothing
/// to do when there is none.
pub fn set_aside(path: &Path) -> Result<(), OpenError> {
    if path.exists() {
        let aside = path.with_extension(format!("{}.jsonl.old", now_unix() as u64));
        std::fs::rename(path, &aside).map_err(|source| OpenError::SetAside {
            path: path.to_path_buf(),
            source,
        })?;
    }
    Ok(())
}

/// The campaign's cache at `path` (created with `meta` when new; its folder too), after
/// setting an existing one aside when `fresh`.
pub fn open_cache(path: &Path, meta: CacheMeta, fresh: bool) -> Result<JsonlCache, OpenError> {
    if fresh {
        set_aside(path)?;
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| OpenError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    Ok(JsonlCache::open(path, meta)?)
}

/// A strategy name [`strategy::by_name`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown strategy `{0}` (known: {known})", known = strategy::NAMES.join(", "))]
pub struct UnknownStrategy(pub String);

/// The strategies of these names (validated before anything runs); none: [`strategy::DEFAULT`].
pub fn strategies(names: &[String]) -> Result<Vec<Box<dyn Strategy>>, UnknownStrategy> {
    if names.is_empty() {
        return Ok(vec![
            strategy::by_name(strategy::DEFAULT).expect("a known name")
        ]);
    }
    names
        .iter()
        .map(|n| strategy::by_name(n).ok_or_else(|| UnknownStrategy(n.clone())))
        .collect()
}

/// What every run of the report says about what was tuned, where.
#[derive(Debug, Clone)]
pub struct Subject {
    /// The tunable's (or program's) name.
    pub kernel: String,
    /// Where it ran.
    pub device: DeviceDesc,
    /// The problem size (empty for a program).
    pub problem: BTreeMap<String, i64>,
    /// The parameters as the report lists them.
    pub parameters: Vec<ParamInfo>,
    /// The restrictions as text.
    pub restrictions: Vec<String>,
    /// The unit of a throughput (`GFLOP/s`) and the work of one launch in its numerator, to
    /// report throughputs beside times.
    pub work: Option<(String, f64)>,
}

/// A campaign: what to search and how.
pub struct Campaign<'a> {
    /// The space.
    pub space: &'a SearchSpace,
    /// The strategies, run one after another (see [`strategies`]).
    pub strategies: Vec<Box<dyn Strategy>>,
    /// The budget of each strategy run (see [`budget`]).
    pub budget: Budget,
    /// Seed of every random choice.
    pub seed: u64,
    /// Only this slice of the space (`--partition`, or a device's share of a group).
    pub partition: Option<Partition>,
    /// The default configuration, measured before the strategies.
    pub default: Option<ConfigId>,
    /// Whether the default's measurement goes through the cache: read from it when there,
    /// appended when measured (a harness's tunables). `false`: measured anew on every run and
    /// kept out of the cache, so the strategies measure it like any other configuration (as
    /// `--cmd-template` always has).
    pub default_in_cache: bool,
    /// What the report says about what was tuned.
    pub subject: Subject,
}

/// What a campaign shows while it runs (progress bars, event files). Every method does
/// nothing by default.
pub trait Progress {
    /// A strategy starts.
    fn start(&mut self, _strategy: &str, _budget: Budget) {}
    /// The `n`th configuration of the strategy run was evaluated (or answered from the cache);
    /// `best` is the best objective so far.
    fn step(&mut self, _n: usize, _space: &SearchSpace, _step: &TraceEntry, _best: Option<f64>) {}
    /// A strategy run ended with this report.
    fn done(&mut self, _run: &TuneRun) {}
}

/// Shows nothing.
impl Progress for () {}

/// Runs the campaign: the default first, then every strategy; one report run per strategy. A
/// strategy stopped by a fatal error (the evaluator or the cache) still gives its run, marked
/// `aborted`, and the next strategy runs.
pub fn run(
    campaign: Campaign<'_>,
    evaluator: &mut dyn Evaluator,
    cache: &mut JsonlCache,
    progress: &mut dyn Progress,
) -> Vec<TuneRun> {
    let Campaign {
        space,
        strategies,
        budget,
        seed,
        partition,
        default,
        default_in_cache,
        subject,
    } = campaign;
    let work = subject.work.as_ref().map(|w| w.1);
    let default =
        default.map(|id| measure_default(space, id, evaluator, cache, default_in_cache, work));
    // The default's time is not part of any strategy run.
    evaluator.take_stats();
    let mut runs = Vec::new();
    for mut strategy in strategies {
        let name = strategy.name();
        progress.start(&name, budget);
        let started = Instant::now();
        let result = {
            let mut n = 0usize;
            let mut observe = |space: &SearchSpace, step: &TraceEntry, best: Option<f64>| {
                n += 1;
                progress.step(n, space, step, best);
            };
            Tuner::new(space, &mut *evaluator)
                .budget(budget)
                .seed(seed)
                .objective(Objective::Mean)
                .partition(partition)
                .cache(&mut *cache)
                .observe(&mut observe)
                .run(strategy.as_mut())
        };
        let total_s = started.elapsed().as_secs_f64();
        let stats = evaluator.take_stats();
        let (result, stop, mut warnings) = match result {
            Ok(r) => {
                let stop = r.stop.name().to_owned();
                (r, stop, Vec::new())
            }
            Err(TuneError::Aborted { source, partial }) => (
                *partial,
                "aborted".to_owned(),
                vec![format!("stopped: {source}")],
            ),
        };
        warnings.extend(result.warnings.iter().map(|w| format!("{w:?}")));
        let mut failures: BTreeMap<String, usize> = BTreeMap::new();
        for step in &result.trace {
            if let Outcome::Failed(_) = step.outcome {
                *failures.entry(outcome_name(&step.outcome)).or_default() += 1;
            }
        }
        let best = result.best.as_ref().map(|b| Measured {
            config: config_map(&b.config),
            time_ms: Some(b.objective),
            cv: Some(b.cv),
            throughput: work.map(|w| w / (b.objective * 1e-3)),
            failure: None,
        });
        let speedup = match (&default, &best) {
            (Some(d), Some(b)) => d.time_ms.zip(b.time_ms).map(|(d, b)| d / b),
            _ => None,
        };
        let run = TuneRun {
            kernel: subject.kernel.clone(),
            device: subject.device.clone(),
            problem: subject.problem.clone(),
            strategy: result.strategy.clone(),
            seed,
            parameters: subject.parameters.clone(),
            restrictions: subject.restrictions.clone(),
            space: space.len(),
            raw_space: space.raw_size(),
            budget: budget.max_evals,
            evaluations: result.evaluations,
            failures,
            cache_hits: result.cache_hits,
            remeasurements: result.remeasurements,
            best,
            default: default.clone(),
            speedup,
            throughput_unit: subject.work.as_ref().map(|w| w.0.clone()),
            overhead: Overhead {
                total_s,
                kernel_s: stats.kernel_s,
                compile_s: stats.compile_s,
                verify_s: stats.verify_s,
                measured: stats.measured,
                per_eval_ms: if stats.measured > 0 {
                    (total_s - stats.kernel_s) / stats.measured as f64 * 1e3
                } else {
                    0.0
                },
            },
            stop,
            warnings,
            trace: result
                .trace
                .iter()
                .map(|s| TraceStep {
                    config: config_map(&space.config(s.id)),
                    outcome: outcome_name(&s.outcome),
                    time_ms: s.outcome.objective(),
                    elapsed_s: s.elapsed.as_secs_f64(),
                    from_cache: s.from_cache,
                })
                .collect(),
            cache_file: Some(cache.path().to_path_buf()),
            devices: Vec::new(),
            partition: partition.map(|p| p.to_string()),
        };
        progress.done(&run);
        runs.push(run);
    }
    runs
}

/// The default configuration's measurement: through the cache (read from it when it holds
/// it, else measured now and appended) or, without `in_cache`, measured now.
fn measure_default(
    space: &SearchSpace,
    id: ConfigId,
    evaluator: &mut dyn Evaluator,
    cache: &mut JsonlCache,
    in_cache: bool,
    work: Option<f64>,
) -> Measured {
    let config = space.config(id);
    let known = if in_cache {
        aggregate(
            cache
                .records()
                .iter()
                .filter(|r| r.locate(space) == Ok(id))
                .collect::<Vec<_>>(),
        )
    } else {
        None
    };
    let (times, failure) = match known {
        Some(Aggregate::Ok { times, .. }) => (times, None),
        Some(Aggregate::Failed { kind, message }) => {
            (Vec::new(), Some(format!("{kind:?}: {message}")))
        }
        None => {
            let measured = evaluator.evaluate(&config);
            if in_cache {
                // Best effort, as the measurement stands without it.
                let _ = cache.append(match &measured {
                    Ok(m) => CacheRecord::new(space, id, m.times.clone(), None, m.features.clone()),
                    Err(e) => CacheRecord::new(
                        space,
                        id,
                        Vec::new(),
                        Some((
                            e.kind().unwrap_or(FailureKind::Other),
                            e.message().to_owned(),
                        )),
                        Default::default(),
                    ),
                });
            }
            match measured {
                Ok(m) => (m.times, None),
                Err(e) => (Vec::new(), Some(e.to_string())),
            }
        }
    };
    let time_ms = Objective::Mean.reduce(&times);
    Measured {
        config: config_map(&config),
        time_ms,
        cv: (!times.is_empty()).then(|| coefficient_of_variation(&times)),
        throughput: work.zip(time_ms).map(|(w, t)| w / (t * 1e-3)),
        failure,
    }
}

/// A configuration as the report writes it.
pub fn config_map(config: &Config) -> ConfigMap {
    config
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_json()))
        .collect()
}

/// `ok`, or the failure class as the report writes it (`compile`, `wrong_result`, ...).
pub fn outcome_name(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Valid { .. } => "ok".into(),
        Outcome::Failed(kind) => serde_json::to_value(kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "other".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{synthetic, ReplayEvaluator};

    fn subject() -> Subject {
        Subject {
            kernel: "matmul".into(),
            device: DeviceDesc {
                backend: "cpu".into(),
                arch: "x86_64".into(),
                name: "replay".into(),
                wave_size: 64,
            },
            problem: BTreeMap::new(),
            parameters: Vec::new(),
            restrictions: Vec::new(),
            work: Some(("GFLOP/s".into(), 2.0)),
        }
    }

    #[test]
    fn a_campaign_measures_the_default_then_each_strategy_through_one_cache() {
        let table = synthetic::matmul_table(1);
        let space = table.space();
        let dir = std::env::temp_dir().join(format!("rocm-tune-campaign-{}", std::process::id()));
        let path = dir.join("c.jsonl");
        let _ = std::fs::remove_dir_all(&dir);
        let mut cache = open_cache(&path, CacheMeta::for_space(space, None, None), false).unwrap();
        let mut device = ReplayEvaluator::new(&table);
        let names = ["random".to_owned(), "brute_force".to_owned()];
        let campaign = Campaign {
            space,
            strategies: strategies(&names).unwrap(),
            budget: budget(Some(10), None, space.len()),
            seed: 3,
            partition: None,
            default: space.id(0),
            default_in_cache: true,
            subject: subject(),
        };
        let runs = run(campaign, &mut device, &mut cache, &mut ());
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].strategy, "random");
        assert_eq!(runs[0].evaluations, 10);
        assert_eq!(runs[0].stop, "budget_exhausted");
        let default = runs[0].default.as_ref().unwrap();
        let best = runs[0].best.as_ref().unwrap();
        assert_eq!(
            runs[0].speedup,
            Some(default.time_ms.unwrap() / best.time_ms.unwrap())
        );
        assert_eq!(runs[0].throughput_unit.as_deref(), Some("GFLOP/s"));
        // Brute force starts with the default (id 0), answered from the cache.
        assert!(runs[1].trace[0].from_cache);
        assert_eq!(runs[1].cache_file.as_deref(), Some(path.as_path()));
        // --fresh sets the cache aside.
        drop(cache);
        let cache = open_cache(&path, CacheMeta::for_space(space, None, None), true).unwrap();
        assert!(cache.records().is_empty());
        let _ = std::fs::remove_dir_all(&dir);

        assert_eq!(
            strategies(&["magic".into()]).err().unwrap().to_string(),
            "unknown strategy `magic` (known: brute_force, random, annealing, genetic, bayes, \
             regression_prune)"
        );
        assert_eq!(budget(None, None, 30).max_evals, Some(30));
        assert_eq!(budget(None, Some(5.0), 3000).max_evals, None);
        assert_eq!(budget(None, None, 3000).max_evals, Some(DEFAULT_MAX_EVALS));
    }
}
