//! Unit tests of the harness's logic (generation, poisoning, comparison, shrinking, trials,
//! events) with kernels written in Rust behind the `Target` seam. The same behaviours are tested
//! end to end on the cpu backend with real HIP kernels in `tests/`.

use std::collections::HashMap;
use std::sync::Arc;

use rocm_kernels::library::KernelDecl;
use rocm_kernels::{Backend, KernelLibrary};

use crate::element::Element;
use crate::events::{read_events, TrialOutcome};
use crate::options::HarnessOptions;
use crate::target::{LaunchArg, Target, TargetSlot, TrialPlace};
use crate::{gen, Launch, Suite, Tolerance};

type RustKernel = fn(&Launch, &mut [LaunchArg<'_>]);

/// Kernels as Rust functions, looked up by name.
struct RustTarget(HashMap<&'static str, RustKernel>);

impl Target for RustTarget {
    fn launch(
        &self,
        kernel: &str,
        launch: &Launch,
        args: &mut [LaunchArg<'_>],
        _globals: &mut [crate::target::GlobalArg<'_>],
        _race: bool,
    ) -> Result<(), crate::Error> {
        let k = self
            .0
            .get(kernel)
            .ok_or_else(|| crate::Error::Target(format!("no kernel `{kernel}` in the module")))?;
        k(launch, args);
        Ok(())
    }
}

fn scalar<T: Element>(a: &LaunchArg<'_>) -> T {
    match a {
        LaunchArg::Scalar(s) => T::unwrap_scalar(s).expect("scalar type"),
        LaunchArg::Buffer { .. } | LaunchArg::Struct(_) => panic!("not a scalar"),
    }
}

fn buf<'a, T: Element>(a: &'a mut LaunchArg<'_>) -> &'a mut [T] {
    match a {
        LaunchArg::Buffer { data, .. } => T::slice_mut(data).expect("buffer type"),
        LaunchArg::Scalar(_) | LaunchArg::Struct(_) => panic!("not a buffer"),
    }
}

/// `y[i] = a * x[i] + y[i]` over (n, a, x, y), with a planted bug selected by name.
fn saxpy_like(args: &mut [LaunchArg<'_>], bug: &str) {
    let n = scalar::<i32>(&args[0]) as usize;
    let a = scalar::<f32>(&args[1]);
    let x = buf::<f32>(&mut args[2]).to_vec();
    let y = buf::<f32>(&mut args[3]);
    for i in 0..n {
        let xi = if bug == "wrong-index" && i == 7 {
            x[6]
        } else {
            x[i]
        };
        if bug == "unwritten" && i == n - 1 {
            continue;
        }
        let mut v = a * xi + y[i];
        if bug == "over-tolerance" {
            v += 2e-5 + 1e-5 * v.abs();
        }
        if bug == "nan" && i == 3 {
            v = f32::NAN;
        }
        y[i] = v;
    }
}

/// `y[i] = a * x[i]` over (n, a, x, y) as a half-precision kernel computes it: in f32, rounded
/// once to the type; then moved `ulps` values up (a planted bug).
fn scale_half<T: gen::Rounding>(args: &mut [LaunchArg<'_>], ulps: usize) {
    let n = scalar::<i32>(&args[0]) as usize;
    let a = scalar::<f32>(&args[1]);
    let x = buf::<T>(&mut args[2]).to_vec();
    let y = buf::<T>(&mut args[3]);
    for i in 0..n {
        let mut v = T::round_f32(a * x[i].to_f64() as f32);
        for _ in 0..ulps {
            v = v.step(true);
        }
        y[i] = v;
    }
}

fn target() -> Arc<dyn Target> {
    let mut m: HashMap<&'static str, RustKernel> = HashMap::new();
    m.insert("saxpy", |_, a| saxpy_like(a, ""));
    m.insert("saxpy_wrong_index", |_, a| saxpy_like(a, "wrong-index"));
    m.insert("saxpy_over_tolerance", |_, a| {
        saxpy_like(a, "over-tolerance")
    });
    m.insert("saxpy_nan", |_, a| saxpy_like(a, "nan"));
    m.insert("scale_bf16", |_, a| scale_half::<half::bf16>(a, 0));
    m.insert("scale_bf16_two_ulps", |_, a| scale_half::<half::bf16>(a, 2));
    m.insert("scale_f16", |_, a| scale_half::<half::f16>(a, 0));
    m.insert("copy_unwritten", |_, a| {
        let x = buf::<u32>(&mut a[0]).to_vec();
        let y = buf::<u32>(&mut a[1]);
        let n = y.len();
        y[..n - 1].copy_from_slice(&x[..n - 1]);
    });
    Arc::new(RustTarget(m))
}

fn saxpy_check(s: &mut Suite, kernel: &str) {
    s.check(kernel)
        .size("n", 1..=300)
        .scalar("n", gen::size::<i32>("n"))
        .scalar("a", gen::value(-4.0f32..4.0))
        .input("x", gen::vec("n", -1.0f32..1.0))
        .inout("y", gen::vec("n", -1.0f32..1.0))
        .launch_with(|i| Launch::cover(i.size("n"), 64))
        .reference(|i, o| {
            let (a, x) = (i.scalar::<f32>("a"), i.buf::<f32>("x"));
            for (y, x) in o.buf::<f32>("y").iter_mut().zip(x) {
                *y += a * x;
            }
        });
}

const fn decl(name: &'static str) -> KernelDecl {
    KernelDecl {
        name,
        source: "src/kernels.hip",
        params: &[],
        symbols: &[],
        cpu: None,
    }
}

static LIB: KernelLibrary = KernelLibrary {
    name: "kernels",
    code_objects: &[],
    kernels: &[
        decl("saxpy"),
        decl("saxpy_wrong_index"),
        decl("saxpy_over_tolerance"),
        decl("saxpy_nan"),
        decl("copy_unwritten"),
        decl("scale_bf16"),
        decl("scale_bf16_two_ulps"),
        decl("scale_f16"),
        decl("helper"),
        decl("orphan"),
    ],
    globals: &[],
};

/// Run a suite on the Rust target plus one unavailable backend; return the events by trial name.
fn run(
    register: impl FnOnce(&mut Suite),
    opts: HarnessOptions,
) -> HashMap<String, crate::events::TrialEvent> {
    let dir = std::env::temp_dir().join(format!(
        "rocm-test-unit-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let mut suite = Suite::new(&LIB);
    register(&mut suite);
    let slots = vec![
        TargetSlot {
            id: TrialPlace {
                backend: Backend::Cpu,
                target: "w64".into(),
            },
            target: Ok(target()),
        },
        TargetSlot {
            id: TrialPlace {
                backend: Backend::Amd,
                target: "gfx90a".into(),
            },
            target: Err(crate::Error::Target(
                "no AMD GPU with gfx90a on this machine".into(),
            )),
        },
    ];
    run_slots(suite, slots, opts, &dir)
}

/// Run `suite` on these places; return the events by trial name.
fn run_slots(
    suite: Suite,
    slots: Vec<TargetSlot>,
    opts: HarnessOptions,
    dir: &std::path::Path,
) -> HashMap<String, crate::events::TrialEvent> {
    let events = dir.join("events.jsonl");
    let opts = HarnessOptions {
        events: Some(events.clone()),
        ..opts
    };
    let _ = std::fs::remove_file(&events);
    // The trial bodies run here directly: through libtest-mimic they would print a nested
    // harness's report (with its "FAILED" lines) into this test's output.
    let sink = Arc::new(crate::events::EventSink::open(&events).unwrap());
    let slots: Vec<TargetSlot> = slots
        .into_iter()
        .filter(|s| opts.selects(s.id.backend))
        .collect();
    for t in suite.trial_bodies(&slots, &opts, Some(sink), "kernels", false) {
        let _ = (t.run)();
    }
    let text = std::fs::read_to_string(&events).unwrap();
    std::fs::remove_dir_all(dir).unwrap();
    read_events(&text)
        .unwrap()
        .into_iter()
        .map(|e| (e.name.clone(), e))
        .collect()
}

fn all_kernels(s: &mut Suite) {
    for k in [
        "saxpy",
        "saxpy_wrong_index",
        "saxpy_over_tolerance",
        "saxpy_nan",
    ] {
        saxpy_check(s, k);
    }
    s.check("copy_unwritten")
        .input("x", vec![1u32, 2, 3, 4])
        .output::<u32>("y", 4)
        .launch(Launch::new(1, 4))
        .reference(|i, o| o.buf::<u32>("y").copy_from_slice(i.buf::<u32>("x")));
    for k in ["scale_bf16", "scale_bf16_two_ulps"] {
        scale_half_check::<half::bf16>(s, k);
    }
    scale_half_check::<half::f16>(s, "scale_f16");
    s.untested("helper", "inlined into saxpy");
}

/// A check of `scale_half`: half-precision buffers drawn by `gen::rounded`, the reference in f64
/// rounded once, the type's default tolerance.
fn scale_half_check<T: gen::Rounding>(s: &mut Suite, kernel: &str) {
    s.check(kernel)
        .size("n", 1..=300)
        .scalar("n", gen::size::<i32>("n"))
        .scalar("a", gen::value(-4.0f32..4.0))
        .input("x", gen::vec("n", gen::rounded::<T>(-1.0..1.0)))
        .output::<T>("y", "n")
        .launch_with(|i| Launch::cover(i.size("n"), 64))
        .reference(|i, o| {
            let a = f64::from(i.scalar::<f32>("a"));
            for (y, x) in o.buf::<T>("y").iter_mut().zip(i.buf::<T>("x")) {
                // a * x is exact in f64 (24 + 11 significant bits at most).
                *y = T::round_f32((a * x.to_f64()) as f32);
            }
        });
}

#[test]
fn planted_bugs_fail_with_actionable_reports() {
    let ev = run(all_kernels, HarnessOptions::default());
    let msg = |n: &str| ev[n].message.clone().unwrap_or_default();

    assert_eq!(
        ev["saxpy::cpu/w64"].outcome,
        TrialOutcome::Passed,
        "{}",
        msg("saxpy::cpu/w64")
    );
    assert_eq!(ev["saxpy::cpu/w64"].cases, Some(crate::DEFAULT_CASES));

    let m = msg("saxpy_wrong_index::cpu/w64");
    assert_eq!(
        ev["saxpy_wrong_index::cpu/w64"].outcome,
        TrialOutcome::Failed
    );
    assert!(
        m.contains("1 of 8 elements differ"),
        "shrunk to the smallest n that shows the bug:\n{m}"
    );
    assert!(m.contains("worst: y[7]"), "{m}");
    assert!(m.contains("input (shrunk): size n = 8, n = 8i32"), "{m}");
    assert!(
        m.contains("reproduce with: cargo rocm test --seed=0x"),
        "{m}"
    );
    assert!(m.contains("-- 'saxpy_wrong_index::cpu/w64' --exact"), "{m}");

    let m = msg("saxpy_over_tolerance::cpu/w64");
    assert!(
        m.contains("tolerance: |got-want| <= 1e-5 + 1e-5*|want|"),
        "{m}"
    );
    assert!(m.contains("of 1 elements differ"), "{m}");

    let m = msg("saxpy_nan::cpu/w64");
    assert!(m.contains("worst: y[3]: got NaN"), "{m}");
    assert!(m.contains("rel err inf"), "{m}");

    let m = msg("copy_unwritten::cpu/w64");
    assert!(m.contains("worst: y[3]: got 2880154539, want 4"), "{m}");
    assert!(m.contains("never written: still the poison value"), "{m}");
    assert!(!m.contains("seed"), "explicit inputs have no seed:\n{m}");

    assert_eq!(ev["orphan::no-check"].outcome, TrialOutcome::Failed);
    assert!(msg("orphan::no-check").contains("kernel `orphan` (src/kernels.hip) has no check"));
    assert_eq!(ev["helper::untested"].outcome, TrialOutcome::Ignored);
    assert_eq!(msg("helper::untested"), "untested: inlined into saxpy");

    assert_eq!(ev["saxpy::amd/gfx90a"].outcome, TrialOutcome::Ignored);
    assert_eq!(
        msg("saxpy::amd/gfx90a"),
        "no AMD GPU with gfx90a on this machine"
    );
    assert_eq!(ev["saxpy::amd/gfx90a"].backend.as_deref(), Some("amd"));

    // Half precision: rounding once like the reference passes; two ulps off fails, naming the
    // type as the kernel knows it and its default rule.
    for ok in ["scale_bf16::cpu/w64", "scale_f16::cpu/w64"] {
        assert_eq!(ev[ok].outcome, TrialOutcome::Passed, "{}", msg(ok));
    }
    let m = msg("scale_bf16_two_ulps::cpu/w64");
    assert_eq!(
        ev["scale_bf16_two_ulps::cpu/w64"].outcome,
        TrialOutcome::Failed
    );
    assert!(
        m.contains("output `y` (bf16 = __hip_bfloat16, 1 elements)"),
        "shrunk to one element:\n{m}"
    );
    assert!(
        m.contains("tolerance: |got-want| <= 1e-5 + 7.8125e-3*|want|"),
        "{m}"
    );
    // 8 checks × 2 targets + no-check + untested.
    assert_eq!(ev.len(), 18, "{:?}", ev.keys());
}

#[test]
fn required_backend_that_cannot_run_fails_and_selection_drops_trials() {
    let opts = HarnessOptions {
        require: vec![Backend::Amd],
        ..HarnessOptions::default()
    };
    let ev = run(|s| saxpy_check(s, "saxpy"), opts);
    let e = &ev["saxpy::amd/gfx90a"];
    assert_eq!(e.outcome, TrialOutcome::Failed);
    assert!(e
        .message
        .as_ref()
        .unwrap()
        .contains("backend `amd` is required (--require-backend) but cannot run here: no AMD GPU"));

    let opts = HarnessOptions {
        backends: Some(vec![Backend::Cpu]),
        ..HarnessOptions::default()
    };
    let ev = run(|s| saxpy_check(s, "saxpy"), opts);
    assert!(ev.contains_key("saxpy::cpu/w64"));
    assert!(!ev.contains_key("saxpy::amd/gfx90a"));
}

#[test]
fn registration_mistakes_and_reference_panics_are_reported() {
    let ev = run(
        |s| {
            s.check("nonexistent")
                .output::<f32>("y", 4)
                .launch(Launch::new(1, 4))
                .reference(|_, _| {});
            s.check("saxpy")
                .named("saxpy_bad_reference")
                .scalar("n", 4i32)
                .scalar("a", 1.0f32)
                .input("x", vec![0.0f32; 4])
                .inout("y", vec![0.0f32; 4])
                .launch(Launch::new(1, 4))
                .reference(|i, _| {
                    i.buf::<f32>("missing");
                });
        },
        HarnessOptions::default(),
    );
    let m = ev["nonexistent::cpu/w64"].message.clone().unwrap();
    assert!(
        m.contains("no kernel named `nonexistent` in library `kernels` (it has: saxpy,"),
        "{m}"
    );
    let m = ev["saxpy_bad_reference::cpu/w64"].message.clone().unwrap();
    assert!(
        m.contains("the reference panicked: no input buffer named `missing`"),
        "{m}"
    );
}

#[test]
fn tolerance_overrides_apply_per_output() {
    let ev = run(
        |s| {
            saxpy_check(s, "saxpy_over_tolerance");
            s.check("saxpy_over_tolerance")
                .named("loose")
                .size("n", 1..=50)
                .scalar("n", gen::size::<i32>("n"))
                .scalar("a", 1.0f32)
                .input("x", gen::vec("n", -1.0f32..1.0))
                .inout("y", gen::vec("n", -1.0f32..1.0))
                .launch_with(|i| Launch::cover(i.size("n"), 64))
                .tolerance_for("y", Tolerance::close(1e-4, 1e-4))
                .reference(|i, o| {
                    let x = i.buf::<f32>("x");
                    for (y, x) in o.buf::<f32>("y").iter_mut().zip(x) {
                        *y += x;
                    }
                });
        },
        HarnessOptions {
            backends: Some(vec![Backend::Cpu]),
            cases: Some(4),
            ..HarnessOptions::default()
        },
    );
    assert_eq!(
        ev["saxpy_over_tolerance::cpu/w64"].outcome,
        TrialOutcome::Failed
    );
    assert_eq!(ev["loose::cpu/w64"].outcome, TrialOutcome::Passed);
    assert_eq!(ev["loose::cpu/w64"].cases, Some(4));
}

#[test]
fn same_seed_same_cases() {
    use proptest::strategy::{Strategy, ValueTree};
    let mut c = crate::check::Check::new("k");
    c.size("n", 1..=1000).input("x", gen::vec("n", 0u32..100));
    let strat = crate::run::case_strategy(&c);
    let draw = |seed| {
        let mut runner = proptest::test_runner::TestRunner::new_with_rng(
            Default::default(),
            crate::run::rng_from_seed(seed),
        );
        format!("{:?}", strat.new_tree(&mut runner).unwrap().current())
    };
    assert_eq!(draw(7), draw(7));
    assert_ne!(draw(7), draw(8));
}

/// A differential check on a GPU place compares with the cpu backend; with recording on, the
/// GPU's outputs are written to the snapshot folder, and a cpu place compares with them; a cpu
/// place without a snapshot fails saying how to record one.
#[test]
fn differential_checks_compare_with_the_cpu_and_with_snapshots() {
    let correct = target();
    let mut buggy_kernels: HashMap<&'static str, RustKernel> = HashMap::new();
    buggy_kernels.insert("saxpy", |_, a| saxpy_like(a, "wrong-index"));
    let buggy: Arc<dyn Target> = Arc::new(RustTarget(buggy_kernels));
    let root = std::env::temp_dir().join(format!("rocm-test-differential-{}", std::process::id()));
    let snapshots = root.join("snapshots");
    let place = |backend, target: &str| TrialPlace {
        backend,
        target: target.into(),
    };
    let run_with = |gpu: Option<Arc<dyn Target>>,
                    cpu: Option<Arc<dyn Target>>,
                    oracle_cpu: Arc<dyn Target>,
                    record: bool,
                    step: &str| {
        let mut suite = Suite::new(&LIB);
        suite.snapshots(&snapshots);
        suite.oracle_setup = crate::differential::OracleSetup {
            record: Some(record),
            cpu: Some(oracle_cpu),
        };
        suite
            .check("saxpy")
            .size("n", 8..=300)
            .scalar("n", gen::size::<i32>("n"))
            .scalar("a", gen::value(-4.0f32..4.0))
            .input("x", gen::vec("n", -1.0f32..1.0))
            .inout("y", gen::vec("n", -1.0f32..1.0))
            .launch_with(|i| Launch::cover(i.size("n"), 64))
            .cases(4)
            .differential();
        let mut slots = Vec::new();
        if let Some(t) = gpu {
            slots.push(TargetSlot {
                id: place(Backend::Nvidia, "sm_90"),
                target: Ok(t),
            });
        }
        if let Some(t) = cpu {
            slots.push(TargetSlot {
                id: place(Backend::Cpu, "w64"),
                target: Ok(t),
            });
        }
        run_slots(suite, slots, HarnessOptions::default(), &root.join(step))
    };
    let msg = |ev: &HashMap<String, crate::events::TrialEvent>, n: &str| {
        ev[n].message.clone().unwrap_or_default()
    };

    // No snapshot yet: the cpu trial says how to record one.
    let ev = run_with(None, Some(correct.clone()), correct.clone(), false, "a");
    let m = msg(&ev, "saxpy::cpu/w64");
    assert_eq!(ev["saxpy::cpu/w64"].outcome, TrialOutcome::Failed, "{m}");
    assert!(
        m.contains("no outputs are recorded for these inputs"),
        "{m}"
    );
    assert!(m.contains("ROCM_TEST_RECORD=1"), "{m}");

    // A wrong GPU kernel differs from the cpu backend; a right one passes and records.
    let ev = run_with(Some(buggy.clone()), None, correct.clone(), false, "b");
    let m = msg(&ev, "saxpy::nvidia/sm_90");
    assert_eq!(
        ev["saxpy::nvidia/sm_90"].outcome,
        TrialOutcome::Failed,
        "{m}"
    );
    assert!(
        m.contains("differs from the cpu backend (the differential reference)"),
        "{m}"
    );
    assert!(m.contains("worst: y[7]"), "{m}");
    let ev = run_with(Some(correct.clone()), None, correct.clone(), true, "c");
    assert_eq!(
        ev["saxpy::nvidia/sm_90"].outcome,
        TrialOutcome::Passed,
        "{}",
        msg(&ev, "saxpy::nvidia/sm_90")
    );
    let files: Vec<_> = std::fs::read_dir(&snapshots).unwrap().collect();
    assert_eq!(files.len(), 1, "one file per check");

    // The cpu place compares with what the GPU recorded: right passes, wrong fails.
    let ev = run_with(None, Some(correct.clone()), correct.clone(), false, "d");
    assert_eq!(
        ev["saxpy::cpu/w64"].outcome,
        TrialOutcome::Passed,
        "{}",
        msg(&ev, "saxpy::cpu/w64")
    );
    assert_eq!(ev["saxpy::cpu/w64"].cases, Some(4));
    let ev = run_with(None, Some(buggy.clone()), correct.clone(), true, "e");
    let m = msg(&ev, "saxpy::cpu/w64");
    assert_eq!(ev["saxpy::cpu/w64"].outcome, TrialOutcome::Failed, "{m}");
    assert!(
        m.contains("differs from the outputs recorded on nvidia/sm_90"),
        "recording on the cpu keeps the GPU's outputs:\n{m}"
    );
    std::fs::remove_dir_all(&root).unwrap();
}
