//! One run of `Build::try_compile`: settle the settings, compile every backend's jobs in
//! parallel, and write the outputs under OUT_DIR.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::amd::{self, write_if_changed, AmdCompiler};
use crate::cache::Hasher;
use crate::codegen;
use crate::error::BuildError;
use crate::jobs;
use crate::nvidia::NvidiaCompiler;
use crate::probe;
use crate::report::{Log, Output};
use crate::settings::{self, EnvReader, Metadata, ENV_HIPFLAGS, ENV_HIP_COMPILER};
use crate::source::{self, SourceFile};
use crate::toolchain_cache::{self, CompilerInfo, ToolchainInfo};
use crate::{Build, CompileOptions, Compiled, CompiledObject, ObjectOut};
use rocm_cpu_frontend::{self as cpu, CpuBuildOutput, CpuBuildRequest, CpuGlobalGen, CpuKernelGen};
use rocm_kernels_core::Backend;
use rocm_toolkit::toolchain::CompilerKind;

/// A unit of parallel work.
enum Job<'a> {
    /// The whole cpu build (one job: it compiles into one static library).
    Cpu(&'a CpuBuildRequest),
    /// One source for the `amd` backend.
    Amd(SourceFile),
    /// One source for the `nvidia` backend (a cubin per target and PTX).
    Nvidia(SourceFile),
}

/// What a job produced: the cpu build, or a source's objects for one GPU backend.
enum Done {
    Cpu(Result<CpuBuildOutput, BuildError>, u128),
    Gpu(Backend, Result<Vec<ObjectOut>, BuildError>),
}

/// The paths of one run.
struct Paths {
    out_dir: PathBuf,
    crate_root: PathBuf,
    /// `$OUT_DIR/rocm-kernels`.
    state: PathBuf,
    /// `$OUT_DIR/rocm-kernels/<name>`.
    lib: PathBuf,
}

impl Build {
    /// One build, in steps: the paths, sources and settings; each backend's compiler
    /// (`amd_backend`, `nvidia_backend`, `cpu_request`); every job in parallel (`compile_all`);
    /// their results gathered (`collect_results`), a broken backend nobody asked for skipped
    /// (`skip_broken_backends`); the library written (`write_library`) and described
    /// (`describe_build`).
    pub(super) fn run(
        &self,
        name: &str,
        env: &EnvReader,
        out: &mut Output,
        started: Instant,
    ) -> Result<Compiled, BuildError> {
        validate_name(name)?;
        let paths = self.paths(name)?;
        let mut log = Log::open(&paths.state.join(format!("{name}.log")));
        let sources = self.sources(&paths.crate_root)?;
        let metadata = read_metadata_and_watch_inputs(&paths.crate_root, &sources, out)?;

        let toolchain = self.find_toolchain(env, &paths.state, &paths.crate_root);
        // Looked up at most once: finding nvcc may ask python3 where pip put it.
        let nvcc_lookup = std::cell::OnceCell::new();
        let (backends, backend_origin) = settings::resolve_backends(
            &self.backends,
            env,
            &metadata,
            || toolchain.is_some(),
            || nvcc_lookup.get_or_init(|| find_nvcc(env)).is_some(),
        )?;
        let opts = self.options(env, &paths.crate_root);

        // Backends nobody asked for (found on this machine) may be skipped with a warning when
        // their compiler is broken; asked-for ones fail the build.
        let optional = backend_origin == settings::Origin::Default;
        let ctx = BackendContext {
            name,
            env,
            metadata: &metadata,
            paths: &paths,
        };
        let mut amd = if backends.contains(&Backend::Amd) {
            self.amd_backend(&ctx, toolchain, backend_origin, optional, out, &mut log)?
        } else {
            None
        };
        let mut nvidia = if backends.contains(&Backend::Nvidia) {
            self.nvidia_backend(&ctx, &nvcc_lookup, out, &mut log)?
        } else {
            None
        };
        let cpu_request = backends
            .contains(&Backend::Cpu)
            .then(|| self.cpu_request(name, &sources, &paths, &opts));

        let compilers = Compilers {
            cpu: cpu_request.as_ref(),
            amd: amd.as_ref(),
            nvidia: nvidia.as_ref(),
        };
        let results = compile_all(&compilers, &sources, &paths, &opts);
        let mut built = collect_results(results, &paths, out, &mut log)?;
        for (backend, e) in &built.errors {
            log.line(&format!(
                "failed {backend} {}",
                e.to_string().lines().next().unwrap_or("")
            ));
        }
        out.flush_watches();
        if optional {
            skip_broken_backends(
                &mut built,
                &mut amd,
                &mut nvidia,
                &paths,
                name,
                out,
                &mut log,
            );
        }
        if let Some((_, e)) = std::mem::take(&mut built.errors).into_iter().next() {
            return Err(e);
        }

        let files = write_library(name, &paths, &built)?;
        let reused = built.objects.iter().filter(|o| o.fresh).count();
        log.line(&format!(
            "done compiled={} reused={reused} elapsed_ms={}",
            built.objects.len() - reused,
            started.elapsed().as_millis()
        ));
        let compilers = Compilers {
            cpu: cpu_request.as_ref(),
            amd: amd.as_ref(),
            nvidia: nvidia.as_ref(),
        };
        Ok(describe_build(name, files, &compilers, built))
    }

    /// The amd backend's compiler, or `None` (with a warning) when there are no targets or,
    /// for an optional backend, its compiler is incomplete.
    fn amd_backend(
        &self,
        ctx: &BackendContext<'_>,
        toolchain: Option<ToolchainInfo>,
        backend_origin: settings::Origin,
        optional: bool,
        out: &mut Output,
        log: &mut Log,
    ) -> Result<Option<AmdCompiler>, BuildError> {
        let name = ctx.name;
        let (targets, origin) =
            settings::resolve_targets(&self.targets, ctx.env, ctx.metadata, detect_gfx_targets)?;
        if targets.is_empty() {
            out.warn(&format!(
                "the amd backend of `{name}` is skipped: no GPU targets were given and none \
                 were detected. Set them with ROCM_OFFLOAD_ARCH=gfx90a,gfx1030, with \
                 `[package.metadata.rocm] targets = [\"gfx90a\"]` in Cargo.toml, or with \
                 Build::offload_arch"
            ));
            log.line("skipped amd no-targets");
            return Ok(None);
        }
        let toolchain = toolchain.ok_or_else(|| BuildError::ToolchainNotFound {
            searched: format!(
                "amd was requested by {backend_origin}; looked at ROCM_PATH, HIP_PATH, \
                 /opt/rocm*, /usr and pip-installed ROCm SDKs"
            ),
        })?;
        log.line(&format!("amd targets {} from {origin}", targets.join(",")));
        match self.prepare_amd(toolchain, ctx.env, targets, ctx.paths) {
            Ok(amd) => {
                log.line(&format!(
                    "amd compiler {} ({}) rocm {}",
                    amd.compiler.path.display(),
                    amd.version,
                    amd.toolchain.root.display()
                ));
                Ok(Some(amd))
            }
            Err(e @ BuildError::IncompleteCompiler { .. }) if optional => {
                skip_backend(out, log, name, Backend::Amd, &e);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The nvidia backend's compiler: nvcc with its targets, NVRTC at run time (no nvcc), or
    /// `None` (with a warning) when nvcc has no targets.
    fn nvidia_backend(
        &self,
        ctx: &BackendContext<'_>,
        nvcc_lookup: &std::cell::OnceCell<Option<rocm_toolkit::nvcc::Nvcc>>,
        out: &mut Output,
        log: &mut Log,
    ) -> Result<Option<NvidiaCompiler>, BuildError> {
        let name = ctx.name;
        let (targets, origin) = settings::resolve_nvidia_targets(
            &self.nvidia_targets,
            ctx.env,
            ctx.metadata,
            detect_nvidia_targets,
        )?;
        let nvcc = nvcc_lookup.get_or_init(|| find_nvcc(ctx.env)).clone();
        if nvcc.is_none() {
            out.warn(&format!(
                "no nvcc found for the nvidia backend of `{name}`: the sources are embedded \
                 and compiled at run time with NVRTC. Install nvcc (CUDA toolkit, or `pip \
                 install nvidia-cuda-nvcc`) to embed cubins"
            ));
            log.line("nvidia source-only (no nvcc)");
            Ok(Some(NvidiaCompiler { nvcc, targets }))
        } else if targets.is_empty() {
            out.warn(&format!(
                "the nvidia backend of `{name}` is skipped: no NVIDIA targets were given and \
                 none were detected. Set them with ROCM_NVIDIA_ARCH=sm_90, with \
                 `[package.metadata.rocm] nvidia-targets = [\"sm_90\"]` in Cargo.toml, or \
                 with Build::nvidia_arch"
            ));
            log.line("skipped nvidia no-targets");
            Ok(None)
        } else {
            log.line(&format!(
                "nvidia targets {} from {origin}, nvcc {}",
                targets.join(","),
                nvcc.as_ref()
                    .map(|n| n.path.display().to_string())
                    .unwrap_or_default()
            ));
            Ok(Some(NvidiaCompiler { nvcc, targets }))
        }
    }

    /// What the cpu front end is asked to build.
    fn cpu_request(
        &self,
        name: &str,
        sources: &[SourceFile],
        paths: &Paths,
        opts: &CompileOptions,
    ) -> CpuBuildRequest {
        CpuBuildRequest {
            name: name.to_string(),
            sources: sources.iter().map(|s| s.abs.clone()).collect(),
            crate_root: paths.crate_root.clone(),
            out_dir: paths.lib.join("cpu"),
            header_dir: cpu::cpu_include_dir(),
            include_dirs: opts.includes.clone(),
            defines: opts.defines.clone(),
            // Only the builder's flags: ROCM_HIPFLAGS is for the HIP compiler.
            flags: self.flags.clone(),
            opt_level: self.opt_level,
            cargo_metadata: self.cargo_metadata,
            race_variant: self.cpu_race_variant,
        }
    }

    fn paths(&self, name: &str) -> Result<Paths, BuildError> {
        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or_else(|| {
                    BuildError::config(
                        "OUT_DIR is not set: call Build from a build script (build.rs), or set \
                         Build::out_dir",
                    )
                })?,
        };
        let crate_root = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok())
            .ok_or_else(|| BuildError::config("cannot tell the crate root (CARGO_MANIFEST_DIR)"))?;
        let state = out_dir.join("rocm-kernels");
        let lib = state.join(name);
        std::fs::create_dir_all(&lib).map_err(|e| BuildError::io("cannot create", &lib, e))?;
        Ok(Paths {
            out_dir,
            crate_root,
            state,
            lib,
        })
    }

    fn options(&self, env: &EnvReader, crate_root: &Path) -> CompileOptions {
        let env_flags = env
            .get(ENV_HIPFLAGS)
            .map(|f| f.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .unwrap_or_default();
        CompileOptions {
            includes: self.includes.iter().map(|i| crate_root.join(i)).collect(),
            defines: self.defines.clone(),
            flags: self.flags.iter().cloned().chain(env_flags).collect(),
            opt_level: self.opt_level.unwrap_or(3),
        }
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
    fn find_toolchain(
        &self,
        env: &EnvReader,
        state_dir: &Path,
        crate_root: &Path,
    ) -> Option<ToolchainInfo> {
        let mut tc = match &self.toolchain {
            Some(t) => ToolchainInfo::from(t),
            None => {
                let watch = resolution_inputs(crate_root);
                toolchain_cache::find(env, &state_dir.join("toolchain.json"), &watch, || {
                    // The same resolution as `cargo rocm`: +NAME/CARGO_ROCM_TOOLCHAIN,
                    // directory override, rocm-toolchain.toml, default, then discovery.
                    match rocm_toolkit::home::resolve_toolchain(crate_root) {
                        Ok(resolved) => Some(resolved.toolchain),
                        Err(rocm_toolkit::home::HomeError::NoToolchain) => None,
                        Err(e) => {
                            println!("cargo:warning=ROCm toolchain: {e}");
                            None
                        }
                    }
                })?
            }
        };
        let forced = self
            .compiler
            .clone()
            .or_else(|| env.get(ENV_HIP_COMPILER).map(PathBuf::from));
        if let Some(path) = forced {
            let path = which(&path).unwrap_or(path);
            tc.compilers.insert(
                0,
                CompilerInfo::from_path(path, &state_dir.join("compiler-probes.json")),
            );
        }
        Some(tc)
    }

    /// Checks the targets against the toolchain, picks its first complete compiler (or the one
    /// forced with `Build::compiler`/`ROCM_HIP_COMPILER`, which must be complete) and gets the
    /// compiler's version (cached).
    fn prepare_amd(
        &self,
        toolchain: ToolchainInfo,
        env: &EnvReader,
        targets: Vec<String>,
        paths: &Paths,
    ) -> Result<AmdCompiler, BuildError> {
        amd::check_targets(&toolchain, &targets)?;
        let forced = self.compiler.is_some() || env.get(ENV_HIP_COMPILER).is_some();
        let compiler = match toolchain.compilers.first() {
            Some(first) if forced => {
                amd::check_complete(&toolchain, first)?;
                first.clone()
            }
            _ => amd::choose_compiler(&toolchain)?,
        };
        let mut fingerprint_env = Vec::new();
        if compiler.kind() == CompilerKind::Hipcc {
            for var in amd::HIPCC_ENV {
                if let Some(v) = env.get(var) {
                    fingerprint_env.push((var.to_string(), v));
                }
            }
        }
        let dir = paths.lib.join("amd");
        std::fs::create_dir_all(&dir).map_err(|e| BuildError::io("cannot create", &dir, e))?;
        AmdCompiler::new(
            toolchain,
            compiler,
            targets,
            &paths.state.join("compiler-versions.json"),
            fingerprint_env,
        )
    }
}

/// What every backend's setup reads.
struct BackendContext<'a> {
    name: &'a str,
    env: &'a EnvReader,
    metadata: &'a Metadata,
    paths: &'a Paths,
}

/// The compilers of the backends this run builds.
struct Compilers<'a> {
    cpu: Option<&'a CpuBuildRequest>,
    amd: Option<&'a AmdCompiler>,
    nvidia: Option<&'a NvidiaCompiler>,
}

/// What the jobs produced, every backend together.
#[derive(Default)]
struct Built {
    objects: Vec<ObjectOut>,
    cpu_kernels: Vec<CpuKernelGen>,
    cpu_globals: Vec<CpuGlobalGen>,
    errors: Vec<(Backend, BuildError)>,
}

/// Reads `[package.metadata.rocm]` and tells cargo to watch the manifest and the sources.
fn read_metadata_and_watch_inputs(
    crate_root: &Path,
    sources: &[SourceFile],
    out: &mut Output,
) -> Result<Metadata, BuildError> {
    let manifest_path = crate_root.join("Cargo.toml");
    let metadata = Metadata::from_manifest(&manifest_path)?;
    out.watch(&manifest_path);
    for s in sources {
        out.watch(&s.abs);
    }
    Ok(metadata)
}

/// Compiles every backend's jobs in parallel: the cpu build first (it is one long job, and the
/// amd files fill the other slots), then a job per source and GPU backend.
fn compile_all(
    compilers: &Compilers<'_>,
    sources: &[SourceFile],
    paths: &Paths,
    opts: &CompileOptions,
) -> Vec<Done> {
    let mut work: Vec<Job> = Vec::new();
    work.extend(compilers.cpu.map(Job::Cpu));
    if compilers.amd.is_some() {
        work.extend(sources.iter().cloned().map(Job::Amd));
    }
    if compilers.nvidia.is_some() {
        work.extend(sources.iter().cloned().map(Job::Nvidia));
    }
    let amd_dir = paths.lib.join("amd");
    let nvidia_dir = paths.lib.join("nvidia");
    let hasher = Hasher::default();
    jobs::run_parallel(work, |job| match job {
        Job::Cpu(req) => {
            let t = Instant::now();
            Done::Cpu(
                cpu::build_cpu(req).map_err(BuildError::from),
                t.elapsed().as_millis(),
            )
        }
        Job::Amd(src) => Done::Gpu(
            Backend::Amd,
            compilers
                .amd
                .expect("amd jobs exist only with a compiler")
                .compile(&src, &amd_dir, &paths.crate_root, opts, &hasher),
        ),
        Job::Nvidia(src) => Done::Gpu(
            Backend::Nvidia,
            compilers
                .nvidia
                .expect("nvidia jobs exist only with a compiler")
                .compile(&src, &nvidia_dir, &paths.crate_root, opts, &hasher),
        ),
    })
}

/// Gathers the jobs' results: logs each, passes on their warnings and the files to watch, and
/// keeps the objects, the cpu kernels and globals, and the errors.
fn collect_results(
    results: Vec<Done>,
    paths: &Paths,
    out: &mut Output,
    log: &mut Log,
) -> Result<Built, BuildError> {
    let mut built = Built::default();
    for done in results {
        match done {
            Done::Cpu(Ok(cpu_out), ms) => {
                log.line(&format!(
                    "built cpu {} kernels {ms}ms",
                    cpu_out.kernels.len()
                ));
                for p in &cpu_out.rerun_if_changed {
                    out.watch(p);
                }
                for w in &cpu_out.warnings {
                    out.warn(w);
                }
                built.cpu_kernels = cpu_out.kernels;
                built.cpu_globals = cpu_out.globals;
                export_cpu_runtime_symbols(paths, out)?;
            }
            Done::Gpu(backend, Ok(compiled)) => {
                log_gpu_source(backend, &compiled, log);
                for o in compiled {
                    for w in &o.warnings {
                        out.warn(w);
                    }
                    for p in &o.inputs {
                        out.watch(p);
                    }
                    built.objects.push(o);
                }
            }
            Done::Cpu(Err(e), _) => built.errors.push((Backend::Cpu, e)),
            Done::Gpu(backend, Err(e)) => built.errors.push((backend, e)),
        }
    }
    Ok(built)
}

/// Kernels compiled at run time (`cargo rocm tune`) link against the runtime in the executable:
/// export its kernel-side symbols (Linux).
fn export_cpu_runtime_symbols(paths: &Paths, out: &mut Output) -> Result<(), BuildError> {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        let list =
            cpu::write_runtime_dynamic_list(&paths.lib.join("cpu")).map_err(BuildError::from)?;
        out.line(&format!(
            "cargo:rustc-link-arg=-Wl,--dynamic-list={}",
            list.display()
        ));
    }
    Ok(())
}

/// One line per source: `compiled amd kernels/k.hip gfx1030,gfx90a 812ms`.
fn log_gpu_source(backend: Backend, compiled: &[ObjectOut], log: &mut Log) {
    if let Some(first) = compiled.first() {
        let targets: Vec<&str> = compiled.iter().map(|o| o.target.as_str()).collect();
        log.line(&format!(
            "{} {backend} {} {} {}ms",
            if compiled.iter().all(|o| o.fresh) {
                "fresh"
            } else {
                "compiled"
            },
            first.source.rel,
            targets.join(","),
            compiled.iter().map(|o| o.millis).sum::<u64>()
        ));
    }
}

/// A backend nobody asked for whose compiler fails on a one-line kernel too is broken itself:
/// skip it (its errors and objects dropped, its compiler gone) rather than fail a build the user
/// wants for another backend.
fn skip_broken_backends(
    built: &mut Built,
    amd: &mut Option<AmdCompiler>,
    nvidia: &mut Option<NvidiaCompiler>,
    paths: &Paths,
    name: &str,
    out: &mut Output,
    log: &mut Log,
) {
    for backend in [Backend::Amd, Backend::Nvidia] {
        if !built.errors.iter().any(|(b, _)| *b == backend) {
            continue;
        }
        let probe_dir = paths.lib.join(format!("{backend}-probe"));
        let probe = match backend {
            Backend::Amd => amd.as_ref().map(|c| probe::amd(c, &probe_dir)),
            _ => nvidia.as_ref().map(|c| probe::nvidia(c, &probe_dir)),
        };
        let _ = std::fs::remove_dir_all(&probe_dir);
        if let Some(Err(broken)) = probe {
            let e = BuildError::BrokenCompiler {
                backend,
                source: Box::new(broken),
            };
            skip_backend(out, log, name, backend, &e);
            built.errors.retain(|(b, _)| *b != backend);
            built.objects.retain(|o| o.backend != backend);
            match backend {
                Backend::Amd => *amd = None,
                _ => *nvidia = None,
            }
        }
    }
}

/// Writes `$OUT_DIR/<name>.rs` and the manifest for tools (each only when changed).
fn write_library(name: &str, paths: &Paths, built: &Built) -> Result<LibraryFiles, BuildError> {
    let manifest = codegen::manifest(name, &built.objects, &built.cpu_kernels, &built.cpu_globals)?;
    let rust_file = paths.out_dir.join(format!("{name}.rs"));
    write_if_changed(&rust_file, codegen::render(&manifest).as_bytes())?;
    let manifest_file = paths.state.join(format!("{name}.manifest.json"));
    write_if_changed(
        &manifest_file,
        &serde_json::to_vec_pretty(&manifest).expect("manifest serializes"),
    )?;
    Ok(LibraryFiles {
        rust_file,
        manifest_file,
    })
}

/// The two files a run writes: `$OUT_DIR/<name>.rs` and the manifest for tools.
struct LibraryFiles {
    rust_file: PathBuf,
    manifest_file: PathBuf,
}

/// What [`Build::try_compile`] returns: the backends built (those whose compiler was kept), the
/// amd targets, every object, and how each cpu kernel runs.
fn describe_build(
    name: &str,
    files: LibraryFiles,
    compilers: &Compilers<'_>,
    built: Built,
) -> Compiled {
    let mut backends = Vec::new();
    backends.extend(compilers.cpu.map(|_| Backend::Cpu));
    backends.extend(compilers.amd.map(|_| Backend::Amd));
    backends.extend(compilers.nvidia.map(|_| Backend::Nvidia));
    Compiled {
        name: name.to_string(),
        rust_file: files.rust_file,
        manifest_file: files.manifest_file,
        backends,
        targets: compilers.amd.map(|a| a.targets.clone()).unwrap_or_default(),
        objects: built
            .objects
            .into_iter()
            .map(|o| CompiledObject {
                backend: o.backend,
                source: o.source,
                target: o.target,
                format: o.format,
                path: o.path,
                reused: o.fresh,
            })
            .collect(),
        warnings: Vec::new(),
        cpu_execution: built
            .cpu_kernels
            .iter()
            .map(|k| (k.name.clone(), k.execution()))
            .collect(),
    }
}

/// gfx targets of this machine's AMD GPUs (the last resort for targets).
fn detect_gfx_targets() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for d in rocm_toolkit::detect::detect().devices_of(Backend::Amd) {
        if let Some(arch) = &d.arch {
            if !out.contains(arch) {
                out.push(arch.clone());
            }
        }
    }
    out
}

/// Warns that `backend` is left out of library `name`, and why.
fn skip_backend(out: &mut Output, log: &mut Log, name: &str, backend: Backend, why: &BuildError) {
    out.warn(&format!(
        "the {backend} backend of `{name}` is skipped (it was not asked for; set ROCM_BACKENDS \
         to make it required): {why}"
    ));
    log.line(&format!("skipped {backend} broken-compiler"));
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

/// nvcc for the `nvidia` backend, looked up through the build script's environment (so every
/// variable it reads is reported with `rerun-if-env-changed`).
fn find_nvcc(env: &EnvReader) -> Option<rocm_toolkit::nvcc::Nvcc> {
    let read = |v: &str| env.get(v).map(std::ffi::OsString::from);
    rocm_toolkit::nvcc::find_nvcc(&read).ok()
}

/// `sm_XX` of this machine's NVIDIA GPUs (the last resort for targets; never required).
fn detect_nvidia_targets() -> Vec<String> {
    let mut targets: Vec<String> = rocm_toolkit::detect::detect()
        .devices_of(Backend::Nvidia)
        .filter_map(|d| {
            d.compute_capability
                .as_deref()
                .map(|cc| format!("sm_{}", cc.replace('.', "")))
        })
        .collect();
    targets.sort();
    targets.dedup();
    targets
}

/// Files the toolchain choice depends on besides the environment: every `rocm-toolchain.toml`
/// from the crate up to the root (present or not: one appearing changes the choice), and the
/// home's settings and toolchain folder.
fn resolution_inputs(crate_root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = crate_root
        .ancestors()
        .map(|d| d.join(rocm_toolkit::home::PIN_FILE_NAME))
        .collect();
    if let Ok(home) = rocm_toolkit::home::Home::from_env() {
        files.push(home.settings_path());
        files.push(home.toolchains_dir());
    }
    files
}
