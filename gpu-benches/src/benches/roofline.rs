//! gpu-roofline: one read and one write per element with `iters` dependent multiply-adds
//! between them (2 flops each): from memory bound to compute bound. 5 repetitions; the minimum;
//! GB/s and GFLOP/s (double precision).

use rocm_kernels::runtime::{LaunchConfig, Result};

use crate::series::Series;
use crate::{Ctx, Point};

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let n: usize = if ctx.small { 1 << 18 } else { 1 << 26 };
    let device = ctx.target.device().clone();
    let kernel = ctx.kernel("roofline")?;
    let mut a = device.alloc::<f64>(n)?;
    let mut b = device.alloc::<f64>(n)?;
    b.fill(1.1)?;
    let iters: Vec<u64> = if ctx.small {
        vec![0, 4, 32]
    } else {
        vec![0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    };
    let config = LaunchConfig::new((ctx.sm_count * 8, 1, 1), (256, 1, 1));
    ctx.line("   flop/B   exec time       GB/s    GFLOP/s");
    for k in iters {
        let mut time = Series::default();
        for _ in 0..5 {
            time.add(ctx.time(1, |s| {
                kernel
                    .launch(config)
                    .arg(&mut a)
                    .arg(&b)
                    .arg(&(n as i64))
                    .arg(&(k as i32))
                    .run(s)
            })?);
        }
        let bytes = (n * 16) as f64;
        let flops = (n as u64 * 2 * k) as f64;
        ctx.line(format!(
            "{:>9.3} {:>9.3}ms {:>10.1} {:>10.1}",
            flops / bytes,
            time.min() * 1e3,
            bytes / time.min() / 1e9,
            flops / time.min() / 1e9
        ));
        ctx.record(Point {
            bench: "gpu-roofline",
            variant: None,
            param: "flops_per_element",
            value: 2 * k,
            unit: "ns",
            samples: time.0.iter().map(|t| t * 1e9).collect(),
            bytes: Some(bytes),
        });
    }
    Ok(())
}
