//! gpu-small-kernels: the original's scale kernel (one double a thread) over data sets from
//! 64 kB up, launched back to back with the two buffers swapped between launches, block sizes
//! 32 to 1024: the time per launch shows the launch rate where the kernels are small and the
//! bandwidth where they are large. As the original: sizes from 4096 doubles in steps of 6%,
//! a grid of `size / block + 1` blocks, `min(30000, max(2000, 10⁹ / size))` launches per
//! repetition after one warm-up launch, the median of 3 repetitions, and GB/s counted as
//! `2 · 8 · size` bytes per launch.

use rocm_kernels::runtime::{LaunchConfig, Result};

use crate::series::Series;
use crate::{Ctx, Point};

/// The original's data-set sizes (doubles): from 4096 up in steps of 6%, below 2²⁷.
pub fn sizes() -> Vec<u64> {
    let mut v = Vec::new();
    let mut d: u64 = 4 * 1024;
    while d < 8 * 16 * 1024 * 1024 {
        v.push(d);
        d += ((d as f64 * 0.06) as u64).max(1);
    }
    v
}

/// Launches per repetition at `size` doubles, as the original.
pub fn iterations(size: u64) -> u64 {
    (100_000 * 10_000 / size.max(1)).clamp(2000, 30_000)
}

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let device = ctx.target.device().clone();
    let kernel = ctx.kernel("small_kernels_scale")?;
    let (sizes, blocks): (Vec<u64>, Vec<u32>) = if ctx.small {
        (vec![4 * 1024, 32 * 1024, 256 * 1024], vec![256])
    } else {
        (sizes(), vec![32, 64, 128, 256, 512, 1024])
    };
    let max = *sizes.last().unwrap() as usize;
    let mut a = device.alloc::<f64>(max)?;
    let mut b = device.alloc::<f64>(max)?;
    ctx.fill(&mut a, 0.23)?;
    ctx.fill(&mut b, 1.44)?;
    let mut header = String::from("      doubles       kB  |");
    for blk in &blocks {
        header.push_str(&format!(" {blk:>6}"));
    }
    ctx.line(header + "   (GB/s by block size; µs per launch at 256 below)");
    for size in sizes {
        let iters = if ctx.small { 20 } else { iterations(size) };
        let mut row = format!("{size:>13} {:>8}  |", size * 16 / 1024);
        let mut at256 = 0.0;
        for &blk in &blocks {
            let grid = u32::try_from(size / u64::from(blk) + 1).unwrap_or(u32::MAX);
            let config = LaunchConfig::new((grid, 1, 1), (blk, 1, 1));
            let n = size as i32;
            kernel
                .launch(config)
                .arg(&mut a)
                .arg(&b)
                .arg(&n)
                .run(&ctx.stream)?;
            let mut time = Series::default();
            for _ in 0..3 {
                let mut flip = false;
                let t = ctx.time(iters, |s| {
                    flip = !flip;
                    let (dst, src) = if flip { (&mut a, &b) } else { (&mut b, &a) };
                    kernel.launch(config).arg(dst).arg(src).arg(&n).run(s)
                })?;
                time.add(t / iters as f64);
            }
            let bytes = (size * 16) as f64;
            row.push_str(&format!(" {:>6.0}", bytes / time.median() / 1e9));
            if blk == 256 {
                at256 = time.median() * 1e6;
            }
            ctx.record(Point {
                bench: "gpu-small-kernels",
                variant: Some(&format!("block{blk}")),
                param: "doubles",
                value: size,
                unit: "ns",
                samples: time.0.iter().map(|t| t * 1e9).collect(),
                bytes: Some(bytes),
            });
        }
        ctx.line(format!("{row}   {at256:.2} µs"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_originals_sweep() {
        let sizes = super::sizes();
        // The original's first rows: 4096, 4341, 4601, 4877, 5169 doubles (its H200 table).
        assert_eq!(sizes[..5], [4096, 4341, 4601, 4877, 5169]);
        assert!(*sizes.last().unwrap() < 8 * 16 * 1024 * 1024);
        assert_eq!(super::iterations(4096), 30_000);
        assert_eq!(super::iterations(100_000), 10_000);
        assert_eq!(super::iterations(100_000_000), 2000);
    }
}
