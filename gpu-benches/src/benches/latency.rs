//! gpu-latency: one block of 64 threads chases pointers through a random cycle of `len` entries
//! spaced 8 words (64 bytes) apart, at least 10⁶ steps; data sets from 1 kB growing by 4% (+32
//! entries). 7 repetitions; the minimum; cycles per step at the shader clock.
//!
//! The whole sweep takes minutes on a GPU (each point chases 10⁶ pointers 8 times, and the
//! L2 and DRAM points take 140 to 300 ns a step): `GPU_BENCHES_LATENCY_FROM` (kB) starts it at a
//! larger data set, e.g. to measure the DRAM level alone; the sizes are those the full sweep
//! reaches from there, as the original's.

use rocm_kernels::runtime::{LaunchConfig, Result};

use crate::series::Series;
use crate::{Ctx, Point};

/// A random permutation cycle (xorshift; the chain must only be unpredictable to the hardware).
fn cycle(len: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (1..len).collect();
    let mut s = seed | 1;
    for i in (1..order.len()).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        order.swap(i, (s % (i as u64 + 1)) as usize);
    }
    order
}

/// Words (8 bytes) between two entries of the chain: an entry a 64-byte line.
const SKIP: usize = 8;

pub(crate) fn run(ctx: &mut Ctx) -> Result<()> {
    let device = ctx.target.device().clone();
    let kernel = ctx.kernel("pchase")?;
    let clock = ctx.clock_mhz.unwrap_or(0.0);
    let (top, min_steps) = if ctx.small {
        (1 << 14, 20_000i64)
    } else {
        (1 << 24, 1_000_000i64)
    };
    let mut dummy = device.alloc::<i64>(1)?;
    ctx.line(format!("clock: {clock:.0}"));
    // The bench binary refused an unreadable value before any benchmark ran.
    let from_kb = from_kb().unwrap_or(0);
    let mut len = 16usize;
    while len < top {
        if len * SKIP * 8 / 1024 < from_kb {
            len = next_len(len, ctx.small);
            continue;
        }
        let steps = (len as i64).max(min_steps);
        let mut buf = device.alloc::<i64>(len * SKIP)?;
        let base = buf.device_ptr() as i64;
        // Entry k of the cycle holds the address of the next one.
        let mut host = vec![0i64; len * SKIP];
        let order = cycle(len, len as u64);
        let mut at = 0usize;
        for &next in &order {
            host[at * SKIP] = base + (next * SKIP * 8) as i64;
            at = next;
        }
        host[at * SKIP] = base;
        buf.upload(&host)?;
        let mut launch = |s: &rocm_kernels::runtime::Stream| {
            kernel
                .launch(LaunchConfig::new((1, 1, 1), (64, 1, 1)))
                .arg(&buf)
                .arg(&mut dummy)
                .arg(&steps)
                .run(s)
        };
        launch(&ctx.stream)?;
        let mut time = Series::default();
        for _ in 0..7 {
            time.add(ctx.time(1, &mut launch)?);
        }
        let dt = time.min();
        let cycles = dt / steps as f64 * clock * 1e6;
        ctx.line(format!(
            "{steps:>9} {clock:>5.0} {:>8} {:>8.1} {cycles:>7.1}",
            len * SKIP * 8 / 1024,
            dt * 1e3
        ));
        ctx.record(Point {
            bench: "gpu-latency",
            variant: None,
            param: "data_set_bytes",
            value: (len * SKIP * 8) as u64,
            unit: if clock > 0.0 { "cycles" } else { "ns" },
            samples: time
                .0
                .iter()
                .map(|t| {
                    if clock > 0.0 {
                        t / steps as f64 * clock * 1e6
                    } else {
                        t / steps as f64 * 1e9
                    }
                })
                .collect(),
            bytes: None,
        });
        len = next_len(len, ctx.small);
    }
    Ok(())
}

/// The chain length after `len`: 4% (doubling in a smoke test) plus 32 entries, and half as
/// much again beyond 120 MB, as the original.
fn next_len(len: usize, small: bool) -> usize {
    let factor = if small { 2.0 } else { 1.04 };
    let mut len = (len as f64 * factor) as usize + 32;
    if !small && len * SKIP * 8 > 120 * 1024 * 1024 {
        len = (len as f64 * 1.5) as usize;
    }
    len
}

/// Names the smallest data set gpu-latency measures, in kB.
pub(crate) const ENV_FROM: &str = "GPU_BENCHES_LATENCY_FROM";

/// `GPU_BENCHES_LATENCY_FROM`'s value (0 when unset), or what is wrong with it.
pub fn from_kb() -> std::result::Result<usize, String> {
    match std::env::var(ENV_FROM) {
        Err(_) => Ok(0),
        Ok(v) => v.trim().parse().map_err(|_| {
            format!("{ENV_FROM}={v} is not a size in kB: give a whole number such as 65536")
        }),
    }
}
