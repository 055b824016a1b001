//! Kernel timings with criterion, on the first GPU found (else the cpu backend):
//! `cargo bench` (or `cargo rocm bench`).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rocm_kernels::runtime::{Device, LaunchConfig};

fn saxpy(c: &mut Criterion) {
    let device = Device::default();
    let n: usize = 1 << 20;
    let prepared = device.load({{crate_name}}::KERNELS).and_then(|module| {
        let kernel = module.kernel("saxpy")?;
        let x = device.upload(&vec![1.0f32; n])?;
        let y = device.upload(&vec![2.0f32; n])?;
        let stream = device.stream()?;
        Ok((kernel, x, y, stream))
    });
    let (kernel, x, mut y, stream) = match prepared {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "skipping the saxpy benchmark on {}: {e}",
                device.info().name
            );
            return;
        }
    };
    let mut group = c.benchmark_group(format!("saxpy/{}", device.info().name));
    group.throughput(Throughput::Bytes(
        (3 * n * std::mem::size_of::<f32>()) as u64,
    ));
    group.bench_function("n=1M", |b| {
        b.iter(|| {
            kernel
                .launch(LaunchConfig::cover(n, 256))
                .arg(&(n as i32))
                .arg(&2.0f32)
                .arg(&x)
                .arg(&mut y)
                // What `cargo rocm profile` reports bandwidth and FLOP rate from.
                .bytes((3 * n * std::mem::size_of::<f32>()) as u64)
                .flops(2 * n as u64)
                .run(&stream)
                .and_then(|()| stream.synchronize())
                .expect("saxpy launch")
        })
    });
    group.finish();
}

fn block_sum(c: &mut Criterion) {
    let device = Device::default();
    let n: usize = 1 << 20;
    let blocks = n.div_ceil({{crate_name}}::BLOCK);
    let prepared = device.load({{crate_name}}::KERNELS).and_then(|module| {
        let kernel = module.kernel("block_sum")?;
        let x = device.upload(&vec![1.0f32; n])?;
        let partial = device.alloc::<f32>(blocks)?;
        let stream = device.stream()?;
        Ok((kernel, x, partial, stream))
    });
    let (kernel, x, mut partial, stream) = match prepared {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "skipping the block_sum benchmark on {}: {e}",
                device.info().name
            );
            return;
        }
    };
    let mut group = c.benchmark_group(format!("block_sum/{}", device.info().name));
    group.throughput(Throughput::Bytes((n * std::mem::size_of::<f32>()) as u64));
    group.bench_function("n=1M", |b| {
        b.iter(|| {
            kernel
                .launch(LaunchConfig::cover(n, {{crate_name}}::BLOCK as u32))
                .arg(&x)
                .arg(&mut partial)
                .arg(&(n as i32))
                .bytes(((n + blocks) * std::mem::size_of::<f32>()) as u64)
                .flops(n as u64)
                .run(&stream)
                .and_then(|()| stream.synchronize())
                .expect("block_sum launch")
        })
    });
    group.finish();
}

criterion_group!(benches, saxpy, block_sum);
criterion_main!(benches);
