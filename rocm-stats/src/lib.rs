//! Statistics over kernel timings, shared by `cargo rocm bench` (reports, comparisons),
//! `cargo rocm profile` (stability verdicts) and `cargo rocm tune` (re-measuring noisy winners):
//!
//! - [`stats`]: median/mean/min/max/stddev/MAD/CV of one sample, a stability class
//!   ([`Stability`]: stable, noisy, unstable, with the thresholds as constants) and a bimodality
//!   flag (clock changes in the middle of a measurement).
//! - [`compare`]: faster / slower / no change between two samples, from a seeded bootstrap
//!   interval of the ratio of medians and a ±2% noise band.

#![forbid(unsafe_code)]

pub mod compare;
pub mod stats;

pub use compare::{compare_samples, CompareConfig, Comparison, ConfidenceInterval, Verdict};
pub use stats::{summarize, Stability, StatsError, Summary};

#[cfg(test)]
mod tests;
