//! The manifest `Build::compile(name)` writes beside its outputs, and `cargo rocm build` reads:
//! `$OUT_DIR/rocm-kernels/<name>.manifest.json`, one per kernel library, listing every compiled
//! code object.
//!
//! ```json
//! { "name": "kernels",
//!   "objects": [ { "backend": "amd", "source": "src/saxpy.hip", "targets": ["gfx90a", "gfx1030"],
//!                  "format": "hip-offload-bundle", "path": "/abs/out/saxpy-1a2b.hipfb" } ] }
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::library::Backend;

/// The folder under `OUT_DIR` holding manifests.
pub const MANIFEST_DIR: &str = "rocm-kernels";
/// The file name suffix of a manifest.
pub const MANIFEST_SUFFIX: &str = ".manifest.json";

/// One kernel library: everything one `Build::compile(name)` produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildManifest {
    /// The name given to `compile`.
    pub name: String,
    pub objects: Vec<ManifestObject>,
}

/// One compiled artefact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestObject {
    #[serde(with = "backend_name")]
    pub backend: Backend,
    /// The source file, relative to the crate root.
    pub source: String,
    /// The targets the object holds (`gfx90a`, `gfx1030:xnack-`, `sm_90`).
    pub targets: Vec<String>,
    pub format: ObjectFormat,
    /// Absolute path of the object.
    pub path: PathBuf,
}

/// What a manifest object's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectFormat {
    /// A clang offload bundle (plain or compressed), one entry per AMD target.
    HipOffloadBundle,
    /// A single AMDGPU ELF code object.
    AmdgpuElf,
    /// An NVIDIA cubin.
    Cubin,
    /// NVIDIA PTX text.
    Ptx,
    /// CUDA source (HIP with local headers inlined), compiled by NVRTC at run time because the
    /// build had no nvcc.
    CudaSource,
}

impl ObjectFormat {
    /// The name used in manifests and in [`crate::library::EmbeddedObject::format`].
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectFormat::HipOffloadBundle => "hip-offload-bundle",
            ObjectFormat::AmdgpuElf => "amdgpu-elf",
            ObjectFormat::Cubin => "cubin",
            ObjectFormat::Ptx => "ptx",
            ObjectFormat::CudaSource => "cuda-source",
        }
    }
}

/// Reading or writing a manifest failed.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a valid kernel build manifest: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// `$OUT_DIR/rocm-kernels/<name>.manifest.json`.
pub fn manifest_path(out_dir: &Path, name: &str) -> PathBuf {
    out_dir
        .join(MANIFEST_DIR)
        .join(format!("{name}{MANIFEST_SUFFIX}"))
}

impl BuildManifest {
    /// Write to [`manifest_path`] (creating the folder); returns the path written.
    pub fn write(&self, out_dir: &Path) -> Result<PathBuf, ManifestError> {
        let path = manifest_path(out_dir, &self.name);
        let io = |source| ManifestError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(path.parent().expect("has a parent")).map_err(io)?;
        let json = serde_json::to_vec_pretty(self).expect("manifest serializes");
        std::fs::write(&path, json).map_err(io)?;
        Ok(path)
    }

    /// Read one manifest file.
    pub fn read(path: &Path) -> Result<BuildManifest, ManifestError> {
        let bytes = std::fs::read(path).map_err(|source| ManifestError::Io {
            path: path.to_owned(),
            source,
        })?;
        serde_json::from_slice(&bytes).map_err(|source| ManifestError::Json {
            path: path.to_owned(),
            source,
        })
    }

    /// Every manifest under `out_dir` (none when the folder does not exist), sorted by path.
    pub fn find_in(out_dir: &Path) -> Result<Vec<(PathBuf, BuildManifest)>, ManifestError> {
        let dir = out_dir.join(MANIFEST_DIR);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(ManifestError::Io { path: dir, source }),
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_str().is_some_and(|s| s.ends_with(MANIFEST_SUFFIX)))
            .collect();
        paths.sort();
        paths
            .into_iter()
            .map(|p| BuildManifest::read(&p).map(|m| (p, m)))
            .collect()
    }
}

/// `Backend` as its lowercase name (`amd`, `nvidia`, `cpu`), read back through `FromStr`.
mod backend_name {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::library::Backend;

    pub fn serialize<S: Serializer>(b: &Backend, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(b.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Backend, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_json_shape_round_trips() {
        let json = r#"{ "name": "kernels", "objects": [ { "backend": "amd", "source": "src/a.hip",
            "targets": ["gfx90a", "gfx1030"], "format": "hip-offload-bundle", "path": "/o/a.hipfb" },
            { "backend": "nvidia", "source": "src/a.hip", "targets": ["sm_90"], "format": "cubin",
            "path": "/o/a.cubin" } ] }"#;
        let m: BuildManifest = serde_json::from_str(json).unwrap();
        assert_eq!(m.objects[0].backend, Backend::Amd);
        assert_eq!(m.objects[0].format, ObjectFormat::HipOffloadBundle);
        assert_eq!(m.objects[1].format.as_str(), "cubin");
        let back: serde_json::Value = serde_json::to_value(&m).unwrap();
        assert_eq!(back["objects"][0]["backend"], "amd");
        assert_eq!(back["objects"][0]["format"], "hip-offload-bundle");
        assert!(
            serde_json::from_str::<BuildManifest>(&json.replace("\"amd\"", "\"tpu\"")).is_err()
        );
    }

    #[test]
    fn write_then_find() {
        let dir = tempfile::tempdir().unwrap();
        assert!(BuildManifest::find_in(dir.path()).unwrap().is_empty());
        let m = BuildManifest {
            name: "lib".into(),
            objects: vec![ManifestObject {
                backend: Backend::Amd,
                source: "src/k.hip".into(),
                targets: vec!["gfx90a".into()],
                format: ObjectFormat::AmdgpuElf,
                path: "/x/k.co".into(),
            }],
        };
        let path = m.write(dir.path()).unwrap();
        assert_eq!(path, dir.path().join("rocm-kernels/lib.manifest.json"));
        std::fs::write(dir.path().join("rocm-kernels/ignored.txt"), "x").unwrap();
        assert_eq!(
            BuildManifest::find_in(dir.path()).unwrap(),
            vec![(path.clone(), m)]
        );
        std::fs::write(&path, "{").unwrap();
        assert!(matches!(
            BuildManifest::find_in(dir.path()),
            Err(ManifestError::Json { .. })
        ));
    }
}
