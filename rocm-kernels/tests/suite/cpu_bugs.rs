//! Planted bugs (tests/corpus/kernels/bugs.hip): the cpu backend must catch each one, naming the
//! kernel, block and thread, or (for bugs only results show) produce the wrong result a GPU could
//! hide.

use std::time::Duration;

use rocm_kernels::runtime::{
    CpuExec, CpuOptions, Device, LaunchConfig, Module, RaceMethod, RuntimeError,
};
use rocm_kernels_corpus::{BUGS, FEATURES};

fn module_with(options: CpuOptions) -> Module {
    Device::cpu(options)
        .load(BUGS)
        .expect("load the bug corpus")
}

fn module(wave_size: u32) -> Module {
    module_with(CpuOptions {
        wave_size,
        threads: 2,
        time_limit: Some(Duration::from_secs(20)),
        ..CpuOptions::default()
    })
}

/// The device still runs kernels correctly after a fault.
fn still_works(device: &Device) {
    let m = device.load(FEATURES).unwrap();
    let x = device.upload(&[1.0f32; 300]).unwrap();
    let mut y = device.upload(&[1.0f32; 300]).unwrap();
    m.kernel("saxpy")
        .unwrap()
        .launch(LaunchConfig::cover(300, 128))
        .arg(&3.0f32)
        .arg(&x)
        .arg(&mut y)
        .arg(&300i32)
        .run(&device.stream().unwrap())
        .unwrap();
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 4.0));
}

#[testkit::test]
fn missing_barrier_gives_wrong_results() {
    for wave in [32, 64] {
        let m = module(wave);
        let d = m.device();
        let input: Vec<i32> = (1..=512).collect();
        let inb = d.upload(&input).unwrap();
        let mut out = d.alloc::<i32>(512).unwrap();
        m.kernel("missing_barrier")
            .unwrap()
            .launch(LaunchConfig::new(2, 256))
            .arg(&inb)
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap();
        let out = out.to_vec().unwrap();
        let intended = |g: usize| input[(g / 256) * 256 + (g % 256 + 1) % 256];
        let wrong = (0..512).filter(|&g| out[g] != intended(g)).count();
        // Threads of a block run one after another, so every read of a later thread's slot sees
        // a value that was not written yet.
        assert!(wrong >= 500, "only {wrong} of 512 results are wrong");
    }
}

#[testkit::test]
fn out_of_bounds_write_names_block_and_thread() {
    let m = module(64);
    let d = m.device();
    let n = 1000usize;
    let mut out = d.alloc::<f32>(n).unwrap();
    let err = m
        .kernel("oob_write")
        .unwrap()
        .launch(LaunchConfig::cover(n + 24, 256))
        .arg(&mut out)
        .arg(&(n as i32))
        .run(&d.stream().unwrap())
        .unwrap_err();
    match &err {
        RuntimeError::OutOfBounds {
            site,
            access,
            detail,
            ..
        } => {
            assert_eq!(site.kernel, "oob_write");
            assert_eq!(site.block, [3, 0, 0]);
            assert_eq!(site.thread, [232, 0, 0]);
            assert_eq!(*access, "write");
            assert!(
                detail.contains("byte offset 4000 of the 4000-byte buffer"),
                "{detail}"
            );
        }
        other => panic!("expected OutOfBounds, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("kernel `oob_write`, block (3,0,0), thread (232,0,0): out-of-bounds write"),
        "{text}"
    );
    still_works(d);
}

#[testkit::test]
fn out_of_bounds_read_is_a_read() {
    let m = module(32);
    let d = m.device();
    let input = d.upload(&[1.0f32; 64]).unwrap();
    let mut out = d.alloc::<f32>(64).unwrap();
    let err = m
        .kernel("oob_read")
        .unwrap()
        .launch(LaunchConfig::new(1, 64))
        .arg(&input)
        .arg(&mut out)
        .arg(&64i32)
        .run(&d.stream().unwrap())
        .unwrap_err();
    match err {
        RuntimeError::OutOfBounds { site, access, .. } => {
            assert_eq!(access, "read");
            assert_eq!(site.thread, [63, 0, 0]);
        }
        other => panic!("expected OutOfBounds, got {other:?}"),
    }
}

#[testkit::test]
fn misaligned_vector_access_is_explained() {
    let m = module(32);
    let d = m.device();
    // 256 bytes: in checked mode the buffer starts 16-byte aligned, so `in + 1` is not.
    let input = d.upload(&[1.0f32; 64]).unwrap();
    let mut out = d.alloc::<rocm_kernels::vector::Float4>(8).unwrap();
    let err = m
        .kernel("misaligned_float4")
        .unwrap()
        .launch(LaunchConfig::new(1, 8))
        .arg(&input)
        .arg(&mut out)
        .run(&d.stream().unwrap())
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("kernel `misaligned_float4`")
            && text.contains("general-protection fault")
            && text.contains("aligned vector load or store"),
        "{text}"
    );
    still_works(d);
}

#[testkit::test]
fn partial_barrier_is_reported_not_hung() {
    for (kernel, first_waiting, first_returned) in [
        ("partial_barrier", [0, 0, 0], "(32,0,0)"),
        ("partial_barrier_first", [1, 0, 0], "(0,0,0)"),
    ] {
        // Region form checks a barrier in the runtime across waves (Regions) or in the kernel's
        // own call for the whole block (Blocks); both word it alike.
        for (wave, exec) in [32, 64]
            .into_iter()
            .flat_map(|w| [(w, CpuExec::Regions), (w, CpuExec::Blocks)])
        {
            let m = module_with(CpuOptions {
                wave_size: wave,
                threads: 2,
                exec,
                time_limit: Some(Duration::from_secs(20)),
                ..CpuOptions::default()
            });
            let d = m.device();
            let mut data = d.alloc::<f32>(128).unwrap();
            let err = m
                .kernel(kernel)
                .unwrap()
                .launch(LaunchConfig::new(2, 128))
                .arg(&mut data)
                .run(&d.stream().unwrap())
                .unwrap_err();
            match &err {
                RuntimeError::PartialBarrier { site, message } => {
                    assert_eq!(site.kernel, kernel);
                    assert_eq!(site.block, [0, 0, 0]);
                    assert_eq!(site.thread, first_waiting, "{message}");
                    assert!(
                        message.contains(&format!("the first: thread {first_returned}")),
                        "{message}"
                    );
                }
                other => panic!("expected PartialBarrier, got {other:?}"),
            }
            assert!(err.to_string().contains("partial barrier"), "{err}");
            still_works(d);
        }
    }
}

#[testkit::test]
fn divergent_barrier_is_reported_in_region_form() {
    let m = module(64);
    let d = m.device();
    let mut data = d.alloc::<f32>(128).unwrap();
    let err = m
        .kernel("divergent_barrier")
        .unwrap()
        .launch(LaunchConfig::new(1, 128))
        .arg(&mut data)
        .run(&d.stream().unwrap())
        .unwrap_err();
    match &err {
        RuntimeError::PartialBarrier { site, message } => {
            assert_eq!(site.kernel, "divergent_barrier");
            assert_eq!(site.thread, [0, 0, 0], "{message}");
            assert!(
                message.contains("32 thread(s) wait at __syncthreads() but 96 thread(s)")
                    && message.contains("32 skip it in divergent control flow")
                    && message.contains("the first: thread (32,0,0)"),
                "{message}"
            );
        }
        other => panic!("expected PartialBarrier, got {other:?}"),
    }
    still_works(d);
}

#[testkit::test]
fn reduction_assuming_wave64_fails_only_at_wave32() {
    let threads = 256usize;
    let input: Vec<f32> = (0..threads * 4).map(|i| (i % 5) as f32).collect();
    let want: Vec<f32> = input.chunks(threads).map(|c| c.iter().sum()).collect();
    for wave in [64, 32] {
        let m = module(wave);
        let d = m.device();
        let inb = d.upload(&input).unwrap();
        let mut out = d.alloc::<f32>(4).unwrap();
        m.kernel("reduce_assumes_wave64")
            .unwrap()
            .launch(LaunchConfig::new(4, threads as u32))
            .arg(&inb)
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap();
        let got = out.to_vec().unwrap();
        if wave == 64 {
            assert_eq!(got, want, "correct where its assumption holds");
        } else {
            assert_ne!(got, want, "wave 32 must expose the wave-64 assumption");
        }
    }
}

#[testkit::test]
fn infinite_loops_hit_the_time_limit() {
    for kernel in ["infinite_loop", "infinite_barrier_loop"] {
        let m = module_with(CpuOptions {
            threads: 2,
            time_limit: Some(Duration::from_millis(200)),
            ..CpuOptions::default()
        });
        let d = m.device();
        let flag = d.upload(&[0i32]).unwrap();
        let mut out = d.alloc::<i32>(1).unwrap();
        let k = m.kernel(kernel).unwrap();
        let launch = k.launch(LaunchConfig::new(4, 64)).arg(&flag);
        let launch = if kernel == "infinite_loop" {
            launch.arg(&mut out)
        } else {
            launch
        };
        let err = launch.run(&d.stream().unwrap()).unwrap_err();
        match &err {
            RuntimeError::Timeout {
                kernel: k, limit, ..
            } => {
                assert_eq!(k, kernel);
                assert_eq!(*limit, Duration::from_millis(200));
            }
            other => panic!("expected Timeout, got {other:?}"),
        }
        assert!(err.to_string().contains("ran past the time limit"), "{err}");
        still_works(d);
    }
}

#[testkit::test]
fn failed_assert_is_a_kernel_fault_naming_the_thread() {
    let m = module(64);
    let d = m.device();
    let mut input = vec![1i32; 512];
    input[300] = -1;
    let inb = d.upload(&input).unwrap();
    let err = m
        .kernel("assert_positive")
        .unwrap()
        .launch(LaunchConfig::new(4, 128))
        .arg(&inb)
        .run(&d.stream().unwrap())
        .unwrap_err();
    match &err {
        RuntimeError::KernelFault { site, message } => {
            assert_eq!(site.block, [2, 0, 0]);
            assert_eq!(site.thread, [44, 0, 0]);
            assert!(
                message.contains("assertion `in[i] >= 0` failed"),
                "{message}"
            );
            assert!(message.contains("bugs.hip"), "{message}");
        }
        other => panic!("expected KernelFault, got {other:?}"),
    }
    still_works(d);
}

#[testkit::test]
fn null_pointer_write_is_a_kernel_fault() {
    let m = module(64);
    let d = m.device();
    let mut out = d.alloc::<i32>(64).unwrap();
    let err = m
        .kernel("null_write")
        .unwrap()
        .launch(LaunchConfig::new(1, 64))
        .arg(&mut out)
        .run(&d.stream().unwrap())
        .unwrap_err();
    match &err {
        RuntimeError::KernelFault { site, message } => {
            assert_eq!(site.thread, [3, 0, 0]);
            assert!(
                message.contains("invalid memory write at address 0xc"),
                "{message}"
            );
        }
        other => panic!("expected KernelFault, got {other:?}"),
    }
    still_works(d);
}

#[testkit::test]
fn shuffled_block_order_exposes_dependencies_between_blocks() {
    let run = |seed: Option<u64>| {
        let m = module_with(CpuOptions {
            threads: 1,
            shuffle_seed: seed,
            ..CpuOptions::default()
        });
        let d = m.device();
        let mut data = d.alloc::<i32>(64).unwrap();
        m.kernel("order_dependent")
            .unwrap()
            .launch(LaunchConfig::new(64, 32))
            .arg(&mut data)
            .run(&d.stream().unwrap())
            .unwrap();
        data.to_vec().unwrap()
    };
    let in_order = run(None);
    assert_eq!(in_order, (0..64).collect::<Vec<i32>>());
    let shuffled = run(Some(7));
    assert_ne!(shuffled, in_order);
    assert_eq!(shuffled, run(Some(7)), "a seed gives one order");
}

#[testkit::test]
fn stack_overflow_is_a_kernel_fault() {
    let m = module(64);
    let d = m.device();
    let mut out = d.alloc::<i32>(4).unwrap();
    let err = m
        .kernel("stack_overflow")
        .unwrap()
        .launch(LaunchConfig::new(1, 4))
        .arg(&mut out)
        .arg(&1_000_000i32)
        .run(&d.stream().unwrap())
        .unwrap_err();
    match &err {
        RuntimeError::KernelFault { site, message } => {
            assert_eq!(site.thread, [0, 0, 0]);
            assert!(message.contains("stack overflow"), "{message}");
        }
        other => panic!("expected KernelFault, got {other:?}"),
    }
    still_works(d);
}

/// The bug corpus race-checked by comparing two thread orders (`RaceMethod::TwoOrders`, what
/// kernels built without their race variant get), once per way of running a block's threads
/// (region form where the build made one, and per-thread fibers): both must honour the reversed
/// order.
fn race_checked(wave_size: u32) -> Vec<Module> {
    [CpuExec::Regions, CpuExec::Fibers]
        .into_iter()
        .map(|exec| {
            module_with(CpuOptions {
                wave_size,
                race_check: true,
                race_method: RaceMethod::TwoOrders,
                exec,
                time_limit: Some(Duration::from_secs(20)),
                ..CpuOptions::default()
            })
        })
        .collect()
}

/// The bug corpus under the race detector (its race variant).
fn detected(wave_size: u32) -> Module {
    module_with(CpuOptions {
        wave_size,
        race_check: true,
        time_limit: Some(Duration::from_secs(20)),
        ..CpuOptions::default()
    })
}

/// The message of a [`RuntimeError::DataRace`] (the detector) or, with `two_orders`, of a
/// [`RuntimeError::SharedMemoryRace`] for `kernel`, or a panic.
fn race_report(err: RuntimeError, kernel: &str, two_orders: bool) -> String {
    let text = err.to_string();
    let (k, message, what) = match err {
        RuntimeError::DataRace {
            kernel, message, ..
        } if !two_orders => (kernel, message, "data race on"),
        RuntimeError::SharedMemoryRace {
            kernel, message, ..
        } if two_orders => (kernel, message, "shared-memory race:"),
        other => panic!("expected a race report (two orders: {two_orders}), got {other:?}"),
    };
    assert_eq!(k, kernel);
    assert!(
        text.starts_with(&format!("kernel `{kernel}`: {what} ")),
        "{text}"
    );
    message
}

fn data_race(err: RuntimeError, kernel: &str) -> String {
    race_report(err, kernel, false)
}

#[testkit::test]
fn the_race_detector_names_memory_threads_and_source_lines_of_a_missing_barrier() {
    for wave in [32, 64] {
        let m = detected(wave);
        let d = m.device();
        let input: Vec<i32> = (1..=512).collect();
        let inb = d.upload(&input).unwrap();
        let mut out = d.alloc::<i32>(512).unwrap();
        let err = m
            .kernel("missing_barrier")
            .unwrap()
            .launch(LaunchConfig::new(2, 256))
            .arg(&inb)
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap_err();
        let site = err.fault_site().cloned().unwrap();
        let message = data_race(err, "missing_barrier");
        // Thread 0 reads s[1] (line 10) before thread 1 writes it (line 8).
        // The array by name, from the binary's TLS symbols.
        assert!(
            message.starts_with(
                "static __shared__ variable `s` of `missing_barrier` at byte offset 4: "
            ),
            "{message}"
        );
        assert!(
            message.contains(
                "thread (0,0,0) read it at tests/corpus/kernels/bugs.hip:10, then thread (1,0,0) \
                 wrote it at tests/corpus/kernels/bugs.hip:8, in block (0,0,0) with no \
                 __syncthreads() between them (lanes of one wave"
            ),
            "{message}"
        );
        assert_eq!((site.block, site.thread), ([0, 0, 0], [1, 0, 0]));
        still_works(d);
    }
}

#[testkit::test]
fn the_race_detector_sees_barriers_missing_in_before_and_between_waves() {
    let input: Vec<f32> = (0..512).map(|i| (i % 7) as f32).collect();
    for wave in [32, 64] {
        let m = detected(wave);
        let d = m.device();
        let inb = d.upload(&input).unwrap();
        let mut out = d.alloc::<f32>(2).unwrap();
        let err = m
            .kernel("reduce_missing_loop_barrier")
            .unwrap()
            .launch(LaunchConfig::new(2, 256))
            .arg(&inb)
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap_err();
        let message = data_race(err, "reduce_missing_loop_barrier");
        assert!(message.contains("bugs.hip:114"), "{message}");
        assert!(
            message.contains("no __syncthreads() between them"),
            "{message}"
        );

        // Within one wave (64 threads at wave 64) as much as between two.
        let mut partial = d.alloc::<f32>(2).unwrap();
        let err = m
            .kernel("missing_barrier_before_loop")
            .unwrap()
            .launch(LaunchConfig::new(2, 64))
            .arg(&inb)
            .arg(&mut partial)
            .run(&d.stream().unwrap())
            .unwrap_err();
        let message = data_race(err, "missing_barrier_before_loop");
        assert!(
            message.contains("bugs.hip:145") && message.contains("bugs.hip:148"),
            "{message}"
        );

        // A shared value set by thread 0 and read by the others with no barrier.
        let mut out = d.alloc::<i32>(127).unwrap();
        let err = m
            .kernel("shift_without_barrier")
            .unwrap()
            .launch(LaunchConfig::new(1, 128))
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap_err();
        let message = data_race(err, "shift_without_barrier");
        assert!(
            message.contains(
                "thread (0,0,0) wrote it at tests/corpus/kernels/bugs.hip:133, then thread \
                 (1,0,0) read it"
            ),
            "{message}"
        );
    }
}

/// The bug corpus under the race detector with `exec` (the race variant's region forms, or its
/// per-thread fibers with [`CpuExec::Fibers`]), with or without the summaries of lane loops
/// ([`CpuOptions::race_summaries`]).
fn detected_with_summaries(wave_size: u32, exec: CpuExec, summaries: bool) -> Module {
    module_with(CpuOptions {
        wave_size,
        race_check: true,
        exec,
        race_summaries: summaries,
        time_limit: Some(Duration::from_secs(20)),
        ..CpuOptions::default()
    })
}

/// A launch's result as the race equivalence test compares it: clean, or the memory and the
/// source lines of the race (which pair of accesses is found first, and so which threads the
/// report names, depends on the order they ran in).
fn one_report(found: &mut Vec<String>, name: &str, result: rocm_kernels::runtime::Result<()>) {
    match result {
        Ok(()) => found.push(format!("{name}: clean")),
        Err(err) => {
            let message = data_race(err, name);
            let memory = message.split(" at byte offset").next().unwrap_or_default();
            let mut lines: Vec<&str> = message
                .split("bugs.hip:")
                .skip(1)
                .map(|l| {
                    l.split(|c: char| !c.is_ascii_digit())
                        .next()
                        .unwrap_or_default()
                })
                .collect();
            lines.sort_unstable();
            lines.dedup();
            found.push(format!("{name}: {memory}, lines {lines:?}"));
        }
    }
}

/// Region form with the summaries of lane loops, region form hooking every access, and
/// per-thread fibers: the same races (memory and source lines) in all three, and summaries taken
/// in the first.
#[testkit::test]
fn the_race_detector_finds_the_same_races_in_region_form_as_with_fibers() {
    let input: Vec<f32> = (0..512).map(|i| (i % 7) as f32).collect();
    let ints: Vec<i32> = (1..=512).collect();
    for wave in [32, 64] {
        let mut reports: Vec<Vec<String>> = Vec::new();
        let mut summaries = 0;
        for (exec, with_summaries) in [
            (CpuExec::Regions, true),
            (CpuExec::Regions, false),
            (CpuExec::Fibers, true),
        ] {
            let m = detected_with_summaries(wave, exec, with_summaries);
            let d = m.device();
            let s = d.stream().unwrap();
            let inb = d.upload(&input).unwrap();
            let intb = d.upload(&ints).unwrap();
            let mut out = d.alloc::<f32>(512).unwrap();
            let mut iout = d.alloc::<i32>(512).unwrap();
            let mut found = Vec::new();
            let mut one = |name: &str, result: rocm_kernels::runtime::Result<()>| {
                if exec == CpuExec::Regions && with_summaries {
                    summaries += rocm_kernels::runtime::race_summary_stats().0;
                }
                one_report(&mut found, name, result)
            };
            let k = |name: &str| m.kernel(name).unwrap();
            one(
                "missing_barrier",
                k("missing_barrier")
                    .launch(LaunchConfig::new(2, 256))
                    .arg(&intb)
                    .arg(&mut iout)
                    .run(&s),
            );
            one(
                "reduce_missing_loop_barrier",
                k("reduce_missing_loop_barrier")
                    .launch(LaunchConfig::new(2, 256))
                    .arg(&inb)
                    .arg(&mut out)
                    .run(&s),
            );
            one(
                "missing_barrier_before_loop",
                k("missing_barrier_before_loop")
                    .launch(LaunchConfig::new(2, 64))
                    .arg(&inb)
                    .arg(&mut out)
                    .run(&s),
            );
            one(
                "shift_without_barrier",
                k("shift_without_barrier")
                    .launch(LaunchConfig::new(1, 128))
                    .arg(&mut iout)
                    .run(&s),
            );
            one(
                "order_dependent",
                k("order_dependent")
                    .launch(LaunchConfig::new(8, 64))
                    .arg(&mut iout)
                    .run(&s),
            );
            // Correct at wave 64 only (it reduces with shuffles assuming 64 lanes).
            if wave == 64 {
                one(
                    "reduce_assumes_wave64",
                    k("reduce_assumes_wave64")
                        .launch(LaunchConfig::new(2, 256))
                        .arg(&inb)
                        .arg(&mut out)
                        .run(&s),
                );
            }
            reports.push(found);
        }
        assert_eq!(
            reports[0], reports[1],
            "wave {wave}: region form with summaries, then hooking every access"
        );
        assert_eq!(
            reports[0], reports[2],
            "wave {wave}: region form, then fibers"
        );
        assert!(summaries > 0, "wave {wave}: no summaries taken");
        assert!(
            reports[0][..5].iter().all(|r| !r.ends_with("clean")),
            "{:?}",
            reports[0]
        );
    }
}

/// A device address inside a buffer (`base` plus a byte offset), passed as a pointer argument:
/// two arguments into one buffer.
struct Inside(u64);

// Safety: points to the 8 bytes of a device address.
unsafe impl rocm_kernels::runtime::KernelArg for Inside {
    fn arg_ptr(&self) -> *const std::ffi::c_void {
        (&self.0 as *const u64).cast()
    }
    fn arg_size(&self) -> usize {
        8
    }
    fn arg_kind(&self) -> rocm_kernels::runtime::ArgKind {
        rocm_kernels::runtime::ArgKind::Pointer
    }
    fn arg_align(&self) -> usize {
        8
    }
    fn arg_type(&self) -> String {
        "a pointer into a buffer".into()
    }
}

/// Kernels written to take the summaries' paths (bugs.hip's `summary_*`): with summaries the
/// detector reports the same races as hooking every access, including those only the launch
/// shows (two pointer arguments into one buffer), an index that wraps within a block, writes of
/// one word by every lane and blocks that overlap; correct kernels pass, on summaries alone.
#[testkit::test]
fn the_race_detectors_summaries_find_what_hooks_find() {
    let n = 48usize;
    let input: Vec<f32> = (0..n * n).map(|i| (i % 13) as f32).collect();
    for wave in [32, 64] {
        let mut reports: Vec<Vec<String>> = Vec::new();
        let mut stats: Vec<(String, (u64, bool))> = Vec::new();
        for with_summaries in [true, false] {
            let m = detected_with_summaries(wave, CpuExec::Regions, with_summaries);
            let d = m.device();
            let s = d.stream().unwrap();
            let inb = d.upload(&input).unwrap();
            let mut y = d.upload(&input).unwrap();
            let mut out = d.alloc::<f32>(n * n).unwrap();
            let mut found = Vec::new();
            let mut one = |name: &str, result: rocm_kernels::runtime::Result<()>| {
                if with_summaries {
                    stats.push((
                        name.to_string(),
                        rocm_kernels::runtime::race_summary_stats(),
                    ));
                }
                one_report(&mut found, name, result)
            };
            let k = |name: &str| m.kernel(name).unwrap();
            let count = (n * n) as i32;
            one(
                "summary_axpy",
                k("summary_axpy")
                    .launch(LaunchConfig::cover(n * n, 256))
                    .arg(&2.0f32)
                    .arg(&inb)
                    .arg(&mut y)
                    .arg(&count)
                    .run(&s),
            );
            // x = y + 1: the same buffer, one element on.
            let y_ptr = y.device_ptr();
            one(
                "summary_axpy",
                k("summary_axpy")
                    .launch(LaunchConfig::cover(n * n - 1, 256))
                    .arg(&2.0f32)
                    .arg(&Inside(y_ptr + 4))
                    .arg(&mut y)
                    .arg(&(count - 1))
                    .run(&s),
            );
            one(
                "summary_blocks_overlap",
                k("summary_blocks_overlap")
                    .launch(LaunchConfig::new(4, 64))
                    .arg(&mut out)
                    .run(&s),
            );
            one(
                "summary_shared_same_word",
                k("summary_shared_same_word")
                    .launch(LaunchConfig::new(2, 128))
                    .arg(&mut out)
                    .run(&s),
            );
            one(
                "summary_index_wraps",
                k("summary_index_wraps")
                    .launch(LaunchConfig::new(1, 512))
                    .arg(&mut out)
                    .run(&s),
            );
            let tiles = n.div_ceil(16) as u32;
            for name in ["summary_transpose", "summary_transpose_no_barrier"] {
                one(
                    name,
                    k(name)
                        .launch(LaunchConfig::new((tiles, tiles), (16, 16)))
                        .arg(&inb)
                        .arg(&mut out)
                        .arg(&(n as i32))
                        .run(&s),
                );
            }
            one(
                "summary_brace_init",
                k("summary_brace_init")
                    .launch(LaunchConfig::cover(n * n, 256))
                    .arg(&inb)
                    .arg(&mut out)
                    .arg(&count)
                    .run(&s),
            );
            reports.push(found);
        }
        assert_eq!(
            reports[0], reports[1],
            "wave {wave}: with summaries, then hooking every access"
        );
        let clean: Vec<bool> = reports[0].iter().map(|r| r.ends_with("clean")).collect();
        assert_eq!(
            clean,
            [true, false, false, false, false, true, false, true],
            "wave {wave}: {:?}",
            reports[0]
        );
        // The correct kernels ran on summaries alone.
        for (k, (name, (taken, replayed))) in stats.iter().enumerate() {
            if clean[k] {
                assert!(
                    *taken > 0 && !replayed,
                    "wave {wave}: {name}: {taken} taken, replayed {replayed}"
                );
            }
        }
    }
}

#[testkit::test]
fn the_race_detector_reports_blocks_that_depend_on_each_other() {
    let m = detected(64);
    let d = m.device();
    let mut data = d.upload(&[0i32; 8]).unwrap();
    let err = m
        .kernel("order_dependent")
        .unwrap()
        .launch(LaunchConfig::new(8, 64))
        .arg(&mut data)
        .run(&d.stream().unwrap())
        .unwrap_err();
    let message = data_race(err, "order_dependent");
    assert!(
        message.starts_with(
            "`data` (parameter #0, int*) at byte offset 4: thread (0,0,0) of block (1,0,0) \
             wrote it at tests/corpus/kernels/bugs.hip:84, then thread (0,0,0) of block (2,0,0) \
             read it at tests/corpus/kernels/bugs.hip:84; the blocks of a launch run in any \
             order"
        ),
        "{message}"
    );
}

#[testkit::test]
fn the_race_detector_passes_atomics_and_reports_faults_first() {
    for wave in [32, 64] {
        let m = detected(wave);
        let d = m.device();
        // Atomics never race, whatever order they run in.
        let mut counter = d.upload(&[0u32]).unwrap();
        let mut order = d.alloc::<u32>(256).unwrap();
        m.kernel("run_order")
            .unwrap()
            .launch(LaunchConfig::new(1, 256))
            .arg(&mut counter)
            .arg(&mut order)
            .arg(&1i32)
            .run(&d.stream().unwrap())
            .unwrap();
        assert_eq!(counter.to_vec().unwrap(), vec![256]);
        // A fault is the error, not the races around it.
        let mut out = d.alloc::<f32>(1000).unwrap();
        let err = m
            .kernel("oob_write")
            .unwrap()
            .launch(LaunchConfig::cover(1024, 256))
            .arg(&mut out)
            .arg(&1000i32)
            .run(&d.stream().unwrap())
            .unwrap_err();
        assert!(matches!(err, RuntimeError::OutOfBounds { .. }), "{err}");
        still_works(d);
    }
}

fn race_message(err: RuntimeError, kernel: &str) -> String {
    race_report(err, kernel, true)
}

#[testkit::test]
fn race_check_catches_the_missing_barrier() {
    for (wave, threads) in [(32, 256usize), (64, 256), (64, 64)] {
        for m in race_checked(wave) {
            let d = m.device();
            let input: Vec<i32> = (1..=2 * threads as i32).collect();
            let inb = d.upload(&input).unwrap();
            let mut out = d.alloc::<i32>(2 * threads).unwrap();
            let err = m
                .kernel("missing_barrier")
                .unwrap()
                .launch(LaunchConfig::new(2, threads as u32))
                .arg(&inb)
                .arg(&mut out)
                .run(&d.stream().unwrap())
                .unwrap_err();
            let site = err.fault_site().cloned();
            let message = race_message(err, "missing_barrier");
            assert!(message.contains("parameter `out` (#1)"), "{message}");
            // The word is out[0], which thread 0 of block 0 copies from s[1]: in order s[1] is
            // still 0 (out keeps its 0), in reverse order thread 1 wrote it first.
            assert!(
                message.contains(
                    "In order, no thread changed it (it kept its value from before the \
                     launch); in reverse order, thread (0,0,0) of block (0,0,0) changed it last \
                     (1 change(s) in all)."
                ),
                "{message}"
            );
            let site = site.expect("the writer's block and thread");
            assert_eq!((site.block, site.thread), ([0, 0, 0], [0, 0, 0]));
            // Thread 0 reads thread 1's slot: not yet written in order, written in reverse order.
            assert!(
                message.contains("differs first in the 4-byte word at byte offset 0"),
                "{message}"
            );
            assert!(message.contains("without a __syncthreads()"), "{message}");
            assert!(
                message.contains("add the missing __syncthreads()"),
                "{message}"
            );
        }
    }
}

#[testkit::test]
fn race_check_catches_a_barrier_missing_inside_a_reduction_loop() {
    let input: Vec<f32> = (0..512).map(|i| (i % 7) as f32).collect();
    for wave in [32, 64] {
        for m in race_checked(wave) {
            let d = m.device();
            let inb = d.upload(&input).unwrap();
            let mut out = d.alloc::<f32>(2).unwrap();
            let err = m
                .kernel("reduce_missing_loop_barrier")
                .unwrap()
                .launch(LaunchConfig::new(2, 256))
                .arg(&inb)
                .arg(&mut out)
                .run(&d.stream().unwrap())
                .unwrap_err();
            let message = race_message(err, "reduce_missing_loop_barrier");
            assert!(
                message.contains(
                    "parameter `out` (#1) differs first in the 4-byte word at byte offset 0"
                ),
                "{message}"
            );
            // out[0] is written by thread 0 of block 0 alone.
            assert!(
                message.contains("thread (0,0,0) of block (0,0,0) changed it last"),
                "{message}"
            );
            assert!(message.contains("__syncthreads()"), "{message}");
        }
    }
}

#[testkit::test]
fn race_check_catches_a_barrier_missing_before_a_loop_in_either_exec_mode() {
    let input: Vec<f32> = (0..128).map(|i| (i % 5) as f32 + 1.0).collect();
    for wave in [32, 64] {
        for m in race_checked(wave) {
            let d = m.device();
            let xb = d.upload(&input).unwrap();
            let mut partial = d.alloc::<f32>(2).unwrap();
            let err = m
                .kernel("missing_barrier_before_loop")
                .unwrap()
                .launch(LaunchConfig::new(2, 64))
                .arg(&xb)
                .arg(&mut partial)
                .run(&d.stream().unwrap())
                .unwrap_err();
            let message = race_message(err, "missing_barrier_before_loop");
            assert!(
                message.contains(
                    "parameter `partial` (#1) differs first in the 4-byte word at byte offset 0"
                ),
                "{message}"
            );
        }
    }
}

#[testkit::test]
fn race_check_runs_the_threads_of_a_block_last_to_first() {
    for (wave, threads) in [(64, 256u32), (32, 256), (64, 96), (64, 64), (64, 48)] {
        let thread0 = threads - 1; // thread 0 runs last
        for barrier in [0i32, 1] {
            for m in race_checked(wave) {
                let d = m.device();
                let mut counter = d.upload(&[0u32]).unwrap();
                let mut order = d.alloc::<u32>(threads as usize).unwrap();
                let err = m
                    .kernel("run_order")
                    .unwrap()
                    .launch(LaunchConfig::new(1, threads))
                    .arg(&mut counter)
                    .arg(&mut order)
                    .arg(&barrier)
                    .run(&d.stream().unwrap())
                    .unwrap_err();
                let message = race_message(err, "run_order");
                assert!(
                    message.contains(&format!(
                    "parameter `order` (#1) differs first in the 4-byte word at byte offset 0: \
                     0x00000000 when the threads of each block ran in order, {thread0:#010x} when \
                     they ran in reverse order"
                )),
                    "wave {wave}, {threads} threads, barrier {barrier}: {message}"
                );
                // The counter ends equal: the second run started from the restored zero.
                assert_eq!(counter.to_vec().unwrap(), vec![threads]);
            }
        }
    }
}

#[testkit::test]
fn race_check_passes_a_correct_block_reduction() {
    let n = 1000usize;
    let input: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
    for (wave, exec) in [32, 64]
        .into_iter()
        .flat_map(|w| [(w, CpuExec::Regions), (w, CpuExec::Fibers)])
    {
        let device = Device::cpu(CpuOptions {
            wave_size: wave,
            race_check: true,
            exec,
            ..CpuOptions::default()
        });
        assert!(
            device.info().name.contains("race check"),
            "{}",
            device.info().name
        );
        let m = device.load(FEATURES).unwrap();
        let inb = device.upload(&input).unwrap();
        let blocks = n.div_ceil(256);
        let mut out = device.upload(&vec![-1.0f32; blocks]).unwrap();
        m.kernel("block_sum_static")
            .unwrap()
            .launch(LaunchConfig::new(blocks as u32, 256))
            .arg(&inb)
            .arg(&mut out)
            .arg(&(n as i32))
            .run(&device.stream().unwrap())
            .unwrap();
        let want: Vec<f32> = input.chunks(256).map(|c| c.iter().sum()).collect();
        assert_eq!(out.to_vec().unwrap(), want);
    }
}

#[testkit::test]
fn race_check_reports_faults_of_either_run() {
    for m in race_checked(64) {
        let d = m.device();
        let n = 1000usize;
        let mut out = d.alloc::<f32>(n).unwrap();
        let err = m
            .kernel("oob_write")
            .unwrap()
            .launch(LaunchConfig::cover(n + 24, 256))
            .arg(&mut out)
            .arg(&(n as i32))
            .run(&d.stream().unwrap())
            .unwrap_err();
        match &err {
            RuntimeError::OutOfBounds { detail, .. } => {
                assert!(!detail.contains("race check"), "{detail}")
            }
            other => panic!("expected OutOfBounds, got {other:?}"),
        }
        still_works(d);

        // A fault only the reversed run has is said to depend on the order.
        let mut out = d.alloc::<i32>(127).unwrap();
        let err = m
            .kernel("shift_without_barrier")
            .unwrap()
            .launch(LaunchConfig::new(1, 128))
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap_err();
        match &err {
            RuntimeError::OutOfBounds {
                site,
                access,
                detail,
                ..
            } => {
                assert_eq!(site.thread, [127, 0, 0]);
                assert_eq!(*access, "write");
                assert!(
                    detail.contains(
                        "race check: only when the threads of each block ran in reverse order"
                    ),
                    "{detail}"
                );
            }
            other => panic!("expected OutOfBounds, got {other:?}"),
        }
        still_works(d);
    }
}

/// `missing_barrier_before_loop` at wave 32 (two waves of 32 in a block of 64): run as waves
/// (the default), the first wave reaches the loop before the second filled its half of the tile
/// and the sums are wrong, as a GPU could make them; `CpuExec::Blocks` runs the block's waves in
/// step and hides the bug (its documented trade-off).
#[testkit::test]
fn waves_show_a_barrier_missing_before_a_loop_and_blocks_hide_it() {
    let x: Vec<f32> = (0..128).map(|i| (i % 5) as f32 + 1.0).collect();
    let want: Vec<f32> = x.chunks(64).map(|c| c.iter().sum()).collect();
    for (exec, wrong) in [(CpuExec::Regions, true), (CpuExec::Blocks, false)] {
        let m = module_with(CpuOptions {
            wave_size: 32,
            exec,
            ..CpuOptions::default()
        });
        let d = m.device();
        let xb = d.upload(&x).unwrap();
        let mut out = d.alloc::<f32>(2).unwrap();
        m.kernel("missing_barrier_before_loop")
            .unwrap()
            .launch(LaunchConfig::new(2, 64))
            .arg(&xb)
            .arg(&mut out)
            .run(&d.stream().unwrap())
            .unwrap();
        let got = out.to_vec().unwrap();
        assert_eq!(got != want, wrong, "{exec:?}: got {got:?}, want {want:?}");
    }
}

/// Barriers that only some threads of a block reach because of a condition that differs between
/// them (`?:`, `&&`, `if`, a loop's trip count): reported as partial barriers, naming the
/// kernel, in every way the cpu backend runs a block (the region form keeps such a barrier's
/// condition, or leaves the kernel to fibers, which check it) and at both wave sizes.
#[testkit::test]
fn partial_barriers_under_conditions_are_reported_in_every_mode() {
    let kernels = [
        "partial_count_under_ternary",
        "partial_or_under_and",
        "partial_barrier_under_if",
        "divergent_loop_barrier",
        "divergent_barrier",
    ];
    for wave in [32, 64] {
        for (exec, race_check) in [
            (CpuExec::Regions, false),
            (CpuExec::Blocks, false),
            (CpuExec::Fibers, false),
            (CpuExec::Regions, true),
        ] {
            let m = module_with(CpuOptions {
                wave_size: wave,
                threads: 2,
                exec,
                race_check,
                time_limit: Some(Duration::from_secs(20)),
                ..CpuOptions::default()
            });
            let d = m.device();
            for kernel in kernels {
                let input = d
                    .upload(&(0..128).map(|i| i % 5).collect::<Vec<i32>>())
                    .unwrap();
                let mut out = d.alloc::<i32>(128).unwrap();
                let mut data = d.alloc::<f32>(128).unwrap();
                let k = m.kernel(kernel).unwrap();
                let launch = k.launch(LaunchConfig::new(1, 128));
                let launch = if kernel == "divergent_barrier" {
                    launch.arg(&mut data)
                } else {
                    launch.arg(&input).arg(&mut out)
                };
                let err = launch.run(&d.stream().unwrap()).unwrap_err();
                let mode =
                    format!("{kernel} with {exec:?} (race check {race_check}) at wave {wave}");
                match &err {
                    RuntimeError::PartialBarrier { site, message } => {
                        assert_eq!(site.kernel, kernel, "{mode}");
                        assert!(
                            message.contains("wait at __syncthreads()")
                                && message
                                    .contains("every thread of a block must reach every barrier"),
                            "{mode}: {message}"
                        );
                    }
                    other => panic!("{mode}: expected PartialBarrier, got {other:?}"),
                }
                assert!(err.to_string().contains("partial barrier"), "{mode}: {err}");
            }
            still_works(d);
        }
    }
}

/// A checked launch of a region form that faults reruns naming each lane; when the rerun does not
/// fault the same way, the report says the thread may be a neighbour of the one at fault.
#[testkit::test]
fn a_fault_that_does_not_recur_says_its_thread_may_be_a_neighbour() {
    let m = module(64);
    let d = m.device();
    let mut flag = d.upload(&[0i32]).unwrap();
    // 64 floats, 256 bytes: no slack after the buffer, so `out[n + 10]` faults on the guard page
    // (with 100 it would land in the slack, reported after the launch instead).
    let mut out = d.alloc::<f32>(64).unwrap();
    let err = m
        .kernel("faults_once")
        .unwrap()
        .launch(LaunchConfig::new(1, 64))
        .arg(&mut flag)
        .arg(&mut out)
        .arg(&64i32)
        .run(&d.stream().unwrap())
        .unwrap_err();
    match &err {
        RuntimeError::OutOfBounds { detail, .. } => assert!(
            detail.contains("the thread may be a neighbour of the one at fault"),
            "{detail}"
        ),
        other => panic!("expected OutOfBounds, got {other:?}"),
    }
    assert_eq!(flag.to_vec().unwrap(), vec![1]);
    still_works(d);
}

/// Checked buffers start 256-byte aligned, as `hipMalloc`'s do: a float buffer whose byte length
/// is no multiple of 16 (40 bytes) read as float4 from its start runs as on a GPU, plainly and
/// under the race detector.
#[testkit::test]
fn a_float_buffer_read_as_float4_from_its_start_passes() {
    for m in [module(64), detected(32)] {
        let d = m.device();
        let input: Vec<f32> = (0..10).map(|i| i as f32 + 0.5).collect();
        let inb = d.upload(&input).unwrap();
        assert_eq!(
            inb.device_ptr() % 256,
            0,
            "a checked buffer starts 256-byte aligned"
        );
        let mut out = d.alloc::<f32>(10).unwrap();
        m.kernel("float4_from_start")
            .unwrap()
            .launch(LaunchConfig::new(1, 4))
            .arg(&inb)
            .arg(&mut out)
            .arg(&10i32)
            .run(&d.stream().unwrap())
            .unwrap();
        assert_eq!(out.to_vec().unwrap(), input);
    }
}

/// A write one element past the end of a 40-byte buffer lands in the slack before its guard page
/// (the buffer starts 256-byte aligned): the canaries there report it after the launch, and a
/// rerun watching them names the thread; under the race detector its bounds check names the
/// thread and the source line at once.
#[testkit::test]
fn a_one_element_write_overrun_into_the_slack_is_reported() {
    for (m, detected_run) in [(module(64), false), (detected(64), true)] {
        let d = m.device();
        let mut out = d.alloc::<f32>(10).unwrap();
        let err = m
            .kernel("oob_write")
            .unwrap()
            .launch(LaunchConfig::new(1, 64))
            .arg(&mut out)
            .arg(&10i32)
            .run(&d.stream().unwrap())
            .unwrap_err();
        match &err {
            RuntimeError::OutOfBounds {
                site,
                access,
                detail,
                ..
            } => {
                assert_eq!(site.thread, [10, 0, 0], "{err}");
                assert_eq!(*access, "write");
                assert!(
                    detail.starts_with(
                        "`out` (parameter #0, float*): byte offset 40 of the 40-byte buffer"
                    ),
                    "{detail}"
                );
                if detected_run {
                    assert!(detail.contains("bugs.hip:16"), "{detail}");
                } else {
                    assert!(detail.contains("canary bytes"), "{detail}");
                }
            }
            other => panic!("expected OutOfBounds, got {other:?}"),
        }
        // The canaries were put back: the next launch is not blamed.
        still_works(d);
    }
}

/// A read one element past the end of a 40-byte buffer reads the slack, which does not fault; the
/// race detector (the harness runs the first cases of every trial under it) checks every access
/// against the buffer's real length and reports it, naming the thread and the source line.
#[testkit::test]
fn a_one_element_read_overrun_is_reported_under_the_race_detector() {
    let m = detected(32);
    let d = m.device();
    let input = d.upload(&[1.0f32; 10]).unwrap();
    let mut out = d.alloc::<f32>(10).unwrap();
    let err = m
        .kernel("oob_read")
        .unwrap()
        .launch(LaunchConfig::new(1, 10))
        .arg(&input)
        .arg(&mut out)
        .arg(&10i32)
        .run(&d.stream().unwrap())
        .unwrap_err();
    match &err {
        RuntimeError::OutOfBounds {
            site,
            access,
            detail,
            ..
        } => {
            assert_eq!(site.thread, [9, 0, 0], "{err}");
            assert_eq!(*access, "read");
            assert!(
                detail.starts_with(
                    "`in` (parameter #0, const float*): byte offset 40 of the 40-byte buffer"
                ),
                "{detail}"
            );
            assert!(detail.contains("bugs.hip:22"), "{detail}");
        }
        other => panic!("expected OutOfBounds, got {other:?}"),
    }
    still_works(d);
}

/// Race checking on several workers (race.cpp, "Parallel checking"): reports never depend on
/// the worker count. Correct kernels whose blocks never meet are decided on the workers alone;
/// races between blocks of two workers (here two blocks, one per worker), and correct kernels
/// whose blocks meet on device memory (one value written by every block, the last-block sum of
/// a threadfence reduction, ordered by its fence and atomic), are checked again on one worker
/// from device memory put back as it was: the sum comes out right.
#[testkit::test]
fn race_checks_on_several_workers_report_what_one_worker_reports() {
    let n = 1024usize;
    let input: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let mut runs: Vec<Vec<(String, (usize, bool))>> = Vec::new();
    // Unchecked too: its buffers come from the heap, several to a page, and only their bytes are
    // put back.
    for (threads, checked) in [(1, true), (3, true), (3, false)] {
        let m = module_with(CpuOptions {
            wave_size: 64,
            threads,
            checked,
            race_check: true,
            time_limit: Some(Duration::from_secs(20)),
            ..CpuOptions::default()
        });
        let d = m.device();
        let s = d.stream().unwrap();
        let inb = d.upload(&input).unwrap();
        let mut y = d.upload(&input).unwrap();
        let mut out = d.alloc::<f32>(n).unwrap();
        let mut iout = d.alloc::<i32>(n).unwrap();
        let mut found = Vec::new();
        let mut one = |name: &str, result: rocm_kernels::runtime::Result<()>| {
            let text = match result {
                Ok(()) => format!("{name}: clean"),
                Err(err) => data_race(err, name),
            };
            found.push((text, rocm_kernels::runtime::race_parallel_stats()));
        };
        let k = |name: &str| m.kernel(name).unwrap();
        one(
            "summary_axpy",
            k("summary_axpy")
                .launch(LaunchConfig::cover(n, 64))
                .arg(&2.0f32)
                .arg(&inb)
                .arg(&mut y)
                .arg(&(n as i32))
                .run(&s),
        );
        for blocks in [2, 5] {
            one(
                "summary_blocks_overlap",
                k("summary_blocks_overlap")
                    .launch(LaunchConfig::new(blocks, 64))
                    .arg(&mut out)
                    .run(&s),
            );
        }
        one(
            "order_dependent",
            k("order_dependent")
                .launch(LaunchConfig::new(8, 64))
                .arg(&mut iout)
                .run(&s),
        );
        let mut flag = d.upload(&[0i32]).unwrap();
        one(
            "every_block_sets_flag",
            k("every_block_sets_flag")
                .launch(LaunchConfig::new(6, 64))
                .arg(&mut flag)
                .arg(&mut out)
                .run(&s),
        );
        let blocks = n / 64;
        let mut partial = d.alloc::<f32>(blocks).unwrap();
        let mut done = d.upload(&[0u32]).unwrap();
        let mut sum = d.alloc::<f32>(1).unwrap();
        one(
            "last_block_sum",
            k("last_block_sum")
                .launch(LaunchConfig::new(blocks as u32, 64))
                .arg(&inb)
                .arg(&mut partial)
                .arg(&mut done)
                .arg(&mut sum)
                .run(&s),
        );
        assert_eq!(
            sum.to_vec().unwrap()[0],
            input.iter().sum::<f32>(),
            "{threads} workers: the last block's sum"
        );
        assert_eq!(
            done.to_vec().unwrap()[0],
            blocks as u32,
            "{threads} workers"
        );
        runs.push(found);
    }
    let texts = |run: &[(String, (usize, bool))]| -> Vec<String> {
        run.iter().map(|(t, _)| t.clone()).collect()
    };
    assert_eq!(texts(&runs[0]), texts(&runs[1]));
    assert_eq!(texts(&runs[0]), texts(&runs[2]));
    let clean: Vec<bool> = runs[0].iter().map(|(t, _)| t.ends_with("clean")).collect();
    assert_eq!(
        clean,
        [true, false, false, false, true, true],
        "{:?}",
        runs[0]
    );
    // On three workers: the correct axpy decided there; everything else checked again on one.
    for run in &runs[1..] {
        let how: Vec<(usize, bool)> = run.iter().map(|(_, h)| *h).collect();
        assert_eq!(
            how,
            [
                (3, false),
                (3, true),
                (3, true),
                (3, true),
                (3, true),
                (3, true)
            ]
        );
    }
    assert!(runs[0].iter().all(|(_, h)| *h == (1, false)));
}
