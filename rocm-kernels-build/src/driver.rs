//! One run of `Build::try_compile`: settle the settings, compile every backend's jobs in
//! parallel, and write the outputs under OUT_DIR.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::amd::{self, write_if_changed, AmdCompiler};
use crate::cache::Hasher;
use crate::codegen;
use crate::cpu::{self, CpuBuildOutput, CpuBuildRequest, CpuGlobalGen, CpuKernelGen};
use crate::error::BuildError;
use crate::jobs;
use crate::nvidia::NvidiaCompiler;
use crate::probe;
use crate::report::{Log, Output};
use crate::settings::{self, EnvReader, Metadata, ENV_HIPFLAGS, ENV_HIP_COMPILER};
use crate::source::{self, SourceFile};
use crate::toolchain_cache::{self, CompilerInfo, ToolchainInfo};
use crate::{Build, CompileOptions, Compiled, CompiledObject, ObjectOut};
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
        let manifest_path = paths.crate_root.join("Cargo.toml");
        let metadata = Metadata::from_manifest(&manifest_path)?;
        out.watch(&manifest_path);
        for s in &sources {
            out.watch(&s.abs);
        }

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
        let amd = if backends.contains(&Backend::Amd) {
            let (targets, origin) =
                settings::resolve_targets(&self.targets, env, &metadata, detect_gfx_targets)?;
            if targets.is_empty() {
                out.warn(&format!(
                    "the amd backend of `{name}` is skipped: no GPU targets were given and none \
                     were detected. Set them with ROCM_OFFLOAD_ARCH=gfx90a,gfx1030, with \
                     `[package.metadata.rocm] targets = [\"gfx90a\"]` in Cargo.toml, or with \
                     Build::offload_arch"
                ));
                log.line("skipped amd no-targets");
                None
            } else {
                let toolchain = toolchain.ok_or_else(|| BuildError::ToolchainNotFound {
                    searched: format!(
                        "amd was requested by {backend_origin}; looked at ROCM_PATH, HIP_PATH, \
                         /opt/rocm*, /usr and pip-installed ROCm SDKs"
                    ),
                })?;
                log.line(&format!("amd targets {} from {origin}", targets.join(",")));
                match self.prepare_amd(toolchain, env, targets, &paths) {
                    Ok(amd) => {
                        log.line(&format!(
                            "amd compiler {} ({}) rocm {}",
                            amd.compiler.path.display(),
                            amd.version,
                            amd.toolchain.root.display()
                        ));
                        Some(amd)
                    }
                    Err(e @ BuildError::IncompleteCompiler { .. }) if optional => {
                        skip_backend(out, &mut log, name, Backend::Amd, &e);
                        None
                    }
                    Err(e) => return Err(e),
                }
            }
        } else {
            None
        };
        let nvidia = if backends.contains(&Backend::Nvidia) {
            let (targets, origin) = settings::resolve_nvidia_targets(
                &self.nvidia_targets,
                env,
                &metadata,
                detect_nvidia_targets,
            )?;
            let nvcc = nvcc_lookup.get_or_init(|| find_nvcc(env)).clone();
            if nvcc.is_none() {
                out.warn(&format!(
                    "no nvcc found for the nvidia backend of `{name}`: the sources are embedded \
                     and compiled at run time with NVRTC. Install nvcc (CUDA toolkit, or `pip \
                     install nvidia-cuda-nvcc`) to embed cubins"
                ));
                log.line("nvidia source-only (no nvcc)");
                Some(NvidiaCompiler { nvcc, targets })
            } else if targets.is_empty() {
                out.warn(&format!(
                    "the nvidia backend of `{name}` is skipped: no NVIDIA targets were given and \
                     none were detected. Set them with ROCM_NVIDIA_ARCH=sm_90, with \
                     `[package.metadata.rocm] nvidia-targets = [\"sm_90\"]` in Cargo.toml, or \
                     with Build::nvidia_arch"
                ));
                log.line("skipped nvidia no-targets");
                None
            } else {
                log.line(&format!(
                    "nvidia targets {} from {origin}, nvcc {}",
                    targets.join(","),
                    nvcc.as_ref()
                        .map(|n| n.path.display().to_string())
                        .unwrap_or_default()
                ));
                Some(NvidiaCompiler { nvcc, targets })
            }
        } else {
            None
        };
        let cpu_request = backends.contains(&Backend::Cpu).then(|| CpuBuildRequest {
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
        });

        // The cpu build goes first: it is one long job, and the amd files fill the other slots.
        let mut work: Vec<Job> = Vec::new();
        work.extend(cpu_request.as_ref().map(Job::Cpu));
        if amd.is_some() {
            work.extend(sources.iter().cloned().map(Job::Amd));
        }
        if nvidia.is_some() {
            work.extend(sources.iter().cloned().map(Job::Nvidia));
        }
        let amd_dir = paths.lib.join("amd");
        let nvidia_dir = paths.lib.join("nvidia");
        let hasher = Hasher::default();
        let results = jobs::run_parallel(work, |job| match job {
            Job::Cpu(req) => {
                let t = Instant::now();
                Done::Cpu(
                    cpu::build_cpu(req).map_err(BuildError::from),
                    t.elapsed().as_millis(),
                )
            }
            Job::Amd(src) => Done::Gpu(
                Backend::Amd,
                amd.as_ref()
                    .expect("amd jobs exist only with a compiler")
                    .compile(&src, &amd_dir, &paths.crate_root, &opts, &hasher),
            ),
            Job::Nvidia(src) => Done::Gpu(
                Backend::Nvidia,
                nvidia
                    .as_ref()
                    .expect("nvidia jobs exist only with a compiler")
                    .compile(&src, &nvidia_dir, &paths.crate_root, &opts, &hasher),
            ),
        });

        let mut objects: Vec<ObjectOut> = Vec::new();
        let mut cpu_kernels: Vec<CpuKernelGen> = Vec::new();
        let mut cpu_globals: Vec<CpuGlobalGen> = Vec::new();
        let mut errors: Vec<(Backend, BuildError)> = Vec::new();
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
                    cpu_kernels = cpu_out.kernels;
                    cpu_globals = cpu_out.globals;
                    // Kernels compiled at run time (`cargo rocm tune`) link against the runtime
                    // in the executable: export its kernel-side symbols.
                    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
                        let list = cpu::write_runtime_dynamic_list(&paths.lib.join("cpu"))
                            .map_err(BuildError::from)?;
                        out.line(&format!(
                            "cargo:rustc-link-arg=-Wl,--dynamic-list={}",
                            list.display()
                        ));
                    }
                }
                Done::Gpu(backend, Ok(compiled)) => {
                    // One line per source: `compiled amd kernels/k.hip gfx1030,gfx90a 812ms`.
                    if let Some(first) = compiled.first() {
                        let targets: Vec<&str> =
                            compiled.iter().map(|o| o.target.as_str()).collect();
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
                    for o in compiled {
                        for w in &o.warnings {
                            out.warn(w);
                        }
                        for p in &o.inputs {
                            out.watch(p);
                        }
                        objects.push(o);
                    }
                }
                Done::Cpu(Err(e), _) => errors.push((Backend::Cpu, e)),
                Done::Gpu(backend, Err(e)) => errors.push((backend, e)),
            }
        }
        for (backend, e) in &errors {
            log.line(&format!(
                "failed {backend} {}",
                e.to_string().lines().next().unwrap_or("")
            ));
        }
        out.flush_watches();
        // A backend nobody asked for whose compiler fails on a one-line kernel too is broken
        // itself: skip it rather than fail a build the user wants for another backend.
        let mut amd = amd;
        let mut nvidia = nvidia;
        if optional {
            for backend in [Backend::Amd, Backend::Nvidia] {
                if !errors.iter().any(|(b, _)| *b == backend) {
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
                    skip_backend(out, &mut log, name, backend, &e);
                    errors.retain(|(b, _)| *b != backend);
                    objects.retain(|o| o.backend != backend);
                    match backend {
                        Backend::Amd => amd = None,
                        _ => nvidia = None,
                    }
                }
            }
        }
        if let Some((_, e)) = errors.into_iter().next() {
            return Err(e);
        }

        let manifest = codegen::manifest(name, &objects, &cpu_kernels, &cpu_globals)?;
        let rust_file = paths.out_dir.join(format!("{name}.rs"));
        write_if_changed(&rust_file, codegen::render(&manifest).as_bytes())?;
        let manifest_file = paths.state.join(format!("{name}.manifest.json"));
        write_if_changed(
            &manifest_file,
            &serde_json::to_vec_pretty(&manifest).expect("manifest serializes"),
        )?;

        let reused = objects.iter().filter(|o| o.fresh).count();
        log.line(&format!(
            "done compiled={} reused={reused} elapsed_ms={}",
            objects.len() - reused,
            started.elapsed().as_millis()
        ));
        let mut built = Vec::new();
        built.extend(cpu_request.map(|_| Backend::Cpu));
        built.extend(amd.as_ref().map(|_| Backend::Amd));
        built.extend(nvidia.as_ref().map(|_| Backend::Nvidia));
        Ok(Compiled {
            name: name.to_string(),
            rust_file,
            manifest_file,
            backends: built,
            targets: amd.map(|a| a.targets).unwrap_or_default(),
            objects: objects
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
            cpu_execution: cpu_kernels
                .iter()
                .map(|k| (k.name.clone(), k.execution()))
                .collect(),
        })
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
