//! What the code generator turns into `KernelDecl`s, gathered from every backend.

use rocm_kernels_core::library::ParamKind;

/// A kernel parameter, owned; becomes a [`rocm_kernels_core::library::ParamDecl`].
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
