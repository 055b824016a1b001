//! The registry of checks for one kernel library, and how it becomes libtest trials:
//! one per check × target, plus one per kernel that has no check.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use libtest_mimic::{Completion, Failed, Trial};
use rocm_kernels::KernelLibrary;

use crate::events::{EventSink, TrialEvent, TrialOutcome};
use crate::isolate::Report;
use crate::options::HarnessOptions;
use crate::run::{panic_message, run_check, RunConfig};
use crate::target::{trial_name, Bandwidth, Target, TargetSlot};
use crate::{Check, Error};

/// The checks of one harness binary. Given to the closure of [`crate::main`].
pub struct Suite {
    library: &'static KernelLibrary,
    checks: Vec<Check>,
    tunables: Vec<crate::tune::Tunable>,
    untested: Vec<(String, String)>,
    /// Where differential checks' recorded outputs live ([`Suite::snapshots`]).
    snapshots: Option<std::path::PathBuf>,
    /// Tests' stand-ins for the environment and the cpu backend of differential checks.
    pub(crate) oracle_setup: crate::differential::OracleSetup,
    /// Targets made by [`Suite::run_cpu`], reused across calls.
    cpu_targets: Mutex<BTreeMap<u32, Arc<dyn Target>>>,
}

impl Suite {
    /// An empty suite for `library`.
    pub fn new(library: &'static KernelLibrary) -> Self {
        Suite {
            library,
            checks: Vec::new(),
            tunables: Vec::new(),
            untested: Vec::new(),
            snapshots: None,
            oracle_setup: Default::default(),
            cpu_targets: Mutex::new(BTreeMap::new()),
        }
    }

    /// The library the checks are for.
    pub fn library(&self) -> &'static KernelLibrary {
        self.library
    }

    /// Register a check of `kernel` and return it for configuration.
    pub fn check(&mut self, kernel: &str) -> &mut Check {
        self.checks.push(Check::new(kernel));
        self.checks.last_mut().expect("just pushed")
    }

    /// Declare a tunable for the check named `check` (a check's name is its kernel's unless
    /// renamed with [`Check::named`]): its parameters, restrictions, launch, problem sizes and
    /// default, for `cargo rocm tune` (see [`crate::tune`]). Every candidate is verified with the
    /// check's inputs, reference and tolerance. In a test run it is one trial,
    /// `<name>::tunable`, that checks the declaration.
    pub fn tune(&mut self, check: &str) -> &mut crate::tune::Tunable {
        self.tunables.push(crate::tune::Tunable::new(check));
        self.tunables.last_mut().expect("just pushed")
    }

    /// The folder of the outputs that [differential checks](Check::differential) compare the
    /// cpu backend with: one JSON file per check, recorded on a GPU with `ROCM_TEST_RECORD=1`
    /// and committed (for example `concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots")`).
    pub fn snapshots(&mut self, dir: impl Into<std::path::PathBuf>) -> &mut Self {
        self.snapshots = Some(dir.into());
        self
    }

    /// The differential checks' oracle, when there are any.
    fn oracle(&self) -> Option<Arc<crate::differential::Oracle>> {
        self.checks.iter().any(|c| c.differential).then(|| {
            Arc::new(crate::differential::Oracle::new(
                self.library,
                self.snapshots.clone(),
                &self.oracle_setup,
            ))
        })
    }

    /// The tunables declared so far.
    #[cfg_attr(not(feature = "tune"), allow(dead_code))] // used in tune mode
    pub(crate) fn tunables(&self) -> &[crate::tune::Tunable] {
        &self.tunables
    }

    /// The check named `name`.
    pub(crate) fn find_check(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == name)
    }

    /// Opt `kernel` out of the "every kernel has a check" rule, saying why (for example
    /// "called only by `reduce`, which is checked"). It shows as an ignored trial with the reason.
    pub fn untested(&mut self, kernel: &str, reason: &str) -> &mut Self {
        self.untested.push((kernel.to_owned(), reason.to_owned()));
        self
    }

    /// Run the check named `name` once on the cpu backend with this wave size, outside libtest
    /// (for benchmarks and tools): `Ok(cases run)` or the failure report. The device and module
    /// are made on first use and reused by later calls. Fails with [`Error::Declaration`] when
    /// there is no such check or it cannot run (its mistakes, one a line), or with the trial's
    /// failure.
    pub fn run_cpu(&self, name: &str, wave_size: u32) -> Result<u32, Error> {
        let check = self
            .checks
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| Error::Declaration(format!("no check named `{name}`")))?;
        let errors = static_errors(check, self.library);
        if !errors.is_empty() {
            return Err(Error::Declaration(errors.join("\n")));
        }
        let target = self
            .cpu_targets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(wave_size)
            .or_insert_with(|| crate::runtime::cpu_target(self.library, wave_size, None))
            .clone();
        let place = crate::TrialPlace {
            backend: rocm_kernels::Backend::Cpu,
            target: format!("w{wave_size}"),
        };
        let trial = trial_name(&check.name, &place);
        run_check(
            check,
            target.as_ref(),
            &place,
            &RunConfig {
                oracle: self.oracle(),
                ..RunConfig::default()
            },
            &trial,
        )
        .map(|ok| ok.cases)
    }

    /// The trials for these targets: names and bodies (each records its event when run).
    /// `ignored_fails`: a trial that ends ignored fails instead (under cargo-nextest).
    pub(crate) fn trial_bodies(
        self,
        slots: &[TargetSlot],
        opts: &HarnessOptions,
        sink: Option<Arc<EventSink>>,
        binary: &str,
        ignored_fails: bool,
    ) -> Vec<TrialBody> {
        let recorder = Recorder {
            sink,
            binary: binary.to_owned(),
            ignored_fails,
        };
        self.bodies(slots, opts)
            .into_iter()
            .map(|(meta, body)| recorder.trial(meta, body))
            .collect()
    }

    /// In a child process of the harness ([`crate::isolate`]): run trial `name` here and say how
    /// it ended.
    pub(crate) fn run_in_this_process(
        self,
        slots: &[TargetSlot],
        opts: &HarnessOptions,
        name: &str,
    ) -> Report {
        let inline = HarnessOptions {
            isolate: false,
            ..opts.clone()
        };
        let Some((_, body)) = self
            .bodies(slots, &inline)
            .into_iter()
            .find(|(meta, _)| meta.name == name)
        else {
            return Report::Failed {
                message: format!("the harness has no trial named `{name}`"),
            };
        };
        match catch_unwind(AssertUnwindSafe(body))
            .unwrap_or_else(|p| Err(Error::Panicked(format!("panicked: {}", panic_message(&*p)))))
        {
            Ok(Done::Passed(cases, seed, bandwidth)) => Report::Passed {
                cases,
                seed,
                bandwidth,
            },
            Ok(Done::Ignored(reason)) => Report::Ignored { reason },
            Err(e) => Report::Failed {
                message: e.to_string(),
            },
        }
    }

    /// Every trial's description and body.
    fn bodies(self, slots: &[TargetSlot], opts: &HarnessOptions) -> Vec<(Meta, Body)> {
        let cfg = Arc::new(RunConfig {
            seed: opts.seed,
            cases: opts.cases.unwrap_or(crate::run::DEFAULT_CASES),
            race: opts.race_check,
            reproduce_flags: opts.reproduce_flags(),
            oracle: self.oracle(),
            ..RunConfig::default()
        });
        let lib = self.library;
        // The table's spelling of each checked kernel (`k<256u>` checks `k<256>`).
        let checked: Vec<String> = self
            .checks
            .iter()
            .map(|c| {
                lib.kernel(&c.kernel)
                    .map_or(c.kernel.clone(), |d| d.name.to_string())
            })
            .collect();
        let mut trials = Vec::new();
        // Each tunable's declaration, checked without a device.
        for t in &self.tunables {
            let verdict = crate::tune::validate(t, &self).map(|_| ());
            let meta = Meta {
                name: format!("{}::tunable", t.name),
                check: t.check.clone(),
                kernel: self
                    .find_check(&t.check)
                    .map(|c| c.kernel.clone())
                    .unwrap_or_else(|| t.check.clone()),
                backend: None,
                target: None,
                skip: None,
            };
            trials.push((
                meta,
                Box::new(move || verdict.map(|()| Done::Passed(None, None, None))) as Body,
            ));
        }
        for check in self.checks {
            let static_errors = static_errors(&check, lib);
            let check = Arc::new(check);
            for slot in slots {
                let name = trial_name(&check.name, &slot.id);
                let required = opts.require.contains(&slot.id.backend);
                // Known before running: listed as ignored, so a runner that lists first
                // (cargo-nextest) skips the trial instead of counting it as passed.
                let skip = match &slot.target {
                    Err(reason) if !required => Some(reason.to_string()),
                    Ok(target) if static_errors.is_empty() => {
                        check.excluded_from(&slot.id, target.wave_size())
                    }
                    _ => None,
                };
                let meta = Meta {
                    name: name.clone(),
                    check: check.name.clone(),
                    kernel: check.kernel.clone(),
                    backend: Some(slot.id.backend.to_string()),
                    target: Some(slot.id.target.clone()),
                    skip: skip.clone(),
                };
                let body: Body = match (&slot.target, static_errors.is_empty()) {
                    _ if skip.is_some() => {
                        let reason = skip.unwrap_or_default();
                        Box::new(move || Ok(Done::Ignored(reason)))
                    }
                    (Err(reason), _) => {
                        let msg = format!(
                            "backend `{}` is required (--require-backend) but cannot run here: {reason}",
                            slot.id.backend
                        );
                        Box::new(move || Err(Error::Target(msg)))
                    }
                    (Ok(_), false) => {
                        let msg = format!(
                            "the check `{}` cannot run:\n{}",
                            check.name,
                            static_errors
                                .iter()
                                .map(|e| format!("  - {e}\n"))
                                .collect::<String>()
                        );
                        Box::new(move || Err(Error::Declaration(msg)))
                    }
                    // A process of its own, so a kernel that kills it fails only this trial.
                    (Ok(_), true) if opts.isolate => {
                        let trial = name.clone();
                        Box::new(move || match crate::isolate::run_in_child(&trial) {
                            Report::Passed {
                                cases,
                                seed,
                                bandwidth,
                            } => Ok(Done::Passed(cases, seed, bandwidth)),
                            Report::Ignored { reason } => Ok(Done::Ignored(reason)),
                            Report::Failed { message } => Err(Error::Failed(message)),
                        })
                    }
                    (Ok(target), true) => {
                        let (target, check, cfg) = (target.clone(), check.clone(), cfg.clone());
                        let (trial, place) = (name.clone(), slot.id.clone());
                        Box::new(move || {
                            run_check(&check, target.as_ref(), &place, &cfg, &trial)
                                .map(|ok| Done::Passed(Some(ok.cases), ok.seed, ok.bandwidth))
                        })
                    }
                };
                trials.push((meta, body));
            }
        }
        // Every kernel of the library needs a check (or an explicit opt-out).
        for k in lib.kernels {
            let meta = |suffix: &str| Meta {
                name: format!("{}::{suffix}", k.name),
                check: k.name.to_owned(),
                kernel: k.name.to_owned(),
                backend: None,
                target: None,
                skip: None,
            };
            if let Some((_, reason)) = self.untested.iter().find(|(n, _)| n == k.name) {
                let reason = format!("untested: {reason}");
                let meta = Meta {
                    skip: Some(reason.clone()),
                    ..meta("untested")
                };
                trials.push((meta, Box::new(move || Ok(Done::Ignored(reason))) as Body));
            } else if !checked.iter().any(|c| c == k.name) {
                let msg = format!(
                    "kernel `{}` ({}) has no check: add `s.check(\"{}\")…` to this harness, or \
                     `s.untested(\"{}\", \"why\")` if another check covers it",
                    k.name, k.source, k.name, k.name
                );
                trials.push((
                    meta("no-check"),
                    Box::new(move || Err(Error::Declaration(msg))) as Body,
                ));
            }
        }
        trials
    }
}

/// Mistakes visible before running: the check's own, and mismatches with the library.
pub(crate) fn static_errors(check: &Check, lib: &KernelLibrary) -> Vec<String> {
    let mut errs = check.validate();
    if !lib.kernels.is_empty() {
        match lib.kernel(&check.kernel) {
            Some(k) => errs.extend(check.validate_params(k.params)),
            None => {
                let names: Vec<&str> = lib.kernels.iter().map(|k| k.name).collect();
                let template_hint = match check.kernel.split_once('<') {
                    Some((base, _)) => format!(
                        "; if `{base}` is a kernel template, its source must instantiate `{}` \
                         (`template __global__ void {}(...);` after the template, with its \
                         parameter types): templates nobody instantiates build no kernel (the \
                         build warns about them)",
                        check.kernel, check.kernel
                    ),
                    None => String::new(),
                };
                errs.push(format!(
                    "no kernel named `{}` in library `{}` (it has: {}){template_hint}",
                    check.kernel,
                    lib.name,
                    names.join(", ")
                ));
            }
        }
    }
    errs
}

/// A trial before libtest-mimic wraps it.
pub(crate) struct TrialBody {
    pub name: String,
    /// Why it cannot run here, when that is known before running it: the trial is listed as
    /// ignored (libtest's `#[ignore]`).
    pub skip: Option<String>,
    pub run: Box<dyn FnOnce() -> Result<Completion, Failed> + Send>,
}

impl TrialBody {
    /// The libtest-mimic trial, flagged ignored when it cannot run here.
    pub(crate) fn into_trial(self) -> Trial {
        Trial::ignorable_test(self.name, self.run).with_ignored_flag(self.skip.is_some())
    }
}

/// How a trial body ended when it did not fail.
enum Done {
    Passed(Option<u32>, Option<u64>, Option<Bandwidth>),
    Ignored(String),
}

type Body = Box<dyn FnOnce() -> Result<Done, Error> + Send>;

struct Meta {
    name: String,
    check: String,
    kernel: String,
    backend: Option<String>,
    target: Option<String>,
    /// Why it cannot run here, when known before running it.
    skip: Option<String>,
}

/// Wraps trial bodies: catches panics, times them, and writes one event per trial.
#[derive(Clone)]
struct Recorder {
    sink: Option<Arc<EventSink>>,
    binary: String,
    /// A trial that ends ignored fails instead: cargo-nextest counts a process that prints
    /// "ignored" and exits 0 as passed (it skips trials listed as ignored; this is one run
    /// anyway, with `--run-ignored`).
    ignored_fails: bool,
}

impl Recorder {
    fn trial(&self, meta: Meta, body: Body) -> TrialBody {
        let rec = self.clone();
        let (name, skip) = (meta.name.clone(), meta.skip.clone());
        let run = Box::new(move || {
            let start = Instant::now();
            let result = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|p| {
                Err(Error::Panicked(format!("panicked: {}", panic_message(&*p))))
            });
            let result = match result {
                Ok(Done::Ignored(reason)) if rec.ignored_fails => {
                    Err(Error::Failed(crate::nextest::ignored_run_message(&reason)))
                }
                other => other,
            };
            let duration_s = start.elapsed().as_secs_f64();
            let (outcome, message, cases, seed, bandwidth) = match &result {
                Ok(Done::Passed(cases, seed, bw)) => {
                    (TrialOutcome::Passed, None, *cases, *seed, *bw)
                }
                Ok(Done::Ignored(reason)) => (
                    TrialOutcome::Ignored,
                    Some(reason.clone()),
                    None,
                    None,
                    None,
                ),
                Err(e) => (TrialOutcome::Failed, Some(e.to_string()), None, None, None),
            };
            if let Some(bw) = &bandwidth {
                println!("bandwidth of {}: {bw}", meta.name);
            }
            if let Some(sink) = &rec.sink {
                sink.write(&TrialEvent {
                    kind: "trial".into(),
                    name: meta.name,
                    check: meta.check,
                    kernel: meta.kernel,
                    backend: meta.backend,
                    target: meta.target,
                    outcome,
                    message,
                    duration_s,
                    cases,
                    seed,
                    bandwidth,
                    binary: rec.binary.clone(),
                });
            }
            match result {
                Ok(Done::Passed(..)) => Ok(Completion::Completed),
                Ok(Done::Ignored(reason)) => Ok(Completion::ignored_with(reason)),
                Err(e) => Err(Failed::from(e.to_string())),
            }
        });
        TrialBody { name, skip, run }
    }
}
