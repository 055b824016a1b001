//! A kernel of about 10 µs on an H100 (`small_scale` over 2²¹ doubles, 32 MiB moved) timed four
//! ways: device events around one launch on an idle stream, device events around 100
//! back-to-back launches, device events around criterion's batches of 10 to 1000 back-to-back
//! launches (what `cargo rocm bench` records: criterion's linear sampling through `iter_custom`
//! and `time_launches`, each sample a batch's time per launch), and the host clock around
//! synchronous launches (launch, then synchronize). `--elements N` sets the data set (2²¹
//! doubles by default: about 7.5 µs on an H100, 6.4 on an H200; 3·2²⁰ make about 10 µs on the
//! H200). `--launches N` only launches N times, for
//! Nsight Compute (`ncu --metrics gpu__time_duration.sum`). Used by `scripts/h100/bench.sh`,
//! which parses the lines by their text before the colon. On the cpu backend the criterion
//! batches are 1 to 10 launches (a smoke test).
//!
//! Events around a single launch on an idle stream also time the launch's way from the host to
//! the device: the start event is passed as soon as it is queued, the kernel only when the host
//! has submitted it. Back to back, each kernel is queued before the previous one ends, so the
//! span per launch is the kernel's own duration (and the L2 holds the 32 MiB between launches).

use std::time::Instant;

use rocm_kernels::runtime::LaunchConfig;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> rocm_kernels::runtime::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| -> Option<u64> {
        let i = args.iter().position(|a| a == flag)?;
        match args.get(i + 1).and_then(|n| n.parse().ok()) {
            Some(n) => Some(n),
            None => {
                eprintln!("ten_us: {flag} takes a whole number");
                std::process::exit(2)
            }
        }
    };
    let only = value("--launches");
    let n = value("--elements").unwrap_or(1 << 21) as usize;
    let target = rocm_bench::targets().into_iter().next().expect("a device");
    let device = target.device();
    let module = device.load(gpu_benches::KERNELS)?;
    let kernel = module.kernel("small_scale")?;
    let mut a = device.alloc::<f64>(n)?;
    let b = device.upload(&vec![1.0f64; n])?;
    let stream = device.stream()?;
    let config = LaunchConfig::new((1024, 1, 1), (256, 1, 1));
    let mut launch = |s: &rocm_kernels::runtime::Stream| {
        kernel
            .launch(config)
            .arg(&mut a)
            .arg(&b)
            .arg(&(n as i64))
            .run(s)
    };
    if let Some(count) = only {
        for _ in 0..count {
            launch(&stream)?;
        }
        return stream.synchronize();
    }
    for _ in 0..20 {
        launch(&stream)?;
    }
    stream.synchronize()?;
    let one: Vec<f64> = (0..200)
        .map(|_| rocm_bench::time_launches(&stream, 1, &mut launch).map(|t| t.as_secs_f64() * 1e6))
        .collect::<Result<_, _>>()?;
    let batch: Vec<f64> = (0..20)
        .map(|_| {
            rocm_bench::time_launches(&stream, 100, &mut launch)
                .map(|t| t.as_secs_f64() * 1e6 / 100.0)
        })
        .collect::<Result<_, _>>()?;
    // What `cargo rocm bench` records: criterion's linear sampling through `iter_custom`, one
    // pair of events around each batch of d·k back-to-back launches (k = 1..=100; d = 10 here,
    // criterion picks d from its measurement time), each sample the batch's time / d·k.
    let (d, samples) = if device.backend() == rocm_kernels::Backend::Cpu {
        (1, 10)
    } else {
        (10, 100)
    };
    let criterion: Vec<f64> = (1..=samples)
        .map(|k| {
            rocm_bench::time_launches(&stream, d * k, &mut launch)
                .map(|t| t.as_secs_f64() * 1e6 / (d * k) as f64)
        })
        .collect::<Result<_, _>>()?;
    let host: Vec<f64> = (0..200)
        .map(|_| {
            let t0 = Instant::now();
            launch(&stream)?;
            stream.synchronize()?;
            Ok(t0.elapsed().as_secs_f64() * 1e6)
        })
        .collect::<rocm_kernels::runtime::Result<_>>()?;
    println!(
        "device: {} ({}), small_scale over {n} doubles",
        device.info().name,
        target.place()
    );
    println!(
        "events, one launch:             median {:8.2} µs",
        median(one)
    );
    println!(
        "events, 100 back-to-back / 100: median {:8.2} µs",
        median(batch)
    );
    println!(
        "events, criterion batches (bench):  median {:8.2} µs",
        median(criterion)
    );
    println!(
        "host clock, synchronous launch: median {:8.2} µs",
        median(host)
    );
    launch_path(&module, &stream)
}

/// The launch path's own cost beside the launch rate gpu-small-kernels measures: the original's
/// scale kernel over 4096 doubles (its 64 kB point, block 256), the host clock around queueing
/// 100 launches (synchronized outside the timing), and device events around 3000 back-to-back
/// launches. When the two agree, back-to-back small kernels are bound by the host's launch path.
fn launch_path(
    module: &rocm_kernels::runtime::Module,
    stream: &rocm_kernels::runtime::Stream,
) -> rocm_kernels::runtime::Result<()> {
    let device = module.device();
    let kernel = module.kernel("small_kernels_scale")?;
    let n = 4096i32;
    let mut a = device.alloc::<f64>(n as usize)?;
    let mut b = device.alloc::<f64>(n as usize)?;
    let config = LaunchConfig::new((n as u32 / 256 + 1, 1, 1), (256, 1, 1));
    let mut flip = false;
    let mut launch = |s: &rocm_kernels::runtime::Stream| {
        flip = !flip;
        let (dst, src) = if flip { (&mut a, &b) } else { (&mut b, &a) };
        kernel.launch(config).arg(dst).arg(src).arg(&n).run(s)
    };
    let (batches, per_batch, back_to_back) = if device.backend() == rocm_kernels::Backend::Cpu {
        (5, 10, 100)
    } else {
        (50, 100, 3000)
    };
    for _ in 0..per_batch {
        launch(stream)?;
    }
    stream.synchronize()?;
    let mut queue = Vec::new();
    for _ in 0..batches {
        let t0 = Instant::now();
        for _ in 0..per_batch {
            launch(stream)?;
        }
        queue.push(t0.elapsed().as_secs_f64() * 1e6 / per_batch as f64);
        stream.synchronize()?;
    }
    let rate = rocm_bench::time_launches(stream, back_to_back, &mut launch)?.as_secs_f64() * 1e6
        / back_to_back as f64;
    println!(
        "host clock, queueing a 64 kB launch: median {:8.2} µs",
        median(queue)
    );
    println!("events, 64 kB launches back to back: {rate:8.2} µs");
    Ok(())
}
