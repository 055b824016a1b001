//! The `nvidia` backend's compiler: finding nvcc (PATH, `CUDA_PATH`/`CUDA_HOME`, `/usr/local/cuda`,
//! the PyPI `nvidia-cuda-nvcc` layout) and compiling a `.hip` file with the HIP-on-CUDA header
//! (`include/nvidia`) to a cubin per `sm_XX` or to PTX, with ptxas's resource report per kernel.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

/// Environment variables [`find_nvcc`] reads (for `cargo:rerun-if-env-changed`).
pub const ENV_VARS: &[&str] = &["NVCC", "CUDA_PATH", "CUDA_HOME", "PATH", "VIRTUAL_ENV"];

/// A usable nvcc.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Nvcc {
    /// The nvcc executable.
    pub path: PathBuf,
    /// `13.0.88` from `nvcc --version`.
    pub version: Option<String>,
    /// How it was found, for messages: `NVCC`, `CUDA_PATH`, `PATH`, `pip (nvidia-cuda-nvcc)`...
    pub found_by: String,
}

/// Where [`find_nvcc`] looked, for the error message when nothing was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "nvcc was not found (looked in: {}). Install the CUDA toolkit, or its pip wheels pinned to \
     the CUDA release your driver supports (for a 13.0 driver: `pip install \"nvidia-cuda-nvcc==13.0.*\" \
     \"nvidia-cuda-crt==13.0.*\" \"nvidia-cuda-cccl==13.0.*\" \"nvidia-nvvm==13.0.*\" \
     \"nvidia-cuda-runtime==13.0.*\"`), or set NVCC=/path/to/nvcc; \
     `cargo rocm doctor --backend nvidia` checks the setup and prints the line for this machine",
    searched.join(", ")
)]
pub struct NvccNotFound {
    /// Each place looked in, as the message lists it.
    pub searched: Vec<String>,
}

/// Find nvcc. `env` reads environment variables (tests pass their own).
pub fn find_nvcc(env: &dyn Fn(&str) -> Option<OsString>) -> Result<Nvcc, NvccNotFound> {
    let mut searched = Vec::new();
    let mut candidates: Vec<(PathBuf, String)> = Vec::new();
    if let Some(p) = env("NVCC") {
        candidates.push((PathBuf::from(p), "NVCC".into()));
    }
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(p) = env(var) {
            candidates.push((Path::new(&p).join("bin/nvcc"), var.into()));
        }
    }
    if let Some(path) = env("PATH") {
        for dir in std::env::split_paths(&path) {
            candidates.push((dir.join("nvcc"), "PATH".into()));
        }
    }
    candidates.push(("/usr/local/cuda/bin/nvcc".into(), "/usr/local/cuda".into()));
    for site in python_site_dirs(env) {
        // CUDA 13 wheels install under nvidia/cu13, CUDA 12 wheels under nvidia/cuda_nvcc.
        for sub in ["nvidia/cu13/bin/nvcc", "nvidia/cuda_nvcc/bin/nvcc"] {
            candidates.push((site.join(sub), "pip (nvidia-cuda-nvcc)".into()));
        }
    }
    for (path, found_by) in candidates {
        if path.is_file() {
            let version = nvcc_version(&path);
            return Ok(Nvcc {
                path,
                version,
                found_by,
            });
        }
        searched.push(path.display().to_string());
    }
    searched.dedup();
    Err(NvccNotFound { searched })
}

/// site-packages folders of the active virtualenv and of `python3`'s `nvidia` namespace package.
fn python_site_dirs(env: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(venv) = env("VIRTUAL_ENV") {
        if let Ok(entries) = std::fs::read_dir(Path::new(&venv).join("lib")) {
            for e in entries.flatten() {
                dirs.push(e.path().join("site-packages"));
            }
        }
    }
    // python3's own sys.path (its site-packages, where the `nvidia-*` wheels go), through the
    // time-limited probe: a stuck interpreter must not hang a build script.
    dirs.extend(crate::process::python_sys_path(Path::new("python3")).unwrap_or_default());
    dirs
}

/// Folders holding CUDA's headers (`cuda_fp16.h`, ...), for NVRTC at run time: `CUDA_PATH`,
/// `CUDA_HOME`, `/usr/local/cuda` and the PyPI wheels' `nvidia/cu13` / `nvidia/cuda_runtime` layout.
pub fn cuda_include_dirs(env: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["CUDA_PATH", "CUDA_HOME"]
        .iter()
        .filter_map(|v| env(v).map(PathBuf::from))
        .collect();
    roots.push("/usr/local/cuda".into());
    // The toolkit or wheel folder of an nvcc on PATH (a venv's `bin` on PATH without
    // VIRTUAL_ENV set, or a toolkit outside /usr/local/cuda): `<root>/bin/nvcc`.
    if let Some(path) = env("PATH") {
        roots.extend(
            std::env::split_paths(&path)
                .filter(|dir| dir.join("nvcc").is_file())
                .filter_map(|dir| dir.parent().map(Path::to_path_buf)),
        );
    }
    for site in python_site_dirs(env) {
        for sub in ["nvidia/cu13", "nvidia/cuda_runtime", "nvidia/cuda_nvrtc"] {
            roots.push(site.join(sub));
        }
    }
    let mut dirs: Vec<PathBuf> = roots
        .into_iter()
        .map(|r| r.join("include"))
        .filter(|d| d.join("cuda_fp16.h").is_file() || d.join("cuda_runtime.h").is_file())
        // CUDA 13 keeps libcu++ (`<cuda/std/...>`, which the cooperative groups headers
        // include) in `include/cccl`; nvcc adds it itself, NVRTC needs it named.
        .flat_map(|d| {
            let cccl = d.join("cccl");
            let cccl = cccl.join("cuda/std").is_dir().then_some(cccl);
            std::iter::once(d).chain(cccl)
        })
        .collect();
    dirs.dedup();
    dirs
}

/// The pip wheels of a CUDA toolkit that must come from the same CUDA release as nvcc: their
/// headers and tools are used together in one compile.
const TOOLKIT_WHEELS: &[&str] = &[
    "nvidia-cuda-nvcc",
    "nvidia-cuda-crt",
    "nvidia-cuda-cccl",
    "nvidia-nvvm",
    "nvidia-cuda-runtime",
    "nvidia-cuda-nvrtc",
];

/// A pip wheel installed beside a pip nvcc (in the same `site-packages`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Wheel {
    /// `nvidia-cuda-runtime` (a `-cu12` suffix is kept as installed).
    pub name: String,
    /// `13.5.37`.
    pub version: String,
}

/// The CUDA toolkit wheels installed in the `site-packages` that holds `nvcc`
/// (`<site>/nvidia/cu13/bin/nvcc`, `<site>/nvidia/cuda_nvcc/bin/nvcc`); empty for nvcc from a
/// toolkit install.
pub fn sibling_wheels(nvcc: &Path) -> Vec<Wheel> {
    let Some(site) = nvcc.ancestors().nth(4).filter(|site| {
        nvcc.parent().and_then(Path::file_name) == Some("bin".as_ref())
            && nvcc.ancestors().nth(3).and_then(Path::file_name) == Some("nvidia".as_ref())
            && site.is_dir()
    }) else {
        return Vec::new();
    };
    let mut wheels: Vec<Wheel> = std::fs::read_dir(site)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let (package, version) = name.strip_suffix(".dist-info")?.split_once('-')?;
            let package = package.replace('_', "-").to_ascii_lowercase();
            let base = package.strip_suffix("-cu12").unwrap_or(&package);
            TOOLKIT_WHEELS.contains(&base).then(|| Wheel {
                name: package.clone(),
                version: version.to_owned(),
            })
        })
        .collect();
    wheels.sort_by(|a, b| a.name.cmp(&b.name));
    wheels
}

/// The toolkit wheels beside `nvcc` whose CUDA release (major.minor) is not nvcc's: pip resolves
/// an unpinned dependency to the newest release, and a newer `nvidia-cuda-runtime`'s headers make
/// kernels fail in ptxas (`Unresolved extern function '__nv_activemask_impl'`).
pub fn mismatched_wheels(nvcc: &Nvcc) -> Vec<Wheel> {
    let Some(release) = nvcc.version.as_deref().map(major_minor) else {
        return Vec::new();
    };
    sibling_wheels(&nvcc.path)
        .into_iter()
        .filter(|w| major_minor(&w.version) != release)
        .collect()
}

/// `13.0` of `13.0.88`.
pub fn major_minor(version: &str) -> String {
    version.split('.').take(2).collect::<Vec<_>>().join(".")
}

/// The pip command that installs a complete, consistent CUDA toolkit for `release` (`13.0`):
/// every wheel pinned to that release, the CUDA runtime's headers included (left unpinned, pip
/// takes the newest runtime, whose headers break ptxas of an older nvcc).
pub fn pip_install_line(release: &str) -> String {
    let major = release.split('.').next().unwrap_or("13");
    let names: Vec<String> = if major == "12" {
        [
            "nvidia-cuda-nvcc",
            "nvidia-cuda-runtime",
            "nvidia-cuda-nvrtc",
        ]
        .iter()
        .map(|n| format!("{n}-cu12"))
        .collect()
    } else {
        TOOLKIT_WHEELS.iter().map(|n| n.to_string()).collect()
    };
    let pins: Vec<String> = names
        .iter()
        .map(|n| format!("\"{n}=={release}.*\""))
        .collect();
    format!("pip install {}", pins.join(" "))
}

/// `13.0.88` from the last line of `nvcc --version` (`Cuda compilation tools, release 13.0, V13.0.88`).
pub fn nvcc_version(nvcc: &Path) -> Option<String> {
    let out = Command::new(nvcc).arg("--version").output().ok()?;
    parse_nvcc_version(&String::from_utf8_lossy(&out.stdout))
}

pub(crate) fn parse_nvcc_version(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .find_map(|l| l.split(", V").nth(1))
        .map(|v| v.trim().to_string())
}

/// The folder holding the HIP-on-CUDA header (`hip/hip_runtime.h`) shipped in this crate: the
/// source tree's, or the embedded copy written out where the source tree is absent
/// ([`rocm_kernels_core::headers::nvidia_dir`]).
pub fn header_dir() -> PathBuf {
    rocm_kernels_core::headers::nvidia_dir()
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("include/nvidia"))
}

/// What to compile: one source for one architecture.
#[derive(Debug, Clone)]
pub struct NvccJob<'a> {
    /// The `.hip` source, compiled as CUDA (`-x cu`).
    pub source: &'a Path,
    /// `sm_90` for a cubin, `compute_90` for PTX.
    pub arch: &'a str,
    /// Where the cubin or PTX is written (`-o`).
    pub output: &'a Path,
    /// Extra `-I` folders, after the HIP-on-CUDA header's.
    pub include_dirs: &'a [PathBuf],
    /// `-D` macros: name, and value if any.
    pub defines: &'a [(String, Option<String>)],
    /// Further nvcc arguments, passed as given after everything else.
    pub flags: &'a [String],
    /// `-O` level; above 3 counts as 3.
    pub opt_level: u32,
    /// Write a make-style depfile here (`-MD -MF`).
    pub depfile: Option<&'a Path>,
}

/// Per-kernel resources from ptxas's `-v` report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelResources {
    /// The symbol (mangled for C++ kernels).
    pub symbol: String,
    /// Registers per thread.
    pub registers: u32,
    /// Named barriers the kernel uses.
    pub barriers: u32,
    /// Static shared memory in bytes.
    pub shared_bytes: u32,
    /// Per-thread stack frame in bytes.
    pub stack_frame_bytes: u32,
    /// Bytes of registers spilled to local memory, per thread.
    pub spill_store_bytes: u32,
    /// Bytes reloaded from spills, per thread.
    pub spill_load_bytes: u32,
}

/// A failed compile: the command and everything it printed.
#[derive(Debug, thiserror::Error)]
#[error("nvcc failed for {source_file} ({arch}):\n  command: {command}\n{output}")]
pub struct NvccFailed {
    /// The source being compiled.
    pub source_file: String,
    /// How nvcc exited (`exit status: 2`), or why it could not start.
    pub status: String,
    /// The job's `sm_XX` or `compute_XX`.
    pub arch: String,
    /// The command line, as `Command`'s `Debug` shows it.
    pub command: String,
    /// nvcc's stdout then stderr, or why it could not start.
    pub output: String,
}

/// Output of a successful compile.
#[derive(Debug, Clone, Default)]
pub struct NvccOutput {
    /// Per kernel, for cubins (empty for PTX).
    pub resources: Vec<KernelResources>,
    /// Compiler warnings (diagnostic lines), for `cargo:warning`.
    pub warnings: Vec<String>,
}

/// The nvcc command line for a job.
pub fn command(nvcc: &Nvcc, job: &NvccJob) -> Command {
    let mut cmd = Command::new(&nvcc.path);
    let ptx = job.arch.starts_with("compute_");
    cmd.arg("-x").arg("cu");
    cmd.arg(if ptx { "-ptx" } else { "-cubin" });
    cmd.arg(format!("-arch={}", job.arch));
    cmd.arg(format!("-O{}", job.opt_level.min(3)));
    // hipcc lets device code call constexpr host functions (`std::min`, `std::max`,
    // `std::numeric_limits<float>::max()`): so must nvcc, for the same sources to compile.
    cmd.arg("--expt-relaxed-constexpr");
    if !ptx {
        cmd.arg("-Xptxas").arg("-v");
    }
    cmd.arg("-I").arg(header_dir());
    for dir in job.include_dirs {
        cmd.arg("-I").arg(dir);
    }
    for (name, value) in job.defines {
        match value {
            Some(v) => cmd.arg(format!("-D{name}={v}")),
            None => cmd.arg(format!("-D{name}")),
        };
    }
    if let Some(dep) = job.depfile {
        cmd.arg("-MD").arg("-MF").arg(dep);
    }
    cmd.args(job.flags);
    cmd.arg("-o").arg(job.output).arg(job.source);
    cmd
}

/// Compile one job.
pub fn compile(nvcc: &Nvcc, job: &NvccJob) -> Result<NvccOutput, NvccFailed> {
    let mut cmd = command(nvcc, job);
    let shown = format!("{cmd:?}");
    let out = cmd.output().map_err(|e| NvccFailed {
        source_file: job.source.display().to_string(),
        status: "not started".to_string(),
        arch: job.arch.to_string(),
        command: shown.clone(),
        output: format!("could not start nvcc: {e}"),
    })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(NvccFailed {
            source_file: job.source.display().to_string(),
            status: out.status.to_string(),
            arch: job.arch.to_string(),
            command: shown,
            output: text,
        });
    }
    Ok(NvccOutput {
        resources: parse_ptxas_report(&text),
        warnings: text
            .lines()
            .filter(|l| l.contains("warning"))
            .map(str::to_string)
            .collect(),
    })
}

/// Parse ptxas `-v` output into per-kernel resources.
pub fn parse_ptxas_report(text: &str) -> Vec<KernelResources> {
    let mut kernels: Vec<KernelResources> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let symbol = rest.split('\'').next().unwrap_or_default().to_string();
            kernels.push(KernelResources {
                symbol,
                ..Default::default()
            });
            continue;
        }
        let Some(k) = kernels.last_mut() else {
            continue;
        };
        if line.contains("bytes stack frame") {
            k.stack_frame_bytes = number_before(line, "bytes stack frame");
            k.spill_store_bytes = number_before(line, "bytes spill stores");
            k.spill_load_bytes = number_before(line, "bytes spill loads");
        } else if line.contains("Used") && line.contains("registers") {
            k.registers = number_after(line, "Used ");
            k.barriers = number_after(line, "used ");
            k.shared_bytes = number_before(line, "bytes smem");
        }
    }
    kernels
}

fn number_before(line: &str, marker: &str) -> u32 {
    line.split(marker)
        .next()
        .filter(|head| head.len() < line.len())
        .and_then(|head| head.split([' ', ',']).rfind(|w| !w.is_empty()))
        .and_then(|w| w.parse().ok())
        .unwrap_or(0)
}

fn number_after(line: &str, marker: &str) -> u32 {
    line.split(marker)
        .nth(1)
        .and_then(|tail| tail.split_whitespace().next())
        .and_then(|w| w.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5scaleIfEvPT_S0_' for 'sm_90'
ptxas info    : Function properties for _Z5scaleIfEvPT_S0_
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
ptxas info    : Compiling entry function 's' for 'sm_90'
ptxas info    : Function properties for s
    24 bytes stack frame, 16 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 400 bytes smem
";

    #[test]
    fn ptxas_report_is_parsed_per_kernel() {
        let k = parse_ptxas_report(REPORT);
        assert_eq!(k.len(), 2);
        assert_eq!(k[0].symbol, "_Z5scaleIfEvPT_S0_");
        assert_eq!(
            (k[0].registers, k[0].barriers, k[0].shared_bytes),
            (8, 0, 0)
        );
        assert_eq!(k[1].symbol, "s");
        assert_eq!(
            (k[1].registers, k[1].barriers, k[1].shared_bytes),
            (10, 1, 400)
        );
        assert_eq!(
            (
                k[1].stack_frame_bytes,
                k[1].spill_store_bytes,
                k[1].spill_load_bytes
            ),
            (24, 16, 12)
        );
    }

    #[test]
    fn the_headers_beside_an_nvcc_on_path_are_found() {
        let site = tempfile::tempdir().unwrap();
        let root = site.path().join("nvidia/cu13");
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::create_dir_all(root.join("include")).unwrap();
        std::fs::write(root.join("bin/nvcc"), "").unwrap();
        std::fs::write(root.join("include/cuda_runtime.h"), "").unwrap();
        let path = std::env::join_paths([Path::new("/nonexistent"), &root.join("bin")]).unwrap();
        let env = |v: &str| (v == "PATH").then(|| path.clone());
        assert!(
            cuda_include_dirs(&env).contains(&root.join("include")),
            "{:?}",
            cuda_include_dirs(&env)
        );
    }

    #[test]
    fn wheels_beside_a_pip_nvcc_are_compared_with_its_release() {
        let site = tempfile::tempdir().unwrap();
        let bin = site.path().join("nvidia/cu13/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("nvcc"), "").unwrap();
        for d in [
            "nvidia_cuda_nvcc-13.0.88.dist-info",
            "nvidia_cuda_crt-13.0.88.dist-info",
            "nvidia_cuda_runtime-13.5.37.dist-info",
            "nvidia_cublas-13.1.0.3.dist-info",
            "numpy-2.0.0.dist-info",
        ] {
            std::fs::create_dir(site.path().join(d)).unwrap();
        }
        let nvcc = Nvcc {
            path: bin.join("nvcc"),
            version: Some("13.0.88".into()),
            found_by: "test".into(),
        };
        let names: Vec<String> = sibling_wheels(&nvcc.path)
            .into_iter()
            .map(|w| format!("{}={}", w.name, w.version))
            .collect();
        assert_eq!(
            names,
            [
                "nvidia-cuda-crt=13.0.88",
                "nvidia-cuda-nvcc=13.0.88",
                "nvidia-cuda-runtime=13.5.37"
            ]
        );
        assert_eq!(
            mismatched_wheels(&nvcc),
            [Wheel {
                name: "nvidia-cuda-runtime".into(),
                version: "13.5.37".into()
            }]
        );
        // A toolkit install has no wheels to compare.
        assert!(sibling_wheels(Path::new("/usr/local/cuda/bin/nvcc")).is_empty());
        assert_eq!(
            pip_install_line("13.0"),
            "pip install \"nvidia-cuda-nvcc==13.0.*\" \"nvidia-cuda-crt==13.0.*\" \
             \"nvidia-cuda-cccl==13.0.*\" \"nvidia-nvvm==13.0.*\" \"nvidia-cuda-runtime==13.0.*\" \
             \"nvidia-cuda-nvrtc==13.0.*\""
        );
        assert!(pip_install_line("12.8").contains("\"nvidia-cuda-runtime-cu12==12.8.*\""));
    }

    #[test]
    fn version_is_read_from_the_last_line() {
        let text = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n";
        assert_eq!(parse_nvcc_version(text).as_deref(), Some("13.0.88"));
    }

    #[test]
    fn missing_nvcc_lists_where_it_looked() {
        let env = |var: &str| match var {
            "CUDA_PATH" => Some(OsString::from("/nonexistent/cuda")),
            "PATH" => Some(OsString::from("/nonexistent/bin")),
            _ => None,
        };
        // python3's nvidia package may exist on a developer machine; only assert when absent.
        if let Err(e) = find_nvcc(&env) {
            let msg = e.to_string();
            assert!(msg.contains("/nonexistent/cuda/bin/nvcc"), "{msg}");
            assert!(msg.contains("cargo rocm doctor"), "{msg}");
        }
    }

    #[test]
    fn compiles_hip_source_to_cubin_when_nvcc_is_present() {
        let env = |var: &str| std::env::var_os(var);
        let Ok(nvcc) = find_nvcc(&env) else {
            eprintln!("skipped: nvcc not installed");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("k.hip");
        std::fs::write(
            &src,
            "#include <hip/hip_runtime.h>\n\
             extern \"C\" __global__ void red(const float* x, float* out) {\n\
               __shared__ float t[64];\n\
               float v = x[threadIdx.x];\n\
               for (int o = 16; o > 0; o /= 2) v += __shfl_down(v, o);\n\
               t[threadIdx.x] = v; __syncthreads();\n\
               if (hipThreadIdx_x == 0) atomicAdd(out, t[0] + (float)__popcll(__ballot(v > 0)));\n\
             }\n",
        )
        .unwrap();
        let out = dir.path().join("k.sm_90.cubin");
        let job = NvccJob {
            source: &src,
            arch: "sm_90",
            output: &out,
            include_dirs: &[],
            defines: &[],
            flags: &[],
            opt_level: 3,
            depfile: None,
        };
        let result = compile(&nvcc, &job).unwrap();
        assert!(std::fs::read(&out).unwrap().starts_with(b"\x7fELF"));
        let red = result.resources.iter().find(|k| k.symbol == "red").unwrap();
        assert!(red.registers > 0);
        assert_eq!(red.shared_bytes, 256);
        assert_eq!(red.barriers, 1);
    }
}
