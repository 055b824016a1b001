//! The manifest `Build::compile(name)` writes beside its outputs, and `cargo rocm` reads:
//! `$OUT_DIR/rocm-kernels/<name>.manifest.json`, one per kernel library. It is the owned form of
//! the same description the build embeds as a [`KernelLibrary`](crate::library::KernelLibrary):
//! every code object (one per source, backend and target) and every kernel with its symbol in
//! each object, its parameters and its cpu entry. The generated Rust file is rendered from it.
//!
//! ```json
//! { "name": "kernels",
//!   "objects": [ { "backend": "amd", "format": "amdgpu-elf", "target": "gfx90a",
//!                  "source": "src/saxpy.hip", "path": "/abs/out/saxpy-1a2b.gfx90a.co" } ],
//!   "kernels": [ { "name": "saxpy", "source": "src/saxpy.hip",
//!                  "params": [ { "name": "n", "type_name": "int", "size": 4, "kind": "by_value" } ],
//!                  "symbols": [ { "object": 0, "symbol": "_Z5saxpyifPKfPf" } ],
//!                  "cpu": { "symbol": "rk_kernels_1a2b3c4d_0", "execution": "regions" } } ] }
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::library::{Backend, ObjectFormat, ParamKind};

/// The folder under `OUT_DIR` holding manifests.
pub(crate) const MANIFEST_DIR: &str = "rocm-kernels";
/// The file name suffix of a manifest.
pub(crate) const MANIFEST_SUFFIX: &str = ".manifest.json";

/// One kernel library: everything one `Build::compile(name)` produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildManifest {
    /// The name given to `compile`.
    pub name: String,
    /// Every code object; [`ManifestSymbol::object`] indexes this list.
    pub objects: Vec<ManifestObject>,
    /// Every kernel the sources define, each once.
    #[serde(default)]
    pub kernels: Vec<ManifestKernel>,
    /// The `__constant__` and `__device__` variables the sources define at namespace scope.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub globals: Vec<ManifestGlobal>,
}

/// A `__constant__` or `__device__` variable (see [`crate::library::GlobalDecl`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestGlobal {
    /// Qualified by its namespaces: `ns::mask`.
    pub name: String,
    /// A `__constant__` variable rather than a `__device__` one.
    pub constant: bool,
    /// Where it is defined (relative to the crate root) and the line.
    pub source: String,
    /// The line of its definition, counted from 1.
    pub line: u32,
    /// Its symbol in GPU code objects (`mask`, `_ZN2ns4maskE`).
    pub symbol: String,
    /// The cpu build's accessor, and the race variant's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_symbol: Option<String>,
    /// The race variant's accessor, when the build made the race variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_race_symbol: Option<String>,
}

/// One compiled artefact for one target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestObject {
    /// Which runtime loads it.
    pub backend: Backend,
    /// What its bytes are.
    pub format: ObjectFormat,
    /// `gfx90a:xnack-`, `sm_90`, `compute_90`; empty for CUDA source.
    pub target: String,
    /// The source file, relative to the crate root.
    pub source: String,
    /// Absolute path of the object.
    pub path: PathBuf,
}

/// One kernel of the library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestKernel {
    /// The one spelling of its name ([`crate::library::canonical_kernel_name`]).
    pub name: String,
    /// The source file defining it, relative to the crate root.
    pub source: String,
    /// Parameters in order; empty when no backend could tell.
    pub params: Vec<ManifestParam>,
    /// Its symbol in each object that holds it.
    pub symbols: Vec<ManifestSymbol>,
    /// Its cpu entry, when the cpu backend was built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<ManifestCpu>,
}

/// One kernel parameter (see [`crate::library::ParamDecl`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestParam {
    /// Its name in the source.
    pub name: String,
    /// The source type, e.g. `const float*` (empty when only a GPU object told).
    pub type_name: String,
    /// Size in bytes of the argument as passed; 0 when the build could not tell.
    pub size: u32,
    /// How the argument is passed.
    pub kind: ParamKind,
}

/// Where a kernel is in one code object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestSymbol {
    /// Index into [`BuildManifest::objects`].
    pub object: u32,
    /// The exact symbol (`_Z5scaleIfEvPT_S0_`, or `saxpy` for `extern "C"` kernels).
    pub symbol: String,
}

/// A kernel's cpu entry point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestCpu {
    /// The `extern "C"` symbol of the entry in the cpu build's static library.
    pub symbol: String,
    /// How it runs: `regions`, `per-thread loop`, `fibers: <why>` (see
    /// [`crate::library::CpuExecution`]).
    pub execution: String,
    /// The race variant's entry (instrumented for the cpu race detector), when built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub race_symbol: Option<String>,
}

/// Reading or writing a manifest failed.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The manifest could not be read or written.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The manifest's path.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The file is not a manifest this version can read.
    #[error("{path} is not a valid kernel build manifest: {source}")]
    Json {
        /// The manifest's path.
        path: PathBuf,
        /// What the JSON parser said.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> BuildManifest {
        BuildManifest {
            name: "lib".into(),
            objects: vec![ManifestObject {
                backend: Backend::Amd,
                format: ObjectFormat::AmdgpuElf,
                target: "gfx90a".into(),
                source: "src/k.hip".into(),
                path: "/x/k.gfx90a.co".into(),
            }],
            kernels: vec![ManifestKernel {
                name: "scale<float>".into(),
                source: "src/k.hip".into(),
                params: vec![ManifestParam {
                    name: "x".into(),
                    type_name: "float*".into(),
                    size: 8,
                    kind: ParamKind::GlobalBuffer,
                }],
                symbols: vec![ManifestSymbol {
                    object: 0,
                    symbol: "_Z5scaleIfEvPT_".into(),
                }],
                cpu: Some(ManifestCpu {
                    symbol: "rk_lib_0".into(),
                    race_symbol: None,
                    execution: "regions".into(),
                }),
            }],
            globals: Vec::new(),
        }
    }

    #[test]
    fn the_documented_json_shape_round_trips() {
        let m = manifest();
        let json: serde_json::Value = serde_json::to_value(&m).unwrap();
        assert_eq!(json["objects"][0]["backend"], "amd");
        assert_eq!(json["objects"][0]["format"], "amdgpu-elf");
        assert_eq!(json["kernels"][0]["params"][0]["kind"], "global_buffer");
        assert_eq!(json["kernels"][0]["symbols"][0]["object"], 0);
        let back: BuildManifest = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, m);
        let bad = json.to_string().replace("\"amd\"", "\"tpu\"");
        assert!(serde_json::from_str::<BuildManifest>(&bad).is_err());
    }

    #[test]
    fn write_then_find() {
        let dir = tempfile::tempdir().unwrap();
        assert!(BuildManifest::find_in(dir.path()).unwrap().is_empty());
        let m = manifest();
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
