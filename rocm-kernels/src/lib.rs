//! `rocm-kernels`: the build-time and run-time half of cargo-rocm.
//!
//! * [`toolchain`] finds ROCm installs (compiler, device libraries, targets).
//! * [`home`] is the cargo-rocm home and which toolchain a crate uses (pins, overrides).
//! * [`detect`] finds the compute devices of this machine.
//! * [`embedded`] is the data a build script embeds into the user's crate.

pub mod detect;
pub mod embedded;
pub mod home;
pub mod toolchain;

pub use embedded::{Backend, KernelLibrary};
