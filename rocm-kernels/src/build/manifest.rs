//! TEMPORARY local copy of the build manifest types until `crate::build_manifest` is merged
//! (identical field names). `$OUT_DIR/rocm-kernels/<name>.manifest.json` tells tools
//! (`cargo rocm build`) which code objects a library has.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildManifest {
    pub name: String,
    pub objects: Vec<ManifestObject>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestObject {
    /// `amd`, `nvidia`.
    pub backend: String,
    /// Crate-relative source file.
    pub source: String,
    pub targets: Vec<String>,
    /// `hip-offload-bundle`, `amdgpu-elf`, `cubin`, `ptx`.
    pub format: String,
    /// Absolute path of the object.
    pub path: String,
}
