//! The cpu backend: kernels compiled by the host C++ compiler against the cpu kernel-language
//! header (`include/cpu`), run in-process by the C++ runtime in `cpu-runtime/`.
//!
//! How a launch runs:
//! * Blocks are spread over a pool of worker threads ([`CpuOptions::threads`]), in grid order or
//!   in an order shuffled by [`CpuOptions::shuffle_seed`].
//! * Within a block, threads run one after another on one fiber (a plain loop, the kernel
//!   inlined into it) until one waits in `__syncthreads` or a warp collective; from then on every
//!   thread has its own fiber and they run in rounds, switching only at barriers and
//!   collectives. A collective is computed when every active lane of the wave has arrived, with
//!   the wave size of the device (32 or 64).
//! * Static `__shared__` variables are per worker thread (`thread_local`), which is per block
//!   because a worker runs one block at a time to its end; dynamic shared memory is allocated per
//!   worker and launch.
//!
//! What it reports instead of hiding ([`RuntimeError`] variants naming kernel, block and thread):
//! out-of-bounds accesses past the end of a buffer ([`CpuOptions::checked`]: every buffer ends
//! at a guard page), stray pointers, failed `assert`s, `__trap`, fiber stack overflow, barriers
//! reached while part of the block has returned, and launches running past
//! [`CpuOptions::time_limit`].
//!
//! Limits: x86-64 Linux only (elsewhere `probe` says so); an access before the start of a buffer
//! is caught only when it crosses into the guard page before it; a kernel interrupted by the time
//! limit inside a C library call (e.g. `printf`) may leave that library's locks held.
//!
//! Race check ([`CpuOptions::race_check`], module `race`): a launch runs twice from the same
//! device memory on a fresh one-worker pool each time, with per-thread fibers (region form
//! synchronises blocks at control flow that contains a barrier, which can hide a missing one),
//! the threads of each block in order and
//! then in `RK_ORDER_REVERSED` (last to first; warp collectives give the same results in either
//! order), and the buffers its pointer arguments reach are compared;
//! a difference is a [`RuntimeError::SharedMemoryRace`] naming the parameter and byte offset.
//! Static `__shared__` arrays are plain C++ thread-locals (arena slots in region form), so
//! accesses cannot be watched; the
//! order of threads between barriers is what a missing barrier makes results depend on. Also
//! reported: anything else order-dependent (float atomics, an `atomicCAS` winner).

mod ffi;
mod race;

use std::any::Any;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::{
    DeviceBackend, DevicePtr, EventBackend, FunctionBackend, ModuleBackend, ParamLayout,
    ProbeResult, StreamBackend,
};
use crate::embedded::{Backend, KernelLibrary};
use crate::runtime::{
    CpuExec, CpuOptions, DeviceInfo, FaultSite, LaunchConfig, Result, RuntimeError,
};

/// Largest block the cpu backend runs (HIP's limit).
const MAX_BLOCK_THREADS: u64 = 1024;
/// Largest dynamic shared memory a launch may ask for (HIP's 64 KiB of LDS).
const MAX_DYNAMIC_SHARED: u32 = 64 * 1024;
/// Bytes of guard after (and before) each checked allocation; the runtime uses pages.
const GUARD_BYTES: u64 = 4096;

/// The cpu backend has exactly one device (with default options) wherever its runtime runs.
pub(crate) fn probe() -> ProbeResult {
    // Safety: a constant query.
    if unsafe { ffi::rk_runtime_supported() } == 0 {
        return Err(format!(
            "the cpu backend runs kernels on x86-64 Linux only (this is {} {})",
            std::env::consts::ARCH,
            std::env::consts::OS
        ));
    }
    Ok(vec![Arc::new(CpuDevice::new(CpuOptions::default()))])
}

/// Cost of one fiber switch of the cpu runtime, in nanoseconds (for benchmarks and reports).
pub fn fiber_switch_ns(iterations: u64) -> f64 {
    // Safety: a self-contained measurement in the runtime.
    unsafe { ffi::rk_measure_switch_ns(iterations.max(1)) }
}

#[derive(Debug)]
struct Pool(*mut ffi::RkPool);
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
struct Shared {
    options: CpuOptions,
    threads: usize,
    pool: OnceLock<std::result::Result<Pool, String>>,
    /// Live allocations, start → bytes, to explain memory faults.
    allocations: Mutex<BTreeMap<u64, u64>>,
}

impl Shared {
    /// The device's worker pool, started on first use.
    fn pool(&self) -> Result<*mut ffi::RkPool> {
        let pool = self.pool.get_or_init(|| self.new_pool(self.threads));
        match pool {
            Ok(pool) => Ok(pool.0),
            Err(reason) => Err(Self::pool_error(reason)),
        }
    }

    fn new_pool(&self, threads: usize) -> std::result::Result<Pool, String> {
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

    fn pool_error(reason: &str) -> RuntimeError {
        RuntimeError::NoDevice {
            backend: Backend::Cpu,
            reason: format!("could not start the cpu worker pool: {reason}"),
        }
    }

    /// Explain a memory fault at `address` using the live allocations.
    fn explain_address(&self, address: u64) -> Option<String> {
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

/// One cpu "device": a worker pool and the options it runs kernels with.
#[derive(Debug)]
pub(crate) struct CpuDevice {
    info: DeviceInfo,
    shared: Arc<Shared>,
}

fn total_memory() -> u64 {
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
        if library.cpu_kernels.is_empty() && !library.kernels.is_empty() {
            return Err(RuntimeError::LibraryMissing {
                library: library.name.to_string(),
                backend: Backend::Cpu,
                hint: "it was built without the cpu backend; enable it in the build script's \
                       `rocm_kernels::Build`"
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

#[derive(Debug)]
struct CpuModule {
    library: &'static KernelLibrary,
    shared: Arc<Shared>,
}

impl ModuleBackend for CpuModule {
    fn kernel_names(&self) -> Vec<String> {
        self.library
            .cpu_kernels
            .iter()
            .map(|k| k.name.to_string())
            .collect()
    }

    fn function(&self, name: &str) -> Result<Option<Arc<dyn FunctionBackend>>> {
        let Some(kernel) = self.library.cpu_kernels.iter().find(|k| k.name == name) else {
            return Ok(None);
        };
        // Safety: the build generated `entry` with the `rk_entry_fn` signature.
        let entry: ffi::RkEntry = unsafe { std::mem::transmute(kernel.entry) };
        let layout = describe(entry).map_err(|message| RuntimeError::Api {
            backend: Backend::Cpu,
            call: format!("describe `{name}`"),
            message,
        })?;
        // Source names of the parameters, for reports, where the build recorded them.
        let param_names = self
            .library
            .kernels
            .iter()
            .find(|k| k.name == name)
            .filter(|k| k.params.len() == layout.len())
            .map(|k| k.params.iter().map(|p| p.name).collect())
            .unwrap_or_default();
        Ok(Some(Arc::new(CpuFunction {
            name: name.to_string(),
            entry,
            layout,
            param_names,
            shared: self.shared.clone(),
        })))
    }
}

/// Ask a generated entry for its exact parameter layout.
fn describe(entry: ffi::RkEntry) -> std::result::Result<Vec<ParamLayout>, String> {
    let mut info = ffi::RkParamInfo {
        abi_version: 0,
        count: 0,
        size: [0; ffi::RK_MAX_PARAMS],
        is_pointer: [0; ffi::RK_MAX_PARAMS],
        block_entry: 0,
    };
    let call = ffi::RkCall {
        op: ffi::RK_CALL_DESCRIBE,
        begin: 0,
        end: 0,
        args: std::ptr::null(),
        info: &mut info,
    };
    // Safety: DESCRIBE only writes `info`.
    unsafe { entry(&call) };
    if info.abi_version != ffi::RK_ABI_VERSION {
        return Err(format!(
            "the kernel was compiled against cpu runtime ABI {} but this runtime is ABI {}; \
             rebuild the kernel crate with this version of rocm-kernels",
            info.abi_version,
            ffi::RK_ABI_VERSION
        ));
    }
    let count = (info.count as usize).min(ffi::RK_MAX_PARAMS);
    Ok((0..count)
        .map(|i| ParamLayout {
            size: info.size[i],
            is_pointer: info.is_pointer[i] != 0,
        })
        .collect())
}

#[derive(Debug)]
struct CpuFunction {
    name: String,
    entry: ffi::RkEntry,
    layout: Vec<ParamLayout>,
    /// Parameter names from the build's declarations; empty when unknown.
    param_names: Vec<&'static str>,
    shared: Arc<Shared>,
}

impl CpuFunction {
    fn site(&self, result: &ffi::RkLaunchResult) -> FaultSite {
        FaultSite {
            kernel: self.name.clone(),
            block: result.block,
            thread: result.thread,
        }
    }

    fn invalid(&self, message: String) -> RuntimeError {
        RuntimeError::InvalidLaunch {
            kernel: self.name.clone(),
            message,
        }
    }

    fn to_error(&self, result: &ffi::RkLaunchResult) -> RuntimeError {
        let message = ffi::c_text(&result.message);
        let site = self.site(result);
        match result.status {
            ffi::RK_MEMORY_FAULT => {
                let access = match result.access {
                    1 => "read",
                    2 => "write",
                    _ => "access",
                };
                match self.shared.explain_address(result.address) {
                    Some(detail) => RuntimeError::OutOfBounds {
                        site,
                        access,
                        address: result.address,
                        detail,
                    },
                    None => RuntimeError::KernelFault {
                        site,
                        message: format!(
                            "invalid memory {access} at address {:#x} (not in or next to any \
                             buffer of this device)",
                            result.address
                        ),
                    },
                }
            }
            ffi::RK_PARTIAL_BARRIER => RuntimeError::PartialBarrier { site, message },
            ffi::RK_TIMEOUT => RuntimeError::Timeout {
                kernel: self.name.clone(),
                limit: self.shared.options.time_limit.unwrap_or_default(),
                block: result.block,
            },
            ffi::RK_INVALID => self.invalid(message),
            ffi::RK_FAULT | ffi::RK_STACK_OVERFLOW => RuntimeError::KernelFault { site, message },
            other => RuntimeError::KernelFault {
                site,
                message: format!("unknown status {other} from the cpu runtime: {message}"),
            },
        }
    }
}

impl FunctionBackend for CpuFunction {
    fn param_layout(&self) -> Option<Vec<ParamLayout>> {
        Some(self.layout.clone())
    }

    unsafe fn launch(
        &self,
        config: &LaunchConfig,
        args: &[*mut c_void],
        _stream: &dyn StreamBackend,
    ) -> Result<()> {
        let options = &self.shared.options;
        if config.block.count() > MAX_BLOCK_THREADS {
            return Err(self.invalid(format!(
                "block {:?} has {} threads; at most {MAX_BLOCK_THREADS} are allowed",
                config.block,
                config.block.count()
            )));
        }
        if config.shared_mem_bytes > MAX_DYNAMIC_SHARED {
            return Err(self.invalid(format!(
                "{} bytes of dynamic shared memory requested; at most {MAX_DYNAMIC_SHARED}",
                config.shared_mem_bytes
            )));
        }
        let desc = ffi::RkLaunchDesc {
            entry: self.entry,
            args: args.as_ptr(),
            grid: [config.grid.x, config.grid.y, config.grid.z],
            block: [config.block.x, config.block.y, config.block.z],
            shared_bytes: config.shared_mem_bytes,
            wave_size: options.wave_size,
            checked: u32::from(options.checked),
            has_seed: u32::from(options.shuffle_seed.is_some()),
            seed: options.shuffle_seed.unwrap_or(0),
            time_limit_ns: options
                .time_limit
                .map_or(0, |d| d.as_nanos().clamp(1, u128::from(u64::MAX)) as u64),
            exec_fibers: u32::from(options.exec == CpuExec::Fibers),
            thread_order: ffi::RK_ORDER_FORWARD,
        };
        if options.race_check {
            self.launch_race_checked(desc, args)
        } else {
            self.run(self.shared.pool()?, &desc)
        }
    }
}

impl CpuFunction {
    /// Run one launch on `pool`.
    ///
    /// # Safety
    /// As [`FunctionBackend::launch`] for the arguments `desc` points to.
    unsafe fn run(&self, pool: *mut ffi::RkPool, desc: &ffi::RkLaunchDesc) -> Result<()> {
        let mut result = ffi::RkLaunchResult {
            status: 0,
            block: [0; 3],
            thread: [0; 3],
            access: 0,
            address: 0,
            message: [0; 512],
        };
        ffi::rk_launch(pool, desc, &mut result);
        if result.status == ffi::RK_OK {
            Ok(())
        } else {
            Err(self.to_error(&result))
        }
    }

    /// [`CpuOptions::race_check`]: run the launch with the threads of each block in order and
    /// again, from the same device memory, in reverse order (see `race`); the results must agree.
    ///
    /// # Safety
    /// As [`FunctionBackend::launch`].
    unsafe fn launch_race_checked(
        &self,
        mut desc: ffi::RkLaunchDesc,
        args: &[*mut c_void],
    ) -> Result<()> {
        // Each run gets a pool of one new worker: blocks run one at a time in the same order both
        // times, and static `__shared__` variables (thread-locals of the worker, or slots of its
        // fresh region arena) start zeroed both times, so a read before any write sees the same
        // value.
        let fresh_pool = || {
            self.shared
                .new_pool(1)
                .map_err(|reason| Shared::pool_error(&reason))
        };
        let is_pointer: Vec<bool> = self.layout.iter().map(|p| p.is_pointer).collect();
        let mut regions = {
            let allocations = self
                .shared
                .allocations
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            race::Regions::reachable(args, &is_pointer, &allocations)
        };
        let mut snapshot = regions.capture();
        // Per-thread fibers, whatever CpuOptions::exec says: region form runs control flow that
        // contains a barrier once for the whole block, which synchronises the block where the
        // source has no barrier (a missing one before such a loop goes unseen in both orders).
        // Fibers run each thread on to its next real barrier.
        desc.exec_fibers = 1;
        let pool = fresh_pool()?;
        self.run(pool.0, &desc)?;
        drop(pool);
        // Device memory back to where it started; `snapshot` now holds the in-order results.
        regions.swap(&mut snapshot);
        let in_order = snapshot;
        desc.thread_order = ffi::RK_ORDER_REVERSED;
        let pool = fresh_pool()?;
        self.run(pool.0, &desc).map_err(only_in_reverse_order)?;
        drop(pool);
        match regions.first_difference(&in_order) {
            None => Ok(()),
            Some(difference) => Err(RuntimeError::SharedMemoryRace {
                kernel: self.name.clone(),
                message: difference.message(self.param_names.get(difference.param).copied()),
            }),
        }
    }
}

/// A fault of the race check's second run, which the first (in order) did not have: say so,
/// since the order of threads is then what triggers it.
fn only_in_reverse_order(mut err: RuntimeError) -> RuntimeError {
    const NOTE: &str = " (race check: only when the threads of each block ran in reverse order, \
                        so it depends on the order of threads between barriers)";
    match &mut err {
        RuntimeError::KernelFault { message, .. }
        | RuntimeError::PartialBarrier { message, .. } => message.push_str(NOTE),
        RuntimeError::OutOfBounds { detail, .. } => detail.push_str(NOTE),
        _ => {}
    }
    err
}

#[derive(Debug)]
struct CpuStream;

impl StreamBackend for CpuStream {
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[derive(Debug, Default)]
struct CpuEvent {
    at: Mutex<Option<Instant>>,
}

impl CpuEvent {
    fn time(&self) -> Result<Instant> {
        self.at
            .lock()
            .ok()
            .and_then(|at| *at)
            .ok_or_else(|| RuntimeError::Api {
                backend: Backend::Cpu,
                call: "event elapsed time".into(),
                message: "the event was never recorded".into(),
            })
    }
}

impl EventBackend for CpuEvent {
    fn record(&self, _stream: &dyn StreamBackend) -> Result<()> {
        if let Ok(mut at) = self.at.lock() {
            *at = Some(Instant::now());
        }
        Ok(())
    }
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn elapsed_ms(&self, end: &dyn EventBackend) -> Result<f32> {
        let end = end
            .as_any()
            .downcast_ref::<CpuEvent>()
            .ok_or_else(|| RuntimeError::WrongDevice("event of another backend".into()))?;
        let elapsed = end
            .time()?
            .saturating_duration_since(self.time()?)
            .max(Duration::ZERO);
        Ok(elapsed.as_secs_f32() * 1e3)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
