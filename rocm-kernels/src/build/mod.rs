//! Building HIP kernels from `build.rs`: [`Build`], a sibling of `cc::Build`.
//!
//! ```no_run
//! // build.rs
//! rocm_kernels::Build::new()
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
pub mod cpu;
mod diagnostics;
mod error;
mod jobs;
mod manifest;
mod settings;
mod source;
mod toolchain_cache;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub use error::{BuildError, CompileFailure, Diagnostic};
pub use manifest::{BuildManifest, ManifestObject};
pub use settings::{ENV_BACKENDS, ENV_HIPFLAGS, ENV_HIP_COMPILER, ENV_OFFLOAD_ARCH};
pub use source::SourceFile;

use contract::KernelGen;
use cpu::{CpuBuildRequest, CpuKernelGen};
use toolchain_cache::{CompilerInfo, ToolchainInfo};

use settings::{EnvReader, Metadata};

use crate::toolchain::{CompilerKind, Toolchain};
use crate::Backend;

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
    backends: Vec<Backend>,
    cargo_metadata: bool,
    out_dir: Option<PathBuf>,
    compiler: Option<PathBuf>,
    toolchain: Option<Toolchain>,
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

/// One object a backend produced (or reused).
#[derive(Debug, Clone)]
pub(crate) struct ObjectOut {
    pub backend: Backend,
    pub source: SourceFile,
    pub targets: Vec<String>,
    pub format: &'static str,
    pub path: PathBuf,
    /// Every file the compiler read (source and headers).
    pub inputs: Vec<PathBuf>,
    /// Reused from the cache, no compiler started.
    pub fresh: bool,
    pub warnings: Vec<String>,
    pub millis: u64,
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
}

/// One code object of a [`Compiled`] library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledObject {
    pub backend: Backend,
    pub source: SourceFile,
    pub targets: Vec<String>,
    /// `hip-offload-bundle` for `amd`.
    pub format: String,
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
            backends: Vec::new(),
            cargo_metadata: true,
            out_dir: None,
            compiler: None,
            toolchain: None,
        }
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

    fn out_root(&self, _name: &str) -> Result<PathBuf, BuildError> {
        match &self.out_dir {
            Some(d) => Ok(d.clone()),
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or_else(|| {
                    BuildError::config(
                        "OUT_DIR is not set: call Build from a build script (build.rs), or set \
                     Build::out_dir",
                    )
                }),
        }
    }

    fn run(
        &self,
        name: &str,
        env: &EnvReader,
        out: &mut Output,
        started: Instant,
    ) -> Result<Compiled, BuildError> {
        validate_name(name)?;
        let out_dir = self.out_root(name)?;
        let crate_root = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok())
            .ok_or_else(|| BuildError::config("cannot tell the crate root (CARGO_MANIFEST_DIR)"))?;
        let lib_dir = out_dir.join("rocm-kernels").join(name);
        std::fs::create_dir_all(&lib_dir)
            .map_err(|e| BuildError::io("cannot create", &lib_dir, e))?;
        let mut log = Log::open(&out_dir.join("rocm-kernels").join(format!("{name}.log")));

        let sources = self.sources(&crate_root)?;
        let manifest_path = crate_root.join("Cargo.toml");
        let metadata = Metadata::from_manifest(&manifest_path)?;
        out.watch(&manifest_path);
        for s in &sources {
            out.watch(&s.abs);
        }

        let toolchain = self.find_toolchain(env, &out_dir.join("rocm-kernels"));
        let (backends, backend_origin) =
            settings::resolve_backends(&self.backends, env, &metadata, || toolchain.is_some())?;

        let opts = CompileOptions {
            includes: self.includes.iter().map(|i| crate_root.join(i)).collect(),
            defines: self.defines.clone(),
            flags: self
                .flags
                .iter()
                .cloned()
                .chain(
                    env.get(ENV_HIPFLAGS)
                        .map(|f| f.split_whitespace().map(str::to_string).collect::<Vec<_>>())
                        .unwrap_or_default(),
                )
                .collect(),
            opt_level: self.opt_level.unwrap_or(3),
        };

        let mut built = Vec::new();
        let mut objects: Vec<ObjectOut> = Vec::new();
        let mut targets = Vec::new();
        let mut amd_kernels: Vec<KernelGen> = Vec::new();
        if backends.contains(&Backend::Amd) {
            let (t, origin) =
                settings::resolve_targets(&self.targets, env, &metadata, detect_gfx_targets)?;
            if t.is_empty() {
                out.warn(&format!(
                    "the amd backend of `{name}` is skipped: no GPU targets were given and none \
                     were detected. Set them with ROCM_OFFLOAD_ARCH=gfx90a,gfx1030, with \
                     `[package.metadata.rocm] targets = [\"gfx90a\"]` in Cargo.toml, or with \
                     Build::offload_arch"
                ));
                log.line("skipped amd no-targets");
            } else {
                let Some(toolchain) = toolchain.clone() else {
                    return Err(BuildError::ToolchainNotFound {
                        searched: format!(
                            "amd was requested by {backend_origin}; looked at ROCM_PATH, HIP_PATH, \
                             /opt/rocm and /usr"
                        ),
                    });
                };
                log.line(&format!("amd targets {} from {origin}", t.join(",")));
                let amd_objects = self.build_amd(
                    &toolchain,
                    env,
                    &t,
                    &sources,
                    &crate_root,
                    &lib_dir,
                    &opts,
                    &mut log,
                )?;
                for o in &amd_objects {
                    amd_kernels.extend(amd_kernels_of(o)?);
                }
                objects.extend(amd_objects);
                targets = t;
                built.push(Backend::Amd);
            }
        }

        let mut cpu_kernels: Vec<CpuKernelGen> = Vec::new();
        if backends.contains(&Backend::Cpu) {
            let cpu_dir = lib_dir.join("cpu");
            let started = Instant::now();
            let cpu_out = cpu::build_cpu(&CpuBuildRequest {
                name: name.to_string(),
                sources: sources.iter().map(|s| s.abs.clone()).collect(),
                crate_root: crate_root.clone(),
                out_dir: cpu_dir,
                header_dir: cpu::cpu_include_dir(),
                include_dirs: opts.includes.clone(),
                defines: opts.defines.clone(),
                // Only the builder's flags: ROCM_HIPFLAGS is for the HIP compiler.
                flags: self.flags.clone(),
                opt_level: self.opt_level,
                cargo_metadata: self.cargo_metadata,
            })?;
            log.line(&format!(
                "built cpu {} kernels {}ms",
                cpu_out.kernels.len(),
                started.elapsed().as_millis()
            ));
            for p in &cpu_out.rerun_if_changed {
                out.watch(p);
            }
            cpu_kernels = cpu_out.kernels;
            built.push(Backend::Cpu);
        }
        if backends.contains(&Backend::Nvidia) {
            out.warn(&format!(
                "the nvidia backend of `{name}` is skipped: Build does not compile for NVIDIA yet \
                 (kernels can still be compiled at run time with NVRTC)"
            ));
            log.line("skipped nvidia not-supported");
        }

        for o in &objects {
            log.line(&format!(
                "{} {} {} {}ms",
                if o.fresh { "fresh" } else { "compiled" },
                o.backend,
                o.source.rel,
                o.millis
            ));
            for w in &o.warnings {
                out.warn(w);
            }
            for p in &o.inputs {
                out.watch(p);
            }
        }

        let kernels = codegen::merge_kernels(amd_kernels, &cpu_kernels);
        let rust_file = out_dir.join(format!("{name}.rs"));
        write_if_changed(
            &rust_file,
            codegen::render(name, &objects, &kernels, &cpu_kernels).as_bytes(),
        )?;
        let manifest_file = out_dir
            .join("rocm-kernels")
            .join(format!("{name}.manifest.json"));
        let manifest = BuildManifest {
            name: name.to_string(),
            objects: objects
                .iter()
                .map(|o| ManifestObject {
                    backend: o.backend.to_string(),
                    source: o.source.rel.clone(),
                    targets: o.targets.clone(),
                    format: o.format.to_string(),
                    path: o.path.display().to_string(),
                })
                .collect(),
        };
        write_if_changed(
            &manifest_file,
            serde_json::to_string_pretty(&manifest)
                .expect("manifest serializes")
                .as_bytes(),
        )?;
        out.flush_watches();
        let reused = objects.iter().filter(|o| o.fresh).count();
        log.line(&format!(
            "done compiled={} reused={reused} elapsed_ms={}",
            objects.len() - reused,
            started.elapsed().as_millis()
        ));

        Ok(Compiled {
            name: name.to_string(),
            rust_file,
            manifest_file,
            backends: built,
            targets,
            objects: objects
                .into_iter()
                .map(|o| CompiledObject {
                    backend: o.backend,
                    source: o.source,
                    targets: o.targets,
                    format: o.format.to_string(),
                    path: o.path,
                    reused: o.fresh,
                })
                .collect(),
            warnings: Vec::new(),
        })
    }

    /// Every source file, globs expanded, each once, in the order given.
    fn sources(&self, crate_root: &Path) -> Result<Vec<SourceFile>, BuildError> {
        if self.files.is_empty() {
            return Err(BuildError::NoSources {
                message: "no kernel sources: add some with Build::file or Build::files".into(),
            });
        }
        let mut out: Vec<SourceFile> = Vec::new();
        for entry in &self.files {
            for p in source::expand(entry, crate_root)? {
                let f = SourceFile::new(p, crate_root);
                if !out.contains(&f) {
                    out.push(f);
                }
            }
        }
        Ok(out)
    }

    /// The toolchain to use: the builder's, else discovery (remembered under OUT_DIR). The
    /// compiler override (`Build::compiler` or `ROCM_HIP_COMPILER`) becomes the preferred
    /// compiler.
    fn find_toolchain(&self, env: &EnvReader, store_dir: &Path) -> Option<ToolchainInfo> {
        let mut tc = match &self.toolchain {
            Some(t) => ToolchainInfo::from(t),
            None => toolchain_cache::find(env, &store_dir.join("toolchain.json"), || {
                crate::toolchain::discover().best().cloned()
            })?,
        };
        let forced = self
            .compiler
            .clone()
            .or_else(|| env.get(ENV_HIP_COMPILER).map(PathBuf::from));
        if let Some(path) = forced {
            let path = which(&path).unwrap_or(path);
            tc.compilers.insert(0, CompilerInfo::from_path(path));
        }
        Some(tc)
    }

    #[allow(clippy::too_many_arguments)]
    fn build_amd(
        &self,
        toolchain: &ToolchainInfo,
        env: &EnvReader,
        targets: &[String],
        sources: &[SourceFile],
        crate_root: &Path,
        lib_dir: &Path,
        opts: &CompileOptions,
        log: &mut Log,
    ) -> Result<Vec<ObjectOut>, BuildError> {
        amd::check_targets(toolchain, targets)?;
        let compiler =
            toolchain
                .compilers
                .first()
                .cloned()
                .ok_or_else(|| BuildError::ToolchainNotFound {
                    searched: format!(
                        "the toolchain at {} has no HIP compiler",
                        toolchain.root.display()
                    ),
                })?;
        let mut fingerprint_env = Vec::new();
        if compiler.kind() == CompilerKind::Hipcc {
            for var in amd::HIPCC_ENV {
                if let Some(v) = env.get(var) {
                    fingerprint_env.push((var.to_string(), v));
                }
            }
        }
        let dir = lib_dir.join("amd");
        std::fs::create_dir_all(&dir).map_err(|e| BuildError::io("cannot create", &dir, e))?;
        let version_cache = lib_dir
            .parent()
            .unwrap_or(lib_dir)
            .join("compiler-versions.json");
        let amd = amd::AmdCompiler::new(
            toolchain.clone(),
            compiler,
            targets.to_vec(),
            &version_cache,
            fingerprint_env,
        )?;
        log.line(&format!(
            "amd compiler {} ({}) rocm {}",
            amd.compiler.path.display(),
            amd.version,
            toolchain.root.display()
        ));
        let hasher = cache::Hasher::default();
        let results = jobs::run_parallel(sources.to_vec(), |src| {
            amd.compile(&src, &dir, crate_root, opts, &hasher)
        });
        results.into_iter().collect()
    }
}

/// gfx targets of this machine's AMD GPUs (the last resort for targets).
fn detect_gfx_targets() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for d in crate::detect::detect().devices_of(Backend::Amd) {
        if let Some(arch) = &d.arch {
            if !out.contains(arch) {
                out.push(arch.clone());
            }
        }
    }
    out
}

/// Kernels found in an AMD object's metadata.
fn amd_kernels_of(_object: &ObjectOut) -> Result<Vec<KernelGen>, BuildError> {
    // Filled from `crate::code_object`'s AMDGPU metadata once it is merged.
    Ok(Vec::new())
}

fn validate_name(name: &str) -> Result<(), BuildError> {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        Ok(())
    } else {
        Err(BuildError::config(format!(
            "library name `{name}` must be non-empty and use only letters, digits, `_` and `-` \
             (it names files under OUT_DIR)"
        )))
    }
}

/// Looks a bare program name up in `PATH`.
fn which(program: &Path) -> Option<PathBuf> {
    if program.components().count() != 1 {
        return None;
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<(), BuildError> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    cache::write_atomic(path, bytes)
}

/// The `cargo:` lines of one run: warnings at once, watched files deduplicated at the end.
struct Output {
    enabled: bool,
    watched: Vec<PathBuf>,
    warnings: Vec<String>,
}

impl Output {
    fn new(enabled: bool) -> Output {
        Output {
            enabled,
            watched: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn line(&self, l: &str) {
        if self.enabled {
            println!("{l}");
        }
    }

    fn warn(&mut self, w: &str) {
        for l in w.lines() {
            self.line(&format!("cargo:warning={l}"));
        }
        self.warnings.push(w.to_string());
    }

    fn watch(&mut self, p: &Path) {
        self.watched.push(p.to_path_buf());
    }

    fn flush_watches(&mut self) {
        let mut seen = std::collections::HashSet::new();
        for p in std::mem::take(&mut self.watched) {
            if seen.insert(p.clone()) {
                self.line(&format!("cargo:rerun-if-changed={}", p.display()));
            }
        }
    }
}

/// `$OUT_DIR/rocm-kernels/<name>.log`: one block per run, so tests and people can see what was
/// compiled and what was reused.
struct Log {
    path: PathBuf,
    lines: Vec<String>,
}

impl Log {
    fn open(path: &Path) -> Log {
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        Log {
            path: path.to_path_buf(),
            lines: vec![format!("run unix_ms={unix_ms}")],
        }
    }

    fn line(&mut self, l: &str) {
        self.lines.push(l.to_string());
    }
}

impl Drop for Log {
    /// Written on every exit path, so a failed run is logged too.
    fn drop(&mut self) {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
        {
            let _ = f.write_all(format!("{}\n", self.lines.join("\n")).as_bytes());
        }
        self.lines.clear();
    }
}
