//! The evaluator interface: what a strategy asks of the thing that compiles and times kernels.
//!
//! The GPU side (compiling a HIP kernel for a configuration, launching it, checking its result,
//! reading registers/LDS/occupancy from the code object) lives elsewhere in cargo-rocm; this
//! crate only needs the answers. Keeping it a trait lets the same strategies run against a
//! real device, a recorded table ([`crate::replay`]) or a synthetic model ([`crate::synthetic`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::space::Config;

/// Static features of a compiled configuration (e.g. `"vgprs"`, `"sgprs"`, `"lds_bytes"`,
/// `"occupancy"`), by name. A `BTreeMap` so that iteration order, and so model inputs, are
/// deterministic.
pub type Features = BTreeMap<String, f64>;

/// The result of timing one configuration.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Measurement {
    /// Kernel times, one per repetition (any unit, consistently; Kernel Tuner uses ms). Several
    /// samples are expected: their spread drives stability gating.
    pub times: Vec<f64>,
    /// Static features of the compiled code object, when the evaluator can read them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub features: Features,
}

impl Measurement {
    /// A measurement with times only.
    pub fn from_times(times: Vec<f64>) -> Self {
        Measurement {
            times,
            features: Features::new(),
        }
    }

    /// Checks the samples are usable: at least one, all finite and positive.
    pub fn validate(&self) -> Result<(), String> {
        if self.times.is_empty() {
            return Err("no time samples".into());
        }
        if let Some(t) = self.times.iter().find(|t| !t.is_finite() || **t <= 0.0) {
            return Err(format!("invalid time sample {t}"));
        }
        Ok(())
    }
}

/// Why a configuration could not be measured. Every variant except [`EvalError::Fatal`] marks
/// the configuration as failed (recorded, never chosen) and tuning goes on; `Fatal` stops the
/// run (the device is gone, the evaluator is misconfigured).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// The kernel did not compile for this configuration.
    #[error("compilation failed: {0}")]
    Compile(String),
    /// The launch failed (too many resources requested, invalid block size, fault).
    #[error("launch failed: {0}")]
    Launch(String),
    /// The kernel ran but produced a wrong result.
    #[error("wrong result: {0}")]
    WrongResult(String),
    /// The configuration is invalid for this problem (rejected before compiling).
    #[error("invalid configuration: {0}")]
    Invalid(String),
    /// Tuning cannot continue.
    #[error("fatal evaluator error: {0}")]
    Fatal(String),
}

impl EvalError {
    /// The failure class, for recording; `None` for [`EvalError::Fatal`].
    pub fn kind(&self) -> Option<FailureKind> {
        match self {
            EvalError::Compile(_) => Some(FailureKind::Compile),
            EvalError::Launch(_) => Some(FailureKind::Launch),
            EvalError::WrongResult(_) => Some(FailureKind::WrongResult),
            EvalError::Invalid(_) => Some(FailureKind::Invalid),
            EvalError::Fatal(_) => None,
        }
    }

    /// The message without the class.
    pub fn message(&self) -> &str {
        match self {
            EvalError::Compile(m)
            | EvalError::Launch(m)
            | EvalError::WrongResult(m)
            | EvalError::Invalid(m)
            | EvalError::Fatal(m) => m,
        }
    }
}

/// Class of a failed evaluation, as recorded in caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// Compilation failed.
    Compile,
    /// Launch failed.
    Launch,
    /// Verification failed.
    WrongResult,
    /// Rejected as invalid.
    Invalid,
    /// The evaluator returned unusable samples (none, NaN, zero or negative).
    BadMeasurement,
    /// Unclassified (e.g. Kernel Tuner's generic `ErrorConfig`).
    Other,
}

/// Something that compiles and times configurations.
pub trait Evaluator {
    /// Compiles, runs, verifies and times `config`.
    fn evaluate(&mut self, config: &Config) -> Result<Measurement, EvalError>;

    /// Times `config` again (it was evaluated before and can be assumed compiled). Called by
    /// stability gating when the first samples were too noisy to trust. The default just
    /// evaluates again.
    fn remeasure(&mut self, config: &Config) -> Result<Measurement, EvalError> {
        self.evaluate(config)
    }

    /// Compile-only query for static features (registers, LDS, occupancy) without running.
    /// `None` when the evaluator cannot provide them; `Some(Err)` when compilation fails.
    /// Used by the regression-and-prune strategy to rank candidates; it costs compile time but
    /// no evaluation budget.
    fn static_features(&mut self, _config: &Config) -> Option<Result<Features, EvalError>> {
        None
    }

    /// A hint: these configurations are likely to be evaluated (or queried for static
    /// features) soon, in this order. An evaluator that compiles can start compiling them in
    /// the background, so compilation overlaps measurement. Ignoring it is always correct.
    fn prefetch(&mut self, _upcoming: &[Config]) {}

    /// Where the evaluator's time went since the last call, and how many configurations it
    /// measured; the counters start again from zero. A [`crate::campaign`] asks after the
    /// default configuration (to leave it out) and after each strategy run (the report's
    /// overhead). The default knows nothing: zeros.
    fn take_stats(&mut self) -> EvalStats {
        EvalStats::default()
    }
}

/// Where an evaluator's time went (seconds), see [`Evaluator::take_stats`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EvalStats {
    /// Kernel (or program) time: every timed run and the warm-ups.
    pub kernel_s: f64,
    /// Compiling (waiting for compile threads included).
    pub compile_s: f64,
    /// Verifying results.
    pub verify_s: f64,
    /// Configurations measured (not answered from a cache).
    pub measured: usize,
}

impl<E: Evaluator + ?Sized> Evaluator for &mut E {
    fn evaluate(&mut self, config: &Config) -> Result<Measurement, EvalError> {
        (**self).evaluate(config)
    }
    fn remeasure(&mut self, config: &Config) -> Result<Measurement, EvalError> {
        (**self).remeasure(config)
    }
    fn static_features(&mut self, config: &Config) -> Option<Result<Features, EvalError>> {
        (**self).static_features(config)
    }
    fn prefetch(&mut self, upcoming: &[Config]) {
        (**self).prefetch(upcoming)
    }
    fn take_stats(&mut self) -> EvalStats {
        (**self).take_stats()
    }
}

/// How a single objective value is derived from time samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// Arithmetic mean, as Kernel Tuner's `time` field.
    #[default]
    Mean,
    /// Median: robust to a single slow outlier (e.g. a first launch that was not warmed up).
    Median,
    /// Minimum: the best the kernel can do.
    Min,
}

impl Objective {
    /// Reduces samples to one value; `None` for no samples.
    pub fn reduce(self, times: &[f64]) -> Option<f64> {
        if times.is_empty() {
            return None;
        }
        Some(match self {
            Objective::Mean => mean(times),
            Objective::Median => median(times),
            Objective::Min => times.iter().copied().fold(f64::INFINITY, f64::min),
        })
    }
}

/// Arithmetic mean (0 for no samples).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// Median (0 for no samples or invalid ones), from `rocm-stats`.
pub fn median(xs: &[f64]) -> f64 {
    rocm_stats::stats::median(xs).unwrap_or(0.0)
}

/// Coefficient of variation: sample standard deviation over mean, from `rocm-stats`. 0 for
/// fewer than two samples (no evidence of noise, which is also why evaluators should return
/// several) and for samples `rocm-stats` rejects (negative or not finite).
pub fn coefficient_of_variation(xs: &[f64]) -> f64 {
    rocm_stats::summarize(xs).map(|s| s.cv).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(Objective::Min.reduce(&[3.0, 1.0]), Some(1.0));
        assert_eq!(Objective::Mean.reduce(&[]), None);
        let cv = coefficient_of_variation(&[1.0, 1.1, 0.9]);
        assert!((cv - 0.1).abs() < 1e-12, "{cv}");
        assert_eq!(coefficient_of_variation(&[5.0]), 0.0);
    }

    #[test]
    fn measurement_validation() {
        assert!(Measurement::from_times(vec![]).validate().is_err());
        assert!(Measurement::from_times(vec![1.0, f64::NAN])
            .validate()
            .is_err());
        assert!(Measurement::from_times(vec![1.0, 0.0]).validate().is_err());
        assert!(Measurement::from_times(vec![1.0]).validate().is_ok());
    }
}
