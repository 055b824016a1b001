//! A generational genetic algorithm over value indices.

use crate::space::ConfigId;
use crate::tuner::{Session, Stop};

use super::Strategy;

/// A generational genetic algorithm on value indices.
///
/// Population of `population` configurations (fewer for small budgets: a third of the budget,
/// at least 4, so that several generations happen). Each generation keeps the `elites` best,
/// then fills up with children: parents by tournament of `tournament`, uniform crossover with
/// probability `crossover_rate`, then each gene mutates with probability `mutation_rate`
/// (default `1 / number of parameters`) to the neighbouring value (70 %) or any value (30 %).
/// Children outside the restricted space, or already evaluated, are re-mutated a few times,
/// then replaced by a random unevaluated configuration so every child brings new information.
/// Failed configurations have infinite cost: they never win a tournament against a valid one.
#[derive(Debug, Clone)]
pub struct GeneticAlgorithm {
    /// Population size cap (default 20).
    pub population: usize,
    /// Survivors per generation (default 2).
    pub elites: usize,
    /// Tournament size (default 3).
    pub tournament: usize,
    /// Crossover probability (default 0.9).
    pub crossover_rate: f64,
    /// Per-gene mutation probability; `None` = 1 / number of parameters.
    pub mutation_rate: Option<f64>,
}

impl Default for GeneticAlgorithm {
    fn default() -> Self {
        GeneticAlgorithm {
            population: 20,
            elites: 2,
            tournament: 3,
            crossover_rate: 0.9,
            mutation_rate: None,
        }
    }
}

fn cost(session: &Session<'_>, id: ConfigId) -> f64 {
    session.objective(id).unwrap_or(f64::INFINITY)
}

impl GeneticAlgorithm {
    fn select(&self, session: &mut Session<'_>, pop: &[ConfigId]) -> ConfigId {
        let mut best = pop[session.rng().below(pop.len())];
        for _ in 1..self.tournament.max(1) {
            let c = pop[session.rng().below(pop.len())];
            if cost(session, c) < cost(session, best) {
                best = c;
            }
        }
        best
    }

    fn mutate(&self, session: &mut Session<'_>, genes: &mut [usize], rate: f64) {
        let space = session.space();
        for (p, g) in genes.iter_mut().enumerate() {
            if !session.rng().chance(rate) {
                continue;
            }
            let n = space.values(p).len();
            if n < 2 {
                continue;
            }
            if session.rng().chance(0.7) {
                *g = if *g == 0 {
                    1
                } else if *g + 1 >= n || session.rng().chance(0.5) {
                    *g - 1
                } else {
                    *g + 1
                };
            } else {
                *g = session.rng().below(n);
            }
        }
    }

    fn child(
        &self,
        session: &mut Session<'_>,
        pop: &[ConfigId],
        taken: &[ConfigId],
        rate: f64,
    ) -> Result<ConfigId, Stop> {
        let space = session.space();
        let a = space.indices(self.select(session, pop));
        let b = space.indices(self.select(session, pop));
        let mut genes = a.clone();
        if session.rng().chance(self.crossover_rate) {
            for (p, g) in genes.iter_mut().enumerate() {
                if session.rng().chance(0.5) {
                    *g = b[p];
                }
            }
        }
        for attempt in 0..20 {
            // Ensure at least one change when the child equals a parent (or keeps failing).
            let r = if attempt == 0 { rate } else { rate.max(0.5) };
            self.mutate(session, &mut genes, r);
            if let Some(id) = space.find_indices(&genes) {
                if !session.is_evaluated(id) && !taken.contains(&id) {
                    return Ok(id);
                }
            } else {
                genes.clone_from(&a);
            }
        }
        session.random_unevaluated().ok_or(Stop::SpaceExhausted)
    }
}

impl Strategy for GeneticAlgorithm {
    fn name(&self) -> String {
        "genetic".into()
    }

    fn run(&mut self, session: &mut Session<'_>) -> Result<(), Stop> {
        let space = session.space();
        let size = match session.remaining() {
            Some(b) => self.population.min((b / 3).max(4)),
            None => self.population,
        }
        .max(2);
        let rate = self
            .mutation_rate
            .unwrap_or(1.0 / space.num_params().max(1) as f64);
        let mut pop = session.random_unevaluated_batch(size);
        if pop.is_empty() {
            return Err(Stop::SpaceExhausted);
        }
        session.prefetch(&pop);
        for &id in &pop {
            session.evaluate(id)?;
        }
        loop {
            pop.sort_by(|&a, &b| cost(session, a).total_cmp(&cost(session, b)));
            let mut next: Vec<ConfigId> = pop.iter().copied().take(self.elites.min(size)).collect();
            let elites = next.len();
            // The whole generation is bred first, so its compiles can start together.
            while next.len() < size {
                let id = self.child(session, &pop, &next, rate)?;
                next.push(id);
            }
            session.prefetch(&next[elites..]);
            for &id in &next[elites..] {
                session.evaluate(id)?;
            }
            pop = next;
        }
    }
}
