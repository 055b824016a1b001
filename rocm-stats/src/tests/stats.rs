//! Summaries, stability classes and bimodality on synthetic samples.

use super::common::Gen;
use crate::stats::{
    self, classify, detect_bimodality, summarize, Stability, StatsError, MAD_SCALE, NOISY_MAX_CV,
    NOISY_MAX_REL_MAD, STABLE_MAX_CV, STABLE_MAX_REL_MAD,
};

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn exact_values_odd_count() {
    let s = summarize(&[3.0, 1.0, 100.0, 2.0, 4.0]).unwrap();
    assert_eq!(s.count, 5);
    assert_eq!(s.median, 3.0);
    assert_eq!(s.mean, 22.0);
    assert_eq!(s.min, 1.0);
    assert_eq!(s.max, 100.0);
    // deviations from 3: [2, 1, 0, 1, 97] -> median 1 -> scaled
    assert!(close(s.mad, MAD_SCALE, 1e-12));
    // sum of squares around 22: 361+441+6084+400+324 = 7610; /4
    assert!(close(s.std_dev, (7610.0f64 / 4.0).sqrt(), 1e-9));
    assert!(close(s.cv, s.std_dev / 22.0, 1e-12));
    assert!(close(s.rel_mad, MAD_SCALE / 3.0, 1e-12));
}

#[test]
fn exact_values_even_count_and_single() {
    let s = summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap();
    assert_eq!(s.median, 2.5);
    // deviations [1.5, 0.5, 0.5, 1.5] -> median 1.0
    assert!(close(s.mad, MAD_SCALE, 1e-12));

    let one = summarize(&[7.0]).unwrap();
    assert_eq!(
        (one.count, one.median, one.std_dev, one.mad),
        (1, 7.0, 0.0, 0.0)
    );
    assert_eq!(one.stability, Stability::TooFewSamples);
    assert!(!one.bimodality.bimodal);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    assert_eq!(summarize(&[]), Err(StatsError::Empty));
    assert!(matches!(
        summarize(&[1.0, f64::NAN]),
        Err(StatsError::NonFinite { index: 1, .. })
    ));
    assert!(matches!(
        summarize(&[f64::INFINITY]),
        Err(StatsError::NonFinite { index: 0, .. })
    ));
    assert!(matches!(
        summarize(&[1.0, 2.0, -0.5]),
        Err(StatsError::Negative { index: 2, .. })
    ));
    assert!(detect_bimodality(&[]).is_err());
    // Messages end with what to do.
    let msg = StatsError::Empty.to_string();
    assert!(msg.contains("run the benchmark"), "{msg}");
}

#[test]
fn zero_medians_do_not_divide_by_zero() {
    let zeros = summarize(&[0.0; 10]).unwrap();
    assert_eq!((zeros.rel_mad, zeros.cv), (0.0, 0.0));
    assert_eq!(zeros.stability, Stability::Stable);

    // Median 0 (more than half the samples are 0): MAD is 0 too, but the
    // CV sees the non-zero half and demotes the class.
    let s = summarize(&[
        0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0,
    ])
    .unwrap();
    assert_eq!((s.median, s.mad, s.rel_mad), (0.0, 0.0, 0.0));
    assert!(s.cv > 1.0 && s.cv.is_finite());
    assert_eq!(s.stability, Stability::Noisy);
}

#[test]
fn stable_tight_normal() {
    for seed in 0..20 {
        let v = Gen::new(seed).normal(100, 1000.0, 5.0); // 0.5 %
        let s = summarize(&v).unwrap();
        assert_eq!(s.stability, Stability::Stable, "seed {seed}: {s:?}");
        assert!(!s.bimodality.bimodal, "seed {seed}");
        assert!(close(s.median, 1000.0, 3.0));
        // scaled MAD estimates sigma for normal data
        assert!(close(s.mad, 5.0, 1.5), "mad {}", s.mad);
        assert!(close(s.std_dev, 5.0, 1.0));
    }
}

#[test]
fn noisy_wide_normal() {
    for seed in 0..20 {
        let v = Gen::new(seed).normal(100, 1000.0, 50.0); // 5 %
        let s = summarize(&v).unwrap();
        assert_eq!(s.stability, Stability::Noisy, "seed {seed}: {s:?}");
        assert!(!s.bimodality.bimodal);
    }
}

#[test]
fn very_wide_is_unstable() {
    let v = Gen::new(3).normal(100, 1000.0, 200.0); // 20 %
    assert_eq!(summarize(&v).unwrap().stability, Stability::Unstable);
}

#[test]
fn classify_thresholds() {
    let c = |r: f64, cv: f64| classify(100, r, cv, false);
    assert_eq!(c(STABLE_MAX_REL_MAD, STABLE_MAX_CV), Stability::Stable);
    assert_eq!(c(STABLE_MAX_REL_MAD * 1.01, 0.0), Stability::Noisy);
    // a heavy tail (CV above the limit) demotes by exactly one level
    assert_eq!(c(0.005, STABLE_MAX_CV * 1.01), Stability::Noisy);
    assert_eq!(c(0.005, 10.0), Stability::Noisy);
    assert_eq!(c(NOISY_MAX_REL_MAD, NOISY_MAX_CV), Stability::Noisy);
    assert_eq!(c(0.05, NOISY_MAX_CV * 1.01), Stability::Unstable);
    assert_eq!(c(NOISY_MAX_REL_MAD * 1.01, 0.0), Stability::Unstable);
    assert_eq!(classify(100, 0.0, 0.0, true), Stability::Unstable);
    assert_eq!(classify(4, 0.0, 0.0, true), Stability::TooFewSamples);
    assert_eq!(classify(5, 0.0, 0.0, false), Stability::Stable);
    assert_eq!(classify(100, f64::NAN, 0.0, false), Stability::Unstable);
    for s in [
        Stability::TooFewSamples,
        Stability::Stable,
        Stability::Noisy,
        Stability::Unstable,
    ] {
        assert_eq!(Stability::parse(s.as_str()), Some(s));
    }
}

#[test]
fn bimodal_two_clusters_20_percent_apart_any_mix() {
    for (i, frac_high) in [0.5, 0.7, 0.3, 0.8, 0.2, 0.85, 0.15, 0.9, 0.1]
        .into_iter()
        .enumerate()
    {
        for seed in 0..10 {
            let v = Gen::new(1000 * i as u64 + seed).bimodal(100, 1000.0, 1200.0, frac_high, 0.01);
            let s = summarize(&v).unwrap();
            let b = &s.bimodality;
            assert!(b.bimodal, "frac {frac_high} seed {seed}: {b:?}");
            assert_eq!(s.stability, Stability::Unstable);
            let split = b.split.as_ref().unwrap();
            let n_high = (100.0 * frac_high).round() as usize;
            assert_eq!(split.high_count, n_high, "frac {frac_high} seed {seed}");
            assert!(split.threshold > 1040.0 && split.threshold < 1160.0);
            assert!(close(split.low_median, 1000.0, 10.0));
            assert!(close(split.high_median, 1200.0, 12.0));
        }
    }
}

#[test]
fn bimodal_detected_in_small_and_large_samples() {
    let v = Gen::new(5).bimodal(20, 1000.0, 1200.0, 0.5, 0.01);
    assert!(detect_bimodality(&v).unwrap().bimodal);
    let v = Gen::new(6).bimodal(2000, 1000.0, 1200.0, 0.25, 0.02);
    assert!(detect_bimodality(&v).unwrap().bimodal);
}

#[test]
fn bimodality_needs_enough_samples() {
    // 9 values: too few to test at all.
    let v = [1.0, 1.0, 1.0, 1.0, 1.2, 1.2, 1.2, 1.2, 1.2];
    let b = detect_bimodality(&v).unwrap();
    assert!(!b.bimodal && b.split.is_none());
}

#[test]
fn a_few_outliers_do_not_make_a_stable_sample_bimodal() {
    for seed in 0..20 {
        let mut g = Gen::new(seed);
        let mut v = g.normal(100, 1000.0, 3.0);
        // 3 identical far outliers (e.g. preemption)
        for x in v.iter_mut().take(3) {
            *x = 3000.0;
        }
        let s = summarize(&v).unwrap();
        assert!(!s.bimodality.bimodal, "seed {seed}: {:?}", s.bimodality);
        assert!(close(s.median, 1000.0, 3.0));
        // The tail shows in the CV and demotes one level, not more.
        assert_eq!(s.stability, Stability::Noisy, "seed {seed}");

        // 5 % scattered outliers between 1.5x and 5x
        let mut v = g.normal(100, 1000.0, 3.0);
        for x in v.iter_mut().take(5) {
            *x = 1500.0 + 3500.0 * g.uniform();
        }
        let s = summarize(&v).unwrap();
        assert!(!s.bimodality.bimodal, "seed {seed}: {:?}", s.bimodality);
        assert_ne!(s.stability, Stability::Unstable);

        // one enormous outlier
        let mut v = g.normal(100, 1000.0, 3.0);
        v[50] = 1.0e9;
        let s = summarize(&v).unwrap();
        assert!(!s.bimodality.bimodal);
        assert_eq!(s.stability, Stability::Noisy);
    }
}

#[test]
fn common_unimodal_shapes_are_not_bimodal() {
    for seed in 0..50 {
        let mut g = Gen::new(seed);
        let n = 100;
        let shapes: Vec<(&str, Vec<f64>)> = vec![
            ("normal", g.normal(n, 1.0, 0.01)),
            (
                "uniform",
                (0..n).map(|_| 1.0 + 0.05 * g.uniform()).collect(),
            ),
            (
                "lognormal",
                (0..n).map(|_| (0.3 * g.std_normal()).exp()).collect(),
            ),
            ("floor+exp", (0..n).map(|_| 1.0 + 0.05 * g.exp()).collect()),
            (
                "t3",
                (0..n)
                    .map(|_| (1.0 + 0.01 * g.student_t(3)).max(0.0))
                    .collect(),
            ),
        ];
        for (name, v) in shapes {
            let b = detect_bimodality(&v).unwrap();
            assert!(!b.bimodal, "{name} seed {seed}: {b:?}");
        }
    }
}

#[test]
fn order_does_not_matter() {
    let mut g = Gen::new(11);
    let mut v = g.bimodal(60, 10.0, 12.0, 0.4, 0.01);
    let a = summarize(&v).unwrap();
    g.shuffle(&mut v);
    let b = summarize(&v).unwrap();
    assert_eq!(a.median, b.median);
    assert_eq!(a.bimodality, b.bimodality);
    assert!(close(a.mean, b.mean, 1e-12));
    assert_eq!(stats::median(&v).unwrap(), a.median);
}
