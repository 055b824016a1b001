//! A trivial kernel for measuring the harness's overhead per trial (`benches/overhead.rs`).

/// The kernel library (`copy`).
pub static KERNELS: &rocm_kernels::KernelLibrary = rocm_kernels::include_kernels!("bench");
