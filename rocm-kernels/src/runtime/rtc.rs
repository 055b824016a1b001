//! Compiling kernels at run time, without a device: NVRTC for NVIDIA targets, hipRTC for AMD
//! ones. This is the runtime's deliberate door to its compilers: `cargo rocm tune` compiles each
//! configuration of compile-time parameters with it, and `cargo rocm doctor` checks NVRTC. A
//! kernel crate does not need it (its kernels come compiled from its build). What a compile
//! gives is an [`RtcImage`]; embed it in a [`KernelLibrary`](crate::KernelLibrary) as a code
//! object to load it.

pub use super::backend::RtcImage;

/// NVRTC, the CUDA run-time compiler (loaded at run time; a missing one is a
/// [`RuntimeError::LibraryLoad`](super::RuntimeError::LibraryLoad) saying what to install).
pub mod nvidia {
    pub use crate::runtime::backend::nvidia::{check_nvrtc, compile_at_run_time, nvrtc_version};
}

/// hipRTC, ROCm's run-time compiler (`libhiprtc`, loaded at run time).
pub mod amd {
    pub use crate::runtime::backend::amd::{compile_at_run_time, hiprtc_version};
}
