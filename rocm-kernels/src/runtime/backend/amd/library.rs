//! Finding and opening `libamdhip64` at run time, and resolving its functions one by one.
//!
//! A binary built with rocm-kernels must start on machines without ROCm, so the library is never
//! linked: it is `dlopen`ed on first use, and each function is looked up the first time a call
//! needs it. A function the installed version lacks is a [`RuntimeError::LibraryLoad`] for that
//! call only (the rest of the API keeps working), never a panic.

use std::ffi::{c_char, c_float, c_int, c_uint, c_void};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use super::sys::*;
use crate::runtime::{Result, RuntimeError};

/// Environment variable naming the library file to use instead of searching for one.
pub const HIP_LIB_ENV: &str = "ROCM_KERNELS_HIP_LIB";

/// What to do when no library loads.
const INSTALL_HINT: &str =
    "install ROCm (cargo rocm toolchain install) or set ROCM_KERNELS_HIP_LIB to the library's path";

/// File names tried, newest ABI first.
const LIBRARY_NAMES: [&str; 3] = ["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"];

/// Where to look for the library, in order: the `ROCM_KERNELS_HIP_LIB` file alone when it is set
/// (an explicit choice is never silently replaced by another library), else each name in
/// `$ROCM_PATH/lib`, then through the dynamic loader's own search (`LD_LIBRARY_PATH`,
/// `ld.so.cache`: distro packages), then in `/opt/rocm/lib`.
pub fn library_candidates() -> Vec<PathBuf> {
    if let Some(path) = std::env::var_os(HIP_LIB_ENV).filter(|p| !p.is_empty()) {
        return vec![PathBuf::from(path)];
    }
    let mut candidates = Vec::new();
    if let Some(root) = std::env::var_os("ROCM_PATH").filter(|p| !p.is_empty()) {
        let lib = Path::new(&root).join("lib");
        candidates.extend(LIBRARY_NAMES.iter().map(|name| lib.join(name)));
    }
    candidates.extend(LIBRARY_NAMES.iter().map(PathBuf::from));
    candidates.extend(
        LIBRARY_NAMES
            .iter()
            .map(|name| Path::new("/opt/rocm/lib").join(name)),
    );
    candidates
}

/// Generates the table of lazily resolved functions and one accessor per function returning
/// the function pointer or the [`RuntimeError::LibraryLoad`] that names it.
macro_rules! hip_functions {
    ($( $name:ident : fn($($arg:ty),* $(,)?) -> $ret:ty; )*) => {
        /// One slot per function: unresolved, resolved, or known to be missing.
        #[allow(non_snake_case)]
        #[derive(Default)]
        struct Symbols {
            $( $name: OnceLock<Option<unsafe extern "C" fn($($arg),*) -> $ret>>, )*
        }

        #[allow(non_snake_case)]
        impl HipLibrary {
            $(
                pub(crate) fn $name(&self) -> Result<unsafe extern "C" fn($($arg),*) -> $ret> {
                    let slot = self.symbols.$name.get_or_init(|| {
                        // Safety: the type is the function's C signature from the HIP headers.
                        unsafe {
                            self.library
                                .get::<unsafe extern "C" fn($($arg),*) -> $ret>(
                                    concat!(stringify!($name), "\0").as_bytes(),
                                )
                                .ok()
                                .map(|symbol| *symbol)
                        }
                    });
                    slot.ok_or_else(|| self.missing(stringify!($name)))
                }
            )*
        }
    };
}

hip_functions! {
    hipInit: fn(c_uint) -> hipError_t;
    hipGetDeviceCount: fn(*mut c_int) -> hipError_t;
    hipGetErrorString: fn(hipError_t) -> *const c_char;
    hipGetErrorName: fn(hipError_t) -> *const c_char;
    hipRuntimeGetVersion: fn(*mut c_int) -> hipError_t;
    hipSetDevice: fn(c_int) -> hipError_t;
    hipDeviceGetName: fn(*mut c_char, c_int, c_int) -> hipError_t;
    hipDeviceGetAttribute: fn(*mut c_int, hipDeviceAttribute_t, c_int) -> hipError_t;
    hipDeviceTotalMem: fn(*mut usize, c_int) -> hipError_t;
    hipGetDeviceProperties: fn(*mut c_void, c_int) -> hipError_t;
    hipDeviceSynchronize: fn() -> hipError_t;
    hipMalloc: fn(*mut *mut c_void, usize) -> hipError_t;
    hipFree: fn(*mut c_void) -> hipError_t;
    hipHostMalloc: fn(*mut *mut c_void, usize, c_uint) -> hipError_t;
    hipHostFree: fn(*mut c_void) -> hipError_t;
    hipMemcpyHtoDAsync: fn(hipDeviceptr_t, *mut c_void, usize, hipStream_t) -> hipError_t;
    hipMemcpyDtoHAsync: fn(*mut c_void, hipDeviceptr_t, usize, hipStream_t) -> hipError_t;
    hipMemcpyDtoDAsync: fn(hipDeviceptr_t, hipDeviceptr_t, usize, hipStream_t) -> hipError_t;
    hipMemsetD8Async: fn(hipDeviceptr_t, u8, usize, hipStream_t) -> hipError_t;
    hipMemsetD16Async: fn(hipDeviceptr_t, u16, usize, hipStream_t) -> hipError_t;
    hipMemsetD32Async: fn(hipDeviceptr_t, c_int, usize, hipStream_t) -> hipError_t;
    hipStreamCreate: fn(*mut hipStream_t) -> hipError_t;
    hipStreamSynchronize: fn(hipStream_t) -> hipError_t;
    hipStreamDestroy: fn(hipStream_t) -> hipError_t;
    hipEventCreate: fn(*mut hipEvent_t) -> hipError_t;
    hipEventRecord: fn(hipEvent_t, hipStream_t) -> hipError_t;
    hipEventSynchronize: fn(hipEvent_t) -> hipError_t;
    hipEventElapsedTime: fn(*mut c_float, hipEvent_t, hipEvent_t) -> hipError_t;
    hipEventDestroy: fn(hipEvent_t) -> hipError_t;
    hipModuleLoadData: fn(*mut hipModule_t, *const c_void) -> hipError_t;
    hipModuleGetFunction: fn(*mut hipFunction_t, hipModule_t, *const c_char) -> hipError_t;
    hipModuleGetGlobal: fn(*mut hipDeviceptr_t, *mut usize, hipModule_t, *const c_char) -> hipError_t;
    hipModuleUnload: fn(hipModule_t) -> hipError_t;
    hipModuleLaunchKernel: fn(
        hipFunction_t,
        c_uint, c_uint, c_uint,
        c_uint, c_uint, c_uint,
        c_uint,
        hipStream_t,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> hipError_t;
}

/// An opened `libamdhip64`. Opened libraries are kept for the life of the process (HIP's
/// runtime starts threads and registers exit handlers; unloading it is not safe), so a
/// `&'static HipLibrary` can be shared freely.
pub struct HipLibrary {
    library: libloading::Library,
    path: PathBuf,
    symbols: Symbols,
}

impl std::fmt::Debug for HipLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HipLibrary")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Libraries opened so far, by the path they were opened with.
static OPENED: Mutex<Vec<&'static HipLibrary>> = Mutex::new(Vec::new());

impl HipLibrary {
    /// Open the first library of [`library_candidates`] that loads.
    ///
    /// The error lists every file tried and says how to get one.
    pub fn open() -> Result<&'static HipLibrary> {
        HipLibrary::open_first(&library_candidates())
    }

    /// Open the first of `candidates` that loads (see [`open`](Self::open)).
    pub fn open_first(candidates: &[PathBuf]) -> Result<&'static HipLibrary> {
        let mut failures = Vec::new();
        for candidate in candidates {
            match HipLibrary::open_path(candidate) {
                Ok(library) => return Ok(library),
                Err(error) => failures.push(error),
            }
        }
        let tried = candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        // A file that exists but fails to load is worth showing verbatim (a wrong architecture,
        // a missing dependency); plain "not found" for every name is summarised.
        let detail = failures
            .iter()
            .filter_map(|e| match e {
                RuntimeError::LibraryLoad { reason, .. }
                    if !reason.contains("No such file") && !reason.contains("cannot open") =>
                {
                    Some(reason.clone())
                }
                _ => None,
            })
            .collect::<Vec<_>>();
        Err(RuntimeError::LibraryLoad {
            library: "libamdhip64".into(),
            reason: if detail.is_empty() {
                format!("not found (tried {tried}): {INSTALL_HINT}")
            } else {
                format!(
                    "not loadable (tried {tried}; {}): {INSTALL_HINT}",
                    detail.join("; ")
                )
            },
        })
    }

    /// Open the library at `path` (a file path, or a bare name for the dynamic loader to find).
    pub fn open_path(path: &Path) -> Result<&'static HipLibrary> {
        let mut opened = OPENED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(library) = opened.iter().find(|l| l.path == path) {
            return Ok(library);
        }
        // Safety: loading runs the library's initialisers; libamdhip64's only set up its
        // runtime state (it does not touch the device until `hipInit`).
        let library = unsafe { libloading::Library::new(path) }.map_err(|error| {
            RuntimeError::LibraryLoad {
                library: path.display().to_string(),
                reason: dlopen_error_text(&error),
            }
        })?;
        let library: &'static HipLibrary = Box::leak(Box::new(HipLibrary {
            library,
            path: path.to_path_buf(),
            symbols: Symbols::default(),
        }));
        opened.push(library);
        Ok(library)
    }

    /// The path the library was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn missing(&self, name: &str) -> RuntimeError {
        RuntimeError::LibraryLoad {
            library: self.path.display().to_string(),
            reason: format!(
                "it has no function `{name}` (a HIP runtime too old or not the real \
                 libamdhip64?); install a current ROCm or point {HIP_LIB_ENV} at one"
            ),
        }
    }
}

/// libloading keeps `dlerror()`'s text in the error's source, not in its `Display`.
fn dlopen_error_text(error: &libloading::Error) -> String {
    use std::error::Error;
    match error.source() {
        Some(source) => format!("{error}: {source}"),
        None => error.to_string(),
    }
}
