//! `rocm-protocol`: what cargo-rocm's processes tell each other, in one place (as
//! cargo-nextest's `nextest-metadata`). Each format has one definition that its writer and its
//! readers share:
//!
//! - the trial events: one JSON object per finished trial ([`TrialEvent`]), appended by a rocm-test
//!   harness to the file named by `ROCM_TEST_EVENTS` (or `--events PATH`); `cargo rocm test` reads
//!   them to build its JSON stream, JUnit XML and summary. The options travel the other way as
//!   environment variables, named once in [`env`](mod@env); [`partition`] is `--partition`'s shard rule;
//! - [`tune`]: the same for `cargo rocm tune`: a request, progress events and the report;
//! - [`isolate`]: the report of a trial run in a child process of its harness;
//! - [`bench`](mod@bench): the results stream bench binaries (`rocm-bench`) write for `cargo rocm bench`, and
//!   its records, which the bench history stores;
//! - [`launch_log`]: the runtime's launch log (`ROCM_LAUNCH_LOG`), read by `cargo rocm profile`;
//! - [`exit`]: the exit codes of `cargo rocm` and of harness binaries, and [`signal`] the names
//!   of the signals that end a child.
//!
//! It depends on serde, serde_json and thiserror, and on `rocm-kernels-core` for the `Backend`
//! names: no runtime, no harness. The default feature `sink` adds the trial events' writer
//! ([`EventSink`], which locks the file with fs4); the runtime, which only writes the launch log,
//! leaves it out.

use serde::{Deserialize, Serialize};

pub mod bench;
pub mod exit;
pub mod isolate;
pub mod launch_log;
pub mod partition;
pub mod signal;
#[cfg(feature = "sink")]
mod sink;
pub mod tune;

#[cfg(feature = "sink")]
pub use sink::EventSink;

/// How a trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrialOutcome {
    /// Every check of the trial held.
    Passed,
    /// The trial failed; `message` holds the failure report.
    Failed,
    /// Could not run here (backend absent, opted out); `message` says why.
    Ignored,
}

/// The record of one trial, as written to the events file (one JSON object per line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialEvent {
    /// Always `"trial"`, so consumers can mix this stream with others.
    #[serde(rename = "type")]
    pub kind: String,
    /// The libtest trial name: `saxpy::cpu/w64`.
    pub name: String,
    /// The check's name (the kernel's, unless renamed with `Check::named`).
    pub check: String,
    /// The kernel under test, in its one spelling (`saxpy`, `scale<float>`).
    pub kernel: String,
    /// `cpu`, `amd`, `nvidia`; `None` for trials about the library itself (a kernel without check).
    pub backend: Option<String>,
    /// `w64`, `gfx90a`, `sm_90`; `None` or empty when there is none.
    pub target: Option<String>,
    /// How the trial ended.
    pub outcome: TrialOutcome,
    /// The failure report or the reason for ignoring.
    pub message: Option<String>,
    /// Wall time of the trial, in seconds.
    pub duration_s: f64,
    /// Cases run (generated checks) or 1.
    pub cases: Option<u32>,
    /// Seed of the case generator, for generated checks.
    pub seed: Option<u64>,
    /// Measured bandwidth, for checks that ask for it (`Check::bandwidth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<Bandwidth>,
    /// The harness binary's name (the test target).
    pub binary: String,
}

/// The environment variables that carry `cargo rocm test`'s options to the harness binaries
/// (each also a harness flag, see `rocm_test::HarnessOptions`).
pub mod env {
    /// The events file to append to.
    pub const EVENTS: &str = "ROCM_TEST_EVENTS";
    /// Only run trials of these backends (comma separated).
    pub const BACKEND: &str = "ROCM_TEST_BACKEND";
    /// Fail, instead of ignoring, trials of these backends that cannot run here.
    pub const REQUIRE_BACKEND: &str = "ROCM_TEST_REQUIRE_BACKEND";
    /// Wave sizes of the cpu backend (`32,64`).
    pub const WAVE_SIZE: &str = "ROCM_TEST_WAVE_SIZE";
    /// Seed of the generated inputs.
    pub const SEED: &str = "ROCM_TEST_SEED";
    /// Generated cases per trial.
    pub const CASES: &str = "ROCM_TEST_CASES";
    /// Which cpu launches run under the race detector: `first` (the first cases of each trial,
    /// the default), a number of first cases, `all` (or `1`), `off` (or `0`).
    pub const RACE_CHECK: &str = "ROCM_TEST_RACE_CHECK";
    /// How the cpu backend runs a block's threads: `regions` (default), `fibers`, `blocks`.
    pub const CPU_EXEC: &str = "ROCM_CPU_EXEC";
    /// `0` runs trials in the harness's process instead of one process each.
    pub const ISOLATE: &str = "ROCM_TEST_ISOLATE";
    /// Which GPUs of each backend get trials: `all` (default), `N` (the first N), `0,2` or `#1`
    /// (ordinals). See [`super::DeviceSelection`].
    pub const DEVICES: &str = "ROCM_TEST_DEVICES";
    /// Run only one shard of the trials: `count:K/N` or `hash:K/N` (see [`crate::partition`]).
    pub const PARTITION: &str = "ROCM_TEST_PARTITION";
}

/// Which devices of a backend to use (`--devices`): ordinals count each backend's devices from 0
/// in the driver's order (`cargo rocm detect` lists them).
///
/// ```
/// use rocm_protocol::DeviceSelection;
/// let s = DeviceSelection::parse("0,2").unwrap();
/// assert_eq!(s.pick(4), vec![0, 2]);
/// assert_eq!(DeviceSelection::parse("2").unwrap().pick(4), vec![0, 1]);
/// assert_eq!(DeviceSelection::parse("#1").unwrap().pick(4), vec![1]);
/// assert_eq!(DeviceSelection::All.pick(3), vec![0, 1, 2]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceSelection {
    /// Every device.
    #[default]
    All,
    /// The first N devices.
    First(usize),
    /// These ordinals.
    Ordinals(Vec<usize>),
}

impl DeviceSelection {
    /// `all`, `N` (the first N devices), `I,J,…` or `#I` (ordinals).
    pub fn parse(text: &str) -> Result<DeviceSelection, String> {
        let t = text.trim();
        let bad = || {
            format!(
                "`{text}` is not a device selection: `all`, a count (`2`: the first two), or \
                 ordinals (`0,1`; one ordinal is `#1`)"
            )
        };
        if t.eq_ignore_ascii_case("all") {
            return Ok(DeviceSelection::All);
        }
        if let Some(one) = t.strip_prefix('#') {
            return one
                .trim()
                .parse()
                .map(|i| DeviceSelection::Ordinals(vec![i]))
                .map_err(|_| bad());
        }
        if t.contains(',') {
            let mut ids: Vec<usize> = t
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| s.trim_start_matches('#').parse().map_err(|_| bad()))
                .collect::<Result<_, _>>()?;
            if ids.is_empty() {
                return Err(bad());
            }
            ids.sort_unstable();
            ids.dedup();
            return Ok(DeviceSelection::Ordinals(ids));
        }
        match t.parse::<usize>() {
            Ok(0) | Err(_) => Err(bad()),
            Ok(n) => Ok(DeviceSelection::First(n)),
        }
    }

    /// The ordinals selected among `available` devices (ordinals past the end are left out).
    pub fn pick(&self, available: usize) -> Vec<usize> {
        match self {
            DeviceSelection::All => (0..available).collect(),
            DeviceSelection::First(n) => (0..available.min(*n)).collect(),
            DeviceSelection::Ordinals(ids) => {
                ids.iter().copied().filter(|&i| i < available).collect()
            }
        }
    }

    /// The ordinals asked for that do not exist among `available` devices.
    pub fn missing(&self, available: usize) -> Vec<usize> {
        match self {
            DeviceSelection::Ordinals(ids) => {
                ids.iter().copied().filter(|&i| i >= available).collect()
            }
            _ => Vec::new(),
        }
    }
}

impl std::fmt::Display for DeviceSelection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceSelection::All => f.write_str("all"),
            DeviceSelection::First(n) => write!(f, "{n}"),
            DeviceSelection::Ordinals(ids) if ids.len() == 1 => write!(f, "#{}", ids[0]),
            DeviceSelection::Ordinals(ids) => f.write_str(
                &ids.iter()
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        }
    }
}

/// What a check measured of its kernel: the kernel and a device-to-device copy moving the same
/// number of bytes, each the median of several runs (the same method for both, so their ratio
/// is fair).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Bandwidth {
    /// Bytes the kernel must move through device memory (as the check declares).
    pub bytes: u64,
    /// The kernel's time, in milliseconds.
    pub kernel_ms: f64,
    /// `bytes` over the kernel's time, in GB/s (10⁹ bytes per second).
    pub kernel_gbps: f64,
    /// The copy's time, in milliseconds.
    pub copy_ms: f64,
    /// `bytes` over the copy's time, in GB/s (10⁹ bytes per second).
    pub copy_gbps: f64,
    /// `kernel_gbps / copy_gbps`.
    pub ratio: f64,
}

impl std::fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.1} GB/s ({:.3} ms for {:.2} GiB); device-to-device copy {:.1} GB/s; ratio {:.1}%",
            self.kernel_gbps,
            self.kernel_ms,
            self.bytes as f64 / (1u64 << 30) as f64,
            self.copy_gbps,
            self.ratio * 100.0
        )
    }
}

/// Read an events file (blank lines skipped); a line that does not parse is an error.
pub fn read_events(text: &str) -> Result<Vec<TrialEvent>, serde_json::Error> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect()
}

/// Cases of each cpu trial run under the race detector by default.
pub const DEFAULT_RACE_CASES: u32 = 3;

/// Which cpu launches of a trial run under the race detector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RaceCheck {
    /// No launch runs under the race detector.
    Off,
    /// The first N cases, and every launch after a case failed (shrinking keeps the check that
    /// found the failure).
    First(u32),
    /// Every cpu launch of the trial runs under the race detector.
    All,
}

impl Default for RaceCheck {
    fn default() -> Self {
        RaceCheck::First(DEFAULT_RACE_CASES)
    }
}

impl RaceCheck {
    /// Whether launch number `case` (from 0) runs race-checked, `failed` once a case failed.
    pub fn covers(self, case: u64, failed: bool) -> bool {
        match self {
            RaceCheck::Off => false,
            RaceCheck::All => true,
            RaceCheck::First(n) => failed || case < u64::from(n),
        }
    }

    /// `first`, `all`, `off`, or a count of first cases.
    pub fn parse(value: &str) -> Option<RaceCheck> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "first" => Some(RaceCheck::default()),
            "all" | "1" | "on" | "true" | "yes" => Some(RaceCheck::All),
            "off" | "0" | "false" | "no" | "none" => Some(RaceCheck::Off),
            n => n.parse::<u32>().ok().map(RaceCheck::First),
        }
    }

    /// The flag that selects this (for "reproduce with" lines).
    pub fn flag(self) -> String {
        match self {
            RaceCheck::Off => "--race-check=off".into(),
            RaceCheck::All => "--race-check=all".into(),
            RaceCheck::First(n) => format!("--race-check={n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_selections() {
        assert_eq!(DeviceSelection::parse("all"), Ok(DeviceSelection::All));
        assert_eq!(DeviceSelection::parse(" 3 "), Ok(DeviceSelection::First(3)));
        assert_eq!(
            DeviceSelection::parse("2,0,2"),
            Ok(DeviceSelection::Ordinals(vec![0, 2]))
        );
        assert_eq!(
            DeviceSelection::parse("#1"),
            Ok(DeviceSelection::Ordinals(vec![1]))
        );
        for bad in ["", "0", "x", "1,y", "#", ","] {
            assert!(DeviceSelection::parse(bad).is_err(), "{bad}");
        }
        let s = DeviceSelection::parse("1,5").unwrap();
        assert_eq!(s.pick(2), vec![1]);
        assert_eq!(s.missing(2), vec![5]);
        assert_eq!(DeviceSelection::First(4).pick(2), vec![0, 1]);
        for text in ["all", "3", "#1", "0,2"] {
            assert_eq!(DeviceSelection::parse(text).unwrap().to_string(), text);
        }
    }
}
