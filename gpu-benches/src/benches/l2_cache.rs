//! gpu-l2-cache: 200 000 blocks of 1024 threads, each reading 512 kB (64 doubles a thread) of a
//! data set of `block_run` such slices shared by every multiprocessor: the L2 plateau and the
//! drop to DRAM as the data set grows. 11 repetitions; the minimum time, its spread.

use rocm_kernels::runtime::{LaunchConfig, Result};

use super::geometric;
use crate::series::Series;
use crate::{Ctx, Point};

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let block = 1024u32;
    let n = 64u64; // doubles per thread: 512 kB per block
    let (blocks, runs) = if ctx.small {
        (256u32, geometric(3, 64, 2.0))
    } else {
        (200_000u32, geometric(3, 8192, 1.1))
    };
    let kernel = ctx.kernel("l2_sum")?;
    let device = ctx.target.device().clone();
    let reps = if ctx.small { 3 } else { 11 };
    ctx.line("     data set   exec time     spread       Eff. bw");
    for block_run in runs {
        let count = (block_run * block as u64 * n) as usize;
        let mut a = device.alloc::<f64>(count)?;
        let mut b = device.alloc::<f64>(count)?;
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
                    .arg(&(block_run as i32))
                    .run(s)
            })?);
        }
        let block_bytes = (n * block as u64 * 8) as f64;
        let bytes = block_bytes * blocks as f64;
        ctx.line(format!(
            "{:>10} kB {:>10} kB {:>9.0}ms {:>9.1}% {:>9.1} GB/s",
            block_bytes as u64 / 1024,
            block_bytes as u64 * block_run / 1024,
            time.min() * 1e3,
            time.spread() * 100.0,
            bytes / time.min() / 1e9
        ));
        ctx.record(Point {
            bench: "gpu-l2-cache",
            variant: None,
            param: "data_set_bytes",
            value: block_bytes as u64 * block_run,
            unit: "ns",
            samples: time.0.iter().map(|t| t * 1e9).collect(),
            bytes: Some(bytes),
        });
    }
    Ok(())
}
