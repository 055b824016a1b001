//! Search strategies behind one trait.
//!
//! A strategy only decides *which* configuration to evaluate next; budgets, failures,
//! stability gating, caching and determinism are the [`Session`]'s job. All randomness comes
//! from [`Session::rng`], so a strategy is deterministic for a given seed (and evaluator
//! answers). Strategies return `Err(Stop)` from session calls with `?`; returning `Ok(())`
//! means the strategy has nothing more to try.

mod annealing;
mod bayes;
mod genetic;
mod regression;

pub use annealing::SimulatedAnnealing;
pub use bayes::BayesianOptimization;
pub use genetic::GeneticAlgorithm;
pub use regression::{FitReport, RegressionPrune};

use crate::space::ConfigId;
use crate::tuner::{Session, Stop};

/// A search strategy.
pub trait Strategy {
    /// Short name used in reports (`"random"`, `"bayes"`, ...).
    fn name(&self) -> String;

    /// Runs until done or until a session call returns `Err(Stop)`.
    fn run(&mut self, session: &mut Session<'_>) -> Result<(), Stop>;
}

/// Evaluates every configuration in enumeration order (Kernel Tuner's `brute_force`). With a
/// budget it evaluates a prefix of the space, which is a poor sample: it is here as the
/// reference that produces full tables, not as a competitor.
#[derive(Debug, Clone, Default)]
pub struct BruteForce;

impl Strategy for BruteForce {
    fn name(&self) -> String {
        "brute_force".into()
    }
    fn run(&mut self, session: &mut Session<'_>) -> Result<(), Stop> {
        let space = session.space();
        // With a partition, only this run's slice: the other jobs evaluate the rest.
        let ids: Vec<ConfigId> = space.ids().filter(|id| session.in_slice(*id)).collect();
        for (i, &id) in ids.iter().enumerate() {
            // A window that moves with each evaluation: the compile of the one `PREFETCH`
            // ahead starts now, not when a whole batch is done.
            session.prefetch(&ids[i..(i + PREFETCH).min(ids.len())]);
            session.evaluate(id)?;
        }
        Ok(())
    }
}

/// Uniform random sampling without replacement: the baseline every other strategy must beat
/// (the score in [`crate::score`] is measured against its expected result).
#[derive(Debug, Clone, Default)]
pub struct RandomSampling;

impl Strategy for RandomSampling {
    fn name(&self) -> String {
        "random".into()
    }
    fn run(&mut self, session: &mut Session<'_>) -> Result<(), Stop> {
        // The next `PREFETCH` draws stay announced ahead of the one evaluated: each compile
        // starts `PREFETCH` evaluations before it is needed (in batches, the first of each
        // batch waited for a whole compile).
        let mut window: std::collections::VecDeque<ConfigId> = Default::default();
        loop {
            // With a partition, random sampling covers this run's slice and no more.
            if session.partition().is_some() && session.slice_exhausted() && window.is_empty() {
                return Err(Stop::SpaceExhausted);
            }
            let room = session
                .remaining()
                .unwrap_or(PREFETCH)
                .min(PREFETCH)
                .saturating_sub(window.len())
                // One more draw when none is left: evaluating it says why the run stops.
                .max(usize::from(window.is_empty()));
            if room > 0 {
                let pending: Vec<ConfigId> = window.iter().copied().collect();
                let more = session.random_unevaluated_excluding(room, &pending);
                window.extend(more);
                let ahead: Vec<ConfigId> = window.iter().copied().collect();
                session.prefetch(&ahead);
            }
            let Some(id) = window.pop_front() else {
                return Err(Stop::SpaceExhausted);
            };
            session.evaluate(id)?;
        }
    }
}

/// Evaluates `n` random not-yet-evaluated configurations (initial designs of model-based
/// strategies).
pub(crate) fn evaluate_random(session: &mut Session<'_>, n: usize) -> Result<(), Stop> {
    let batch = session.random_unevaluated_batch(n);
    if batch.len() < n && batch.is_empty() {
        return Err(Stop::SpaceExhausted);
    }
    session.prefetch(&batch);
    for &id in &batch {
        session.evaluate(id)?;
    }
    if batch.len() < n {
        return Err(Stop::SpaceExhausted);
    }
    Ok(())
}

/// How many configurations strategies announce ahead ([`Session::prefetch`]) when they know
/// their next ones: with about 20 ms an evaluation on the H100 and compiles of 0.1–0.3 s
/// running side by side, 16 ahead keep the compiles ahead of the measurements (docs/tune.md).
pub(crate) const PREFETCH: usize = 16;

/// The names of [`default_strategies`], in their order: what [`by_name`] knows and what
/// `cargo rocm tune --strategy` accepts (the one list of them; help texts and errors are made
/// from it).
pub const NAMES: [&str; 6] = [
    "brute_force",
    "random",
    "annealing",
    "genetic",
    "bayes",
    "regression_prune",
];

/// The strategy a campaign runs when none is named.
pub const DEFAULT: &str = "regression_prune";

/// Every strategy with default settings, in a fixed order.
pub fn default_strategies() -> Vec<Box<dyn Strategy>> {
    vec![
        Box::new(BruteForce),
        Box::new(RandomSampling),
        Box::new(SimulatedAnnealing::default()),
        Box::new(GeneticAlgorithm::default()),
        Box::new(BayesianOptimization::default()),
        Box::new(RegressionPrune::default()),
    ]
}

/// A strategy by its [`Strategy::name`], with default settings.
pub fn by_name(name: &str) -> Option<Box<dyn Strategy>> {
    default_strategies().into_iter().find(|s| s.name() == name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_list_of_names_is_the_strategies_names() {
        let names: Vec<String> = super::default_strategies()
            .iter()
            .map(|s| s.name())
            .collect();
        assert_eq!(names, super::NAMES);
        assert!(super::NAMES.contains(&super::DEFAULT));
    }
}
