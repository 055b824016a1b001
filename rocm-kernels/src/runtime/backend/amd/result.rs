//! The result layer: one method per HIP call, each returning `Result` with HIP's own error text.
//!
//! Methods stay as close to the C calls as possible (raw handles in, raw handles out); ownership
//! and device selection are the business of the types in `device.rs` and `module.rs`.

use std::ffi::{c_char, c_int, c_void, CStr};

use super::library::HipLibrary;
use super::sys::*;
use crate::library::Backend;
use crate::runtime::{Result, RuntimeError};

/// Text of a NUL-terminated C string owned by HIP, if any.
fn c_text(ptr: *const c_char) -> Option<String> {
    // Safety: HIP returns pointers to static strings (or null).
    (!ptr.is_null()).then(|| {
        unsafe { CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned()
    })
}

impl HipLibrary {
    /// How HIP describes `code`: its description and, when different, its name
    /// (`invalid device ordinal (hipErrorInvalidDevice)`); the bare number if the library cannot
    /// say.
    pub fn error_text(&self, code: hipError_t) -> String {
        // Safety: both functions take any value and return a static string.
        let description = self
            .hipGetErrorString()
            .ok()
            .and_then(|f| c_text(unsafe { f(code) }));
        let name = self
            .hipGetErrorName()
            .ok()
            .and_then(|f| c_text(unsafe { f(code) }));
        match (description, name) {
            (Some(d), Some(n)) if d != n => format!("{d} ({n})"),
            (Some(text), _) | (None, Some(text)) => format!("{text} (error {code})"),
            (None, None) => format!("hipError_t {code}"),
        }
    }

    /// `Ok` for `hipSuccess`, else [`RuntimeError::Api`] naming `call`.
    pub(crate) fn check(&self, call: &str, code: hipError_t) -> Result<()> {
        if code == HIP_SUCCESS {
            Ok(())
        } else {
            Err(RuntimeError::Api {
                backend: Backend::Amd,
                call: call.to_string(),
                message: self.error_text(code),
            })
        }
    }

    /// `hipInit`: initialises the HIP runtime; call it once before any other call.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Api`] with HIP's error when it fails (no driver, no device), or
    /// [`RuntimeError::LibraryLoad`] when the library lacks the symbol.
    pub fn init(&self) -> Result<()> {
        let f = self.hipInit()?;
        // Safety: no arguments besides the (reserved, zero) flags.
        self.check("hipInit", unsafe { f(0) })
    }

    /// `hipGetDeviceCount`: how many AMD GPUs HIP sees.
    ///
    /// # Errors
    ///
    /// As [`HipLibrary::init`].
    pub fn device_count(&self) -> Result<usize> {
        let f = self.hipGetDeviceCount()?;
        let mut count: c_int = 0;
        // Safety: writes one int.
        self.check("hipGetDeviceCount", unsafe { f(&mut count) })?;
        Ok(usize::try_from(count).unwrap_or(0))
    }

    /// `HIP_VERSION` of the runtime: major * 10^7 + minor * 10^5 + patch.
    pub fn runtime_version(&self) -> Result<i32> {
        let f = self.hipRuntimeGetVersion()?;
        let mut version: c_int = 0;
        // Safety: writes one int.
        self.check("hipRuntimeGetVersion", unsafe { f(&mut version) })?;
        Ok(version)
    }

    pub(crate) fn set_device(&self, ordinal: i32) -> Result<()> {
        let f = self.hipSetDevice()?;
        // Safety: plain value argument.
        self.check("hipSetDevice", unsafe { f(ordinal) })
    }

    pub(crate) fn device_name(&self, ordinal: i32) -> Result<String> {
        let f = self.hipDeviceGetName()?;
        let mut buffer = [0 as c_char; 256];
        // Safety: HIP writes at most `len` bytes including the NUL; one more zero byte stays.
        self.check("hipDeviceGetName", unsafe {
            f(buffer.as_mut_ptr(), buffer.len() as c_int - 1, ordinal)
        })?;
        // Safety: the last byte is never written, so the buffer is NUL-terminated.
        Ok(c_text(buffer.as_ptr()).unwrap_or_default())
    }

    pub(crate) fn device_attribute(
        &self,
        attribute: hipDeviceAttribute_t,
        ordinal: i32,
    ) -> Result<i32> {
        let f = self.hipDeviceGetAttribute()?;
        let mut value: c_int = 0;
        // Safety: writes one int.
        self.check(&format!("hipDeviceGetAttribute({attribute})"), unsafe {
            f(&mut value, attribute, ordinal)
        })?;
        Ok(value)
    }

    pub(crate) fn total_memory(&self, ordinal: i32) -> Result<u64> {
        let f = self.hipDeviceTotalMem()?;
        let mut bytes: usize = 0;
        // Safety: writes one size_t.
        self.check("hipDeviceTotalMem", unsafe { f(&mut bytes, ordinal) })?;
        Ok(bytes as u64)
    }

    /// The raw bytes `hipGetDeviceProperties` writes (see [`props_r0000`] for why this is safe
    /// whatever the struct's real size): a zeroed buffer many times the struct's size.
    pub(crate) fn device_properties_raw(&self, ordinal: i32) -> Result<Vec<u8>> {
        let f = self.hipGetDeviceProperties()?;
        // u64 backing so the struct's 8-byte fields are aligned.
        let mut buffer = vec![0u64; props_r0000::BUFFER_SIZE / 8];
        // Safety: the buffer is far larger than any hipDeviceProp_t layout HIP has had.
        self.check("hipGetDeviceProperties", unsafe {
            f(buffer.as_mut_ptr().cast(), ordinal)
        })?;
        Ok(buffer.iter().flat_map(|word| word.to_ne_bytes()).collect())
    }

    pub(crate) fn device_synchronize(&self) -> Result<()> {
        let f = self.hipDeviceSynchronize()?;
        // Safety: no arguments.
        self.check("hipDeviceSynchronize", unsafe { f() })
    }

    pub(crate) fn malloc(&self, bytes: usize) -> Result<u64> {
        let f = self.hipMalloc()?;
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // Safety: writes one pointer.
        self.check(&format!("hipMalloc({bytes} bytes)"), unsafe {
            f(&mut ptr, bytes)
        })?;
        Ok(ptr as u64)
    }

    /// # Safety
    /// `ptr` came from `malloc` and is not used afterwards.
    pub(crate) unsafe fn free(&self, ptr: u64) -> Result<()> {
        let f = self.hipFree()?;
        self.check("hipFree", f(ptr as *mut c_void))
    }

    /// `bytes` of page-locked host memory (`hipHostMalloc`, default flags: portable to every
    /// device, coherent).
    pub(crate) fn host_malloc(&self, bytes: usize) -> Result<*mut u8> {
        let f = self.hipHostMalloc()?;
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // Safety: writes one pointer.
        self.check(&format!("hipHostMalloc({bytes} bytes)"), unsafe {
            f(&mut ptr, bytes, 0)
        })?;
        Ok(ptr.cast())
    }

    /// # Safety
    /// `ptr` came from `host_malloc` and is not used afterwards.
    pub(crate) unsafe fn host_free(&self, ptr: *mut u8) -> Result<()> {
        let f = self.hipHostFree()?;
        self.check("hipHostFree", f(ptr.cast()))
    }

    /// # Safety
    /// `src` is readable for `bytes` until the stream has run the copy; `dst` is device memory.
    pub(crate) unsafe fn memcpy_htod_async(
        &self,
        dst: u64,
        src: *const u8,
        bytes: usize,
        stream: hipStream_t,
    ) -> Result<()> {
        let f = self.hipMemcpyHtoDAsync()?;
        self.check(
            "hipMemcpyHtoDAsync",
            f(dst as hipDeviceptr_t, src as *mut c_void, bytes, stream),
        )
    }

    /// # Safety
    /// `dst` is writable for `bytes` until the stream has run the copy; `src` is device memory.
    pub(crate) unsafe fn memcpy_dtoh_async(
        &self,
        dst: *mut u8,
        src: u64,
        bytes: usize,
        stream: hipStream_t,
    ) -> Result<()> {
        let f = self.hipMemcpyDtoHAsync()?;
        self.check(
            "hipMemcpyDtoHAsync",
            f(dst.cast(), src as hipDeviceptr_t, bytes, stream),
        )
    }

    /// # Safety
    /// Both ranges are device memory.
    pub(crate) unsafe fn memcpy_dtod_async(
        &self,
        dst: u64,
        src: u64,
        bytes: usize,
        stream: hipStream_t,
    ) -> Result<()> {
        let f = self.hipMemcpyDtoDAsync()?;
        self.check(
            "hipMemcpyDtoDAsync",
            f(dst as hipDeviceptr_t, src as hipDeviceptr_t, bytes, stream),
        )
    }

    /// # Safety
    /// `dst..dst+count` is device memory.
    pub(crate) unsafe fn memset_d8_async(
        &self,
        dst: u64,
        value: u8,
        count: usize,
        stream: hipStream_t,
    ) -> Result<()> {
        let f = self.hipMemsetD8Async()?;
        self.check(
            "hipMemsetD8Async",
            f(dst as hipDeviceptr_t, value, count, stream),
        )
    }

    /// # Safety
    /// `dst..dst+2*count` is device memory, 2-byte aligned.
    pub(crate) unsafe fn memset_d16_async(
        &self,
        dst: u64,
        value: u16,
        count: usize,
        stream: hipStream_t,
    ) -> Result<()> {
        let f = self.hipMemsetD16Async()?;
        self.check(
            "hipMemsetD16Async",
            f(dst as hipDeviceptr_t, value, count, stream),
        )
    }

    /// # Safety
    /// `dst..dst+4*count` is device memory, 4-byte aligned.
    pub(crate) unsafe fn memset_d32_async(
        &self,
        dst: u64,
        value: u32,
        count: usize,
        stream: hipStream_t,
    ) -> Result<()> {
        let f = self.hipMemsetD32Async()?;
        self.check(
            "hipMemsetD32Async",
            f(dst as hipDeviceptr_t, value as c_int, count, stream),
        )
    }

    pub(crate) fn stream_create(&self) -> Result<hipStream_t> {
        let f = self.hipStreamCreate()?;
        let mut stream: hipStream_t = std::ptr::null_mut();
        // Safety: writes one handle.
        self.check("hipStreamCreate", unsafe { f(&mut stream) })?;
        Ok(stream)
    }

    pub(crate) fn stream_synchronize(&self, stream: hipStream_t) -> Result<()> {
        let f = self.hipStreamSynchronize()?;
        // Safety: a live stream handle (owned by the caller).
        self.check("hipStreamSynchronize", unsafe { f(stream) })
    }

    /// # Safety
    /// `stream` is live and not used afterwards.
    pub(crate) unsafe fn stream_destroy(&self, stream: hipStream_t) -> Result<()> {
        let f = self.hipStreamDestroy()?;
        self.check("hipStreamDestroy", f(stream))
    }

    pub(crate) fn event_create(&self) -> Result<hipEvent_t> {
        let f = self.hipEventCreate()?;
        let mut event: hipEvent_t = std::ptr::null_mut();
        // Safety: writes one handle.
        self.check("hipEventCreate", unsafe { f(&mut event) })?;
        Ok(event)
    }

    pub(crate) fn event_record(&self, event: hipEvent_t, stream: hipStream_t) -> Result<()> {
        let f = self.hipEventRecord()?;
        // Safety: live handles owned by the callers.
        self.check("hipEventRecord", unsafe { f(event, stream) })
    }

    pub(crate) fn event_synchronize(&self, event: hipEvent_t) -> Result<()> {
        let f = self.hipEventSynchronize()?;
        // Safety: a live handle.
        self.check("hipEventSynchronize", unsafe { f(event) })
    }

    pub(crate) fn event_elapsed_ms(&self, start: hipEvent_t, end: hipEvent_t) -> Result<f32> {
        let f = self.hipEventElapsedTime()?;
        let mut ms: f32 = 0.0;
        // Safety: live handles; writes one float.
        self.check("hipEventElapsedTime", unsafe { f(&mut ms, start, end) })?;
        Ok(ms)
    }

    /// # Safety
    /// `event` is live and not used afterwards.
    pub(crate) unsafe fn event_destroy(&self, event: hipEvent_t) -> Result<()> {
        let f = self.hipEventDestroy()?;
        self.check("hipEventDestroy", f(event))
    }

    /// # Safety
    /// `image` is a complete code object (or bundle) that stays alive as long as the module.
    pub(crate) unsafe fn module_load_data(&self, image: *const u8) -> Result<hipModule_t> {
        let f = self.hipModuleLoadData()?;
        let mut module: hipModule_t = std::ptr::null_mut();
        self.check("hipModuleLoadData", f(&mut module, image.cast()))?;
        Ok(module)
    }

    /// The function called `symbol`, or `None` when the module has no such symbol.
    pub(crate) fn module_get_function(
        &self,
        module: hipModule_t,
        symbol: &CStr,
    ) -> Result<Option<hipFunction_t>> {
        let f = self.hipModuleGetFunction()?;
        let mut function: hipFunction_t = std::ptr::null_mut();
        // Safety: a live module and a NUL-terminated name.
        let code = unsafe { f(&mut function, module, symbol.as_ptr()) };
        if code == HIP_ERROR_NOT_FOUND {
            return Ok(None);
        }
        self.check(
            &format!("hipModuleGetFunction(`{}`)", symbol.to_string_lossy()),
            code,
        )?;
        Ok(Some(function))
    }

    /// The device address and size of the variable called `symbol`, or `None` when the module
    /// has none.
    pub(crate) fn module_get_global(
        &self,
        module: hipModule_t,
        symbol: &CStr,
    ) -> Result<Option<(hipDeviceptr_t, usize)>> {
        let f = self.hipModuleGetGlobal()?;
        let mut ptr: hipDeviceptr_t = std::ptr::null_mut();
        let mut bytes = 0usize;
        // Safety: a live module and a NUL-terminated name.
        let code = unsafe { f(&mut ptr, &mut bytes, module, symbol.as_ptr()) };
        if code == HIP_ERROR_NOT_FOUND {
            return Ok(None);
        }
        self.check(
            &format!("hipModuleGetGlobal(`{}`)", symbol.to_string_lossy()),
            code,
        )?;
        Ok(Some((ptr, bytes)))
    }

    /// # Safety
    /// `module` is live and none of its functions are used afterwards.
    pub(crate) unsafe fn module_unload(&self, module: hipModule_t) -> Result<()> {
        let f = self.hipModuleUnload()?;
        self.check("hipModuleUnload", f(module))
    }

    /// # Safety
    /// `args[i]` points to the value of the kernel's parameter `i`; device memory the kernel
    /// touches stays alive until it completes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn module_launch_kernel(
        &self,
        name: &str,
        function: hipFunction_t,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem_bytes: u32,
        stream: hipStream_t,
        args: &[*mut c_void],
    ) -> Result<()> {
        let f = self.hipModuleLaunchKernel()?;
        // HIP reads the argument values during the call (they are copied into the kernarg
        // segment), so a borrowed array is enough.
        let mut params: Vec<*mut c_void> = args.to_vec();
        let params_ptr = if params.is_empty() {
            std::ptr::null_mut()
        } else {
            params.as_mut_ptr()
        };
        self.check(
            &format!("hipModuleLaunchKernel(`{name}`)"),
            f(
                function,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared_mem_bytes,
                stream,
                params_ptr,
                std::ptr::null_mut(),
            ),
        )
    }
}
