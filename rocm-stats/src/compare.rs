//! Faster / slower / no-change verdicts between two samples of one benchmark.
//!
//! Test: a seeded percentile **bootstrap confidence interval of the ratio of
//! medians** (new / baseline), with a noise band like criterion's.
//!
//! Why this test: the median is what we report, so the interval is about the
//! number the user sees; the bootstrap makes no normality assumption (GPU
//! timings are skewed and sometimes multi-modal); a ratio is unit-free, so
//! one threshold fits a 3 µs kernel and a 30 ms one. A rank test such as
//! Mann–Whitney U answers "is one distribution shifted?", which becomes
//! significant for practically irrelevant shifts at large n; the noise band
//! here requires the *whole* interval to clear ±2 % before calling a change.
//!
//! The resampling is seeded (ChaCha8) and runs on sorted copies of the
//! inputs, so the same two samples always give the same verdict, whatever
//! order they were recorded in.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::stats::{median_in_place, median_sorted, sorted_copy, StatsError};

/// Default confidence level of the interval.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;
/// Default noise threshold: changes whose interval does not clear ±2 % are
/// "no change" (criterion's `noise_threshold` default).
pub const DEFAULT_NOISE_THRESHOLD: f64 = 0.02;
/// Default number of bootstrap resamples.
pub const DEFAULT_RESAMPLES: usize = 10_000;
/// Default seed; any fixed value gives reproducible verdicts.
pub const DEFAULT_SEED: u64 = 0x5eed_cafe_f00d_0001;
/// Each side needs this many samples for a verdict. With fewer, the
/// bootstrap distribution of the median has only a handful of distinct
/// values and its interval is far too narrow to trust.
pub const DEFAULT_MIN_SAMPLES: usize = 5;

/// Settings of [`compare_samples`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareConfig {
    /// Confidence level, strictly between 0 and 1.
    pub confidence: f64,
    /// Relative noise band (0.02 = ±2 %), finite and in `[0, 1)`.
    pub noise_threshold: f64,
    /// Bootstrap resamples, at least 100.
    pub resamples: usize,
    /// RNG seed.
    pub seed: u64,
    /// Minimum samples per side for a verdict (at least 2).
    pub min_samples: usize,
}

impl Default for CompareConfig {
    fn default() -> Self {
        CompareConfig {
            confidence: DEFAULT_CONFIDENCE,
            noise_threshold: DEFAULT_NOISE_THRESHOLD,
            resamples: DEFAULT_RESAMPLES,
            seed: DEFAULT_SEED,
            min_samples: DEFAULT_MIN_SAMPLES,
        }
    }
}

impl CompareConfig {
    /// Checks every setting against its documented range.
    pub fn validate(&self) -> Result<(), StatsError> {
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err(StatsError::InvalidConfig(format!(
                "confidence {} must lie strictly between 0 and 1",
                self.confidence
            )));
        }
        if !(self.noise_threshold >= 0.0 && self.noise_threshold < 1.0) {
            return Err(StatsError::InvalidConfig(format!(
                "noise threshold {} must lie in [0, 1)",
                self.noise_threshold
            )));
        }
        if self.resamples < 100 {
            return Err(StatsError::InvalidConfig(format!(
                "{} resamples is too few, use at least 100",
                self.resamples
            )));
        }
        if self.min_samples < 2 {
            return Err(StatsError::InvalidConfig(format!(
                "min_samples {} must be at least 2",
                self.min_samples
            )));
        }
        Ok(())
    }
}

/// Outcome for one benchmark. Timings: lower is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The whole interval lies below `1 − noise_threshold`.
    Faster,
    /// The whole interval lies above `1 + noise_threshold`.
    Slower,
    /// The interval reaches into the noise band.
    NoChange,
    /// A side has fewer than `min_samples` samples: no verdict is given
    /// (rather than a "no change" that nothing supports).
    TooFewSamples,
}

impl Verdict {
    /// Text form used in exports.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoChange => "no_change",
            Verdict::TooFewSamples => "too_few_samples",
        }
    }
}

/// A confidence interval of the ratio new / baseline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceInterval {
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// Confidence level, e.g. 0.95.
    pub level: f64,
}

/// Result of comparing two samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The verdict.
    pub verdict: Verdict,
    /// Point estimate: median(new) / median(baseline). > 1 means slower.
    pub ratio: f64,
    /// Bootstrap interval of the ratio; `None` with too few samples.
    pub ci: Option<ConfidenceInterval>,
    /// True when the interval excludes 1 (a change exists, maybe inside the
    /// noise band). Lets a UI say "possibly slower (+1.2 %)".
    pub significant: bool,
    /// Noise threshold used.
    pub noise_threshold: f64,
    /// Median of the baseline.
    pub baseline_median: f64,
    /// Median of the new sample.
    pub new_median: f64,
    /// Baseline sample count.
    pub baseline_count: usize,
    /// New sample count.
    pub new_count: usize,
}

/// Linear-interpolated quantile of a sorted slice.
fn quantile_sorted(v: &[f64], p: f64) -> f64 {
    let h = p * (v.len() - 1) as f64;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    if v[lo] == v[hi] {
        return v[lo];
    }
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

/// Compares `new` against `baseline` (both timings, same unit).
///
/// Errors on invalid samples (empty, NaN, negative), a zero baseline median
/// or a bad config; a too-small sample is not an error but a
/// [`Verdict::TooFewSamples`].
pub fn compare_samples(
    baseline: &[f64],
    new: &[f64],
    config: &CompareConfig,
) -> Result<Comparison, StatsError> {
    config.validate()?;
    let base = sorted_copy(baseline)?;
    let new = sorted_copy(new)?;
    let baseline_median = median_sorted(&base);
    let new_median = median_sorted(&new);
    if baseline_median <= 0.0 {
        return Err(StatsError::ZeroBaselineMedian);
    }
    let ratio = new_median / baseline_median;
    let mut out = Comparison {
        verdict: Verdict::TooFewSamples,
        ratio,
        ci: None,
        significant: false,
        noise_threshold: config.noise_threshold,
        baseline_median,
        new_median,
        baseline_count: base.len(),
        new_count: new.len(),
    };
    if base.len() < config.min_samples || new.len() < config.min_samples {
        return Ok(out);
    }

    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut buf_b = vec![0.0; base.len()];
    let mut buf_n = vec![0.0; new.len()];
    let mut ratios = Vec::with_capacity(config.resamples);
    for _ in 0..config.resamples {
        for slot in buf_b.iter_mut() {
            *slot = base[rng.random_range(0..base.len())];
        }
        for slot in buf_n.iter_mut() {
            *slot = new[rng.random_range(0..new.len())];
        }
        let mb = median_in_place(&mut buf_b);
        let mn = median_in_place(&mut buf_n);
        // A resampled baseline median of 0 (possible only when zeros are
        // common) gives +inf, which sorts last and only widens the interval.
        ratios.push(if mb > 0.0 { mn / mb } else { f64::INFINITY });
    }
    ratios.sort_by(f64::total_cmp);
    let alpha = 1.0 - config.confidence;
    let ci = ConfidenceInterval {
        low: quantile_sorted(&ratios, alpha / 2.0),
        high: quantile_sorted(&ratios, 1.0 - alpha / 2.0),
        level: config.confidence,
    };
    out.significant = ci.low > 1.0 || ci.high < 1.0;
    out.verdict = if ci.low > 1.0 + config.noise_threshold {
        Verdict::Slower
    } else if ci.high < 1.0 - config.noise_threshold {
        Verdict::Faster
    } else {
        Verdict::NoChange
    };
    out.ci = Some(ci);
    Ok(out)
}
