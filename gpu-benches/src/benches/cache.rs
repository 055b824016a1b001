//! gpu-cache: one block of 256 threads per multiprocessor, every block summing the same data set
//! of N elements `10⁹ / N + 2` times, for the original's 82 data-set sizes (1 kB to 140 MB of
//! floats): the plateaus are the first-level cache, L2 and DRAM bandwidth. The kernel is the
//! original's: N and the block size are compile-time constants (`cache_sum<N, 256>`, one
//! instantiation per size in `kernels/gpu_cache.hip`), so each pass is N / 256 unrolled loads per
//! thread. Bandwidth as the original counts it: N × element size × blocks × passes / the fastest of
//! 15 launches; the time column is the mean without the extremes, as the original prints it.

use rocm_kernels::runtime::{Backend, LaunchConfig, Module, Result, RuntimeError};

use crate::series::Series;
use crate::{Ctx, Point};

/// The kernels of this benchmark, a library of their own (82 instantiations that the rest of the
/// suite need not compile).
pub static KERNELS: &rocm_kernels::KernelLibrary = rocm_kernels::include_kernels!("gpu_cache");

/// Threads per block (the original's `blockSize`, a template argument of the kernel).
pub const BLOCK: u32 = 256;

/// The original's `expSeries(n)`: 32·512 multiplied by 1.17 `n` times, truncated to an integer
/// at every step, then rounded down to a multiple of 512.
fn exp_series(n: u32) -> u64 {
    let mut v: u64 = 32 * 512;
    for _ in 0..n {
        v = (v as f64 * 1.17) as u64;
    }
    (v / 512) * 512
}

/// The original's data-set sizes in elements, in its order: 256, 512, 768, then every 512 from
/// 2·512 to 32·512, then `expSeries(1..=49)` without 15 (the original skips it). With
/// `small` (cpu smoke test), every third size up to 16 ki elements.
pub fn sizes(small: bool) -> Vec<u64> {
    let mut v: Vec<u64> = vec![256, 512, 768];
    v.extend((2..=32).map(|k| k * 512));
    v.extend((1..=49).filter(|&n| n != 15).map(exp_series));
    if small {
        v.retain(|&n| n <= 16 * 1024);
        v = v.into_iter().step_by(3).collect();
    }
    v
}

/// Passes over the data set: the original's `iters = 1000000000 / N + 2` (its `work` is 10⁹
/// elements per block); the smoke test does 2·10⁶.
pub fn passes(n: u64, small: bool) -> u64 {
    let work: u64 = if small { 2_000_000 } else { 1_000_000_000 };
    work / n + 2
}

/// The kernel's name for a data set of `n` elements.
pub fn kernel_name(n: u64) -> String {
    format!("cache_sum<{n}, {BLOCK}>")
}

/// Bytes the original counts for one launch: each of `blocks` blocks reads the whole data set
/// once per pass (`blockDV * blockCount * iters`).
pub fn launch_bytes(n: u64, elem_bytes: u64, blocks: u32, passes: u64) -> f64 {
    (n * elem_bytes) as f64 * blocks as f64 * passes as f64
}

/// The element size of the build the module holds: 4 (float), or 16 (float4, HIP on AMD).
fn elem_bytes(ctx: &Ctx, module: &Module) -> Result<u64> {
    let device = ctx.target.device();
    let mut out = device.alloc::<i32>(1)?;
    module
        .kernel("cache_elem_bytes")?
        .launch(LaunchConfig::new((1, 1, 1), (1, 1, 1)))
        .arg(&mut out)
        .run(&ctx.stream)?;
    ctx.stream.synchronize()?;
    let bytes = out.to_vec()?[0];
    let expected = if device.backend() == Backend::Amd {
        16
    } else {
        4
    };
    if bytes != expected {
        return Err(RuntimeError::SizeMismatch(format!(
            "gpu-cache: the kernels were built with {bytes}-byte elements, {expected} expected \
             on {}",
            device.backend()
        )));
    }
    Ok(bytes as u64)
}

pub fn run(ctx: &mut Ctx) -> Result<()> {
    // One block per multiprocessor (the original's `smCount * 1`).
    let blocks = ctx.sm_count;
    let device = ctx.target.device().clone();
    let module = device.load(KERNELS)?;
    let elem = elem_bytes(ctx, &module)?;
    let reps = if ctx.small { 5 } else { 15 };
    ctx.line("     data set   exec time     spread        Eff. bw");
    for n in sizes(ctx.small) {
        let kernel = module.kernel(&kernel_name(n))?;
        let iters = passes(n, ctx.small);
        let floats = (n * elem / 4) as usize;
        let mut a = device.alloc::<f32>(floats)?;
        let mut b = device.alloc::<f32>(floats)?;
        a.fill(1.1)?;
        b.fill(1.1)?;
        let mut time = Series::default();
        for _ in 0..reps {
            time.add(ctx.time(1, |s| {
                kernel
                    .launch(LaunchConfig::new((blocks, 1, 1), (BLOCK, 1, 1)))
                    .arg(&mut a)
                    .arg(&b)
                    .arg(&(iters as i32))
                    .arg(&0i32)
                    .run(s)
            })?);
        }
        let bytes = launch_bytes(n, elem, blocks, iters);
        ctx.line(format!(
            "{:>10} kB {:>9.0}ms {:>9.1}% {:>9.1} GB/s",
            n * elem / 1024,
            time.value() * 1e3,
            time.spread() * 100.0,
            bytes / time.min() / 1e9
        ));
        ctx.record(Point {
            bench: "gpu-cache",
            variant: None,
            param: "data_set_bytes",
            value: n * elem,
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
    fn the_originals_sizes() {
        let v = sizes(false);
        assert_eq!(v.len(), 82, "the original's 82 measure<N>() calls");
        assert_eq!(&v[..8], &[256, 512, 768, 1024, 1536, 2048, 2560, 3072]);
        assert_eq!(v[33], 32 * 512);
        // expSeries(1..=3) and the last, expSeries(49), as the original computes them.
        assert_eq!(&v[34..37], &[18944, 22016, 26112]);
        assert_eq!(*v.last().unwrap(), 35_928_576);
        assert!(v.windows(2).all(|w| w[0] < w[1]));
        // 14 (≈ 107 520) and 16 (≈ 147 456) are there, 15 (≈ 125 952) is not.
        assert!(v.contains(&exp_series(14)) && v.contains(&exp_series(16)));
        assert!(!v.contains(&exp_series(15)));
    }

    #[test]
    fn every_size_has_its_kernel() {
        for n in sizes(false) {
            assert!(
                KERNELS.kernel(&kernel_name(n)).is_some(),
                "{} is not in kernels/gpu_cache.hip's CACHE_SIZES",
                kernel_name(n)
            );
        }
        assert!(KERNELS.kernel("cache_elem_bytes").is_some());
    }

    #[test]
    fn bytes_as_the_original_counts_them() {
        assert_eq!(passes(256, false), 3_906_252);
        assert_eq!(passes(35_928_576, false), 29);
        // 1 kB of floats, 132 SMs, 3 906 252 passes.
        assert_eq!(
            launch_bytes(256, 4, 132, 3_906_252),
            1024.0 * 132.0 * 3_906_252.0
        );
    }
}
