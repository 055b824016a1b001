//! Running a strategy: budgets, stability gating, failure handling, caching and resumption.
//!
//! Strategies never call the evaluator directly; they ask a [`Session`] to evaluate a
//! [`ConfigId`]. The session is where the rules every strategy must follow are enforced once:
//!
//! - **Budget**: at most `max_evals` distinct configurations and/or `max_time` wall time.
//!   Re-measurements for stability and compile-only feature queries do not count as
//!   evaluations (they cost time, which the time budget sees). Configurations answered from a
//!   resumed cache *do* count, so that a resumed run with the same seed retraces the
//!   interrupted run exactly and continues where it stopped.
//! - **Failures**: compile errors, launch failures and wrong results are recorded as failed
//!   outcomes, reported to the strategy as `None`, and can never become the best.
//!   [`EvalError::Fatal`] stops the run with the partial result.
//! - **No double evaluation**: asking again for a known configuration returns the known result
//!   for free. A strategy stuck asking only for known configurations is stopped
//!   ([`StopReason::Stalled`]) instead of spinning forever.
//! - **Stability gating**: see [`StabilityGate`].

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::cache::{
    aggregate, index_records, Aggregate, CacheError, CacheRecord, CacheWarning, JsonlCache,
};
use crate::eval::{
    coefficient_of_variation, EvalError, Evaluator, FailureKind, Features, Measurement, Objective,
};
use crate::rng::Rng;
use crate::space::{Config, ConfigId, SearchSpace};
use crate::strategy::Strategy;

pub use rocm_stats::Stability;

/// Limits of one tuning run. A limit of `None` is no limit; with neither limit, a strategy runs
/// until it finishes or the space is exhausted.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Budget {
    /// Maximum number of distinct configurations evaluated (including failed ones and ones
    /// answered from a resumed cache).
    pub max_evals: Option<usize>,
    /// Maximum wall time of the run.
    pub max_time: Option<Duration>,
}

impl Budget {
    /// At most `n` evaluations.
    pub fn evals(n: usize) -> Budget {
        Budget {
            max_evals: Some(n),
            max_time: None,
        }
    }
    /// At most `d` of wall time.
    pub fn time(d: Duration) -> Budget {
        Budget {
            max_evals: None,
            max_time: Some(d),
        }
    }
    /// Adds a wall-time limit.
    pub fn with_time(mut self, d: Duration) -> Budget {
        self.max_time = Some(d);
        self
    }
}

/// Re-measurement of noisy candidates before they may become the best.
///
/// A configuration that would become the new best is checked first: its samples are classified
/// with `rocm-stats` (the classes `cargo rocm bench` and `cargo rocm profile` report:
/// [`Stability::Stable`], `Noisy`, `Unstable`, from the robust spread, the CV and a bimodality
/// test; see [`rocm_stats::stats::classify`]). Anything but stable is re-measured, up to
/// `max_remeasures` times. Each re-measurement is a fresh set of samples; the steadiest set is
/// kept (best class, then lowest robust spread), on the reasoning that a disturbance (another
/// process on the GPU, a clock ramp, a cold cache) spoils one set rather than the kernel. If
/// the kept set is still unstable, the result stands but a [`Warning::UnstableMeasurement`] is
/// emitted. With fewer samples than the classes need
/// ([`rocm_stats::stats::MIN_SAMPLES_FOR_STABILITY`]) the CV alone decides, with the same
/// limits ([`rocm_stats::stats::STABLE_MAX_CV`], [`rocm_stats::stats::NOISY_MAX_CV`]).
/// Only would-be winners are gated, because only they can mislead the result and re-measuring
/// everything would double the cost of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StabilityGate {
    /// Off switch.
    pub enabled: bool,
    /// At most this many re-measurements per candidate (default 2).
    pub max_remeasures: usize,
}

impl Default for StabilityGate {
    fn default() -> Self {
        StabilityGate {
            enabled: true,
            max_remeasures: 2,
        }
    }
}

impl StabilityGate {
    /// No gating.
    pub fn disabled() -> Self {
        StabilityGate {
            enabled: false,
            ..StabilityGate::default()
        }
    }
}

/// The stability class of a set of samples and its robust spread (for choosing the steadiest
/// of several sets). Few samples: classified by their CV alone.
pub fn stability_of(times: &[f64]) -> (Stability, f64) {
    use rocm_stats::stats::{NOISY_MAX_CV, STABLE_MAX_CV};
    match rocm_stats::summarize(times) {
        Err(_) => (Stability::Unstable, f64::INFINITY),
        Ok(s) if s.stability == Stability::TooFewSamples => {
            let class = if s.cv <= STABLE_MAX_CV {
                Stability::Stable
            } else if s.cv <= NOISY_MAX_CV {
                Stability::Noisy
            } else {
                Stability::Unstable
            };
            (class, s.cv)
        }
        Ok(s) => (s.stability, s.rel_mad),
    }
}

/// Lower is steadier.
fn class_rank(s: Stability) -> u8 {
    match s {
        Stability::Stable => 0,
        Stability::Noisy | Stability::TooFewSamples => 1,
        Stability::Unstable => 2,
    }
}

/// Options of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TuneOptions {
    /// Limits.
    pub budget: Budget,
    /// Seed of every random choice; same seed, same space, same evaluator answers: same run.
    pub seed: u64,
    /// Stability gating.
    pub stability: StabilityGate,
    /// How samples reduce to one value (lower is better).
    pub objective: Objective,
    /// Only this slice of the space for brute force and random sampling, and for the random
    /// seed phase of the model-based strategies (jobs of a Slurm array or a CI matrix, or the
    /// GPUs of one host, each take one slice; `cargo rocm tune merge` joins their caches).
    pub partition: Option<Partition>,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            budget: Budget::default(),
            seed: 0,
            stability: StabilityGate::default(),
            objective: Objective::Mean,
            partition: None,
        }
    }
}

/// Slice `index` (0-based) of `count`: the configurations whose position in the space's
/// enumeration order is `index` modulo `count`. The enumeration order depends only on the
/// space's declaration, so every machine of a job array agrees on the slices, and taking every
/// `count`-th configuration spreads each slice over the whole space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// 0-based.
    pub index: u32,
    /// At least 1.
    pub count: u32,
}

impl Partition {
    /// `K/N` with 1 ≤ K ≤ N (1-based, as `SLURM_ARRAY_TASK_ID` ranges and nextest's
    /// `--partition count:K/N` are written).
    pub fn parse(text: &str) -> Result<Partition, String> {
        let bad = || format!("`{text}` is not a partition K/N with 1 <= K <= N (`2/3`)");
        let (k, n) = text.trim().split_once('/').ok_or_else(bad)?;
        let k: u32 = k.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        if k == 0 || n == 0 || k > n {
            return Err(bad());
        }
        Ok(Partition {
            index: k - 1,
            count: n,
        })
    }

    /// Whether configuration `id` is in this slice.
    pub fn contains(&self, id: ConfigId) -> bool {
        id.0 % self.count as usize == self.index as usize
    }

    /// Slice `local` of `count` within this slice: how one job of an array spreads its slice
    /// over the GPUs of its host (`2/3` on two GPUs: `3/6` and `4/6`).
    pub fn split(&self, local: u32, count: u32) -> Partition {
        Partition {
            index: self.index * count + local,
            count: self.count * count,
        }
    }

    /// How many configurations of a space of `len` are in this slice.
    pub fn len_of(&self, len: usize) -> usize {
        let (i, n) = (self.index as usize, self.count as usize);
        if i >= len {
            0
        } else {
            (len - i).div_ceil(n)
        }
    }
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.count)
    }
}

/// Things a run noticed that the caller should see.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// A model-based strategy's surrogate predicts poorly on held-out data; its ranking is
    /// little better than a guess and more random sampling or a larger budget is advisable.
    PoorFit {
        /// Strategy name.
        strategy: String,
        /// Held-out (leave-one-out) R².
        heldout_r2: f64,
        /// The warning threshold.
        threshold: f64,
        /// Training points.
        n_train: usize,
    },
    /// The best configuration's samples stayed noisy after re-measurement.
    UnstableMeasurement {
        /// Configuration key.
        key: String,
        /// CV of the kept samples.
        cv: f64,
        /// Re-measurements made.
        remeasures: usize,
    },
    /// A configuration that measured fine failed when re-measured; it is treated as failed.
    FlakyConfiguration {
        /// Configuration key.
        key: String,
        /// The error.
        message: String,
    },
    /// A problem in the resumed cache.
    Cache(CacheWarning),
    /// Anything else a strategy wants to report (e.g. a fallback it took).
    Note {
        /// Strategy name.
        strategy: String,
        /// The note.
        message: String,
    },
}

/// Why a strategy stopped early (returned by [`Session`] calls; use `?`).
#[derive(Debug)]
pub enum Stop {
    /// The evaluation or time budget is spent.
    BudgetExhausted,
    /// Every configuration has been evaluated.
    SpaceExhausted,
    /// The strategy asked only for known configurations for too long.
    Stalled,
    /// The evaluator or the cache failed; tuning cannot go on.
    Fatal(FatalError),
}

/// An error that ends a run.
#[derive(Debug, thiserror::Error)]
pub enum FatalError {
    /// [`EvalError::Fatal`] from the evaluator.
    #[error("evaluator: {0}")]
    Evaluator(String),
    /// Writing the cache failed (without it, results could be lost).
    #[error(transparent)]
    Cache(#[from] CacheError),
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The strategy returned by itself (e.g. brute force finished).
    StrategyFinished,
    /// The budget is spent.
    BudgetExhausted,
    /// Every configuration has been evaluated.
    SpaceExhausted,
    /// The strategy made no progress.
    Stalled,
}

impl StopReason {
    /// The name reports give it (`TuneRun::stop`): `strategy_finished`, `budget_exhausted`,
    /// `space_exhausted`, `stalled`.
    pub fn name(self) -> &'static str {
        match self {
            StopReason::StrategyFinished => "strategy_finished",
            StopReason::BudgetExhausted => "budget_exhausted",
            StopReason::SpaceExhausted => "space_exhausted",
            StopReason::Stalled => "stalled",
        }
    }
}

/// Result of one configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Measured.
    Valid {
        /// The objective (lower is better).
        objective: f64,
        /// CV of the kept samples.
        cv: f64,
        /// Number of kept samples.
        samples: usize,
    },
    /// Failed; never chosen.
    Failed(FailureKind),
}

impl Outcome {
    /// The objective of a valid outcome.
    pub fn objective(&self) -> Option<f64> {
        match self {
            Outcome::Valid { objective, .. } => Some(*objective),
            Outcome::Failed(_) => None,
        }
    }
}

/// One step of a run, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEntry {
    /// The configuration.
    pub id: ConfigId,
    /// Its result.
    pub outcome: Outcome,
    /// Answered from the resumed cache.
    pub from_cache: bool,
    /// Time since the start of the run.
    pub elapsed: Duration,
}

/// The best configuration found.
#[derive(Debug, Clone, PartialEq)]
pub struct Best {
    /// Its id.
    pub id: ConfigId,
    /// Its values.
    pub config: Config,
    /// Its objective.
    pub objective: f64,
    /// CV of its samples.
    pub cv: f64,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct TuneResult {
    /// Strategy name.
    pub strategy: String,
    /// Best valid configuration, if any was found.
    pub best: Option<Best>,
    /// Distinct configurations evaluated (including failed and cached).
    pub evaluations: usize,
    /// How many of them failed.
    pub failures: usize,
    /// How many were answered from the resumed cache.
    pub cache_hits: usize,
    /// Re-measurements made by stability gating.
    pub remeasurements: usize,
    /// Compile-only static-feature queries.
    pub static_queries: usize,
    /// Wall time.
    pub elapsed: Duration,
    /// How it ended.
    pub stop: StopReason,
    /// Every evaluation in order.
    pub trace: Vec<TraceEntry>,
    /// Things to look at.
    pub warnings: Vec<Warning>,
}

/// Errors of a run.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// A fatal error stopped the run; what was measured so far is in `partial` (and in the
    /// cache, if one was given).
    #[error("tuning aborted after {} evaluations: {source}", partial.evaluations)]
    Aborted {
        /// The cause.
        source: FatalError,
        /// The run up to the error.
        partial: Box<TuneResult>,
    },
}

/// Called after every evaluation with the space, the step and the best objective so far.
pub type Observer<'a> = dyn FnMut(&SearchSpace, &TraceEntry, Option<f64>) + 'a;

/// Runs strategies on a space with an evaluator.
pub struct Tuner<'a> {
    space: &'a SearchSpace,
    evaluator: &'a mut dyn Evaluator,
    options: TuneOptions,
    cache: Option<&'a mut JsonlCache>,
    observer: Option<&'a mut Observer<'a>>,
}

impl<'a> Tuner<'a> {
    /// A tuner with default options (no budget, seed 0, gating on, mean objective).
    pub fn new(space: &'a SearchSpace, evaluator: &'a mut dyn Evaluator) -> Self {
        Tuner {
            space,
            evaluator,
            options: TuneOptions::default(),
            cache: None,
            observer: None,
        }
    }

    /// Calls `observer` after every evaluation (progress bars, event streams).
    pub fn observe(mut self, observer: &'a mut Observer<'a>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Replaces all options.
    pub fn options(mut self, options: TuneOptions) -> Self {
        self.options = options;
        self
    }

    /// Sets the budget.
    pub fn budget(mut self, budget: Budget) -> Self {
        self.options.budget = budget;
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.options.seed = seed;
        self
    }

    /// Sets stability gating.
    pub fn stability(mut self, gate: StabilityGate) -> Self {
        self.options.stability = gate;
        self
    }

    /// Sets the objective reduction.
    pub fn objective(mut self, objective: Objective) -> Self {
        self.options.objective = objective;
        self
    }

    /// Restricts the run to one slice of the space ([`TuneOptions::partition`]).
    pub fn partition(mut self, partition: Option<Partition>) -> Self {
        self.options.partition = partition;
        self
    }

    /// Records every evaluation in `cache`, and answers configurations already in it without
    /// evaluating them (resumption).
    pub fn cache(mut self, cache: &'a mut JsonlCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Runs `strategy` to completion or until the budget is spent.
    pub fn run(self, strategy: &mut dyn Strategy) -> Result<TuneResult, TuneError> {
        let mut warnings = Vec::new();
        let mut prior = HashMap::new();
        if let Some(cache) = &self.cache {
            warnings.extend(cache.warnings().iter().cloned().map(Warning::Cache));
            let mut cw = Vec::new();
            for (id, recs) in index_records(self.space, cache.records(), &mut cw) {
                if let Some(agg) = aggregate(recs) {
                    prior.insert(id, agg);
                }
            }
            warnings.extend(cw.into_iter().map(Warning::Cache));
        }
        let mut session = Session {
            space: self.space,
            evaluator: self.evaluator,
            cache: self.cache,
            observer: self.observer,
            prior,
            results: HashMap::new(),
            features: HashMap::new(),
            static_cache: HashMap::new(),
            order: Vec::new(),
            trace: Vec::new(),
            best: None,
            rng: Rng::seed_from_u64(self.options.seed),
            options: self.options,
            start: Instant::now(),
            warnings,
            failures: 0,
            cache_hits: 0,
            remeasurements: 0,
            static_queries: 0,
            stall: 0,
            stall_limit: 10_000 + 10 * self.space.len(),
        };
        let outcome = strategy.run(&mut session);
        let stop = match outcome {
            Ok(()) => StopReason::StrategyFinished,
            Err(Stop::BudgetExhausted) => StopReason::BudgetExhausted,
            Err(Stop::SpaceExhausted) => StopReason::SpaceExhausted,
            Err(Stop::Stalled) => StopReason::Stalled,
            Err(Stop::Fatal(source)) => {
                let partial =
                    Box::new(session.into_result(strategy.name(), StopReason::StrategyFinished));
                return Err(TuneError::Aborted { source, partial });
            }
        };
        Ok(session.into_result(strategy.name(), stop))
    }
}

/// A static-feature query's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum StaticProbe {
    /// The features.
    Features(Features),
    /// The evaluator cannot provide static features.
    Unavailable,
    /// Compilation failed: the configuration would fail anyway.
    Failed(FailureKind),
}

/// A strategy's view of a run in progress.
pub struct Session<'a> {
    space: &'a SearchSpace,
    evaluator: &'a mut dyn Evaluator,
    cache: Option<&'a mut JsonlCache>,
    observer: Option<&'a mut Observer<'a>>,
    prior: HashMap<ConfigId, Aggregate>,
    results: HashMap<ConfigId, Outcome>,
    features: HashMap<ConfigId, Features>,
    static_cache: HashMap<ConfigId, StaticProbe>,
    order: Vec<ConfigId>,
    trace: Vec<TraceEntry>,
    best: Option<(ConfigId, f64)>,
    rng: Rng,
    options: TuneOptions,
    start: Instant,
    warnings: Vec<Warning>,
    failures: usize,
    cache_hits: usize,
    remeasurements: usize,
    static_queries: usize,
    stall: usize,
    stall_limit: usize,
}

impl<'a> Session<'a> {
    /// The search space.
    pub fn space(&self) -> &'a SearchSpace {
        self.space
    }

    /// The run's random source (seeded from [`TuneOptions::seed`]).
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// The options of the run.
    pub fn options(&self) -> &TuneOptions {
        &self.options
    }

    /// Distinct configurations evaluated so far.
    pub fn evaluations(&self) -> usize {
        self.order.len()
    }

    /// Evaluations left, if the budget limits them.
    pub fn remaining(&self) -> Option<usize> {
        self.options
            .budget
            .max_evals
            .map(|m| m.saturating_sub(self.order.len()))
    }

    /// Configurations evaluated so far, in order.
    pub fn evaluated(&self) -> &[ConfigId] {
        &self.order
    }

    /// True if `id` has been evaluated in this run.
    pub fn is_evaluated(&self, id: ConfigId) -> bool {
        self.results.contains_key(&id)
    }

    /// The outcome of `id`, if evaluated.
    pub fn outcome(&self, id: ConfigId) -> Option<&Outcome> {
        self.results.get(&id)
    }

    /// The objective of `id`, if evaluated and valid.
    pub fn objective(&self, id: ConfigId) -> Option<f64> {
        self.results.get(&id).and_then(Outcome::objective)
    }

    /// Static features returned with the measurement of `id`.
    pub fn features(&self, id: ConfigId) -> Option<&Features> {
        self.features.get(&id)
    }

    /// The best valid configuration so far and its objective.
    pub fn best(&self) -> Option<(ConfigId, f64)> {
        self.best
    }

    /// Adds a warning to the result.
    pub fn warn(&mut self, w: Warning) {
        self.warnings.push(w);
    }

    fn time_up(&self) -> bool {
        self.options
            .budget
            .max_time
            .is_some_and(|t| self.start.elapsed() >= t)
    }

    fn budget_spent(&self) -> bool {
        self.options
            .budget
            .max_evals
            .is_some_and(|m| self.order.len() >= m)
            || self.time_up()
    }

    /// The slice of the space this run draws from ([`TuneOptions::partition`]).
    pub fn partition(&self) -> Option<Partition> {
        self.options.partition
    }

    /// Whether `id` is in this run's slice (every id is, without a partition).
    pub fn in_slice(&self, id: ConfigId) -> bool {
        self.options.partition.is_none_or(|p| p.contains(id))
    }

    /// Whether every configuration of this run's slice has been evaluated (with a partition;
    /// without one, whether the whole space has).
    pub fn slice_exhausted(&self) -> bool {
        match self.options.partition {
            None => self.results.len() >= self.space.len(),
            Some(p) => {
                let done = self.results.keys().filter(|id| p.contains(**id)).count();
                done >= p.len_of(self.space.len())
            }
        }
    }

    /// The slice random draws come from: the partition while any of it is unevaluated (the
    /// seed phase of model-based strategies stays in its slice), then the whole space.
    fn draw_slice(&self) -> Option<Partition> {
        self.options
            .partition
            .filter(|p| p.count > 1 && !self.slice_exhausted())
    }

    /// A uniformly random configuration not evaluated yet (from this run's slice while it
    /// has any, see [`Session::partition`]); `None` when all are.
    pub fn random_unevaluated(&mut self) -> Option<ConfigId> {
        self.random_unevaluated_batch(1).pop()
    }

    /// Up to `n` distinct random configurations not evaluated yet (fewer when fewer are left),
    /// for strategies that pick several at once and can announce them ([`Session::prefetch`]).
    /// With a partition they come from this run's slice while it has unevaluated ones.
    pub fn random_unevaluated_batch(&mut self, n: usize) -> Vec<ConfigId> {
        self.random_unevaluated_excluding(n, &[])
    }

    /// As [`random_unevaluated_batch`](Self::random_unevaluated_batch), leaving out `pending`
    /// too (configurations drawn before and not evaluated yet): for strategies that keep a
    /// window of announced configurations ahead of the one they evaluate.
    pub fn random_unevaluated_excluding(
        &mut self,
        n: usize,
        pending: &[ConfigId],
    ) -> Vec<ConfigId> {
        let slice = self.draw_slice();
        // Positions within the slice map to ids: position j is id `index + j * count`.
        let (offset, stride) = slice.map_or((0, 1), |p| (p.index as usize, p.count as usize));
        let total = slice.map_or(self.space.len(), |p| p.len_of(self.space.len()));
        let done = match slice {
            None => self.results.len(),
            Some(p) => self.results.keys().filter(|id| p.contains(**id)).count(),
        };
        let at = |j: usize| ConfigId(offset + j * stride);
        // The pending ones first, as if drawn already; they are not returned.
        let mut out: Vec<ConfigId> = pending
            .iter()
            .copied()
            .filter(|id| slice.is_none_or(|p| p.contains(*id)) && !self.results.contains_key(id))
            .collect();
        let skip = out.len();
        let n = n + skip;
        out.reserve(n);
        while out.len() < n && done + out.len() < total {
            let left = total - done - out.len();
            let pick = if (done + out.len()) * 2 < total {
                (0..64)
                    .map(|_| at(self.rng.below(total)))
                    .find(|id| !self.results.contains_key(id) && !out.contains(id))
            } else {
                None
            };
            let id = match pick {
                Some(id) => id,
                None => {
                    let k = self.rng.below(left);
                    match (0..total)
                        .map(at)
                        .filter(|id| !self.results.contains_key(id) && !out.contains(id))
                        .nth(k)
                    {
                        Some(id) => id,
                        None => break,
                    }
                }
            };
            out.push(id);
        }
        out.split_off(skip)
    }

    /// Tells the evaluator that these configurations will probably be evaluated soon, in this
    /// order (see [`Evaluator::prefetch`]); known ones are left out. Costs no budget.
    pub fn prefetch(&mut self, ids: &[ConfigId]) {
        let configs: Vec<Config> = ids
            .iter()
            .filter(|id| {
                id.0 < self.space.len()
                    && !self.results.contains_key(id)
                    && !self.prior.contains_key(id)
            })
            .map(|&id| self.space.config(id))
            .collect();
        if !configs.is_empty() {
            self.evaluator.prefetch(&configs);
        }
    }

    /// Evaluates `id` (or returns its known result). `Ok(Some(objective))` for a valid
    /// measurement, `Ok(None)` for a failed configuration, `Err(Stop)` when the run must end.
    pub fn evaluate(&mut self, id: ConfigId) -> Result<Option<f64>, Stop> {
        if let Some(o) = self.results.get(&id) {
            self.stall += 1;
            if self.stall > self.stall_limit {
                return Err(Stop::Stalled);
            }
            return Ok(o.objective());
        }
        if id.0 >= self.space.len() {
            return Err(Stop::Fatal(FatalError::Evaluator(format!(
                "strategy asked for {id}, outside a space of {}",
                self.space.len()
            ))));
        }
        if self.budget_spent() {
            return Err(Stop::BudgetExhausted);
        }
        self.stall = 0;
        let (outcome, from_cache) = match self.prior.get(&id).cloned() {
            Some(agg) => (self.outcome_from_prior(id, agg), true),
            None => (self.measure(id)?, false),
        };
        if from_cache {
            self.cache_hits += 1;
        }
        if let Outcome::Valid { objective, .. } = outcome {
            if self.best.is_none_or(|(_, b)| objective < b) {
                self.best = Some((id, objective));
            }
        } else {
            self.failures += 1;
        }
        self.results.insert(id, outcome.clone());
        self.order.push(id);
        self.trace.push(TraceEntry {
            id,
            outcome: outcome.clone(),
            from_cache,
            elapsed: self.start.elapsed(),
        });
        if let (Some(observer), Some(step)) = (self.observer.as_deref_mut(), self.trace.last()) {
            observer(self.space, step, self.best.map(|(_, b)| b));
        }
        Ok(outcome.objective())
    }

    fn outcome_from_prior(&mut self, id: ConfigId, agg: Aggregate) -> Outcome {
        match agg {
            Aggregate::Ok { times, features } => {
                if !features.is_empty() {
                    self.features.insert(id, features);
                }
                match self.options.objective.reduce(&times) {
                    Some(objective) => Outcome::Valid {
                        objective,
                        cv: coefficient_of_variation(&times),
                        samples: times.len(),
                    },
                    None => Outcome::Failed(FailureKind::BadMeasurement),
                }
            }
            Aggregate::Failed { kind, .. } => Outcome::Failed(kind),
        }
    }

    fn would_be_best(&self, objective: f64) -> bool {
        self.best.is_none_or(|(_, b)| objective < b)
    }

    fn measure(&mut self, id: ConfigId) -> Result<Outcome, Stop> {
        let config = self.space.config(id);
        let (outcome, times, features, failure) = match checked(self.evaluator.evaluate(&config))? {
            Err((kind, message)) => (
                Outcome::Failed(kind),
                Vec::new(),
                Features::new(),
                Some((kind, message)),
            ),
            Ok(m) => {
                let (outcome, m, failure) = self.gate(&config, m)?;
                (outcome, m.times, m.features, failure)
            }
        };
        if !features.is_empty() {
            self.features.insert(id, features.clone());
        }
        if let Some(cache) = self.cache.as_deref_mut() {
            let record = CacheRecord::new(self.space, id, times, failure, features);
            cache
                .append(record)
                .map_err(|e| Stop::Fatal(FatalError::Cache(e)))?;
        }
        Ok(outcome)
    }

    /// Stability gating (see [`StabilityGate`]).
    #[allow(clippy::type_complexity)]
    fn gate(
        &mut self,
        config: &Config,
        first: Measurement,
    ) -> Result<(Outcome, Measurement, Option<(FailureKind, String)>), Stop> {
        let gate = self.options.stability;
        let obj = self.options.objective;
        let reduce = |m: &Measurement| obj.reduce(&m.times).unwrap_or(f64::INFINITY);
        let mut kept = first;
        let mut class = stability_of(&kept.times);
        let mut remeasures = 0;
        if gate.enabled && class.0 != Stability::Stable && self.would_be_best(reduce(&kept)) {
            while remeasures < gate.max_remeasures && class.0 != Stability::Stable {
                remeasures += 1;
                self.remeasurements += 1;
                match checked(self.evaluator.remeasure(config)) {
                    Err(stop) => return Err(stop),
                    Ok(Err((kind, message))) => {
                        self.warnings.push(Warning::FlakyConfiguration {
                            key: config.key(),
                            message: message.clone(),
                        });
                        return Ok((
                            Outcome::Failed(kind),
                            Measurement::default(),
                            Some((kind, message)),
                        ));
                    }
                    Ok(Ok(m)) => {
                        let c = stability_of(&m.times);
                        if (class_rank(c.0), c.1) < (class_rank(class.0), class.1) {
                            let features = std::mem::take(&mut kept.features);
                            kept = m;
                            if kept.features.is_empty() {
                                kept.features = features;
                            }
                            class = c;
                        }
                    }
                }
            }
            if class.0 == Stability::Unstable && self.would_be_best(reduce(&kept)) {
                self.warnings.push(Warning::UnstableMeasurement {
                    key: config.key(),
                    cv: coefficient_of_variation(&kept.times),
                    remeasures,
                });
            }
        }
        let cv = coefficient_of_variation(&kept.times);
        let objective = reduce(&kept);
        let outcome = Outcome::Valid {
            objective,
            cv,
            samples: kept.times.len(),
        };
        Ok((outcome, kept, None))
    }

    /// Static features of `id` without running it (compile only; cached). Costs time, not
    /// evaluation budget.
    pub fn static_features(&mut self, id: ConfigId) -> Result<StaticProbe, Stop> {
        if let Some(p) = self.static_cache.get(&id) {
            return Ok(p.clone());
        }
        if let Some(f) = self.features.get(&id) {
            return Ok(StaticProbe::Features(f.clone()));
        }
        if self.time_up() {
            return Err(Stop::BudgetExhausted);
        }
        let config = self.space.config(id);
        let probe = match self.evaluator.static_features(&config) {
            None => StaticProbe::Unavailable,
            Some(Ok(f)) => StaticProbe::Features(f),
            Some(Err(EvalError::Fatal(m))) => return Err(Stop::Fatal(FatalError::Evaluator(m))),
            Some(Err(e)) => StaticProbe::Failed(e.kind().unwrap_or(FailureKind::Other)),
        };
        self.static_queries += 1;
        self.static_cache.insert(id, probe.clone());
        Ok(probe)
    }

    fn into_result(self, strategy: String, stop: StopReason) -> TuneResult {
        let best = self.best.map(|(id, objective)| Best {
            id,
            config: self.space.config(id),
            objective,
            cv: match self.results.get(&id) {
                Some(Outcome::Valid { cv, .. }) => *cv,
                _ => 0.0,
            },
        });
        TuneResult {
            strategy,
            best,
            evaluations: self.order.len(),
            failures: self.failures,
            cache_hits: self.cache_hits,
            remeasurements: self.remeasurements,
            static_queries: self.static_queries,
            elapsed: self.start.elapsed(),
            stop,
            trace: self.trace,
            warnings: self.warnings,
        }
    }
}

/// Splits an evaluator answer into fatal (stop), failure (recorded) and valid measurement.
#[allow(clippy::type_complexity)]
fn checked(
    r: Result<Measurement, EvalError>,
) -> Result<Result<Measurement, (FailureKind, String)>, Stop> {
    match r {
        Err(EvalError::Fatal(m)) => Err(Stop::Fatal(FatalError::Evaluator(m))),
        Err(e) => Ok(Err((
            e.kind().unwrap_or(FailureKind::Other),
            e.message().to_string(),
        ))),
        Ok(m) => match m.validate() {
            Ok(()) => Ok(Ok(m)),
            Err(msg) => Ok(Err((FailureKind::BadMeasurement, msg))),
        },
    }
}
