//! Device time of kernel launches, for criterion.
//!
//! [`time_launches`] records an event on the stream, queues N launches back to back, records a
//! second event and returns the device time between the two: the kernels' time, not the host's
//! launch path (no synchronisation between launches, none inside the timed span). On `amd` and
//! `nvidia` these are HIP and CUDA events; on `cpu`, where a launch completes before it returns,
//! the runtime's own clock at each record.
//!
//! [`DeviceGroup`] is a criterion benchmark group on one device whose benchmarks time with
//! [`time_launches`] through `Bencher::iter_custom`. This crate uses `iter_custom` rather than a
//! custom `criterion::measurement::Measurement` because a measurement has no stream to record on
//! and would time each batch with host calls around it; `iter_custom` hands the batch size to
//! the closure, so one pair of events spans the whole batch. The group also reports each
//! finished benchmark to `cargo rocm bench` (an [`EventSink`]).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput};
use rocm_kernels::runtime::{Result, Stream};

use crate::target::BenchTarget;
use crate::{BenchEvent, BenchRecord, EventSink, Param, ThroughputKind};

/// Device time of `iters` back-to-back calls of `launch` on `stream`, between two events.
///
/// ```no_run
/// # fn demo(stream: &rocm_kernels::runtime::Stream, kernel: &rocm_kernels::runtime::Kernel) -> rocm_kernels::runtime::Result<()> {
/// use rocm_kernels::runtime::LaunchConfig;
/// let t = rocm_bench::time_launches(stream, 100, |s| kernel.launch(LaunchConfig::cover(1024, 256)).run(s))?;
/// println!("{:?} per launch", t / 100);
/// # Ok(()) }
/// ```
pub fn time_launches<F>(stream: &Stream, iters: u64, mut launch: F) -> Result<Duration>
where
    F: FnMut(&Stream) -> Result<()>,
{
    let start = stream.record()?;
    for _ in 0..iters {
        launch(stream)?;
    }
    let end = stream.record()?;
    end.elapsed_since(&start)
}

/// Criterion settings from `cargo rocm bench` (`ROCM_BENCH_SAMPLES`, `ROCM_BENCH_WARMUP_MS`,
/// `ROCM_BENCH_MEASURE_MS`); unset ones keep criterion's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Settings {
    /// Samples per benchmark (criterion: 100; at least 10).
    pub samples: usize,
    /// Warm-up time per benchmark (`None`: criterion's 3 s).
    pub warm_up: Option<Duration>,
    /// Measurement time per benchmark (`None`: criterion's 5 s).
    pub measurement: Option<Duration>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            samples: 100,
            warm_up: None,
            measurement: None,
        }
    }
}

impl Settings {
    /// The settings the environment asks for (unparsable values are ignored, with a warning).
    pub(crate) fn from_env() -> Self {
        fn num(var: &str) -> Option<u64> {
            let v = std::env::var(var).ok()?;
            v.trim()
                .parse()
                .map_err(|_| eprintln!("rocm-bench: {var}={v} is not a whole number; ignored"))
                .ok()
        }
        let mut s = Settings::default();
        if let Some(n) = num(crate::vars::SAMPLES) {
            s.samples = (n as usize).max(10);
        }
        s.warm_up = num(crate::vars::WARMUP_MS).map(Duration::from_millis);
        s.measurement = num(crate::vars::MEASURE_MS).map(Duration::from_millis);
        s
    }
}

/// A criterion benchmark group on one device (`saxpy/cpu/w64`), timed by device events.
pub struct DeviceGroup<'c> {
    group: BenchmarkGroup<'c, WallTime>,
    name: String,
    target: BenchTarget,
    settings: Settings,
    throughput: Option<Throughput>,
    note: Option<String>,
    sink: Rc<EventSink>,
}

impl<'c> DeviceGroup<'c> {
    /// The group `NAME/PLACE` (`saxpy/nvidia/sm_90`) with the settings `cargo rocm bench` asked
    /// for.
    pub fn new(c: &'c mut Criterion, name: &str, target: &BenchTarget) -> Self {
        let settings = Settings::from_env();
        let name = target.id(name);
        let mut group = c.benchmark_group(name.clone());
        group.sample_size(settings.samples);
        if let Some(d) = settings.warm_up {
            group.warm_up_time(d.max(Duration::from_millis(1)));
        }
        if let Some(d) = settings.measurement {
            group.measurement_time(d.max(Duration::from_millis(1)));
        }
        let sink = EventSink::from_env().unwrap_or_else(|e| {
            panic!(
                "rocm-bench: cannot open {}: {e}",
                std::env::var(crate::vars::EVENTS).unwrap_or_default()
            )
        });
        DeviceGroup {
            group,
            name,
            target: target.clone(),
            settings,
            throughput: None,
            note: None,
            sink: Rc::new(sink),
        }
    }

    /// Work per iteration of the benchmarks that follow (bytes, elements; FLOPs as elements).
    pub fn throughput(&mut self, throughput: Throughput) -> &mut Self {
        self.group.throughput(throughput.clone());
        self.throughput = Some(throughput);
        self
    }

    /// A note recorded with every following result (for instance that sizes are reduced).
    pub fn note(&mut self, note: impl Into<String>) -> &mut Self {
        self.note = Some(note.into());
        self
    }

    /// The criterion group, for anything else criterion offers.
    pub fn criterion(&mut self) -> &mut BenchmarkGroup<'c, WallTime> {
        &mut self.group
    }

    /// Benchmarks `launch` (one iteration: usually one kernel launch) by device time of
    /// back-to-back launches: the benchmark `GROUP/ID`.
    pub fn bench_launches<F>(&mut self, id: &str, stream: &Stream, launch: F)
    where
        F: FnMut(&Stream) -> Result<()>,
    {
        self.bench(id.to_owned(), None, stream, launch)
    }

    /// One point of a sweep: the benchmark `GROUP/ID/VALUE`, recorded with its parameter so that
    /// the report draws the sweep as a curve against it.
    pub fn bench_launches_at<F>(
        &mut self,
        id: &str,
        param: (&str, impl std::fmt::Display),
        stream: &Stream,
        launch: F,
    ) where
        F: FnMut(&Stream) -> Result<()>,
    {
        let value = param.1.to_string();
        let param = Param {
            name: param.0.to_owned(),
            value: value.clone(),
        };
        self.bench(format!("{id}/{value}"), Some((id, param)), stream, launch)
    }

    fn bench<F>(&mut self, id: String, sweep: Option<(&str, Param)>, stream: &Stream, launch: F)
    where
        F: FnMut(&Stream) -> Result<()>,
    {
        let full_id = format!("{}/{id}", self.name);
        // Every batch criterion timed, in order: its warm-up batches, then exactly
        // `sample_size` sample batches (criterion's `Routine::sample`). A benchmark that a
        // filter skipped, or `--test` mode (one batch of one), leaves fewer.
        let log: Rc<RefCell<Vec<(u64, Duration)>>> = Rc::default();
        let launch = RefCell::new(launch);
        let (sink, start_id, batches) = (self.sink.clone(), full_id.clone(), log.clone());
        self.group.bench_function(id, move |b| {
            if batches.borrow().is_empty() {
                let _ = sink.write(&BenchEvent::Start {
                    id: start_id.clone(),
                });
            }
            b.iter_custom(|iters| {
                let t = time_launches(stream, iters, |s| (launch.borrow_mut())(s))
                    .unwrap_or_else(|e| panic!("{start_id}: launch failed: {e}"));
                batches.borrow_mut().push((iters, t));
                t
            })
        });
        let log = log.borrow();
        if log.len() < self.settings.samples {
            return;
        }
        let samples: Vec<f64> = log[log.len() - self.settings.samples..]
            .iter()
            .map(|&(iters, t)| t.as_secs_f64() * 1e9 / iters.max(1) as f64)
            .collect();
        let (group, param) = match sweep {
            Some((name, param)) => (format!("{}/{name}", self.name), Some(param)),
            None => (self.name.clone(), None),
        };
        let record = BenchRecord {
            id: full_id.clone(),
            group,
            param,
            device: self.target.record(),
            unit: "ns".to_owned(),
            samples,
            throughput: self.throughput.as_ref().map(throughput_of),
            note: self.note.clone(),
        };
        if let Err(e) = self.sink.write(&BenchEvent::Result(Box::new(record))) {
            eprintln!("rocm-bench: could not record {full_id}: {e}");
        }
    }

    /// Ends the group: criterion prints its summary (results were recorded as each finished).
    pub fn finish(self) {
        self.group.finish();
    }
}

/// Criterion's throughput as a kind and an amount per iteration, as [`BenchRecord`]s keep it.
pub(crate) fn throughput_of(t: &Throughput) -> (ThroughputKind, f64) {
    use Throughput as T;
    match *t {
        T::Bytes(b) | T::BytesDecimal(b) => (ThroughputKind::Bytes, b as f64),
        T::Elements(e) => (ThroughputKind::Elements, e as f64),
        T::ElementsAndBytes { bytes, .. } => (ThroughputKind::Bytes, bytes as f64),
        // Criterion has no FLOP variant: FLOPs are recorded as elements.
        T::Bits(b) => (ThroughputKind::Bytes, b as f64 / 8.0),
    }
}
