//! One JSON object per finished trial, appended to the file named by `ROCM_TEST_EVENTS` (or
//! `--events PATH`). `cargo rocm test` reads these to build its JSON stream, JUnit XML and summary.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// How a trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrialOutcome {
    Passed,
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
    pub kernel: String,
    /// `cpu`, `amd`, `nvidia`; `None` for trials about the library itself (a kernel without check).
    pub backend: Option<String>,
    /// `w64`, `gfx90a`, `sm_90`; `None` or empty when there is none.
    pub target: Option<String>,
    pub outcome: TrialOutcome,
    /// The failure report or the reason for ignoring.
    pub message: Option<String>,
    pub duration_s: f64,
    /// Cases run (generated checks) or 1.
    pub cases: Option<u32>,
    /// Seed of the case generator, for generated checks.
    pub seed: Option<u64>,
    /// Measured bandwidth, for checks that ask for it (`Check::bandwidth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<crate::target::Bandwidth>,
    /// The harness binary's name (the test target).
    pub binary: String,
}

/// Appends events to a file from many trial threads at once.
pub(crate) struct EventSink {
    file: Mutex<File>,
}

impl EventSink {
    pub fn open(path: &Path) -> std::io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(EventSink {
            file: Mutex::new(file),
        })
    }

    /// Write one line. The whole line goes in one `write_all` under the lock so concurrent
    /// trials (and concurrent harness binaries appending to the same file) never interleave.
    pub fn write(&self, event: &TrialEvent) {
        let mut line = serde_json::to_string(event).expect("events serialize");
        line.push('\n');
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        // An unwritable events file must not fail the tests themselves.
        if let Err(e) = f.write_all(line.as_bytes()) {
            eprintln!("rocm-test: could not write the events file: {e}");
        }
    }
}

/// Read an events file (blank lines skipped); a line that does not parse is an error.
pub fn read_events(text: &str) -> Result<Vec<TrialEvent>, serde_json::Error> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_through_a_file() {
        let dir = std::env::temp_dir().join(format!("rocm-test-events-{}", std::process::id()));
        let path = dir.join("e.jsonl");
        let _ = std::fs::remove_file(&path);
        let sink = EventSink::open(&path).unwrap();
        let ev = TrialEvent {
            kind: "trial".into(),
            name: "saxpy::cpu/w64".into(),
            check: "saxpy".into(),
            kernel: "saxpy".into(),
            backend: Some("cpu".into()),
            target: Some("w64".into()),
            outcome: TrialOutcome::Failed,
            message: Some("output `y` …\n".into()),
            duration_s: 0.01,
            cases: Some(3),
            seed: Some(42),
            bandwidth: None,
            binary: "kernels".into(),
        };
        let measured = TrialEvent {
            outcome: TrialOutcome::Passed,
            bandwidth: Some(crate::Bandwidth {
                bytes: 12 << 20,
                kernel_ms: 0.5,
                kernel_gbps: 25.2,
                copy_ms: 0.4,
                copy_gbps: 31.5,
                ratio: 0.8,
            }),
            ..ev.clone()
        };
        sink.write(&measured);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#""kernel_gbps":25.2"#), "{text}");
        assert_eq!(read_events(&text).unwrap(), vec![measured]);
        std::fs::remove_file(&path).unwrap();
        let sink = EventSink::open(&path).unwrap();
        sink.write(&ev);
        sink.write(&ev);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#""outcome":"failed""#), "{text}");
        let back = read_events(&text).unwrap();
        assert_eq!(back, vec![ev.clone(), ev]);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
