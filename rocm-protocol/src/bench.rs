//! What a bench binary tells `cargo rocm bench`: one JSON object per line, appended to the file
//! named by `ROCM_BENCH_EVENTS` as each benchmark finishes, so the command records every result
//! as soon as it exists (a crash or a kill later loses nothing already measured). The options
//! travel the other way as the environment variables of [`vars`]. `rocm-bench` writes the stream,
//! `cargo rocm bench` reads it, `rocm-bench-history` stores its records.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// The variables `cargo rocm bench` sets for bench binaries (all optional: a plain `cargo bench`
/// runs on every device with criterion's defaults).
pub mod vars {
    /// File to append [`BenchEvent`](super::BenchEvent) lines to.
    pub const EVENTS: &str = "ROCM_BENCH_EVENTS";
    /// Backends to benchmark on, comma separated (`cpu`, `amd`, `nvidia`).
    pub const BACKEND: &str = "ROCM_BENCH_BACKEND";
    /// Only devices whose place (`nvidia/sm_90`, `cpu/w64`) or name contains one of these
    /// comma-separated words.
    pub const DEVICE: &str = "ROCM_BENCH_DEVICE";
    /// Criterion's sample count per benchmark (at least 10).
    pub const SAMPLES: &str = "ROCM_BENCH_SAMPLES";
    /// Criterion's warm-up time, in milliseconds.
    pub const WARMUP_MS: &str = "ROCM_BENCH_WARMUP_MS";
    /// Criterion's measurement time, in milliseconds.
    pub const MEASURE_MS: &str = "ROCM_BENCH_MEASURE_MS";
    /// Suites: run the small (smoke-test) sizes even on a GPU (`1`).
    pub const SMALL: &str = "ROCM_BENCH_SMALL";
}

/// One line of the events file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BenchEvent {
    /// A benchmark started measuring (a crash after it names the benchmark it was in).
    Start {
        /// The benchmark id.
        id: String,
    },
    /// A benchmark finished.
    Result(Box<BenchRecord>),
}

/// A sweep parameter and its value at one point (`block_size` = `256`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    /// The parameter's name.
    pub name: String,
    /// Its value at this point, as the sweep prints it.
    pub value: String,
}

/// What throughput figure a benchmark counts, per iteration (criterion's `Throughput`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThroughputKind {
    /// Bytes moved per iteration (rates in bytes per second).
    Bytes,
    /// Elements processed per iteration.
    Elements,
    /// Floating-point operations per iteration.
    Flops,
}

impl ThroughputKind {
    /// `bytes`, `elements`, `flops`.
    pub fn as_str(self) -> &'static str {
        match self {
            ThroughputKind::Bytes => "bytes",
            ThroughputKind::Elements => "elements",
            ThroughputKind::Flops => "flops",
        }
    }

    /// Inverse of [`ThroughputKind::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "bytes" => ThroughputKind::Bytes,
            "elements" => ThroughputKind::Elements,
            "flops" => ThroughputKind::Flops,
            _ => return None,
        })
    }
}

/// Where a result was measured. The bench binary fills what the runtime knows (backend, place,
/// name, arch); `cargo rocm bench` adds what the machine says (driver, toolchain, clocks).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceRecord {
    /// `cpu`, `amd`, `nvidia`.
    pub backend: String,
    /// The trial place: `cpu/w64`, `nvidia/sm_90`, `amd/gfx90a`.
    pub place: String,
    /// For people: `NVIDIA H100 80GB HBM3`, `cpu (2 threads, wave 64)`.
    pub name: String,
    /// `sm_90`, `gfx90a`, `x86_64`.
    pub arch: Option<String>,
    /// The GPU driver's version, as the machine reports it.
    #[serde(default)]
    pub driver_version: Option<String>,
    /// The kernel toolchain's version (ROCm, CUDA).
    #[serde(default)]
    pub toolchain_version: Option<String>,
    /// The GPU's core clock while measuring, in MHz, when the machine tells.
    #[serde(default)]
    pub gpu_clock_mhz: Option<f64>,
    /// The GPU's memory clock while measuring, in MHz, when the machine tells.
    #[serde(default)]
    pub mem_clock_mhz: Option<f64>,
}

/// One finished benchmark: its id, where it ran, and its samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRecord {
    /// The full id: `saxpy/cpu/w64/n=1M`, `gpu-stream/nvidia/sm_90/triad/256`.
    pub id: String,
    /// What the id is without its parameter value: the criterion group for a plain benchmark,
    /// the sweep for a sweep point (`gpu-stream/nvidia/sm_90/triad`).
    pub group: String,
    /// The sweep parameter at this point, if the benchmark is a point of a sweep.
    pub param: Option<Param>,
    /// Where it was measured.
    pub device: DeviceRecord,
    /// Unit of `samples`: `ns` (time per iteration) for timings; suites may record other units
    /// (`cycles`) for what they measure.
    pub unit: String,
    /// One value per sample.
    pub samples: Vec<f64>,
    /// Work per iteration, for rates.
    pub throughput: Option<(ThroughputKind, f64)>,
    /// A note for every reader of the result (`smoke test: small sizes on the cpu backend`).
    #[serde(default)]
    pub note: Option<String>,
}

/// Appends events to the file `ROCM_BENCH_EVENTS` names (or nowhere when it is unset).
pub struct EventSink {
    file: Option<Mutex<File>>,
}

impl EventSink {
    /// The sink `cargo rocm bench` asked for through `ROCM_BENCH_EVENTS`, or one that drops
    /// everything (a plain `cargo bench`).
    pub fn from_env() -> std::io::Result<Self> {
        match std::env::var_os(vars::EVENTS) {
            Some(path) if !path.is_empty() => EventSink::open(Path::new(&path)),
            _ => Ok(EventSink { file: None }),
        }
    }

    /// A sink that drops everything.
    pub fn disabled() -> Self {
        EventSink { file: None }
    }

    /// Appends to `path` (created with its folders).
    pub fn open(path: &Path) -> std::io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(EventSink {
            file: Some(Mutex::new(file)),
        })
    }

    /// Writes one line, whole, in one `write_all` (the reader never sees half a line), and
    /// flushes it to the file at once.
    pub fn write(&self, event: &BenchEvent) -> std::io::Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let mut line = serde_json::to_string(event).map_err(std::io::Error::other)?;
        line.push('\n');
        let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
        f.write_all(line.as_bytes())?;
        f.flush()
    }
}

/// Reads events from a growing file: each call returns the complete lines added since the last
/// one (a line still being written waits for the next call).
#[derive(Debug, Default)]
pub struct EventReader {
    offset: u64,
    partial: String,
}

/// A line of the events file that is not an event.
#[derive(Debug, thiserror::Error)]
#[error("line {line} of the bench events file is not an event ({source}): {text}")]
pub struct BadEvent {
    /// The line's number in the file, from 1.
    pub line: usize,
    /// The line as read.
    pub text: String,
    /// Why it did not parse.
    #[source]
    pub source: serde_json::Error,
}

impl EventReader {
    /// The new complete lines of `path` (nothing when it does not exist yet), each parsed.
    pub fn poll(&mut self, path: &Path) -> std::io::Result<Vec<Result<BenchEvent, BadEvent>>> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        file.seek(SeekFrom::Start(self.offset))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        self.offset += bytes.len() as u64;
        self.partial.push_str(&String::from_utf8_lossy(&bytes));
        let mut out = Vec::new();
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            let text = line.trim();
            if text.is_empty() {
                continue;
            }
            out.push(serde_json::from_str(text).map_err(|source| BadEvent {
                line: out.len() + 1,
                text: text.to_owned(),
                source,
            }));
        }
        Ok(out)
    }
}

/// Which devices `cargo rocm bench --backend/--device` asked for: [`vars::BACKEND`] and
/// [`vars::DEVICE`], read by the bench binaries and checked by the command before it builds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BenchSelection {
    /// Only these backends (empty: all).
    pub backends: Vec<rocm_kernels_core::Backend>,
    /// Only devices whose place (`nvidia/sm_90#1`) or name contains one of these (empty: all).
    pub devices: Vec<String>,
}

impl BenchSelection {
    /// The selection in this process's environment.
    ///
    /// # Errors
    /// A backend name that is not `cpu`, `amd` or `nvidia`.
    pub fn from_env() -> Result<Self, String> {
        let list = |var: &str| -> Vec<String> {
            std::env::var(var)
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let backends = list(vars::BACKEND)
            .iter()
            .map(|b| b.parse().map_err(|e| format!("{}: {e}", vars::BACKEND)))
            .collect::<Result<_, _>>()?;
        Ok(BenchSelection {
            backends,
            devices: list(vars::DEVICE),
        })
    }

    /// Whether the device of `backend` at `place` (`cpu/w64`, `nvidia/sm_90#1`), called `name`,
    /// is selected.
    pub fn admits(&self, backend: rocm_kernels_core::Backend, place: &str, name: &str) -> bool {
        (self.backends.is_empty() || self.backends.contains(&backend))
            && (self.devices.is_empty()
                || self
                    .devices
                    .iter()
                    .any(|d| place.contains(d.as_str()) || name.contains(d.as_str())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_through_a_growing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.jsonl");
        let sink = EventSink::open(&path).unwrap();
        let mut reader = EventReader::default();
        assert!(reader.poll(&path).unwrap().is_empty());
        let record = BenchRecord {
            id: "saxpy/cpu/w64/n=1M".into(),
            group: "saxpy/cpu/w64".into(),
            param: None,
            device: DeviceRecord {
                backend: "cpu".into(),
                place: "cpu/w64".into(),
                name: "cpu".into(),
                ..Default::default()
            },
            unit: "ns".into(),
            samples: vec![1.0, 2.5],
            throughput: Some((ThroughputKind::Bytes, 12.0)),
            note: None,
        };
        sink.write(&BenchEvent::Start {
            id: record.id.clone(),
        })
        .unwrap();
        // Half a line is left for the next poll.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"kind\":\"sta")
            .unwrap();
        let got = reader.poll(&path).unwrap();
        assert_eq!(got.len(), 1);
        assert!(matches!(&got[0], Ok(BenchEvent::Start { id }) if id == &record.id));
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"rt\",\"id\":\"x\"}\n")
            .unwrap();
        sink.write(&BenchEvent::Result(Box::new(record.clone())))
            .unwrap();
        let got = reader.poll(&path).unwrap();
        assert!(matches!(&got[0], Ok(BenchEvent::Start { id }) if id == "x"));
        assert_eq!(
            got[1].as_ref().unwrap(),
            &BenchEvent::Result(Box::new(record))
        );
    }
}
