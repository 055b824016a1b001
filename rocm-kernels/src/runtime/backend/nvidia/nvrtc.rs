//! Run-time compilation with NVRTC, for libraries built where nvcc was not available: the build
//! embeds the kernel source (`cuda-source`), and it is compiled here for the device's `sm_XX`.
//!
//! NVRTC is opened here rather than through cudarc: cudarc's loader only tries the sonames of the
//! CUDA release its bindings were generated for (`libnvrtc.so.12` with the 12.8 bindings the
//! driver API needs), so the `libnvrtc.so.13` of a CUDA 13 toolkit or pip wheel was never found.
//! The handful of NVRTC functions used here have had the same C signatures since CUDA 7.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::library::Backend;
use crate::runtime::backend::rtc;
use crate::runtime::{Result, RuntimeError};

/// The NVRTC functions used, resolved once.
struct Nvrtc {
    _library: libloading::Library,
    /// `libnvrtc-builtins.so.X.Y` from the same folder, kept loaded: NVRTC opens it by name,
    /// which finds it only on the loader's path unless it is already loaded.
    _builtins: Vec<libloading::Library>,
    name: String,
    api: rtc::Api,
    /// `nvrtcGetPTXSize` / `nvrtcGetPTX`.
    ptx: rtc::Output,
    /// Machine code for a real architecture (`nvrtcGetCUBIN*`, CUDA 11.1 and later).
    cubin: Option<rtc::Output>,
}

/// Library names tried, newest release first; then the same names in the usual toolkit folders
/// and the pip wheels' (`nvidia/cu13/lib`, `nvidia/cuda_nvrtc/lib`).
const NAMES: [&str; 4] = [
    "libnvrtc.so.13",
    "libnvrtc.so.12",
    "libnvrtc.so",
    "libnvrtc.so.11.2",
];

fn candidates() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["CUDA_PATH", "CUDA_HOME"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(|p| Path::new(&p).join("lib64")))
        .collect();
    dirs.push("/usr/local/cuda/lib64".into());
    let env = |v: &str| std::env::var_os(v);
    for include in rocm_toolkit::nvcc::cuda_include_dirs(&env) {
        if let Some(root) = include.parent() {
            dirs.push(root.join("lib"));
        }
    }
    let mut out: Vec<PathBuf> = NAMES.iter().map(PathBuf::from).collect();
    for dir in dirs {
        out.extend(NAMES.iter().map(|n| dir.join(n)));
    }
    out
}

fn library() -> Result<&'static Nvrtc> {
    static NVRTC: OnceLock<std::result::Result<Nvrtc, String>> = OnceLock::new();
    NVRTC
        .get_or_init(|| {
            let tried = candidates();
            for path in &tried {
                // Safety: loading NVRTC runs no initialisers with preconditions.
                let Ok(library) = (unsafe { libloading::Library::new(path) }) else {
                    continue;
                };
                // Safety: this is NVRTC; the types are its C signatures from nvrtc.h.
                let resolved = unsafe {
                    (|| -> std::result::Result<Nvrtc, libloading::Error> {
                        Ok(Nvrtc {
                            api: rtc::Api::load(&library, "nvrtc")?,
                            ptx: rtc::Output::load(&library, "nvrtc", "GetPTXSize", "GetPTX")?,
                            cubin: rtc::Output::load(&library, "nvrtc", "GetCUBINSize", "GetCUBIN")
                                .ok(),
                            name: path.display().to_string(),
                            _library: library,
                            _builtins: Vec::new(),
                        })
                    })()
                };
                if let Ok(mut nvrtc) = resolved {
                    nvrtc._builtins = builtins_beside(path);
                    return Ok(nvrtc);
                }
            }
            Err(format!(
                "tried {} and the same names in the CUDA toolkit and pip wheel folders",
                NAMES.join(", ")
            ))
        })
        .as_ref()
        .map_err(|tried| RuntimeError::LibraryLoad {
            library: "libnvrtc".into(),
            reason: format!(
                "NVRTC is not installed ({tried}): install the CUDA toolkit or `pip install \
                 nvidia-cuda-nvrtc` pinned to your driver's CUDA release (`cargo rocm doctor \
                 --backend nvidia` prints the line), or build with nvcc available so cubins are \
                 embedded"
            ),
        })
}

/// Loads the `libnvrtc-builtins.so*` beside an NVRTC opened by path (a pip wheel's folder is not
/// on the loader's path).
fn builtins_beside(nvrtc: &Path) -> Vec<libloading::Library> {
    let Some(dir) = nvrtc.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Vec::new();
    };
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("libnvrtc-builtins.so") && !name.contains(".alt.")
        })
        // Safety: the builtins library only holds data and functions NVRTC calls.
        .filter_map(|e| unsafe { libloading::Library::new(e.path()) }.ok())
        .collect()
}

/// The NVRTC library file in use.
pub(crate) fn library_name() -> Result<String> {
    library().map(|l| l.name.clone())
}

/// NVRTC's version, `major.minor` (part of the key of caches of its output).
pub(crate) fn version() -> Result<String> {
    let (major, minor) = library()?
        .api
        .version()
        .map_err(|message| RuntimeError::Api {
            backend: Backend::Nvidia,
            call: "nvrtcVersion".into(),
            message,
        })?;
    Ok(format!("{major}.{minor}"))
}

/// CUDA's header folders, found once per process: finding them asks `python3` for its
/// `sys.path` (where pip puts the CUDA wheels), tens of milliseconds that `cargo rocm tune` paid
/// on every candidate it compiled.
fn cuda_include_dirs() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let env = |v: &str| std::env::var_os(v);
        rocm_toolkit::nvcc::cuda_include_dirs(&env)
    })
}

/// Compile `source` (the text of `name`) to PTX for `arch` (`sm_90`), with the symbol NVRTC gives
/// each of `kernels` (the library's names: `saxpy`, `scale<float>`; `&name` is the expression
/// NVRTC lowers). Kernels it does not find are left out.
pub(crate) fn compile<'k>(
    name: &str,
    source: &[u8],
    arch: &str,
    kernels: &[&'k str],
) -> Result<(String, Vec<(&'k str, String)>)> {
    let out = compile_with(name, source, arch, kernels, &[], false)?;
    Ok((String::from_utf8_lossy(&out.ptx).into_owned(), out.symbols))
}

/// The macro that keeps libcu++ out of `hip/detail/rtc_std.h` (see [`compile_with`]).
const NO_LIBCUXX: &str = "ROCM_RTC_NO_LIBCUXX";

/// Whether a source names namespace `std` (`std::min`, `using namespace std`).
fn mentions_std(source: &[u8]) -> bool {
    source.windows(3).enumerate().any(|(i, w)| {
        w == b"std"
            && (i == 0 || !is_ident(source[i - 1]))
            && source.get(i + 3).is_none_or(|c| !is_ident(*c))
    })
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// What [`compile_with`] made.
pub(crate) struct Output<'k> {
    /// PTX text (without its final NUL).
    pub ptx: Vec<u8>,
    /// Machine code for `arch`, when asked for and this NVRTC can make it.
    pub cubin: Option<Vec<u8>>,
    /// The symbol of each kernel found.
    pub symbols: Vec<(&'k str, String)>,
    /// The compiler's log (warnings), possibly empty.
    pub log: String,
}

/// [`compile`] with more NVRTC `options` (`-DTILE=16`), and the cubin too when `want_cubin`.
pub(crate) fn compile_with<'k>(
    name: &str,
    source: &[u8],
    arch: &str,
    kernels: &[&'k str],
    extra_options: &[String],
    want_cubin: bool,
) -> Result<Output<'k>> {
    let nvrtc = library()?;
    // The HIP-on-CUDA headers, so `#include <hip/hip_runtime.h>` works.
    let dir = rocm_kernels_core::headers::nvidia_dir().map_err(|e| RuntimeError::Api {
        backend: Backend::Nvidia,
        call: "nvrtc headers".into(),
        message: format!(
            "cannot write the HIP-on-CUDA headers under {}: {e}",
            std::env::temp_dir().display()
        ),
    })?;
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "-std=c++17".to_owned(),
        format!("--include-path={}", dir.display()),
        // `<cmath>`, `<cstdint>`, `<cfloat>`... for kernels that include them: NVRTC has no
        // standard headers, and these give what nvcc's would (`hip/detail/rtc_std.h`).
        format!("--include-path={}", dir.join("rtc").display()),
    ];
    options.extend(
        cuda_include_dirs()
            .iter()
            .map(|d| format!("--include-path={}", d.display())),
    );
    options.extend(extra_options.iter().cloned());
    let call = format!("nvrtcCompileProgram({name}, {arch}) with {}", nvrtc.name);
    let fail = |message: String| RuntimeError::Api {
        backend: Backend::Nvidia,
        call: call.clone(),
        message,
    };
    let file_name = Path::new(name)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.to_string());
    // libcu++ (what `hip/detail/rtc_std.h` takes namespace std's names from) costs NVRTC about
    // 1.6 s a program, against 0.06 s for a tuned matmul without it (H100 host, NVRTC 13.0):
    // `cargo rocm tune` waited on it for every candidate. A source that never names `std` is
    // compiled without it first (the header's own definitions give the macros and integer
    // types); if that fails (a header it includes might name `std`), as before, with it.
    let compiled = if mentions_std(source) {
        None
    } else {
        let mut fast = options.clone();
        fast.push(format!("-D{NO_LIBCUXX}"));
        nvrtc.api.compile(&file_name, source, kernels, &fast).ok()
    };
    let compiled = match compiled {
        Some(c) => c,
        None => match nvrtc.api.compile(&file_name, source, kernels, &options) {
            Ok(c) => c,
            // nvcc compiles a namespace-scope variable without a memory space as a host
            // variable, which device code never uses; NVRTC refuses it in JIT mode
            // (HIP-Examples' dct, HeCBench's matrixT: `int MATRIX_SIZE_X = 1024;` beside the
            // kernels). Its own advice, `-default-device`, makes such variables `__device__`
            // ones instead, which no kernel that compiled with nvcc can tell apart.
            Err(log) if log.contains("host variables are not allowed in JIT mode") => {
                let mut again = options.clone();
                again.push("-default-device".to_owned());
                nvrtc
                    .api
                    .compile(&file_name, source, kernels, &again)
                    .map_err(|again_log| {
                        fail(format!(
                            "{log}\nand again with -default-device, as NVRTC suggests (a host \
                             variable initialised at run time, or host code, cannot be device \
                             code; nvcc keeps them on the host, NVRTC has no host side):\n\
                             {again_log}"
                        ))
                    })?
            }
            Err(log) => return Err(fail(log)),
        },
    };
    let mut ptx = compiled
        .output(nvrtc.ptx)
        .ok_or_else(|| fail("nvrtcGetPTX failed".into()))?;
    ptx.pop(); // its final NUL
               // A cubin exists only for a real architecture (sm_XX); none is no error.
    let cubin = nvrtc
        .cubin
        .filter(|_| want_cubin)
        .and_then(|c| compiled.output(c));
    Ok(Output {
        ptx,
        cubin,
        symbols: compiled.symbols.clone(),
        log: compiled.log.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::mentions_std;

    #[test]
    fn sources_naming_std_are_told_apart() {
        assert!(mentions_std(b"float m = std::max(a, b);"));
        assert!(mentions_std(b"using namespace std;\n"));
        assert!(mentions_std(b"std"));
        assert!(!mentions_std(
            b"#include <hip/hip_runtime.h>\n__global__ void k(float* stdev) {}"
        ));
        assert!(!mentions_std(b"int mystd = 0; // cstdint"));
        assert!(!mentions_std(b""));
    }
}
