//! `rocm-kernels-core`: what a kernel build hands to the runtime and to tools.
//!
//! * [`library`]: the typed description of a compiled kernel library that `rocm-kernels-build`
//!   writes into the user's crate (`include_kernels!`) and the runtime and the test harness read.
//! * [`manifest`]: the same library as a JSON file under `OUT_DIR`, for `cargo rocm`.
//! * [`target`]: AMD target ids and which code runs on which device.
//! * [`wisdom`]: the file `cargo rocm tune` writes (the best configuration per kernel, device and
//!   problem size), which the build compiles in and the runtime chooses from.
//! * [`headers`]: the kernel-language headers (`include/cpu`, `include/nvidia`) both sides compile
//!   against.
//!
//! It depends on nothing heavy: the build script of every user crate and every user binary link it.

pub mod headers;
pub mod library;
pub mod manifest;
pub mod target;
pub mod wisdom;

pub use library::{Backend, KernelLibrary, ObjectFormat};
pub use target::TargetId;
