//! gpu-stream: init, read, scale, triad, 1-D 3- and 5-point stencils over one element per thread,
//! for block sizes 32 to 1024 in steps of 32 (two blocks per multiprocessor, as the original
//! limits occupancy); each the median of 9 repetitions of two launches; GB/s of the bytes each
//! kernel must move (1, 1, 2, 3, 2, 2 buffers).

use rocm_kernels::runtime::{LaunchConfig, Result};

use crate::series::Series;
use crate::{Ctx, Point};

const KERNELS: &[(&str, &str, u64)] = &[
    ("init", "stream_init", 1),
    ("read", "stream_read", 1),
    ("scale", "stream_scale", 2),
    ("triad", "stream_triad", 3),
    ("3pt", "stream_3pt", 2),
    ("5pt", "stream_5pt", 2),
];

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let n: usize = if ctx.small {
        (1 << 20) + 2
    } else {
        128 * 1024 * 1024 + 2
    };
    let device = ctx.target.device().clone();
    let mut a = device.alloc::<f64>(n)?;
    let mut b = device.alloc::<f64>(n)?;
    let mut c = device.alloc::<f64>(n)?;
    for buf in [&mut a, &mut b, &mut c] {
        buf.fill(1.1)?;
    }
    let blocks_per_sm = 2u32;
    let sizes: Vec<u32> = if ctx.small {
        vec![64, 256, 1024]
    } else {
        (1..=32).map(|i| i * 32).collect()
    };
    ctx.line("blockSize   threads       %occ  |                init       read       scale     triad       3pt        5pt");
    let kernels: Vec<_> = KERNELS
        .iter()
        .map(|(label, name, streams)| Ok((*label, ctx.kernel(name)?, *streams)))
        .collect::<Result<_>>()?;
    let reps = 9;
    for &block in &sizes {
        if block * blocks_per_sm > ctx.threads_per_sm {
            continue;
        }
        let mut row = format!(
            "{block:>9}   {:>9}  {:>5.1} %  |  GB/s: ",
            ctx.sm_count * block,
            (block * blocks_per_sm) as f64 / ctx.threads_per_sm as f64 * 100.0
        );
        for (label, kernel, streams) in &kernels {
            let config = LaunchConfig::new((n as u32 / block + 1, 1, 1), (block, 1, 1));
            let mut launch = |s: &rocm_kernels::runtime::Stream| {
                kernel
                    .launch(config)
                    .arg(&mut a)
                    .arg(&b)
                    .arg(&c)
                    .arg(&(n as i64))
                    .arg(&0i32)
                    .run(s)
            };
            launch(&ctx.stream)?;
            let mut time = Series::default();
            for _ in 0..reps {
                time.add(ctx.time(2, &mut launch)? / 2.0);
            }
            let bytes = (*streams * n as u64 * 8) as f64;
            row.push_str(&format!(" {:>10.0}", bytes / time.median() * 1e-9));
            ctx.record(Point {
                bench: "gpu-stream",
                variant: Some(label),
                param: "block_size",
                value: block as u64,
                unit: "ns",
                samples: time.0.iter().map(|t| t * 1e9).collect(),
                bytes: Some(bytes),
            });
        }
        ctx.line(row);
    }
    Ok(())
}
