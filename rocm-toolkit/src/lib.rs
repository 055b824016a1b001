//! `rocm-toolkit`: the machinery `cargo rocm` and the kernel builder share.
//!
//! * [`home`]: the cargo-rocm home (`$CARGO_ROCM_HOME`), `settings.toml`, `rocm-toolchain.toml`,
//!   and which toolchain a crate uses (pins, overrides).
//! * [`toolchain`]: ROCm installs on this machine (compiler, device libraries, targets).
//! * [`detect`]: the compute devices of this machine.
//! * [`nvcc`]: finding nvcc and compiling with it.
//! * [`process`]: running probe programs with a time limit.

pub mod detect;
pub mod home;
pub mod nvcc;
pub mod process;
pub mod toolchain;
