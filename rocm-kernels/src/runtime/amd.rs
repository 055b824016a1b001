//! The amd backend's lower layers, public on purpose as cudarc's `sys` and `result` are: which
//! `libamdhip64` to open ([`HIP_LIB_ENV`], [`library_candidates`], [`HipLibrary`]), the devices
//! over an opened one ([`devices`]), and HIP's C ABI ([`sys`]). For tools and tests that run the
//! backend over a chosen or stand-in library; [`Device::probe`](super::Device::probe) is the way
//! in otherwise. Run-time compiles (hipRTC) are in [`rtc::amd`](super::rtc::amd).

pub use super::backend::amd::{devices, library_candidates, sys, HipLibrary, HIP_LIB_ENV};
