//! Run-time compilation with NVRTC, for libraries built where nvcc was not available: the build
//! embeds the kernel source (`cuda-source`), and it is compiled here for the device's `sm_XX`.
//!
//! NVRTC is opened here rather than through cudarc: cudarc's loader only tries the sonames of the
//! CUDA release its bindings were generated for (`libnvrtc.so.12` with the 12.8 bindings the
//! driver API needs), so the `libnvrtc.so.13` of a CUDA 13 toolkit or pip wheel was never found.
//! The handful of NVRTC functions used here have had the same C signatures since CUDA 7.

use std::ffi::{c_char, c_int, c_void, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::library::Backend;
use crate::runtime::{Result, RuntimeError};

type Program = *mut c_void;

/// The NVRTC functions used, resolved once.
struct Nvrtc {
    _library: libloading::Library,
    /// `libnvrtc-builtins.so.X.Y` from the same folder, kept loaded: NVRTC opens it by name,
    /// which finds it only on the loader's path unless it is already loaded.
    _builtins: Vec<libloading::Library>,
    name: String,
    create: unsafe extern "C" fn(
        *mut Program,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> c_int,
    compile: unsafe extern "C" fn(Program, c_int, *const *const c_char) -> c_int,
    ptx_size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    ptx: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
    log_size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    log: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
    destroy: unsafe extern "C" fn(*mut Program) -> c_int,
    add_name: unsafe extern "C" fn(Program, *const c_char) -> c_int,
    lowered_name: unsafe extern "C" fn(Program, *const c_char, *mut *const c_char) -> c_int,
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int,
    /// Machine code for a real architecture (`nvrtcGetCUBIN*`, CUDA 11.1 and later).
    cubin: Option<CubinFns>,
}

#[derive(Clone, Copy)]
struct CubinFns {
    size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    get: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
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
                // Safety: each type is the function's C signature from nvrtc.h.
                let resolved = unsafe {
                    (|| -> std::result::Result<Nvrtc, libloading::Error> {
                        Ok(Nvrtc {
                            create: *library.get(b"nvrtcCreateProgram\0")?,
                            compile: *library.get(b"nvrtcCompileProgram\0")?,
                            ptx_size: *library.get(b"nvrtcGetPTXSize\0")?,
                            ptx: *library.get(b"nvrtcGetPTX\0")?,
                            log_size: *library.get(b"nvrtcGetProgramLogSize\0")?,
                            log: *library.get(b"nvrtcGetProgramLog\0")?,
                            destroy: *library.get(b"nvrtcDestroyProgram\0")?,
                            add_name: *library.get(b"nvrtcAddNameExpression\0")?,
                            lowered_name: *library.get(b"nvrtcGetLoweredName\0")?,
                            version: *library.get(b"nvrtcVersion\0")?,
                            cubin: match (
                                library.get(b"nvrtcGetCUBINSize\0"),
                                library.get(b"nvrtcGetCUBIN\0"),
                            ) {
                                (Ok(size), Ok(get)) => Some(CubinFns {
                                    size: *size,
                                    get: *get,
                                }),
                                _ => None,
                            },
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
    let nvrtc = library()?;
    let (mut major, mut minor) = (0, 0);
    // Safety: two out-parameters.
    let status = unsafe { (nvrtc.version)(&mut major, &mut minor) };
    if status != 0 {
        return Err(RuntimeError::Api {
            backend: Backend::Nvidia,
            call: "nvrtcVersion".into(),
            message: format!("returned {status}"),
        });
    }
    Ok(format!("{major}.{minor}"))
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
    let env = |v: &str| std::env::var_os(v);
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "-std=c++17".to_owned(),
        format!("--include-path={}", dir.display()),
    ];
    options.extend(
        rocm_toolkit::nvcc::cuda_include_dirs(&env)
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
    let c_source =
        CString::new(source).map_err(|_| fail("the source contains a NUL byte".into()))?;
    let c_name =
        CString::new(file_name).map_err(|_| fail("the name contains a NUL byte".into()))?;
    let c_options: Vec<CString> = options
        .iter()
        .map(|o| CString::new(o.as_str()).expect("options have no NUL"))
        .collect();
    let option_ptrs: Vec<*const c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
    let expressions: Vec<(&'k str, CString)> = kernels
        .iter()
        .filter_map(|k| Some((*k, CString::new(format!("&{k}")).ok()?)))
        .collect();

    let mut program: Program = std::ptr::null_mut();
    // Safety: the pointers are valid NUL-terminated strings for the duration of the calls, and the
    // program is destroyed below on every path.
    unsafe {
        let status = (nvrtc.create)(
            &mut program,
            c_source.as_ptr(),
            c_name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        );
        if status != 0 {
            return Err(fail(format!("nvrtcCreateProgram returned {status}")));
        }
        for (_, e) in &expressions {
            (nvrtc.add_name)(program, e.as_ptr());
        }
        let status = (nvrtc.compile)(program, option_ptrs.len() as c_int, option_ptrs.as_ptr());
        let mut log = String::new();
        let mut size = 0usize;
        if (nvrtc.log_size)(program, &mut size) == 0 && size > 1 {
            let mut buf = vec![0u8; size];
            if (nvrtc.log)(program, buf.as_mut_ptr().cast()) == 0 {
                log = String::from_utf8_lossy(&buf[..size - 1]).into_owned();
            }
        }
        let result = if status != 0 {
            Err(fail(format!("compilation failed ({status}):\n{log}")))
        } else {
            let mut size = 0usize;
            if (nvrtc.ptx_size)(program, &mut size) != 0 || size == 0 {
                Err(fail("nvrtcGetPTXSize failed".into()))
            } else {
                let mut buf = vec![0u8; size];
                if (nvrtc.ptx)(program, buf.as_mut_ptr().cast()) != 0 {
                    Err(fail("nvrtcGetPTX failed".into()))
                } else {
                    buf.truncate(size - 1);
                    let mut lowered = Vec::new();
                    for (kernel, e) in &expressions {
                        let mut symbol: *const c_char = std::ptr::null();
                        if (nvrtc.lowered_name)(program, e.as_ptr(), &mut symbol) == 0
                            && !symbol.is_null()
                        {
                            // Owned by the program, copied before it is destroyed.
                            let text = std::ffi::CStr::from_ptr(symbol);
                            lowered.push((*kernel, text.to_string_lossy().into_owned()));
                        }
                    }
                    // A cubin exists only for a real architecture (sm_XX); none is no error.
                    let cubin = nvrtc.cubin.filter(|_| want_cubin).and_then(|f| {
                        let mut size = 0usize;
                        if (f.size)(program, &mut size) != 0 || size == 0 {
                            return None;
                        }
                        let mut bin = vec![0u8; size];
                        ((f.get)(program, bin.as_mut_ptr().cast()) == 0).then_some(bin)
                    });
                    Ok(Output {
                        ptx: buf,
                        cubin,
                        symbols: lowered,
                        log,
                    })
                }
            }
        };
        (nvrtc.destroy)(&mut program);
        result
    }
}
