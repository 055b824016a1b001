//! `rocm-kernels-build`: building HIP kernels from `build.rs` with [`Build`], a sibling of
//! `cc::Build`. A user crate lists it as a build-dependency and `rocm-kernels` (the runtime) as a
//! dependency.
//!
//! ```no_run
//! // build.rs
//! rocm_kernels_build::Build::new()
//!     .files(["kernels/*.hip"])
//!     .include("kernels/include")
//!     .define("BLOCK", Some("256"))
//!     .compile("kernels");
//! ```
//!
//! ```ignore
//! // src/lib.rs
//! static KERNELS: &rocm_kernels::KernelLibrary = rocm_kernels::include_kernels!("kernels");
//! ```
//!
//! Each enabled backend compiles every source: `amd` produces one clang offload bundle per
//! source covering every gfx target; `cpu` builds the sources with the host C++ compiler.
//! Objects are cached under `OUT_DIR` by the content of everything the compiler read, so an
//! unchanged file never starts a compiler. Everything written goes under `OUT_DIR`:
//!
//! * `$OUT_DIR/<name>.rs`: `pub static KERNELS: rocm_kernels::KernelLibrary`.
//! * `$OUT_DIR/rocm-kernels/<name>.manifest.json`: the code objects, for tools.
//! * `$OUT_DIR/rocm-kernels/<name>.log`: what each run compiled or reused, and how long it took.
//! * `$OUT_DIR/rocm-kernels/<name>/<backend>/`: objects, depfiles and cache records.

mod amd;
mod cache;
mod codegen;
mod contract;
mod driver;
mod error;
mod jobs;
mod nvidia;
mod probe;
mod report;
mod settings;
mod source;
mod toolchain_cache;
mod tuned;

use std::path::{Path, PathBuf};
use std::time::Instant;

pub use error::{BuildError, CompileFailure, Diagnostic};
pub use nvidia::resources_path as nvidia_resources_path;
pub use probe::{check_amd_compiler, check_nvcc};
pub use settings::{
    ENV_BACKENDS, ENV_HIPFLAGS, ENV_HIP_COMPILER, ENV_NVIDIA_ARCH, ENV_OFFLOAD_ARCH,
};
pub use source::SourceFile;
pub use tuned::TunedCompiled;

use report::Output;
use settings::EnvReader;

pub use rocm_kernels_core::Backend;
use rocm_kernels_core::ObjectFormat;
use rocm_toolkit::toolchain::Toolchain;

/// Builds HIP kernel sources for every enabled backend and writes `$OUT_DIR/<name>.rs`.
///
/// Settings not given to the builder come from, in order: environment variables
/// (`ROCM_OFFLOAD_ARCH`, `ROCM_BACKENDS`), `[package.metadata.rocm]` in the crate's Cargo.toml
/// (`targets = ["gfx90a", "gfx1030"]`, `backends = ["cpu", "amd"]`), and for targets, this
/// machine's GPUs. A GPU is never needed: with no targets the `amd` backend is skipped with a
/// warning.
#[derive(Debug, Clone)]
pub struct Build {
    files: Vec<PathBuf>,
    includes: Vec<PathBuf>,
    defines: Vec<(String, Option<String>)>,
    flags: Vec<String>,
    opt_level: Option<u32>,
    targets: Vec<String>,
    nvidia_targets: Vec<String>,
    backends: Vec<Backend>,
    cargo_metadata: bool,
    out_dir: Option<PathBuf>,
    compiler: Option<PathBuf>,
    toolchain: Option<Toolchain>,
    cpu_race_variant: bool,
}

impl Default for Build {
    fn default() -> Self {
        Build::new()
    }
}

/// The options every backend compiles with.
#[derive(Debug, Clone)]
pub(crate) struct CompileOptions {
    pub includes: Vec<PathBuf>,
    pub defines: Vec<(String, Option<String>)>,
    pub flags: Vec<String>,
    pub opt_level: u32,
}

/// One object a backend produced (or reused), for one target.
#[derive(Debug, Clone)]
pub(crate) struct ObjectOut {
    pub backend: Backend,
    pub source: SourceFile,
    /// `gfx90a:xnack-`, `sm_90`, `compute_90`; empty for CUDA source.
    pub target: String,
    pub format: ObjectFormat,
    /// The object file, under `$OUT_DIR/rocm-kernels/<name>/<backend>/`.
    pub path: PathBuf,
    /// The kernels it holds, read from it after the compile (empty for CUDA source).
    pub kernels: Vec<ObjectKernel>,
    /// Every file the compiler read (source and headers).
    pub inputs: Vec<PathBuf>,
    /// Reused from the cache, no compiler started.
    pub fresh: bool,
    pub warnings: Vec<String>,
    pub millis: u64,
}

/// A kernel found in a compiled object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObjectKernel {
    /// The one spelling of its name (the demangled symbol, canonical).
    pub name: String,
    /// The exact symbol in this object.
    pub symbol: String,
    /// Parameters as the object's metadata tells them (AMD), else empty.
    pub params: Vec<contract::ParamGen>,
}

/// What [`Build::try_compile`] produced.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The name given to `compile`.
    pub name: String,
    /// `$OUT_DIR/<name>.rs`.
    pub rust_file: PathBuf,
    /// `$OUT_DIR/rocm-kernels/<name>.manifest.json`.
    pub manifest_file: PathBuf,
    /// The backends that were built.
    pub backends: Vec<Backend>,
    /// The gfx targets of the `amd` objects (empty when `amd` was not built).
    pub targets: Vec<String>,
    /// Every code object, in source order.
    pub objects: Vec<CompiledObject>,
    /// Warnings shown (as `cargo:warning` when cargo metadata is on).
    pub warnings: Vec<String>,
    /// How the cpu build runs each kernel: `regions`, `per-thread loop` or `fibers: <why>`.
    pub cpu_execution: Vec<(String, String)>,
}

/// One code object of a [`Compiled`] library (one per source, backend and target).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledObject {
    /// The backend that compiled it.
    pub backend: Backend,
    /// The kernel source it was compiled from.
    pub source: SourceFile,
    /// `gfx90a`, `sm_90`, `compute_90`; empty for CUDA source.
    pub target: String,
    /// [`ObjectFormat::AmdgpuElf`] for `amd`.
    pub format: ObjectFormat,
    /// The object file, under `$OUT_DIR/rocm-kernels/<name>/<backend>/`.
    pub path: PathBuf,
    /// True when the cache was used and no compiler ran.
    pub reused: bool,
}

impl Build {
    /// A builder with no files and cargo metadata printing on.
    pub fn new() -> Build {
        Build {
            files: Vec::new(),
            includes: Vec::new(),
            defines: Vec::new(),
            flags: Vec::new(),
            opt_level: None,
            targets: Vec::new(),
            nvidia_targets: Vec::new(),
            backends: Vec::new(),
            cargo_metadata: true,
            out_dir: None,
            compiler: None,
            toolchain: None,
            cpu_race_variant: true,
        }
    }

    /// Whether the cpu build also compiles the kernels' race variant (default: yes; one more
    /// compile per source, instrumented for the cpu backend's race detector, which `cargo rocm
    /// test` runs on the first cases of every cpu trial). Without it the race check compares two
    /// thread orders instead, and sees fewer races.
    pub fn cpu_race_variant(&mut self, on: bool) -> &mut Build {
        self.cpu_race_variant = on;
        self
    }

    /// Adds a source file (relative paths are taken from the crate root).
    pub fn file(&mut self, path: impl AsRef<Path>) -> &mut Build {
        self.files.push(path.as_ref().to_path_buf());
        self
    }

    /// Adds source files; entries with `*`, `?` or `[` are glob patterns (`kernels/**/*.hip`),
    /// which must match at least one file.
    pub fn files<P: AsRef<Path>>(&mut self, paths: impl IntoIterator<Item = P>) -> &mut Build {
        for p in paths {
            self.file(p);
        }
        self
    }

    /// Adds an include directory (`-I`), relative to the crate root unless absolute.
    pub fn include(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.includes.push(dir.as_ref().to_path_buf());
        self
    }

    /// Defines a preprocessor macro: `define("N", Some("4"))` is `-DN=4`, `define("FAST", None)`
    /// is `-DFAST`.
    pub fn define<'a>(&mut self, name: &str, value: impl Into<Option<&'a str>>) -> &mut Build {
        self.defines
            .push((name.to_string(), value.into().map(str::to_string)));
        self
    }

    /// Adds a compiler flag, passed as is after the builder's own flags.
    pub fn flag(&mut self, flag: &str) -> &mut Build {
        self.flags.push(flag.to_string());
        self
    }

    /// Sets the optimisation level (`-O<level>`). Kernels are built optimised in every cargo
    /// profile unless this says otherwise: `-O3` for GPU code (an unoptimised kernel is slow and
    /// uses other registers than the one that ships), the cpu backend's own default for it.
    pub fn opt_level(&mut self, level: u32) -> &mut Build {
        self.opt_level = Some(level);
        self
    }

    /// Adds a gfx target (`gfx90a`, `gfx90a:xnack-`, or a comma list).
    pub fn offload_arch(&mut self, target: &str) -> &mut Build {
        self.targets.push(target.to_string());
        self
    }

    /// Replaces the gfx targets.
    pub fn targets<S: AsRef<str>>(&mut self, targets: impl IntoIterator<Item = S>) -> &mut Build {
        self.targets = targets
            .into_iter()
            .map(|t| t.as_ref().to_string())
            .collect();
        self
    }

    /// Adds an NVIDIA target (`sm_90`) for the `nvidia` backend; overrides `ROCM_NVIDIA_ARCH`
    /// and `[package.metadata.rocm] nvidia-targets`.
    pub fn nvidia_arch(&mut self, target: &str) -> &mut Build {
        self.nvidia_targets.push(target.to_string());
        self
    }

    /// Adds a backend to build for.
    pub fn backend(&mut self, backend: Backend) -> &mut Build {
        if !self.backends.contains(&backend) {
            self.backends.push(backend);
        }
        self
    }

    /// Replaces the backends to build for.
    pub fn backends(&mut self, backends: impl IntoIterator<Item = Backend>) -> &mut Build {
        self.backends.clear();
        for b in backends {
            self.backend(b);
        }
        self
    }

    /// Whether to print `cargo:` lines (rerun-if-changed, rerun-if-env-changed, warnings, link
    /// lines). On by default; turn off when not running inside a build script.
    pub fn cargo_metadata(&mut self, on: bool) -> &mut Build {
        self.cargo_metadata = on;
        self
    }

    /// Where to write outputs instead of `$OUT_DIR`.
    pub fn out_dir(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Uses this HIP compiler (a clang++ or hipcc; a bare name is looked up in `PATH`) instead
    /// of the toolchain's preferred one. `ROCM_HIP_COMPILER` does the same from the environment.
    pub fn compiler(&mut self, path: impl AsRef<Path>) -> &mut Build {
        self.compiler = Some(path.as_ref().to_path_buf());
        self
    }

    /// Uses this ROCm toolchain instead of discovering one.
    pub fn toolchain(&mut self, toolchain: Toolchain) -> &mut Build {
        self.toolchain = Some(toolchain);
        self
    }

    /// Builds the kernels and writes `$OUT_DIR/<name>.rs`; panics with the error's full text on
    /// failure, which is what a build script should do.
    pub fn compile(&self, name: &str) {
        if let Err(e) = self.try_compile(name) {
            panic!("\n\nrocm-kernels: {e}\n\n");
        }
    }

    /// Builds the kernels and writes `$OUT_DIR/<name>.rs`.
    pub fn try_compile(&self, name: &str) -> Result<Compiled, BuildError> {
        let started = Instant::now();
        let env = EnvReader::default();
        let mut out = Output::new(self.cargo_metadata);
        let result = self.run(name, &env, &mut out, started);
        // Tell cargo what to watch even when the build failed, so fixing it reruns the script.
        for var in env.names() {
            out.line(&format!("cargo:rerun-if-env-changed={var}"));
        }
        let mut compiled = result?;
        compiled.warnings = out.warnings;
        Ok(compiled)
    }
}
