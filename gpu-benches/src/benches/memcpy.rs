//! cuda-memcpy: host-to-device and device-to-host copies of 128 kB to 512 MB from pageable host
//! memory, timed on the host around the synchronous copy (as the original times
//! `cudaMemcpy`); 9 repetitions, the median, its spread. The runtime has no page-locked host
//! allocation yet, so the pinned rows of the original are not measured here (said in the table).

use std::time::Instant;

use rocm_kernels::runtime::Result;

use crate::series::Series;
use crate::{Ctx, Point};

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let device = ctx.target.device().clone();
    let sizes: Vec<u64> = if ctx.small {
        vec![128 << 10, 2 << 20]
    } else {
        vec![128 << 10, 2 << 20, 32 << 20, 512 << 20]
    };
    ctx.line("direction         size       time        GB/s   spread   (pageable host memory; pinned: not available in the runtime)");
    for bytes in sizes {
        let n = (bytes / 8) as usize;
        let mut host = vec![1.5f64; n];
        let mut buf = device.alloc::<f64>(n)?;
        for (label, upload) in [("host->device", true), ("device->host", false)] {
            let mut time = Series::default();
            for rep in 0..10 {
                let t0 = Instant::now();
                if upload {
                    buf.upload(&host)?;
                } else {
                    buf.download(&mut host)?;
                }
                let dt = t0.elapsed().as_secs_f64();
                if rep > 0 {
                    time.add(dt); // the first copy warms the path up
                }
            }
            ctx.line(format!(
                "{label}  {:>10}kB {:>8.2}ms {:>9.2}GB/s {:>6.2}%",
                bytes / 1024,
                time.median() * 1e3,
                bytes as f64 / time.median() / 1e9,
                time.spread() * 100.0
            ));
            ctx.record(Point {
                bench: "cuda-memcpy",
                variant: Some(if upload {
                    "h2d-pageable"
                } else {
                    "d2h-pageable"
                }),
                param: "bytes",
                value: bytes,
                unit: "ns",
                samples: time.0.iter().map(|t| t * 1e9).collect(),
                bytes: Some(bytes as f64),
            });
        }
    }
    Ok(())
}
