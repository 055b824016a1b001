//! gpu-cache: every block (one per multiprocessor, 256 threads) sums the same data set over and
//! over (about 10⁹ floats per block), data sets from 1 kB growing by 17%: the plateaus are the
//! first-level cache, L2 and DRAM bandwidth. 15 repetitions; the minimum time, its spread.

use rocm_kernels::runtime::{LaunchConfig, Result};

use crate::series::Series;
use crate::{Ctx, Point};

/// The original's data-set sizes, in floats: 256 to 5·512 by hand, then ×1.17 from 32·512,
/// rounded down to 512 (its `expSeries`), up to about 200 MB.
pub fn sizes(small: bool) -> Vec<u64> {
    let mut v: Vec<u64> = vec![256, 512, 768, 1024, 1536, 2048, 2560];
    let mut x = 32.0 * 512.0;
    let top = if small {
        256.0 * 1024.0
    } else {
        52.0 * 1024.0 * 1024.0
    };
    while x < top {
        let n = (x as u64 / 512) * 512;
        if n > *v.last().unwrap() {
            v.push(n);
        }
        x *= 1.17;
    }
    if small {
        v.retain(|&n| n <= 64 * 1024);
        v.dedup();
        v = v.into_iter().step_by(3).collect();
    }
    v
}

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let block = 256u32;
    let blocks = ctx.sm_count;
    let kernel = ctx.kernel("cache_sum")?;
    let device = ctx.target.device().clone();
    let reps = if ctx.small { 5 } else { 15 };
    ctx.line("     data set   exec time     spread        Eff. bw");
    for n in sizes(ctx.small) {
        let work = if ctx.small { 2.0e6 } else { 1.0e9 };
        let iters = (work / n as f64) as u64 + 2;
        let mut a = device.alloc::<f32>(n as usize)?;
        let mut b = device.alloc::<f32>(n as usize)?;
        a.fill(1.1)?;
        b.fill(1.1)?;
        let mut time = Series::default();
        for _ in 0..reps {
            time.add(ctx.time(1, |s| {
                kernel
                    .launch(LaunchConfig::new((blocks, 1, 1), (block, 1, 1)))
                    .arg(&mut a)
                    .arg(&b)
                    .arg(&(n as i32))
                    .arg(&(iters as i32))
                    .arg(&0i32)
                    .run(s)
            })?);
        }
        let bytes = (n * 4) as f64 * blocks as f64 * iters as f64;
        ctx.line(format!(
            "{:>10} kB {:>9.0}ms {:>9.1}% {:>9.1} GB/s",
            n * 4 / 1024,
            time.value() * 1e3,
            time.spread() * 100.0,
            bytes / time.min() / 1e9
        ));
        ctx.record(Point {
            bench: "gpu-cache",
            variant: None,
            param: "data_set_bytes",
            value: n * 4,
            unit: "ns",
            samples: time.0.iter().map(|t| t * 1e9).collect(),
            bytes: Some(bytes),
        });
    }
    Ok(())
}
