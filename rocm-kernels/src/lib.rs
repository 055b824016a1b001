//! `rocm-kernels`: the build-time and run-time half of cargo-rocm.
//!
//! * [`toolchain`] finds ROCm installs (compiler, device libraries, targets).
//! * [`home`] is the cargo-rocm home and which toolchain a crate uses (pins, overrides).
//! * [`build_manifest`] lists what a build script compiled (read by `cargo rocm build`).
//! * [`code_object`] reads compiled code objects (bundles, AMDGPU ELF, kernel metadata).
//! * [`detect`] finds the compute devices of this machine.
//! * [`embedded`] is the data a build script embeds into the user's crate.
//! * [`process`] runs probe programs with a time limit.

pub mod build;
pub mod build_manifest;
pub mod code_object;
pub mod detect;
pub mod embedded;
pub mod home;
pub mod nvcc;
pub mod process;
pub mod runtime;
pub mod symbols;
pub mod toolchain;

pub use embedded::{Backend, KernelLibrary};
