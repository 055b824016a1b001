//! rocm-perf-lab's regression-and-prune flow: seed, fit, predict the whole space, prune, confirm.

use std::collections::{BTreeSet, HashSet};

use crate::encode::{quadratic_design, Feasibility, FeatureEncoder};
use crate::eval::Features;
use crate::linalg::{cho_solve, cholesky_jittered};
use crate::space::ConfigId;
use crate::tuner::{Session, StaticProbe, Stop, Warning};

use super::{evaluate_random, Strategy};

/// Regression-and-prune, after rocm-perf-lab's autotuner: *seed → fit → predict all → prune →
/// confirm*.
///
/// 1. **Seed**: `seed_fraction` of the evaluation budget (at least `min_seeds`; 30 without an
///    evaluation budget) goes to random configurations.
/// 2. **Fit**: ridge regression of `ln(time)` on the encoded parameters (log2 for powers of
///    two), their squares and pairwise products — a quadratic response surface in log space,
///    which captures "too small a tile is slow, too large spills" shapes. The ridge penalty is
///    chosen by leave-one-out error (closed form through the hat matrix), and the same
///    leave-one-out residuals give a **held-out R²** (`1 − PRESS / SS_tot`).
/// 3. **Predict** every unevaluated configuration of the space with the parameter model and
///    **prune** to the best `keep_fraction` (at least four times the remaining budget).
/// 4. **Static features**: if the evaluator returned static features (registers, LDS,
///    occupancy …) with the seed measurements, the survivors' features are fetched with
///    compile-only queries (at most `max_static_queries`; a survivor whose compile fails is
///    dropped, it would fail anyway), a second model on parameters + static features is
///    fitted, and it re-ranks the survivors if its held-out R² is at least as good.
/// 5. **Confirm**: the best-predicted survivors are measured in order; every `refit_every`
///    measurements the model is refitted on everything measured and the rest re-ranked. If
///    the survivors run out, the whole space is predicted again. Before a candidate is
///    measured, a compile-only query (`static_precheck`) rules it out without spending an
///    evaluation if compilation fails or the reported theoretical `occupancy` is 0 (it could
///    not launch) — rocm-perf-lab's "static-feature pruning".
///
/// When the held-out R² of the model in use is below `r2_warning`, a
/// [`Warning::PoorFit`] is emitted: the ranking is then barely better than random and the
/// result should not be trusted without a larger budget. The last fit is kept in
/// [`RegressionPrune::last_fit`]. Failed configurations are left out of the fit (their time is
/// unknown, not large); instead a [`Feasibility`] model of the probability of success is
/// fitted on all evaluations (and statically ruled-out candidates), and candidates below
/// `min_success_probability` are tried last. (Ranking by `t / p` instead was tried and avoided
/// failures better but scored worse: the optimum of a tiled kernel usually sits right at the
/// failure border, where `p` is middling.) With fewer than three valid seeds the strategy
/// falls back to random sampling and says so in a [`Warning::Note`].
#[derive(Debug, Clone)]
pub struct RegressionPrune {
    /// Share of the budget spent on random seeds (default 0.35).
    pub seed_fraction: f64,
    /// Minimum number of seeds (default 8).
    pub min_seeds: usize,
    /// Share of the space kept after pruning (default 0.1).
    pub keep_fraction: f64,
    /// Refit after this many confirm measurements (default 5).
    pub refit_every: usize,
    /// Held-out R² below which a warning is emitted (default 0.5).
    pub r2_warning: f64,
    /// Use static features when the evaluator provides them (default true).
    pub use_static_features: bool,
    /// Cap on compile-only queries used for re-ranking (default 512).
    pub max_static_queries: usize,
    /// Survivors re-ranked with static features: this multiple of the evaluations left after
    /// the seeds (default 1.0), at least `min_static_queries`, the parameter model's best.
    /// Each needs its compile, and on a GPU the compile, not the measurement, is what an
    /// evaluation waits for: re-ranking the whole pruned set (four times the budget) spent
    /// 5.6 of the 7.8 s of a 100-evaluation run on the H100 with an empty compile cache;
    /// most of the ones kept now are measured anyway. Replayed over the synthetic tables
    /// (30 seeds, 3 tables) the scores at 20/50/100 evaluations stay within their noise
    /// (docs/benchmarks.md).
    pub static_queries_per_evaluation: f64,
    /// The fewest survivors re-ranked with static features (default 80; see
    /// `static_queries_per_evaluation`): small budgets gain most from the re-ranking.
    pub min_static_queries: usize,
    /// Compile-only check of each candidate before measuring it (default true); see
    /// the type's docs.
    pub static_precheck: bool,
    /// Candidates whose predicted success probability is below this are tried last
    /// (default 0.2).
    pub min_success_probability: f64,
    /// The most recent fit (after a run).
    pub last_fit: Option<FitReport>,
}

impl RegressionPrune {
    /// A variant that never asks the evaluator for compile-only static features (neither for
    /// ranking nor for the pre-check), for budgets where compiling is as costly as measuring.
    pub fn params_only() -> Self {
        RegressionPrune {
            use_static_features: false,
            static_precheck: false,
            ..RegressionPrune::default()
        }
    }
}

impl Default for RegressionPrune {
    fn default() -> Self {
        RegressionPrune {
            seed_fraction: 0.35,
            min_seeds: 8,
            keep_fraction: 0.1,
            refit_every: 5,
            r2_warning: 0.5,
            use_static_features: true,
            max_static_queries: 512,
            static_queries_per_evaluation: 1.0,
            min_static_queries: 80,
            static_precheck: true,
            min_success_probability: 0.2,
            last_fit: None,
        }
    }
}

/// Diagnostics of a regression fit.
#[derive(Debug, Clone, PartialEq)]
pub struct FitReport {
    /// Leave-one-out R² on the training points.
    pub heldout_r2: f64,
    /// Training points (valid measurements).
    pub n_train: usize,
    /// Ridge penalty chosen.
    pub lambda: f64,
    /// Static feature names used (empty: parameters only).
    pub static_features: Vec<String>,
}

/// Ridge regression with standardised columns and an unpenalised intercept.
#[derive(Debug, Clone)]
pub(crate) struct Ridge {
    mean: Vec<f64>,
    scale: Vec<f64>,
    beta: Vec<f64>,
    pub q2: f64,
    pub lambda: f64,
}

impl Ridge {
    /// Fits `y ~ rows`; picks the penalty with the smallest leave-one-out error. `None` with
    /// fewer than 3 rows or a singular system.
    pub fn fit(rows: &[Vec<f64>], y: &[f64]) -> Option<Ridge> {
        let n = rows.len();
        if n < 3 || y.len() != n {
            return None;
        }
        let d = rows[0].len();
        let mut mean = vec![0.0; d];
        let mut scale = vec![1.0; d];
        for j in 0..d {
            mean[j] = rows.iter().map(|r| r[j]).sum::<f64>() / n as f64;
            let var = rows.iter().map(|r| (r[j] - mean[j]).powi(2)).sum::<f64>() / n as f64;
            scale[j] = if var > 1e-18 { var.sqrt() } else { 1.0 };
        }
        let p = d + 1;
        let x: Vec<Vec<f64>> = rows
            .iter()
            .map(|r| {
                let mut v = Vec::with_capacity(p);
                v.push(1.0);
                v.extend((0..d).map(|j| (r[j] - mean[j]) / scale[j]));
                v
            })
            .collect();
        let mut xtx = vec![0.0; p * p];
        let mut xty = vec![0.0; p];
        for (row, &yi) in x.iter().zip(y) {
            for a in 0..p {
                xty[a] += row[a] * yi;
                for b in 0..p {
                    xtx[a * p + b] += row[a] * row[b];
                }
            }
        }
        let ybar = y.iter().sum::<f64>() / n as f64;
        let sst: f64 = y.iter().map(|v| (v - ybar).powi(2)).sum();
        let mut best: Option<Ridge> = None;
        let mut best_press = f64::INFINITY;
        for lambda in [1e-3, 1e-2, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0] {
            let mut a = xtx.clone();
            a[0] += 1e-9;
            for j in 1..p {
                a[j * p + j] += lambda;
            }
            let Some(l) = cholesky_jittered(&a, p) else {
                continue;
            };
            let beta = cho_solve(&l, p, &xty);
            let mut press = 0.0;
            for (row, &yi) in x.iter().zip(y) {
                let pred: f64 = row.iter().zip(&beta).map(|(a, b)| a * b).sum();
                let h: f64 = row
                    .iter()
                    .zip(cho_solve(&l, p, row))
                    .map(|(a, b)| a * b)
                    .sum();
                let denom = (1.0 - h).max(1e-6);
                press += ((yi - pred) / denom).powi(2);
            }
            if press < best_press {
                best_press = press;
                let q2 = if sst > 0.0 { 1.0 - press / sst } else { 0.0 };
                best = Some(Ridge {
                    mean: mean.clone(),
                    scale: scale.clone(),
                    beta,
                    q2,
                    lambda,
                });
            }
        }
        best
    }

    pub fn predict(&self, row: &[f64]) -> f64 {
        let coef = self.beta.iter().skip(1);
        let cols = row.iter().zip(&self.mean).zip(&self.scale);
        self.beta.first().copied().unwrap_or(0.0)
            + coef
                .zip(cols)
                .map(|(b, ((v, m), sc))| b * (v - m) / sc)
                .sum::<f64>()
    }
}

fn design(enc: &FeatureEncoder, base: &[f64], statics: &[f64], out: &mut Vec<f64>) {
    quadratic_design(enc, base, statics, out)
}

fn static_row(features: &Features, names: &[String]) -> Option<Vec<f64>> {
    names.iter().map(|n| features.get(n).copied()).collect()
}

struct Model {
    ridge: Ridge,
    statics: Vec<String>,
}

impl RegressionPrune {
    /// Static feature names present in every valid measurement.
    fn common_statics(session: &Session<'_>) -> Vec<String> {
        let mut common: Option<BTreeSet<String>> = None;
        for &id in session.evaluated() {
            if session.objective(id).is_none() {
                continue;
            }
            let names: BTreeSet<String> = session
                .features(id)
                .map(|f| f.keys().cloned().collect())
                .unwrap_or_default();
            common = Some(match common {
                None => names,
                Some(c) => c.intersection(&names).cloned().collect(),
            });
        }
        common.unwrap_or_default().into_iter().collect()
    }

    fn fit(session: &Session<'_>, enc: &FeatureEncoder, statics: &[String]) -> Option<Model> {
        let space = session.space();
        let mut rows = Vec::new();
        let mut y = Vec::new();
        let mut row = Vec::new();
        for &id in session.evaluated() {
            let Some(v) = session.objective(id) else {
                continue;
            };
            let s = match session.features(id) {
                Some(f) => static_row(f, statics),
                None if statics.is_empty() => Some(Vec::new()),
                None => None,
            };
            let Some(s) = s else { continue };
            design(enc, &enc.encode(space, id), &s, &mut row);
            rows.push(row.clone());
            y.push(v.ln());
        }
        Ridge::fit(&rows, &y).map(|ridge| Model {
            ridge,
            statics: statics.to_vec(),
        })
    }

    /// Predicted `ln(time)` of `id`; `None` if static features are needed and unavailable
    /// (or its compile failed).
    fn predict(
        session: &mut Session<'_>,
        enc: &FeatureEncoder,
        model: &Model,
        id: ConfigId,
        buf: &mut Vec<f64>,
    ) -> Result<Option<f64>, Stop> {
        let space = session.space();
        let s = if model.statics.is_empty() {
            Vec::new()
        } else {
            match session.static_features(id)? {
                StaticProbe::Features(f) => match static_row(&f, &model.statics) {
                    Some(s) => s,
                    None => return Ok(None),
                },
                StaticProbe::Unavailable | StaticProbe::Failed(_) => return Ok(None),
            }
        };
        design(enc, &enc.encode(space, id), &s, buf);
        Ok(Some(model.ridge.predict(buf)))
    }

    fn report(&mut self, session: &mut Session<'_>, model: &Model, n_train: usize, warn: bool) {
        let fit = FitReport {
            heldout_r2: model.ridge.q2,
            n_train,
            lambda: model.ridge.lambda,
            static_features: model.statics.clone(),
        };
        if warn && fit.heldout_r2 < self.r2_warning {
            session.warn(Warning::PoorFit {
                strategy: self.name(),
                heldout_r2: fit.heldout_r2,
                threshold: self.r2_warning,
                n_train,
            });
        }
        self.last_fit = Some(fit);
    }

    /// Ranks `pool` (unevaluated only) by the model, best first; drops unpredictable ones.
    fn rank(
        &self,
        session: &mut Session<'_>,
        enc: &FeatureEncoder,
        model: &Model,
        pool: &[ConfigId],
        rejected: &HashSet<ConfigId>,
    ) -> Result<Vec<ConfigId>, Stop> {
        let feas = Self::feasibility(session, enc, rejected);
        let mut buf = Vec::new();
        let mut scored = Vec::with_capacity(pool.len());
        for &id in pool {
            if session.is_evaluated(id) || rejected.contains(&id) {
                continue;
            }
            let Some(p) = Self::predict(session, enc, model, id, &mut buf)? else {
                continue;
            };
            // Likely failures go to the back of the queue.
            let key = if feas.has_failures() {
                design(enc, &enc.encode(session.space(), id), &[], &mut buf);
                if feas.prob(&buf) < self.min_success_probability {
                    p + 1e3
                } else {
                    p
                }
            } else {
                p
            };
            if key.is_finite() {
                scored.push((id, key));
            }
        }
        scored.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        Ok(scored.into_iter().map(|(id, _)| id).collect())
    }

    /// Success probability model from everything evaluated (parameters only: a failed
    /// configuration usually has no static features).
    fn feasibility(
        session: &Session<'_>,
        enc: &FeatureEncoder,
        rejected: &HashSet<ConfigId>,
    ) -> Feasibility {
        let space = session.space();
        let mut rows = Vec::new();
        let mut ok = Vec::new();
        let mut row = Vec::new();
        let mut rej: Vec<ConfigId> = rejected.iter().copied().collect();
        rej.sort_unstable();
        for (&id, good) in session
            .evaluated()
            .iter()
            .map(|id| (id, session.objective(*id).is_some()))
            .chain(rej.iter().map(|id| (id, false)))
        {
            design(enc, &enc.encode(space, id), &[], &mut row);
            rows.push(row.clone());
            ok.push(good);
        }
        Feasibility::new(&rows, &ok)
    }

    /// The parameter-only model's best `keep` unevaluated configurations of the whole space.
    fn prune(
        &self,
        session: &mut Session<'_>,
        enc: &FeatureEncoder,
        model: &Model,
        keep: usize,
        rejected: &HashSet<ConfigId>,
    ) -> Result<Vec<ConfigId>, Stop> {
        let all: Vec<ConfigId> = session
            .space()
            .ids()
            .filter(|&id| !session.is_evaluated(id))
            .collect();
        let mut ranked = self.rank(session, enc, model, &all, rejected)?;
        ranked.truncate(keep);
        Ok(ranked)
    }

    fn valid_count(session: &Session<'_>) -> usize {
        session
            .evaluated()
            .iter()
            .filter(|&&id| session.objective(id).is_some())
            .count()
    }

    /// Fits the model to use: parameters only, or parameters + static features when those are
    /// available and predict at least as well on held-out data.
    fn choose_model(&self, session: &Session<'_>, enc: &FeatureEncoder) -> Option<Model> {
        let plain = Self::fit(session, enc, &[])?;
        if !self.use_static_features {
            return Some(plain);
        }
        let statics = Self::common_statics(session);
        if statics.is_empty() {
            return Some(plain);
        }
        match Self::fit(session, enc, &statics) {
            Some(m) if m.ridge.q2 >= plain.ridge.q2 => Some(m),
            _ => Some(plain),
        }
    }
}

impl Strategy for RegressionPrune {
    fn name(&self) -> String {
        if self.use_static_features || self.static_precheck {
            "regression_prune".into()
        } else {
            // Distinguished in reports: no compile-only queries at all.
            "regression_prune_params_only".into()
        }
    }

    fn run(&mut self, session: &mut Session<'_>) -> Result<(), Stop> {
        self.last_fit = None;
        let space = session.space();
        let enc = FeatureEncoder::new(space);
        let n_seed = match session.remaining() {
            Some(b) => ((b as f64 * self.seed_fraction).round() as usize)
                .max(self.min_seeds)
                .min(b),
            None => self.min_seeds.max(30),
        };
        self.seed(session, &enc, n_seed)?;

        let Some(mut model) = self.choose_model(session, &enc) else {
            session.warn(Warning::Note {
                strategy: self.name(),
                message: format!(
                    "only {} valid seed measurements: cannot fit, falling back to random sampling",
                    Self::valid_count(session)
                ),
            });
            loop {
                evaluate_random(session, 1)?;
            }
        };
        let n_train = Self::valid_count(session);
        self.report(session, &model, n_train, true);

        // Prune with the parameter model over the whole space.
        let remaining = session.remaining().unwrap_or(space.len());
        let keep = ((space.len() as f64 * self.keep_fraction).ceil() as usize)
            .max(4 * remaining)
            .min(space.len());
        let param_model = if model.statics.is_empty() {
            None
        } else {
            Self::fit(session, &enc, &[])
        };
        let mut rejected = HashSet::new();
        let mut pool = self.prune(
            session,
            &enc,
            param_model.as_ref().unwrap_or(&model),
            keep,
            &rejected,
        )?;
        if self.use_static_features {
            // Ranking asks for every survivor's static features (now, or after a refit that
            // brings them in): compile them together.
            pool.truncate(self.static_cap(remaining));
            session.prefetch(&pool);
        }
        let mut ranked = self.rank(session, &enc, &model, &pool, &rejected)?;

        // Confirm.
        let mut since_fit = 0;
        loop {
            let next = ranked
                .iter()
                .copied()
                .find(|&id| !session.is_evaluated(id) && !rejected.contains(&id));
            let id = match next {
                Some(id) => id,
                None => {
                    // Survivors exhausted: predict the whole space again (with the parameter
                    // model: static features of the whole space would compile all of it),
                    // then re-rank the best of it as after the seeds.
                    let left = session.remaining().unwrap_or(space.len());
                    let plain = if model.statics.is_empty() {
                        None
                    } else {
                        Self::fit(session, &enc, &[])
                    };
                    pool = self.prune(
                        session,
                        &enc,
                        plain.as_ref().unwrap_or(&model),
                        keep,
                        &rejected,
                    )?;
                    if self.use_static_features {
                        pool.truncate(self.static_cap(left));
                        session.prefetch(&pool);
                    }
                    ranked = self.rank(session, &enc, &model, &pool, &rejected)?;
                    match ranked.first() {
                        Some(&id) => id,
                        None => session.random_unevaluated().ok_or(Stop::SpaceExhausted)?,
                    }
                }
            };
            // The next ones in predicted order (evaluators ignore what they already have), as
            // many as other strategies announce: a refit mostly reorders the top of the
            // ranking, so most of them are still wanted after it, and a compile that starts
            // only once the previous refit is done is waited for in full.
            let ahead: Vec<ConfigId> = ranked
                .iter()
                .copied()
                .filter(|&c| !session.is_evaluated(c) && !rejected.contains(&c))
                .take(self.refit_every.max(super::PREFETCH))
                .collect();
            session.prefetch(&ahead);
            if self.static_precheck
                && !session.is_evaluated(id)
                && self.statically_infeasible(session, id)?
            {
                rejected.insert(id);
                continue;
            }
            session.evaluate(id)?;
            since_fit += 1;
            if since_fit >= self.refit_every.max(1) {
                since_fit = 0;
                if let Some(m) = self.choose_model(session, &enc) {
                    model = m;
                    let n = Self::valid_count(session);
                    self.report(session, &model, n, false);
                    ranked = self.rank(session, &enc, &model, &pool, &rejected)?;
                }
            }
        }
    }
}

impl RegressionPrune {
    /// How many survivors get static features when `remaining` evaluations are left.
    fn static_cap(&self, remaining: usize) -> usize {
        let by_budget = (remaining as f64 * self.static_queries_per_evaluation).ceil() as usize;
        by_budget
            .max(self.min_static_queries)
            .max(self.refit_every)
            .max(1)
            .min(self.max_static_queries)
    }

    /// The seed phase: `n` random configurations, all announced at once. Halfway through,
    /// a parameter-only model of the seeds measured so far announces the configurations it
    /// predicts best (as many as [`static_cap`](Self::static_cap) will re-rank): their
    /// compiles run while the rest of the seeds are measured, so the static features asked
    /// for after the seeds are mostly ready. Announcing changes nothing but when compiles
    /// start (the search is the same with or without it).
    fn seed(&self, session: &mut Session<'_>, enc: &FeatureEncoder, n: usize) -> Result<(), Stop> {
        let batch = session.random_unevaluated_batch(n);
        if batch.is_empty() {
            return Err(Stop::SpaceExhausted);
        }
        session.prefetch(&batch);
        let early = batch.len() / 2;
        for (i, &id) in batch.iter().enumerate() {
            if i == early && early >= 3 && self.use_static_features {
                if let Some(m) = Self::fit(session, enc, &[]) {
                    let left = session
                        .remaining()
                        .unwrap_or(session.space().len())
                        .saturating_sub(batch.len() - i);
                    let cap = self.static_cap(left);
                    let guess = Self::guess(session, enc, &m, cap);
                    session.prefetch(&guess);
                }
            }
            session.evaluate(id)?;
        }
        if batch.len() < n {
            return Err(Stop::SpaceExhausted);
        }
        Ok(())
    }

    /// The `n` unevaluated configurations a parameter-only model predicts best (no static
    /// features, no feasibility model: only a guess of what to compile early).
    fn guess(
        session: &Session<'_>,
        enc: &FeatureEncoder,
        model: &Model,
        n: usize,
    ) -> Vec<ConfigId> {
        let space = session.space();
        let mut buf = Vec::new();
        let mut scored: Vec<(ConfigId, f64)> = space
            .ids()
            .filter(|&id| !session.is_evaluated(id))
            .map(|id| {
                design(enc, &enc.encode(space, id), &[], &mut buf);
                (id, model.ridge.predict(&buf))
            })
            .filter(|(_, p)| p.is_finite())
            .collect();
        scored.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        scored.truncate(n);
        scored.into_iter().map(|(id, _)| id).collect()
    }

    /// Static-feature pruning: a compile-only query that fails, or reports a theoretical
    /// `occupancy` of 0 (the kernel cannot be resident, so it cannot launch), rules the
    /// configuration out without spending an evaluation.
    fn statically_infeasible(&self, session: &mut Session<'_>, id: ConfigId) -> Result<bool, Stop> {
        Ok(match session.static_features(id)? {
            StaticProbe::Failed(_) => true,
            StaticProbe::Features(f) => f.get("occupancy").is_some_and(|o| *o <= 0.0),
            StaticProbe::Unavailable => false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ridge_recovers_a_linear_model_and_reports_heldout_r2() {
        let rows: Vec<Vec<f64>> = (0..30)
            .map(|i| vec![i as f64 / 10.0, ((i * 7) % 11) as f64])
            .collect();
        let y: Vec<f64> = rows.iter().map(|r| 2.0 * r[0] - 0.5 * r[1] + 1.0).collect();
        let m = Ridge::fit(&rows, &y).unwrap();
        assert!(m.q2 > 0.99, "{}", m.q2);
        assert!((m.predict(&[1.0, 2.0]) - 2.0).abs() < 0.05);
        // pure noise has no held-out predictive power
        let mut r = crate::rng::Rng::seed_from_u64(5);
        let noise: Vec<f64> = (0..30).map(|_| r.normal()).collect();
        let m = Ridge::fit(&rows, &noise).unwrap();
        assert!(m.q2 < 0.2, "{}", m.q2);
        assert!(Ridge::fit(&rows[..2], &y[..2]).is_none());
    }
}
