//! `rocm-kernels`: the build-time and run-time half of cargo-rocm.
//!
//! * [`toolchain`] finds ROCm installs (compiler, device libraries, targets).
//! * [`home`] is the cargo-rocm home and which toolchain a crate uses (pins, overrides).
//! * [`build_manifest`] lists what a build script compiled (read by `cargo rocm build`).
//! * [`code_object`] reads compiled code objects (bundles, AMDGPU ELF, kernel metadata).
//! * [`detect`] finds the compute devices of this machine.
//! * [`embedded`] is the data a build script embeds into the user's crate.
//! * [`process`] runs probe programs with a time limit.
//! * [`build`] compiles kernels from `build.rs` ([`Build`]); [`include_kernels!`] embeds them.

pub mod build;
pub mod build_manifest;
pub mod code_object;
pub mod detect;
pub mod embedded;
pub mod headers;
pub mod home;
pub mod nvcc;
pub mod process;
pub mod runtime;
pub mod symbols;
pub mod toolchain;

pub use build::Build;
pub use embedded::{Backend, KernelLibrary};

/// The kernels a build script compiled with `Build::compile(name)`, as a
/// `&'static rocm_kernels::KernelLibrary`.
///
/// Expands to an `include!` of `$OUT_DIR/<name>.rs` inside a block, so it can be used anywhere
/// an expression can:
///
/// ```ignore
/// static KERNELS: &rocm_kernels::KernelLibrary = rocm_kernels::include_kernels!("kernels");
/// ```
#[macro_export]
macro_rules! include_kernels {
    ($name:literal) => {{
        mod __rocm_kernels_generated {
            include!(concat!(env!("OUT_DIR"), "/", $name, ".rs"));
        }
        &__rocm_kernels_generated::KERNELS
    }};
}
