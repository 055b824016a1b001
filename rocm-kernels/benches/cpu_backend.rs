//! The cpu backend on the four benchmark kernels of tests/corpus/kernels/bench.hip, beside a plain
//! Rust loop, plus the cost of one fiber switch. Prints a table (best of 5 runs after a warm-up).
//!
//!     cargo bench -p rocm-kernels --bench cpu_backend
//!
//! For the side-by-side with ROCm's HIP-CPU on the same kernel sources, run
//! `rocm-kernels/benches/hip-cpu/run.sh <HIP-CPU checkout>`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use rocm_kernels::runtime::{fiber_switch_ns, CpuOptions, Device, LaunchConfig, Stream};
use rocm_kernels_corpus::BENCH;

const RUNS: usize = 5;

thread_local! {
    /// The race detector's summaries per timed kernel, in order (see `kernel_times`).
    static SUMMARIES: std::cell::RefCell<Vec<(u64, bool)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// CPU time of the whole process (all threads). On a shared machine wall time mostly measures
/// the other tenants; CPU time measures the work. The cpu backend's workers sleep when idle, so
/// it adds nothing of its own.
fn process_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // Safety: a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Best wall time and best CPU time over `RUNS` runs after a warm-up.
fn best(mut f: impl FnMut()) -> (Duration, Duration) {
    best_of(RUNS, &mut f)
}

/// Best (wall, CPU) of `runs` runs of `f` after one to warm up.
fn best_of<F: FnMut() + ?Sized>(runs: usize, f: &mut F) -> (Duration, Duration) {
    f();
    let mut wall = Duration::MAX;
    let mut cpu = Duration::MAX;
    for _ in 0..runs {
        let (t, c) = (Instant::now(), process_cpu_time());
        f();
        wall = wall.min(t.elapsed());
        cpu = cpu.min(process_cpu_time().saturating_sub(c));
    }
    (wall, cpu)
}

fn ms((wall, cpu): (Duration, Duration)) -> String {
    format!(
        "{:12.3} {:12.3}",
        wall.as_secs_f64() * 1e3,
        cpu.as_secs_f64() * 1e3
    )
}

/// Best (wall, CPU) times of the benchmark kernels on `device`: saxpy, block reduction, warp
/// reduction, the same through a helper, tiled transpose.
fn kernel_times(
    device: &Device,
    host: &[f32],
    n: usize,
    side: usize,
    runs: usize,
) -> Vec<(Duration, Duration)> {
    let module = device.load(BENCH).expect("load bench kernels");
    let stream: Stream = device.stream().expect("stream");
    let x = device.upload(host).expect("upload");
    let mut y = device.upload(host).expect("upload");
    let mut out = device.alloc::<f32>(n).expect("alloc");
    let mut times = Vec::new();
    // BENCH_ONLY=name: time that kernel alone (the others read 0), e.g. under a profiler.
    let only = std::env::var("BENCH_ONLY").ok();
    let skip = |name: &str| only.as_deref().is_some_and(|o| o != name);
    let best_of = |name: &str, runs: usize, f: &mut dyn FnMut()| {
        if skip(name) {
            SUMMARIES.with(|s| s.borrow_mut().push((0, false)));
            (Duration::ZERO, Duration::ZERO)
        } else {
            let t = best_of(runs, f);
            // What the race detector's summaries did in the last launch (race-checked only).
            SUMMARIES.with(|s| {
                s.borrow_mut()
                    .push(rocm_kernels::runtime::race_summary_stats())
            });
            t
        }
    };
    let saxpy = module.kernel("bench_saxpy").expect("kernel");
    times.push(best_of("bench_saxpy", runs, &mut || {
        saxpy
            .launch(LaunchConfig::cover(n, 256))
            .arg(&2.0f32)
            .arg(&x)
            .arg(&mut y)
            .arg(&(n as i32))
            .run(&stream)
            .expect("saxpy");
    }));
    for name in [
        "bench_block_reduce",
        "bench_warp_reduce",
        "bench_warp_reduce_helper",
    ] {
        let k = module.kernel(name).expect("kernel");
        times.push(best_of(name, runs, &mut || {
            k.launch(LaunchConfig::cover(n, 256))
                .arg(&x)
                .arg(&mut out)
                .arg(&(n as i32))
                .run(&stream)
                .expect(name);
        }));
    }
    let transpose = module.kernel("bench_transpose").expect("kernel");
    let blocks = (side / 32) as u32;
    times.push(best_of("bench_transpose", runs, &mut || {
        transpose
            .launch(LaunchConfig::new((blocks, blocks), (32, 8)))
            .arg(&x)
            .arg(&mut out)
            .arg(&(side as i32))
            .arg(&(side as i32))
            .run(&stream)
            .expect("transpose");
    }));
    times
}

fn main() {
    // `cargo test --benches` runs this with `--bench` absent: keep that quick.
    let quick = !std::env::args().any(|a| a == "--bench");
    let n: usize = if quick { 1 << 16 } else { 16 << 20 };
    let side: usize = if quick { 256 } else { 4096 };
    // BENCH_THREADS=1 compares one worker with HIP-CPU limited to one thread (run.sh honours it
    // too): on a small shared machine that is the steadiest comparison.
    let threads = std::env::var("BENCH_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // Unchecked, and checked (guard pages, exact fault reports: what the test harness uses).
    let unchecked = Device::cpu(CpuOptions {
        checked: false,
        threads,
        ..CpuOptions::from_env()
    });
    let checked = Device::cpu(CpuOptions {
        checked: true,
        threads,
        ..CpuOptions::from_env()
    });
    let info = unchecked.info().clone();
    let host: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let plain = kernel_times(&unchecked, &host, n, side, RUNS);
    let safe = kernel_times(&checked, &host, n, side, RUNS);
    let mut xs = host.clone();
    let mut ys = host.clone();
    let t_rust = best(|| {
        let (xs, ys) = (black_box(&mut xs), black_box(&mut ys));
        for (y, x) in ys.iter_mut().zip(xs.iter()) {
            *y += 2.0 * *x;
        }
    });
    let switch = fiber_switch_ns(if quick { 10_000 } else { 10_000_000 });

    println!(
        "cpu backend: {} ({} cores), best of {RUNS}",
        info.name, info.compute_units
    );
    println!(
        "{:<44} {:>12} {:>12} {:>12} {:>12} {:>8}",
        "kernel", "wall ms", "cpu ms", "checked wall", "checked cpu", "ratio"
    );
    let labels = [
        format!("(a) saxpy, {n} floats"),
        format!("(b) block reduction, {n} floats, 256/block"),
        format!("(c) warp-shuffle reduction, {n} floats"),
        "    the same, shuffles in a helper function".to_string(),
        format!("(d) tiled transpose {side}x{side}"),
    ];
    for (k, label) in labels.iter().enumerate() {
        println!(
            "{label:<44} {} {} {:8.2}x",
            ms(plain[k]),
            ms(safe[k]),
            safe[k].1.as_secs_f64() / plain[k].1.as_secs_f64()
        );
        if k == 0 {
            println!(
                "{:<44} {}",
                format!("    plain Rust loop, 1 thread, {n} floats"),
                ms(t_rust)
            );
        }
    }
    println!(
        "{:<44} {:12.2}",
        "fiber switch (ns of thread CPU time)", switch
    );

    // BENCH_RACE_CHECK=1: also the cost of the race check (CpuOptions::race_check: the race
    // detector over the kernels' instrumented variants), on the same kernels, with its ratio to
    // the unchecked launch above (CPU time).
    if std::env::var_os("BENCH_RACE_CHECK").is_some() {
        // BENCH_RACE_CHECKED=1: with checked allocations (guard pages, bounds), as `cargo rocm
        // test` runs its race checks.
        let detected = Device::cpu(CpuOptions {
            checked: std::env::var_os("BENCH_RACE_CHECKED").is_some(),
            race_check: true,
            threads,
            ..CpuOptions::from_env()
        });
        // Seconds a launch at full size: BENCH_RACE_RUNS (default 2) timed runs after the warm-up.
        let runs = std::env::var("BENCH_RACE_RUNS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2);
        SUMMARIES.with(|s| s.borrow_mut().clear());
        let raced = kernel_times(&detected, &host, n, side, runs);
        let summaries = SUMMARIES.with(|s| s.borrow().clone());
        println!(
            "{:<44} {:>12} {:>12} {:>9} {:>10}",
            "race-checked", "wall ms", "cpu ms", "cpu/plain", "summaries"
        );
        for (k, label) in labels.iter().enumerate() {
            // How many summaries the detector took (`*`: replayed as hooked accesses).
            let (taken, replayed) = summaries.get(k).copied().unwrap_or_default();
            println!(
                "{label:<44} {} {:8.2}x {:>9}{}",
                ms(raced[k]),
                raced[k].1.as_secs_f64() / plain[k].1.as_secs_f64(),
                taken,
                if replayed { "*" } else { " " }
            );
        }
    }
}
