//! Kernel libraries for rocm-kernels' cpu-backend tests and benchmarks, built by
//! `rocm-kernels-build`: `FEATURES` (the kernel-language corpus), `BUGS` (planted bugs the backend must catch),
//! `BENCH` (the benchmark kernels), `SHAPES` (kernel shapes the cpu region form rewrites),
//! `FIDELITY` (real-world HIP: conditional collectives, odd block shapes, functors, lambdas,
//! cooperative groups, AMD intrinsics);
//! each with `<NAME>_EXECUTION`, how the cpu build runs every kernel (`regions`, `fibers: why`,
//! ...).

use rocm_kernels::KernelLibrary;

include!(concat!(env!("OUT_DIR"), "/corpus.rs"));
