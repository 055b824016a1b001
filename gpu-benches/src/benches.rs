//! The benchmarks, one module each, in the order the suite runs them.

pub mod cache;
pub mod l2_cache;
pub mod latency;
pub mod memcpy;
pub mod roofline;
pub mod small_kernels;
pub mod stream;
pub mod strides;

use rocm_kernels::runtime::Result;

use crate::Ctx;

/// A benchmark: its name (the original's directory) and what runs it.
pub type Bench = (&'static str, fn(&mut Ctx) -> Result<()>);

/// Every benchmark of the suite.
pub const ALL: &[Bench] = &[
    ("gpu-stream", stream::run),
    ("gpu-cache", cache::run),
    ("gpu-l2-cache", l2_cache::run),
    ("gpu-latency", latency::run),
    ("gpu-strides", strides::run),
    ("gpu-small-kernels", small_kernels::run),
    ("gpu-roofline", roofline::run),
    ("cuda-memcpy", memcpy::run),
];

/// `n` with every `step`-th point of a geometric series from `lo` to `hi` (both included).
pub fn geometric(lo: u64, hi: u64, factor: f64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut x = lo as f64;
    while (x as u64) < hi {
        let n = x as u64;
        if v.last() != Some(&n) {
            v.push(n);
        }
        x = (x * factor).max(x + 1.0);
    }
    v.push(hi);
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn geometric_series() {
        assert_eq!(super::geometric(1, 10, 2.0), [1, 2, 4, 8, 10]);
        assert_eq!(super::geometric(3, 4, 1.01), [3, 4]);
    }
}
