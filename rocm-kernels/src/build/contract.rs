//! The data the builder exchanges with its backends' compile paths (the cpu backend's lives in
//! `cpu.rs`), and what the code generator turns into `KernelDecl`s.

use std::path::{Path, PathBuf};

use super::source::SourceFile;
use crate::embedded::ParamKind;

/// What the cpu backend is asked to build.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuBuildRequest<'a> {
    /// The name given to `Build::compile` (use it to name the static library).
    pub lib_name: &'a str,
    pub sources: &'a [SourceFile],
    /// Include directories, absolute.
    pub includes: &'a [PathBuf],
    pub defines: &'a [(String, Option<String>)],
    /// Flags from `Build::flag` (written for the HIP compiler; pass on the ones that apply).
    pub flags: &'a [String],
    pub opt_level: u32,
    /// A folder under OUT_DIR reserved for this library's cpu build
    /// (`$OUT_DIR/rocm-kernels/<name>/cpu`), already created.
    pub out_dir: &'a Path,
}

/// What the cpu backend built: its kernels, and the files cargo should watch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CpuBuildOutput {
    pub kernels: Vec<CpuKernelGen>,
    /// Sources and headers the build read (the builder prints `cargo:rerun-if-changed` for them).
    pub rerun_if_changed: Vec<PathBuf>,
}

/// One cpu kernel entry point, linked into the crate by the cpu build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CpuKernelGen {
    /// The kernel's name as the user writes it.
    pub name: String,
    /// The linker symbol of its entry point (declared `extern "C"` in the generated file).
    pub symbol: String,
    /// The source file defining it, crate-relative.
    pub source_rel: String,
    pub params: Vec<ParamGen>,
}

/// A kernel parameter, owned; becomes a [`crate::embedded::ParamDecl`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParamGen {
    pub name: String,
    pub type_name: String,
    pub size: u32,
    pub kind: ParamKind,
}

/// A kernel for the generated `kernels` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KernelGen {
    pub name: String,
    pub source_rel: String,
    pub params: Vec<ParamGen>,
}
