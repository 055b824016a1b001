//! The results of `cargo rocm bench`, kept: a SQLite history of every run and result, the
//! comparison of two runs with a verdict per benchmark, CSV/JSON export, and the HTML/SVG report.
//!
//! - [`history`]: the database (WAL, one `BEGIN IMMEDIATE` transaction per result so a killed
//!   run keeps what it measured and two runs can write at once; typed errors for files that are
//!   not ours or are damaged, which are never modified), queries, baselines and export.
//! - [`history::compare_runs`]: pairs results of two runs and gives each a verdict with
//!   [`rocm_stats::compare_samples`] (bootstrap interval of the ratio of medians, ±2% band).
//! - [`report`]: per benchmark the history over commits, per sweep the curve against its
//!   parameter, as SVG files and one HTML page that needs no server.
//!
//! Statistics come from `rocm-stats`; the record a bench binary sends is
//! [`rocm_protocol::bench::BenchRecord`] (no runtime, harness or criterion in this crate's tree).

#![forbid(unsafe_code)]

pub mod history;
pub mod report;
mod sys;

pub use history::{compare_runs, History, HistoryError};
pub use sys::rfc3339_utc;
