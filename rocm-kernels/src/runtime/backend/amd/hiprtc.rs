//! Run-time compilation with hipRTC, HIP's counterpart of NVRTC, for kernels whose compile-time
//! parameters are chosen at run time (`cargo rocm tune`). Written against hipRTC's documented C
//! API (`hip/hiprtc.h`): `hiprtcCreateProgram`, `hiprtcAddNameExpression`,
//! `hiprtcCompileProgram` with `--offload-arch=gfxXXX`, `hiprtcGetCode`, `hiprtcGetLoweredName`.
//!
//! Since ROCm 6 hipRTC is its own library (`libhiprtc.so`); ROCm 5 kept it inside
//! `libamdhip64`. Both are opened at run time, and a machine without either gets a
//! [`RuntimeError::LibraryLoad`] naming what to install, never a panic. No AMD GPU is needed to
//! compile; no AMD GPU has run what it compiles in this project (`docs/amd-backend.md`).

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use crate::library::{Backend, ObjectFormat};
use crate::runtime::backend::{rtc, RtcImage};
use crate::runtime::{Result, RuntimeError};

/// The hipRTC functions used, resolved once.
struct Hiprtc {
    _library: libloading::Library,
    name: String,
    api: rtc::Api,
    /// `hiprtcGetCodeSize` / `hiprtcGetCode`: the AMDGPU code object.
    code: rtc::Output,
    /// Held for every compile: hipRTC is not safe to call from two threads at once (ROCm 5.2's
    /// crashed in `hiprtcAddNameExpression` while another thread compiled, in this crate's
    /// tests), and `cargo rocm tune` compiles candidates on worker threads.
    lock: Mutex<()>,
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
                    Ok(l) => {
                        // Its initialisers may install LLVM's signal handlers.
                        crate::runtime::backend::cpu::signal_handlers_first();
                        l
                    }
                    Err(e) => {
                        reasons.push(format!("{}: {e}", path.display()));
                        continue;
                    }
                };
                // Safety: this is hipRTC; the types are its C signatures from hip/hiprtc.h.
                let resolved = unsafe {
                    (|| -> std::result::Result<Hiprtc, libloading::Error> {
                        Ok(Hiprtc {
                            api: rtc::Api::load(&library, "hiprtc")?,
                            code: rtc::Output::load(&library, "hiprtc", "GetCodeSize", "GetCode")?,
                            name: path.display().to_string(),
                            lock: Mutex::new(()),
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
    let (major, minor) = h.api.version().map_err(|message| RuntimeError::Api {
        backend: Backend::Amd,
        call: "hiprtcVersion".into(),
        message,
    })?;
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
    // Declared first, so it is released after the program is destroyed.
    let _one_at_a_time = h
        .lock
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let compiled = h.api.compile(name, source, kernels, &all_options);
    // hipRTC (LLVM) may have installed its signal handlers in front of the cpu backend's.
    crate::runtime::backend::cpu::signal_handlers_first();
    let compiled = compiled.map_err(fail)?;
    let code = compiled
        .output(h.code)
        .ok_or_else(|| fail("hiprtcGetCode failed".into()))?;
    if code.starts_with(BUNDLE_MAGIC) {
        return Err(fail(
            "hipRTC returned an offload bundle, not a code object; use a ROCm whose hipRTC \
             returns code objects (5.0 or later)"
                .into(),
        ));
    }
    Ok(RtcImage {
        format: ObjectFormat::AmdgpuElf,
        target: target.to_string(),
        bytes: code,
        symbols: compiled
            .symbols
            .iter()
            .map(|(k, s)| (k.to_string(), s.clone()))
            .collect(),
        log: compiled.log.clone(),
    })
}
