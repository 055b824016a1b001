//! Finding ROCm toolchains on this machine: where they are, their version, HIP compiler,
//! device libraries and the gfx targets those libraries cover. [`discover`] returns it all as data;
//! [`inspect`] describes one install prefix.
//!
//! ```no_run
//! let found = rocm_toolkit::toolchain::discover();
//! for note in &found.notes {
//!     eprintln!("note: {note}");
//! }
//! if let Some(tc) = found.best() {
//!     println!("{} at {}: gfx942 {}", tc.name, tc.root.display(),
//!         if tc.supports_target("gfx942") { "yes" } else { "no" });
//! }
//! ```

mod discover;
mod env;
mod inspect;
mod targets;

use std::path::PathBuf;

use serde::Serialize;

pub use discover::{discover, discover_with, DiscoverOptions, Discovery};
pub use env::ToolchainEnv;
pub use inspect::{device_lib_targets, inspect, missing_tools};
pub use targets::{
    base_target, device_lib_file, is_gfx_name, sort_targets, target_of_device_lib_file,
    NOTABLE_TARGETS,
};

/// How a toolchain was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ToolchainSource {
    /// `ROCM_PATH` or `HIP_PATH` named it.
    EnvVar {
        /// `ROCM_PATH` or `HIP_PATH`.
        var: String,
    },
    /// `/opt/rocm` (a link followed to its target) or `/opt/rocm-X.Y.Z`.
    Opt,
    /// A distribution's packages under `/usr` (Debian/Ubuntu layout).
    Distro,
    /// A pip-installed ROCm SDK (`_rocm_sdk_core` and friends in site-packages).
    Pip,
    /// A toolchain managed by `cargo rocm toolchain` under `$CARGO_ROCM_HOME/toolchains/<name>`.
    Managed {
        /// The toolchain's name (its folder under `toolchains/`).
        name: String,
    },
    /// A prefix named explicitly: `--toolchain-path`, or a path in a pin file.
    Path,
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

/// A program that compiles HIP for AMD GPUs, as found in a toolchain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HipCompiler {
    /// clang++ or hipcc.
    pub kind: CompilerKind,
    /// The executable.
    pub path: PathBuf,
    /// First line of `--version`, if it ran. Clang compilers are asked; `hipcc` is not (slow,
    /// and it prints the toolchain's HIP version).
    pub version: Option<String>,
    /// Programs this compiler runs to produce a code-object bundle that it cannot find (a
    /// Debian `clang++-19` without `clang-tools-19` has no `clang-offload-bundler`). A compiler
    /// with anything missing is never chosen while a complete one exists.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<MissingTool>,
}

impl HipCompiler {
    /// Whether everything a full build with this compiler runs is there.
    pub fn is_complete(&self) -> bool {
        self.missing.is_empty()
    }
}

/// A program a HIP compiler needs beside it that it cannot find.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct MissingTool {
    /// The program: `clang-offload-bundler` (bundles the per-target code objects), `ld.lld`
    /// (links each target's code object) or `llvm-objcopy` (which the bundler runs).
    pub tool: String,
    /// Where the compiler looks for it first: the folder of the compiler's real executable.
    pub dir: PathBuf,
    /// The Debian/Ubuntu package that provides it for this compiler (`clang-tools-19`,
    /// `lld-19`, `llvm-19`), when the compiler is a distribution's `llvm-N`.
    pub package: Option<String>,
}

impl MissingTool {
    /// What to do about it, in one line.
    pub fn fix(&self) -> String {
        match &self.package {
            Some(p) => format!("sudo apt-get install {p}"),
            None => format!(
                "install {} into {} (it ships with the toolchain's LLVM), or reinstall the toolchain",
                self.tool,
                self.dir.display()
            ),
        }
    }
}

impl std::fmt::Display for MissingTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no {} in {}", self.tool, self.dir.display())?;
        if let Some(p) = &self.package {
            write!(f, " (package {p})")?;
        }
        Ok(())
    }
}

/// One ROCm install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Toolchain {
    /// A short name for people: `system`, `rocm-6.2.0`, a managed toolchain's name.
    pub name: String,
    /// The install prefix (what `ROCM_PATH` should be).
    pub root: PathBuf,
    /// How it was found: which rule or search place.
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
    /// What inspection noticed that a person may want to know (a clang without the AMDGPU
    /// backend that was skipped, a missing piece).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Toolchain {
    /// The preferred HIP compiler: the first of [`Toolchain::compilers`] that has everything
    /// it runs ([`HipCompiler::is_complete`]).
    pub fn compiler(&self) -> Option<&HipCompiler> {
        self.compilers.iter().find(|c| c.is_complete())
    }

    /// The preferred complete compiler of one kind: `Clang` for direct `clang++ -x hip` builds.
    pub fn compiler_of_kind(&self, kind: CompilerKind) -> Option<&HipCompiler> {
        self.compilers
            .iter()
            .find(|c| c.kind == kind && c.is_complete())
    }

    /// Whether this toolchain has what compiling HIP needs: a complete compiler and device
    /// libraries.
    pub fn can_compile(&self) -> bool {
        self.compiler().is_some() && self.device_lib_path.is_some()
    }

    /// Whether the device libraries cover `target` (`gfx942`, or a target id with features
    /// such as `gfx90a:xnack+`): compiling for a target they lack fails at link time.
    pub fn supports_target(&self, target: &str) -> bool {
        let base = base_target(target);
        self.device_lib_targets.iter().any(|t| t == base)
    }

    /// The device-library file `target` needs in this toolchain
    /// (`<device_lib_path>/oclc_isa_version_942.bc` for `gfx942`), whether or not it exists;
    /// `None` when there is no device-library folder or `target` is not a gfx name.
    pub fn device_lib_file_for(&self, target: &str) -> Option<PathBuf> {
        Some(
            self.device_lib_path
                .as_ref()?
                .join(device_lib_file(target)?),
        )
    }

    /// Of `targets`, those this toolchain cannot build for, in the order given.
    pub fn missing_targets<'a>(&self, targets: &[&'a str]) -> Vec<&'a str> {
        targets
            .iter()
            .copied()
            .filter(|t| !self.supports_target(t))
            .collect()
    }

    /// The environment that points ROCm tools at this toolchain (`ROCM_PATH`, `HIP_PATH`,
    /// `HIP_CLANG_PATH`, `HIP_DEVICE_LIB_PATH`, `DEVICE_LIB_PATH` and `PATH` additions).
    pub fn env_vars(&self) -> ToolchainEnv {
        ToolchainEnv::for_toolchain(self)
    }

    /// The version's numeric parts (`6.2.41133-dd7f95766` → `[6, 2, 41133]`), for ordering.
    pub fn version_numbers(&self) -> Vec<u64> {
        version_numbers(self.version.as_deref().unwrap_or(""))
    }
}

/// Leading dot-separated numbers of a version string: `5.7.1-98` → `[5, 7, 1]`.
pub(crate) fn version_numbers(version: &str) -> Vec<u64> {
    version
        .split(['-', '+', ' ', '~'])
        .next()
        .unwrap_or("")
        .split('.')
        .map_while(|p| p.parse().ok())
        .collect()
}
