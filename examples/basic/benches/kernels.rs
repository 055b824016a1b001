//! Kernel timings with criterion, by device time (events on the stream around back-to-back
//! launches), on every device found: `cargo rocm bench` records them in a history and compares
//! runs; `cargo bench` works too. Benchmark ids name the device as the test trials do:
//! `saxpy/cpu/w64/n=1M`, `saxpy/nvidia/sm_90/n=1M`. Each launch declares the bytes it moves and
//! the FLOPs it does, which `cargo rocm profile` turns into bandwidth and FLOP rate.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rocm_kernels::runtime::LaunchConfig;

fn saxpy(c: &mut Criterion) {
    let n: usize = 1 << 20;
    for target in rocm_bench::targets() {
        let device = target.device();
        let prepared = device.load(basic::KERNELS).and_then(|module| {
            let kernel = module.kernel("saxpy")?;
            let x = device.upload(&vec![1.0f32; n])?;
            let y = device.upload(&vec![2.0f32; n])?;
            let stream = device.stream()?;
            Ok((kernel, x, y, stream))
        });
        let (kernel, x, mut y, stream) = match prepared {
            Ok(p) => p,
            Err(e) => {
                eprintln!("skipping saxpy on {}: {e}", target.place());
                continue;
            }
        };
        let mut group = rocm_bench::DeviceGroup::new(c, "saxpy", &target);
        // Read x and y, write y.
        let bytes = 3 * n * std::mem::size_of::<f32>();
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_launches("n=1M", &stream, |s| {
            kernel
                .launch(LaunchConfig::cover(n, 256))
                .arg(&(n as i32))
                .arg(&2.0f32)
                .arg(&x)
                .arg(&mut y)
                .bytes(bytes as u64)
                .flops(2 * n as u64)
                .run(s)
        });
        group.finish();
    }
}

fn block_sum(c: &mut Criterion) {
    let n: usize = 1 << 20;
    let blocks = n.div_ceil(basic::BLOCK);
    for target in rocm_bench::targets() {
        let device = target.device();
        let prepared = device.load(basic::KERNELS).and_then(|module| {
            let kernel = module.kernel("block_sum")?;
            let x = device.upload(&vec![1.0f32; n])?;
            let partial = device.alloc::<f32>(blocks)?;
            let stream = device.stream()?;
            Ok((kernel, x, partial, stream))
        });
        let (kernel, x, mut partial, stream) = match prepared {
            Ok(p) => p,
            Err(e) => {
                eprintln!("skipping block_sum on {}: {e}", target.place());
                continue;
            }
        };
        let mut group = rocm_bench::DeviceGroup::new(c, "block_sum", &target);
        // Read x, write one partial sum per block.
        let bytes = (n + blocks) * std::mem::size_of::<f32>();
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_launches("n=1M", &stream, |s| {
            kernel
                .launch(LaunchConfig::cover(n, basic::BLOCK as u32))
                .arg(&x)
                .arg(&mut partial)
                .arg(&(n as i32))
                .bytes(bytes as u64)
                .flops(n as u64)
                .run(s)
        });
        group.finish();
    }
}

criterion_group!(benches, saxpy, block_sum);
criterion_main!(benches);
