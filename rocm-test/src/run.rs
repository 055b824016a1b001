//! Running one check on one target: generate cases, poison outputs, launch, run the reference,
//! compare, and on failure shrink the input with proptest and say how to reproduce it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use proptest::strategy::{Just, SBoxedStrategy, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

use crate::check::{ArgKind, ArgSpec, Case, CaseValue, Check, Inputs, Outputs, Role, StructSrc};
use crate::compare::compare;
use crate::differential::Oracle;
use crate::element::HostBuf;
use crate::gen::{BufSrc, Len, LenRef, ScalarSrc};
use crate::options::RaceCheck;
use crate::target::{Bandwidth, GlobalArg, LaunchArg, Target, TrialPlace};
use crate::Error;

/// Knobs of one run, from the command line or the environment (see [`crate::HarnessOptions`]).
#[derive(Debug, Clone)]
pub(crate) struct RunConfig {
    /// Seed of the case generator; `None`: derived from the check's name (stable across runs).
    pub seed: Option<u64>,
    /// Generated cases per trial, unless the check says otherwise.
    pub cases: u32,
    /// Upper bound on shrinking steps (each one is a launch).
    pub max_shrink_iters: u32,
    /// Which launches run under the cpu race detector (targets that have none ignore it).
    pub race: RaceCheck,
    /// Flags for the "reproduce with" line, so it runs as this run did (race check, cpu execution
    /// mode, cases: [`crate::HarnessOptions::reproduce_flags`]).
    pub reproduce_flags: String,
    /// Where differential checks get their expected outputs (set when the suite has one).
    pub oracle: Option<Arc<Oracle>>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            seed: None,
            cases: DEFAULT_CASES,
            max_shrink_iters: 512,
            race: RaceCheck::default(),
            reproduce_flags: String::new(),
            oracle: None,
        }
    }
}

/// Generated cases per check and target when neither the check nor `ROCM_TEST_CASES` says.
pub const DEFAULT_CASES: u32 = 32;

/// What a passing run did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunOk {
    pub cases: u32,
    pub seed: Option<u64>,
    /// The last case's bandwidth, for checks that ask for it.
    pub bandwidth: Option<Bandwidth>,
}

/// Run `check` on `target`. The error is the full report for a person ([`Error::Failed`]).
pub(crate) fn run_check(
    check: &Check,
    target: &dyn Target,
    place: &TrialPlace,
    cfg: &RunConfig,
    trial: &str,
) -> Result<RunOk, Error> {
    let strategy = case_strategy(check);
    if check.is_fixed() {
        // Nothing to generate: one case, no seed to report.
        let mut runner = TestRunner::deterministic();
        let case = strategy
            .new_tree(&mut runner)
            .map_err(|e| Error::Failed(format!("could not build the inputs: {e}")))?
            .current();
        let race = cfg.race.covers(0, false);
        let bandwidth = run_case(check, target, place, &case, race, cfg.oracle.as_deref())
            .map_err(|e| {
                Error::Failed(format!(
                "{e}  input: {case:?}\n  reproduce with: cargo rocm test{} -- '{trial}' --exact\n",
                cfg.reproduce_flags
            ))
            })?;
        return Ok(RunOk {
            cases: 1,
            seed: None,
            bandwidth,
        });
    }
    let seed = cfg.seed.unwrap_or_else(|| fnv1a(check.name.as_bytes()));
    let cases = check.cases.unwrap_or(cfg.cases).max(1);
    // A differential check on the cpu compares with recorded outputs, which exist only for the
    // generated cases: a shrunk case would have none, so its first failure is the report.
    let snapshot_only = check.differential && place.backend == rocm_kernels::Backend::Cpu;
    let config = Config {
        cases,
        max_shrink_iters: if snapshot_only {
            0
        } else {
            cfg.max_shrink_iters
        },
        failure_persistence: None,
        verbose: 0,
        ..Config::default()
    };
    let measured = std::sync::Mutex::new(None);
    // Launches so far, and whether one failed: the first cases run race-checked, and once a case
    // failed every launch does, so shrinking keeps the check that found the failure.
    let launches = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let test = |case: Case| {
        let n = launches.fetch_add(1, Ordering::Relaxed);
        let race = cfg.race.covers(n, failed.load(Ordering::Relaxed));
        let bandwidth = run_case(check, target, place, &case, race, cfg.oracle.as_deref())
            .map_err(|e| {
                failed.store(true, Ordering::Relaxed);
                TestCaseError::fail(e.to_string())
            })?;
        if bandwidth.is_some() {
            *measured.lock().unwrap_or_else(|e| e.into_inner()) = bandwidth;
        }
        Ok(())
    };
    // Phase 1 shrinks only the sizes (values are drawn afresh at each size and not shrunk):
    // shrinking thousands of elements one by one first would use up the shrink budget before
    // the size ever got small.
    let sizes_first = case_strategy_with(check, sizes_strategy(check), false);
    let mut runner = TestRunner::new_with_rng(config.clone(), rng_from_seed(seed));
    let (reason, case) = match runner.run(&sizes_first, test) {
        Ok(()) => {
            return Ok(RunOk {
                cases,
                seed: Some(seed),
                bandwidth: measured.into_inner().unwrap_or_else(|e| e.into_inner()),
            })
        }
        Err(TestError::Fail(reason, case)) => (reason, case),
        Err(TestError::Abort(reason)) => {
            return Err(Error::Failed(format!(
                "gave up generating inputs: {}\n  seed: {seed:#x}\n",
                reason.message()
            )))
        }
    };
    if snapshot_only {
        return Err(Error::Failed(format!(
            "{}  input: {case:?}\n  seed: {seed:#x}; reproduce with: cargo rocm test --seed={seed:#x}{} -- '{trial}' --exact\n",
            reason.message(),
            cfg.reproduce_flags
        )));
    }
    // Phase 2: at the smallest failing sizes, find a failing case again and shrink its values.
    let sizes: Vec<usize> = case.sizes.iter().map(|(_, n)| *n).collect();
    let at_sizes = case_strategy_with(check, Just(sizes).sboxed(), true);
    let mut runner = TestRunner::new_with_rng(config, rng_from_seed(seed ^ PHASE_2));
    let (reason, case) = match runner.run(&at_sizes, test) {
        Err(TestError::Fail(reason2, case2)) => (reason2, case2),
        _ => (reason, case),
    };
    Err(Error::Failed(format!(
        "{}  input (shrunk): {case:?}\n  seed: {seed:#x}; reproduce with: cargo rocm test --seed={seed:#x}{} -- '{trial}' --exact\n",
        reason.message(),
        cfg.reproduce_flags
    )))
}

/// Mixed into the seed of the second shrinking phase.
const PHASE_2: u64 = 0x5eed_0000_0000_0002;

/// Run one case; `Err` is the report of what differed (or what went wrong). A passing case of a
/// check that measures bandwidth returns the measurement.
pub(crate) fn run_case(
    check: &Check,
    target: &dyn Target,
    place: &TrialPlace,
    case: &Case,
    race: bool,
    oracle: Option<&Oracle>,
) -> Result<Option<Bandwidth>, Error> {
    match catch_unwind(AssertUnwindSafe(|| {
        run_case_inner(check, target, place, case, race, oracle)
    })) {
        Ok(r) => r,
        Err(payload) => Err(Error::Panicked(format!(
            "panicked: {}\n",
            panic_message(&*payload)
        ))),
    }
}

fn run_case_inner(
    check: &Check,
    target: &dyn Target,
    place: &TrialPlace,
    case: &Case,
    race: bool,
    oracle: Option<&Oracle>,
) -> Result<Option<Bandwidth>, Error> {
    let inputs = Inputs {
        case,
        target: target.wave_size().map(|w| (place, w)),
    };
    let launch_fn = check
        .launch
        .as_ref()
        .ok_or_else(|| Error::Declaration("the check has no launch configuration".into()))?;
    let launch = launch_fn(&inputs);

    // Device-side copies: inputs as generated, outputs poisoned.
    let mut device_bufs: Vec<HostBuf> = Vec::new();
    let mut out_names: Vec<String> = Vec::new();
    let mut expected: Vec<HostBuf> = Vec::new();
    let mut out_index: Vec<usize> = Vec::new();
    for (spec, (_, value)) in check.args.iter().zip(&case.values) {
        match (&spec.kind, value) {
            (ArgKind::Buffer { role, .. }, Some(CaseValue::Buffer(b))) => {
                if *role == Role::InOut {
                    out_names.push(spec.name.clone());
                    expected.push(b.clone());
                    out_index.push(device_bufs.len());
                }
                device_bufs.push(b.clone());
            }
            (ArgKind::Output { ty, len, zeroed }, _) => {
                let n = output_len(len, &inputs);
                out_names.push(spec.name.clone());
                expected.push(HostBuf::zeros(*ty, n));
                out_index.push(device_bufs.len());
                device_bufs.push(if *zeroed {
                    HostBuf::zeros(*ty, n)
                } else {
                    HostBuf::poisoned(*ty, n)
                });
            }
            _ => {}
        }
    }
    // Variables set before the launch (and read back, for in-out ones).
    let mut global_bufs: Vec<HostBuf> = Vec::new();
    let mut global_out: Vec<(usize, usize)> = Vec::new(); // (global index, expected index)
    for (k, (spec, (_, value))) in check
        .globals
        .iter()
        .zip(&case.values[check.args.len().min(case.values.len())..])
        .enumerate()
    {
        if let (ArgKind::Buffer { role, .. }, Some(CaseValue::Buffer(b))) = (&spec.kind, value) {
            if *role == Role::InOut {
                out_names.push(spec.name.clone());
                global_out.push((k, expected.len()));
                expected.push(b.clone());
            }
            global_bufs.push(b.clone());
        }
    }
    // A differential check's reference launch starts from the same buffers.
    let before = check
        .differential
        .then(|| (device_bufs.clone(), global_bufs.clone()));
    {
        let mut globals = global_args(check, &mut global_bufs);
        let mut args = launch_args(check, case, &mut device_bufs);
        crate::isolate::note(|| {
            format!(
                "launching `{}` ({launch}{}) with sizes {:?}",
                check.kernel,
                if race { ", race-checked" } else { "" },
                case.sizes
            )
        });
        let mut launch_it = || {
            target
                .launch(&check.kernel, &launch, &mut args, &mut globals, race)
                .map_err(|e| {
                    Error::Failed(format!(
                        "kernel `{}` ({launch}) failed: {e}\n",
                        check.kernel
                    ))
                })
        };
        match &check.printf {
            None => launch_it()?,
            Some(expected_lines) => {
                let (result, printed) = crate::capture::stdout_of(&mut launch_it).map_err(|e| {
                    Error::Failed(format!(
                        "could not capture the kernel's printf output: {e}\n"
                    ))
                })?;
                result?;
                let expected_lines = catch_unwind(AssertUnwindSafe(|| expected_lines(&inputs)))
                    .map_err(|p| {
                        Error::Panicked(format!(
                            "the printf expectation panicked: {}\n",
                            panic_message(&*p)
                        ))
                    })?;
                if let Some(report) = crate::capture::compare_lines(&printed, expected_lines) {
                    return Err(Error::Failed(format!(
                        "kernel `{}` ({launch}) printed other lines than expected:\n{report}",
                        check.kernel
                    )));
                }
            }
        }
    }

    if let Some(reference) = &check.reference {
        let mut outputs = Outputs {
            names: &out_names,
            bufs: &mut expected,
        };
        catch_unwind(AssertUnwindSafe(|| reference(&inputs, &mut outputs))).map_err(|p| {
            Error::Panicked(format!("the reference panicked: {}\n", panic_message(&*p)))
        })?;
    }

    let got_of = |k: usize| output(k, &global_out, &out_index, &global_bufs, &device_bufs);
    let mut reference_name = "the reference".to_owned();
    if let Some((mut ref_bufs, mut ref_globals)) = before {
        let oracle = oracle.ok_or_else(|| {
            Error::Declaration("a differential check needs the suite's oracle".into())
        })?;
        let launch_text = launch.to_string();
        let key = differential_key(check, case, &launch_text);
        let got: Vec<(&String, &HostBuf)> = (0..out_names.len())
            .map(|k| (&out_names[k], got_of(k)))
            .collect();
        oracle.record(&check.name, &check.kernel, &key, place, &got)?;
        if place.backend != rocm_kernels::Backend::Cpu {
            // The cpu backend on the same buffers, with the GPU's wave size.
            let cpu = oracle.cpu(target.wave_size().unwrap_or(32));
            let mut globals = global_args(check, &mut ref_globals);
            let mut args = launch_args(check, case, &mut ref_bufs);
            cpu.launch(&check.kernel, &launch, &mut args, &mut globals, false)
                .map_err(|e| {
                    Error::Failed(format!(
                        "kernel `{}` ({launch}) failed on the cpu backend, this differential \
                         check's reference: {e}\n",
                        check.kernel
                    ))
                })?;
            for (k, e) in expected.iter_mut().enumerate() {
                *e = output(k, &global_out, &out_index, &ref_globals, &ref_bufs).clone();
            }
            reference_name = "the cpu backend (the differential reference)".into();
        } else {
            match oracle.load(&check.name, &key, &out_names, &mut expected)? {
                Some(on) => reference_name = format!("the outputs recorded on {on}"),
                None if oracle.recording() => {
                    for (k, e) in expected.iter_mut().enumerate() {
                        *e = got_of(k).clone();
                    }
                    reference_name = "its own outputs (recorded now)".into();
                }
                None => {
                    return Err(Error::Failed(format!(
                        "kernel `{}` ({launch}): no outputs are recorded for these inputs (case \
                         {key}) in {}: this differential check compares the cpu backend with \
                         a GPU's outputs; record them on a GPU with {}=1\n",
                        check.kernel,
                        oracle.snapshot_dir().map_or(
                            "(no snapshot folder: call `Suite::snapshots`)".into(),
                            |d| d.display().to_string()
                        ),
                        crate::differential::RECORD_VAR,
                    )))
                }
            }
        }
    }

    let mut report = String::new();
    for (k, name) in out_names.iter().enumerate() {
        let mut tol = check.tolerance_of(name);
        if check.differential {
            // Both sides are kernels: a NaN where the other backend has NaN (an element neither
            // wrote still holds the poison value on both) is agreement.
            tol = tol.allow_nan();
        }
        if let Some(m) = compare(name, got_of(k), &expected[k], &tol) {
            report.push_str(&m.to_string());
        }
    }
    if !report.is_empty() {
        return Err(Error::Failed(format!(
            "kernel `{}` ({launch}) differs from {reference_name}:\n{report}",
            check.kernel
        )));
    }
    let Some(bytes_fn) = &check.bandwidth else {
        return Ok(None);
    };
    let bytes = bytes_fn(&inputs);
    let mut args = launch_args(check, case, &mut device_bufs);
    target
        .time(&check.kernel, &launch, &mut args, bytes, BANDWIDTH_REPS)
        .map(Some)
        .map_err(|e| {
            Error::Failed(format!(
                "timing kernel `{}` ({launch}) failed: {e}\n",
                check.kernel
            ))
        })
}

/// The snapshot key of a differential check's case: its launch and every value it is given.
fn differential_key(check: &Check, case: &Case, launch: &str) -> String {
    let texts: Vec<Vec<u8>> = case
        .values
        .iter()
        .map(|(_, v)| match v {
            Some(CaseValue::Buffer(b)) => b.as_bytes().to_vec(),
            Some(CaseValue::Scalar(s)) => s.to_bytes(),
            // A struct's padding bytes are not its value: its Debug text is.
            Some(CaseValue::Struct(r)) => format!("{r:?}").into_bytes(),
            None => Vec::new(),
        })
        .collect();
    let values: Vec<&[u8]> = texts.iter().map(Vec::as_slice).collect();
    crate::differential::case_key(&check.kernel, launch, &values)
}

/// Timed runs of a bandwidth measurement (the median is reported).
const BANDWIDTH_REPS: u32 = 20;

/// Output `k` of a launch: a variable read back (`global_out`: global index, output index) or a
/// kernel argument (`out_index`: output index -> device buffer).
fn output<'a>(
    k: usize,
    global_out: &[(usize, usize)],
    out_index: &[usize],
    globals: &'a [HostBuf],
    device: &'a [HostBuf],
) -> &'a HostBuf {
    match global_out.iter().find(|(_, e)| *e == k) {
        Some((g, _)) => &globals[*g],
        None => &device[out_index[k]],
    }
}

/// The variables set before a launch, pointing into `bufs` (in-out ones read back after it).
fn global_args<'a>(check: &'a Check, bufs: &'a mut [HostBuf]) -> Vec<GlobalArg<'a>> {
    check
        .globals
        .iter()
        .zip(bufs.iter_mut())
        .map(|(spec, data)| GlobalArg {
            name: &spec.name,
            read_back: matches!(
                spec.kind,
                ArgKind::Buffer {
                    role: Role::InOut,
                    ..
                }
            ),
            data,
        })
        .collect()
}

/// The launch arguments of a case, in parameter order, pointing into `device_bufs`.
fn launch_args<'a>(
    check: &Check,
    case: &Case,
    device_bufs: &'a mut [HostBuf],
) -> Vec<LaunchArg<'a>> {
    let mut bufs = device_bufs.iter_mut();
    let mut args: Vec<LaunchArg<'a>> = Vec::with_capacity(check.args.len());
    for (spec, (_, value)) in check.args.iter().zip(&case.values) {
        match (&spec.kind, value) {
            (ArgKind::Scalar(_), Some(CaseValue::Scalar(s))) => args.push(LaunchArg::Scalar(*s)),
            (ArgKind::Struct(_), Some(CaseValue::Struct(v))) => {
                args.push(LaunchArg::Struct(v.clone()))
            }
            (ArgKind::Buffer { role, .. }, _) => args.push(LaunchArg::Buffer {
                data: bufs.next().expect("one device buffer per buffer argument"),
                read_back: *role == Role::InOut,
            }),
            (ArgKind::Output { .. }, _) => args.push(LaunchArg::Buffer {
                data: bufs.next().expect("one device buffer per output"),
                read_back: true,
            }),
            (ArgKind::Scalar(_) | ArgKind::Struct(_), _) => {
                unreachable!("by-value arguments always have a value")
            }
        }
    }
    args
}

pub(crate) fn output_len(len: &Len, inputs: &Inputs<'_>) -> usize {
    match len {
        Len::Size(name) => inputs.size(name),
        Len::Fixed(n) => *n,
        Len::Computed(f) => f(inputs),
    }
}

/// The proptest strategy for a check's cases: sizes first, then each argument given the sizes.
pub(crate) fn case_strategy(check: &Check) -> SBoxedStrategy<Case> {
    case_strategy_with(check, sizes_strategy(check), true)
}

fn sizes_strategy(check: &Check) -> SBoxedStrategy<Vec<usize>> {
    let size_strategies: Vec<SBoxedStrategy<usize>> =
        check.sizes.iter().map(|(_, s)| s.strategy()).collect();
    size_strategies.sboxed()
}

/// Cases with these sizes; argument values shrink only when `shrink_values`.
pub(crate) fn case_strategy_with(
    check: &Check,
    sizes: SBoxedStrategy<Vec<usize>>,
    shrink_values: bool,
) -> SBoxedStrategy<Case> {
    let names: Arc<Vec<String>> = Arc::new(check.sizes.iter().map(|(n, _)| n.clone()).collect());
    // The kernel's arguments, then the variables set before launches: the case's values in that
    // order.
    let args: Arc<Vec<ArgSpec>> =
        Arc::new(check.args.iter().chain(&check.globals).cloned().collect());
    sizes
        .prop_flat_map(move |sizes| {
            let sizes: Vec<(String, usize)> = names.iter().cloned().zip(sizes).collect();
            let values: Vec<SBoxedStrategy<(String, Option<CaseValue>)>> = args
                .iter()
                .map(|a| {
                    let s = arg_strategy(a, &sizes, shrink_values);
                    if shrink_values {
                        s
                    } else {
                        s.no_shrink().sboxed()
                    }
                })
                .collect();
            (Just(sizes), values)
        })
        .prop_map(|(sizes, values)| Case { sizes, values })
        .sboxed()
}

fn arg_strategy(
    arg: &ArgSpec,
    sizes: &[(String, usize)],
    shrink: bool,
) -> SBoxedStrategy<(String, Option<CaseValue>)> {
    let name = arg.name.clone();
    let size_of = |s: &str| sizes.iter().find(|(n, _)| n == s).map_or(0, |(_, v)| *v);
    // What computed lengths and scalars see: the sizes, nothing else yet.
    let sizes_case = Case {
        sizes: sizes.to_vec(),
        values: Vec::new(),
    };
    let sizes_only = Inputs {
        case: &sizes_case,
        target: None,
    };
    let value: SBoxedStrategy<Option<CaseValue>> = match &arg.kind {
        ArgKind::Scalar(ScalarSrc::Fixed(v)) => Just(Some(CaseValue::Scalar(*v))).sboxed(),
        ArgKind::Scalar(ScalarSrc::Gen(s)) => {
            s.clone().prop_map(|v| Some(CaseValue::Scalar(v))).sboxed()
        }
        ArgKind::Scalar(ScalarSrc::Size {
            name: size,
            convert,
        }) => {
            let n = size_of(size);
            let v = convert(n).unwrap_or_else(|| {
                panic!(
                    "size `{size}` = {n} does not fit the type of argument `{}`",
                    arg.name
                )
            });
            Just(Some(CaseValue::Scalar(v))).sboxed()
        }
        ArgKind::Scalar(ScalarSrc::Computed(f)) => {
            Just(Some(CaseValue::Scalar(f(&sizes_only)))).sboxed()
        }
        ArgKind::Struct(StructSrc::Fixed(v)) => Just(Some(CaseValue::Struct(v.clone()))).sboxed(),
        ArgKind::Struct(StructSrc::FromSizes(f)) => {
            Just(Some(CaseValue::Struct(f(&sizes_only)))).sboxed()
        }
        ArgKind::Buffer {
            src: BufSrc::Values(b),
            ..
        } => Just(Some(CaseValue::Buffer(b.clone()))).sboxed(),
        ArgKind::Buffer {
            src: BufSrc::Gen { len, make, .. },
            ..
        } => {
            let n = match len {
                LenRef::Size(s) => size_of(s),
                LenRef::Product(a, b) => size_of(a) * size_of(b),
                LenRef::Fixed(n) => *n,
                LenRef::Computed(f) => f(&sizes_only),
            };
            make(n, shrink)
                .prop_map(|b| Some(CaseValue::Buffer(b)))
                .sboxed()
        }
        ArgKind::Output { .. } => Just(None).sboxed(),
    };
    value.prop_map(move |v| (name.clone(), v)).sboxed()
}

/// A ChaCha generator seeded from `seed` (expanded with splitmix64 to the 32 bytes it needs).
pub(crate) fn rng_from_seed(seed: u64) -> TestRng {
    let mut state = seed;
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(8) {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// A stable 64-bit hash (FNV-1a): the default seed of a check is a function of its name only.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_owned()
    }
}
