//! Strategy behaviour through the public API: determinism, budgets, failures, stability
//! gating, fatal errors, stalls, warnings and (coarse) search quality.

use std::time::Duration;

use rocm_tune::score::{expected_best_random, run_scores, score, ScoreConfig, StrategyFactory};
use rocm_tune::strategy::default_strategies;
use rocm_tune::synthetic::{self, SyntheticMatmul};
use rocm_tune::tuner::StopReason;
use rocm_tune::{
    BayesianOptimization, Budget, Config, ConfigId, EvalError, Evaluator, Measurement,
    RandomSampling, RecordedTable, RegressionPrune, ReplayEvaluator, SearchSpace, Session,
    StabilityGate, Stop, Strategy, TuneError, Tuner, Warning,
};

fn all() -> Vec<Box<dyn Strategy>> {
    default_strategies()
}

#[testkit::test]
fn every_strategy_is_deterministic_and_honours_the_budget() {
    let table = synthetic::matmul_table(2);
    for budget in [7, 30] {
        for (a, b) in all().into_iter().zip(all()) {
            let (mut a, mut b) = (a, b);
            let run = |s: &mut dyn Strategy, seed| {
                let mut ev = ReplayEvaluator::new(&table);
                Tuner::new(table.space(), &mut ev)
                    .budget(Budget::evals(budget))
                    .seed(seed)
                    .run(s)
                    .unwrap()
            };
            let r1 = run(a.as_mut(), 11);
            let r2 = run(b.as_mut(), 11);
            let ids = |r: &rocm_tune::TuneResult| r.trace.iter().map(|t| t.id).collect::<Vec<_>>();
            assert_eq!(ids(&r1), ids(&r2), "{} is not deterministic", r1.strategy);
            assert_eq!(r1.evaluations, budget, "{}", r1.strategy);
            assert_eq!(r1.stop, StopReason::BudgetExhausted, "{}", r1.strategy);
            // distinct configurations only
            let mut sorted = ids(&r1);
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), budget, "{}", r1.strategy);
            // the best is the best valid configuration seen, never a failure
            let best = r1.best.as_ref().expect("a valid configuration was found");
            let min = r1
                .trace
                .iter()
                .filter_map(|t| t.outcome.objective())
                .fold(f64::INFINITY, f64::min);
            assert_eq!(best.objective, min, "{}", r1.strategy);
            assert!(table.entry(best.id).unwrap().objective().is_some());
            if r1.strategy != "brute_force" {
                let r3 = run(a.as_mut(), 12);
                assert_ne!(ids(&r1), ids(&r3), "{}: seed has no effect", r1.strategy);
            }
        }
    }
}

#[testkit::test]
fn wall_time_budget_stops_a_run() {
    struct Slow;
    impl Evaluator for Slow {
        fn evaluate(&mut self, _: &Config) -> Result<Measurement, EvalError> {
            std::thread::sleep(Duration::from_millis(5));
            Ok(Measurement::from_times(vec![1.0]))
        }
    }
    let space = synthetic::matmul_space();
    let mut ev = Slow;
    let r = Tuner::new(&space, &mut ev)
        .budget(Budget::time(Duration::from_millis(60)))
        .run(&mut RandomSampling)
        .unwrap();
    assert_eq!(r.stop, StopReason::BudgetExhausted);
    assert!(
        r.evaluations >= 2 && r.evaluations <= 20,
        "{}",
        r.evaluations
    );
}

/// A space where most configurations fail, in several ways.
struct Flaky;
impl Evaluator for Flaky {
    fn evaluate(&mut self, c: &Config) -> Result<Measurement, EvalError> {
        let a = c.int("a").unwrap_or(0);
        let b = c.int("b").unwrap_or(0);
        match (a * 7 + b * 3) % 10 {
            0..=3 => Err(EvalError::Compile("no".into())),
            4 | 5 => Err(EvalError::Launch(
                "too many resources requested for launch".into(),
            )),
            6 => Err(EvalError::WrongResult("mismatch".into())),
            7 => Ok(Measurement::from_times(vec![])), // unusable samples
            _ => Ok(Measurement::from_times(vec![(a + b) as f64 + 1.0; 3])),
        }
    }
}

#[testkit::test]
fn strategies_cope_with_mostly_failing_spaces() {
    let space = SearchSpace::builder()
        .param("a", 0..20)
        .param("b", 0..20)
        .build()
        .unwrap();
    for mut s in all() {
        let mut ev = Flaky;
        let r = Tuner::new(&space, &mut ev)
            .budget(Budget::evals(60))
            .seed(3)
            .run(s.as_mut())
            .unwrap();
        assert_eq!(r.evaluations, 60, "{}", r.strategy);
        assert!(r.failures > 0, "{}", r.strategy);
        if let Some(b) = &r.best {
            let mut check = Flaky;
            assert!(
                check.evaluate(&b.config).is_ok_and(|m| !m.times.is_empty()),
                "{}",
                r.strategy
            );
        }
    }
    // All failing: no best, no panic.
    struct Broken;
    impl Evaluator for Broken {
        fn evaluate(&mut self, _: &Config) -> Result<Measurement, EvalError> {
            Err(EvalError::Compile("always".into()))
        }
    }
    for mut s in all() {
        let mut ev = Broken;
        let r = Tuner::new(&space, &mut ev)
            .budget(Budget::evals(25))
            .run(s.as_mut())
            .unwrap();
        assert!(r.best.is_none(), "{}", r.strategy);
        assert_eq!(r.failures, 25, "{}", r.strategy);
    }
}

#[testkit::test]
fn small_spaces_are_exhausted_cleanly() {
    let space = SearchSpace::builder()
        .param("a", [1, 2, 3])
        .build()
        .unwrap();
    struct Lin;
    impl Evaluator for Lin {
        fn evaluate(&mut self, c: &Config) -> Result<Measurement, EvalError> {
            Ok(Measurement::from_times(vec![c.float("a").unwrap_or(1.0)]))
        }
    }
    for mut s in all() {
        let r = Tuner::new(&space, &mut Lin)
            .budget(Budget::evals(50))
            .run(s.as_mut())
            .unwrap();
        assert_eq!(r.evaluations, 3, "{}", r.strategy);
        assert!(
            matches!(
                r.stop,
                StopReason::SpaceExhausted | StopReason::StrategyFinished | StopReason::Stalled
            ),
            "{}: {:?}",
            r.strategy,
            r.stop
        );
        assert_eq!(r.best.unwrap().objective, 1.0);
    }
}

#[testkit::test]
fn fatal_errors_abort_with_the_partial_result() {
    struct DiesAfter(usize);
    impl Evaluator for DiesAfter {
        fn evaluate(&mut self, _: &Config) -> Result<Measurement, EvalError> {
            if self.0 == 0 {
                return Err(EvalError::Fatal("device lost".into()));
            }
            self.0 -= 1;
            Ok(Measurement::from_times(vec![1.0, 1.0]))
        }
    }
    let space = synthetic::matmul_space();
    let err = Tuner::new(&space, &mut DiesAfter(5))
        .budget(Budget::evals(50))
        .run(&mut RandomSampling)
        .unwrap_err();
    let TuneError::Aborted { partial, source } = err;
    assert_eq!(partial.evaluations, 5);
    assert!(source.to_string().contains("device lost"));
}

#[testkit::test]
fn a_strategy_that_makes_no_progress_is_stopped() {
    struct Stubborn;
    impl Strategy for Stubborn {
        fn name(&self) -> String {
            "stubborn".into()
        }
        fn run(&mut self, s: &mut Session<'_>) -> Result<(), Stop> {
            let id = s.space().id(0).ok_or(Stop::SpaceExhausted)?;
            loop {
                s.evaluate(id)?;
            }
        }
    }
    let table = synthetic::matmul_table(1);
    let mut ev = ReplayEvaluator::new(&table);
    let r = Tuner::new(table.space(), &mut ev)
        .budget(Budget::evals(10))
        .run(&mut Stubborn)
        .unwrap();
    assert_eq!(r.stop, StopReason::Stalled);
    assert_eq!(r.evaluations, 1);
}

/// The true best configuration is measured noisily the first time, cleanly afterwards.
struct NoisyFirst {
    first: bool,
    remeasures: usize,
}
impl Evaluator for NoisyFirst {
    fn evaluate(&mut self, c: &Config) -> Result<Measurement, EvalError> {
        let a = c.float("a").unwrap_or(1.0);
        if a == 1.0 && self.first {
            self.first = false;
            // mean 1.0 but CV ~ 0.5: a disturbed measurement
            return Ok(Measurement::from_times(vec![0.4, 1.6, 0.5, 1.5]));
        }
        Ok(Measurement::from_times(vec![a * 1.01, a * 0.99, a]))
    }
    fn remeasure(&mut self, c: &Config) -> Result<Measurement, EvalError> {
        self.remeasures += 1;
        self.evaluate(c)
    }
}

#[testkit::test]
fn stability_gating_remeasures_noisy_candidates() {
    let space = SearchSpace::builder()
        .param("a", [1, 2, 3, 4])
        .build()
        .unwrap();
    let mut ev = NoisyFirst {
        first: true,
        remeasures: 0,
    };
    let r = Tuner::new(&space, &mut ev)
        .budget(Budget::evals(4))
        .run(&mut rocm_tune::BruteForce)
        .unwrap();
    assert_eq!(ev.remeasures, 1);
    assert_eq!(r.remeasurements, 1);
    let best = r.best.unwrap();
    assert!(best.cv < 0.05, "the clean samples were kept: {}", best.cv);
    assert!(r.warnings.is_empty());

    // Without gating the noisy samples stand.
    let mut ev = NoisyFirst {
        first: true,
        remeasures: 0,
    };
    let r = Tuner::new(&space, &mut ev)
        .budget(Budget::evals(4))
        .stability(StabilityGate::disabled())
        .run(&mut rocm_tune::BruteForce)
        .unwrap();
    assert_eq!(ev.remeasures, 0);
    assert!(r.best.unwrap().cv > 0.4);

    // Always noisy: re-measured up to the limit, then flagged.
    struct AlwaysNoisy;
    impl Evaluator for AlwaysNoisy {
        fn evaluate(&mut self, _: &Config) -> Result<Measurement, EvalError> {
            Ok(Measurement::from_times(vec![0.5, 1.5, 1.0]))
        }
    }
    let r = Tuner::new(&space, &mut AlwaysNoisy)
        .budget(Budget::evals(1))
        .run(&mut rocm_tune::BruteForce)
        .unwrap();
    assert_eq!(r.remeasurements, StabilityGate::default().max_remeasures);
    assert!(r
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::UnstableMeasurement { .. })));

    // A configuration that fails when re-measured is treated as failed.
    struct FailsOnRetry;
    impl Evaluator for FailsOnRetry {
        fn evaluate(&mut self, _: &Config) -> Result<Measurement, EvalError> {
            Ok(Measurement::from_times(vec![0.5, 1.5, 1.0]))
        }
        fn remeasure(&mut self, _: &Config) -> Result<Measurement, EvalError> {
            Err(EvalError::WrongResult("flaky".into()))
        }
    }
    let r = Tuner::new(&space, &mut FailsOnRetry)
        .budget(Budget::evals(2))
        .run(&mut rocm_tune::BruteForce)
        .unwrap();
    assert!(r.best.is_none());
    assert!(r
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::FlakyConfiguration { .. })));
}

#[testkit::test]
fn regression_prune_warns_on_a_poor_fit() {
    // Times that do not depend on the parameters at all.
    struct Noise;
    impl Evaluator for Noise {
        fn evaluate(&mut self, c: &Config) -> Result<Measurement, EvalError> {
            let h = c.key().bytes().fold(1469598103934665603u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(1099511628211)
            });
            Ok(Measurement::from_times(vec![
                1.0 + (h % 1000) as f64 / 100.0,
            ]))
        }
    }
    let space = synthetic::matmul_space();
    let mut s = RegressionPrune::default();
    let r = Tuner::new(&space, &mut Noise)
        .budget(Budget::evals(60))
        .run(&mut s)
        .unwrap();
    assert!(r
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::PoorFit { .. })));
    assert!(s.last_fit.unwrap().heldout_r2 < 0.5);

    // On the synthetic model the fit is good and uses the static features.
    let mut dev = SyntheticMatmul::new(1, 5);
    let mut s = RegressionPrune::default();
    let r = Tuner::new(&space, &mut dev)
        .budget(Budget::evals(60))
        .seed(1)
        .run(&mut s)
        .unwrap();
    assert!(
        !r.warnings
            .iter()
            .any(|w| matches!(w, Warning::PoorFit { .. })),
        "{:?}",
        r.warnings
    );
    let fit = s.last_fit.unwrap();
    assert!(fit.heldout_r2 > 0.5, "{fit:?}");
    assert!(r.static_queries > 0);
}

#[testkit::test]
fn regression_prune_compiles_for_static_features_about_what_it_measures() {
    // Each static-feature query is a compile on a GPU; asking for the whole pruned set (four
    // times the budget: about 250 queries for 100 evaluations here) was most of the run's
    // time on an empty compile cache. Now: the parameter model's best, as many as the
    // evaluations left and at least `min_static_queries`.
    let space = synthetic::matmul_space();
    for seed in 1..=3 {
        let mut dev = SyntheticMatmul::new(1, 5);
        let mut s = RegressionPrune::default();
        let r = Tuner::new(&space, &mut dev)
            .budget(Budget::evals(100))
            .seed(seed)
            .run(&mut s)
            .unwrap();
        assert_eq!(r.evaluations, 100);
        assert!(
            r.static_queries > 0 && r.static_queries <= 160,
            "seed {seed}: {} static queries for 100 evaluations",
            r.static_queries
        );
    }
}

#[testkit::test]
fn random_sampling_scores_zero_on_average() {
    // End-to-end check of the closed-form expectation: the mean score of random sampling
    // over many seeds must be close to 0.
    let table = synthetic::matmul_table(4);
    let sorted = table.sorted_valid();
    let total = table.space().len();
    for k in [10, 40] {
        let e = expected_best_random(&sorted, total, k);
        let n = 400;
        let mut sum = 0.0;
        for seed in 0..n {
            let mut ev = ReplayEvaluator::new(&table);
            let r = Tuner::new(table.space(), &mut ev)
                .budget(Budget::evals(k))
                .seed(seed)
                .stability(StabilityGate::disabled())
                .run(&mut RandomSampling)
                .unwrap();
            let best = r
                .best
                .map(|b| table.entry(b.id).unwrap().objective().unwrap())
                .unwrap_or(*sorted.last().unwrap());
            sum += score(best, sorted[0], e);
        }
        let mean = sum / n as f64;
        assert!(
            mean.abs() < 0.12,
            "k={k}: mean score of random sampling {mean}"
        );
    }
}

#[testkit::test]
fn model_based_strategies_beat_random_on_the_synthetic_space() {
    let table: RecordedTable = synthetic::matmul_table(1);
    let factories: Vec<StrategyFactory> = vec![
        Box::new(|| Box::new(RandomSampling)),
        Box::new(|| Box::new(BayesianOptimization::default())),
        Box::new(|| Box::new(RegressionPrune::default())),
    ];
    let cfg = ScoreConfig {
        budgets: vec![40],
        seeds: (0..8).collect(),
        ..ScoreConfig::default()
    };
    let t = run_scores(&table, &factories, &cfg).unwrap();
    let by = |name: &str| {
        t.rows
            .iter()
            .find(|r| r.strategy == name)
            .unwrap()
            .mean_score
    };
    assert!(by("bayes") > by("random") + 0.2, "{t}");
    assert!(by("regression_prune") > by("random") + 0.2, "{t}");
    assert!(by("bayes") > 0.5 && by("regression_prune") > 0.5, "{t}");
}

#[testkit::test]
fn session_helpers() {
    struct Probe;
    impl Strategy for Probe {
        fn name(&self) -> String {
            "probe".into()
        }
        fn run(&mut self, s: &mut Session<'_>) -> Result<(), Stop> {
            assert_eq!(s.remaining(), Some(3));
            let id = s.random_unevaluated().ok_or(Stop::SpaceExhausted)?;
            let v = s.evaluate(id)?;
            assert!(s.is_evaluated(id));
            assert_eq!(s.objective(id), v);
            assert_eq!(s.remaining(), Some(2));
            // asking again is free
            s.evaluate(id)?;
            assert_eq!(s.evaluations(), 1);
            assert!(s.evaluate(ConfigId::clone(&id)).is_ok());
            Ok(())
        }
    }
    let table = synthetic::matmul_table(1);
    let mut ev = ReplayEvaluator::new(&table);
    let r = Tuner::new(table.space(), &mut ev)
        .budget(Budget::evals(3))
        .run(&mut Probe)
        .unwrap();
    assert_eq!(r.stop, StopReason::StrategyFinished);
    assert_eq!(r.evaluations, 1);
}

/// Records which configurations were announced before being evaluated.
struct Announced<'a> {
    inner: ReplayEvaluator<'a>,
    hinted: std::collections::HashSet<String>,
    evaluated: usize,
    announced_first: usize,
}

impl Evaluator for Announced<'_> {
    fn evaluate(&mut self, c: &Config) -> Result<Measurement, EvalError> {
        self.evaluated += 1;
        if self.hinted.contains(&c.key()) {
            self.announced_first += 1;
        }
        self.inner.evaluate(c)
    }
    fn static_features(&mut self, c: &Config) -> Option<Result<rocm_tune::Features, EvalError>> {
        self.inner.static_features(c)
    }
    fn prefetch(&mut self, upcoming: &[Config]) {
        self.hinted.extend(upcoming.iter().map(Config::key));
    }
}

#[testkit::test]
fn strategies_that_know_their_next_configurations_announce_them() {
    let table = synthetic::matmul_table(2);
    for (mut s, at_least) in [
        (Box::new(rocm_tune::BruteForce) as Box<dyn Strategy>, 1.0),
        (Box::new(RandomSampling), 1.0),
        (Box::new(rocm_tune::GeneticAlgorithm::default()), 0.9),
        (Box::new(rocm_tune::RegressionPrune::default()), 0.5),
    ] {
        let mut ev = Announced {
            inner: ReplayEvaluator::new(&table),
            hinted: Default::default(),
            evaluated: 0,
            announced_first: 0,
        };
        Tuner::new(table.space(), &mut ev)
            .budget(Budget::evals(60))
            .seed(3)
            .run(s.as_mut())
            .unwrap();
        let share = ev.announced_first as f64 / ev.evaluated as f64;
        assert!(share >= at_least, "{}: {share}", s.name());
    }
}

/// A space split into 3 slices, each brute-forced into a cache of its own (three jobs of an
/// array) and the caches merged, holds exactly what one unsplit brute force holds: every
/// configuration once, and the same best.
#[testkit::test]
fn a_space_split_in_three_and_merged_equals_the_unsplit_brute_force() {
    use rocm_tune::cache::{aggregate, merge, read, Aggregate};
    use rocm_tune::{BruteForce, CacheMeta, JsonlCache, Partition};
    let table = synthetic::matmul_table(3);
    let space = table.space();
    let dir = std::env::temp_dir().join(format!("rocm-tune-partition-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let brute = |partition: Option<Partition>, path: &std::path::Path| {
        let mut cache =
            JsonlCache::open(path, CacheMeta::for_space(space, Some("k"), None)).unwrap();
        let mut ev = ReplayEvaluator::new(&table);
        Tuner::new(space, &mut ev)
            .partition(partition)
            .cache(&mut cache)
            .run(&mut BruteForce)
            .unwrap()
    };
    let whole = brute(None, &dir.join("whole.jsonl"));
    assert_eq!(whole.evaluations, space.len());
    let mut parts = Vec::new();
    let mut sizes = Vec::new();
    for k in 1..=3 {
        let p = Partition::parse(&format!("{k}/3")).unwrap();
        let path = dir.join(format!("part{k}.jsonl"));
        let r = brute(Some(p), &path);
        assert_eq!(r.evaluations, p.len_of(space.len()), "slice {p}");
        assert!(
            r.trace.iter().all(|t| p.contains(t.id)),
            "slice {p} left its slice"
        );
        sizes.push(r.evaluations);
        parts.push(path);
    }
    assert_eq!(sizes.iter().sum::<usize>(), space.len());
    assert!(
        sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1,
        "{sizes:?}"
    );
    let merged = dir.join("merged.jsonl");
    let inputs: Vec<&std::path::Path> = parts.iter().map(|p| p.as_path()).collect();
    let report = merge(&inputs, &merged).unwrap();
    assert_eq!(report.conflicting_keys, 0);
    let keys = |path: &std::path::Path| {
        let mut k: Vec<String> = read(path)
            .unwrap()
            .records
            .into_iter()
            .map(|r| r.key)
            .collect();
        k.sort();
        k
    };
    let (merged_keys, whole_keys) = (keys(&merged), keys(&dir.join("whole.jsonl")));
    assert_eq!(merged_keys, whole_keys, "each configuration exactly once");
    // The best of the merged cache is the unsplit run's best.
    let records = read(&merged).unwrap().records;
    let best = records
        .iter()
        .filter_map(|r| match aggregate([r]) {
            Some(Aggregate::Ok { times, .. }) => Some((
                r.key.clone(),
                times.iter().sum::<f64>() / times.len() as f64,
            )),
            _ => None,
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap();
    let whole_best = whole.best.unwrap();
    assert_eq!(best.0, space.key(whole_best.id));
    assert!(Partition::parse("0/3")
        .unwrap_err()
        .contains("not a partition"));
    assert!(Partition::parse("4/3").is_err());
    assert_eq!(
        Partition::parse("2/3").unwrap().split(1, 2).to_string(),
        "4/6"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A model-based strategy with a partition draws its random seed configurations from its
/// slice, then searches the whole space.
#[testkit::test]
fn model_based_seed_phase_stays_in_its_slice() {
    use rocm_tune::Partition;
    let table = synthetic::matmul_table(2);
    let p = Partition::parse("2/4").unwrap();
    let mut ev = ReplayEvaluator::new(&table);
    let r = Tuner::new(table.space(), &mut ev)
        .budget(Budget::evals(40))
        .partition(Some(p))
        .seed(3)
        .run(&mut RegressionPrune::default())
        .unwrap();
    let first: Vec<ConfigId> = r.trace.iter().take(5).map(|t| t.id).collect();
    assert!(first.iter().all(|id| p.contains(*id)), "{first:?}");
    let mut ev = ReplayEvaluator::new(&table);
    let random = Tuner::new(table.space(), &mut ev)
        .partition(Some(p))
        .run(&mut RandomSampling)
        .unwrap();
    assert_eq!(random.evaluations, p.len_of(table.space().len()));
    assert!(random.trace.iter().all(|t| p.contains(t.id)));
}
