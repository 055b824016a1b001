//! Run-time compilation with hipRTC, HIP's counterpart of NVRTC, for kernels whose compile-time
//! parameters are chosen at run time (`cargo rocm tune`). Written against hipRTC's documented C
//! API (`hip/hiprtc.h`): `hiprtcCreateProgram`, `hiprtcAddNameExpression`,
//! `hiprtcCompileProgram` with `--offload-arch=gfxXXX`, `hiprtcGetCode`, `hiprtcGetLoweredName`.
//!
//! Since ROCm 6 hipRTC is its own library (`libhiprtc.so`); ROCm 5 kept it inside
//! `libamdhip64`. Both are opened at run time, and a machine without either gets a
//! [`RuntimeError::LibraryLoad`] naming what to install, never a panic. No AMD GPU is needed to
//! compile; no AMD GPU has run what it compiles in this project (`docs/amd-backend.md`).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::library::{Backend, ObjectFormat};
use crate::runtime::backend::RtcImage;
use crate::runtime::{Result, RuntimeError};

type Program = *mut c_void;

/// The hipRTC functions used, resolved once.
struct Hiprtc {
    _library: libloading::Library,
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
    code_size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    code: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
    log_size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    log: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
    destroy: unsafe extern "C" fn(*mut Program) -> c_int,
    add_name: unsafe extern "C" fn(Program, *const c_char) -> c_int,
    lowered_name: unsafe extern "C" fn(Program, *const c_char, *mut *const c_char) -> c_int,
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int,
}

/// Environment variable naming the hipRTC library to use instead of searching for one.
pub const HIPRTC_LIB_ENV: &str = "ROCM_KERNELS_HIPRTC_LIB";

/// Where hipRTC may be: `ROCM_KERNELS_HIPRTC_LIB` alone when set; else `libhiprtc` (ROCm 6 and
/// later) and then the HIP runtime itself (ROCm 5), each through `$ROCM_PATH/lib`, the loader's
/// search and `/opt/rocm/lib`.
pub fn hiprtc_candidates() -> Vec<PathBuf> {
    if let Some(path) = std::env::var_os(HIPRTC_LIB_ENV).filter(|p| !p.is_empty()) {
        return vec![PathBuf::from(path)];
    }
    let names = ["libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6"];
    let mut out: Vec<PathBuf> = Vec::new();
    if let Some(root) = std::env::var_os("ROCM_PATH").filter(|p| !p.is_empty()) {
        out.extend(
            names
                .iter()
                .map(|n| PathBuf::from(&root).join("lib").join(n)),
        );
    }
    out.extend(names.iter().map(PathBuf::from));
    out.extend(names.iter().map(|n| PathBuf::from("/opt/rocm/lib").join(n)));
    out.extend(super::library_candidates());
    out
}

fn library() -> Result<&'static Hiprtc> {
    static HIPRTC: OnceLock<std::result::Result<Hiprtc, String>> = OnceLock::new();
    HIPRTC
        .get_or_init(|| {
            let tried = hiprtc_candidates();
            let mut reasons = Vec::new();
            for path in &tried {
                // Safety: opening a ROCm library runs its initialisers, which have no
                // preconditions.
                let library = match unsafe { libloading::Library::new(path) } {
                    Ok(l) => l,
                    Err(e) => {
                        reasons.push(format!("{}: {e}", path.display()));
                        continue;
                    }
                };
                // Safety: each type is the function's C signature from hip/hiprtc.h.
                let resolved = unsafe {
                    (|| -> std::result::Result<Hiprtc, libloading::Error> {
                        Ok(Hiprtc {
                            create: *library.get(b"hiprtcCreateProgram\0")?,
                            compile: *library.get(b"hiprtcCompileProgram\0")?,
                            code_size: *library.get(b"hiprtcGetCodeSize\0")?,
                            code: *library.get(b"hiprtcGetCode\0")?,
                            log_size: *library.get(b"hiprtcGetProgramLogSize\0")?,
                            log: *library.get(b"hiprtcGetProgramLog\0")?,
                            destroy: *library.get(b"hiprtcDestroyProgram\0")?,
                            add_name: *library.get(b"hiprtcAddNameExpression\0")?,
                            lowered_name: *library.get(b"hiprtcGetLoweredName\0")?,
                            version: *library.get(b"hiprtcVersion\0")?,
                            name: path.display().to_string(),
                            _library: library,
                        })
                    })()
                };
                match resolved {
                    Ok(h) => return Ok(h),
                    Err(e) => reasons.push(format!("{}: {e}", path.display())),
                }
            }
            Err(reasons.join("; "))
        })
        .as_ref()
        .map_err(|tried| RuntimeError::LibraryLoad {
            library: "libhiprtc".into(),
            reason: format!(
                "hipRTC is not installed ({tried}): install ROCm's hipRTC (`apt-get install \
                 hiprtc` or `cargo rocm toolchain install`), or set {HIPRTC_LIB_ENV} to its path"
            ),
        })
}

/// hipRTC's version (`6.2`) and the library file it was found in.
pub fn hiprtc_version() -> Result<(String, String)> {
    let h = library()?;
    let (mut major, mut minor) = (0, 0);
    // Safety: two out-parameters.
    let status = unsafe { (h.version)(&mut major, &mut minor) };
    if status != 0 {
        return Err(RuntimeError::Api {
            backend: Backend::Amd,
            call: "hiprtcVersion".into(),
            message: format!("returned {status}"),
        });
    }
    Ok((format!("{major}.{minor}"), h.name.clone()))
}

/// The magic at the start of a clang offload bundle, which the runtime does not read.
const BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";

/// Compiles `source` (the text of file `name`) with hipRTC for `target` (`gfx90a`) and extra
/// `options` (`-DTILE=16`), naming the symbols of `kernels`. The result is one AMDGPU code
/// object; a compile error is [`RuntimeError::Api`] with hipRTC's log.
pub fn compile_at_run_time(
    name: &str,
    source: &[u8],
    target: &str,
    kernels: &[&str],
    options: &[String],
) -> Result<RtcImage> {
    let h = library()?;
    let call = format!("hiprtcCompileProgram({name}, {target}) with {}", h.name);
    let fail = |message: String| RuntimeError::Api {
        backend: Backend::Amd,
        call: call.clone(),
        message,
    };
    let mut all_options = vec![format!("--offload-arch={target}"), "-O3".to_owned()];
    all_options.extend(options.iter().cloned());
    let c_source =
        CString::new(source).map_err(|_| fail("the source contains a NUL byte".into()))?;
    let c_name = CString::new(name).map_err(|_| fail("the name contains a NUL byte".into()))?;
    let c_options: Vec<CString> = all_options
        .iter()
        .map(|o| CString::new(o.as_str()).map_err(|_| fail(format!("option `{o}` has a NUL"))))
        .collect::<Result<_>>()?;
    let option_ptrs: Vec<*const c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
    let expressions: Vec<(&str, CString)> = kernels
        .iter()
        .filter_map(|k| Some((*k, CString::new(format!("&{k}")).ok()?)))
        .collect();
    let mut program: Program = std::ptr::null_mut();
    // Safety: every pointer is a valid NUL-terminated string for the duration of the calls, and
    // the program is destroyed on every path below.
    unsafe {
        let status = (h.create)(
            &mut program,
            c_source.as_ptr(),
            c_name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        );
        if status != 0 {
            return Err(fail(format!("hiprtcCreateProgram returned {status}")));
        }
        for (_, e) in &expressions {
            (h.add_name)(program, e.as_ptr());
        }
        let status = (h.compile)(program, option_ptrs.len() as c_int, option_ptrs.as_ptr());
        let mut log = String::new();
        let mut size = 0usize;
        if (h.log_size)(program, &mut size) == 0 && size > 1 {
            let mut buf = vec![0u8; size];
            if (h.log)(program, buf.as_mut_ptr().cast()) == 0 {
                log = String::from_utf8_lossy(&buf[..size - 1]).into_owned();
            }
        }
        let result = if status != 0 {
            Err(fail(format!("compilation failed ({status}):\n{log}")))
        } else {
            let mut size = 0usize;
            if (h.code_size)(program, &mut size) != 0 || size == 0 {
                Err(fail("hiprtcGetCodeSize failed".into()))
            } else {
                let mut code = vec![0u8; size];
                if (h.code)(program, code.as_mut_ptr().cast()) != 0 {
                    Err(fail("hiprtcGetCode failed".into()))
                } else if code.starts_with(BUNDLE_MAGIC) {
                    Err(fail(
                        "hipRTC returned an offload bundle, not a code object; use a ROCm whose \
                         hipRTC returns code objects (5.0 or later)"
                            .into(),
                    ))
                } else {
                    let mut symbols = Vec::new();
                    for (kernel, e) in &expressions {
                        let mut symbol: *const c_char = std::ptr::null();
                        if (h.lowered_name)(program, e.as_ptr(), &mut symbol) == 0
                            && !symbol.is_null()
                        {
                            // Owned by the program: copied before it is destroyed.
                            let text = CStr::from_ptr(symbol).to_string_lossy().into_owned();
                            symbols.push((kernel.to_string(), text));
                        }
                    }
                    Ok(RtcImage {
                        format: ObjectFormat::AmdgpuElf,
                        target: target.to_string(),
                        bytes: code,
                        symbols,
                        log,
                    })
                }
            }
        };
        (h.destroy)(&mut program);
        result
    }
}
