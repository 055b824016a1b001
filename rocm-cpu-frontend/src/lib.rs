//! `rocm-cpu-frontend`: the cpu backend's build of HIP kernels. It compiles `.hip` sources with
//! the host C++ compiler against the cpu kernel-language header (`include/cpu`), with one
//! generated `extern "C"` entry point per kernel, into a static library linked into the user's
//! crate. It is build-side only: `rocm-kernels-build` (a user crate's build-dependency) calls it
//! for the `cpu` backend, and `cargo rocm tune` compiles candidates with it; no user binary links
//! it.
//!
//! The public API:
//! * [`build_cpu`] builds a [`CpuBuildRequest`] into a [`CpuBuildOutput`] (the kernels, their
//!   parameters and entry symbols, the globals, the library name), or a [`CpuBuildError`];
//!   [`cpu_include_dir`] is the header folder a request names;
//! * [`link_shared_object`] and [`compiler_identity`] serve run-time compiles (a shared object
//!   per configuration, and the compiler's name for cache keys), [`write_runtime_dynamic_list`]
//!   the executables that load them;
//! * [`kernels_of_unit`] runs the front end alone on a preprocessed unit (tools, the
//!   `cpu_frontend` benchmark), [`lex`] is its C++ lexer for tools that read HIP sources as the
//!   build does (`scripts/public-suite`);
//! * [`diagnostics`]: compiler diagnostics ([`Diagnostic`]), which every backend of the kernel
//!   build reads, and [`unbalanced_bracket`], the front end's check that names the bracket a
//!   source left open.
//!
//! Per source file, [`build_cpu`]:
//! 1. rewrites `extern __shared__` declarations (see `rewrite`) into a copy under `out_dir`,
//!    starting with `#line 1 "<original>"` so diagnostics point at the user's file;
//! 2. preprocesses that copy with `-DRK_SCAN`, where the header defines `__global__` as a marker,
//!    [`lex`]es the result once, scans it for kernels, explicit template instantiations and
//!    their parameters (`scan`), and gives each kernel its region form where the rewrite applies
//!    (`region`);
//! 3. appends the region forms and one entry per kernel: `extern "C" void SYMBOL(const rk_call
//!    *c) { rk::entry<&kernel>(c); }` (or `rk::entry_block<...>` with the region form) — a
//!    variadic template unpacks the argument array into the kernel's own parameter types, so no
//!    per-kernel glue is written by hand (`generated`);
//! 4. compiles all copies with `cc` into `lib<lib_name>.a` (`compile`, which drops the region
//!    forms that do not compile, kernel by kernel); cc prints the `cargo:rustc-link-lib` lines.
//!    The entries and the library name carry a hash of the build name and output directory, and
//!    every other name the objects define gets it as a suffix (`private`), so two kernel
//!    libraries (of one crate or several) link into one binary even when they define the same
//!    kernels, device functions or globals, each running its own.

mod balance;
mod compile;
pub mod diagnostics;
mod generated;
mod globals;
pub mod lex;
mod private;
mod race;
mod region;
mod rewrite;
mod scan;
mod scopes;

pub use diagnostics::Diagnostic;

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use generated::GeneratedUnit;

/// What to build for the cpu backend.
#[derive(Debug, Clone)]
pub struct CpuBuildRequest {
    /// The library name given to `Build::compile` (`kernels`).
    pub name: String,
    /// The `.hip` sources (absolute paths, or relative to the current directory).
    pub sources: Vec<PathBuf>,
    /// The crate root, to record sources relative to it.
    pub crate_root: PathBuf,
    /// Where generated sources and the library go (a folder under `OUT_DIR`).
    pub out_dir: PathBuf,
    /// The cpu kernel-language headers: `<rocm-kernels>/include/cpu` ([`cpu_include_dir`]).
    pub header_dir: PathBuf,
    /// More `-I` folders.
    pub include_dirs: Vec<PathBuf>,
    /// `-D` definitions: (name, value).
    pub defines: Vec<(String, Option<String>)>,
    /// Extra compiler flags.
    pub flags: Vec<String>,
    /// Optimisation level for kernels (`3` when `None`: kernels are worth optimising even in
    /// debug builds, they are what tests spend their time in; -O3 splits a loop over lanes at
    /// a bounds check and vectorises it).
    pub opt_level: Option<u32>,
    /// Print `cargo:` directives (link lines, warnings). False outside build scripts.
    pub cargo_metadata: bool,
    /// Also compile the race variant (instrumented per-thread entries for the runtime's race
    /// detector).
    pub race_variant: bool,
}

/// One parameter as the build saw it in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamGen {
    /// Its name in the source (empty when the declaration names none).
    pub name: String,
    /// The source type, e.g. `const float*`.
    pub type_name: String,
    /// Bytes as passed: 8 for pointers, the size of known scalar/vector types, 0 when unknown
    /// (the cpu runtime still checks exact sizes, which the compiled entry reports).
    pub size: u32,
    /// A pointer to device memory (`ParamKind::GlobalBuffer`), else by value.
    pub is_pointer: bool,
}

/// One kernel of the cpu build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuKernelGen {
    /// How users name it: `saxpy`, `scale<float>`, `ns::k`.
    pub name: String,
    /// The generated `extern "C"` entry; declare it in Rust as
    /// `extern "C" { fn SYMBOL(); }` and embed `SYMBOL as *const ()` as `CpuKernel::entry`.
    pub symbol: String,
    /// The source defining it, relative to the crate root (`/`-separated).
    pub source_rel: String,
    /// Its parameters, in order.
    pub params: Vec<ParamGen>,
    /// How its blocks run: `Ok(true)` in region form (no fibers), `Ok(false)` with fibers only
    /// at barriers it never has, `Err(why)` with fibers because the region form does not apply.
    pub region_form: Result<bool, String>,
    /// The race variant's entry (`rkrace_<symbol>`), when the build made one.
    pub race_symbol: Option<String>,
}

impl CpuKernelGen {
    /// How its blocks run, in words: `regions`, `per-thread loop` or `fibers: <why>`.
    pub fn execution(&self) -> String {
        use rocm_kernels_core::library::CpuExecution;
        match &self.region_form {
            Ok(true) => CpuExecution::Regions,
            Ok(false) => CpuExecution::PerThreadLoop,
            Err(why) => CpuExecution::Fibers(why.as_str()),
        }
        .to_string()
    }
}

/// A `__constant__` or `__device__` variable of the cpu build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuGlobalGen {
    /// Qualified by its namespaces: `ns::mask`.
    pub name: String,
    /// `__constant__` (else `__device__`).
    pub constant: bool,
    /// The `extern "C"` accessor giving its address and size.
    pub symbol: String,
    /// The race variant's accessor (`rkrace_<symbol>`), when the build made one.
    pub race_symbol: Option<String>,
    /// Where it is defined, relative to the crate root, and the line.
    pub source_rel: String,
    /// The line of its definition, 1-based.
    pub line: u32,
}

/// What the cpu build produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuBuildOutput {
    /// Every kernel, in source order (a kernel two sources define: the first).
    pub kernels: Vec<CpuKernelGen>,
    /// Every `__constant__` and `__device__` variable, in source order.
    pub globals: Vec<CpuGlobalGen>,
    /// Files the build read (sources and the headers they include, system headers excepted).
    pub rerun_if_changed: Vec<PathBuf>,
    /// The static library's name (`cargo:rustc-link-lib=static=<lib_name>`).
    pub lib_name: String,
    /// Warnings for the user: kernels whose region form did not compile.
    pub warnings: Vec<String>,
}

/// Why the cpu build failed.
#[derive(Debug)]
pub enum CpuBuildError {
    /// Reading a source or writing a generated file.
    Io {
        /// The file read or written.
        path: PathBuf,
        /// What went wrong.
        error: std::io::Error,
    },
    /// The host compiler could not be found or run.
    Compiler {
        /// Why, with the command when one was started.
        message: String,
    },
    /// Preprocessing a source failed (usually a compile error in it, or a missing include).
    Preprocess {
        /// The user's source.
        source: PathBuf,
        /// The preprocessor's command line.
        command: String,
        /// What it printed.
        stderr: String,
    },
    /// Compiling failed.
    Compile {
        /// What failed, with the command and the compiler's output.
        message: String,
    },
    /// The kernel sources have errors, at the user's files and lines: the front end's own
    /// (unbalanced brackets, found before any compiler runs) or the host compiler's, each once
    /// (the race variant's compile is not asked to repeat them).
    Source {
        /// The errors, each once, at the user's files.
        diagnostics: Vec<Diagnostic>,
        /// Where the compiler's whole output was written, when a compiler ran.
        full_output: Option<PathBuf>,
    },
    /// A kernel uses something the cpu backend cannot run in any form (inline assembly).
    Unsupported {
        /// The kernel's name.
        kernel: String,
        /// `file:line` of what it uses.
        location: String,
        /// What it uses (`inline assembly`).
        what: String,
    },
}

impl fmt::Display for CpuBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuBuildError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            CpuBuildError::Compiler { message } => write!(
                f,
                "could not run the host C++ compiler for the cpu backend: {message} (install g++ \
                 or clang++, or set CXX)"
            ),
            CpuBuildError::Preprocess {
                source,
                command,
                stderr,
            } => write!(
                f,
                "preprocessing {} for the cpu backend failed\n  command: {command}\n{stderr}",
                source.display()
            ),
            CpuBuildError::Compile { message } => {
                write!(f, "compiling kernels for the cpu backend failed: {message}")
            }
            CpuBuildError::Source {
                diagnostics,
                full_output,
            } => {
                f.write_str(&crate::diagnostics::summary(diagnostics))?;
                if let Some(path) = full_output {
                    write!(f, "\n(the compiler's whole output: {})", path.display())?;
                }
                Ok(())
            }
            CpuBuildError::Unsupported {
                kernel,
                location,
                what,
            } => write!(
                f,
                "kernel `{kernel}` cannot run on the cpu backend: it uses {what} at {location}; \
                 keep GPU-only code under `#if defined(__HIP_PLATFORM_AMD__)` (or \
                 `__HIP_PLATFORM_NVIDIA__`) with a portable `#else` branch, which the cpu backend \
                 (`__HIP_PLATFORM_ROCM_KERNELS_CPU__`) compiles"
            ),
        }
    }
}

impl std::error::Error for CpuBuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CpuBuildError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// The linker's dynamic list that exports the cpu runtime's kernel-side symbols (`rk_*`: the
/// thread context `rk_cur`, barriers, collectives, faults) from an executable, written to
/// `dir/cpu-runtime.dynamic-list`. Kernels compiled at run time into a shared object (what
/// `cargo rocm tune` does for compile-time parameters, `rocm_test::tune`) call these; without
/// the list an executable keeps them to itself and `dlopen` fails with `undefined symbol:
/// rk_cur`. Exporting them costs a few dynamic symbol table entries. `rocm_kernels_build::Build`
/// passes it to the linker (`cargo:rustc-link-arg`) for every binary, test and benchmark of a
/// crate with a cpu build on Linux.
pub fn write_runtime_dynamic_list(dir: &Path) -> Result<PathBuf, CpuBuildError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let path = dir.join("cpu-runtime.dynamic-list");
    let text = "{\n  rk_*;\n};\n";
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
        std::fs::write(&path, text).map_err(io(&path))?;
    }
    Ok(path)
}

/// Links what [`build_cpu`] built (`lib<lib_name>.a` in the request's `out_dir`) into the
/// shared object `so`, for loading at run time (`cargo rocm tune` compiles each configuration
/// of compile-time parameters this way). Its references to the cpu runtime stay undefined: the
/// executable that loads it provides them ([`write_runtime_dynamic_list`]); its own symbols
/// bind to its own definitions (`-Bsymbolic`), so a kernel compiled into the executable under
/// the same name is never called instead.
pub fn link_shared_object(
    req: &CpuBuildRequest,
    built: &CpuBuildOutput,
    so: &Path,
) -> Result<(), CpuBuildError> {
    let archive = req.out_dir.join(format!("lib{}.a", built.lib_name));
    let mut build = base_build(req);
    build.cargo_metadata(false).warnings(false);
    let compiler = build
        .try_get_compiler()
        .map_err(|e| CpuBuildError::Compiler {
            message: e.to_string(),
        })?;
    let mut cmd = Command::new(compiler.path());
    cmd.arg("-shared")
        .arg("-o")
        .arg(so)
        .arg("-Wl,--whole-archive")
        .arg(&archive)
        .arg("-Wl,--no-whole-archive")
        .arg("-Wl,-Bsymbolic");
    let shown = format!("{cmd:?}");
    let output = cmd.output().map_err(|e| CpuBuildError::Compiler {
        message: format!("{shown}: {e}"),
    })?;
    if !output.status.success() {
        return Err(CpuBuildError::Compile {
            message: format!(
                "linking {} failed\n  command: {shown}\n{}",
                so.display(),
                String::from_utf8_lossy(&output.stderr)
            ),
        });
    }
    Ok(())
}

/// The host C++ compiler a request would use and its version (`c++ (Debian 12.2.0-14) 12.2.0`,
/// the first line of `--version`): part of the key of caches of compiled kernels.
pub fn compiler_identity(req: &CpuBuildRequest) -> Result<String, CpuBuildError> {
    let mut build = base_build(req);
    build.cargo_metadata(false).warnings(false);
    let compiler = build
        .try_get_compiler()
        .map_err(|e| CpuBuildError::Compiler {
            message: e.to_string(),
        })?;
    let out = Command::new(compiler.path())
        .arg("--version")
        .output()
        .map_err(|e| CpuBuildError::Compiler {
            message: format!("{}: {e}", compiler.path().display()),
        })?;
    let first = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    Ok(format!("{} {first}", compiler.path().display()))
}

/// The cpu kernel-language headers (`rocm-kernels-core`'s `include/cpu`, or a copy of them where
/// that folder is gone or holds other headers: [`rocm_kernels_core::headers::cpu_dir`]).
pub fn cpu_include_dir() -> PathBuf {
    // Found once: the region rewrite asks for every line marker, and the warning is said once.
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        rocm_kernels_core::headers::cpu_dir().unwrap_or_else(|e| {
            // No copy could be written (temp not writable): the compiler names what is missing.
            println!(
                "cargo:warning=rocm-kernels: cannot write the cpu kernel-language headers: {e}"
            );
            rocm_kernels_core::headers::cpu_source_dir()
        })
    })
    .clone()
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CpuBuildError + '_ {
    move |error| CpuBuildError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// FNV-1a, enough to make symbol names unique per build (not a security boundary).
fn short_hash(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{:08x}", h as u32)
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// Size in bytes of a by-value parameter type the build recognises; 0 when unknown.
fn value_size(type_name: &str) -> u32 {
    let words: Vec<&str> = type_name
        .split_whitespace()
        .filter(|w| {
            !matches!(
                *w,
                "const" | "volatile" | "__restrict__" | "__restrict" | "signed"
            )
        })
        .collect();
    match words.join(" ").as_str() {
        "char" | "unsigned char" | "bool" | "int8_t" | "uint8_t" => 1,
        "short" | "unsigned short" | "short int" | "int16_t" | "uint16_t" | "__half" | "half"
        | "__hip_bfloat16" | "hip_bfloat16" => 2,
        "int" | "unsigned" | "unsigned int" | "float" | "int32_t" | "uint32_t" | "__half2"
        | "half2" => 4,
        "long" | "unsigned long" | "long long" | "unsigned long long" | "long int" | "double"
        | "size_t" | "ptrdiff_t" | "int64_t" | "uint64_t" | "intptr_t" | "uintptr_t" | "float2"
        | "int2" | "uint2" => 8,
        "float3" | "int3" | "uint3" => 12,
        "float4" | "int4" | "uint4" | "double2" | "longlong2" | "ulonglong2" => 16,
        "double4" => 32,
        other => vector_size(other),
    }
}

/// Size of a HIP vector type (`uchar4`, `short3`, `ulong2`...), 0 for other names.
fn vector_size(name: &str) -> u32 {
    let Some(lanes) = name.chars().last().and_then(|c| c.to_digit(10)) else {
        return 0;
    };
    let element = match &name[..name.len() - 1] {
        "char" | "uchar" => 1,
        "short" | "ushort" => 2,
        "int" | "uint" | "float" => 4,
        "long" | "ulong" | "longlong" | "ulonglong" | "double" => 8,
        _ => return 0,
    };
    if (1..=4).contains(&lanes) {
        element * lanes
    } else {
        0
    }
}

fn param_gen(type_name: &str, name: &str) -> ParamGen {
    let is_pointer = type_name.contains('*');
    ParamGen {
        name: name.to_string(),
        type_name: type_name.to_string(),
        size: if is_pointer { 8 } else { value_size(type_name) },
        is_pointer,
    }
}

/// Included files named by line markers of `-E` output, without system headers.
fn included_files(preprocessed: &lex::Tokens) -> BTreeSet<PathBuf> {
    preprocessed
        .line_markers()
        .filter(|m| !m.file.starts_with('<') && !m.flags.contains(&"3"))
        .map(|m| PathBuf::from(m.file))
        .collect()
}

fn base_build(req: &CpuBuildRequest) -> cc::Build {
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++17")
        .include(&req.header_dir)
        .opt_level(req.opt_level.unwrap_or(3))
        .cargo_metadata(req.cargo_metadata)
        .flag_if_supported("-Wno-unused-parameter")
        // `#pragma unroll`, the GPU compilers' loop hint, means nothing to the host compiler;
        // region forms drop it, but a kernel's helpers (templates...) keep it.
        .flag_if_supported("-Wno-unknown-pragmas")
        // Kernels are global functions in position-independent code; without this the compiler
        // must assume they can be interposed and will not inline them into the thread loop.
        .flag_if_supported("-fno-semantic-interposition")
        .flag_if_supported("-fno-omit-frame-pointer")
        // GPU code reads and writes one value through pointers of other types as a matter of
        // course (HeCBench's relu: a `float4` local written through `half2*`, then stored as the
        // `float4`); under the host compiler's strict-aliasing rule the `half2` writes were not
        // seen by the `float4` read at -O3 (every element 0).
        .flag_if_supported("-fno-strict-aliasing");
    for dir in &req.include_dirs {
        build.include(dir);
    }
    for (name, value) in &req.defines {
        build.define(name, value.as_deref());
    }
    for flag in &req.flags {
        build.flag(flag);
    }
    if !req.cargo_metadata {
        // Outside a build script cc cannot read the target from the environment.
        let host = host_triple();
        build.target(&host).host(&host).out_dir(&req.out_dir);
    }
    build
}

fn host_triple() -> String {
    std::env::var("TARGET")
        .or_else(|_| std::env::var("HOST"))
        .unwrap_or_else(|_| format!("{}-unknown-linux-gnu", std::env::consts::ARCH))
}

fn preprocess(req: &CpuBuildRequest, file: &Path, source: &Path) -> Result<String, CpuBuildError> {
    let mut build = base_build(req);
    build
        .define("RK_SCAN", None)
        .cargo_metadata(false)
        .warnings(false);
    let compiler = build
        .try_get_compiler()
        .map_err(|e| CpuBuildError::Compiler {
            message: e.to_string(),
        })?;
    let mut cmd: Command = compiler.to_command();
    if let Some(dir) = source.parent() {
        cmd.arg("-I").arg(dir);
    }
    cmd.arg("-E").arg("-x").arg("c++").arg(file);
    let shown = format!("{cmd:?}");
    let output = cmd.output().map_err(|e| CpuBuildError::Compiler {
        message: format!("{shown}: {e}"),
    })?;
    if !output.status.success() {
        return Err(CpuBuildError::Preprocess {
            source: source.to_path_buf(),
            command: shown,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The first bracket left open (or closed twice) in a source file as written (not preprocessed:
/// both sides of an `#if` count), as an error at the user's line, named relative to
/// `crate_root`. For a compile that already failed, where the compiler's own message may only
/// say "at end of source" (nvcc's does).
pub fn unbalanced_bracket(path: &Path, crate_root: &Path) -> Option<Diagnostic> {
    balance::check_file(path, crate_root)
}

/// The kernels of a preprocessed unit (`-E -DRK_SCAN` output, see [`build_cpu`]) and how each
/// would run, as [`CpuKernelGen::region_form`] says (before the region forms are compiled): the
/// cpu build's front end on its own, for tools and the `cpu_frontend` benchmark.
pub fn kernels_of_unit(preprocessed: &str) -> Vec<(String, Result<bool, String>)> {
    let toks = lex::lex(preprocessed);
    let regions = region::generate(&toks);
    scan::scan(&toks)
        .into_iter()
        .map(|k| {
            let how = region_form(&regions, &k.cpp_ref);
            (k.name, how)
        })
        .collect()
}

/// How a kernel runs by what the region form made of it: `Ok(true)` in its region form,
/// `Ok(false)` per thread without a reason to say (no barriers), `Err(why)` on fibers.
fn region_form(regions: &region::Outcome, cpp_ref: &str) -> Result<bool, String> {
    if regions.form(cpp_ref).is_some() {
        return Ok(true);
    }
    match regions.why_fibers(cpp_ref) {
        Some(why) => Err(why.to_string()),
        None => Ok(false),
    }
}

/// Build the cpu variant of a kernel library.
pub fn build_cpu(req: &CpuBuildRequest) -> Result<CpuBuildOutput, CpuBuildError> {
    std::fs::create_dir_all(&req.out_dir).map_err(io(&req.out_dir))?;
    let header_dir = std::fs::canonicalize(&req.header_dir).map_err(io(&req.header_dir))?;
    let pkg = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
    let hash = short_hash(&[&pkg, &req.name, &req.out_dir.to_string_lossy()]);
    let stem = format!("rk_{}_{hash}", sanitize(&req.name));
    let lib_name = format!("rkcpu_{}_{hash}", sanitize(&req.name));
    let mut kernels = Vec::new();
    let mut globals: Vec<CpuGlobalGen> = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    let mut rerun: BTreeSet<PathBuf> = BTreeSet::new();
    let mut generated = Vec::new();
    for (index, source) in req.sources.iter().enumerate() {
        let source = std::fs::canonicalize(source).map_err(io(source))?;
        let text = std::fs::read_to_string(&source).map_err(io(&source))?;
        rerun.insert(source.clone());
        let (rewritten, _) = rewrite::rewrite_dynamic_shared(&text);
        let file_stem = source
            .file_stem()
            .map(|s| sanitize(&s.to_string_lossy()))
            .unwrap_or_default();
        let file = req.out_dir.join(format!("{index}_{file_stem}.cpu.cpp"));
        let mut unit = GeneratedUnit::new(file.clone(), source.clone(), &rewritten, kernels.len());
        std::fs::write(&file, unit.prelude()).map_err(io(&file))?;
        let preprocessed = preprocess(req, &file, &source)?;
        // One lexing of the unit for everything below.
        let toks = lex::lex(&preprocessed);
        // A missing `}` makes the compiler report hundreds of lines about generated code: say
        // which bracket is open, at the user's line, before it runs.
        if let Some(u) = balance::check(&toks) {
            let file = if u.file.is_empty() {
                source.clone()
            } else {
                PathBuf::from(&u.file)
            };
            return Err(CpuBuildError::Source {
                diagnostics: vec![Diagnostic {
                    file: crate::diagnostics::display_name(&file, &req.crate_root),
                    line: u.line,
                    column: Some(u.column),
                    severity: "error".into(),
                    message: u.message,
                }],
                full_output: None,
            });
        }
        for inc in included_files(&toks) {
            if inc != file && inc.is_file() && !inc.starts_with(&header_dir) {
                rerun.insert(inc);
            }
        }
        let source_rel = crate::diagnostics::display_name(&source, &req.crate_root);
        // Region forms (kernels with barriers run without fibers), then the entry points.
        let regions = region::generate(&toks);
        if let Some(r) = regions.refused.first() {
            return Err(CpuBuildError::Unsupported {
                kernel: r.kernel.clone(),
                location: r.location.clone(),
                what: r.what.clone(),
            });
        }
        for form in regions.forms.iter() {
            unit.add_form(form.code.clone());
        }
        let (scanned, templates) = scan::scan_with_templates(&toks);
        // A kernel template nothing instantiates builds no kernel: say so, with the line to add.
        for (template, params) in &templates {
            let prefix = format!("{template}<");
            if !scanned.iter().any(|k| k.name.starts_with(&prefix)) {
                let types: Vec<&str> = params.iter().map(|(t, _)| t.as_str()).collect();
                warnings.push(format!(
                    "rocm-kernels: kernel template `{template}` in {} is never instantiated, so no \
                     kernel is built from it; instantiate the ones you launch after it, e.g. \
                     `template __global__ void {template}<...>({});`",
                    source.display(),
                    types.join(", ")
                ));
            }
        }
        for kernel in scanned {
            if kernels.iter().any(|k: &CpuKernelGen| k.name == kernel.name) {
                continue; // the same kernel in two sources: the first wins, like a linker would complain
            }
            let symbol = format!("{stem}_{}", kernels.len());
            let form = regions.form(&kernel.cpp_ref).map(|(k, args)| {
                let form = &regions.forms[k];
                (k, format!("{}{args}", form.block_fn), form.whole_block)
            });
            unit.add_kernel(&symbol, &kernel.cpp_ref, form);
            kernels.push(CpuKernelGen {
                region_form: region_form(&regions, &kernel.cpp_ref),
                name: kernel.name,
                race_symbol: None,
                symbol,
                source_rel: source_rel.clone(),
                params: kernel
                    .params
                    .iter()
                    .map(|(ty, name)| param_gen(ty, name))
                    .collect(),
            });
        }
        for g in globals::scan_globals(&toks) {
            if globals.iter().any(|x| x.name == g.name) {
                continue; // defined twice: the link says so
            }
            let symbol = format!("{stem}_g{}", globals.len());
            unit.add_global(&symbol, &g.name);
            let file = PathBuf::from(&g.file);
            let file = std::fs::canonicalize(&file).unwrap_or(file);
            let source_rel = crate::diagnostics::display_name(&file, &req.crate_root);
            globals.push(CpuGlobalGen {
                name: g.name,
                constant: g.constant,
                symbol,
                race_symbol: None,
                source_rel,
                line: g.line,
            });
        }
        std::fs::write(&unit.file, unit.text()).map_err(io(&unit.file))?;
        generated.push(unit);
    }
    if !generated.is_empty() {
        // The race variant after the plain compile: from the region forms that compiled.
        let mut race_warnings: Vec<String> = Vec::new();
        let mut race_objects = |units: &[GeneratedUnit],
                                kernels: &mut [CpuKernelGen]|
         -> Result<Vec<PathBuf>, CpuBuildError> {
            if !req.race_variant {
                return Ok(Vec::new());
            }
            match race::build(req, units, &mut race_warnings) {
                Ok(objects) => {
                    for k in kernels.iter_mut() {
                        k.race_symbol = Some(race::entry_symbol(&k.symbol));
                    }
                    for g in &mut globals {
                        g.race_symbol = Some(race::entry_symbol(&g.symbol));
                    }
                    Ok(objects)
                }
                Err(why) => {
                    // The source's own errors, said once rather than as the race variant's.
                    if let Some(e) = compile::source_errors(req, units)? {
                        return Err(e);
                    }
                    race_warnings.push(format!(
                        "rocm-kernels: no race variant of the cpu kernels of `{}`: {why}; the \
                         race check falls back to comparing two thread orders, which sees fewer \
                         races",
                        req.name
                    ));
                    Ok(Vec::new())
                }
            }
        };
        warnings.extend(compile::compile(
            req,
            &lib_name,
            &stem,
            &mut generated,
            &mut kernels,
            &mut race_objects,
        )?);
        warnings.extend(race_warnings);
    }
    // How each kernel's blocks run, for people wondering why one is slow.
    let mut report = String::new();
    for k in &kernels {
        let how = match &k.region_form {
            Ok(true) => "regions (no fibers)".to_string(),
            Ok(false) => "per-thread loop (no barriers)".to_string(),
            Err(why) => format!("fibers: {why}"),
        };
        report.push_str(&format!("{}\t{how}\n", k.name));
    }
    let report_path = req.out_dir.join("cpu-execution.txt");
    std::fs::write(&report_path, report).map_err(io(&report_path))?;
    Ok(CpuBuildOutput {
        kernels,
        globals,
        rerun_if_changed: rerun.into_iter().collect(),
        lib_name,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(dir: &Path, sources: Vec<PathBuf>) -> CpuBuildRequest {
        CpuBuildRequest {
            name: "unit".into(),
            sources,
            crate_root: dir.to_path_buf(),
            out_dir: dir.join("out"),
            header_dir: cpu_include_dir(),
            include_dirs: vec![],
            defines: vec![("SCALE".into(), Some("3".into()))],
            flags: vec![],
            opt_level: Some(0),
            cargo_metadata: false,
            race_variant: true,
        }
    }

    /// The race variants of the kernel corpora and the LLM template compile with their region
    /// forms (and so their summaries: see region/codegen/summary.rs): a form the instrumented
    /// build rejected would fall back to per-thread fibers, said only as a warning.
    #[test]
    fn race_variants_of_the_corpora_compile_with_their_region_forms() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let corpus = root.join("rocm-kernels/tests/corpus/kernels");
        let llm = root.join("examples/llm/kernels");
        for (dir, names) in [
            (
                &corpus,
                &["bench.hip", "bugs.hip", "warp.hip", "shapes.hip"][..],
            ),
            (&llm, &["llm.hip", "decode.hip", "matmul.hip"][..]),
        ] {
            for name in names {
                let tmp = tempfile::tempdir().unwrap();
                let mut req = request(tmp.path(), vec![dir.join(name)]);
                req.crate_root = dir.clone();
                req.defines.clear();
                let out = build_cpu(&req).unwrap_or_else(|e| panic!("{name}: {e:?}"));
                let fallback: Vec<&String> = out
                    .warnings
                    .iter()
                    .filter(|w| w.contains("race variant"))
                    .collect();
                assert!(fallback.is_empty(), "{name}: {fallback:?}");
            }
        }
    }

    #[test]
    fn builds_a_library_with_entries_for_every_kernel() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(
            dir.path().join("src/common.h"),
            "#define TWICE(x) (2 * (x))\n",
        )
        .unwrap();
        let src = dir.path().join("src/k.hip");
        std::fs::write(
            &src,
            "#include <hip/hip_runtime.h>\n#include \"common.h\"\n\
             __global__ void twice(const float* in, float* out, int n) {\n\
               extern __shared__ float tmp[];\n\
               int i = threadIdx.x; if (i < n) { tmp[i] = in[i]; out[i] = TWICE(tmp[i]) * SCALE; }\n}\n\
             template <typename T> __global__ void fill(T* out, T v) { out[threadIdx.x] = v; }\n\
             template __global__ void fill<int>(int*, int);\n",
        )
        .unwrap();
        let out = build_cpu(&request(dir.path(), vec![src.clone()])).unwrap();
        let names: Vec<&str> = out.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["twice", "fill<int>"]);
        let twice = &out.kernels[0];
        assert_eq!(twice.source_rel, "src/k.hip");
        assert_eq!(
            twice.params,
            vec![
                param_gen("const float*", "in"),
                param_gen("float*", "out"),
                param_gen("int", "n")
            ]
        );
        assert_eq!(twice.params[2].size, 4);
        assert!(twice.params[0].is_pointer && twice.params[0].size == 8);
        assert_ne!(out.kernels[0].symbol, out.kernels[1].symbol);
        assert!(out.rerun_if_changed.iter().any(|p| p.ends_with("common.h")));
        assert!(out.rerun_if_changed.iter().any(|p| p.ends_with("k.hip")));
        let lib = dir
            .path()
            .join("out")
            .join(format!("lib{}.a", out.lib_name));
        assert!(lib.is_file(), "{} missing", lib.display());
    }

    #[test]
    fn a_compile_error_names_the_source_and_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("bad.hip");
        std::fs::write(
            &src,
            "#include <hip/hip_runtime.h>\n#include \"missing.h\"\n",
        )
        .unwrap();
        let err = build_cpu(&request(dir.path(), vec![src])).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, CpuBuildError::Preprocess { .. }), "{text}");
        assert!(
            text.contains("bad.hip") && text.contains("missing.h"),
            "{text}"
        );
    }

    /// A kernel whose region form cannot compile: `w`, of a type with a destructor of its own,
    /// lives across the barrier, and lane slots are never destroyed (`rk::region::alloc` says so
    /// with a `static_assert`).
    const REGION_FORM_FAILS: &str = "struct Logged { float v; ~Logged() { v = 0.0f; } };\n\
         __global__ void fails(const float* in, float* out) {\n\
           __shared__ float s[64];\n\
           int t = threadIdx.x;\n\
           Logged w{in[t] * 2.0f};\n\
           s[t] = w.v;\n\
           __syncthreads();\n\
           out[t] = s[63 - t] + w.v;\n\
         }\n";

    #[test]
    fn a_region_form_that_does_not_compile_drops_only_its_own_kernels_to_fibers() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("k.hip");
        std::fs::write(
            &src,
            format!(
                "#include <hip/hip_runtime.h>\n{REGION_FORM_FAILS}\
                 __global__ void compiles(const float* in, float* out) {{\n\
                   __shared__ float s[64];\n\
                   int t = threadIdx.x;\n\
                   s[t] = in[t];\n\
                   __syncthreads();\n\
                   out[t] = s[63 - t];\n\
                 }}\n\
                 template <int N> __global__ void also(float* out) {{\n\
                   __shared__ float s[N];\n\
                   s[threadIdx.x] = N;\n\
                   __syncthreads();\n\
                   out[threadIdx.x] = s[N - 1 - threadIdx.x];\n\
                 }}\n\
                 template __global__ void also<64>(float*);\n"
            ),
        )
        .unwrap();
        // Before the build compiles anything, all three have a region form.
        let preprocessed = preprocess(
            &request(dir.path(), vec![]),
            &{
                let unit = dir.path().join("unit.cpp");
                std::fs::write(&unit, std::fs::read_to_string(&src).unwrap()).unwrap();
                unit
            },
            &src,
        )
        .unwrap();
        let planned: Vec<(String, Result<bool, String>)> = kernels_of_unit(&preprocessed);
        assert!(
            planned.iter().all(|(_, how)| *how == Ok(true)),
            "{planned:?}"
        );
        let out = build_cpu(&request(dir.path(), vec![src])).unwrap();
        let how = |name: &str| {
            out.kernels
                .iter()
                .find(|k| k.name == name)
                .map(|k| k.region_form.clone())
                .unwrap()
        };
        assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
        assert!(
            out.warnings[0].contains("kernel `fails`"),
            "{:?}",
            out.warnings
        );
        let fails = how("fails").unwrap_err();
        assert!(
            fails.starts_with("its region form did not compile: ") && fails.contains("error"),
            "{fails}"
        );
        // The first error line names what went wrong.
        assert!(fails.contains("trivially destructible"), "{fails}");
        assert_eq!(how("compiles"), Ok(true));
        assert_eq!(how("also<64>"), Ok(true));
        let report = std::fs::read_to_string(dir.path().join("out/cpu-execution.txt")).unwrap();
        assert!(report.contains("compiles\tregions (no fibers)"), "{report}");
        assert!(
            report.contains("fails\tfibers: its region form did not compile"),
            "{report}"
        );
        // The unit as compiled keeps the other forms and drops this one.
        let unit = std::fs::read_to_string(dir.path().join("out/0_k.cpu.cpp")).unwrap();
        assert!(unit.contains("rk_block_compiles"), "{unit}");
        assert!(!unit.contains("rk_block_fails"), "{unit}");
        assert!(!dir.path().join("out/0_k.cpu.probe.cpp").exists());
    }

    #[test]
    fn symbols_differ_between_builds() {
        assert_ne!(short_hash(&["a", "x"]), short_hash(&["a", "y"]));
        assert_eq!(sanitize("my-lib.v2"), "my_lib_v2");
        assert_eq!(value_size("const unsigned int"), 4);
        assert_eq!(value_size("float4"), 16);
        assert_eq!(value_size("MyStruct"), 0);
        assert_eq!(value_size("const uchar4"), 4);
        assert_eq!(value_size("short3"), 6);
        assert_eq!(value_size("ulong2"), 16);
    }
}
