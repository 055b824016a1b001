//! Bayesian optimisation: a Gaussian process on log-times and expected improvement.

use std::collections::HashSet;

use crate::encode::{quadratic_design, Feasibility, FeatureEncoder};
use crate::linalg::{cho_solve, cholesky_jittered, normal_cdf, normal_pdf, solve_lower};
use crate::space::{ConfigId, Neighborhood};
use crate::tuner::{Session, Stop};

use super::{evaluate_random, Strategy};

/// Bayesian optimisation: a Gaussian-process surrogate of `ln(time)` and expected improvement
/// maximised over the discrete space.
///
/// - Inputs are [`FeatureEncoder`] vectors (log2 for power-of-two parameters, `[0,1]` scaled).
/// - The target is `ln(objective)`, standardised: kernel times span orders of magnitude and
///   their differences are multiplicative, which a stationary GP models better in logs.
/// - Failed configurations have no time. Giving them a bad value distorts the surface next to
///   them, and failure regions often border the optimum (the largest tiles that still fit):
///   in tests on the synthetic matmul space that made some runs avoid the optimum's
///   neighbourhood altogether. Instead, the GP is fitted on valid points, then refitted with
///   each failure added at the first fit's own mean ("believer" points: the surface is
///   unchanged but the uncertainty there collapses, so the failure is not proposed again as
///   unexplored), and EI is multiplied by a [`Feasibility`] estimate of the probability of
///   success (constrained EI).
/// - Kernel: Matérn 5/2 with one length scale; length scale and noise are chosen each
///   iteration by maximum marginal likelihood over the grids `lengthscales` × `noise_levels`
///   (a grid search is cheap at these sizes and never fails to converge).
/// - Acquisition: expected improvement with exploration margin `xi`, over all unevaluated
///   configurations when there are at most `max_candidates`, else over `max_candidates`
///   random ones plus the neighbours of the five best so far. Ties go to the lower id, so runs
///   are deterministic.
/// - `initial_samples` random configurations start the model (default: budget / 5, clamped to
///   5..=15; 10 without an evaluation budget).
#[derive(Debug, Clone)]
pub struct BayesianOptimization {
    /// Random initial design size; `None` = automatic.
    pub initial_samples: Option<usize>,
    /// Candidate cap per iteration (default 2048).
    pub max_candidates: usize,
    /// EI exploration margin in standardised units (default 0.01).
    pub xi: f64,
    /// Length-scale grid in encoded units (default 0.15 … 1.6).
    pub lengthscales: Vec<f64>,
    /// Noise-variance grid relative to the signal variance (default 1e-4, 1e-2, 0.1).
    pub noise_levels: Vec<f64>,
}

impl Default for BayesianOptimization {
    fn default() -> Self {
        BayesianOptimization {
            initial_samples: None,
            max_candidates: 2048,
            xi: 0.01,
            lengthscales: vec![0.15, 0.25, 0.4, 0.6, 1.0, 1.6],
            noise_levels: vec![1e-4, 1e-2, 0.1],
        }
    }
}

fn matern52(a: &[f64], b: &[f64], ell: f64) -> f64 {
    let d2: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
    let r = d2.sqrt() / ell;
    let s5r = 5f64.sqrt() * r;
    (1.0 + s5r + 5.0 * r * r / 3.0) * (-s5r).exp()
}

/// A fitted GP (standardised targets, unit signal variance).
struct Gp {
    x: Vec<Vec<f64>>,
    l: Vec<f64>,
    alpha: Vec<f64>,
    ell: f64,
    noise: f64,
}

impl Gp {
    fn fit(x: Vec<Vec<f64>>, y: &[f64], ells: &[f64], noises: &[f64]) -> Option<Gp> {
        let n = x.len();
        let mut best: Option<(f64, Gp)> = None;
        for &ell in ells {
            let mut k = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..=i {
                    let v = matern52(&x[i], &x[j], ell);
                    k[i * n + j] = v;
                    k[j * n + i] = v;
                }
            }
            for &noise in noises {
                let mut kn = k.clone();
                for i in 0..n {
                    kn[i * n + i] += noise;
                }
                let Some(l) = cholesky_jittered(&kn, n) else {
                    continue;
                };
                let alpha = cho_solve(&l, n, y);
                let fit: f64 = y.iter().zip(&alpha).map(|(a, b)| a * b).sum();
                let logdet: f64 = (0..n).map(|i| l[i * n + i].ln()).sum();
                let lml = -0.5 * fit - logdet;
                if lml.is_finite() && best.as_ref().is_none_or(|(b, _)| lml > *b) {
                    best = Some((
                        lml,
                        Gp {
                            x: Vec::new(),
                            l,
                            alpha,
                            ell,
                            noise,
                        },
                    ));
                }
            }
        }
        best.map(|(_, mut gp)| {
            gp.x = x;
            gp
        })
    }

    fn predict(&self, q: &[f64]) -> (f64, f64) {
        let n = self.x.len();
        let ks: Vec<f64> = self.x.iter().map(|xi| matern52(xi, q, self.ell)).collect();
        let mu: f64 = ks.iter().zip(&self.alpha).map(|(a, b)| a * b).sum();
        let v = solve_lower(&self.l, n, &ks);
        let var = (1.0 - v.iter().map(|x| x * x).sum::<f64>()).max(1e-12);
        (mu, var.sqrt())
    }
}

/// `ln EI` for minimisation. Computed in log space because far from the incumbent EI
/// underflows to exactly 0 for most candidates; a plain comparison would then fall back on the
/// tie-break (lowest id) and degenerate into a brute-force prefix scan.
fn log_expected_improvement(mu: f64, sigma: f64, best: f64, xi: f64) -> f64 {
    let z = (best - mu - xi) / sigma;
    // EI = sigma * tau(z), tau(z) = z Phi(z) + phi(z)
    let log_tau = if z > -6.0 {
        (z * normal_cdf(z) + normal_pdf(z)).max(1e-300).ln()
    } else {
        // Asymptotic expansion (Mills ratio): tau(z) ~ phi(z) / z^2 * (1 - 3/z^2 + 15/z^4)
        let z2 = z * z;
        -0.5 * z2 - 0.5 * (2.0 * std::f64::consts::PI).ln() - z2.ln()
            + (1.0 - 3.0 / z2 + 15.0 / (z2 * z2)).ln()
    };
    sigma.ln() + log_tau
}

impl BayesianOptimization {
    fn candidates(&self, session: &mut Session<'_>) -> Vec<ConfigId> {
        let space = session.space();
        let left = space.len() - session.evaluations();
        if left <= self.max_candidates {
            return space
                .ids()
                .filter(|&id| !session.is_evaluated(id))
                .collect();
        }
        let mut set = HashSet::new();
        let mut out = Vec::new();
        let mut ranked: Vec<(ConfigId, f64)> = session
            .evaluated()
            .iter()
            .filter_map(|&id| session.objective(id).map(|v| (id, v)))
            .collect();
        ranked.sort_by(|a, b| a.1.total_cmp(&b.1));
        for (id, _) in ranked.into_iter().take(5) {
            for n in space.neighbors(id, Neighborhood::Adjacent) {
                if !session.is_evaluated(n) && set.insert(n) {
                    out.push(n);
                }
            }
        }
        let mut tries = 0;
        while out.len() < self.max_candidates && tries < self.max_candidates * 4 {
            tries += 1;
            let id = ConfigId(session.rng().below(space.len()));
            if !session.is_evaluated(id) && set.insert(id) {
                out.push(id);
            }
        }
        out
    }
}

impl Strategy for BayesianOptimization {
    fn name(&self) -> String {
        "bayes".into()
    }

    fn run(&mut self, session: &mut Session<'_>) -> Result<(), Stop> {
        let space = session.space();
        let enc = FeatureEncoder::new(space);
        let n_init = self.initial_samples.unwrap_or(match session.remaining() {
            Some(b) => (b / 5).clamp(5, 15),
            None => 10,
        });
        evaluate_random(session, n_init)?;
        loop {
            let evaluated: Vec<ConfigId> = session.evaluated().to_vec();
            let feas = {
                let mut rows = Vec::with_capacity(evaluated.len());
                let mut row = Vec::new();
                for &id in &evaluated {
                    quadratic_design(&enc, &enc.encode(space, id), &[], &mut row);
                    rows.push(row.clone());
                }
                let ok: Vec<bool> = evaluated
                    .iter()
                    .map(|&id| session.objective(id).is_some())
                    .collect();
                Feasibility::new(&rows, &ok)
            };
            let valid: Vec<(ConfigId, f64)> = evaluated
                .iter()
                .filter_map(|&id| session.objective(id).map(|v| (id, v.ln())))
                .collect();
            if valid.len() < 2 {
                // Nothing to model yet (all failures so far): keep sampling.
                evaluate_random(session, 1)?;
                continue;
            }
            let n = valid.len() as f64;
            let mean = valid.iter().map(|v| v.1).sum::<f64>() / n;
            let sd = (valid.iter().map(|v| (v.1 - mean).powi(2)).sum::<f64>() / n)
                .sqrt()
                .max(1e-9);
            let y: Vec<f64> = valid.iter().map(|v| (v.1 - mean) / sd).collect();
            let best_std = y.iter().copied().fold(f64::INFINITY, f64::min);
            let x: Vec<Vec<f64>> = valid.iter().map(|v| enc.encode(space, v.0)).collect();
            let cands = self.candidates(session);
            if cands.is_empty() {
                return Err(Stop::SpaceExhausted);
            }
            let failed: Vec<Vec<f64>> = evaluated
                .iter()
                .filter(|&&id| session.objective(id).is_none())
                .map(|&id| enc.encode(space, id))
                .collect();
            let gp = Gp::fit(x.clone(), &y, &self.lengthscales, &self.noise_levels).map(|gp| {
                if failed.is_empty() {
                    return gp;
                }
                // "Believer" points at failures (see the type's docs).
                let mut x2 = x.clone();
                let mut y2 = y.clone();
                for f in &failed {
                    let (mu, _) = gp.predict(f);
                    y2.push(mu);
                    x2.push(f.clone());
                }
                Gp::fit(x2, &y2, &[gp.ell], &[gp.noise]).unwrap_or(gp)
            });
            let next = match gp {
                Some(gp) => {
                    let mut q = Vec::with_capacity(enc.dim());
                    let mut design = Vec::new();
                    let mut best: Option<(ConfigId, f64)> = None;
                    for &c in &cands {
                        enc.encode_into(space, c, &mut q);
                        let (mu, sigma) = gp.predict(&q);
                        let mut ei = log_expected_improvement(mu, sigma, best_std, self.xi);
                        if feas.has_failures() {
                            quadratic_design(&enc, &q, &[], &mut design);
                            ei += feas.prob(&design).ln();
                        }
                        let better = match best {
                            None => true,
                            Some((bid, bei)) => ei > bei || (ei == bei && c < bid),
                        };
                        if better && ei.is_finite() {
                            best = Some((c, ei));
                        }
                    }
                    best.map(|(c, _)| c)
                }
                None => None,
            };
            match next {
                Some(id) => {
                    session.evaluate(id)?;
                }
                None => evaluate_random(session, 1)?,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gp_interpolates_and_is_uncertain_far_away() {
        let x = vec![vec![0.0], vec![0.5], vec![1.0]];
        let y = [-1.0, 0.5, 1.0];
        let gp = Gp::fit(x, &y, &[0.5], &[1e-6]).unwrap();
        let (m, s) = gp.predict(&[0.5]);
        assert!((m - 0.5).abs() < 1e-3 && s < 1e-2, "{m} {s}");
        let (_, far) = gp.predict(&[5.0]);
        assert!(far > 0.9, "{far}");
        let ei = |mu, s| log_expected_improvement(mu, s, 0.0, 0.0);
        assert!(ei(0.0, 1.0) > ei(0.0, 0.1));
        // far from the incumbent EI is astronomically small but still ordered
        assert!(ei(20.0, 1.0) > ei(30.0, 1.0) && ei(30.0, 1.0).is_finite());
        // continuity at the switch to the asymptotic form
        assert!(
            (ei(5.9999, 1.0) - ei(6.0001, 1.0)).abs() < 0.01,
            "{} {}",
            ei(5.9999, 1.0),
            ei(6.0001, 1.0)
        );
    }
}
