//! What an isolated trial's child process and the harness that started it tell each other
//! (rocm-test runs each trial that launches kernels in a child process of the harness binary, as
//! `cargo nextest` does; starting, watching and naming the child's death stay in rocm-test).
//!
//! The parent re-runs its own executable with the harness's arguments and two variables: the trial
//! to run ([`CHILD_TRIAL`]) and a file for the outcome ([`CHILD_REPORT`]). The child runs only that
//! trial's body and writes a [`ChildReport`] there; before each launch it appends a line saying
//! what it is about to do to the trail file beside it ([`trail_path`]), which is what the parent
//! names when the child dies instead.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Bandwidth;

/// The trial a child process runs.
pub const CHILD_TRIAL: &str = "ROCM_TEST_CHILD_TRIAL";
/// Where the child writes its [`ChildReport`].
pub const CHILD_REPORT: &str = "ROCM_TEST_CHILD_REPORT";
/// How long a child may run before it is killed (seconds; default [`DEFAULT_TRIAL_TIMEOUT_S`]).
pub const TRIAL_TIMEOUT: &str = "ROCM_TEST_TRIAL_TIMEOUT";
/// The limit when [`TRIAL_TIMEOUT`] is unset, seconds.
pub const DEFAULT_TRIAL_TIMEOUT_S: u64 = 600;

/// How a trial body ended, as the child reports it (one JSON object, the whole report file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum ChildReport {
    /// The trial passed.
    Passed {
        /// Cases run (generated checks).
        cases: Option<u32>,
        /// Seed of the case generator, for generated checks.
        seed: Option<u64>,
        /// What the check measured, for checks that ask for it.
        bandwidth: Option<Bandwidth>,
    },
    /// The trial could not run here.
    Ignored {
        /// Why.
        reason: String,
    },
    /// The trial failed.
    Failed {
        /// The failure report.
        message: String,
    },
}

impl ChildReport {
    /// The report as the bytes of its file.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serialising this plain enum cannot fail.
        serde_json::to_vec(self).expect("reports serialize")
    }

    /// A report file's contents, or `None` when it is not a whole report (the child died while
    /// writing it).
    pub fn from_bytes(bytes: &[u8]) -> Option<ChildReport> {
        serde_json::from_slice(bytes).ok()
    }
}

/// The trail file of a report file: `<report>.trail`, one line per launch the child started.
pub fn trail_path(report: &Path) -> PathBuf {
    let mut p = report.as_os_str().to_owned();
    p.push(".trail");
    PathBuf::from(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip() {
        for r in [
            ChildReport::Passed {
                cases: Some(3),
                seed: Some(7),
                bandwidth: None,
            },
            ChildReport::Ignored {
                reason: "no GPU".into(),
            },
            ChildReport::Failed {
                message: "boom".into(),
            },
        ] {
            assert_eq!(ChildReport::from_bytes(&r.to_bytes()), Some(r));
        }
        assert_eq!(
            serde_json::to_string(&ChildReport::Ignored { reason: "x".into() }).unwrap(),
            r#"{"outcome":"ignored","reason":"x"}"#
        );
        assert_eq!(ChildReport::from_bytes(b"{\"outcome\":\"pa"), None);
        assert_eq!(
            trail_path(Path::new("/tmp/r/report.json")),
            Path::new("/tmp/r/report.json.trail")
        );
    }
}
