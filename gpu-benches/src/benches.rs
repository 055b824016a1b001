//! The benchmarks, one module each, in the order the suite runs them.

mod cache;
mod l2_cache;
pub mod latency;
mod memcpy;
mod roofline;
mod small_kernels;
mod stream;
mod strides;

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
