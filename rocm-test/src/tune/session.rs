//! A harness in tune mode (`ROCM_TUNE_REQUEST` set): every tunable the request selects is
//! tuned on each device and problem size with each strategy, through an append-only cache per
//! tunable, device and problem size (a rerun resumes from it), and the results go to
//! `<out_dir>/results.json` ([`TuneReport`]), the progress to the events file, and the best
//! configurations to the wisdom file when one is named.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use rocm_kernels::library::ObjectFormat;
use rocm_kernels::runtime::{CpuExec, CpuOptions, Device};
use rocm_kernels::{Backend, KernelLibrary};
use rocm_kernels_core::wisdom::Wisdom;
use rocm_protocol::tune::{
    DeviceDesc, ListedTunable, Overhead, ParamInfo, ParamKind as EventParamKind, TraceStep,
    TuneEvent, TuneFailure, TuneReport, TuneRequest, TuneRun,
};
use rocm_tune::campaign::{self, Campaign, Subject};
use rocm_tune::tuner::TraceEntry;
use rocm_tune::{CacheMeta, ConfigId, KtCache, Partition, SearchSpace};

use super::compile::{Ahead, Compiler, SourceSpec};
use super::declaration::{crate_root, source_text, validate};
use super::evaluate::{problem_case, KernelEvaluator};
use super::results::finish;
use super::{ParamKind, Tunable};
use crate::check::Check;
use crate::{Error, Suite};
use rocm_protocol::tune::wisdom_entry;

/// The exit code of a harness whose GPU kernel outlived the time limit (the process cannot
/// interrupt it, so it ends; the cache holds everything measured before).
pub(crate) const HANG_EXIT: i32 = rocm_protocol::exit::HarnessExitCode::TUNE_HANG as i32;

/// Timed launches per configuration by default (Kernel Tuner's default too).
const DEFAULT_ITERATIONS: u32 = 7;
/// Default time limit of one launch.
const DEFAULT_TIME_LIMIT_S: f64 = 30.0;

/// Appends progress events (best effort: progress must not fail a run). Shared by the threads
/// of a run on several devices: each line is one write under the lock.
struct Events(Option<std::sync::Mutex<std::fs::File>>);

impl Events {
    fn open(path: Option<&Path>) -> Events {
        Events(path.and_then(|p| {
            if let Some(d) = p.parent() {
                let _ = std::fs::create_dir_all(d);
            }
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .ok()
                .map(std::sync::Mutex::new)
        }))
    }
    fn send(&self, e: &TuneEvent) {
        use std::io::Write;
        if let Some(f) = &self.0 {
            let mut line = serde_json::to_string(e).expect("events serialize");
            line.push('\n');
            let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
            let _ = f.write_all(line.as_bytes());
        }
    }
}

fn slug(text: &str) -> String {
    let s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '=' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    out.trim_matches('_').to_owned()
}

fn problem_map(sizes: &[(String, usize)]) -> BTreeMap<String, i64> {
    sizes.iter().map(|(n, v)| (n.clone(), *v as i64)).collect()
}

/// Where results go without `out_dir`: `<target>/rocm/tune`, the target folder found from
/// this executable's path (`<target>/<profile>/deps/<binary>`).
fn default_out_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            let deps = exe.parent()?;
            (deps.file_name()? == "deps").then(|| deps.parent()?.parent().map(Path::to_path_buf))?
        })
        .unwrap_or_else(std::env::temp_dir)
        .join("rocm")
        .join("tune")
}

/// A device to tune on and its place name (`nvidia/sm_90#1` where several of its
/// architecture take part, as test trials are named).
#[derive(Clone)]
struct TuneDevice {
    device: Device,
    place: String,
}

/// The devices to tune on, in groups of one model: the backends asked for (or the first GPU
/// backend found, else the cpu), and on each the devices `request.devices` selects (default:
/// the first). The devices of a group split each space between them.
fn devices(request: &TuneRequest, time_limit: Duration) -> Result<Vec<Vec<TuneDevice>>, Error> {
    let wave_size = request.wave_size.unwrap_or(64);
    let cpu = || {
        let device = Device::cpu(CpuOptions {
            wave_size,
            checked: true,
            time_limit: Some(time_limit),
            race_check: false,
            exec: CpuExec::Regions,
            ..CpuOptions::default()
        });
        vec![TuneDevice {
            device,
            place: format!("cpu/w{wave_size}"),
        }]
    };
    let probe = Device::probe();
    let backends: Vec<Backend> = if request.backends.is_empty() {
        match probe.available.iter().find(|d| d.backend() != Backend::Cpu) {
            Some(d) => vec![d.backend()],
            None => return Ok(vec![cpu()]),
        }
    } else {
        request
            .backends
            .iter()
            .map(|b| b.parse::<Backend>())
            .collect::<Result<_, _>>()
            .map_err(Error::Option)?
    };
    let selection = request
        .devices
        .clone()
        .unwrap_or(rocm_protocol::DeviceSelection::First(1));
    let mut groups: Vec<Vec<TuneDevice>> = Vec::new();
    for backend in backends {
        if backend == Backend::Cpu {
            groups.push(cpu());
            continue;
        }
        let all: Vec<&Device> = probe
            .available
            .iter()
            .filter(|d| d.backend() == backend)
            .collect();
        if all.is_empty() {
            let why = probe
                .unavailable
                .iter()
                .find(|(b, _)| *b == backend)
                .map(|(_, r)| r.clone())
                .unwrap_or_else(|| "no device found".into());
            return Err(Error::Target(format!("cannot tune on {backend}: {why}")));
        }
        let missing = selection.missing(all.len());
        if !missing.is_empty() {
            return Err(Error::Option(format!(
                "cannot tune on {backend}: --devices {selection} names device(s) {missing:?}, \
                 but this machine has {} {backend} device(s) (ordinals 0 to {})",
                all.len(),
                all.len() - 1
            )));
        }
        let picked: Vec<(usize, &Device)> = selection
            .pick(all.len())
            .into_iter()
            .map(|i| (i, all[i]))
            .collect();
        let model = |d: &Device| (d.info().arch.clone(), d.info().name.clone());
        let mut models: Vec<(String, String)> = picked.iter().map(|(_, d)| model(d)).collect();
        models.sort();
        models.dedup();
        // The runtime's one naming rule (`sm_90#1` where the picked share an architecture).
        let places = rocm_kernels::TrialPlace::of_devices(&picked);
        for m in models {
            groups.push(
                picked
                    .iter()
                    .zip(&places)
                    .filter(|((_, d), _)| model(d) == m)
                    .map(|((_, d), place)| TuneDevice {
                        device: (*d).clone(),
                        place: place.to_string(),
                    })
                    .collect(),
            );
        }
    }
    Ok(groups)
}

/// What the run-time compiles of `device` take: the file on disk, or (nvidia) the source the
/// build embedded for NVRTC when the file is not here (a GPU machine without the crate).
fn source_spec(
    tunable: &Tunable,
    check: &Check,
    lib: &'static KernelLibrary,
    backend: Backend,
) -> Result<SourceSpec, Error> {
    let decl = lib.kernel(&check.kernel);
    let params = decl.map(|d| d.params).unwrap_or(&[]);
    let includes: Vec<PathBuf> = tunable
        .includes
        .iter()
        .map(|i| match crate_root() {
            Some(root) if i.is_relative() => root.join(i),
            _ => i.clone(),
        })
        .collect();
    if let Some((path, text)) = source_text(tunable, check, lib) {
        return Ok(SourceSpec {
            kernel: check.kernel.clone(),
            file: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            path: Some(path),
            text: text.into_bytes(),
            includes,
            params,
        });
    }
    let source = decl.map(|d| d.source).unwrap_or("");
    if backend == Backend::Nvidia {
        if let Some((_, o)) = lib
            .objects_of(Backend::Nvidia)
            .find(|(_, o)| o.format == ObjectFormat::CudaSource && o.source == source)
        {
            return Ok(SourceSpec {
                kernel: check.kernel.clone(),
                file: Path::new(source)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                path: None,
                text: o.bytes.to_vec(),
                includes,
                params,
            });
        }
    }
    Err(Error::Declaration(format!(
        "the source of kernel `{}` ({source}) is not readable here: run the harness from its \
         crate (cargo sets CARGO_MANIFEST_DIR), or name it with `Tunable::source`",
        check.kernel
    )))
}

/// Run tune mode: everything the request asks for. The exit code is 0 when every selected
/// tunable was tuned, 1 when one could not be.
pub(crate) fn run(suite: Suite, request: TuneRequest) -> ExitCode {
    let out_dir = request.out_dir.clone().unwrap_or_else(default_out_dir);
    let compile_cache = request
        .compile_cache
        .clone()
        .unwrap_or_else(|| out_dir.join("compiled"));
    let events = Events::open(request.events.as_deref());
    let results_dir = request.results.clone().unwrap_or_else(|| out_dir.clone());
    let mut report = TuneReport::default();
    let selected: Vec<&Tunable> = suite
        .tunables()
        .iter()
        .filter(|t| {
            request.filter.is_empty()
                || request
                    .filter
                    .iter()
                    .any(|f| t.name.contains(f.as_str()) || t.check.contains(f.as_str()))
        })
        .collect();

    if request.list {
        for t in &selected {
            report.listed.push(ListedTunable {
                kernel: t.name.clone(),
                parameters: param_infos(t),
                restrictions: t.restriction_texts(),
                space: space_of(t, &suite)
                    .map(|(s, _)| s.len())
                    .map_err(|e| e.to_string()),
                problems: problems_of(t, &suite, &request)
                    .iter()
                    .map(|p| problem_map(p))
                    .collect(),
            });
        }
        return finish(&results_dir, report);
    }
    if selected.is_empty() {
        let names: Vec<&str> = suite.tunables().iter().map(|t| t.name.as_str()).collect();
        report.errors.push(TuneFailure {
            kernel: String::new(),
            message: if names.is_empty() {
                "this harness declares no tunable: add `s.tune(\"kernel\")…` beside the kernel's \
                 check"
                    .into()
            } else {
                format!(
                    "no tunable matches {:?} (this harness has: {})",
                    request.filter,
                    names.join(", ")
                )
            },
        });
        return finish(&results_dir, report);
    }

    let time_limit = Duration::from_secs_f64(
        request
            .time_limit_s
            .unwrap_or(DEFAULT_TIME_LIMIT_S)
            .max(0.001),
    );
    let partition = match request
        .partition
        .as_deref()
        .map(Partition::parse)
        .transpose()
    {
        Ok(p) => p,
        Err(e) => {
            report.errors.push(TuneFailure {
                kernel: String::new(),
                message: format!("--partition: {e}"),
            });
            return finish(&results_dir, report);
        }
    };
    let groups = match devices(&request, time_limit) {
        Ok(d) => d,
        Err(e) => {
            report.errors.push(TuneFailure {
                kernel: String::new(),
                message: e.to_string(),
            });
            return finish(&results_dir, report);
        }
    };
    let mut wisdom = match &request.wisdom {
        Some(path) => match Wisdom::load(path) {
            Ok(w) => Some(w),
            Err(e) => {
                report.errors.push(TuneFailure {
                    kernel: String::new(),
                    message: e.to_string(),
                });
                return finish(&results_dir, report);
            }
        },
        None => None,
    };

    for tunable in selected {
        let fail = |report: &mut TuneReport, message: String| {
            events.send(&TuneEvent::Error {
                kernel: tunable.name.clone(),
                message: message.clone(),
            });
            eprintln!("error: {message}");
            report.errors.push(TuneFailure {
                kernel: tunable.name.clone(),
                message,
            });
        };
        let (space, default) = match space_of(tunable, &suite) {
            Ok(v) => v,
            Err(e) => {
                fail(&mut report, e.to_string());
                continue;
            }
        };
        let check = suite.find_check(&tunable.check).expect("validate found it");
        let static_errors = crate::suite::static_errors(check, suite.library());
        if !static_errors.is_empty() {
            fail(
                &mut report,
                format!(
                    "the check `{}` of tunable `{}` cannot run:\n{}",
                    check.name,
                    tunable.name,
                    static_errors
                        .iter()
                        .map(|e| format!("  - {e}\n"))
                        .collect::<String>()
                ),
            );
            continue;
        }
        for group in &groups {
            for sizes in problems_of(tunable, &suite, &request) {
                let job = |device: &TuneDevice, partition: Option<Partition>, lead: bool| {
                    tune_one(TuneOne {
                        tunable,
                        check,
                        library: suite.library(),
                        space: &space,
                        default,
                        device: &device.device,
                        sizes: &sizes,
                        request: &request,
                        out_dir: &out_dir,
                        compile_cache: &compile_cache,
                        time_limit,
                        partition,
                        lead,
                        events: &events,
                    })
                };
                let outcome = if let [one] = group.as_slice() {
                    job(one, partition, true)
                } else {
                    if request.fresh {
                        let desc = device_desc(&group[0].device);
                        let path = cache_path(&out_dir, &tunable.name, &desc, &problem_map(&sizes));
                        if let Err(e) = campaign::set_aside(&path) {
                            fail(&mut report, e.to_string());
                            continue;
                        }
                    }
                    // One thread per device, each on its slice of the space (of this job's
                    // slice, with --partition), measuring at the same time; then one pooled
                    // run per strategy.
                    let n = group.len() as u32;
                    let per_device: Vec<Result<Vec<TuneRun>, Error>> = std::thread::scope(|s| {
                        let handles: Vec<_> = group
                            .iter()
                            .enumerate()
                            .map(|(i, d)| {
                                let slice = match partition {
                                    Some(p) => p.split(i as u32, n),
                                    None => Partition {
                                        index: i as u32,
                                        count: n,
                                    },
                                };
                                let job = &job;
                                s.spawn(move || job(d, Some(slice), i == 0))
                            })
                            .collect();
                        handles
                            .into_iter()
                            .map(|h| {
                                h.join().unwrap_or_else(|p| {
                                    Err(Error::Panicked(format!(
                                        "tuning on a device panicked: {}",
                                        crate::run::panic_message(&*p)
                                    )))
                                })
                            })
                            .collect()
                    });
                    let places: Vec<String> = group.iter().map(|d| d.place.clone()).collect();
                    pool(per_device, &places, partition)
                };
                match outcome {
                    Ok(runs) => {
                        if let (Some(w), Some(entry)) = (&mut wisdom, wisdom_entry(&runs)) {
                            w.record(&tunable.name, &tunable.defines(), entry);
                        }
                        report.runs.extend(runs);
                    }
                    Err(e) => fail(&mut report, e.to_string()),
                }
            }
        }
    }
    if let (Some(w), Some(path)) = (&wisdom, &request.wisdom) {
        match w.save(path) {
            Ok(()) => report.wisdom = Some(path.clone()),
            Err(e) => report.errors.push(TuneFailure {
                kernel: String::new(),
                message: e.to_string(),
            }),
        }
    }
    finish(&results_dir, report)
}

/// The declaration's checks and the space: this build evaluates every restriction.
fn space_of(tunable: &Tunable, suite: &Suite) -> Result<(SearchSpace, Option<ConfigId>), Error> {
    validate(tunable, suite)
        .map(|v| v.expect("a harness with the `tune` feature builds every space"))
}

fn param_infos(t: &Tunable) -> Vec<ParamInfo> {
    t.params
        .iter()
        .map(|(n, k, vals)| ParamInfo {
            name: n.clone(),
            kind: match k {
                ParamKind::Define => EventParamKind::Define,
                ParamKind::Launch => EventParamKind::Launch,
            },
            values: vals.iter().map(|v| v.to_json()).collect(),
        })
        .collect()
}

/// The problem sizes of a tunable: the request's, else as declared, else the check's sizes at
/// their largest.
fn problems_of(t: &Tunable, suite: &Suite, request: &TuneRequest) -> Vec<Vec<(String, usize)>> {
    let Some(check) = suite.find_check(&t.check) else {
        return Vec::new();
    };
    let full = |given: &[(String, usize)]| -> Vec<(String, usize)> {
        check
            .sizes
            .iter()
            .map(|(n, spec)| {
                let v = given
                    .iter()
                    .find(|(g, _)| g == n)
                    .map(|(_, v)| *v)
                    .unwrap_or_else(|| spec.high());
                (n.clone(), v)
            })
            .collect()
    };
    if !request.problems.is_empty() {
        return request
            .problems
            .iter()
            .map(|p| {
                let given: Vec<(String, usize)> = p
                    .iter()
                    .map(|(n, v)| (n.clone(), (*v).max(0) as usize))
                    .collect();
                full(&given)
            })
            .collect();
    }
    if t.problems.is_empty() {
        vec![full(&[])]
    } else {
        t.problems.iter().map(|p| full(p)).collect()
    }
}

/// Everything [`tune_one`] needs.
struct TuneOne<'a> {
    tunable: &'a Tunable,
    check: &'a Check,
    library: &'static KernelLibrary,
    space: &'a SearchSpace,
    default: Option<ConfigId>,
    device: &'a Device,
    sizes: &'a [(String, usize)],
    request: &'a TuneRequest,
    out_dir: &'a Path,
    compile_cache: &'a Path,
    time_limit: Duration,
    /// The slice of the space this run covers.
    partition: Option<Partition>,
    /// The only (or first) device of its group: it sets a `--fresh` run's cache aside and
    /// imports a Kernel Tuner cache (the others share the cache file).
    lead: bool,
    events: &'a Events,
}

/// The append-only cache of a tunable, device model and problem size (devices of one model
/// share it: their appends are single `O_APPEND` writes, see `rocm_tune::JsonlCache`).
fn cache_path(
    out_dir: &Path,
    tunable: &str,
    desc: &DeviceDesc,
    problem: &BTreeMap<String, i64>,
) -> PathBuf {
    out_dir
        .join(slug(tunable))
        .join(slug(&format!(
            "{}-{}-{}",
            desc.backend, desc.arch, desc.name
        )))
        .join(format!(
            "{}.jsonl",
            slug(
                &problem
                    .iter()
                    .map(|(n, v)| format!("{n}={v}"))
                    .collect::<Vec<_>>()
                    .join("_")
            )
        ))
}

fn device_desc(device: &Device) -> DeviceDesc {
    let info = device.info();
    DeviceDesc {
        backend: info.backend.to_string(),
        arch: info.arch.clone(),
        name: info.name.clone(),
        wave_size: info.wave_size,
    }
}

/// One tunable on one device at one problem size, every requested strategy.
fn tune_one(job: TuneOne<'_>) -> Result<Vec<TuneRun>, Error> {
    let TuneOne {
        tunable,
        check,
        library,
        space,
        default,
        device,
        sizes,
        request,
        out_dir,
        compile_cache,
        time_limit,
        partition,
        lead,
        events,
    } = job;
    let strategies =
        campaign::strategies(&request.strategies).map_err(|e| Error::Option(e.to_string()))?;
    let info = device.info().clone();
    let desc = device_desc(device);
    let problem = problem_map(sizes);
    let base = device.load(library).map_err(Error::runtime_while(format!(
        "cannot load the kernels of `{}` on {}",
        library.name, info.name
    )))?;
    let ahead = if tunable.defines().is_empty() {
        None
    } else {
        let source = source_spec(tunable, check, library, info.backend)?;
        let compiler = Compiler::new(info.backend, &info.arch, source, compile_cache)?;
        let workers = request.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .saturating_sub(1)
                .max(1)
        });
        Some(Ahead::new(compiler, workers, info.backend == Backend::Cpu))
    };
    let case = problem_case(check, sizes, request.seed)?;
    let mut evaluator = KernelEvaluator::new(
        tunable,
        check,
        case,
        device.clone(),
        base,
        ahead,
        request.iterations.unwrap_or(DEFAULT_ITERATIONS),
        time_limit,
    )?;
    let work = tunable
        .throughput
        .as_ref()
        .map(|t| (t.unit.clone(), (t.work)(&evaluator.inputs())));

    let cache_path = cache_path(out_dir, &tunable.name, &desc, &problem);
    let meta = CacheMeta::for_space(space, Some(&tunable.name), Some(&desc.name));
    let mut cache = campaign::open_cache(&cache_path, meta, request.fresh && lead)
        .map_err(|e| Error::Tune(e.to_string()))?;
    if let Some(kt) = request.import_kt.as_ref().filter(|_| lead) {
        let (kt, _) = KtCache::read(kt).map_err(|e| Error::Tune(e.to_string()))?;
        let (records, skipped) = kt.to_records(space);
        let known: std::collections::HashSet<String> =
            cache.records().iter().map(|r| r.key.clone()).collect();
        for r in records.into_iter().filter(|r| !known.contains(&r.key)) {
            cache.append(r).map_err(|e| Error::Tune(e.to_string()))?;
        }
        for s in skipped {
            eprintln!("warning: Kernel Tuner import: {s}");
        }
    }

    let budget = campaign::budget(request.max_evals, request.max_seconds, space.len());
    let mut progress = EventProgress {
        events,
        kernel: &tunable.name,
        device: &desc.name,
        problem: &problem,
        space: space.len(),
        strategy: String::new(),
    };
    let runs = campaign::run(
        Campaign {
            space,
            strategies,
            budget,
            seed: request.seed,
            partition,
            default,
            default_in_cache: true,
            subject: Subject {
                kernel: tunable.name.clone(),
                device: desc.clone(),
                problem: problem.clone(),
                parameters: param_infos(tunable),
                restrictions: tunable.restriction_texts(),
                work,
            },
        },
        &mut evaluator,
        &mut cache,
        &mut progress,
    );
    if request.export_kt {
        let kt = KtCache::from_records(
            space,
            &desc.name,
            &tunable.name,
            Some(serde_json::json!(problem.values().collect::<Vec<_>>())),
            cache.records(),
        );
        let path = cache_path.with_extension("kt.json");
        kt.write(&path)
            .map_err(|e| Error::Tune(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(runs)
}

/// A campaign's progress as events (the command's progress bar reads them).
struct EventProgress<'a> {
    events: &'a Events,
    kernel: &'a str,
    device: &'a str,
    problem: &'a BTreeMap<String, i64>,
    space: usize,
    /// The strategy running.
    strategy: String,
}

impl campaign::Progress for EventProgress<'_> {
    fn start(&mut self, strategy: &str, budget: rocm_tune::Budget) {
        self.strategy = strategy.to_owned();
        self.events.send(&TuneEvent::Start {
            kernel: self.kernel.to_owned(),
            device: self.device.to_owned(),
            problem: self.problem.clone(),
            strategy: strategy.to_owned(),
            space: self.space,
            budget: budget.max_evals,
        });
    }

    fn step(&mut self, n: usize, space: &SearchSpace, step: &TraceEntry, best: Option<f64>) {
        self.events.send(&TuneEvent::Eval {
            kernel: self.kernel.to_owned(),
            strategy: self.strategy.clone(),
            n,
            config: campaign::config_map(&space.config(step.id)),
            outcome: campaign::outcome_name(&step.outcome),
            time_ms: step.outcome.objective(),
            best_ms: best,
            from_cache: step.from_cache,
        });
    }

    fn done(&mut self, run: &TuneRun) {
        self.events.send(&TuneEvent::Done {
            kernel: self.kernel.to_owned(),
            strategy: self.strategy.clone(),
            best_ms: run.best.as_ref().and_then(|b| b.time_ms),
            evaluations: run.evaluations,
        });
    }
}

/// The runs of several devices of one model, each on its slice, as one run per strategy: the
/// best of them all, every evaluation, failures and overhead added up (the wall time is the
/// longest device's). A device that could not be tuned fails the whole group.
fn pool(
    per_device: Vec<Result<Vec<TuneRun>, Error>>,
    places: &[String],
    partition: Option<Partition>,
) -> Result<Vec<TuneRun>, Error> {
    let mut lists = Vec::new();
    let mut errors = Vec::new();
    for (r, place) in per_device.into_iter().zip(places) {
        match r {
            Ok(runs) => lists.push(runs),
            Err(e) => errors.push(format!("{place}: {e}")),
        }
    }
    if !errors.is_empty() {
        return Err(Error::Tune(errors.join("\n")));
    }
    let Some(first) = lists.first().cloned() else {
        return Ok(Vec::new());
    };
    let mut pooled = Vec::new();
    for (k, base) in first.into_iter().enumerate() {
        let runs: Vec<&TuneRun> = lists.iter().filter_map(|l| l.get(k)).collect();
        let best = runs
            .iter()
            .filter_map(|r| r.best.as_ref())
            .filter(|b| b.time_ms.is_some())
            .min_by(|a, b| a.time_ms.unwrap().total_cmp(&b.time_ms.unwrap()))
            .cloned();
        let default = runs.iter().find_map(|r| r.default.clone());
        let mut failures: BTreeMap<String, usize> = BTreeMap::new();
        for r in &runs {
            for (kind, n) in &r.failures {
                *failures.entry(kind.clone()).or_default() += n;
            }
        }
        let sum = |f: fn(&Overhead) -> f64| runs.iter().map(|r| f(&r.overhead)).sum::<f64>();
        let measured: usize = runs.iter().map(|r| r.overhead.measured).sum();
        let wall = runs.iter().map(|r| r.overhead.total_s).fold(0.0, f64::max);
        let mut trace: Vec<TraceStep> = runs.iter().flat_map(|r| r.trace.clone()).collect();
        trace.sort_by(|a, b| a.elapsed_s.total_cmp(&b.elapsed_s));
        let speedup = match (&default, &best) {
            (Some(d), Some(b)) => d.time_ms.zip(b.time_ms).map(|(d, b)| d / b),
            _ => None,
        };
        pooled.push(TuneRun {
            evaluations: runs.iter().map(|r| r.evaluations).sum(),
            cache_hits: runs.iter().map(|r| r.cache_hits).sum(),
            remeasurements: runs.iter().map(|r| r.remeasurements).sum(),
            budget: base.budget.map(|b| b * runs.len()),
            failures,
            best,
            default,
            speedup,
            overhead: Overhead {
                total_s: wall,
                kernel_s: sum(|o| o.kernel_s),
                compile_s: sum(|o| o.compile_s),
                verify_s: sum(|o| o.verify_s),
                measured,
                per_eval_ms: if measured > 0 {
                    (sum(|o| o.total_s) - sum(|o| o.kernel_s)) / measured as f64 * 1e3
                } else {
                    0.0
                },
            },
            stop: runs
                .iter()
                .map(|r| r.stop.as_str())
                .find(|s| *s == "aborted")
                .unwrap_or(base.stop.as_str())
                .to_owned(),
            warnings: runs.iter().flat_map(|r| r.warnings.clone()).collect(),
            trace,
            devices: places.to_vec(),
            partition: partition.map(|p| p.to_string()),
            ..base
        });
    }
    Ok(pooled)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(device: usize, best_ms: f64, evals: usize, wall: f64) -> TuneRun {
        serde_json::from_value(serde_json::json!({
            "kernel": "matmul",
            "device": {"backend": "nvidia", "arch": "sm_90", "name": "H100", "wave_size": 32},
            "problem": {"n": 1024},
            "strategy": "brute_force",
            "seed": 0,
            "parameters": [],
            "restrictions": [],
            "space": 10,
            "raw_space": 10,
            "budget": null,
            "evaluations": evals,
            "failures": {"compile": device + 1},
            "cache_hits": 0,
            "remeasurements": 0,
            "best": {"config": {"B": device}, "time_ms": best_ms, "cv": 0.01,
                     "throughput": null, "failure": null},
            "default": {"config": {"B": 0}, "time_ms": 2.0, "cv": 0.01,
                        "throughput": null, "failure": null},
            "speedup": null,
            "throughput_unit": null,
            "overhead": {"total_s": wall, "kernel_s": 1.0, "compile_s": 0.5, "verify_s": 0.5,
                         "measured": evals, "per_eval_ms": 0.0},
            "stop": "strategy_finished",
            "warnings": [],
            "trace": [],
            "cache_file": "/t/matmul/nvidia-sm_90-H100/n=1024.jsonl",
        }))
        .unwrap()
    }

    #[test]
    fn runs_of_several_devices_pool_into_one() {
        let places = ["nvidia/sm_90#0".to_owned(), "nvidia/sm_90#1".to_owned()];
        let pooled = pool(
            vec![Ok(vec![run(0, 1.5, 5, 3.0)]), Ok(vec![run(1, 1.0, 5, 4.0)])],
            &places,
            None,
        )
        .unwrap();
        assert_eq!(pooled.len(), 1);
        let p = &pooled[0];
        assert_eq!(p.evaluations, 10);
        assert_eq!(p.best.as_ref().unwrap().time_ms, Some(1.0));
        assert_eq!(p.best.as_ref().unwrap().config["B"], 1);
        assert_eq!(p.speedup, Some(2.0));
        assert_eq!(p.failures["compile"], 3);
        assert_eq!(
            p.overhead.total_s, 4.0,
            "the wall time is the longest device's"
        );
        assert_eq!(p.overhead.kernel_s, 2.0);
        assert_eq!(p.overhead.measured, 10);
        assert!((p.overhead.per_eval_ms - 500.0).abs() < 1e-9);
        assert_eq!(p.devices, places);
        // One device failing fails the group, naming it.
        let err = pool(
            vec![
                Ok(vec![run(0, 1.5, 5, 3.0)]),
                Err(Error::Tune("lost".into())),
            ],
            &places,
            None,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "nvidia/sm_90#1: lost");
    }
}
