//! What passes between `cargo rocm tune` and a harness binary in tune mode.
//!
//! * [`TuneRequest`]: what to tune and how, as JSON in the `ROCM_TUNE_REQUEST` variable. A
//!   harness that sees it tunes instead of testing; a script can set it by hand (the H100 script
//!   does: there is no cargo there).
//! * [`TuneEvent`]: one JSON object per line, appended to [`TuneRequest::events`] while tuning
//!   runs (progress for the command's progress bar).
//! * [`TuneReport`]: everything a run found, written to `<out_dir>/results.json` and read back
//!   for the table, the JSON output and the HTML report. `cargo rocm tune --cmd-template`
//!   writes the same report for an external program.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rocm_kernels_core::wisdom::{ParamValue, WisdomEntry};
use rocm_kernels_core::Backend;
use serde::{Deserialize, Serialize};

/// The variable that carries a [`TuneRequest`] (JSON) to a harness.
pub const REQUEST_ENV: &str = "ROCM_TUNE_REQUEST";

/// A configuration: parameter name → value (numbers, strings, booleans).
pub type ConfigMap = BTreeMap<String, serde_json::Value>;

/// What to tune and how.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TuneRequest {
    /// Only tunables whose kernel (or name) contains one of these; empty: all.
    pub filter: Vec<String>,
    /// Backends to tune on (`cpu`, `amd`, `nvidia`); empty: the first GPU found, else the cpu.
    pub backends: Vec<String>,
    /// Problem sizes to tune for instead of the tunables' own (`{"n": 2048}`).
    pub problems: Vec<BTreeMap<String, i64>>,
    /// Strategies, run one after another on each problem size (they share the cache, so a later
    /// one reuses what an earlier one measured). Empty: `regression_prune`.
    pub strategies: Vec<String>,
    /// At most this many distinct configurations per strategy run; `None` with no time limit:
    /// min(100, the space).
    pub max_evals: Option<usize>,
    /// At most this many seconds per strategy run.
    pub max_seconds: Option<f64>,
    /// Seed of every random choice.
    pub seed: u64,
    /// Timed launches per configuration (after one warm-up); default 7, as Kernel Tuner.
    pub iterations: Option<u32>,
    /// A launch running longer than this many seconds fails (cpu: the runtime's time limit;
    /// GPUs: the run stops with the cache intact). Default 10.
    pub time_limit_s: Option<f64>,
    /// Compile threads working ahead of the measurements; default: cores − 1 (at least 1).
    pub jobs: Option<usize>,
    /// Where caches, results and the compiled-variant cache go (default: `target/rocm/tune`).
    pub out_dir: Option<PathBuf>,
    /// The folder `results.json` goes to (default: `out_dir`).
    pub results: Option<PathBuf>,
    /// Where compiled variants are cached (default: `<out_dir>/compiled`).
    pub compile_cache: Option<PathBuf>,
    /// Update this wisdom file with the best configurations found.
    pub wisdom: Option<PathBuf>,
    /// Append progress events here.
    pub events: Option<PathBuf>,
    /// Ignore what the caches hold (they are still appended to).
    pub fresh: bool,
    /// Import this Kernel Tuner cache into the cache of the (single) tunable first.
    pub import_kt: Option<PathBuf>,
    /// Also write each cache in Kernel Tuner's format (`<cache>.kt.json`).
    pub export_kt: bool,
    /// cpu wave size (32 or 64; default 64).
    pub wave_size: Option<u32>,
    /// Only list the tunables and their spaces; tune nothing.
    pub list: bool,
    /// Which GPUs of the backend to tune on at once (`None`: the first). Devices of one model
    /// split the space between them (each evaluates its own slice, every candidate compiled
    /// once) and their results are pooled into one run; other models are tuned each in full.
    pub devices: Option<crate::DeviceSelection>,
    /// Only slice `K/N` of each space (`rocm_tune::Partition`): one job of a Slurm array or a CI
    /// matrix; `cargo rocm tune merge` joins the jobs' caches.
    pub partition: Option<String>,
}

/// Progress while tuning runs (one JSON object per line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TuneEvent {
    /// A strategy starts on one kernel, device and problem size.
    Start {
        /// The tunable's name.
        kernel: String,
        /// The device, for people.
        device: String,
        /// The problem size (size names and values).
        problem: BTreeMap<String, i64>,
        /// The strategy's name (`regression_prune`, `random`, ...).
        strategy: String,
        /// Valid configurations in the space.
        space: usize,
        /// The evaluation budget, if there is one.
        budget: Option<usize>,
    },
    /// One configuration was evaluated (or answered from the cache).
    Eval {
        /// The tunable's name.
        kernel: String,
        /// The strategy that asked for it.
        strategy: String,
        /// Evaluations so far in this strategy run.
        n: usize,
        /// The configuration evaluated.
        config: ConfigMap,
        /// `ok`, `compile`, `launch`, `wrong_result`, `invalid`, `bad_measurement`, `other`.
        outcome: String,
        /// Its objective in ms, when it was valid.
        time_ms: Option<f64>,
        /// The best objective in ms of this strategy run so far.
        best_ms: Option<f64>,
        /// Answered from the cache, not measured again.
        from_cache: bool,
    },
    /// A strategy run ended.
    Done {
        /// The tunable's name.
        kernel: String,
        /// The strategy that ended.
        strategy: String,
        /// The best objective it found, in ms.
        best_ms: Option<f64>,
        /// Distinct configurations it evaluated.
        evaluations: usize,
    },
    /// A tunable could not be tuned (bad declaration, empty space, reference panicked...).
    Error {
        /// The tunable's name.
        kernel: String,
        /// Why it could not be tuned.
        message: String,
    },
}

/// How one parameter reaches the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// A preprocessor definition (`-DTILE=16`): each value is a separately compiled variant.
    Define,
    /// Used only by the launch (block and grid shape, dynamic shared memory).
    Launch,
    /// A placeholder of an external program's command template.
    Command,
}

/// One tuning parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParamInfo {
    /// The parameter's name (a macro name for [`ParamKind::Define`]).
    pub name: String,
    /// How it reaches the kernel.
    pub kind: ParamKind,
    /// The values it may take, in declaration order.
    pub values: Vec<serde_json::Value>,
}

/// Where the kernel ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceDesc {
    /// `cpu`, `amd`, `nvidia`.
    pub backend: String,
    /// `sm_90`, `gfx90a`, `x86_64`.
    pub arch: String,
    /// The device, for people (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Threads per wave the kernel saw.
    pub wave_size: u32,
}

/// One evaluated configuration, in the order a strategy asked for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceStep {
    /// The configuration.
    pub config: ConfigMap,
    /// `ok` or the failure class (see [`TuneEvent::Eval`]).
    pub outcome: String,
    /// The objective (ms), for valid configurations.
    pub time_ms: Option<f64>,
    /// Seconds since the strategy started.
    pub elapsed_s: f64,
    /// Answered from the cache, not measured again.
    pub from_cache: bool,
}

/// The best (or the default) configuration and its measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// The configuration.
    pub config: ConfigMap,
    /// The objective in ms; `None` when it failed.
    pub time_ms: Option<f64>,
    /// Coefficient of variation of its samples.
    pub cv: Option<f64>,
    /// Work per ms → units per second (`GFLOP/s`), for throughput objectives.
    pub throughput: Option<f64>,
    /// Why it failed, if it did.
    pub failure: Option<String>,
}

/// Where the time of a run went, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Overhead {
    /// Wall time of the strategy run.
    pub total_s: f64,
    /// Kernel time inside it (every timed launch and the warm-ups).
    pub kernel_s: f64,
    /// Compiling (on this thread, waiting for the compile threads included).
    pub compile_s: f64,
    /// Verification (the launch compared with the reference, and the comparison).
    pub verify_s: f64,
    /// Evaluations measured here (not answered from a cache).
    pub measured: usize,
    /// (total − kernel) / measured, in ms: what the tool costs per evaluation.
    pub per_eval_ms: f64,
}

/// Everything one strategy run on one kernel, device and problem size found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneRun {
    /// The tunable's (or external program's) name.
    pub kernel: String,
    /// Where it ran.
    pub device: DeviceDesc,
    /// The problem size (empty for an external program).
    pub problem: BTreeMap<String, i64>,
    /// The strategy's name.
    pub strategy: String,
    /// Seed of the strategy's random choices.
    pub seed: u64,
    /// The tuning parameters and their values.
    pub parameters: Vec<ParamInfo>,
    /// The restrictions on the space, as text.
    pub restrictions: Vec<String>,
    /// Valid configurations after restrictions.
    pub space: usize,
    /// All combinations of the values.
    pub raw_space: u64,
    /// The evaluation budget, if there was one.
    pub budget: Option<usize>,
    /// Distinct configurations evaluated (failed and cached ones included).
    pub evaluations: usize,
    /// Failures by class (`compile`, `launch`, `wrong_result`...).
    pub failures: BTreeMap<String, usize>,
    /// Evaluations answered from the cache.
    pub cache_hits: usize,
    /// Extra measurements made because the first samples were too noisy to trust.
    pub remeasurements: usize,
    /// The fastest valid configuration, if any.
    pub best: Option<Measured>,
    /// The tunable's declared default configuration, when it was measured.
    pub default: Option<Measured>,
    /// `default.time_ms / best.time_ms`.
    pub speedup: Option<f64>,
    /// The unit of [`Measured::throughput`] (`GFLOP/s`), when the objective is a throughput.
    pub throughput_unit: Option<String>,
    /// Where the run's time went.
    pub overhead: Overhead,
    /// `strategy_finished`, `budget_exhausted`, `space_exhausted`, `stalled`, `aborted`.
    pub stop: String,
    /// What the strategy warned about (a poor model fit, a note).
    pub warnings: Vec<String>,
    /// Every evaluation, in the order the strategy asked.
    pub trace: Vec<TraceStep>,
    /// The append-only cache this run read and wrote.
    pub cache_file: Option<PathBuf>,
    /// The GPUs whose measurements this run pools (`nvidia/sm_90#0`, …), when several devices
    /// of one model tuned at once (`--devices`); empty for one device.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<String>,
    /// The slice of the space this run covered (`2/3`), with `--partition`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
}

/// A tunable that could not be tuned, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneFailure {
    /// The tunable's name.
    pub kernel: String,
    /// Why it could not be tuned.
    pub message: String,
}

/// What `cargo rocm tune` (or a harness in tune mode) found.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TuneReport {
    /// One entry per strategy run, kernel, device and problem size.
    pub runs: Vec<TuneRun>,
    /// The tunables that could not be tuned.
    pub errors: Vec<TuneFailure>,
    /// Tunables seen with `list` (name, kernel, parameters, space size).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listed: Vec<ListedTunable>,
    /// The wisdom file updated, if any.
    pub wisdom: Option<PathBuf>,
}

/// A tunable as [`TuneRequest::list`] shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListedTunable {
    /// The tunable's name.
    pub kernel: String,
    /// Its parameters and their values.
    pub parameters: Vec<ParamInfo>,
    /// The restrictions on its space, as text.
    pub restrictions: Vec<String>,
    /// Valid configurations in its space, or why the space could not be built.
    pub space: Result<usize, String>,
    /// The problem sizes it would be tuned for.
    pub problems: Vec<BTreeMap<String, i64>>,
}
/// The wisdom entry for one device and problem: the best of its strategy runs (`cargo rocm
/// tune merge` makes one from merged caches too).
pub fn wisdom_entry(runs: &[TuneRun]) -> Option<WisdomEntry> {
    let best = runs
        .iter()
        .filter_map(|r| Some((r, r.best.as_ref()?.time_ms?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    let (run, time_ms) = best;
    let backend: Backend = run.device.backend.parse().ok()?;
    let config = run
        .best
        .as_ref()?
        .config
        .iter()
        .filter_map(|(n, v)| {
            let v = match v {
                serde_json::Value::Bool(b) => ParamValue::Bool(*b),
                serde_json::Value::Number(x) => match x.as_i64() {
                    Some(i) => ParamValue::Int(i),
                    None => ParamValue::Float(x.as_f64()?),
                },
                serde_json::Value::String(s) => ParamValue::Str(s.clone()),
                _ => return None,
            };
            Some((n.clone(), v))
        })
        .collect();
    Some(WisdomEntry {
        backend,
        arch: run.device.arch.clone(),
        device: run.device.name.clone(),
        wave_size: run.device.wave_size,
        problem: run.problem.clone(),
        config,
        time_ms,
        default_time_ms: run.default.as_ref().and_then(|d| d.time_ms),
        strategy: run.strategy.clone(),
        evaluations: runs.iter().map(|r| r.evaluations).sum(),
        space: run.space,
        tool: format!("cargo-rocm {}", env!("CARGO_PKG_VERSION")),
        unix_time: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    })
}
