//! Evaluating one configuration of a tunable on one device at one problem size: compile (when
//! it has compile-time parameters), launch once on the check's inputs and compare with the
//! check's reference (its tolerance, its comparison, its poisoned outputs), then time it with
//! device events. For tuning, the only file that touches the runtime API (the trials' is
//! `runtime.rs`, whose device buffers it shares).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use proptest::strategy::{Just, Strategy, ValueTree};
use proptest::test_runner::{Config as PropConfig, TestRunner};
use rocm_kernels::runtime::{Device, Kernel, Module, RuntimeError, Stream};
use rocm_tune::{Config, EvalError, EvalStats, Evaluator, Features, Measurement};

use super::compile::{Ahead, Variant};
use super::{ParamKind, Tunable};
use crate::check::{ArgKind, Case, CaseValue, Check, Inputs, Outputs, Role};
use crate::compare::compare;
use crate::element::{HostBuf, ScalarValue};
use crate::runtime::{push_scalar, DevBuf};
use crate::target::TrialPlace;
use crate::{Error, Launch};

/// Run user code (a reference, a launch closure) catching a panic without the panic hook's
/// message and backtrace on stderr: the panic becomes the run's own error message. The hook is
/// process-wide, and tune mode runs user code on this thread only.
fn quietly<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let out = catch_unwind(AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    out
}

/// One kernel argument on the device.
enum Slot {
    Scalar(ScalarValue),
    Buffer {
        dev: DevBuf,
        /// What it holds before each verification launch (in-out inputs, poisoned outputs),
        /// kept on the device and copied there (a 16 MB upload from the host took milliseconds
        /// of every evaluation); `None` for inputs, which the kernel does not change.
        reset: Option<DevBuf>,
        /// Index into the expected outputs, for buffers that are compared.
        compared: Option<usize>,
    },
}

/// The problem's inputs at one size: generated like a case of the check, with a fixed seed.
pub(crate) fn problem_case(
    check: &Check,
    sizes: &[(String, usize)],
    seed: u64,
) -> Result<Case, Error> {
    let values: Vec<usize> = check
        .sizes
        .iter()
        .map(|(name, spec)| {
            sizes
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| *v)
                .unwrap_or_else(|| spec.high())
        })
        .collect();
    let strategy = crate::run::case_strategy_with(check, Just(values).sboxed(), false);
    let mut runner = TestRunner::new_with_rng(
        PropConfig::default(),
        crate::run::rng_from_seed(seed ^ crate::run::fnv1a(check.name.as_bytes())),
    );
    catch_unwind(AssertUnwindSafe(|| strategy.new_tree(&mut runner)))
        .map_err(|p| {
            Error::Panicked(format!(
                "generating the inputs panicked: {}",
                crate::run::panic_message(&*p)
            ))
        })?
        .map(|t| t.current())
        .map_err(|e| Error::Tune(format!("could not generate the inputs: {e}")))
}

/// The loaded variant: its definitions, its compiled library and the module loaded from it.
type Current = (Vec<(String, String)>, Variant, Module);

/// Compiles, verifies and times configurations of one tunable on one device.
pub(crate) struct KernelEvaluator<'a> {
    tunable: &'a Tunable,
    check: &'a Check,
    case: Case,
    device: Device,
    stream: Stream,
    /// The crate's own build of the kernel (configurations without compile-time parameters).
    base: Module,
    /// Run-time compiles, when the tunable has compile-time parameters.
    ahead: Option<Ahead>,
    slots: Vec<Slot>,
    expected: Vec<(String, HostBuf)>,
    /// Where each compared output is downloaded, allocated once (not per candidate).
    downloaded: Vec<HostBuf>,
    iterations: u32,
    /// The variant used last (a re-measurement follows its evaluation).
    current: Option<Current>,
    /// Where the time of the evaluations went, since the last [`Evaluator::take_stats`].
    stats: EvalStats,
    time_limit: Duration,
    /// Where candidates run, and its wave size (what `Inputs::wave_size` answers).
    place: TrialPlace,
    wave_size: u32,
}

impl<'a> KernelEvaluator<'a> {
    /// Upload the problem's inputs and compute the expected outputs with the check's reference.
    /// `Err` is a message for the user: a reference that panics, inputs that cannot be made.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        tunable: &'a Tunable,
        check: &'a Check,
        case: Case,
        device: Device,
        base: Module,
        ahead: Option<Ahead>,
        iterations: u32,
        time_limit: Duration,
    ) -> Result<KernelEvaluator<'a>, Error> {
        if !check.globals.is_empty() {
            return Err(Error::Declaration(format!(
                "check `{}` sets module variables (`.global`), which tune mode does not set yet: \
                 tune a check whose kernel takes everything as arguments",
                check.name
            )));
        }
        let info = device.info();
        let wave_size = info.wave_size;
        let place = TrialPlace {
            backend: info.backend,
            target: match info.backend {
                rocm_kernels::Backend::Cpu => format!("w{wave_size}"),
                _ => info.arch.clone(),
            },
        };
        let inputs = Inputs {
            case: &case,
            target: Some((&place, wave_size)),
        };
        let mut expected: Vec<(String, HostBuf)> = Vec::new();
        let mut slots = Vec::new();
        let err = |e: RuntimeError| {
            Error::runtime_while(format!(
                "cannot set up the inputs on {}",
                device.info().name
            ))(e)
        };
        for (spec, (_, value)) in check.args.iter().zip(&case.values) {
            match (&spec.kind, value) {
                (ArgKind::Scalar(_), Some(CaseValue::Scalar(s))) => slots.push(Slot::Scalar(*s)),
                (ArgKind::Buffer { role, .. }, Some(CaseValue::Buffer(b))) => {
                    let inout = *role == Role::InOut;
                    if inout {
                        expected.push((spec.name.clone(), b.clone()));
                    }
                    slots.push(Slot::Buffer {
                        dev: DevBuf::upload(&device, b).map_err(err)?,
                        reset: if inout {
                            Some(DevBuf::upload(&device, b).map_err(err)?)
                        } else {
                            None
                        },
                        compared: inout.then(|| expected.len() - 1),
                    });
                }
                (ArgKind::Output { ty, len, zeroed }, _) => {
                    let n = crate::run::output_len(len, &inputs);
                    expected.push((spec.name.clone(), HostBuf::zeros(*ty, n)));
                    // Poisoned, or zeros for an accumulator, before every launch.
                    let start = if *zeroed {
                        HostBuf::zeros(*ty, n)
                    } else {
                        HostBuf::poisoned(*ty, n)
                    };
                    slots.push(Slot::Buffer {
                        dev: DevBuf::upload(&device, &start).map_err(err)?,
                        reset: Some(DevBuf::upload(&device, &start).map_err(err)?),
                        compared: Some(expected.len() - 1),
                    });
                }
                _ => {
                    return Err(Error::Declaration(format!(
                        "argument `{}` has no value",
                        spec.name
                    )))
                }
            }
        }
        let reference = check
            .reference
            .as_ref()
            .ok_or_else(|| Error::Declaration("the check has no reference".into()))?;
        let names: Vec<String> = expected.iter().map(|(n, _)| n.clone()).collect();
        let mut bufs: Vec<HostBuf> = expected.iter().map(|(_, b)| b.clone()).collect();
        quietly(|| {
            reference(
                &inputs,
                &mut Outputs {
                    names: &names,
                    bufs: &mut bufs,
                },
            )
        })
        .map_err(|p| {
            Error::Panicked(format!(
                "the reference of check `{}` panicked: {} (at sizes {:?}); nothing was measured",
                check.name,
                crate::run::panic_message(&*p),
                case.sizes
            ))
        })?;
        for ((_, e), b) in expected.iter_mut().zip(bufs) {
            *e = b;
        }
        let stream = device.stream().map_err(err)?;
        let downloaded = expected.iter().map(|(_, b)| b.clone()).collect();
        Ok(KernelEvaluator {
            tunable,
            check,
            case,
            device,
            stream,
            base,
            ahead,
            slots,
            expected,
            downloaded,
            iterations: iterations.max(1),
            current: None,
            stats: EvalStats::default(),
            time_limit,
            place,
            wave_size,
        })
    }

    pub fn inputs(&self) -> Inputs<'_> {
        Inputs {
            case: &self.case,
            target: Some((&self.place, self.wave_size)),
        }
    }

    /// The definitions of a configuration's compile-time parameters (`BM` → `64`).
    fn defines(&self, config: &Config) -> Vec<(String, String)> {
        self.tunable
            .params
            .iter()
            .filter(|(_, k, _)| *k == ParamKind::Define)
            .filter_map(|(n, _, _)| {
                config.get(n).map(|v| {
                    let text = match v {
                        rocm_tune::Value::Bool(b) => u8::from(*b).to_string(),
                        other => other.to_string(),
                    };
                    (n.clone(), text)
                })
            })
            .collect()
    }

    fn launch_of(&self, config: &Config) -> Result<Launch, EvalError> {
        let f = self
            .tunable
            .launch
            .as_ref()
            .ok_or_else(|| EvalError::Fatal("the tunable has no launch".into()))?;
        let inputs = Inputs {
            case: &self.case,
            target: Some((&self.place, self.wave_size)),
        };
        quietly(|| f(config, &inputs)).map_err(|p| {
            EvalError::Invalid(format!(
                "the launch closure panicked: {}",
                crate::run::panic_message(&*p)
            ))
        })
    }

    /// The kernel to launch for these definitions, and the static features of its code.
    fn kernel(&mut self, defines: &[(String, String)]) -> Result<(Kernel, Features), EvalError> {
        let name = self.check.kernel.clone();
        let Some(ahead) = &self.ahead else {
            let kernel = self
                .base
                .kernel(&name)
                .map_err(|e| EvalError::Fatal(e.to_string()))?;
            return Ok((kernel, Features::new()));
        };
        if let Some((d, variant, module)) = &self.current {
            if d.as_slice() == defines {
                return module
                    .kernel(&name)
                    .map(|k| (k, variant.features.clone()))
                    .map_err(|e| EvalError::Launch(e.to_string()));
            }
        }
        let started = Instant::now();
        let got = ahead.get(defines);
        self.stats.compile_s += started.elapsed().as_secs_f64();
        let variant = got.map_err(|e| EvalError::Compile(e.to_string()))?;
        let module = self
            .device
            .load(variant.library)
            .map_err(|e| EvalError::Compile(format!("loading the compiled variant: {e}")))?;
        let kernel = module
            .kernel(&name)
            .map_err(|e| EvalError::Compile(e.to_string()))?;
        let features = variant.features.clone();
        // The previous variant's module goes before its library could be unloaded.
        self.current = None;
        self.current = Some((defines.to_vec(), variant, module));
        Ok((kernel, features))
    }

    /// The code's static features and, where the driver tells (nvidia), registers, memory and
    /// occupancy at this launch's block size: `occupancy` is resident warps per multiprocessor
    /// over the most it holds (0 when the block cannot launch).
    fn features(&self, kernel: &Kernel, launch: &Launch, mut features: Features) -> Features {
        let threads = u32::try_from(launch.block.count()).unwrap_or(u32::MAX);
        let Some(r) = kernel.resources(threads, launch.shared_bytes) else {
            return features;
        };
        let mut put = |name: &str, v: Option<u32>| {
            if let Some(v) = v {
                features.insert(name.into(), f64::from(v));
            }
        };
        put("registers", r.registers);
        put("shared_bytes", r.static_shared_bytes);
        put("local_bytes", r.local_bytes);
        let wave = self.wave_size.max(1);
        if let (Some(blocks), Some(max_warps)) = (r.active_blocks_per_sm, r.max_warps_per_sm) {
            let warps = blocks * threads.div_ceil(wave);
            features.insert(
                "occupancy".into(),
                f64::from(warps) / f64::from(max_warps.max(1)),
            );
        }
        features
    }

    fn run_once(&self, kernel: &Kernel, launch: &Launch) -> Result<(), RuntimeError> {
        let mut builder = kernel.launch(*launch);
        for s in &self.slots {
            builder = match s {
                Slot::Scalar(v) => push_scalar(v, builder),
                Slot::Buffer { dev, .. } => dev.push(builder),
            };
        }
        builder.run(&self.stream)
    }

    /// One launch on fresh outputs, compared with the reference.
    fn verify(&mut self, kernel: &Kernel, launch: &Launch) -> Result<(), EvalError> {
        let started = Instant::now();
        let launch_err = |e: RuntimeError| EvalError::Launch(e.to_string());
        for s in &mut self.slots {
            if let Slot::Buffer {
                dev,
                reset: Some(initial),
                ..
            } = s
            {
                dev.copy_from(initial).map_err(launch_err)?;
            }
        }
        self.watchdog(|| {
            self.run_once(kernel, launch)
                .and_then(|()| self.stream.synchronize())
        })
        .map_err(launch_err)?;
        let mut report = String::new();
        for s in &self.slots {
            if let Slot::Buffer {
                dev,
                compared: Some(k),
                ..
            } = s
            {
                let (name, want) = &self.expected[*k];
                let got = &mut self.downloaded[*k];
                dev.download(got).map_err(launch_err)?;
                if let Some(m) = compare(name, got, want, &self.check.tolerance_of(name)) {
                    report.push_str(&m.to_string());
                }
            }
        }
        self.stats.verify_s += started.elapsed().as_secs_f64();
        if report.is_empty() {
            Ok(())
        } else {
            Err(EvalError::WrongResult(format!(
                "differs from the reference of check `{}` ({launch}):\n{report}",
                self.check.name
            )))
        }
    }

    /// A warm-up launch, then `iterations` launches each timed with device events (ms).
    fn time(&mut self, kernel: &Kernel, launch: &Launch) -> Result<Vec<f64>, EvalError> {
        let launch_err = |e: RuntimeError| EvalError::Launch(e.to_string());
        let run = || -> Result<(Vec<f64>, f64), RuntimeError> {
            let warm = Instant::now();
            self.run_once(kernel, launch)?;
            self.stream.synchronize()?;
            let mut kernel_s = warm.elapsed().as_secs_f64();
            let mut times = Vec::with_capacity(self.iterations as usize);
            for _ in 0..self.iterations {
                let start = self.stream.record()?;
                self.run_once(kernel, launch)?;
                let end = self.stream.record()?;
                let t = end.elapsed_since(&start)?.as_secs_f64();
                kernel_s += t;
                times.push(t * 1e3);
            }
            Ok((times, kernel_s))
        };
        let (times, kernel_s) = match &self.ahead {
            Some(ahead) => ahead.quiet(|| self.watchdog(run)),
            None => self.watchdog(run),
        }
        .map_err(launch_err)?;
        self.stats.kernel_s += kernel_s;
        // A timer too coarse for the kernel reads 0: count that as the timer's resolution.
        Ok(times.into_iter().map(|t| t.max(1e-6)).collect())
    }

    /// Run `f`; on a GPU, a watchdog ends the process if it outlives the time limit (a kernel
    /// that never finishes cannot be interrupted there: every measurement so far is in the
    /// cache, which a rerun resumes from). The cpu runtime enforces the limit itself.
    fn watchdog<T>(&self, f: impl FnOnce() -> T) -> T {
        if self.device.backend() == rocm_kernels::Backend::Cpu {
            return f();
        }
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = done.clone();
        let limit = self.time_limit;
        let kernel = self.check.kernel.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            while started.elapsed() < limit {
                std::thread::sleep(Duration::from_millis(50));
                if flag.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
            }
            eprintln!(
                "error: a launch of `{kernel}` ran longer than the time limit ({limit:?}); \
                 the GPU cannot interrupt it, so tuning stops here. Everything measured so far \
                 is in the cache: rerun to resume (a longer limit: --time-limit)."
            );
            std::process::exit(super::session::HANG_EXIT);
        });
        let out = f();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        out
    }

    fn define_list(&self, configs: &[Config]) -> Vec<Vec<(String, String)>> {
        configs.iter().map(|c| self.defines(c)).collect()
    }
}

impl Evaluator for KernelEvaluator<'_> {
    fn evaluate(&mut self, config: &Config) -> Result<Measurement, EvalError> {
        let launch = self.launch_of(config)?;
        let defines = self.defines(config);
        let (kernel, features) = self.kernel(&defines)?;
        let features = self.features(&kernel, &launch, features);
        self.verify(&kernel, &launch)?;
        let times = self.time(&kernel, &launch)?;
        self.stats.measured += 1;
        Ok(Measurement { times, features })
    }

    fn remeasure(&mut self, config: &Config) -> Result<Measurement, EvalError> {
        let launch = self.launch_of(config)?;
        let defines = self.defines(config);
        let (kernel, features) = self.kernel(&defines)?;
        let features = self.features(&kernel, &launch, features);
        let times = self.time(&kernel, &launch)?;
        Ok(Measurement { times, features })
    }

    fn static_features(&mut self, config: &Config) -> Option<Result<Features, EvalError>> {
        // Compile only (no launch): a configuration that does not compile is known to fail
        // without spending an evaluation, and the code says what it uses.
        if self.device.backend() == rocm_kernels::Backend::Cpu {
            // Nothing to read on cpu: compile, without loading, where there is something to
            // compile.
            let ahead = self.ahead.as_ref()?;
            let defines = self.defines(config);
            let started = Instant::now();
            let got = ahead.get(&defines);
            self.stats.compile_s += started.elapsed().as_secs_f64();
            return Some(
                got.map(|v| v.features.clone())
                    .map_err(|e| EvalError::Compile(e.to_string())),
            );
        }
        // On a GPU the compiled code (amd) and the driver (nvidia) say what it uses.
        let launch = match self.launch_of(config) {
            Ok(l) => l,
            Err(e) => return Some(Err(e)),
        };
        let defines = self.defines(config);
        Some(
            self.kernel(&defines)
                .map(|(kernel, features)| self.features(&kernel, &launch, features)),
        )
    }

    fn prefetch(&mut self, upcoming: &[Config]) {
        if let Some(ahead) = &self.ahead {
            ahead.prefetch(&self.define_list(upcoming));
        }
    }

    fn take_stats(&mut self) -> EvalStats {
        std::mem::take(&mut self.stats)
    }
}
