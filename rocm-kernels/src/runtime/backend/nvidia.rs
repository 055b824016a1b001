//! The nvidia backend: HIP kernels compiled for CUDA (a cubin per `sm_XX` and PTX by nvcc at build
//! time, or NVRTC at load time) and run through the CUDA driver API, which cudarc loads at run
//! time. A machine without the NVIDIA driver gets a reason from [`probe`], never a panic or a
//! link error.
//!
//! Copies are synchronous on the legacy default stream, which orders them after every kernel
//! launched on the (blocking) streams this backend creates: a download after a launch always
//! sees the kernel's results. Launches are asynchronous.
//!
//! A kernel that faults (illegal address, trap, assert) leaves a CUDA context unusable. The fault
//! is reported by the call that observed it, naming the kernel launched last. On the next call
//! the backend resets the device's primary context and starts a new *generation* (modules reload
//! themselves; memory of the old generation is reported as lost instead of being touched). Where
//! the driver refuses the reset (seen on an H100 with driver 580: a sticky error stays for the
//! life of the process), the device is marked lost and every later call says why, so a harness
//! reports the remaining work as not run instead of hanging or crashing.
//!
//! Files: this one (probing, driver errors, run-time compiles), `device` (contexts, generations,
//! memory, copies), `stream` (streams and events), `module` (loading images, reloading after a
//! reset), `launch` (kernels and launches), `image` (which image fits a device), `nvrtc`.

mod device;
mod image;
mod launch;
mod module;
mod nvrtc;
mod stream;

use device::NvDevice;

/// Compiles a one-line kernel that uses warp intrinsics through the HIP-on-CUDA header with NVRTC
/// for `arch` (`sm_90`), as a library built without nvcc is compiled at load time: what
/// `cargo rocm doctor` asks before any kernel needs it. No GPU or driver is needed. Returns the
/// library that compiled it.
pub fn check_nvrtc(arch: &str) -> crate::runtime::Result<String> {
    const PROBE: &str = "#include <hip/hip_runtime.h>\n\
        extern \"C\" __global__ void rocm_kernels_probe(float* x) {\n\
            float v = x[threadIdx.x];\n\
            __syncthreads();\n\
            if (__activemask() != 0u) x[threadIdx.x] = __shfl_xor(v, 1);\n\
        }\n";
    nvrtc::compile("probe.hip", PROBE.as_bytes(), arch, &["rocm_kernels_probe"])?;
    nvrtc::library_name()
}

/// Compiles `source` (the text of file `name`, with the HIP-on-CUDA headers on the include
/// path) with NVRTC for `arch` (`sm_90`) and extra NVRTC `options` (`-DTILE=16`), naming the
/// symbols of `kernels`. No GPU or driver is needed. A compile error is
/// [`RuntimeError::Api`] with the compiler's log; a missing NVRTC is
/// [`RuntimeError::LibraryLoad`] saying what to install.
///
/// [`RtcImage`]: super::RtcImage
pub fn compile_at_run_time(
    name: &str,
    source: &[u8],
    arch: &str,
    kernels: &[&str],
    options: &[String],
) -> crate::runtime::Result<super::RtcImage> {
    let out = nvrtc::compile_with(name, source, arch, kernels, options, true)?;
    let symbols = out
        .symbols
        .into_iter()
        .map(|(k, s)| (k.to_string(), s))
        .collect();
    Ok(match out.cubin {
        Some(bytes) => super::RtcImage {
            format: ObjectFormat::Cubin,
            target: arch.to_string(),
            bytes,
            symbols,
            log: out.log,
        },
        None => super::RtcImage {
            format: ObjectFormat::Ptx,
            target: arch.replacen("sm_", "compute_", 1),
            bytes: out.ptx,
            symbols,
            log: out.log,
        },
    })
}

/// The version of the NVRTC [`compile_at_run_time`] uses (`13.0`), and the library's path.
pub fn nvrtc_version() -> crate::runtime::Result<(String, String)> {
    Ok((nvrtc::version()?, nvrtc::library_name()?))
}

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use cudarc::driver::result::{self as cu, DriverError};
use cudarc::driver::sys;

use super::{DeviceBackend, ProbeResult};
use crate::library::{Backend, ObjectFormat};
use crate::runtime::{Result, RuntimeError};

/// List NVIDIA devices, or say why there are none.
pub(crate) fn probe() -> ProbeResult {
    // Safety: only attempts to dlopen the driver library.
    if !unsafe { sys::is_culib_present() } {
        return Err(
            "the NVIDIA driver library (libcuda.so.1) is not installed or not on the \
                    loader path; install the NVIDIA driver to run kernels on NVIDIA GPUs"
                .to_string(),
        );
    }
    guarded("cuInit", || {
        cu::init().map_err(|e| api("cuInit", e))?;
        let count = cu::device::get_count().map_err(|e| api("cuDeviceGetCount", e))?;
        (0..count)
            .map(|ordinal| NvDevice::open(ordinal).map(|d| Arc::new(d) as Arc<dyn DeviceBackend>))
            .collect::<Result<Vec<_>>>()
    })
    .map_err(|e| e.to_string())
}

/// Run driver calls, turning a panic inside cudarc (it panics when a symbol is missing from an
/// old driver) into an error instead of tearing down the test binary.
fn guarded<T>(call: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let reason = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        Err(RuntimeError::LibraryLoad {
            library: "libcuda".into(),
            reason: format!("{call}: {reason} (the installed NVIDIA driver may be too old)"),
        })
    })
}

fn error_text(e: &DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{name}: {text}")
}

fn api(call: &str, e: DriverError) -> RuntimeError {
    RuntimeError::Api {
        backend: Backend::Nvidia,
        call: call.to_string(),
        message: error_text(&e),
    }
}

/// Errors after which the context can no longer be used (CUDA calls them "sticky").
fn is_sticky(e: &DriverError) -> bool {
    use sys::cudaError_enum as E;
    matches!(
        e.0,
        E::CUDA_ERROR_ILLEGAL_ADDRESS
            | E::CUDA_ERROR_ASSERT
            | E::CUDA_ERROR_HARDWARE_STACK_ERROR
            | E::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | E::CUDA_ERROR_MISALIGNED_ADDRESS
            | E::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | E::CUDA_ERROR_INVALID_PC
            | E::CUDA_ERROR_LAUNCH_FAILED
            | E::CUDA_ERROR_LAUNCH_TIMEOUT
    )
}
