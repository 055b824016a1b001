//! gpu-l2-cache: 200 000 blocks of 1024 threads, each reading 512 kB (64 doubles a thread) of a
//! data set of `block_run` such slices shared by every multiprocessor: the L2 plateau and the
//! drop to DRAM as the data set grows, `block_run` from 3 to 9535 as the original steps it. The
//! kernel is the original's (`l2_sum<64, 1024>`: per-thread count and block size compile-time
//! constants). Bandwidth as the original counts it: 512 kB × blocks / the fastest of 11 launches,
//! which is also the time column.

use rocm_kernels::runtime::{LaunchConfig, Result};

use crate::series::Series;
use crate::{Ctx, Point};

/// Threads per block and doubles per thread (template arguments of the kernel).
pub const BLOCK: u32 = 1024;
pub const N: u64 = 64;

/// The original's sweep of `blockRun`: `for (int i = 3; i < 10000; i += max(1.0, i * 0.1))`,
/// the sum truncated to an int each step. With `small`, every fourth value up to 64.
pub fn block_runs(small: bool) -> Vec<u64> {
    let mut v = Vec::new();
    let mut i: u64 = 3;
    while i < 10_000 {
        v.push(i);
        i = (i as f64 + (i as f64 * 0.1).max(1.0)) as u64;
    }
    if small {
        v.retain(|&r| r <= 64);
        v = v.into_iter().step_by(4).collect();
    }
    v
}

/// Bytes the original counts for one launch: every block reads its 512 kB slice once
/// (`blockDV * blockCount`).
pub fn launch_bytes(blocks: u32) -> f64 {
    (N * BLOCK as u64 * 8) as f64 * blocks as f64
}

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let blocks: u32 = if ctx.small { 256 } else { 200_000 };
    let kernel = ctx.kernel(&format!("l2_sum<{N}, {BLOCK}>"))?;
    let device = ctx.target.device().clone();
    let reps = if ctx.small { 3 } else { 11 };
    ctx.line("     data set   exec time     spread       Eff. bw");
    for block_run in block_runs(ctx.small) {
        let count = (block_run * BLOCK as u64 * N) as usize;
        let mut a = device.alloc::<f64>(count)?;
        let mut b = device.alloc::<f64>(count)?;
        ctx.fill(&mut a, 1.1)?;
        ctx.fill(&mut b, 1.1)?;
        let mut time = Series::default();
        for _ in 0..reps {
            time.add(ctx.time(1, |s| {
                kernel
                    .launch(LaunchConfig::new((blocks, 1, 1), (BLOCK, 1, 1)))
                    .arg(&mut a)
                    .arg(&b)
                    .arg(&(block_run as i32))
                    .run(s)
            })?);
        }
        let block_bytes = N * BLOCK as u64 * 8;
        let bytes = launch_bytes(blocks);
        ctx.line(format!(
            "{:>10} kB {:>10} kB {:>9.0}ms {:>9.1}% {:>9.1} GB/s",
            block_bytes / 1024,
            block_bytes * block_run / 1024,
            time.min() * 1e3,
            time.spread() * 100.0,
            bytes / time.min() / 1e9
        ));
        ctx.record(Point {
            bench: "gpu-l2-cache",
            variant: None,
            param: "data_set_bytes",
            value: block_bytes * block_run,
            unit: "ns",
            samples: time.0.iter().map(|t| t * 1e9).collect(),
            bytes: Some(bytes),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_originals_sweep() {
        let v = block_runs(false);
        assert_eq!(v.len(), 85);
        assert_eq!(&v[..3], &[3, 4, 5]);
        // 10 + 1.0, 20 + 2.0, 22 + 2.2 → 24 (truncated), as in the original's output.
        assert!(v.contains(&11) && v.contains(&22) && v.contains(&24) && !v.contains(&23));
        assert_eq!(*v.last().unwrap(), 9535);
        // The largest index the kernel computes in `int` fits.
        let last = *v.last().unwrap();
        assert!((BLOCK as u64 * last * (N / 2) + last * BLOCK as u64) * 2 < i32::MAX as u64);
    }

    #[test]
    fn bytes_as_the_original_counts_them() {
        assert_eq!(launch_bytes(200_000), 512.0 * 1024.0 * 200_000.0);
    }
}
