//! Finding ROCm toolchains on this machine: where they are, their version, HIP compiler,
//! device libraries and the gfx targets those libraries cover. [`discover`] returns it all as data.

use std::path::PathBuf;

use serde::Serialize;

/// How a toolchain was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ToolchainSource {
    /// `ROCM_PATH` or `HIP_PATH` named it.
    EnvVar { var: String },
    /// `/opt/rocm` (a link followed to its target) or `/opt/rocm-X.Y.Z`.
    Opt,
    /// A distribution's packages under `/usr` (Debian/Ubuntu layout).
    Distro,
    /// A pip-installed ROCm SDK (`_rocm_sdk_core` and friends in site-packages).
    Pip,
    /// A toolchain managed by `cargo rocm toolchain` under `$CARGO_ROCM_HOME/toolchains/<name>`.
    Managed { name: String },
}

/// Which program compiles HIP for AMD GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompilerKind {
    /// A clang++ with the AMDGPU backend: ROCm's `lib/llvm/bin/clang++` or an upstream `clang++-N`.
    Clang,
    /// The `hipcc` driver script/binary.
    Hipcc,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HipCompiler {
    pub kind: CompilerKind,
    pub path: PathBuf,
    /// First line of `--version`, if it ran.
    pub version: Option<String>,
}

/// One ROCm install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Toolchain {
    /// A short name for people: `system`, `rocm-6.2.0`, a managed toolchain's name.
    pub name: String,
    /// The install prefix (what `ROCM_PATH` should be).
    pub root: PathBuf,
    pub source: ToolchainSource,
    /// e.g. `5.2.3` or `6.2.41133-dd7f95766`.
    pub version: Option<String>,
    /// HIP compilers, preferred first.
    pub compilers: Vec<HipCompiler>,
    /// Folder holding `ocml.bc`, `oclc_isa_version_*.bc`, ...
    pub device_lib_path: Option<PathBuf>,
    /// gfx targets the device libraries cover (from `oclc_isa_version_<N>.bc`), sorted.
    pub device_lib_targets: Vec<String>,
    /// `libamdhip64.so*` found in this install, if any.
    pub hip_runtime_lib: Option<PathBuf>,
}
