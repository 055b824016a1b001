//! A kernel parameter as a backend of the build saw it, before the kernels of every backend are
//! joined into the library's description (`codegen::manifest`).

use rocm_kernels_core::library::ParamKind;

/// A kernel parameter, owned; becomes a [`rocm_kernels_core::library::ParamDecl`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParamGen {
    pub name: String,
    pub type_name: String,
    pub size: u32,
    pub kind: ParamKind,
}
