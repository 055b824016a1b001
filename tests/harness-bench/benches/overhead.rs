//! What one rocm-test trial costs beyond the kernel: the same `copy` of n floats on the cpu
//! backend (wave 64), launched
//! * `raw`: directly through the runtime (upload x, upload y, launch, synchronize, download y);
//! * `trial/fixed`: as a check with explicit inputs (1 case: build the inputs, poison y, the
//!   launch as above, the Rust reference, the element-wise comparison);
//! * `trial/generated`: as a check with generated inputs, 1 case (adds proptest's generation).
//!
//! The overhead per trial is `trial/* − raw`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rocm_kernels::runtime::{CpuOptions, Device, LaunchConfig};
use rocm_test::{gen, Launch, Suite};

const SIZES: [usize; 2] = [256, 65536];

fn suite() -> Suite {
    let mut s = Suite::new(harness_bench::KERNELS);
    for n in SIZES {
        s.check("copy")
            .named(&format!("fixed{n}"))
            .scalar("n", n as i32)
            .input("x", vec![1.5f32; n])
            .output::<f32>("y", n)
            .launch(Launch::cover(n, 256))
            .reference(|i, o| o.buf::<f32>("y").copy_from_slice(i.buf("x")));
        s.check("copy")
            .named(&format!("generated{n}"))
            .size("n", n)
            .scalar("n", gen::size::<i32>("n"))
            .input("x", gen::vec("n", -1.0f32..1.0))
            .output::<f32>("y", "n")
            .launch_with(|i| Launch::cover(i.size("n"), 256))
            .cases(1)
            .reference(|i, o| o.buf::<f32>("y").copy_from_slice(i.buf("x")));
    }
    s
}

fn overhead(c: &mut Criterion) {
    let device = Device::cpu(CpuOptions {
        wave_size: 64,
        ..CpuOptions::from_env()
    });
    let module = match device.load(harness_bench::KERNELS) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("skipping: the cpu backend cannot load the kernels: {e}");
            return;
        }
    };
    let kernel = module.kernel("copy").expect("copy is in the library");
    let suite = suite();
    let mut group = c.benchmark_group("per_trial");
    for n in SIZES {
        let x = vec![1.5f32; n];
        let mut y = vec![0.0f32; n];
        group.bench_with_input(BenchmarkId::new("raw", n), &n, |b, &n| {
            b.iter(|| {
                let xd = device.upload(&x).unwrap();
                let mut yd = device.upload(&y).unwrap();
                let stream = device.stream().unwrap();
                kernel
                    .launch(LaunchConfig::cover(n, 256))
                    .arg(&(n as i32))
                    .arg(&xd)
                    .arg(&mut yd)
                    .run(&stream)
                    .unwrap();
                stream.synchronize().unwrap();
                yd.download(&mut y).unwrap();
            })
        });
        for kind in ["fixed", "generated"] {
            let name = format!("{kind}{n}");
            assert_eq!(suite.run_cpu(&name, 64), Ok(1), "the check passes");
            group.bench_with_input(BenchmarkId::new(format!("trial/{kind}"), n), &n, |b, _| {
                b.iter(|| suite.run_cpu(&name, 64).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
