//! Calibration of the bimodality thresholds: prints detection rates.
//! `cargo test --release -p rocm-stats calibration -- --ignored --nocapture`

use super::common::Gen;
use crate::stats::detect_bimodality;

fn rate(trials: usize, mut make: impl FnMut(&mut Gen) -> Vec<f64>) -> (f64, f64, f64) {
    let mut g = Gen::new(99);
    let mut hits = 0;
    let mut max_d: f64 = 0.0;
    let mut min_v = f64::MAX;
    for _ in 0..trials {
        let b = detect_bimodality(&make(&mut g)).unwrap();
        if b.bimodal {
            hits += 1;
        }
        if let Some(s) = b.split {
            max_d = max_d.max(s.ashman_d);
            min_v = min_v.min(s.valley_p);
        }
    }
    (hits as f64 / trials as f64, max_d, min_v)
}

#[test]
#[ignore]
fn print_rates() {
    let t = 2000;
    for n in [10, 15, 20, 30, 50, 100, 300, 1000] {
        let trials = if n >= 300 { 300 } else { t };
        println!("n={n}");
        println!(
            "  normal      {:?}",
            rate(trials, |g| g.normal(n, 1.0, 0.01))
        );
        println!(
            "  uniform     {:?}",
            rate(trials, |g| (0..n)
                .map(|_| 1.0 + 0.05 * g.uniform())
                .collect())
        );
        println!(
            "  lognormal.3 {:?}",
            rate(trials, |g| (0..n)
                .map(|_| (0.3 * g.std_normal()).exp())
                .collect())
        );
        println!(
            "  floor+exp   {:?}",
            rate(trials, |g| (0..n).map(|_| 1.0 + 0.05 * g.exp()).collect())
        );
        println!(
            "  t3          {:?}",
            rate(trials, |g| (0..n)
                .map(|_| (1.0 + 0.01 * g.student_t(3)).max(0.0))
                .collect())
        );
        println!(
            "  t1(cauchy)  {:?}",
            rate(trials, |g| (0..n)
                .map(|_| (1.0 + 0.01 * g.student_t(1)).max(0.0))
                .collect())
        );
        println!(
            "  5% outl x3  {:?}",
            rate(trials, |g| {
                let mut v = g.normal(n, 1.0, 0.01);
                for x in v.iter_mut().take(n / 20) {
                    *x *= 3.0;
                }
                v
            })
        );
        println!(
            "  9% outl x3  {:?}",
            rate(trials, |g| {
                let mut v = g.normal(n, 1.0, 0.01);
                for x in v.iter_mut().take(n * 9 / 100) {
                    *x = 3.0 + 0.5 * g.uniform();
                }
                v
            })
        );
        for sd in [0.01, 0.03, 0.05] {
            for f in [0.5, 0.3, 0.2, 0.15, 0.1] {
                println!(
                    "  bimodal sd={sd} frac={f} {:?}",
                    rate(trials, |g| g.bimodal(n, 1.0, 1.2, f, sd))
                );
            }
        }
    }
}
