//! Writing the trial events file (feature `sink`): many harness threads and processes append
//! to one file.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use fs4::fs_std::FileExt;

use crate::TrialEvent;

/// Appends events to a file from many trial threads at once.
pub struct EventSink {
    file: Mutex<File>,
}

impl EventSink {
    /// Appends to `path`, creating it and its folders.
    ///
    /// # Errors
    ///
    /// When the folder or the file cannot be created or opened for appending.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(EventSink {
            file: Mutex::new(file),
        })
    }

    /// Write one line. The whole line goes in one `write_all` under the mutex (other trial
    /// threads) and an exclusive `flock` on the file (other processes: under cargo-nextest every
    /// trial is a process of its own, all appending to one file), so lines never interleave,
    /// whatever the size of a line or the file system.
    pub fn write(&self, event: &TrialEvent) {
        let mut line = serde_json::to_string(event).expect("events serialize");
        line.push('\n');
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let locked = FileExt::lock_exclusive(&*f).is_ok();
        // An unwritable events file must not fail the tests themselves.
        if let Err(e) = f.write_all(line.as_bytes()).and_then(|()| f.flush()) {
            eprintln!("rocm-test: could not write the events file: {e}");
        }
        if locked {
            let _ = FileExt::unlock(&*f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{read_events, Bandwidth, TrialOutcome};

    #[test]
    fn events_round_trip_through_a_file() {
        let dir = std::env::temp_dir().join(format!("rocm-protocol-{}", std::process::id()));
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
            bandwidth: Some(Bandwidth {
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

    /// Under cargo-nextest every trial is a process appending to one file: sinks opened
    /// separately (as processes do) and writing long lines at once never interleave them.
    #[test]
    fn separate_sinks_append_whole_lines() {
        let dir = std::env::temp_dir().join(format!("rocm-protocol-par-{}", std::process::id()));
        let path = dir.join("e.jsonl");
        let _ = std::fs::remove_dir_all(&dir);
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let sink = EventSink::open(&path).unwrap();
                    for i in 0..50 {
                        sink.write(&TrialEvent {
                            kind: "trial".into(),
                            name: format!("k{t}_{i}::cpu/w64"),
                            check: "k".into(),
                            kernel: "k".into(),
                            backend: Some("cpu".into()),
                            target: Some("w64".into()),
                            outcome: TrialOutcome::Failed,
                            // Longer than a pipe buffer, so one write could be split.
                            message: Some("x".repeat(70_000)),
                            duration_s: 0.0,
                            cases: None,
                            seed: None,
                            bandwidth: None,
                            binary: "kernels".into(),
                        });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let back = read_events(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(back.len(), 8 * 50);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
