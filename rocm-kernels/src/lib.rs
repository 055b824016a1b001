//! `rocm-kernels`: run HIP kernels that `rocm-kernels-build` compiled into this crate.
//!
//! * [`include_kernels!`] embeds a library a build script compiled (`KernelLibrary`).
//! * [`runtime`]: find a `Device` (an AMD GPU through libamdhip64, an NVIDIA GPU through the
//!   CUDA driver, or the CPU), load a `Module`, launch `Kernel`s on `Buffer`s.
//! * [`place`]: where work runs, by name ([`TrialPlace`]: `cpu/w64`, `nvidia/sm_90#1`), as test
//!   trials, benchmarks and tuning results are named.
//! * [`vector`]: HIP's vector types (`Float4`, `Int2`, ...) with HIP's layout, for buffers and
//!   by-value arguments.
//!
//! A user crate lists this crate as a dependency and `rocm-kernels-build` as a build-dependency;
//! neither links what only the other needs.

pub mod place;
pub mod runtime;
pub mod tuning;
pub mod vector;

/// The `half` crate, whose `f16` and `bf16` are the buffer elements of HIP's `__half` and
/// `__hip_bfloat16` (`Buffer<half::bf16>`); re-exported so a crate names the same version.
#[cfg(feature = "half")]
pub use half;
pub use place::TrialPlace;
pub use rocm_kernels_core::library;
pub use rocm_kernels_core::{Backend, KernelLibrary};

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

/// A tunable kernel's wisdom that a build script compiled with `Build::compile_tuned(kernel,
/// wisdom_file)`, as a `&'static rocm_kernels::tuning::TunedKernel` (see [`tuning`]).
///
/// ```ignore
/// pub static MATMUL: &rocm_kernels::tuning::TunedKernel = rocm_kernels::include_tuned!("matmul");
/// ```
#[macro_export]
macro_rules! include_tuned {
    ($kernel:literal) => {{
        mod __rocm_kernels_tuned {
            include!(concat!(env!("OUT_DIR"), "/", $kernel, ".tuned.rs"));
        }
        &__rocm_kernels_tuned::TUNED
    }};
}
