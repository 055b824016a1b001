//! [`Device`]: one place kernels can run, and how to find them.

use std::sync::Arc;
use std::time::Duration;

use super::backend::{self, DeviceBackend};
use super::{Buffer, DeviceCopy, HostBuffer, Module, Result, RuntimeError, Stream};
use crate::library::{Backend, KernelLibrary};

/// What a device is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Which backend drives it.
    pub backend: Backend,
    /// For people: `AMD Instinct MI210`, `cpu (2 threads, wave 64)`.
    pub name: String,
    /// What code objects must target: `gfx90a`, `sm_90`; `x86_64` (the host) for cpu.
    pub arch: String,
    /// Threads per wave (warp): 32 or 64.
    pub wave_size: u32,
    /// Bytes of device memory (host memory for cpu).
    pub total_memory: u64,
    /// Compute units (SMs for NVIDIA, worker threads for cpu).
    pub compute_units: u32,
}

/// How the cpu backend runs kernels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuOptions {
    /// Wave size the kernel sees (`warpSize`, the width of `__shfl`/`__ballot`): 32 or 64.
    pub wave_size: u32,
    /// Checked mode: device buffers start 256-byte aligned (as `hipMalloc`'s) and get guard
    /// pages, so out-of-bounds accesses and stray pointers become
    /// [`RuntimeError::OutOfBounds`]/[`RuntimeError::KernelFault`] naming block and thread (a
    /// faulting launch runs once more to name the exact thread; a passing one costs the same as
    /// unchecked, plus a look at the canary bytes between each buffer's end and its guard page,
    /// which catch a write past the end that does not reach the guard page; reads there are
    /// caught under [`CpuOptions::race_check`]'s detector).
    pub checked: bool,
    /// Run blocks in an order shuffled by this seed (exposes dependencies between blocks).
    pub shuffle_seed: Option<u64>,
    /// Abort a launch that runs longer than this ([`RuntimeError::Timeout`]).
    pub time_limit: Option<Duration>,
    /// Worker threads running blocks; 0 = one per available core.
    pub threads: usize,
    /// Check every launch for data races ([`RaceMethod`] says how; the default is the race
    /// detector). Slower: the detector runs the launch's instrumented variant, each worker
    /// checking a contiguous share of its blocks (and the launch again on one worker where the
    /// workers cannot decide alone: something found, or blocks of two workers meeting on device
    /// memory).
    pub race_check: bool,
    /// How [`CpuOptions::race_check`] looks for races.
    pub race_method: RaceMethod,
    /// Strict race detection: report every formal data race of the CUDA/HIP memory models,
    /// including a plain read racing another thread's atomic write, which the default lets pass
    /// (the CAS loop seeded by a plain read, a monotone update's early exit: see
    /// [`RaceMethod::Detector`]). Off by default; [`CpuOptions::from_env`] reads
    /// `ROCM_RACE_STRICT` (`1` for strict).
    pub race_strict: bool,
    /// Whether the race detector takes summaries from the race variant's lane loops that it can
    /// describe (each run of lanes' accesses told once, the loop then running uninstrumented;
    /// what they cannot show race-free is replayed access by access, so the findings are the
    /// same) rather than one hook call per access. On by default; [`CpuOptions::from_env`]
    /// reads `ROCM_RACE_SUMMARIES` (`0` for off).
    pub race_summaries: bool,
    /// Stack size of each kernel thread (fiber), in bytes.
    pub stack_size: usize,
    /// How the threads of a block run ([`CpuExec`]); [`CpuExec::Regions`] by default,
    /// [`CpuOptions::from_env`] reads `ROCM_CPU_EXEC` (`regions`, `fibers` or `blocks`).
    pub exec: CpuExec,
}

/// How the cpu backend's race check ([`CpuOptions::race_check`]) looks for races.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RaceMethod {
    /// The race detector: the kernel's race variant (built by `rocm-kernels-build`, instrumented
    /// by the host compiler) runs once, and every access to device and shared memory is checked.
    /// Two threads of a block touching the same address with no `__syncthreads()` between them
    /// (or, for lanes of one wave, no collective), at least one writing plainly (not atomically),
    /// or two blocks of one launch doing so on device memory, fail the launch with
    /// [`RuntimeError::DataRace`](crate::runtime::RuntimeError::DataRace), naming the memory,
    /// both threads and both source lines. Writes of the same value, atomics, a plain read
    /// racing an atomic write (a formal data race, but a CAS loop seeded by a plain read
    /// validates what it read; [`CpuOptions::race_strict`] reports it) and (between blocks, or
    /// lanes of one wave) volatile accesses are not races; a block that writes, then
    /// `__threadfence()`s and does an atomic, publishes what it wrote to blocks that later do an
    /// atomic on the same address. Memory it does not see: `__device__` variables, stacks.
    /// Kernels built without their race variant get [`RaceMethod::TwoOrders`].
    #[default]
    Detector,
    /// Differential execution: the launch runs twice from the same device memory, the threads of
    /// each block in order and then in reverse order (last to first), and fails with
    /// [`RuntimeError::SharedMemoryRace`](crate::runtime::RuntimeError::SharedMemoryRace) when the
    /// buffers its pointer arguments reach differ, naming the parameter and byte offset and the
    /// threads that last wrote it in each order. Sees only races that change results in those two
    /// orders, but also results that depend on the order by design: float atomics rounding
    /// differently, which thread wins an `atomicCAS`, a counter handing out slots. Memory it does
    /// not restore between the runs: `__device__` variables, buffers reached only through
    /// pointers stored in other buffers. Races between blocks are not seen.
    TwoOrders,
}

/// How the cpu backend runs the threads of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpuExec {
    /// Kernels the build could put in region form run each wave as loops over its lanes in
    /// step, between barriers; the block's waves switch (as fibers) only at real barriers, so
    /// they interleave as on a GPU and a barrier missing between waves shows. Kernels without a
    /// region form use per-thread fibers.
    #[default]
    Regions,
    /// Region forms run all waves of a block in step, one call per block, barriers reduced to
    /// checks: the fastest, and exact for kernels without races, but it synchronises the block
    /// where control flow that contains a barrier begins, so a barrier missing just before such
    /// a loop or branch goes unseen. For benchmarks and trusted kernels.
    Blocks,
    /// Every kernel runs one fiber per thread that switches at barriers and warp collectives
    /// (slower; for comparison, or for a kernel whose region form misbehaves).
    Fibers,
}

impl CpuExec {
    /// Every mode, the default first.
    pub const ALL: [CpuExec; 3] = [CpuExec::Regions, CpuExec::Fibers, CpuExec::Blocks];

    /// The mode's one spelling (`--cpu-exec`, `ROCM_CPU_EXEC`): `regions`, `fibers`, `blocks`.
    pub fn as_str(self) -> &'static str {
        match self {
            CpuExec::Regions => "regions",
            CpuExec::Fibers => "fibers",
            CpuExec::Blocks => "blocks",
        }
    }

    /// `ROCM_CPU_EXEC=fibers` or `blocks` selects [`CpuExec::Fibers`] or [`CpuExec::Blocks`];
    /// anything else the default.
    pub fn from_env() -> CpuExec {
        std::env::var("ROCM_CPU_EXEC")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_default()
    }
}

impl std::fmt::Display for CpuExec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for CpuExec {
    type Err = String;

    /// Exactly one of [`CpuExec::as_str`]'s names.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CpuExec::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| {
                format!("unknown cpu execution mode `{s}` (expected regions, fibers or blocks)")
            })
    }
}

impl CpuOptions {
    /// The defaults with what the environment sets: [`exec`](CpuOptions::exec) from
    /// `ROCM_CPU_EXEC` ([`CpuExec::from_env`]) and [`race_strict`](CpuOptions::race_strict) from
    /// `ROCM_RACE_STRICT=1`. What [`Device::probe`] and [`Device::default`] use for the cpu
    /// device, and the test harness for its trials; [`CpuOptions::default`] reads nothing.
    pub fn from_env() -> CpuOptions {
        CpuOptions {
            race_strict: std::env::var("ROCM_RACE_STRICT").is_ok_and(|v| v == "1"),
            race_summaries: std::env::var("ROCM_RACE_SUMMARIES").map_or(true, |v| v != "0"),
            exec: CpuExec::from_env(),
            ..CpuOptions::default()
        }
    }
}

impl Default for CpuOptions {
    /// Wave 64 (as AMD CDNA), checked, in order, no time limit, all cores, region forms, not
    /// strict; the environment is not read (see [`CpuOptions::from_env`]).
    fn default() -> Self {
        CpuOptions {
            wave_size: 64,
            checked: true,
            shuffle_seed: None,
            time_limit: None,
            threads: 0,
            race_check: false,
            race_method: RaceMethod::Detector,
            race_strict: false,
            race_summaries: true,
            stack_size: 128 * 1024,
            exec: CpuExec::Regions,
        }
    }
}

/// What [`Device::probe`] found: usable devices, and for each backend without any, why.
#[derive(Debug, Clone)]
pub struct Devices {
    /// The devices that opened: amd, then nvidia, then cpu, each backend's in its own order.
    pub available: Vec<Device>,
    /// `(backend, reason)`, e.g. `(Amd, "libamdhip64.so not found: ...")`.
    pub unavailable: Vec<(Backend, String)>,
}

/// A device: a handle shared by everything created from it (cheap to clone).
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Arc<dyn DeviceBackend>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("info", self.info()).finish()
    }
}

/// Names the backend [`Device::default`] picks (`cpu`, `amd`, `nvidia`) instead of the first GPU;
/// `cargo rocm profile --backend` sets it for the workload.
pub const ENV_DEFAULT_BACKEND: &str = "ROCM_DEFAULT_BACKEND";

impl Default for Device {
    /// The first GPU found, else the cpu backend with [`CpuOptions::from_env`]. With
    /// `ROCM_DEFAULT_BACKEND` set, the first device of that backend (a warning on stderr says so
    /// when it has none, and the usual choice is made).
    fn default() -> Self {
        let all = Device::all();
        if let Some(wanted) = std::env::var(ENV_DEFAULT_BACKEND)
            .ok()
            .filter(|v| !v.is_empty())
        {
            match wanted.parse::<Backend>() {
                Ok(backend) => match all.iter().find(|d| d.backend() == backend) {
                    Some(d) => return d.clone(),
                    None => eprintln!(
                        "warning: {ENV_DEFAULT_BACKEND}={wanted}, but this machine has no {backend} device; using the default device"
                    ),
                },
                Err(e) => eprintln!("warning: {ENV_DEFAULT_BACKEND}: {e}"),
            }
        }
        all.into_iter()
            .next()
            .unwrap_or_else(|| Device::cpu(CpuOptions::from_env()))
    }
}

impl Device {
    /// Ask every backend for its devices.
    pub fn probe() -> Devices {
        let mut available = Vec::new();
        let mut unavailable = Vec::new();
        for (backend, found) in backend::probe_all() {
            match found {
                Ok(list) if list.is_empty() => {
                    unavailable.push((backend, "no device found".to_string()))
                }
                Ok(list) => available.extend(list.into_iter().map(|inner| Device { inner })),
                Err(reason) => unavailable.push((backend, reason)),
            }
        }
        Devices {
            available,
            unavailable,
        }
    }

    /// Every device that can run kernels here (GPUs first; the cpu backend is always last).
    pub fn all() -> Vec<Device> {
        Device::probe().available
    }

    /// A cpu-backend device with these options. `wave_size` other than 32/64 is rounded to 64.
    pub fn cpu(options: CpuOptions) -> Device {
        Device {
            inner: Arc::new(backend::cpu::CpuDevice::new(options)),
        }
    }

    /// What the device is: backend, name, architecture, wave size, memory.
    pub fn info(&self) -> &DeviceInfo {
        self.inner.info()
    }

    /// The backend driving it (`self.info().backend`).
    pub fn backend(&self) -> Backend {
        self.info().backend
    }

    /// Load the part of `library` that runs on this device.
    pub fn load(&self, library: &'static KernelLibrary) -> Result<Module> {
        let inner = self.inner.load_module(library)?;
        Ok(Module::new(self.clone(), library, inner))
    }

    /// A buffer of `len` elements; contents unspecified (zero on cpu).
    pub fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<Buffer<T>> {
        Buffer::alloc(self, len)
    }

    /// `len` zeroed elements of page-locked (pinned) host memory for copies to and from this
    /// device ([`HostBuffer`]); plain page-aligned memory on the cpu backend.
    pub fn alloc_host<T: DeviceCopy>(&self, len: usize) -> Result<HostBuffer<T>> {
        HostBuffer::alloc(self, len)
    }

    /// A buffer holding a copy of `data`.
    pub fn upload<T: DeviceCopy>(&self, data: &[T]) -> Result<Buffer<T>> {
        let mut buffer = Buffer::alloc(self, data.len())?;
        buffer.upload(data)?;
        Ok(buffer)
    }

    /// A new stream (queue of work) on this device.
    pub fn stream(&self) -> Result<Stream> {
        Stream::new(self)
    }

    /// Wait until all work on the device has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.synchronize()
    }

    /// True when `other` is the same device (same handle).
    pub fn same_as(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub(crate) fn check_same(&self, other: &Device) -> Result<()> {
        if self.same_as(other) {
            Ok(())
        } else {
            Err(RuntimeError::WrongDevice(format!(
                "expected {}, got {}",
                self.info().name,
                other.info().name
            )))
        }
    }
}
