//! The statistics on synthetic samples: exact values, stability classes, bimodality (with a
//! calibration of its false-positive rate), and comparison verdicts.

mod calibration;
mod common;
mod compare;
mod stats;
