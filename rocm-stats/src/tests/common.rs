//! A small seeded generator of synthetic timing samples for the tests.

//! Seeded synthetic samples for the tests.
#![allow(dead_code)]

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Deterministic generator of synthetic timings.
pub struct Gen(ChaCha8Rng);

impl Gen {
    pub fn new(seed: u64) -> Self {
        Gen(ChaCha8Rng::seed_from_u64(seed))
    }

    pub fn uniform(&mut self) -> f64 {
        self.0.random::<f64>()
    }

    /// Standard normal (Box–Muller).
    pub fn std_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// `n` normal timings, clamped at 0.
    pub fn normal(&mut self, n: usize, mean: f64, sd: f64) -> Vec<f64> {
        (0..n)
            .map(|_| (mean + sd * self.std_normal()).max(0.0))
            .collect()
    }

    /// Mixture: a fraction `frac_high` of the samples around `high`, the
    /// rest around `low`, both with relative noise `rel_sd`; shuffled.
    pub fn bimodal(
        &mut self,
        n: usize,
        low: f64,
        high: f64,
        frac_high: f64,
        rel_sd: f64,
    ) -> Vec<f64> {
        let n_high = (n as f64 * frac_high).round() as usize;
        let mut v = self.normal(n - n_high, low, low * rel_sd);
        v.extend(self.normal(n_high, high, high * rel_sd));
        self.shuffle(&mut v);
        v
    }

    pub fn shuffle(&mut self, v: &mut [f64]) {
        for i in (1..v.len()).rev() {
            let j = self.0.random_range(0..=i);
            v.swap(i, j);
        }
    }

    /// Student t with `df` degrees of freedom (heavy tails for small df).
    pub fn student_t(&mut self, df: usize) -> f64 {
        let z = self.std_normal();
        let chi2: f64 = (0..df).map(|_| self.std_normal().powi(2)).sum();
        z / (chi2 / df as f64).sqrt()
    }

    pub fn exp(&mut self) -> f64 {
        -(1.0 - self.uniform()).ln()
    }
}
