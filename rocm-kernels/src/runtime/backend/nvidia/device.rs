//! [`NvDevice`]: one CUDA device, its context and generation (reset after a fault), memory and
//! copies.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::result::{self as cu, DriverError};
use cudarc::driver::sys;

use super::super::{DeviceBackend, DevicePtr, EventBackend, ModuleBackend, StreamBackend};
use super::module::{ModuleInner, NvModule};
use super::stream::{NvEvent, NvStream};
use super::{api, error_text, is_sticky};
use crate::library::{Backend, KernelLibrary};
use crate::runtime::{DeviceInfo, Result, RuntimeError};

/// The context of one device and its generation (bumped when a fault forced a reset).
#[derive(Debug)]
pub(super) struct Context {
    /// Null until the first [`Core::enter`] retains the primary context.
    pub(super) ctx: sys::CUcontext,
    pub(super) generation: u64,
    /// Set when a sticky error was seen: the next call resets the context first.
    pub(super) broken: Option<String>,
    /// The kernel launched last, to name it when a later call reports its fault.
    pub(super) last_launch: Option<Arc<str>>,
    /// Set when a reset after a fault failed: the device cannot be used in this process.
    pub(super) lost: Option<String>,
    /// Live allocations → the generation they belong to.
    pub(super) allocations: HashMap<u64, u64>,
    /// Host memory pinned with `cuMemHostRegister` → the generation it was pinned in.
    pub(super) pinned: HashMap<u64, u64>,
}

// Safety: CUcontext is a driver handle usable from any thread once made current.
unsafe impl Send for Context {}

/// A device as the runtime sees it; modules share its [`Core`] so they can reload after a reset.
#[derive(Debug)]
pub(crate) struct NvDevice {
    core: Arc<Core>,
}

#[derive(Debug)]
pub(super) struct Core {
    pub(super) device: sys::CUdevice,
    pub(super) info: DeviceInfo,
    pub(super) compute_capability: (u32, u32),
    /// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR`, for occupancy in warps.
    pub(super) max_threads_per_sm: u32,
    pub(super) state: Mutex<Context>,
}

impl NvDevice {
    pub(super) fn open(ordinal: i32) -> Result<Self> {
        Ok(NvDevice {
            core: Arc::new(Core::open(ordinal)?),
        })
    }
}

impl Core {
    pub(super) fn open(ordinal: i32) -> Result<Self> {
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
    pub(super) fn enter(&self) -> Result<MutexGuard<'_, Context>> {
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
    pub(super) fn fail(&self, state: &mut Context, call: &str, e: DriverError) -> RuntimeError {
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
    pub(super) fn check_generation(
        &self,
        state: &Context,
        generation: u64,
        what: &str,
    ) -> Result<()> {
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
    pub(super) fn check_live(&self, state: &Context, ptr: DevicePtr) -> Result<()> {
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
        let ptr = super::super::page_aligned_alloc(bytes, Backend::Nvidia)?;
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
                unsafe { super::super::page_aligned_free(ptr, bytes) };
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
        super::super::page_aligned_free(ptr, bytes);
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
