//! Compiling a kernel's source with compile-time parameters at run time, cached on disk, and
//! compiled ahead on worker threads while the device measures.
//!
//! * `cpu`: the cpu build of `rocm-cpu-frontend` (region forms and all, as the crate's own build)
//!   into a static library, linked into a shared object and `dlopen`ed; its kernels call the
//!   runtime linked into this executable, which exports it for them (the build's dynamic list).
//! * `nvidia`: NVRTC (`rocm_kernels::runtime::rtc::nvidia::compile_at_run_time`), machine
//!   code for the device's `sm_XX`.
//! * `amd`: hipRTC (`rocm_kernels::runtime::rtc::amd::compile_at_run_time`), a code object
//!   for the device's gfx target.
//!
//! Each result becomes a small [`KernelLibrary`] of its own (leaked: the runtime loads
//! `&'static` libraries) and is stored under `<cache>/<backend>/<key>/`, where the key is a
//! SHA-256 of the source and the local headers it includes, the kernel-language headers, the
//! definitions, the target and the compiler's version. An entry is written to a temporary
//! folder and renamed into place, so a process killed mid-compile leaves nothing half-written;
//! a failed compile is cached too (its message), so a resumed run does not compile it again.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use rocm_kernels::library::{
    CodeObject, CpuEntry, CpuExecution, KernelDecl, KernelLibrary, ObjectFormat, ObjectSymbol,
    ParamDecl, ParamKind,
};
use rocm_kernels::Backend;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Error;

/// A compile's failure (its message as the compiler or the file system words it).
fn tune_err(e: impl std::fmt::Display) -> Error {
    Error::Tune(e.to_string())
}

/// The kernel's source, as the compiles see it.
#[derive(Debug, Clone)]
pub(crate) struct SourceSpec {
    /// The kernel's name in the library.
    pub kernel: String,
    /// The file name shown in messages and given to NVRTC / hipRTC.
    pub file: String,
    /// The file on disk (required on cpu; nvidia and amd take the text and add its folder to
    /// the include path).
    pub path: Option<PathBuf>,
    pub text: Vec<u8>,
    /// More include folders.
    pub includes: Vec<PathBuf>,
    /// The kernel's parameters as the crate's build recorded them.
    pub params: &'static [ParamDecl],
}

/// One compiled configuration, loaded.
pub(crate) struct Variant {
    pub library: &'static KernelLibrary,
    /// What the compiler's output says of the kernel: AMD code objects' `vgprs`, `sgprs`,
    /// `lds_bytes`, `scratch_bytes`, `spills` (none on cpu and nvidia, where the driver tells
    /// at load time).
    pub features: rocm_tune::Features,
    /// The shared object of a cpu variant (kept loaded as long as the variant is used).
    _so: Option<libloading::Library>,
}

/// What a cache entry records.
#[derive(Debug, Serialize, Deserialize)]
struct Meta {
    kernel: String,
    defines: Vec<(String, String)>,
    compiler: String,
    /// `ok` or the compiler's message.
    result: Result<Image, String>,
    seconds: f64,
}

#[derive(Debug, Serialize, Deserialize)]
struct Image {
    /// `so` (cpu), `cubin`, `ptx`, `amdgpu-elf`.
    format: String,
    target: String,
    /// Kernel name → symbol, with how a cpu kernel runs.
    kernels: Vec<CachedKernel>,
    /// Static features of the tuned kernel (see [`Variant::features`]).
    #[serde(default)]
    features: rocm_tune::Features,
}

#[derive(Debug, Serialize, Deserialize)]
struct CachedKernel {
    name: String,
    symbol: String,
    /// cpu only: `regions`, `per-thread loop`, `fibers: why`.
    execution: Option<String>,
    /// cpu only: the parameters as the cpu build read them.
    params: Vec<(String, String, u32, bool)>,
}

/// The environment variable that turns a harness process into a compile worker: its value is
/// the path of a [`WorkerRequest`] (JSON). Set only by [`Compiler::compile_in_child`].
pub(crate) const WORKER_ENV: &str = "ROCM_TEST_RTC_WORKER";

/// One compile for a worker process: the compiler's fields and the configuration.
#[derive(Serialize, Deserialize)]
struct WorkerRequest {
    backend: String,
    arch: String,
    kernel: String,
    file: String,
    path: Option<PathBuf>,
    text: Vec<u8>,
    includes: Vec<PathBuf>,
    dir: PathBuf,
    fixed_key: String,
    compiler: String,
    defines: Vec<(String, String)>,
    entry: PathBuf,
}

/// In a compile worker (a harness started with [`WORKER_ENV`]): compile the request into its
/// cache entry and exit. `None` when this process is not a worker.
pub(crate) fn worker_main() -> Option<std::process::ExitCode> {
    let path = std::env::var_os(WORKER_ENV)?;
    let run = || -> Result<(), String> {
        let text = std::fs::read(&path).map_err(|e| e.to_string())?;
        let r: WorkerRequest = serde_json::from_slice(&text).map_err(|e| e.to_string())?;
        let compiler = Compiler {
            backend: r.backend.parse::<Backend>().map_err(|e| e.to_string())?,
            arch: r.arch,
            source: SourceSpec {
                kernel: r.kernel,
                file: r.file,
                path: r.path,
                text: r.text,
                includes: r.includes,
                params: &[],
            },
            dir: r.dir,
            fixed_key: r.fixed_key,
            compiler: r.compiler,
        };
        compiler
            .compile_into(&r.entry, &r.defines)
            .map_err(|e| e.to_string())
    };
    Some(match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rocm-test compile worker: {e}");
            std::process::ExitCode::FAILURE
        }
    })
}

/// Compiles one kernel's source for one device.
pub(crate) struct Compiler {
    backend: Backend,
    /// `sm_90`, `gfx90a`, `x86_64`.
    arch: String,
    source: SourceSpec,
    dir: PathBuf,
    /// Compiler and headers: the part of the key that is the same for every configuration.
    fixed_key: String,
    compiler: String,
}

impl Compiler {
    /// A compiler for `source` on `backend`/`arch`, caching under `cache_dir`. Fails when the
    /// backend's compiler is missing (the message says what to install).
    pub fn new(
        backend: Backend,
        arch: &str,
        source: SourceSpec,
        cache_dir: &Path,
    ) -> Result<Compiler, Error> {
        let (compiler, headers) = match backend {
            Backend::Cpu => {
                let path = source.path.clone().ok_or_else(|| {
                    Error::Declaration(format!(
                        "the source of `{}` ({}) is not on disk here: the cpu backend compiles \
                         it from its file (run from the crate, or set `Tunable::source`)",
                        source.kernel, source.file
                    ))
                })?;
                let req = cpu_request(&path, &source.includes, &[], &cache_dir.join("probe"));
                let id = rocm_cpu_frontend::compiler_identity(&req).map_err(tune_err)?;
                (id, tree_digest(&rocm_cpu_frontend::cpu_include_dir()))
            }
            Backend::Nvidia => {
                let (version, lib) =
                    rocm_kernels::runtime::rtc::nvidia::nvrtc_version().map_err(|e| {
                        Error::runtime_while(
                            "compile-time parameters need NVRTC on the nvidia backend",
                        )(e)
                    })?;
                let headers = rocm_kernels_core::headers::nvidia_dir()
                    .map(|d| tree_digest(&d))
                    .unwrap_or_default();
                (format!("nvrtc {version} ({lib})"), headers)
            }
            Backend::Amd => {
                let (version, lib) =
                    rocm_kernels::runtime::rtc::amd::hiprtc_version().map_err(|e| {
                        Error::runtime_while(
                            "compile-time parameters need hipRTC on the amd backend",
                        )(e)
                    })?;
                (format!("hiprtc {version} ({lib})"), String::new())
            }
        };
        let mut h = Sha256::new();
        for part in [
            env!("CARGO_PKG_VERSION").as_bytes(),
            backend.as_str().as_bytes(),
            arch.as_bytes(),
            compiler.as_bytes(),
            headers.as_bytes(),
            source.kernel.as_bytes(),
            source_digest(&source).as_bytes(),
        ] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
        Ok(Compiler {
            backend,
            arch: arch.to_owned(),
            dir: cache_dir.join(backend.as_str()),
            fixed_key: hex(&h.finalize()),
            compiler,
            source,
        })
    }

    /// The cache key of a configuration's definitions.
    fn key(&self, defines: &[(String, String)]) -> String {
        let mut h = Sha256::new();
        h.update(self.fixed_key.as_bytes());
        for (n, v) in defines {
            h.update(b"\0");
            h.update(n.as_bytes());
            h.update(b"=");
            h.update(v.as_bytes());
        }
        hex(&h.finalize())[..24].to_owned()
    }

    /// The configuration compiled and loaded: from the disk cache when it is there, else by
    /// compiling it now. `Err` is the compiler's message (a failed compile is cached too).
    pub fn get(&self, defines: &[(String, String)]) -> Result<Variant, Error> {
        let entry = self.dir.join(self.key(defines));
        let meta = match read_meta(&entry) {
            Some(meta) => meta,
            None => {
                self.compile_into(&entry, defines)?;
                read_meta(&entry).ok_or_else(|| {
                    Error::Tune(format!(
                        "the compile cache entry {} is unreadable",
                        entry.display()
                    ))
                })?
            }
        };
        let image = meta.result.map_err(Error::Tune)?;
        let (library, so) = self.load(&entry, &image)?;
        Ok(Variant {
            library,
            features: image.features.clone(),
            _so: so,
        })
    }

    /// Compile into `entry` in a process of its own (this executable, as a compile worker), for
    /// GPU backends: compile threads of one process were seen to queue on NVRTC (see
    /// docs/benchmarks.md, "Tuning overhead"), while processes use the cores. The cpu backend's compiles are processes already (the host compiler). Falls back
    /// to compiling here when the worker cannot start or leaves no entry.
    fn compile_in_child(&self, entry: &Path, defines: &[(String, String)]) -> Result<(), Error> {
        if self.backend == Backend::Cpu || std::env::var_os("ROCM_TEST_RTC_IN_PROCESS").is_some() {
            return self.compile_into(entry, defines);
        }
        let spawned = (|| -> std::io::Result<bool> {
            let exe = std::env::current_exe()?;
            let request = WorkerRequest {
                backend: self.backend.as_str().to_owned(),
                arch: self.arch.clone(),
                kernel: self.source.kernel.clone(),
                file: self.source.file.clone(),
                path: self.source.path.clone(),
                text: self.source.text.clone(),
                includes: self.source.includes.clone(),
                dir: self.dir.clone(),
                fixed_key: self.fixed_key.clone(),
                compiler: self.compiler.clone(),
                defines: defines.to_vec(),
                entry: entry.to_owned(),
            };
            std::fs::create_dir_all(&self.dir)?;
            let file = tempfile::Builder::new()
                .prefix("worker-")
                .suffix(".json")
                .tempfile_in(&self.dir)?;
            std::fs::write(file.path(), serde_json::to_vec(&request)?)?;
            let status = std::process::Command::new(exe)
                .env(WORKER_ENV, file.path())
                .env_remove(crate::events::tune::REQUEST_ENV)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::inherit())
                .status()?;
            Ok(status.success())
        })();
        match spawned {
            Ok(true) if read_meta(entry).is_some() => Ok(()),
            _ => self.compile_into(entry, defines),
        }
    }

    /// Compile into a fresh folder and rename it to `entry` (another process may win the
    /// race: then its entry is used).
    fn compile_into(&self, entry: &Path, defines: &[(String, String)]) -> Result<(), Error> {
        let tmp = entry.with_extension(format!(
            "tmp{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp)
            .map_err(|e| Error::Tune(format!("{}: {e}", tmp.display())))?;
        let started = Instant::now();
        let result = match self.backend {
            Backend::Cpu => self.compile_cpu(&tmp, defines),
            Backend::Nvidia | Backend::Amd => self.compile_gpu(&tmp, defines),
        };
        let meta = Meta {
            kernel: self.source.kernel.clone(),
            defines: defines.to_vec(),
            compiler: self.compiler.clone(),
            result: result.map_err(|e| e.to_string()),
            seconds: started.elapsed().as_secs_f64(),
        };
        let text = serde_json::to_vec_pretty(&meta).map_err(tune_err)?;
        std::fs::write(tmp.join("meta.json"), text).map_err(tune_err)?;
        // Only what loading needs stays: the cpu build's intermediates go.
        let _ = std::fs::remove_dir_all(tmp.join("build"));
        if std::fs::rename(&tmp, entry).is_err() {
            // Someone else made it first.
            let _ = std::fs::remove_dir_all(&tmp);
        }
        Ok(())
    }

    fn compile_cpu(&self, dir: &Path, defines: &[(String, String)]) -> Result<Image, Error> {
        let path = self.source.path.as_ref().expect("checked in new");
        let req = cpu_request(path, &self.source.includes, defines, &dir.join("build"));
        let built = rocm_cpu_frontend::build_cpu(&req).map_err(tune_err)?;
        rocm_cpu_frontend::link_shared_object(&req, &built, &dir.join("kernels.so"))
            .map_err(tune_err)?;
        // No static features on cpu: a model would need a compile per configuration it ranks,
        // which costs more here than measuring.
        Ok(Image {
            features: rocm_tune::Features::new(),
            format: "so".into(),
            target: self.arch.clone(),
            kernels: built
                .kernels
                .iter()
                .map(|k| CachedKernel {
                    name: k.name.clone(),
                    symbol: k.symbol.clone(),
                    execution: Some(k.execution()),
                    params: k
                        .params
                        .iter()
                        .map(|p| (p.name.clone(), p.type_name.clone(), p.size, p.is_pointer))
                        .collect(),
                })
                .collect(),
        })
    }

    fn compile_gpu(&self, dir: &Path, defines: &[(String, String)]) -> Result<Image, Error> {
        let mut options: Vec<String> = defines.iter().map(|(n, v)| format!("-D{n}={v}")).collect();
        let folders = self
            .source
            .path
            .as_ref()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .into_iter()
            .chain(self.source.includes.iter().cloned());
        for d in folders {
            options.push(match self.backend {
                Backend::Nvidia => format!("--include-path={}", d.display()),
                _ => format!("-I{}", d.display()),
            });
        }
        let kernels = [self.source.kernel.as_str()];
        let image = match self.backend {
            Backend::Nvidia => rocm_kernels::runtime::rtc::nvidia::compile_at_run_time(
                &self.source.file,
                &self.source.text,
                &self.arch,
                &kernels,
                &options,
            ),
            _ => rocm_kernels::runtime::rtc::amd::compile_at_run_time(
                &self.source.file,
                &self.source.text,
                &self.arch,
                &kernels,
                &options,
            ),
        }
        .map_err(tune_err)?;
        if image.symbols.is_empty() {
            return Err(Error::Tune(format!(
                "the compiled {} has no kernel `{}`",
                self.source.file, self.source.kernel
            )));
        }
        std::fs::write(dir.join("image.bin"), &image.bytes).map_err(tune_err)?;
        let features = match image.format {
            ObjectFormat::AmdgpuElf => amd_features(&image.bytes, &image.symbols),
            _ => rocm_tune::Features::new(),
        };
        Ok(Image {
            features,
            format: image.format.as_str().to_owned(),
            target: image.target,
            kernels: image
                .symbols
                .into_iter()
                .map(|(name, symbol)| CachedKernel {
                    name,
                    symbol,
                    execution: None,
                    params: Vec::new(),
                })
                .collect(),
        })
    }

    /// Turn a cache entry into a library the runtime can load.
    fn load(
        &self,
        entry: &Path,
        image: &Image,
    ) -> Result<(&'static KernelLibrary, Option<libloading::Library>), Error> {
        let leak = |s: &str| -> &'static str { Box::leak(s.to_owned().into_boxed_str()) };
        let file = leak(&self.source.file);
        let name = leak(&format!("tuned {} {}", self.source.kernel, short(entry)));
        match self.backend {
            Backend::Cpu => {
                let so_path = entry.join("kernels.so");
                // RTLD_NOW: a missing runtime symbol is an error here, not a crash mid-launch.
                // Safety: the object was built by the cpu build from the user's kernels; its
                // initialisers are the C++ runtime's static constructors.
                let so = unsafe {
                    libloading::os::unix::Library::open(
                        Some(&so_path),
                        libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
                    )
                }
                .map_err(|e| {
                    let text = e.to_string();
                    Error::Tune(if text.contains("undefined symbol: rk_") {
                        format!(
                            "{text}: this binary does not export the cpu runtime to kernels \
                             compiled at run time; build its crate's kernels with \
                             rocm_kernels_build::Build (it passes the linker the dynamic list \
                             that exports them to every test and binary of the crate)"
                        )
                    } else {
                        text
                    })
                })?;
                let so: libloading::Library = so.into();
                let mut decls = Vec::new();
                for k in &image.kernels {
                    let symbol = format!("{}\0", k.symbol);
                    // Safety: the build generated this entry with the cpu runtime's entry
                    // signature; only its address is taken.
                    let entry_fn: *const () = unsafe {
                        *so.get::<*const ()>(symbol.as_bytes())
                            .map_err(|e| Error::Tune(format!("{}: {e}", k.symbol)))?
                    };
                    let execution = k
                        .execution
                        .as_deref()
                        .map_or(CpuExecution::PerThreadLoop, |words| {
                            CpuExecution::parse(words).map_reason(leak)
                        });
                    let params: Vec<ParamDecl> = k
                        .params
                        .iter()
                        .map(|(n, t, size, ptr)| ParamDecl {
                            name: leak(n),
                            type_name: leak(t),
                            size: *size,
                            kind: if *ptr {
                                ParamKind::GlobalBuffer
                            } else {
                                ParamKind::ByValue
                            },
                        })
                        .collect();
                    decls.push(KernelDecl {
                        name: leak(&k.name),
                        source: file,
                        params: Box::leak(params.into_boxed_slice()),
                        symbols: &[],
                        cpu: Some(CpuEntry {
                            entry: entry_fn,
                            execution,
                            race: None,
                        }),
                    });
                }
                let library = Box::leak(Box::new(KernelLibrary {
                    name,
                    code_objects: &[],
                    kernels: Box::leak(decls.into_boxed_slice()),
                    globals: &[],
                }));
                Ok((library, Some(so)))
            }
            backend => {
                let bytes = std::fs::read(entry.join("image.bin"))
                    .map_err(|e| Error::Tune(format!("{}: {e}", entry.display())))?;
                let format = match image.format.as_str() {
                    "cubin" => ObjectFormat::Cubin,
                    "ptx" => ObjectFormat::Ptx,
                    _ => ObjectFormat::AmdgpuElf,
                };
                let objects = vec![CodeObject {
                    backend,
                    format,
                    target: leak(&image.target),
                    source: file,
                    bytes: Box::leak(bytes.into_boxed_slice()),
                }];
                let decls: Vec<KernelDecl> = image
                    .kernels
                    .iter()
                    .map(|k| KernelDecl {
                        name: leak(&k.name),
                        source: file,
                        params: self.source.params,
                        symbols: Box::leak(
                            vec![ObjectSymbol {
                                object: 0,
                                symbol: leak(&k.symbol),
                            }]
                            .into_boxed_slice(),
                        ),
                        cpu: None,
                    })
                    .collect();
                let library = Box::leak(Box::new(KernelLibrary {
                    name,
                    code_objects: Box::leak(objects.into_boxed_slice()),
                    kernels: Box::leak(decls.into_boxed_slice()),
                    globals: &[],
                }));
                Ok((library, None))
            }
        }
    }
}

/// Registers, LDS, scratch and spills of the tuned kernel from an AMD code object's metadata,
/// and its theoretical occupancy (waves per SIMD over the most, at its largest workgroup) from
/// the occupancy model `cargo rocm build` and `cargo rocm profile` show.
fn amd_features(code: &[u8], symbols: &[(String, String)]) -> rocm_tune::Features {
    let mut f = rocm_tune::Features::new();
    let Ok(objects) = rocm_code_object::parse(code) else {
        return f;
    };
    let Some(entry) = objects.gpu_entries().next() else {
        return f;
    };
    let Ok(kernels) = entry.kernels() else {
        return f;
    };
    let wanted: Vec<&str> = symbols.iter().map(|(_, s)| s.as_str()).collect();
    let Some(k) = kernels
        .iter()
        .find(|k| wanted.contains(&k.name.as_str()) || wanted.contains(&k.symbol.as_str()))
        .or(kernels.first())
    else {
        return f;
    };
    f.insert("vgprs".into(), f64::from(k.vgpr_count));
    f.insert("sgprs".into(), f64::from(k.sgpr_count));
    f.insert("lds_bytes".into(), f64::from(k.group_segment_fixed_size));
    f.insert(
        "scratch_bytes".into(),
        f64::from(k.private_segment_fixed_size),
    );
    let spills = k.vgpr_spill_count.unwrap_or(0) + k.sgpr_spill_count.unwrap_or(0);
    f.insert("spills".into(), f64::from(spills));
    if let Ok(all) = rocm_occupancy::code_object_occupancy(entry) {
        if let Some(Ok(o)) = all.iter().find(|o| o.name == k.name).map(|o| &o.occupancy) {
            let target = entry.target.as_ref().map(rocm_occupancy::Target::from_id);
            if let Some(Ok(t)) = target {
                f.insert(
                    "occupancy".into(),
                    f64::from(o.waves_per_simd) / f64::from(t.max_waves_per_simd().max(1)),
                );
            }
        }
    }
    f
}

fn read_meta(entry: &Path) -> Option<Meta> {
    serde_json::from_slice(&std::fs::read(entry.join("meta.json")).ok()?).ok()
}

fn short(entry: &Path) -> String {
    entry
        .file_name()
        .map(|n| n.to_string_lossy().chars().take(8).collect())
        .unwrap_or_default()
}

fn cpu_request(
    path: &Path,
    includes: &[PathBuf],
    defines: &[(String, String)],
    out_dir: &Path,
) -> rocm_cpu_frontend::CpuBuildRequest {
    rocm_cpu_frontend::CpuBuildRequest {
        name: "tuned".into(),
        sources: vec![path.to_path_buf()],
        crate_root: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        out_dir: out_dir.to_path_buf(),
        header_dir: rocm_cpu_frontend::cpu_include_dir(),
        include_dirs: includes.to_vec(),
        defines: defines
            .iter()
            .map(|(n, v)| (n.clone(), Some(v.clone())))
            .collect(),
        flags: Vec::new(),
        opt_level: None,
        cargo_metadata: false,
        race_variant: false,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of every file under `dir` (names and contents, in sorted order).
fn tree_digest(dir: &Path) -> String {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut h = Sha256::new();
    for f in files {
        h.update(
            f.strip_prefix(dir)
                .unwrap_or(&f)
                .to_string_lossy()
                .as_bytes(),
        );
        h.update(std::fs::read(&f).unwrap_or_default());
    }
    hex(&h.finalize())
}

/// SHA-256 of the source and every local header it includes (`#include "..."`, found beside
/// the including file or in the include folders), recursively.
fn source_digest(source: &SourceSpec) -> String {
    let mut h = Sha256::new();
    h.update(&source.text);
    let Some(path) = &source.path else {
        return hex(&h.finalize());
    };
    let mut seen: Vec<PathBuf> = vec![path.clone()];
    let mut queue: VecDeque<(PathBuf, Vec<u8>)> = VecDeque::new();
    queue.push_back((path.clone(), source.text.clone()));
    while let Some((file, text)) = queue.pop_front() {
        let text = String::from_utf8_lossy(&text).into_owned();
        for line in text.lines() {
            let Some(rest) = line.trim_start().strip_prefix("#") else {
                continue;
            };
            let Some(rest) = rest.trim_start().strip_prefix("include") else {
                continue;
            };
            let Some(name) = rest
                .trim()
                .strip_prefix('"')
                .and_then(|r| r.split('"').next())
            else {
                continue;
            };
            let dirs = file
                .parent()
                .map(Path::to_path_buf)
                .into_iter()
                .chain(source.includes.iter().cloned());
            for d in dirs {
                let candidate = d.join(name);
                if let Ok(bytes) = std::fs::read(&candidate) {
                    if !seen.contains(&candidate) {
                        seen.push(candidate.clone());
                        h.update(name.as_bytes());
                        h.update(&bytes);
                        queue.push_back((candidate, bytes));
                    }
                    break;
                }
            }
        }
    }
    hex(&h.finalize())
}

/// Compiles ahead on worker threads: configurations announced by the strategy
/// ([`rocm_tune::Evaluator::prefetch`]) are compiled while the device measures others; asking
/// for one that is being compiled waits for it, one never announced is compiled at once.
///
/// On the cpu backend compiles and measurements share the cores, so a worker starts no compile
/// while a measurement holds [`Ahead::quiet`] and the measurement waits for running compiles
/// to end: timings are not disturbed, and the compiles still overlap everything else
/// (verification, the reference, the strategy's own work).
pub(crate) struct Ahead {
    shared: Arc<Shared>,
    workers: Vec<std::thread::JoinHandle<()>>,
}

struct Shared {
    compiler: Compiler,
    state: Mutex<State>,
    changed: Condvar,
    /// Whether measurements need the cores to themselves.
    exclusive_measure: bool,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Vec<(String, String)>>,
    /// Started or finished, by key.
    jobs: HashMap<String, Job>,
    /// Compiles running now.
    running: usize,
    /// A measurement is running (exclusive mode).
    measuring: bool,
    stop: bool,
}

enum Job {
    Running,
    /// Compiled into the disk cache (or failed there); loading is the asker's.
    Done,
}

impl Ahead {
    /// `workers` compile threads (0: compile only when asked).
    pub fn new(compiler: Compiler, workers: usize, exclusive_measure: bool) -> Ahead {
        let shared = Arc::new(Shared {
            compiler,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            exclusive_measure,
        });
        let workers = (0..workers)
            .map(|_| {
                let shared = shared.clone();
                std::thread::spawn(move || shared.work())
            })
            .collect();
        Ahead { shared, workers }
    }

    /// Queue these configurations' definitions (ones known already are skipped).
    pub fn prefetch(&self, upcoming: &[Vec<(String, String)>]) {
        let mut state = self.shared.lock();
        for d in upcoming {
            let key = self.shared.compiler.key(d);
            if state.jobs.contains_key(&key) || state.queue.contains(d) {
                continue;
            }
            if read_meta(&self.shared.compiler.dir.join(&key)).is_some() {
                state.jobs.insert(key, Job::Done);
                continue;
            }
            state.queue.push_back(d.clone());
        }
        drop(state);
        self.shared.changed.notify_all();
    }

    /// The configuration compiled and loaded (waiting for a worker compiling it, or compiling
    /// it here).
    pub fn get(&self, defines: &[(String, String)]) -> Result<Variant, Error> {
        let key = self.shared.compiler.key(defines);
        let mut state = self.shared.lock();
        state.queue.retain(|d| d.as_slice() != defines);
        while let Some(Job::Running) = state.jobs.get(&key) {
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
        drop(state);
        self.shared.compiler.get(defines)
    }

    /// Run `f` (a measurement) with the compile workers paused where that matters (cpu).
    pub fn quiet<T>(&self, f: impl FnOnce() -> T) -> T {
        if !self.shared.exclusive_measure {
            return f();
        }
        let mut state = self.shared.lock();
        state.measuring = true;
        while state.running > 0 {
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
        drop(state);
        let out = f();
        self.shared.lock().measuring = false;
        self.shared.changed.notify_all();
        out
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn work(&self) {
        loop {
            let mut state = self.lock();
            let defines = loop {
                if state.stop {
                    return;
                }
                if !state.measuring {
                    if let Some(d) = state.queue.pop_front() {
                        break d;
                    }
                }
                state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
            };
            let key = self.compiler.key(&defines);
            if state.jobs.contains_key(&key) {
                continue;
            }
            state.jobs.insert(key.clone(), Job::Running);
            state.running += 1;
            drop(state);
            let entry = self.compiler.dir.join(&key);
            if read_meta(&entry).is_none() {
                // Errors are recorded in the entry; the asker reads them.
                let _ = self.compiler.compile_in_child(&entry, &defines);
            }
            let mut state = self.lock();
            state.running -= 1;
            state.jobs.insert(key, Job::Done);
            drop(state);
            self.changed.notify_all();
        }
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.changed.notify_all();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    /// A code object clang built (rocm-code-object's fixture: `axpy` for gfx1030).
    const AXPY_GFX1030: &[u8] =
        include_bytes!("../../../rocm-code-object/tests/fixtures/axpy-gfx1030.co");

    #[test]
    fn amd_code_objects_give_registers_lds_and_occupancy() {
        let symbols = [("axpy".to_owned(), "axpy".to_owned())];
        let f = super::amd_features(AXPY_GFX1030, &symbols);
        let entry = rocm_code_object::parse(AXPY_GFX1030).unwrap();
        let meta = &entry.gpu_entries().next().unwrap().kernels().unwrap()[0];
        assert_eq!(f["vgprs"], f64::from(meta.vgpr_count));
        assert_eq!(f["sgprs"], f64::from(meta.sgpr_count));
        assert_eq!(f["lds_bytes"], f64::from(meta.group_segment_fixed_size));
        assert_eq!(f["spills"], 0.0);
        // A small kernel on gfx1030 is limited by nothing but the waves a SIMD holds.
        let occupancy = f["occupancy"];
        assert!(occupancy > 0.0 && occupancy <= 1.0, "{f:?}");
        // Not a code object: no features, no panic.
        assert!(super::amd_features(b"not an ELF", &symbols).is_empty());
    }
}
