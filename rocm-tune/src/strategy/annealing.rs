//! Simulated annealing over neighbouring configurations.

use crate::space::{ConfigId, Neighborhood};
use crate::tuner::{Session, Stop};

use super::Strategy;

/// Simulated annealing over the neighbourhood graph of the space.
///
/// From the current configuration, a random [`Neighborhood::Adjacent`] neighbour is tried
/// (unevaluated neighbours preferred, with probability `prefer_new`, since known ones cost
/// nothing but teach nothing). A better neighbour is always accepted; a worse one with
/// probability `exp(-Δ/T)`, where `Δ` is the *relative* slowdown `(new - cur) / cur`, so the
/// temperature means the same for microsecond and millisecond kernels. The temperature falls
/// geometrically from `t_start` to `t_end` over the evaluation budget (or over
/// `schedule_length` evaluations without one). Failed configurations are never accepted. When
/// the walk makes `max_free_steps` moves in a row without evaluating anything new (a fully
/// explored basin), it restarts from a random unevaluated configuration.
#[derive(Debug, Clone)]
pub struct SimulatedAnnealing {
    /// Initial temperature (default 0.3: a 20 % slowdown is accepted with probability ~0.5).
    pub t_start: f64,
    /// Final temperature (default 0.005: practically greedy).
    pub t_end: f64,
    /// Probability of picking an unevaluated neighbour when there is one (default 0.9).
    pub prefer_new: f64,
    /// Free moves in a row before a restart (default 20).
    pub max_free_steps: usize,
    /// Schedule length when the budget has no evaluation limit (default 500).
    pub schedule_length: usize,
}

impl Default for SimulatedAnnealing {
    fn default() -> Self {
        SimulatedAnnealing {
            t_start: 0.3,
            t_end: 0.005,
            prefer_new: 0.9,
            max_free_steps: 20,
            schedule_length: 500,
        }
    }
}

impl SimulatedAnnealing {
    /// Evaluates random configurations until one is valid.
    fn start_point(session: &mut Session<'_>) -> Result<(ConfigId, f64), Stop> {
        loop {
            let id = session.random_unevaluated().ok_or(Stop::SpaceExhausted)?;
            if let Some(v) = session.evaluate(id)? {
                return Ok((id, v));
            }
        }
    }
}

impl Strategy for SimulatedAnnealing {
    fn name(&self) -> String {
        "annealing".into()
    }

    fn run(&mut self, session: &mut Session<'_>) -> Result<(), Stop> {
        let space = session.space();
        let total = session.remaining().unwrap_or(self.schedule_length).max(1) as f64;
        let start_evals = session.evaluations() as f64;
        let ratio = (self.t_end / self.t_start).max(1e-12);
        let (mut cur, mut cur_obj) = Self::start_point(session)?;
        let mut free = 0usize;
        loop {
            let progress = ((session.evaluations() as f64 - start_evals) / total).clamp(0.0, 1.0);
            let temp = self.t_start * ratio.powf(progress);
            let neighbors = space.neighbors(cur, Neighborhood::Adjacent);
            let fresh: Vec<ConfigId> = neighbors
                .iter()
                .copied()
                .filter(|&n| !session.is_evaluated(n))
                .collect();
            if neighbors.is_empty() || free >= self.max_free_steps {
                (cur, cur_obj) = Self::start_point(session)?;
                free = 0;
                continue;
            }
            let cand = if !fresh.is_empty() && session.rng().chance(self.prefer_new) {
                let i = session.rng().below(fresh.len());
                fresh[i]
            } else {
                let i = session.rng().below(neighbors.len());
                neighbors[i]
            };
            let known = session.is_evaluated(cand);
            let value = session.evaluate(cand)?;
            free = if known { free + 1 } else { 0 };
            let Some(v) = value else { continue };
            let delta = (v - cur_obj) / cur_obj;
            if delta <= 0.0 || session.rng().unit() < (-delta / temp).exp() {
                cur = cand;
                cur_obj = v;
            }
        }
    }
}
