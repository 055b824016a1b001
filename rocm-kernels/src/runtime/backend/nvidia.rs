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

mod image;
mod nvrtc;

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

use std::any::Any;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::result::{self as cu, DriverError};
use cudarc::driver::sys;

use super::{
    DeviceBackend, DevicePtr, DriverResources, EventBackend, FunctionBackend, ModuleBackend,
    ParamLayout, ProbeResult, StreamBackend,
};
use crate::library::{Backend, CodeObject, KernelLibrary, ObjectFormat};
use crate::runtime::{DeviceInfo, LaunchConfig, Result, RuntimeError};

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

/// The context of one device and its generation (bumped when a fault forced a reset).
#[derive(Debug)]
struct Context {
    /// Null until the first [`Core::enter`] retains the primary context.
    ctx: sys::CUcontext,
    generation: u64,
    /// Set when a sticky error was seen: the next call resets the context first.
    broken: Option<String>,
    /// The kernel launched last, to name it when a later call reports its fault.
    last_launch: Option<Arc<str>>,
    /// Set when a reset after a fault failed: the device cannot be used in this process.
    lost: Option<String>,
    /// Live allocations → the generation they belong to.
    allocations: HashMap<u64, u64>,
    /// Host memory pinned with `cuMemHostRegister` → the generation it was pinned in.
    pinned: HashMap<u64, u64>,
}

// Safety: CUcontext is a driver handle usable from any thread once made current.
unsafe impl Send for Context {}

/// A device as the runtime sees it; modules share its [`Core`] so they can reload after a reset.
#[derive(Debug)]
pub(crate) struct NvDevice {
    core: Arc<Core>,
}

#[derive(Debug)]
struct Core {
    device: sys::CUdevice,
    info: DeviceInfo,
    compute_capability: (u32, u32),
    /// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR`, for occupancy in warps.
    max_threads_per_sm: u32,
    state: Mutex<Context>,
}

impl NvDevice {
    fn open(ordinal: i32) -> Result<Self> {
        Ok(NvDevice {
            core: Arc::new(Core::open(ordinal)?),
        })
    }
}

impl Core {
    fn open(ordinal: i32) -> Result<Self> {
        let device = cu::device::get(ordinal).map_err(|e| api("cuDeviceGet", e))?;
        let name = cu::device::get_name(device).map_err(|e| api("cuDeviceGetName", e))?;
        let attribute = |attr, call| {
            // Safety: a valid device handle and a plain integer attribute.
            unsafe { cu::device::get_attribute(device, attr) }.map_err(|e| api(call, e))
        };
        use sys::CUdevice_attribute_enum as A;
        let major = attribute(
            A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            "cuDeviceGetAttribute(major)",
        )? as u32;
        let minor = attribute(
            A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            "cuDeviceGetAttribute(minor)",
        )? as u32;
        let sms = attribute(
            A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            "cuDeviceGetAttribute(SMs)",
        )? as u32;
        let warp = attribute(
            A::CU_DEVICE_ATTRIBUTE_WARP_SIZE,
            "cuDeviceGetAttribute(warp)",
        )?;
        let max_threads_per_sm = attribute(
            A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            "cuDeviceGetAttribute(threads per SM)",
        )? as u32;
        // Safety: a valid device handle.
        let total =
            unsafe { cu::device::total_mem(device) }.map_err(|e| api("cuDeviceTotalMem", e))?;
        // The primary context is retained on first use ([`Core::enter`]), not here: a process
        // that runs one trial on one GPU of several (the harness runs each trial in a process of
        // its own) then creates no context, and takes no memory, on the others.
        let ctx = std::ptr::null_mut();
        Ok(Core {
            device,
            info: DeviceInfo {
                backend: Backend::Nvidia,
                name,
                arch: format!("sm_{major}{minor}"),
                wave_size: warp as u32,
                total_memory: total as u64,
                compute_units: sms,
            },
            compute_capability: (major, minor),
            max_threads_per_sm,
            state: Mutex::new(Context {
                ctx,
                generation: 0,
                broken: None,
                last_launch: None,
                lost: None,
                allocations: HashMap::new(),
                pinned: HashMap::new(),
            }),
        })
    }

    /// Make this device's context current on the calling thread (resetting it first if a fault
    /// broke it) and hold the state lock for the duration of the call.
    fn enter(&self) -> Result<MutexGuard<'_, Context>> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(fault) = state.broken.take() {
            // Safety: resetting the primary context of a valid device destroys every resource
            // of the old generation, which is why allocations are tracked per generation.
            let reset = unsafe {
                sys::cuDevicePrimaryCtxReset_v2(self.device)
                    .result()
                    .and_then(|_| cu::primary_ctx::retain(self.device))
                    .and_then(|ctx| cu::primary_ctx::release(self.device).map(|_| ctx))
            };
            state.generation += 1;
            state.allocations.clear();
            // The reset unpinned host memory; the memory itself is ours and stays valid.
            state.pinned.clear();
            match reset {
                Ok(ctx) => state.ctx = ctx,
                Err(e) => {
                    state.lost = Some(format!(
                    "not run: an earlier kernel left this GPU's CUDA context unusable ({fault}), \
                         and CUDA could not reset it ({}); CUDA cannot recover from this within a \
                         process, so later work on this device is not run. Fix that kernel and \
                         run again",
                    error_text(&e)
                ))
                }
            }
        }
        if let Some(lost) = &state.lost {
            return Err(RuntimeError::NoDevice {
                backend: Backend::Nvidia,
                reason: lost.clone(),
            });
        }
        if state.ctx.is_null() {
            // Safety: retaining the primary context of a valid device (kept for the process).
            state.ctx = unsafe { cu::primary_ctx::retain(self.device) }
                .map_err(|e| api("cuDevicePrimaryCtxRetain", e))?;
        }
        // Safety: a context retained above and not yet released.
        unsafe { cu::ctx::set_current(state.ctx) }.map_err(|e| api("cuCtxSetCurrent", e))?;
        Ok(state)
    }

    /// Turn a driver error into a runtime error, remembering sticky ones so the next call resets.
    fn fail(&self, state: &mut Context, call: &str, e: DriverError) -> RuntimeError {
        if is_sticky(&e) {
            let kernel = state.last_launch.as_deref().unwrap_or("?");
            let message = format!(
                "{} (raised by kernel `{kernel}`, the last one launched; the device's context is \
                 reset before its next use, and memory allocated before this error is gone)",
                error_text(&e)
            );
            state.broken = Some(message.clone());
            return RuntimeError::Api {
                backend: Backend::Nvidia,
                call: call.to_string(),
                message,
            };
        }
        api(call, e)
    }

    /// Streams and events die with the context they were made in.
    fn check_generation(&self, state: &Context, generation: u64, what: &str) -> Result<()> {
        if generation == state.generation {
            return Ok(());
        }
        Err(RuntimeError::Api {
            backend: Backend::Nvidia,
            call: what.to_string(),
            message: format!(
                "this {what} was created before a kernel fault reset the device; create a new one"
            ),
        })
    }

    /// After a reset, memory of the old generation is gone: refuse to touch it.
    fn check_live(&self, state: &Context, ptr: DevicePtr) -> Result<()> {
        if state.generation > 0 && !state.allocations.contains_key(&ptr) {
            return Err(RuntimeError::Api {
                backend: Backend::Nvidia,
                call: "memory access".into(),
                message: format!(
                    "{ptr:#x} was allocated before a kernel fault reset the device; allocate it again"
                ),
            });
        }
        Ok(())
    }
}

impl DeviceBackend for NvDevice {
    fn info(&self) -> &DeviceInfo {
        &self.core.info
    }

    fn alloc(&self, bytes: usize) -> Result<DevicePtr> {
        let mut state = self.core.enter()?;
        // Safety: the context is current.
        match unsafe { cu::malloc_sync(bytes) } {
            Ok(ptr) => {
                let generation = state.generation;
                state.allocations.insert(ptr, generation);
                Ok(ptr)
            }
            Err(e) => Err(self.core.fail(&mut state, "cuMemAlloc", e)),
        }
    }

    unsafe fn free(&self, ptr: DevicePtr, _bytes: usize) {
        let Ok(mut state) = self.core.enter() else {
            return;
        };
        // Memory of an older generation died with its context.
        if state.allocations.remove(&ptr) == Some(state.generation) {
            let _ = cu::free_sync(ptr);
        }
    }

    /// Page-aligned host memory of our own, pinned with `cuMemHostRegister` (portable), rather
    /// than `cuMemHostAlloc`: a reset of the primary context after a kernel fault frees what
    /// `cuMemHostAlloc` returned under a live `HostBuffer`, while registered memory only goes
    /// back to pageable. Copies from either are the same page-locked DMA.
    fn alloc_host(&self, bytes: usize) -> Result<*mut u8> {
        let ptr = super::page_aligned_alloc(bytes, Backend::Nvidia)?;
        let registered = self.core.enter().and_then(|mut state| {
            // Safety: `ptr` is a live allocation of `bytes` bytes; the context is current.
            let result = unsafe {
                sys::cuMemHostRegister_v2(ptr.cast(), bytes, sys::CU_MEMHOSTREGISTER_PORTABLE)
                    .result()
            };
            match result {
                Ok(()) => {
                    let generation = state.generation;
                    state.pinned.insert(ptr as u64, generation);
                    Ok(())
                }
                Err(e) => {
                    Err(self
                        .core
                        .fail(&mut state, &format!("cuMemHostRegister({bytes} bytes)"), e))
                }
            }
        });
        match registered {
            Ok(()) => Ok(ptr),
            Err(e) => {
                // Safety: allocated just above, never handed out.
                unsafe { super::page_aligned_free(ptr, bytes) };
                Err(e)
            }
        }
    }

    unsafe fn free_host(&self, ptr: *mut u8, bytes: usize) {
        if let Ok(mut state) = self.core.enter() {
            // Pinned in an older generation: the reset already unpinned it.
            if state.pinned.remove(&(ptr as u64)) == Some(state.generation) {
                let _ = sys::cuMemHostUnregister(ptr.cast()).result();
            }
        }
        super::page_aligned_free(ptr, bytes);
    }

    fn new_stream(&self) -> Result<Box<dyn StreamBackend>> {
        let mut state = self.core.enter()?;
        match cu::stream::create(cu::stream::StreamKind::Default) {
            Ok(stream) => Ok(Box::new(NvStream {
                core: self.core.clone(),
                stream,
                generation: state.generation,
            })),
            Err(e) => Err(self.core.fail(&mut state, "cuStreamCreate", e)),
        }
    }

    fn new_event(&self) -> Result<Box<dyn EventBackend>> {
        let mut state = self.core.enter()?;
        match cu::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT) {
            Ok(event) => Ok(Box::new(NvEvent {
                core: self.core.clone(),
                event,
                generation: state.generation,
            })),
            Err(e) => Err(self.core.fail(&mut state, "cuEventCreate", e)),
        }
    }

    unsafe fn copy_to_device(
        &self,
        dst: DevicePtr,
        src: *const u8,
        bytes: usize,
        _stream: &dyn StreamBackend,
    ) -> Result<()> {
        let mut state = self.core.enter()?;
        self.core.check_live(&state, dst)?;
        let src = std::slice::from_raw_parts(src, bytes);
        cu::memcpy_htod_sync(dst, src).map_err(|e| self.core.fail(&mut state, "cuMemcpyHtoD", e))
    }

    unsafe fn copy_to_host(
        &self,
        dst: *mut u8,
        src: DevicePtr,
        bytes: usize,
        _stream: &dyn StreamBackend,
    ) -> Result<()> {
        let mut state = self.core.enter()?;
        self.core.check_live(&state, src)?;
        let dst = std::slice::from_raw_parts_mut(dst, bytes);
        cu::memcpy_dtoh_sync(dst, src).map_err(|e| self.core.fail(&mut state, "cuMemcpyDtoH", e))
    }

    unsafe fn copy_on_device(
        &self,
        dst: DevicePtr,
        src: DevicePtr,
        bytes: usize,
        _stream: &dyn StreamBackend,
    ) -> Result<()> {
        let mut state = self.core.enter()?;
        cu::memcpy_dtod_sync(dst, src, bytes)
            .map_err(|e| self.core.fail(&mut state, "cuMemcpyDtoD", e))
    }

    unsafe fn fill(
        &self,
        dst: DevicePtr,
        pattern: &[u8],
        count: usize,
        _stream: &dyn StreamBackend,
    ) -> Result<()> {
        let mut state = self.core.enter()?;
        let result = match pattern.len() {
            1 => sys::cuMemsetD8_v2(dst, pattern[0], count).result(),
            2 => sys::cuMemsetD16_v2(dst, u16::from_ne_bytes([pattern[0], pattern[1]]), count)
                .result(),
            4 => sys::cuMemsetD32_v2(
                dst,
                u32::from_ne_bytes([pattern[0], pattern[1], pattern[2], pattern[3]]),
                count,
            )
            .result(),
            _ => {
                // Wider patterns (f64, structs): stage once on the host.
                let staged: Vec<u8> = pattern.repeat(count);
                cu::memcpy_htod_sync(dst, &staged)
            }
        };
        result.map_err(|e| self.core.fail(&mut state, "cuMemset", e))
    }

    fn load_module(&self, library: &'static KernelLibrary) -> Result<Arc<dyn ModuleBackend>> {
        let module = NvModule {
            inner: Arc::new(ModuleInner::new(self.core.clone(), library)?),
        };
        module.inner.ensure_loaded()?;
        Ok(Arc::new(module))
    }

    fn synchronize(&self) -> Result<()> {
        let mut state = self.core.enter()?;
        cu::ctx::synchronize().map_err(|e| self.core.fail(&mut state, "cuCtxSynchronize", e))
    }
}

#[derive(Debug)]
struct NvStream {
    core: Arc<Core>,
    stream: sys::CUstream,
    generation: u64,
}
// Safety: stream handles may be used from any thread with the context current.
unsafe impl Send for NvStream {}
unsafe impl Sync for NvStream {}

impl StreamBackend for NvStream {
    fn synchronize(&self) -> Result<()> {
        let mut state = self.core.enter()?;
        self.core
            .check_generation(&state, self.generation, "stream")?;
        // Safety: a stream of the live context.
        unsafe { cu::stream::synchronize(self.stream) }
            .map_err(|e| self.core.fail(&mut state, "cuStreamSynchronize", e))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for NvStream {
    fn drop(&mut self) {
        if let Ok(state) = self.core.enter() {
            if state.generation == self.generation {
                // Safety: destroying our own stream of the live context.
                unsafe {
                    let _ = cu::stream::destroy(self.stream);
                }
            }
        }
    }
}

#[derive(Debug)]
struct NvEvent {
    core: Arc<Core>,
    event: sys::CUevent,
    generation: u64,
}
// Safety: event handles may be used from any thread with the context current.
unsafe impl Send for NvEvent {}
unsafe impl Sync for NvEvent {}

impl EventBackend for NvEvent {
    fn record(&self, stream: &dyn StreamBackend) -> Result<()> {
        let stream = stream
            .as_any()
            .downcast_ref::<NvStream>()
            .ok_or_else(|| RuntimeError::WrongDevice("stream of another backend".into()))?;
        let mut state = self.core.enter()?;
        self.core
            .check_generation(&state, self.generation, "event")?;
        self.core
            .check_generation(&state, stream.generation, "stream")?;
        // Safety: both handles were created by this backend in the live context.
        unsafe { cu::event::record(self.event, stream.stream) }
            .map_err(|e| self.core.fail(&mut state, "cuEventRecord", e))
    }
    fn synchronize(&self) -> Result<()> {
        let mut state = self.core.enter()?;
        self.core
            .check_generation(&state, self.generation, "event")?;
        // Safety: our own event of the live context.
        unsafe { cu::event::synchronize(self.event) }
            .map_err(|e| self.core.fail(&mut state, "cuEventSynchronize", e))
    }
    fn elapsed_ms(&self, end: &dyn EventBackend) -> Result<f32> {
        let end = end
            .as_any()
            .downcast_ref::<NvEvent>()
            .ok_or_else(|| RuntimeError::WrongDevice("event of another backend".into()))?;
        // Safety: both events were created and recorded by this backend.
        unsafe { cu::event::elapsed(self.event, end.event) }
            .map_err(|e| api("cuEventElapsedTime", e))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for NvEvent {
    fn drop(&mut self) {
        if let Ok(state) = self.core.enter() {
            if state.generation == self.generation {
                // Safety: destroying our own event of the live context.
                unsafe {
                    let _ = cu::event::destroy(self.event);
                }
            }
        }
    }
}

/// One loaded image (a source file's cubin, PTX or NVRTC output) and its kernels.
#[derive(Debug)]
struct Loaded {
    module: sys::CUmodule,
    /// user-facing name → (symbol, function handle)
    functions: HashMap<String, (String, sys::CUfunction)>,
}

/// A loaded module; functions share its inner state, so reloading happens once for all.
#[derive(Debug)]
struct NvModule {
    inner: Arc<ModuleInner>,
}

#[derive(Debug)]
struct ModuleInner {
    device: Arc<Core>,
    library: &'static KernelLibrary,
    /// The images chosen for this device, one per source file.
    images: Vec<Image>,
    loaded: Mutex<Option<(u64, Vec<Loaded>)>>,
}
// Safety: module and function handles are context-bound driver handles usable from any thread.
unsafe impl Send for ModuleInner {}
unsafe impl Sync for ModuleInner {}

/// The code object of one source chosen for the device.
#[derive(Debug, Clone)]
struct Image {
    /// Its index in the library's code objects (the kernels' symbols name it).
    index: usize,
    object: &'static CodeObject,
}

impl ModuleInner {
    fn new(device: Arc<Core>, library: &'static KernelLibrary) -> Result<Self> {
        let ours: Vec<(usize, &'static CodeObject)> = library.objects_of(Backend::Nvidia).collect();
        if ours.is_empty() {
            return Err(RuntimeError::LibraryMissing {
                library: library.name.to_string(),
                backend: Backend::Nvidia,
                hint: "build it with the nvidia backend enabled (nvcc on PATH or CUDA_PATH, or \
                       `pip install nvidia-cuda-nvcc`; targets from ROCM_NVIDIA_ARCH or \
                       [package.metadata.rocm] nvidia-targets)"
                    .to_string(),
            });
        }
        let cc = device.compute_capability;
        let mut sources: Vec<&str> = ours.iter().map(|(_, o)| o.source).collect();
        sources.dedup();
        let mut images = Vec::new();
        for source in sources {
            let best = ours
                .iter()
                .filter(|(_, o)| o.source == source)
                .filter_map(|&(index, o)| image::fitness(o, cc).map(|f| (f, index, o)))
                .max_by_key(|(f, _, _)| *f);
            match best {
                Some((_, index, object)) => images.push(Image { index, object }),
                None => {
                    let available: Vec<String> = ours
                        .iter()
                        .filter(|(_, o)| o.source == source)
                        .map(|(_, o)| format!("{} {}", o.format, o.target))
                        .collect();
                    return Err(RuntimeError::NoMatchingCodeObject {
                        library: library.name.to_string(),
                        arch: device.info.arch.clone(),
                        available: available.join(", "),
                    });
                }
            }
        }
        Ok(ModuleInner {
            device,
            library,
            images,
            loaded: Mutex::new(None),
        })
    }

    /// Load (or, after a context reset, reload) every image; returns the current generation.
    fn ensure_loaded(&self) -> Result<u64> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let mut state = self.device.enter()?;
        if let Some((generation, _)) = loaded.as_ref() {
            if *generation == state.generation {
                return Ok(*generation);
            }
        }
        let mut modules = Vec::new();
        for image in &self.images {
            modules.push(self.load_image(&mut state, image)?);
        }
        let generation = state.generation;
        *loaded = Some((generation, modules));
        Ok(generation)
    }

    fn load_image(&self, state: &mut Context, image: &Image) -> Result<Loaded> {
        let object = image.object;
        // The kernels of this object and their symbols: from the build's table, or, for CUDA
        // source, from NVRTC, which lowers each kernel's name as it compiles.
        let kernels: Vec<&'static str> = self
            .library
            .kernels
            .iter()
            .filter(|k| k.source == object.source)
            .map(|k| k.name)
            .collect();
        let (bytes, ptx, symbols): (Vec<u8>, bool, Vec<(&'static str, String)>) = match object
            .format
        {
            ObjectFormat::CudaSource => {
                let arch = &self.device.info.arch;
                let (ptx, lowered) = nvrtc::compile(object.source, object.bytes, arch, &kernels)?;
                (ptx.into_bytes(), true, lowered)
            }
            format => {
                let symbols = self
                    .library
                    .kernels
                    .iter()
                    .filter_map(|k| Some((k.name, k.symbol_in(image.index)?.to_owned())))
                    .collect();
                (object.bytes.to_vec(), format == ObjectFormat::Ptx, symbols)
            }
        };
        // PTX must be NUL-terminated text for cuModuleLoadData.
        let data = if ptx {
            CString::new(bytes)
                .map_err(|_| RuntimeError::Api {
                    backend: Backend::Nvidia,
                    call: "cuModuleLoadData".into(),
                    message: "PTX contains a NUL byte".into(),
                })?
                .into_bytes_with_nul()
        } else {
            bytes
        };
        // Safety: the context is current and `data` is a complete cubin or PTX image.
        let module = match unsafe { cu::module::load_data(data.as_ptr().cast()) } {
            Ok(m) => m,
            Err(e) => {
                let mut err = self.device.fail(state, "cuModuleLoadData", e);
                if e.0 == sys::cudaError_enum::CUDA_ERROR_UNSUPPORTED_PTX_VERSION {
                    err = RuntimeError::Api {
                        backend: Backend::Nvidia,
                        call: "cuModuleLoadData".into(),
                        message: format!(
                            "{} for {}: the PTX was made by a CUDA newer than this driver \
                             supports; build with an nvcc that matches the driver (so a \
                             {} cubin is embedded), or upgrade the driver",
                            error_text(&e),
                            object.source,
                            self.device.info.arch
                        ),
                    };
                }
                return Err(err);
            }
        };
        let mut functions = HashMap::new();
        for (name, symbol) in symbols {
            let c = CString::new(symbol.clone()).unwrap_or_default();
            // Safety: a module just loaded in the current context.
            let f = unsafe { cu::module::get_function(module, c) }
                .map_err(|e| self.device.fail(state, "cuModuleGetFunction", e))?;
            functions.insert(name.to_string(), (symbol, f));
        }
        Ok(Loaded { module, functions })
    }
}

impl ModuleBackend for NvModule {
    fn global(
        &self,
        _decl: Option<&'static crate::library::GlobalDecl>,
        symbol: &str,
    ) -> Result<Option<(DevicePtr, usize)>> {
        self.inner.ensure_loaded()?;
        let loaded = self.inner.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let Ok(c) = CString::new(symbol) else {
            return Ok(None);
        };
        let _state = self.inner.device.enter()?;
        for m in loaded.iter().flat_map(|(_, l)| l.iter()) {
            // Safety: a module of the current context, loaded above.
            match unsafe { cu::module::get_global(m.module, c.clone()) } {
                Ok((ptr, bytes)) => return Ok(Some((ptr as DevicePtr, bytes))),
                Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_NOT_FOUND => continue,
                Err(e) => {
                    return Err(RuntimeError::Api {
                        backend: Backend::Nvidia,
                        call: format!("cuModuleGetGlobal(`{symbol}`)"),
                        message: error_text(&e),
                    })
                }
            }
        }
        Ok(None)
    }

    fn kernel_names(&self) -> Vec<String> {
        let loaded = self.inner.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let mut names: Vec<String> = loaded
            .iter()
            .flat_map(|(_, l)| l.iter().flat_map(|m| m.functions.keys().cloned()))
            .collect();
        names.sort();
        names
    }

    fn function(&self, name: &str) -> Result<Option<Arc<dyn FunctionBackend>>> {
        // The table's spelling of the name (`k<16>` for `k<16u>`).
        let Some(kernel) = self.inner.library.kernel(name) else {
            return Ok(None);
        };
        let name = kernel.name;
        self.inner.ensure_loaded()?;
        let loaded = self.inner.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let found = loaded
            .iter()
            .flat_map(|(_, l)| l.iter())
            .any(|m| m.functions.contains_key(name));
        Ok(found.then(|| {
            Arc::new(NvFunction {
                module: self.inner.clone(),
                name: name.into(),
                cached: Mutex::new(None),
            }) as Arc<dyn FunctionBackend>
        }))
    }
}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        let loaded = self
            .loaded
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some((generation, modules)) = loaded {
            if let Ok(state) = self.device.enter() {
                if state.generation == generation {
                    for m in modules {
                        // Safety: a module of the live context, unloaded once.
                        unsafe {
                            let _ = cu::module::unload(m.module);
                        }
                    }
                }
            }
        }
    }
}

#[derive(Debug)]
struct NvFunction {
    module: Arc<ModuleInner>,
    name: Arc<str>,
    /// The driver's handle once looked up, with the context generation it belongs to: a launch
    /// takes it from here instead of searching the loaded modules (a launch's path is what
    /// small back-to-back kernels are bound by).
    cached: Mutex<Option<CachedFunction>>,
}

#[derive(Debug, Clone, Copy)]
struct CachedFunction {
    generation: u64,
    function: sys::CUfunction,
}
// Safety: a function handle is a context-bound driver handle usable from any thread.
unsafe impl Send for CachedFunction {}

impl NvFunction {
    /// The driver's handle of this kernel (loading the module again after a reset).
    fn handle(&self) -> Result<sys::CUfunction> {
        self.module.ensure_loaded()?;
        let loaded = self.module.loaded.lock().unwrap_or_else(|p| p.into_inner());
        // The generation the modules were loaded in, read under the same lock as the handle.
        let (generation, function) = loaded
            .iter()
            .flat_map(|(generation, l)| l.iter().map(move |m| (*generation, m)))
            .find_map(|(generation, m)| m.functions.get(&*self.name).map(|(_, f)| (generation, *f)))
            .ok_or_else(|| self.not_found())?;
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) = Some(CachedFunction {
            generation,
            function,
        });
        Ok(function)
    }

    /// The cached handle, if it belongs to `generation`.
    fn cached(&self, generation: u64) -> Option<sys::CUfunction> {
        let cached = *self.cached.lock().unwrap_or_else(|p| p.into_inner());
        cached
            .filter(|c| c.generation == generation)
            .map(|c| c.function)
    }

    fn not_found(&self) -> RuntimeError {
        RuntimeError::KernelNotFound {
            name: self.name.to_string(),
            library: self.module.library.name.to_string(),
            available: String::new(),
        }
    }
}

impl FunctionBackend for NvFunction {
    fn param_layout(&self) -> Option<Vec<ParamLayout>> {
        None
    }

    fn resources(&self, block_threads: u32, dynamic_shared: u32) -> Option<DriverResources> {
        let device = &self.module.device;
        let mut out = DriverResources {
            max_warps_per_sm: Some(device.max_threads_per_sm / device.info.wave_size.max(1)),
            ..DriverResources::default()
        };
        let read = guarded("cuOccupancyMaxActiveBlocksPerMultiprocessor", || {
            let function = self.handle()?;
            let _state = device.enter()?;
            use sys::CUfunction_attribute_enum as F;
            let attribute = |attr| {
                // Safety: a function of the current context and a plain integer attribute.
                unsafe { cu::function::get_function_attribute(function, attr) }
                    .map(|v| v as u32)
                    .map_err(|e| api("cuFuncGetAttribute", e))
            };
            out.registers = Some(attribute(F::CU_FUNC_ATTRIBUTE_NUM_REGS)?);
            out.static_shared_bytes = Some(attribute(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?);
            out.local_bytes = Some(attribute(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?);
            out.max_threads_per_block =
                Some(attribute(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?);
            let mut blocks: std::ffi::c_int = 0;
            // Safety: a function of the current context; `blocks` is written by the driver.
            unsafe {
                sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                    &mut blocks,
                    function,
                    block_threads as std::ffi::c_int,
                    dynamic_shared as usize,
                )
            }
            .result()
            .map_err(|e| api("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
            out.active_blocks_per_sm = Some(blocks.max(0) as u32);
            Ok(())
        });
        if let Err(e) = read {
            out.error = Some(e.to_string());
        }
        Some(out)
    }

    unsafe fn launch(
        &self,
        config: &LaunchConfig,
        args: &[*mut c_void],
        stream: &dyn StreamBackend,
    ) -> Result<()> {
        let stream = stream
            .as_any()
            .downcast_ref::<NvStream>()
            .ok_or_else(|| RuntimeError::WrongDevice("stream of another backend".into()))?;
        let device = &self.module.device;
        // The state lock is held until the launch is queued: no reset (and so no reload of the
        // module) can come between finding the handle and using it.
        let mut attempts = 0;
        let (mut state, function) = loop {
            let state = device.enter()?;
            if let Some(function) = self.cached(state.generation) {
                break (state, function);
            }
            attempts += 1;
            if attempts > 3 {
                return Err(RuntimeError::Api {
                    backend: Backend::Nvidia,
                    call: "cuModuleGetFunction".to_string(),
                    message: format!(
                        "kernel `{}`: its module was reloaded under every launch attempt",
                        self.name
                    ),
                });
            }
            drop(state);
            // Loads the module where needed (first use, or after a reset) and caches the
            // handle for that generation; a reset in between makes the loop look again.
            self.handle()?;
        };
        device.check_generation(&state, stream.generation, "stream")?;
        if config.shared_bytes > 48 * 1024 {
            // Above 48 KiB a kernel must opt in to more dynamic shared memory.
            let _ = sys::cuFuncSetAttribute(
                function,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                config.shared_bytes as i32,
            );
        }
        state.last_launch = Some(self.name.clone());
        // The driver only reads the parameter array (cudarc's wrapper wants it mutable, and a
        // copy of it per launch).
        sys::cuLaunchKernel(
            function,
            config.grid.x,
            config.grid.y,
            config.grid.z,
            config.block.x,
            config.block.y,
            config.block.z,
            config.shared_bytes,
            stream.stream,
            args.as_ptr() as *mut *mut c_void,
            std::ptr::null_mut(),
        )
        .result()
        .map_err(|e| device.fail(&mut state, "cuLaunchKernel", e))
    }
}
