//! [`CpuDevice`]: the worker pool, device memory (guard pages, canaries, the checked mode's
//! bounds) and copies.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use super::super::{DeviceBackend, DevicePtr, EventBackend, ModuleBackend, StreamBackend};
use super::module::CpuModule;
use super::stream::{CpuEvent, CpuStream};
use super::{ffi, slack, CANARY, GUARD_BYTES};
use crate::library::{Backend, KernelLibrary};
use crate::runtime::{CpuOptions, DeviceInfo, Result, RuntimeError};

#[derive(Debug)]
pub(super) struct Pool(pub(super) *mut ffi::RkPool);
// Safety: the runtime's pool is internally synchronised (a launch lock, worker queues).
unsafe impl Send for Pool {}
unsafe impl Sync for Pool {}

impl Drop for Pool {
    fn drop(&mut self) {
        // Safety: created by rk_pool_create, destroyed once.
        unsafe { ffi::rk_pool_destroy(self.0) }
    }
}

/// State shared by a cpu device and everything loaded on it.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) options: CpuOptions,
    pub(super) threads: usize,
    pub(super) pool: OnceLock<std::result::Result<Pool, String>>,
    /// Live allocations, start → bytes, to explain memory faults.
    pub(super) allocations: Mutex<BTreeMap<u64, u64>>,
}

impl Shared {
    /// The device's worker pool, started on first use.
    pub(super) fn pool(&self) -> Result<*mut ffi::RkPool> {
        let pool = self.pool.get_or_init(|| self.new_pool(self.threads));
        match pool {
            Ok(pool) => Ok(pool.0),
            Err(reason) => Err(Self::pool_error(reason)),
        }
    }

    pub(super) fn new_pool(&self, threads: usize) -> std::result::Result<Pool, String> {
        let mut error = [0u8; 256];
        // Safety: the error buffer outlives the call.
        let pool = unsafe {
            ffi::rk_pool_create(
                threads as u32,
                self.options.stack_size as u64,
                error.as_mut_ptr(),
                error.len() as u64,
            )
        };
        if pool.is_null() {
            Err(ffi::c_text(&error))
        } else {
            Ok(Pool(pool))
        }
    }

    pub(super) fn pool_error(reason: &str) -> RuntimeError {
        RuntimeError::NoDevice {
            backend: Backend::Cpu,
            reason: format!("could not start the cpu worker pool: {reason}"),
        }
    }

    /// Checked mode: the first byte of a buffer's slack (between its end and its guard page) that
    /// no longer holds [`CANARY`], where a launch wrote past the end of a buffer; the canaries
    /// of every buffer are put back.
    pub(super) fn canaries_changed(&self) -> Option<u64> {
        let allocations = self.allocations.lock().ok()?;
        let mut first = None;
        for (&start, &bytes) in allocations.iter() {
            let (at, len) = slack(start, bytes);
            if len == 0 {
                continue;
            }
            // Safety: the slack of a live checked allocation is mapped read-write.
            let bytes = unsafe { std::slice::from_raw_parts_mut(at as *mut u8, len as usize) };
            if let Some(i) = bytes.iter().position(|&b| b != CANARY) {
                first.get_or_insert(at + i as u64);
                bytes.fill(CANARY);
            }
        }
        first
    }

    /// The live allocation (start, bytes) a fault at `address` missed: the one it is just past
    /// the end of, or just before the start of.
    pub(super) fn buffer_near(&self, address: u64) -> Option<(u64, u64)> {
        let allocations = self.allocations.lock().ok()?;
        if let Some((&start, &bytes)) = allocations.range(..=address).next_back() {
            if address < start + bytes + GUARD_BYTES {
                return Some((start, bytes));
            }
        }
        allocations
            .range(address..)
            .next()
            .filter(|(&start, _)| start - address <= GUARD_BYTES)
            .map(|(&start, &bytes)| (start, bytes))
    }

    /// Explain a memory fault at `address` using the live allocations.
    pub(super) fn explain_address(&self, address: u64) -> Option<String> {
        let allocations = self.allocations.lock().ok()?;
        // The buffer starting at or below the address (past its end), then the one above it.
        if let Some((&start, &bytes)) = allocations.range(..=address).next_back() {
            let end = start + bytes;
            if address >= end && address < end + GUARD_BYTES {
                return Some(format!(
                    "byte offset {} of the {bytes}-byte buffer at {start:#x} ({} byte(s) past its end)",
                    address - start,
                    address - end + 1
                ));
            }
        }
        if let Some((&start, &bytes)) = allocations.range(address..).next() {
            if start - address <= GUARD_BYTES {
                return Some(format!(
                    "{} byte(s) before the start of the {bytes}-byte buffer at {start:#x}",
                    start - address
                ));
            }
        }
        None
    }
}

/// What a general-protection fault in a kernel (x86 reports no address for one) most likely is.
pub(super) const GENERAL_PROTECTION: &str =
    "general-protection fault (the processor names no address): \
    most often an aligned vector load or store (float4, double2, int4...) at an address that is \
    not a multiple of its size, as when a float buffer is read as float4 from an element that is \
    not a multiple of 4 (a GPU faults there too), or from a buffer start that is not 16-byte \
    aligned (device buffers start 256-byte aligned, as on GPUs; a pointer into one need not be). \
    Check the alignment before the vector access (and take the element path where it fails)";

/// One cpu "device": a worker pool and the options it runs kernels with.
#[derive(Debug)]
pub(crate) struct CpuDevice {
    info: DeviceInfo,
    shared: Arc<Shared>,
}

pub(super) fn total_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(0)
}

impl CpuDevice {
    pub(crate) fn new(mut options: CpuOptions) -> Self {
        if options.wave_size != 32 {
            options.wave_size = 64;
        }
        options.stack_size = options.stack_size.max(16 * 1024);
        let threads = if options.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            options.threads
        };
        let info = DeviceInfo {
            backend: Backend::Cpu,
            name: format!(
                "cpu ({threads} thread{}, wave {}{}{})",
                if threads == 1 { "" } else { "s" },
                options.wave_size,
                if options.checked { ", checked" } else { "" },
                if options.race_check {
                    ", race check"
                } else {
                    ""
                }
            ),
            arch: std::env::consts::ARCH.to_string(),
            wave_size: options.wave_size,
            total_memory: total_memory(),
            compute_units: threads as u32,
        };
        CpuDevice {
            info,
            shared: Arc::new(Shared {
                options,
                threads,
                pool: OnceLock::new(),
                allocations: Mutex::new(BTreeMap::new()),
            }),
        }
    }
}

impl DeviceBackend for CpuDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc(&self, bytes: usize) -> Result<DevicePtr> {
        let guarded = u32::from(self.shared.options.checked);
        // Safety: plain allocation.
        let ptr = unsafe { ffi::rk_mem_alloc(bytes as u64, guarded) };
        if ptr.is_null() {
            return Err(RuntimeError::Api {
                backend: Backend::Cpu,
                call: "alloc".into(),
                message: format!("out of memory allocating {bytes} bytes"),
            });
        }
        let address = ptr as u64;
        if guarded != 0 {
            let (at, len) = slack(address, bytes as u64);
            // Safety: the slack lies between the buffer and its guard page, mapped read-write.
            unsafe { std::ptr::write_bytes(at as *mut u8, CANARY, len as usize) };
        }
        if let Ok(mut allocations) = self.shared.allocations.lock() {
            allocations.insert(address, bytes as u64);
        }
        Ok(address)
    }

    unsafe fn free(&self, ptr: DevicePtr, bytes: usize) {
        if let Ok(mut allocations) = self.shared.allocations.lock() {
            allocations.remove(&ptr);
        }
        let guarded = u32::from(self.shared.options.checked);
        ffi::rk_mem_free(ptr as *mut c_void, bytes as u64, guarded);
    }

    /// Host memory is all the cpu backend has: plain page-aligned memory stands in for pinned.
    fn alloc_host(&self, bytes: usize) -> Result<*mut u8> {
        super::super::page_aligned_alloc(bytes, Backend::Cpu)
    }

    unsafe fn free_host(&self, ptr: *mut u8, bytes: usize) {
        super::super::page_aligned_free(ptr, bytes)
    }

    fn new_stream(&self) -> Result<Box<dyn StreamBackend>> {
        Ok(Box::new(CpuStream))
    }

    fn new_event(&self) -> Result<Box<dyn EventBackend>> {
        Ok(Box::new(CpuEvent::default()))
    }

    unsafe fn copy_to_device(
        &self,
        dst: DevicePtr,
        src: *const u8,
        bytes: usize,
        _stream: &dyn StreamBackend,
    ) -> Result<()> {
        std::ptr::copy_nonoverlapping(src, dst as *mut u8, bytes);
        Ok(())
    }

    unsafe fn copy_to_host(
        &self,
        dst: *mut u8,
        src: DevicePtr,
        bytes: usize,
        _stream: &dyn StreamBackend,
    ) -> Result<()> {
        std::ptr::copy_nonoverlapping(src as *const u8, dst, bytes);
        Ok(())
    }

    unsafe fn copy_on_device(
        &self,
        dst: DevicePtr,
        src: DevicePtr,
        bytes: usize,
        _stream: &dyn StreamBackend,
    ) -> Result<()> {
        std::ptr::copy(src as *const u8, dst as *mut u8, bytes);
        Ok(())
    }

    unsafe fn fill(
        &self,
        dst: DevicePtr,
        pattern: &[u8],
        count: usize,
        _stream: &dyn StreamBackend,
    ) -> Result<()> {
        let mut at = dst as *mut u8;
        for _ in 0..count {
            std::ptr::copy_nonoverlapping(pattern.as_ptr(), at, pattern.len());
            at = at.add(pattern.len());
        }
        Ok(())
    }

    fn load_module(&self, library: &'static KernelLibrary) -> Result<Arc<dyn ModuleBackend>> {
        if !library.has_cpu() && !library.kernels.is_empty() {
            return Err(RuntimeError::LibraryMissing {
                library: library.name.to_string(),
                backend: Backend::Cpu,
                hint: "it was built without the cpu backend; enable it in the build script's \
                       `rocm_kernels_build::Build`"
                    .to_string(),
            });
        }
        Ok(Arc::new(CpuModule {
            library,
            shared: self.shared.clone(),
        }))
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
}
