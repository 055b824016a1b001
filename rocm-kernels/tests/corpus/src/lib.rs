//! Kernel libraries for rocm-kernels' cpu-backend tests and benchmarks, built by its cpu build
//! path: `FEATURES` (the kernel-language corpus), `BUGS` (planted bugs the backend must catch),
//! `BENCH` (the benchmark kernels).

include!(concat!(env!("OUT_DIR"), "/corpus.rs"));
