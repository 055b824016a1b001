//! Descriptive statistics for one benchmark's timings, a stability class and
//! a bimodality flag.
//!
//! GPU timings are rarely normal: they have a hard floor (the kernel cannot run
//! faster than the hardware allows), a right tail (preemption, clock ramps,
//! page faults) and sometimes two clusters (the GPU switched power states in
//! the middle of the measurement). So the summary leads with robust numbers
//! (median, MAD) and keeps the classical ones (mean, standard deviation, CV)
//! next to them: a large gap between the two families is itself a signal.
//!
//! All thresholds are `pub const`s so callers (and the README) can quote them.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Factor that turns the raw median absolute deviation into a consistent
/// estimator of the standard deviation for normally distributed data
/// (1 / Φ⁻¹(3/4)). Every `mad` in this crate is scaled by it, so `mad` and
/// `std_dev` are directly comparable: for clean normal data they agree.
pub const MAD_SCALE: f64 = 1.4826;

/// Fewer samples than this get [`Stability::TooFewSamples`]: with 1–4 values
/// the median and MAD are too coarse to call anything stable.
pub const MIN_SAMPLES_FOR_STABILITY: usize = 5;

/// Robust spread (scaled MAD / median) at or below which a sample is
/// [`Stability::Stable`]. 2 % matches criterion's default noise threshold:
/// a benchmark steadier than that can resolve the changes we report.
pub const STABLE_MAX_REL_MAD: f64 = 0.02;
/// Coefficient of variation allowed for a stable sample. It is 2.5 × the MAD
/// limit because the CV also sees the tail; a CV above it with a tight MAD
/// means a heavy tail, which demotes the class by one level.
pub const STABLE_MAX_CV: f64 = 0.05;
/// Robust spread at or below which a sample is at worst [`Stability::Noisy`].
/// Beyond 10 % the median itself moves by several percent between runs.
pub const NOISY_MAX_REL_MAD: f64 = 0.10;
/// Coefficient of variation allowed for a noisy sample (2.5 × the MAD limit,
/// as for [`STABLE_MAX_CV`]).
pub const NOISY_MAX_CV: f64 = 0.25;

/// Bimodality is only tested from this many samples on: below it a split
/// into two clusters of at least [`BIMODAL_MIN_CLUSTER_SIZE`] is noise.
pub const BIMODAL_MIN_SAMPLES: usize = 10;
/// Each cluster must hold at least this fraction of the sample. A handful of
/// outliers is a tail, not a second mode; they show up in the CV instead.
pub const BIMODAL_MIN_CLUSTER_FRACTION: f64 = 0.10;
/// Each cluster must hold at least this many samples.
pub const BIMODAL_MIN_CLUSTER_SIZE: usize = 3;
/// Minimum Ashman's D between the two clusters. D = √2·|μ₁−μ₂|/√(σ₁²+σ₂²);
/// D > 2 is the textbook bound for a clean split of a two-normal mixture, but
/// splitting *unimodal* data at its optimum already gives D ≈ 2.65 (normal)
/// and ≈ 3.46 (uniform), so the bound must sit above those.
pub const BIMODAL_MIN_ASHMAN_D: f64 = 4.0;
/// Significance level of the valley test (see [`bimodality_sorted`]).
/// With an empty valley, the emptier peak window needs ≥ 7 samples
/// (0.5⁷ ≈ 0.008) before two modes are claimed.
pub const BIMODAL_VALLEY_ALPHA: f64 = 0.01;

/// Why a sample could not be summarised.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum StatsError {
    /// No samples at all.
    #[error(
        "the sample is empty; run the benchmark for at least one iteration before summarising it"
    )]
    Empty,
    /// NaN or ±infinity in the sample.
    #[error(
        "sample {index} is {value}, not a finite number; a GPU event that never completed reads as NaN or infinity, so check the timing code and re-run"
    )]
    NonFinite {
        /// Position in the sample.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// A negative timing.
    #[error(
        "sample {index} is negative ({value}); a duration cannot be negative, so check that the start and stop events are recorded in that order and re-run"
    )]
    Negative {
        /// Position in the sample.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// The baseline's median is zero, so a ratio of medians is undefined.
    #[error(
        "the baseline median is 0, so the ratio of medians is undefined; the timer is too coarse for this benchmark, so give each iteration more work"
    )]
    ZeroBaselineMedian,
    /// A comparison setting is out of range.
    #[error("invalid comparison setting: {0}; use a value inside the documented range")]
    InvalidConfig(String),
}

/// How far the timings of one benchmark can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stability {
    /// Fewer than [`MIN_SAMPLES_FOR_STABILITY`] samples: not judged.
    TooFewSamples,
    /// Robust spread ≤ [`STABLE_MAX_REL_MAD`] and CV ≤ [`STABLE_MAX_CV`].
    Stable,
    /// Usable, but only large changes can be resolved.
    Noisy,
    /// Spread above the noisy limits, or two modes: the median describes no
    /// single state of the machine. Fix the setup (pin clocks) and re-run.
    Unstable,
}

impl Stability {
    /// Stable text form (used in the database and in exports).
    pub fn as_str(self) -> &'static str {
        match self {
            Stability::TooFewSamples => "too_few_samples",
            Stability::Stable => "stable",
            Stability::Noisy => "noisy",
            Stability::Unstable => "unstable",
        }
    }

    /// Inverse of [`Stability::as_str`]; `None` for unknown text.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "too_few_samples" => Stability::TooFewSamples,
            "stable" => Stability::Stable,
            "noisy" => Stability::Noisy,
            "unstable" => Stability::Unstable,
            _ => return None,
        })
    }

    fn demoted(self) -> Self {
        match self {
            Stability::Stable => Stability::Noisy,
            Stability::Noisy | Stability::Unstable => Stability::Unstable,
            Stability::TooFewSamples => Stability::TooFewSamples,
        }
    }
}

/// The best two-cluster split of a sample and the numbers used to judge it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeSplit {
    /// Values ≤ this belong to the low cluster (midpoint of the gap).
    pub threshold: f64,
    /// Samples in the low cluster.
    pub low_count: usize,
    /// Samples in the high cluster.
    pub high_count: usize,
    /// Median of the low cluster.
    pub low_median: f64,
    /// Median of the high cluster.
    pub high_median: f64,
    /// Ashman's D between the clusters (see [`BIMODAL_MIN_ASHMAN_D`]).
    pub ashman_d: f64,
    /// Samples in the middle third between the two cluster means.
    pub valley_count: usize,
    /// Samples in an equally wide window around the emptier cluster mean.
    pub peak_count: usize,
    /// One-sided p-value of the valley test: P(Bin(valley + peak, ½) ≤
    /// valley). Small means the valley is emptier than any unimodal density
    /// allows.
    pub valley_p: f64,
}

/// Result of the bimodality test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bimodality {
    /// True when the best split passes both the separation (Ashman's D) and
    /// the valley test.
    pub bimodal: bool,
    /// The best split, when the sample was large enough to try one.
    pub split: Option<ModeSplit>,
}

/// Summary of one sample of timings. Units are those of the input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub count: usize,
    /// Median (mean of the two middle values for an even count).
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Sample standard deviation (n − 1 denominator; 0 for one sample).
    pub std_dev: f64,
    /// Median absolute deviation, **scaled by [`MAD_SCALE`]** (1.4826).
    pub mad: f64,
    /// Coefficient of variation, `std_dev / mean` (0 when the mean is 0,
    /// which for non-negative samples means every sample is 0).
    pub cv: f64,
    /// Robust relative spread, `mad / median` (0 when the median is 0: for
    /// non-negative samples the MAD is then 0 too).
    pub rel_mad: f64,
    /// Stability class (see [`classify`]).
    pub stability: Stability,
    /// Bimodality test result.
    pub bimodality: Bimodality,
}

/// Checks that every sample is a finite, non-negative number.
pub fn validate(samples: &[f64]) -> Result<(), StatsError> {
    if samples.is_empty() {
        return Err(StatsError::Empty);
    }
    for (index, &value) in samples.iter().enumerate() {
        if !value.is_finite() {
            return Err(StatsError::NonFinite { index, value });
        }
        if value < 0.0 {
            return Err(StatsError::Negative { index, value });
        }
    }
    Ok(())
}

/// Returns a sorted copy of the sample after validating it.
pub(crate) fn sorted_copy(samples: &[f64]) -> Result<Vec<f64>, StatsError> {
    validate(samples)?;
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    Ok(v)
}

/// Median of an already sorted, non-empty slice.
pub(crate) fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Median of an unsorted slice, reordering it in place (O(n)).
pub(crate) fn median_in_place(v: &mut [f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let (lower, upper_mid, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    let upper_mid = *upper_mid;
    if n % 2 == 1 {
        upper_mid
    } else {
        let lower_mid = lower.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lower_mid + upper_mid) / 2.0
    }
}

/// Median of any valid sample.
pub fn median(samples: &[f64]) -> Result<f64, StatsError> {
    Ok(median_sorted(&sorted_copy(samples)?))
}

/// `spread / center`, with 0 for a zero center. Only called where a zero
/// center forces a zero spread (non-negative data), so nothing is hidden.
fn relative(spread: f64, center: f64) -> f64 {
    if center > 0.0 {
        spread / center
    } else {
        0.0
    }
}

/// Summarises a sample: validates it (finite, non-negative, non-empty), then
/// computes every field of [`Summary`].
pub fn summarize(samples: &[f64]) -> Result<Summary, StatsError> {
    let sorted = sorted_copy(samples)?;
    let n = sorted.len();
    let median = median_sorted(&sorted);
    let mean = sorted.iter().sum::<f64>() / n as f64;
    let std_dev = if n > 1 {
        let ss: f64 = sorted.iter().map(|x| (x - mean) * (x - mean)).sum();
        (ss / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let mut dev: Vec<f64> = sorted.iter().map(|x| (x - median).abs()).collect();
    let mad = median_in_place(&mut dev) * MAD_SCALE;
    let cv = relative(std_dev, mean);
    let rel_mad = relative(mad, median);
    let bimodality = bimodality_sorted(&sorted);
    let stability = classify(n, rel_mad, cv, bimodality.bimodal);
    Ok(Summary {
        count: n,
        median,
        mean,
        min: sorted[0],
        max: sorted[n - 1],
        std_dev,
        mad,
        cv,
        rel_mad,
        stability,
        bimodality,
    })
}

/// The stability rule, exposed so the README and callers can reason about it.
///
/// 1. Fewer than [`MIN_SAMPLES_FOR_STABILITY`] samples → `TooFewSamples`.
/// 2. Bimodal → `Unstable` (the median straddles two machine states).
/// 3. The robust spread `rel_mad` picks the base class: ≤ 2 % stable,
///    ≤ 10 % noisy, else unstable. NaN (impossible from [`summarize`])
///    counts as unstable.
/// 4. A CV above the base class's limit (5 % / 25 %) demotes it by **one**
///    level. The MAD ignores a tail by design; the CV makes sure a heavy tail
///    is still visible, yet a few outliers on a tight core cannot make a
///    sample worse than `Noisy`.
pub fn classify(count: usize, rel_mad: f64, cv: f64, bimodal: bool) -> Stability {
    if count < MIN_SAMPLES_FOR_STABILITY {
        return Stability::TooFewSamples;
    }
    if bimodal {
        return Stability::Unstable;
    }
    let (base, cv_limit) = if rel_mad <= STABLE_MAX_REL_MAD {
        (Stability::Stable, STABLE_MAX_CV)
    } else if rel_mad <= NOISY_MAX_REL_MAD {
        (Stability::Noisy, NOISY_MAX_CV)
    } else {
        return Stability::Unstable;
    };
    if cv <= cv_limit {
        base
    } else {
        base.demoted()
    }
}

/// Tests a sample for two modes (see [`bimodality_sorted`] for the method).
pub fn detect_bimodality(samples: &[f64]) -> Result<Bimodality, StatsError> {
    Ok(bimodality_sorted(&sorted_copy(samples)?))
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, var.sqrt())
}

fn count_in(sorted: &[f64], lo: f64, hi: f64) -> usize {
    let a = sorted.partition_point(|&x| x < lo);
    let b = sorted.partition_point(|&x| x <= hi);
    b.saturating_sub(a)
}

/// P(X ≤ k) for X ~ Binomial(n, ½), computed in log space.
fn binomial_half_cdf(k: usize, n: usize) -> f64 {
    let ln2 = std::f64::consts::LN_2;
    let mut log_c = 0.0; // ln C(n, 0)
    let mut p = 0.0;
    for i in 0..=k.min(n) {
        p += (log_c - n as f64 * ln2).exp();
        log_c += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    p.min(1.0)
}

/// Bimodality test on a sample already sorted ascending and validated (use
/// [`detect_bimodality`] for anything else; unsorted input gives a
/// meaningless answer but never a panic).
///
/// Method:
/// 1. **Split**: the optimal 1-D 2-means split. For sorted data it is a
///    contiguous cut, so every cut leaving at least `max(3, 10 % of n)`
///    values on each side is scored by the within-cluster sum of squares
///    (prefix sums, O(n)).
/// 2. **Separation**: Ashman's D of the two clusters ≥ 4.
/// 3. **Valley**: let `w` be a third of the distance between the cluster
///    means; count the samples in the middle window (the middle third) and in
///    a window of width `w` around each mean. For *any* unimodal density the
///    middle window is at least as likely as the less likely of the two peak
///    windows (a unimodal density is monotone on each side of its mode, so
///    each middle point is at least as dense as its counterpart in the peak
///    window on the far side of the mode). So, given `s = middle + emptier
///    peak`, `middle ~ Bin(s, ≥ ½)` under unimodality, and an exact one-sided
///    sign test with level [`BIMODAL_VALLEY_ALPHA`] decides whether the
///    valley is really emptier.
///
/// Why both 2 and 3: 2-means always finds *some* split, and D alone is
/// biased upward on unimodal data (the halves of a normal give D ≈ 2.65, of a
/// uniform ≈ 3.46); the valley test has a stated error rate but ignores how
/// far apart the modes are. Outliers cannot pass: fewer than 10 % of the
/// sample cannot form a cluster, and a cluster padded with core values has a
/// large spread (small D) and a sparse peak window (no significant valley).
///
/// Where it fails: modes closer than ~4 pooled standard deviations are not
/// flagged (they show up as a large spread instead); a minority mode under
/// 10 % (or under ~7 samples) is treated as a tail; small samples (< ~30)
/// have little power; three or more modes are reported as two at best; a
/// tight group of ≥ 10 % outliers *is* reported as a mode (which it is);
/// timings quantised to a few timer ticks can look like clean modes. The
/// split position is chosen from the same data, so the nominal α is
/// optimistic; the D requirement compensates.
pub fn bimodality_sorted(sorted: &[f64]) -> Bimodality {
    let n = sorted.len();
    let not_tested = Bimodality {
        bimodal: false,
        split: None,
    };
    if n < BIMODAL_MIN_SAMPLES {
        return not_tested;
    }
    let min_cluster =
        BIMODAL_MIN_CLUSTER_SIZE.max((BIMODAL_MIN_CLUSTER_FRACTION * n as f64).ceil() as usize);
    if 2 * min_cluster > n {
        return not_tested;
    }
    // Work in relative units around the median so the prefix sums of squares
    // stay well conditioned whatever the time unit.
    let center = median_sorted(sorted);
    let scale = if center > 0.0 { center } else { 1.0 };
    let y: Vec<f64> = sorted.iter().map(|x| (x - center) / scale).collect();
    let mut s1 = vec![0.0; n + 1];
    let mut s2 = vec![0.0; n + 1];
    for (i, v) in y.iter().enumerate() {
        s1[i + 1] = s1[i] + v;
        s2[i + 1] = s2[i] + v * v;
    }
    let sse = |a: usize, b: usize| {
        let len = (b - a) as f64;
        let s = s1[b] - s1[a];
        (s2[b] - s2[a] - s * s / len).max(0.0)
    };
    let mut best_k = min_cluster;
    let mut best = f64::INFINITY;
    for k in min_cluster..=(n - min_cluster) {
        let total = sse(0, k) + sse(k, n);
        if total < best {
            best = total;
            best_k = k;
        }
    }
    let (low, high) = sorted.split_at(best_k);
    let (ml, sl) = mean_sd(low);
    let (mh, sh) = mean_sd(high);
    let gap = mh - ml;
    let pooled = (sl * sl + sh * sh).sqrt().max(1e-12 * scale);
    let ashman_d = std::f64::consts::SQRT_2 * gap / pooled;
    let (valley_count, peak_count, valley_p) = if gap > 0.0 {
        let w = gap / 3.0;
        let mid = count_in(sorted, ml + w, mh - w);
        let peak_low = count_in(sorted, ml - w / 2.0, ml + w / 2.0);
        let peak_high = count_in(sorted, mh - w / 2.0, mh + w / 2.0);
        let peak = peak_low.min(peak_high);
        (mid, peak, binomial_half_cdf(mid, mid + peak))
    } else {
        (0, 0, 1.0)
    };
    let bimodal = ashman_d >= BIMODAL_MIN_ASHMAN_D && valley_p <= BIMODAL_VALLEY_ALPHA;
    Bimodality {
        bimodal,
        split: Some(ModeSplit {
            threshold: (low[low.len() - 1] + high[0]) / 2.0,
            low_count: low.len(),
            high_count: high.len(),
            low_median: median_sorted(low),
            high_median: median_sorted(high),
            ashman_d,
            valley_count,
            peak_count,
            valley_p,
        }),
    }
}
