//! Scoring strategies against random sampling on a recorded table.
//!
//! # The score
//!
//! Let the table hold `M` configurations of which `N` are valid, with sorted objectives
//! `t₁ ≤ t₂ ≤ … ≤ t_N` (lower is better; failed configurations are never "best"). Random
//! sampling *without replacement* with budget `k` draws a uniformly random `k`-subset of the
//! `M` configurations and returns its best valid one. The probability that none of the `i−1`
//! best valid configurations is drawn is
//!
//! ```text
//! S_i = P(best rank ≥ i) = C(M − i + 1, k) / C(M, k)
//!     = ∏_{j=0}^{i−2} (M − j − k) / (M − j)          (S₁ = 1; S_i = 0 once M − i + 1 < k)
//! ```
//!
//! so the expected best value is exactly
//!
//! ```text
//! E_k = Σ_i t_i (S_i − S_{i+1}) = t₁ + Σ_{i=2}^{N} (t_i − t_{i−1}) · S_i
//! ```
//!
//! (an order-statistics closed form, computed in O(N) with the product recurrence; no
//! simulation). When the sample contains no valid configuration at all (probability
//! `S_{N+1}`), the convention is that the result counts as the worst valid value `t_N`; a
//! strategy run that finds nothing valid is scored the same way.
//!
//! A run with best found value `b` scores
//!
//! ```text
//! score = (b − E_k) / (t₁ − E_k)
//! ```
//!
//! 1 = found the optimum, 0 = as good as random sampling on average at the same budget,
//! negative = worse than random. `b` is the *table's* value for the configuration the strategy
//! returned (not its own noisy measurement), so every strategy is judged on the same truth.
//! If `E_k = t₁` (the budget covers the whole space), the score is 1 for the optimum and 0
//! otherwise.

use std::fmt;
use std::time::Instant;

use serde::Serialize;

use crate::replay::{RecordedTable, ReplayEvaluator};
use crate::strategy::Strategy;
use crate::tuner::{Budget, StabilityGate, TuneError, Tuner};

/// Expected best (lowest) value of random sampling without replacement with budget `k`, from
/// the ascending valid values `sorted` among `total` configurations (see the module docs).
pub fn expected_best_random(sorted: &[f64], total: usize, k: usize) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let total = total.max(n);
    let k = k.min(total);
    if k == 0 {
        return sorted[n - 1];
    }
    let (m, kf) = (total as f64, k as f64);
    let mut e = sorted[0];
    let mut s = 1.0; // S_1
    for i in 2..=n {
        // S_i = S_{i-1} * (M - (i-2) - k) / (M - (i-2))
        let j = (i - 2) as f64;
        let num = m - j - kf;
        s = if num <= 0.0 { 0.0 } else { s * num / (m - j) };
        if s == 0.0 {
            break;
        }
        e += (sorted[i - 1] - sorted[i - 2]) * s;
    }
    e
}

/// `(best − expected) / (optimum − expected)`; see the module docs.
pub fn score(best_found: f64, optimum: f64, expected_random: f64) -> f64 {
    let denom = optimum - expected_random;
    if denom.abs() <= f64::EPSILON * expected_random.abs().max(1.0) {
        return if best_found <= optimum { 1.0 } else { 0.0 };
    }
    (best_found - expected_random) / denom
}

/// One line of the table: a strategy at one budget over all seeds.
#[derive(Debug, Clone, Serialize)]
pub struct ScoreRow {
    /// Strategy name.
    pub strategy: String,
    /// Evaluation budget.
    pub budget: usize,
    /// Number of seeds run.
    pub seeds: usize,
    /// Mean score.
    pub mean_score: f64,
    /// Standard deviation of the score over seeds.
    pub sd_score: f64,
    /// Seeds whose best was within `within` (relative) of the optimum.
    pub within: usize,
    /// Mean fraction of the space evaluated.
    pub fraction_evaluated: f64,
    /// Mean failed evaluations per run.
    pub mean_failures: f64,
    /// Mean re-measurements per run (stability gating).
    pub mean_remeasurements: f64,
    /// Mean compile-only static-feature queries per run (not counted in the budget).
    pub mean_static_queries: f64,
    /// Runs that emitted a poor-fit warning.
    pub poor_fit_runs: usize,
    /// Mean wall time of a run (milliseconds, replay only: strategy overhead).
    pub mean_ms: f64,
}

/// The full table.
#[derive(Debug, Clone, Serialize)]
pub struct ScoreTable {
    /// Configurations in the table.
    pub total: usize,
    /// Valid configurations.
    pub valid: usize,
    /// Best objective.
    pub optimum: f64,
    /// Tolerance used for [`ScoreRow::within`].
    pub within_tolerance: f64,
    /// `(budget, expected best of random sampling)`.
    pub random_expectation: Vec<(usize, f64)>,
    /// Rows, strategy-major.
    pub rows: Vec<ScoreRow>,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct ScoreConfig {
    /// Evaluation budgets (default 20, 50, 100).
    pub budgets: Vec<usize>,
    /// Seeds (default 0..20).
    pub seeds: Vec<u64>,
    /// Relative tolerance for "near the optimum" (default 0.05).
    pub within: f64,
    /// Stability gating during the runs (default on).
    pub stability: StabilityGate,
}

impl Default for ScoreConfig {
    fn default() -> Self {
        ScoreConfig {
            budgets: vec![20, 50, 100],
            seeds: (0..20).collect(),
            within: 0.05,
            stability: StabilityGate::default(),
        }
    }
}

/// A named strategy factory (each run gets a fresh strategy).
pub type StrategyFactory = Box<dyn Fn() -> Box<dyn Strategy>>;

/// Runs every strategy × budget × seed on `table` and scores the results.
pub fn run_scores(
    table: &RecordedTable,
    strategies: &[StrategyFactory],
    cfg: &ScoreConfig,
) -> Result<ScoreTable, TuneError> {
    let sorted = table.sorted_valid();
    let total = table.space().len();
    let optimum = sorted.first().copied().unwrap_or(f64::NAN);
    let worst = sorted.last().copied().unwrap_or(f64::NAN);
    let mut rows = Vec::new();
    for make in strategies {
        for &budget in &cfg.budgets {
            let expected = expected_best_random(&sorted, total, budget);
            let mut scores = Vec::new();
            let (mut within, mut evals, mut fails, mut remeas, mut poor, mut ms) =
                (0, 0.0, 0.0, 0.0, 0, 0.0);
            let mut statics = 0.0;
            let mut name = String::new();
            for &seed in &cfg.seeds {
                let mut strategy = make();
                name = strategy.name();
                let mut ev = ReplayEvaluator::new(table);
                let t0 = Instant::now();
                let r = Tuner::new(table.space(), &mut ev)
                    .budget(Budget::evals(budget))
                    .seed(seed)
                    .stability(cfg.stability)
                    .run(strategy.as_mut())?;
                ms += t0.elapsed().as_secs_f64() * 1e3;
                let best = r
                    .best
                    .as_ref()
                    .and_then(|b| table.entry(b.id))
                    .and_then(|e| e.objective())
                    .unwrap_or(worst);
                scores.push(score(best, optimum, expected));
                if best <= optimum * (1.0 + cfg.within) {
                    within += 1;
                }
                evals += r.evaluations as f64 / total as f64;
                fails += r.failures as f64;
                remeas += r.remeasurements as f64;
                statics += r.static_queries as f64;
                if r.warnings
                    .iter()
                    .any(|w| matches!(w, crate::tuner::Warning::PoorFit { .. }))
                {
                    poor += 1;
                }
            }
            let n = scores.len().max(1) as f64;
            let mean_score = scores.iter().sum::<f64>() / n;
            let sd_score =
                (scores.iter().map(|s| (s - mean_score).powi(2)).sum::<f64>() / n).sqrt();
            rows.push(ScoreRow {
                strategy: name,
                budget,
                seeds: scores.len(),
                mean_score,
                sd_score,
                within,
                fraction_evaluated: evals / n,
                mean_failures: fails / n,
                mean_remeasurements: remeas / n,
                mean_static_queries: statics / n,
                poor_fit_runs: poor,
                mean_ms: ms / n,
            });
        }
    }
    Ok(ScoreTable {
        total,
        valid: sorted.len(),
        optimum,
        within_tolerance: cfg.within,
        random_expectation: cfg
            .budgets
            .iter()
            .map(|&b| (b, expected_best_random(&sorted, total, b)))
            .collect(),
        rows,
    })
}

impl fmt::Display for ScoreTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "space: {} configurations, {} valid, optimum {:.4}",
            self.total, self.valid, self.optimum
        )?;
        for (b, e) in &self.random_expectation {
            writeln!(
                f,
                "expected best of random sampling at k={b}: {e:.4} ({:+.1}% vs optimum)",
                100.0 * (e / self.optimum - 1.0)
            )?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "| strategy | budget | mean score | sd | within {:.0}% | space evaluated | failures/run | remeasures/run | static queries/run | poor fit | ms/run |",
            100.0 * self.within_tolerance
        )?;
        writeln!(f, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")?;
        for r in &self.rows {
            writeln!(
                f,
                "| {} | {} | {:.3} | {:.3} | {}/{} | {:.1}% | {:.1} | {:.1} | {:.1} | {} | {:.1} |",
                r.strategy,
                r.budget,
                r.mean_score,
                r.sd_score,
                r.within,
                r.seeds,
                100.0 * r.fraction_evaluated,
                r.mean_failures,
                r.mean_remeasurements,
                r.mean_static_queries,
                r.poor_fit_runs,
                r.mean_ms
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact expectation by enumerating all k-subsets (small cases only).
    fn brute_expectation(values: &[Option<f64>], k: usize) -> f64 {
        let m = values.len();
        let worst = values
            .iter()
            .flatten()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let (mut sum, mut count) = (0.0, 0.0);
        for mask in 0u32..(1 << m) {
            if mask.count_ones() as usize != k {
                continue;
            }
            let best = (0..m)
                .filter(|i| mask & (1 << i) != 0)
                .filter_map(|i| values[i])
                .fold(f64::INFINITY, f64::min);
            sum += if best.is_finite() { best } else { worst };
            count += 1.0;
        }
        sum / count
    }

    #[test]
    fn closed_form_matches_enumeration() {
        let values = [
            Some(5.0),
            None,
            Some(1.0),
            Some(3.0),
            None,
            Some(2.5),
            Some(9.0),
            Some(2.0),
            None,
            Some(4.0),
        ];
        let mut sorted: Vec<f64> = values.iter().flatten().copied().collect();
        sorted.sort_by(f64::total_cmp);
        for k in 1..=values.len() {
            let want = brute_expectation(&values, k);
            let got = expected_best_random(&sorted, values.len(), k);
            assert!((want - got).abs() < 1e-12, "k={k}: {want} vs {got}");
        }
        // k = 1 without failures is the plain mean
        assert!((expected_best_random(&[1.0, 2.0, 3.0], 3, 1) - 2.0).abs() < 1e-12);
        assert_eq!(expected_best_random(&[1.0, 2.0, 3.0], 3, 3), 1.0);
    }

    #[test]
    fn score_endpoints() {
        assert_eq!(score(1.0, 1.0, 2.0), 1.0);
        assert_eq!(score(2.0, 1.0, 2.0), 0.0);
        assert!(score(3.0, 1.0, 2.0) < 0.0);
        assert_eq!(score(1.0, 1.0, 1.0), 1.0);
        assert_eq!(score(1.5, 1.0, 1.0), 0.0);
    }
}
