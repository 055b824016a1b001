//! A harness in tune mode (`ROCM_TUNE_REQUEST` set): every tunable the request selects is
//! tuned on each device and problem size with each strategy, through an append-only cache per
//! tunable, device and problem size (a rerun resumes from it), and the results go to
//! `<out_dir>/results.json` ([`TuneReport`]), the progress to the events file, and the best
//! configurations to the wisdom file when one is named.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rocm_kernels::library::ObjectFormat;
use rocm_kernels::runtime::{CpuExec, CpuOptions, Device};
use rocm_kernels::{Backend, KernelLibrary};
use rocm_kernels_core::wisdom::{ParamValue, Wisdom, WisdomEntry};
use rocm_test_events::tune::{
    ConfigMap, DeviceDesc, ListedTunable, Measured, Overhead, ParamInfo,
    ParamKind as EventParamKind, TraceStep, TuneEvent, TuneFailure, TuneReport, TuneRequest,
    TuneRun,
};
use rocm_tune::cache::{aggregate, Aggregate};
use rocm_tune::eval::coefficient_of_variation;
use rocm_tune::tuner::{StopReason, TraceEntry};
use rocm_tune::{
    Budget, CacheMeta, CacheRecord, Config, ConfigId, Evaluator, JsonlCache, KtCache, Objective,
    Outcome, Partition, SearchSpace, TuneError, TuneResult, Tuner,
};

use super::compile::{Ahead, Compiler, SourceSpec};
use super::evaluate::{problem_case, KernelEvaluator};
use super::{ParamKind, Tunable};
use crate::check::Check;
use crate::Suite;

/// The exit code of a harness whose GPU kernel outlived the time limit (the process cannot
/// interrupt it, so it ends; the cache holds everything measured before).
pub(crate) const HANG_EXIT: i32 = 3;

/// Timed launches per configuration by default (Kernel Tuner's default too).
const DEFAULT_ITERATIONS: u32 = 7;
/// Default time limit of one launch.
const DEFAULT_TIME_LIMIT_S: f64 = 30.0;
/// Evaluations per strategy run without a budget: at most this many.
const DEFAULT_MAX_EVALS: usize = 100;

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

fn config_map(config: &Config) -> ConfigMap {
    config
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_json()))
        .collect()
}

fn outcome_name(o: &Outcome) -> String {
    match o {
        Outcome::Valid { .. } => "ok".into(),
        Outcome::Failed(kind) => serde_json::to_value(kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "other".into()),
    }
}

fn stop_name(s: StopReason) -> &'static str {
    match s {
        StopReason::StrategyFinished => "strategy_finished",
        StopReason::BudgetExhausted => "budget_exhausted",
        StopReason::SpaceExhausted => "space_exhausted",
        StopReason::Stalled => "stalled",
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
fn devices(request: &TuneRequest, time_limit: Duration) -> Result<Vec<Vec<TuneDevice>>, String> {
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
            .collect::<Result<_, _>>()?
    };
    let selection = request
        .devices
        .clone()
        .unwrap_or(rocm_test_events::DeviceSelection::First(1));
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
            return Err(format!("cannot tune on {backend}: {why}"));
        }
        let missing = selection.missing(all.len());
        if !missing.is_empty() {
            return Err(format!(
                "cannot tune on {backend}: --devices {selection} names device(s) {missing:?}, \
                 but this machine has {} {backend} device(s) (ordinals 0 to {})",
                all.len(),
                all.len() - 1
            ));
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
        for m in models {
            let same: Vec<&(usize, &Device)> =
                picked.iter().filter(|(_, d)| model(d) == m).collect();
            let twins = picked.iter().filter(|(_, d)| d.info().arch == m.0).count() > 1;
            groups.push(
                same.into_iter()
                    .map(|(i, d)| TuneDevice {
                        device: (*d).clone(),
                        place: rocm_kernels::TrialPlace::gpu(backend, &m.0, *i, twins).to_string(),
                    })
                    .collect(),
            );
        }
    }
    Ok(groups)
}

/// Checks of a tunable's declaration that need no device; `Err` says what to fix.
pub(crate) fn validate(
    tunable: &Tunable,
    suite: &Suite,
) -> Result<(SearchSpace, Option<ConfigId>), String> {
    let mut errors = tunable.errors.clone();
    if tunable.params.is_empty() {
        errors.push("no parameters: add `.define(…)` or `.param(…)`".into());
    }
    if tunable.launch.is_none() {
        errors.push(
            "no launch: add `.launch(|config, inputs| …)`, the launch as a function of the \
             parameters and the problem"
                .into(),
        );
    }
    let check = suite.find_check(&tunable.check);
    match check {
        None => errors.push(format!(
            "no check named `{}` to take the arguments, reference and tolerance from: add \
             `s.check(\"{}\")…` to the harness",
            tunable.check, tunable.check
        )),
        Some(c) => {
            for p in &tunable.problems {
                for (n, _) in p {
                    if !c.sizes.iter().any(|(s, _)| s == n) {
                        errors.push(format!(
                            "problem size `{n}` is not a size of check `{}` (its sizes: {})",
                            c.name,
                            c.sizes
                                .iter()
                                .map(|(s, _)| s.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                }
            }
            // A definition the kernel's source never mentions makes every value the same
            // kernel: surely a typo.
            if let Some((path, text)) = source_text(tunable, c, suite.library()) {
                for d in tunable.defines() {
                    if !mentions(&text, &d) {
                        errors.push(format!(
                            "compile-time parameter `{d}` does not appear in {}: the kernel \
                             never reads it (a typo, or declare it with `.param` if only the \
                             launch uses it)",
                            path.display()
                        ));
                    }
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(format!(
            "tunable `{}` is not valid:\n{}",
            tunable.name,
            errors
                .iter()
                .map(|e| format!("  - {e}\n"))
                .collect::<String>()
        ));
    }
    let space = tunable.space()?;
    let default = match tunable.default_in(&space) {
        None => None,
        Some(Ok(id)) => Some(id),
        Some(Err(e)) => return Err(e),
    };
    Ok((space, default))
}

/// Whether `word` appears in `text` as a whole identifier.
fn mentions(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The crate root: `CARGO_MANIFEST_DIR` (cargo sets it when it runs a test).
fn crate_root() -> Option<PathBuf> {
    std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from)
}

/// The kernel's source file on disk and its text, when it can be found.
fn source_text(tunable: &Tunable, check: &Check, lib: &KernelLibrary) -> Option<(PathBuf, String)> {
    let rel = match &tunable.source {
        Some(p) => p.clone(),
        None => PathBuf::from(lib.kernel(&check.kernel)?.source),
    };
    let path = if rel.is_absolute() {
        rel
    } else {
        crate_root()?.join(rel)
    };
    let text = std::fs::read_to_string(&path).ok()?;
    Some((path, text))
}

/// What the run-time compiles of `device` take: the file on disk, or (nvidia) the source the
/// build embedded for NVRTC when the file is not here (a GPU machine without the crate).
fn source_spec(
    tunable: &Tunable,
    check: &Check,
    lib: &'static KernelLibrary,
    backend: Backend,
) -> Result<SourceSpec, String> {
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
    Err(format!(
        "the source of kernel `{}` ({source}) is not readable here: run the harness from its \
         crate (cargo sets CARGO_MANIFEST_DIR), or name it with `Tunable::source`",
        check.kernel
    ))
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
                space: validate(t, &suite).map(|(s, _)| s.len()),
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
                message: e,
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
        let (space, default) = match validate(tunable, &suite) {
            Ok(v) => v,
            Err(e) => {
                fail(&mut report, e);
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
                        if let Err(e) = set_aside(&path) {
                            fail(&mut report, e);
                            continue;
                        }
                    }
                    // One thread per device, each on its slice of the space (of this job's
                    // slice, with --partition), measuring at the same time; then one pooled
                    // run per strategy.
                    let n = group.len() as u32;
                    let per_device: Vec<Result<Vec<TuneRun>, String>> = std::thread::scope(|s| {
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
                                    Err(format!(
                                        "tuning on a device panicked: {}",
                                        crate::run::panic_message(&*p)
                                    ))
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
                    Err(e) => fail(&mut report, e),
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

/// Write the report and say how it went.
fn finish(out_dir: &Path, report: TuneReport) -> ExitCode {
    let path = out_dir.join("results.json");
    let written = std::fs::create_dir_all(out_dir).and_then(|()| {
        std::fs::write(
            &path,
            serde_json::to_string_pretty(&report).expect("report serializes") + "\n",
        )
    });
    if let Err(e) = written {
        eprintln!("error: cannot write {}: {e}", path.display());
        return ExitCode::from(2);
    }
    for r in &report.runs {
        let best = r
            .best
            .as_ref()
            .and_then(|b| b.time_ms)
            .map(|t| format!("{t:.4} ms"))
            .unwrap_or_else(|| "nothing valid".into());
        eprintln!(
            "tuned {} on {} {:?} with {}: best {best} after {} evaluations ({} failed){}",
            r.kernel,
            r.device.name,
            r.problem,
            r.strategy,
            r.evaluations,
            r.failures.values().sum::<usize>(),
            r.speedup
                .map(|s| format!(", {s:.2}x the default"))
                .unwrap_or_default()
        );
    }
    eprintln!("tuning results: {}", path.display());
    if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
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

/// `--fresh`: the cache moves aside (`<name>.<unix time>.jsonl.old`), never deleted.
fn set_aside(cache_path: &Path) -> Result<(), String> {
    if cache_path.exists() {
        let aside =
            cache_path.with_extension(format!("{}.jsonl.old", rocm_tune::cache::now_unix() as u64));
        std::fs::rename(cache_path, &aside)
            .map_err(|e| format!("cannot set {} aside: {e}", cache_path.display()))?;
    }
    Ok(())
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
fn tune_one(job: TuneOne<'_>) -> Result<Vec<TuneRun>, String> {
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
    let info = device.info().clone();
    let desc = device_desc(device);
    let problem = problem_map(sizes);
    let base = device.load(library).map_err(|e| {
        format!(
            "cannot load the kernels of `{}` on {}: {e}",
            library.name, info.name
        )
    })?;
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
    if request.fresh && lead {
        set_aside(&cache_path)?;
    }
    if let Some(dir) = cache_path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let meta = CacheMeta::for_space(space, Some(&tunable.name), Some(&desc.name));
    let mut cache = JsonlCache::open(&cache_path, meta).map_err(|e| e.to_string())?;
    if let Some(kt) = request.import_kt.as_ref().filter(|_| lead) {
        let (kt, _) = KtCache::read(kt).map_err(|e| e.to_string())?;
        let (records, skipped) = kt.to_records(space);
        let known: std::collections::HashSet<String> =
            cache.records().iter().map(|r| r.key.clone()).collect();
        for r in records.into_iter().filter(|r| !known.contains(&r.key)) {
            cache.append(r).map_err(|e| e.to_string())?;
        }
        for s in skipped {
            eprintln!("warning: Kernel Tuner import: {s}");
        }
    }

    // The default first: the report's speed-up is against it.
    let default_measured = default.map(|id| {
        measure_default(
            space,
            id,
            &mut evaluator,
            &mut cache,
            work.as_ref().map(|w| w.1),
        )
    });
    evaluator.take_stats();

    let strategies: Vec<String> = if request.strategies.is_empty() {
        vec!["regression_prune".into()]
    } else {
        request.strategies.clone()
    };
    let max_evals = match (request.max_evals, request.max_seconds) {
        (Some(n), _) => Some(n),
        (None, Some(_)) => None,
        (None, None) => Some(DEFAULT_MAX_EVALS.min(space.len())),
    };
    let budget = Budget {
        max_evals,
        max_time: request.max_seconds.map(Duration::from_secs_f64),
    };
    let mut runs = Vec::new();
    for name in &strategies {
        let mut strategy = rocm_tune::strategy::by_name(name).ok_or_else(|| {
            format!(
                "unknown strategy `{name}` (known: brute_force, random, annealing, genetic, \
                 bayes, regression_prune)"
            )
        })?;
        events.send(&TuneEvent::Start {
            kernel: tunable.name.clone(),
            device: desc.name.clone(),
            problem: problem.clone(),
            strategy: name.clone(),
            space: space.len(),
            budget: budget.max_evals,
        });
        let started = Instant::now();
        let result = {
            let kernel_name = tunable.name.clone();
            let strategy_name = name.clone();
            let mut n = 0usize;
            let events_ref = events;
            let mut observe = |space: &SearchSpace, step: &TraceEntry, best: Option<f64>| {
                n += 1;
                events_ref.send(&TuneEvent::Eval {
                    kernel: kernel_name.clone(),
                    strategy: strategy_name.clone(),
                    n,
                    config: config_map(&space.config(step.id)),
                    outcome: outcome_name(&step.outcome),
                    time_ms: step.outcome.objective(),
                    best_ms: best,
                    from_cache: step.from_cache,
                });
            };
            Tuner::new(space, &mut evaluator)
                .budget(budget)
                .seed(request.seed)
                .objective(Objective::Mean)
                .partition(partition)
                .cache(&mut cache)
                .observe(&mut observe)
                .run(strategy.as_mut())
        };
        let total_s = started.elapsed().as_secs_f64();
        let stats = evaluator.take_stats();
        let (result, stop, mut warnings) = match result {
            Ok(r) => {
                let stop = stop_name(r.stop).to_owned();
                (r, stop, Vec::new())
            }
            Err(TuneError::Aborted { source, partial }) => (
                *partial,
                "aborted".to_owned(),
                vec![format!("stopped: {source}")],
            ),
        };
        warnings.extend(result.warnings.iter().map(|w| format!("{w:?}")));
        let run = tune_run(TuneRunParts {
            tunable,
            desc: &desc,
            problem: &problem,
            space,
            result: &result,
            stop,
            warnings,
            default: default_measured.clone(),
            work: work.clone(),
            seed: request.seed,
            budget: budget.max_evals,
            overhead: Overhead {
                total_s,
                kernel_s: stats.kernel_s,
                compile_s: stats.compile_s,
                verify_s: stats.verify_s,
                measured: stats.measured,
                per_eval_ms: if stats.measured > 0 {
                    (total_s - stats.kernel_s) / stats.measured as f64 * 1e3
                } else {
                    0.0
                },
            },
            cache_file: cache.path().to_path_buf(),
        });
        let run = TuneRun {
            partition: partition.map(|p| p.to_string()),
            ..run
        };
        events.send(&TuneEvent::Done {
            kernel: tunable.name.clone(),
            strategy: name.clone(),
            best_ms: run.best.as_ref().and_then(|b| b.time_ms),
            evaluations: run.evaluations,
        });
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
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        runs.push(run);
    }
    Ok(runs)
}

/// The default configuration's measurement: from the cache when it holds it, else measured
/// now (and appended).
fn measure_default(
    space: &SearchSpace,
    id: ConfigId,
    evaluator: &mut KernelEvaluator<'_>,
    cache: &mut JsonlCache,
    work: Option<f64>,
) -> Measured {
    let config = space.config(id);
    let known = cache
        .records()
        .iter()
        .filter(|r| r.locate(space) == Ok(id))
        .collect::<Vec<_>>();
    let (times, failure) = match aggregate(known) {
        Some(Aggregate::Ok { times, .. }) => (times, None),
        Some(Aggregate::Failed { kind, message }) => {
            (Vec::new(), Some(format!("{kind:?}: {message}")))
        }
        None => match evaluator.evaluate(&config) {
            Ok(m) => {
                let _ = cache.append(CacheRecord::new(
                    space,
                    id,
                    m.times.clone(),
                    None,
                    m.features,
                ));
                (m.times, None)
            }
            Err(e) => {
                let kind = e.kind().unwrap_or(rocm_tune::FailureKind::Other);
                let _ = cache.append(CacheRecord::new(
                    space,
                    id,
                    Vec::new(),
                    Some((kind, e.message().to_owned())),
                    Default::default(),
                ));
                (Vec::new(), Some(e.to_string()))
            }
        },
    };
    let time_ms = Objective::Mean.reduce(&times);
    Measured {
        config: config_map(&config),
        time_ms,
        cv: (!times.is_empty()).then(|| coefficient_of_variation(&times)),
        throughput: work.zip(time_ms).map(|(w, t)| w / (t * 1e-3)),
        failure,
    }
}

struct TuneRunParts<'a> {
    tunable: &'a Tunable,
    desc: &'a DeviceDesc,
    problem: &'a BTreeMap<String, i64>,
    space: &'a SearchSpace,
    result: &'a TuneResult,
    stop: String,
    warnings: Vec<String>,
    default: Option<Measured>,
    work: Option<(String, f64)>,
    seed: u64,
    budget: Option<usize>,
    overhead: Overhead,
    cache_file: PathBuf,
}

fn tune_run(p: TuneRunParts<'_>) -> TuneRun {
    let r = p.result;
    let mut failures: BTreeMap<String, usize> = BTreeMap::new();
    for step in &r.trace {
        if let Outcome::Failed(_) = step.outcome {
            *failures.entry(outcome_name(&step.outcome)).or_default() += 1;
        }
    }
    let work = p.work.as_ref().map(|w| w.1);
    let best = r.best.as_ref().map(|b| Measured {
        config: config_map(&b.config),
        time_ms: Some(b.objective),
        cv: Some(b.cv),
        throughput: work.map(|w| w / (b.objective * 1e-3)),
        failure: None,
    });
    let speedup = match (&p.default, &best) {
        (Some(d), Some(b)) => d.time_ms.zip(b.time_ms).map(|(d, b)| d / b),
        _ => None,
    };
    TuneRun {
        kernel: p.tunable.name.clone(),
        device: p.desc.clone(),
        problem: p.problem.clone(),
        strategy: r.strategy.clone(),
        seed: p.seed,
        parameters: param_infos(p.tunable),
        restrictions: p.tunable.restriction_texts(),
        space: p.space.len(),
        raw_space: p.space.raw_size(),
        budget: p.budget,
        evaluations: r.evaluations,
        failures,
        cache_hits: r.cache_hits,
        remeasurements: r.remeasurements,
        best,
        default: p.default,
        speedup,
        throughput_unit: p.work.map(|w| w.0),
        overhead: p.overhead,
        stop: p.stop,
        warnings: p.warnings,
        trace: r
            .trace
            .iter()
            .map(|s| TraceStep {
                config: config_map(&p.space.config(s.id)),
                outcome: outcome_name(&s.outcome),
                time_ms: s.outcome.objective(),
                elapsed_s: s.elapsed.as_secs_f64(),
                from_cache: s.from_cache,
            })
            .collect(),
        cache_file: Some(p.cache_file),
        devices: Vec::new(),
        partition: None,
    }
}

/// The runs of several devices of one model, each on its slice, as one run per strategy: the
/// best of them all, every evaluation, failures and overhead added up (the wall time is the
/// longest device's). A device that could not be tuned fails the whole group.
fn pool(
    per_device: Vec<Result<Vec<TuneRun>, String>>,
    places: &[String],
    partition: Option<Partition>,
) -> Result<Vec<TuneRun>, String> {
    let mut lists = Vec::new();
    let mut errors = Vec::new();
    for (r, place) in per_device.into_iter().zip(places) {
        match r {
            Ok(runs) => lists.push(runs),
            Err(e) => errors.push(format!("{place}: {e}")),
        }
    }
    if !errors.is_empty() {
        return Err(errors.join("\n"));
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
        unix_time: rocm_tune::cache::now_unix() as u64,
    })
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
            vec![Ok(vec![run(0, 1.5, 5, 3.0)]), Err("lost".into())],
            &places,
            None,
        )
        .unwrap_err();
        assert_eq!(err, "nvidia/sm_90#1: lost");
    }
}
