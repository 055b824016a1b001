//! `rocm-kernels`: the build-time and run-time half of cargo-rocm.
//!
//! * [`toolchain`] finds ROCm installs (compiler, device libraries, targets).
//! * [`detect`] finds the compute devices of this machine.
//! * [`embedded`] is the data a build script embeds into the user's crate.
//! * [`process`] runs probe programs with a time limit.

pub mod build;
pub mod detect;
pub mod embedded;
pub mod nvcc;
pub mod process;
pub mod runtime;
pub mod symbols;
pub mod toolchain;

pub use embedded::{Backend, KernelLibrary};
