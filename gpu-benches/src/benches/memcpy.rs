//! cuda-memcpy: host-to-device copies of 128 kB to 512 MB (×16 a step) from page-locked host
//! memory, as the original (`cudaMallocHost`, one copy per sample, timed on the host around the
//! copy and its synchronisation, the host buffer overwritten before each sample; 5 samples, the
//! mean without the extremes). The original measures only that; this port adds, for the same
//! sizes, host-to-device from pageable memory (a `Vec`) and device-to-host from both, each its own
//! variant in the history (`h2d-pinned`, `h2d-pageable`, `d2h-pinned`, `d2h-pageable`).

use std::time::Instant;

use rocm_kernels::runtime::{Buffer, Result};

use crate::series::Series;
use crate::{Ctx, Point};

/// Samples per size and direction (the original's 5).
pub const SAMPLES: usize = 5;

/// The original's transfer sizes: `2 << 16` bytes, ×16 while at most 2 GB (its buffer); 512 MB is
/// the last. With `small`, the first two.
pub fn sizes(small: bool) -> Vec<u64> {
    let mut v = Vec::new();
    let mut bytes: u64 = 2 << 16;
    while bytes <= 2 << 30 {
        v.push(bytes);
        bytes *= 16;
    }
    if small {
        v.truncate(2);
    }
    v
}

/// One copy direction and kind of host memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    pub upload: bool,
    pub pinned: bool,
}

impl Variant {
    /// In the order the table prints them; the first is the original's.
    pub const ALL: [Variant; 4] = [
        Variant {
            upload: true,
            pinned: true,
        },
        Variant {
            upload: true,
            pinned: false,
        },
        Variant {
            upload: false,
            pinned: true,
        },
        Variant {
            upload: false,
            pinned: false,
        },
    ];

    /// The history's variant name.
    pub fn name(self) -> &'static str {
        match (self.upload, self.pinned) {
            (true, true) => "h2d-pinned",
            (true, false) => "h2d-pageable",
            (false, true) => "d2h-pinned",
            (false, false) => "d2h-pageable",
        }
    }
}

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let device = ctx.target.device().clone();
    let sizes = sizes(ctx.small);
    let largest = *sizes.last().unwrap_or(&0) as usize;
    // One device buffer, one pinned and one pageable host buffer of the largest size, as the
    // original allocates its buffers once; each copy uses their first `bytes`.
    let mut pinned = device.alloc_host::<u8>(largest)?;
    let mut pageable = vec![0u8; largest];
    let mut on_device = device.alloc::<u8>(largest)?;
    ctx.line(format!(
        "variant                size       time         GB/s   spread   (h2d-pinned is the \
         original's; mean of {SAMPLES} without the extremes)"
    ));
    for &bytes in &sizes {
        let n = bytes as usize;
        // Copies of exactly `bytes`: a buffer of that size over the front of the large one is
        // not expressible, so size-matched device buffers are taken for the smaller sizes.
        let mut sized: Option<Buffer<u8>> =
            (n != largest).then(|| device.alloc::<u8>(n)).transpose()?;
        let target = sized.as_mut().unwrap_or(&mut on_device);
        for variant in Variant::ALL {
            let mut time = Series::default();
            for _ in 0..SAMPLES {
                // The original overwrites its whole host buffer before every sample (outside
                // the timing), so the front that is copied is not in the CPU's caches.
                let whole: &mut [u8] = if variant.pinned {
                    &mut pinned
                } else {
                    &mut pageable
                };
                whole.fill(0);
                let host = &mut whole[..n];
                let t0 = Instant::now();
                if variant.upload {
                    target.upload(host)?;
                } else {
                    target.download(host)?;
                }
                time.add(t0.elapsed().as_secs_f64());
            }
            ctx.line(format!(
                "{:<14} {:>10}kB {:>8.2}ms {:>9.2}GB/s {:>6.2}%",
                variant.name(),
                bytes >> 10,
                time.value() * 1e3,
                bytes as f64 / time.value() / 1e9,
                time.spread() * 100.0
            ));
            ctx.record(Point {
                bench: "cuda-memcpy",
                variant: Some(variant.name()),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_originals_sizes() {
        assert_eq!(sizes(false), [128 << 10, 2 << 20, 32 << 20, 512 << 20]);
        assert_eq!(sizes(true), [128 << 10, 2 << 20]);
    }

    #[test]
    fn variants_have_distinct_names_and_the_original_comes_first() {
        let names: Vec<_> = Variant::ALL.iter().map(|v| v.name()).collect();
        assert_eq!(
            names,
            ["h2d-pinned", "h2d-pageable", "d2h-pinned", "d2h-pageable"]
        );
    }
}
