//! Telling a broken compiler from a broken kernel: a one-line kernel compiled exactly as the
//! build compiles a user's sources (same command, same targets). When a backend the user did not
//! ask for fails on their kernels, the build compiles this probe; if it fails too, the compiler
//! itself is broken and the backend is skipped with a warning instead of failing the build.
//! `cargo rocm doctor` runs the same probes up front.

use std::path::Path;

use crate::amd::AmdCompiler;
use crate::cache::Hasher;
use crate::error::BuildError;
use crate::nvidia::NvidiaCompiler;
use crate::source::SourceFile;
use crate::CompileOptions;

/// The probe for the `amd` backend: the HIP runtime header, a barrier and a warp shuffle (the
/// device libraries' parts a typical kernel pulls in).
const AMD_PROBE: &str = "#include <hip/hip_runtime.h>\n\
__global__ void rocm_kernels_probe(float* x) {\n\
    float v = x[threadIdx.x];\n\
    __syncthreads();\n\
    x[threadIdx.x] = __shfl_xor(v, 1);\n\
}\n";

/// The probe for the `nvidia` backend, through the HIP-on-CUDA header: `__activemask` and a warp
/// shuffle are what a CUDA runtime wheel newer than nvcc breaks (ptxas: "Unresolved extern
/// function '__nv_activemask_impl'").
const NVIDIA_PROBE: &str = "#include <hip/hip_runtime.h>\n\
__global__ void rocm_kernels_probe(float* x) {\n\
    float v = x[threadIdx.x];\n\
    __syncthreads();\n\
    if (__activemask() != 0u) x[threadIdx.x] = __shfl_xor(v, 1);\n\
}\n";

fn options() -> CompileOptions {
    CompileOptions {
        includes: Vec::new(),
        defines: Vec::new(),
        flags: Vec::new(),
        opt_level: 2,
    }
}

/// Writes `text` as `dir/probe.hip` and returns it as a source of a crate rooted at `dir`.
fn probe_source(dir: &Path, text: &str) -> Result<SourceFile, BuildError> {
    std::fs::create_dir_all(dir).map_err(|e| BuildError::io("cannot create", dir, e))?;
    let path = dir.join("probe.hip");
    std::fs::write(&path, text).map_err(|e| BuildError::io("cannot write", &path, e))?;
    Ok(SourceFile::new(path, dir))
}

/// Compiles the amd probe with `compiler` (its targets, its command) in `dir`.
pub(crate) fn amd(compiler: &AmdCompiler, dir: &Path) -> Result<(), BuildError> {
    let src = probe_source(dir, AMD_PROBE)?;
    let out = dir.join("out");
    std::fs::create_dir_all(&out).map_err(|e| BuildError::io("cannot create", &out, e))?;
    compiler
        .compile(&src, &out, dir, &options(), &Hasher::default())
        .map(|_| ())
}

/// Compiles the nvidia probe for the first target with `compiler`'s nvcc in `dir` (nothing to do
/// without nvcc: NVRTC compiles at run time).
pub(crate) fn nvidia(compiler: &NvidiaCompiler, dir: &Path) -> Result<(), BuildError> {
    if compiler.nvcc.is_none() {
        return Ok(());
    }
    let src = probe_source(dir, NVIDIA_PROBE)?;
    let one = NvidiaCompiler {
        nvcc: compiler.nvcc.clone(),
        targets: compiler.targets.iter().take(1).cloned().collect(),
    };
    one.compile(&src, &dir.join("out"), dir, &options(), &Hasher::default())
        .map(|_| ())
}

/// Whether `compiler` of `toolchain` builds a one-line kernel for `targets` exactly as
/// [`Build`](super::Build) would (an offload bundle of every target): what `cargo rocm doctor`
/// asks before any crate is built.
pub fn check_amd_compiler(
    toolchain: &rocm_toolkit::toolchain::Toolchain,
    compiler: &rocm_toolkit::toolchain::HipCompiler,
    targets: &[String],
) -> Result<(), BuildError> {
    let tmp = tempfile_dir()?;
    let info = super::toolchain_cache::ToolchainInfo::from(toolchain);
    let compiler_info = super::toolchain_cache::CompilerInfo {
        hipcc: compiler.kind == rocm_toolkit::toolchain::CompilerKind::Hipcc,
        path: compiler.path.clone(),
        missing: compiler.missing.clone(),
    };
    super::amd::check_complete(&info, &compiler_info)?;
    let compiler = AmdCompiler::new(
        info,
        compiler_info,
        targets.to_vec(),
        &tmp.path().join("versions.json"),
        Vec::new(),
    )?;
    amd(&compiler, tmp.path())
}

/// Whether `nvcc` builds a one-line kernel that uses warp intrinsics through the HIP-on-CUDA
/// header for `target` (`sm_90`), exactly as [`Build`](super::Build) would.
pub fn check_nvcc(nvcc: &rocm_toolkit::nvcc::Nvcc, target: &str) -> Result<(), BuildError> {
    let tmp = tempfile_dir()?;
    nvidia(
        &NvidiaCompiler {
            nvcc: Some(nvcc.clone()),
            targets: vec![target.to_string()],
        },
        tmp.path(),
    )
}

fn tempfile_dir() -> Result<tempfile::TempDir, BuildError> {
    tempfile::Builder::new()
        .prefix("rocm-kernels-probe-")
        .tempdir()
        .map_err(|e| BuildError::io("cannot create a folder in", std::env::temp_dir(), e))
}
