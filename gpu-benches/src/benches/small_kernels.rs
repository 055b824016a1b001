//! gpu-small-kernels: a scale kernel over data sets from 32 kB up, launched back to back (two
//! buffers swapped between launches), block sizes 32 to 1024: the time per launch shows the
//! launch rate where the kernels are small and the bandwidth where they are large. The median
//! of 3 repetitions of `iters` launches.

use rocm_kernels::runtime::{LaunchConfig, Result};

use super::geometric;
use crate::series::Series;
use crate::{Ctx, Point};

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let device = ctx.target.device().clone();
    let kernel = ctx.kernel("small_scale")?;
    let (sizes, blocks, iters) = if ctx.small {
        (geometric(4 * 1024, 256 * 1024, 8.0), vec![256u32], 20u64)
    } else {
        (
            geometric(4 * 1024, 8 * 16 * 1024 * 1024, 1.5),
            vec![32, 64, 128, 256, 512, 1024],
            1000,
        )
    };
    let max = *sizes.last().unwrap() as usize;
    let mut a = device.alloc::<f64>(max)?;
    let mut b = device.alloc::<f64>(max)?;
    a.fill(1.1)?;
    b.fill(1.1)?;
    let mut header = String::from("      doubles       kB  |");
    for blk in &blocks {
        header.push_str(&format!(" {blk:>6}"));
    }
    ctx.line(header + "   (GB/s by block size; µs per launch at 256 below)");
    for size in sizes {
        let mut row = format!("{size:>13} {:>8}  |", size * 16 / 1024);
        let mut at256 = 0.0;
        for &blk in &blocks {
            let grid = ((size as u32).div_ceil(blk)).min(ctx.sm_count * 2048 / blk);
            let config = LaunchConfig::new((grid.max(1), 1, 1), (blk, 1, 1));
            let mut time = Series::default();
            for _ in 0..3 {
                let mut flip = false;
                let t = ctx.time(iters, |s| {
                    flip = !flip;
                    let (dst, src) = if flip { (&mut a, &b) } else { (&mut b, &a) };
                    kernel
                        .launch(config)
                        .arg(dst)
                        .arg(src)
                        .arg(&(size as i64))
                        .run(s)
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
