//! The gpu-benches microbenchmarks (github.com/te42kyfo/gpu-benches) as HIP kernels
//! (`kernels/gpu_benches.hip`) run through this repository's runtime on every backend:
//! `cargo rocm bench --suite gpu-benches`.
//!
//! Each benchmark runs the sweep of its original, times launches with device events, reduces
//! the repetitions with the original's statistic (`series::Series`), prints the original's
//! columns and records every sweep point for the history and its plots. On the cpu backend
//! (and with `--small`) the sizes are cut down so the suite runs in seconds: a smoke test of the
//! kernels and the plumbing, labelled so in every record, not a measurement of the CPU.

pub mod benches;
mod series;

use std::fmt::Write as _;

use rocm_bench::{BenchEvent, BenchRecord, BenchTarget, EventSink, Param, ThroughputKind};
use rocm_kernels::runtime::{Buffer, Kernel, LaunchConfig, Module, Result, Stream};
use rocm_kernels::Backend;

/// The suite's kernels.
pub static KERNELS: &rocm_kernels::KernelLibrary = rocm_kernels::include_kernels!("gpu_benches");

/// The note every record of a reduced run carries.
pub const SMOKE_NOTE: &str = "smoke test: reduced sizes, not a measurement of the device";

/// What a benchmark runs with: one device, its module and stream, where results go.
pub struct Ctx {
    /// The device, and its place in benchmark ids.
    pub target: BenchTarget,
    /// The suite's kernels, loaded on the device.
    pub(crate) module: Module,
    /// The stream every benchmark launches on and times.
    pub(crate) stream: Stream,
    /// Reduced sizes (the cpu backend, or `--small`).
    pub small: bool,
    /// Multiprocessors (compute units; worker threads on cpu).
    pub(crate) sm_count: u32,
    /// Threads a multiprocessor holds at most (2048 on the GPUs the originals target).
    pub(crate) threads_per_sm: u32,
    /// Shader clock for cycle counts, in MHz, where readable.
    pub(crate) clock_mhz: Option<f64>,
    sink: EventSink,
    /// The benchmark's table, printed as it grows.
    pub table: String,
}

impl Ctx {
    /// Loads the suite's kernels on `target`'s device and opens a stream there; `small` (forced on
    /// the cpu backend) reduces every sweep. Results go to the events file `cargo rocm bench`
    /// names; without one they are printed only.
    ///
    /// # Errors
    ///
    /// The runtime's error when the kernels cannot be loaded or the stream cannot be created.
    pub fn new(target: BenchTarget, small: bool) -> Result<Ctx> {
        let device = target.device().clone();
        let module = device.load(KERNELS)?;
        let stream = device.stream()?;
        let small = small || device.backend() == Backend::Cpu;
        let info = device.info();
        Ok(Ctx {
            sm_count: info.compute_units.max(1),
            threads_per_sm: 2048,
            clock_mhz: clock_mhz(device.backend()),
            target,
            module,
            stream,
            small,
            sink: EventSink::from_env().unwrap_or_else(|e| {
                eprintln!(
                    "gpu-benches: cannot open the events file: {e}; results are not recorded"
                );
                EventSink::disabled()
            }),
            table: String::new(),
        })
    }

    /// The suite's kernel `name`.
    pub(crate) fn kernel(&self, name: &str) -> Result<Kernel> {
        self.module.kernel(name)
    }

    /// Prints a line of the table (and keeps it).
    pub(crate) fn line(&mut self, text: impl AsRef<str>) {
        println!("{}", text.as_ref());
        let _ = writeln!(self.table, "{}", text.as_ref());
    }

    /// Records one sweep point: `BENCH/PLACE/VARIANT/VALUE`.
    pub(crate) fn record(&self, point: Point<'_>) {
        // A sweep is `BENCH/PLACE/VARIANT`; one without variants is `…/all`, so that the
        // report titles every plot `BENCH/PLACE` and labels its lines by variant.
        let base = format!(
            "{}/{}/{}",
            point.bench,
            self.target.place(),
            point.variant.unwrap_or("all")
        );
        let record = BenchRecord {
            id: format!("{base}/{}", point.value),
            group: base,
            param: Some(Param {
                name: point.param.to_owned(),
                value: point.value.to_string(),
            }),
            device: self.target.record(),
            unit: point.unit.to_owned(),
            samples: point.samples,
            throughput: point.bytes.map(|b| (ThroughputKind::Bytes, b)),
            note: self.small.then(|| SMOKE_NOTE.to_owned()),
        };
        let _ = self.sink.write(&BenchEvent::Start {
            id: record.id.clone(),
        });
        if let Err(e) = self.sink.write(&BenchEvent::Result(Box::new(record))) {
            eprintln!("gpu-benches: could not record a result: {e}");
        }
    }

    /// Sets every element of `buffer` to `value` with the suite's `fill` kernel (the originals'
    /// `initKernel`): on the device, where `Buffer::fill` of a `f64` stages the whole pattern
    /// through the host (gigabytes for gpu-l2-cache's largest data sets).
    pub fn fill(&self, buffer: &mut Buffer<f64>, value: f64) -> Result<()> {
        let blocks = (self.sm_count * 8).max(1);
        let n = buffer.len() as i64;
        self.kernel("fill")?
            .launch(LaunchConfig::new((blocks, 1, 1), (256, 1, 1)))
            .arg(buffer)
            .arg(&n)
            .arg(&value)
            .run(&self.stream)?;
        self.stream.synchronize()
    }

    /// Device seconds of `iters` back-to-back calls of `launch`.
    pub(crate) fn time<F>(&self, iters: u64, launch: F) -> Result<f64>
    where
        F: FnMut(&Stream) -> Result<()>,
    {
        Ok(rocm_bench::time_launches(&self.stream, iters, launch)?.as_secs_f64())
    }
}

/// One recorded sweep point.
pub(crate) struct Point<'a> {
    /// The benchmark (`gpu-stream`).
    pub bench: &'a str,
    /// The line of the plot it belongs to (`h2d-pinned`, `block256`), if the benchmark has several.
    pub variant: Option<&'a str>,
    /// What the sweep varies (`data_set_bytes`, `flops_per_element`).
    pub param: &'a str,
    /// The parameter's value at this point.
    pub value: u64,
    /// `ns` (per launch) or `cycles`.
    pub unit: &'a str,
    /// Every repetition, in `unit`.
    pub samples: Vec<f64>,
    /// Bytes moved per launch, for rates.
    pub bytes: Option<f64>,
}

/// The shader clock: `nvidia-smi` on nvidia, `/proc/cpuinfo` on cpu.
fn clock_mhz(backend: Backend) -> Option<f64> {
    match backend {
        Backend::Nvidia => {
            let out = std::process::Command::new("nvidia-smi")
                .args(["--query-gpu=clocks.sm", "--format=csv,noheader,nounits"])
                .output()
                .ok()?;
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .next()?
                .trim()
                .parse()
                .ok()
        }
        Backend::Cpu => std::fs::read_to_string("/proc/cpuinfo")
            .ok()?
            .lines()
            .find(|l| l.starts_with("cpu MHz"))?
            .split(':')
            .nth(1)?
            .trim()
            .parse()
            .ok(),
        Backend::Amd => None,
    }
}
