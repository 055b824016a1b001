//! Comparison verdicts on synthetic samples.

use super::common::Gen;
use crate::{compare_samples, CompareConfig, StatsError, Verdict};

fn cfg() -> CompareConfig {
    CompareConfig::default()
}

#[test]
fn identical_distributions_are_no_change() {
    for seed in 0..20 {
        let mut g = Gen::new(seed);
        let a = g.normal(100, 1000.0, 10.0);
        let b = g.normal(100, 1000.0, 10.0);
        let c = compare_samples(&a, &b, &cfg()).unwrap();
        assert_eq!(c.verdict, Verdict::NoChange, "seed {seed}: {c:?}");
        let ci = c.ci.unwrap();
        assert!(ci.low < c.ratio && c.ratio < ci.high);
    }
    // The very same sample: ratio exactly 1.
    let a = Gen::new(1).normal(50, 1000.0, 10.0);
    let c = compare_samples(&a, &a, &cfg()).unwrap();
    assert_eq!(c.verdict, Verdict::NoChange);
    assert_eq!(c.ratio, 1.0);
    assert!(!c.significant);
}

#[test]
fn ten_percent_slower_low_noise_is_slower() {
    let mut covered = 0;
    for seed in 0..20 {
        let mut g = Gen::new(seed);
        let a = g.normal(100, 1000.0, 10.0);
        let b = g.normal(100, 1100.0, 11.0);
        let c = compare_samples(&a, &b, &cfg()).unwrap();
        assert_eq!(c.verdict, Verdict::Slower, "seed {seed}: {c:?}");
        assert!(c.significant);
        let ci = c.ci.unwrap();
        covered += usize::from(ci.low <= 1.1 && 1.1 <= ci.high);
        assert!(ci.low > 1.07 && ci.high < 1.13, "{ci:?}");
        assert!((c.ratio - 1.1).abs() < 0.01);
        // and the reverse direction
        let r = compare_samples(&b, &a, &cfg()).unwrap();
        assert_eq!(r.verdict, Verdict::Faster, "seed {seed}: {r:?}");
    }
    // A 95 % interval should cover the true ratio in ~19 of 20 cases.
    assert!(covered >= 16, "covered {covered}/20");
}

#[test]
fn two_percent_under_five_percent_noise_is_no_change() {
    for seed in 0..20 {
        let mut g = Gen::new(seed);
        let a = g.normal(100, 1000.0, 50.0);
        let b = g.normal(100, 1020.0, 51.0);
        let c = compare_samples(&a, &b, &cfg()).unwrap();
        assert_eq!(c.verdict, Verdict::NoChange, "seed {seed}: {c:?}");
    }
}

#[test]
fn tiny_real_change_is_significant_but_within_noise() {
    let mut g = Gen::new(7);
    let a = g.normal(200, 1000.0, 1.0);
    let b = g.normal(200, 1010.0, 1.0); // +1 %, very quiet
    let c = compare_samples(&a, &b, &cfg()).unwrap();
    assert!(c.significant);
    assert_eq!(c.verdict, Verdict::NoChange);
}

#[test]
fn small_sample_counts() {
    let c = compare_samples(&[1.0, 1.0, 1.0], &[2.0, 2.0, 2.0], &cfg()).unwrap();
    assert_eq!(c.verdict, Verdict::TooFewSamples);
    assert!(c.ci.is_none());
    assert_eq!(c.ratio, 2.0);
    let c = compare_samples(&[1.0], &[1.0; 50], &cfg()).unwrap();
    assert_eq!(c.verdict, Verdict::TooFewSamples);

    // At the minimum (5 each) a large clean change is still detected...
    let mut g = Gen::new(2);
    let a = g.normal(5, 1000.0, 5.0);
    let b = g.normal(5, 1500.0, 7.0);
    assert_eq!(
        compare_samples(&a, &b, &cfg()).unwrap().verdict,
        Verdict::Slower
    );
    // ...and equal small samples are not called a change.
    let b = g.normal(5, 1000.0, 5.0);
    assert_eq!(
        compare_samples(&a, &b, &cfg()).unwrap().verdict,
        Verdict::NoChange
    );

    assert_eq!(compare_samples(&[], &[1.0], &cfg()), Err(StatsError::Empty));
}

#[test]
fn deterministic_and_order_independent() {
    let mut g = Gen::new(9);
    let a = g.normal(80, 1000.0, 30.0);
    let mut b = g.normal(80, 1030.0, 30.0);
    let c1 = compare_samples(&a, &b, &cfg()).unwrap();
    let c2 = compare_samples(&a, &b, &cfg()).unwrap();
    assert_eq!(c1, c2);
    g.shuffle(&mut b);
    assert_eq!(compare_samples(&a, &b, &cfg()).unwrap(), c1);
    let other_seed = CompareConfig { seed: 1, ..cfg() };
    let c3 = compare_samples(&a, &b, &other_seed).unwrap();
    assert_ne!(c3.ci, c1.ci, "the seed must drive the resampling");
}

#[test]
fn invalid_inputs_and_config() {
    let a = [0.0; 10];
    assert_eq!(
        compare_samples(&a, &[1.0; 10], &cfg()),
        Err(StatsError::ZeroBaselineMedian)
    );
    assert!(matches!(
        compare_samples(&[1.0; 10], &[f64::NAN; 10], &cfg()),
        Err(StatsError::NonFinite { .. })
    ));
    for bad in [
        CompareConfig {
            confidence: 1.0,
            ..cfg()
        },
        CompareConfig {
            confidence: f64::NAN,
            ..cfg()
        },
        CompareConfig {
            noise_threshold: -0.1,
            ..cfg()
        },
        CompareConfig {
            resamples: 10,
            ..cfg()
        },
        CompareConfig {
            min_samples: 1,
            ..cfg()
        },
    ] {
        assert!(matches!(
            compare_samples(&[1.0; 10], &[1.0; 10], &bad),
            Err(StatsError::InvalidConfig(_))
        ));
    }
}

#[test]
fn noise_threshold_is_respected() {
    // A clean 3 % change: slower with the default 2 % band, no change with 5 %.
    let mut g = Gen::new(4);
    let a = g.normal(100, 1000.0, 2.0);
    let b = g.normal(100, 1030.0, 2.0);
    assert_eq!(
        compare_samples(&a, &b, &cfg()).unwrap().verdict,
        Verdict::Slower
    );
    let wide = CompareConfig {
        noise_threshold: 0.05,
        ..cfg()
    };
    assert_eq!(
        compare_samples(&a, &b, &wide).unwrap().verdict,
        Verdict::NoChange
    );
}
