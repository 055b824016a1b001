//! gpu-strides: each thread reads one double at `stride` × its index, strides 1 to 64: how
//! bandwidth falls once a warp's accesses span more cache lines and sectors. 9 repetitions; the
//! minimum; GB/s of the bytes asked for and of the 32-byte sectors touched.

use rocm_kernels::runtime::{LaunchConfig, Result};

use crate::series::Series;
use crate::{Ctx, Point};

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let n: usize = if ctx.small { 1 << 22 } else { 1 << 28 };
    let device = ctx.target.device().clone();
    let kernel = ctx.kernel("strided_read")?;
    let mut a = device.alloc::<f64>(n)?;
    let mut b = device.alloc::<f64>(n)?;
    b.fill(1.1)?;
    let strides: Vec<u64> = if ctx.small {
        vec![1, 4, 16, 64]
    } else {
        (1..=64).collect()
    };
    ctx.line("  stride   exec time    GB/s(asked)  GB/s(sectors)");
    for stride in strides {
        let threads = (n as u64).div_ceil(stride);
        let config = LaunchConfig::new(((threads as u32).div_ceil(256), 1, 1), (256, 1, 1));
        let mut time = Series::default();
        for _ in 0..9 {
            time.add(ctx.time(1, |s| {
                kernel
                    .launch(config)
                    .arg(&mut a)
                    .arg(&b)
                    .arg(&(n as i64))
                    .arg(&(stride as i32))
                    .run(s)
            })?);
        }
        let asked = (threads * 8) as f64;
        let sectors = threads as f64 * (8.0 * stride as f64).clamp(8.0, 32.0);
        ctx.line(format!(
            "{stride:>8} {:>9.3}ms {:>14.1} {:>14.1}",
            time.min() * 1e3,
            asked / time.min() / 1e9,
            sectors / time.min() / 1e9
        ));
        ctx.record(Point {
            bench: "gpu-strides",
            variant: None,
            param: "stride",
            value: stride,
            unit: "ns",
            samples: time.0.iter().map(|t| t * 1e9).collect(),
            bytes: Some(asked),
        });
    }
    Ok(())
}
