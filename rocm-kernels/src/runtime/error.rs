//! [`RuntimeError`]: everything that can go wrong between finding a device and a kernel finishing.

use std::time::Duration;

use crate::library::Backend;

/// Where in a launch a fault happened: the kernel, the block and the thread within it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultSite {
    /// The kernel, in its one spelling (`saxpy`, `scale<float>`).
    pub kernel: String,
    /// `blockIdx` as (x, y, z).
    pub block: [u32; 3],
    /// `threadIdx` as (x, y, z).
    pub thread: [u32; 3],
}

impl std::fmt::Display for FaultSite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [bx, by, bz] = self.block;
        let [tx, ty, tz] = self.thread;
        write!(
            f,
            "kernel `{}`, block ({bx},{by},{bz}), thread ({tx},{ty},{tz})",
            self.kernel
        )
    }
}

/// An error of the runtime: finding devices, loading modules, moving memory, launching kernels,
/// and the faults the cpu backend detects while a kernel runs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The kernel library has nothing for this backend (e.g. it was built without `cpu`).
    #[error("kernel library `{library}` has no {backend} code: {hint}")]
    LibraryMissing {
        /// The library's name (`KernelLibrary::name`).
        library: String,
        /// The backend it lacks.
        backend: Backend,
        /// How to build it with that backend.
        hint: String,
    },
    /// The library has code objects for the backend, but none for this device's architecture.
    #[error("kernel library `{library}` has no code object for {arch} (it has: {available}); add `{arch}` to the build's targets")]
    NoMatchingCodeObject {
        /// The library's name.
        library: String,
        /// The device's architecture (`gfx90a:xnack-`, `sm_90`).
        arch: String,
        /// The architectures the library has, comma-separated.
        available: String,
    },
    /// No device of a backend could be opened.
    #[error("no {backend} device: {reason}")]
    NoDevice {
        /// The backend asked for.
        backend: Backend,
        /// Why none could be opened (library missing, no device, driver error).
        reason: String,
    },
    /// A call into a backend's driver or runtime library failed.
    #[error("{backend} API call `{call}` failed: {message}")]
    Api {
        /// The backend whose library failed.
        backend: Backend,
        /// The call (`hipModuleLoadData`, `cuLaunchKernel`).
        call: String,
        /// The driver's error name and text.
        message: String,
    },
    /// A shared library a backend needs could not be loaded, or lacks a symbol.
    #[error("could not load {library}: {reason}")]
    LibraryLoad {
        /// The shared library (`libamdhip64.so`).
        library: String,
        /// What the loader said, or the missing symbol.
        reason: String,
    },
    /// No kernel of that name in the module.
    #[error("no kernel named `{name}` in library `{library}` (it has: {available})")]
    KernelNotFound {
        /// The name asked for.
        name: String,
        /// The library searched.
        library: String,
        /// The kernels it has, comma-separated.
        available: String,
    },
    /// No `__constant__`/`__device__` variable of that name in the module.
    #[error("no __constant__ or __device__ variable named `{name}` in library `{library}` (it has: {available}); variables are found at namespace scope, by their qualified name (`ns::mask`)")]
    GlobalNotFound {
        /// The name asked for.
        name: String,
        /// The library searched.
        library: String,
        /// The variables it has, comma-separated.
        available: String,
    },
    /// The launch's arguments do not match the kernel's parameters.
    #[error("arguments of kernel `{kernel}` do not match its parameters: {message}")]
    ArgMismatch {
        /// The kernel launched.
        kernel: String,
        /// Which argument is wrong, and how.
        message: String,
    },
    /// The launch configuration is invalid (zero-sized grid, block too large, ...).
    #[error("invalid launch of kernel `{kernel}`: {message}")]
    InvalidLaunch {
        /// The kernel launched.
        kernel: String,
        /// What is wrong with the grid, block or shared memory.
        message: String,
    },
    /// A copy or fill does not fit the buffer.
    #[error("size mismatch: {0}")]
    SizeMismatch(String),
    /// A buffer of another device was passed.
    #[error("buffer belongs to another device ({0})")]
    WrongDevice(String),
    /// A kernel thread faulted: a failed `assert`, an invalid memory access, a trap.
    #[error("{site}: {message}")]
    KernelFault {
        /// The faulting thread.
        site: FaultSite,
        /// What happened (the failed assertion, the signal).
        message: String,
    },
    /// A kernel read or wrote outside a device buffer (cpu backend, checked mode).
    #[error("{site}: out-of-bounds {access} at address {address:#x}: {detail}")]
    OutOfBounds {
        /// The thread that made the access.
        site: FaultSite,
        /// `read` or `write` (or `access` when the CPU could not tell).
        access: &'static str,
        /// The address accessed.
        address: u64,
        /// Which buffer it missed and by how much, when known.
        detail: String,
    },
    /// A launch wrote past the end of a device buffer, into the slack between its end and its
    /// guard page (cpu backend, checked mode: buffers start 256-byte aligned, as on GPUs, and the
    /// slack holds canary bytes checked after each launch), and running it again did not name
    /// the thread (where it does, the error is [`RuntimeError::OutOfBounds`]).
    #[error("kernel `{kernel}`: out-of-bounds write at address {address:#x}: {detail}")]
    Overrun {
        /// The kernel launched.
        kernel: String,
        /// The address written, in the slack past a buffer's end.
        address: u64,
        /// Which buffer it missed and by how much.
        detail: String,
    },
    /// Part of a block reached `__syncthreads` while other threads of the block had exited or
    /// were waiting elsewhere: a hang or undefined behaviour on a GPU.
    #[error("{site}: partial barrier: {message}")]
    PartialBarrier {
        /// A thread that reached the barrier.
        site: FaultSite,
        /// Which threads were where.
        message: String,
    },
    /// The kernel ran longer than the device's time limit (an infinite loop, or a limit too small).
    #[error("kernel `{kernel}` ran past the time limit of {limit:?} (block {block:?} was still running); raise `CpuOptions::time_limit` if this is not an infinite loop")]
    Timeout {
        /// The kernel launched.
        kernel: String,
        /// The limit it ran past.
        limit: Duration,
        /// `blockIdx` of a block still running, as (x, y, z).
        block: [u32; 3],
    },
    /// The results of a launch depend on the order in which the threads of a block run between
    /// barriers: shared memory written by one thread and read by another with no barrier between
    /// (cpu backend, [`CpuOptions::race_check`](crate::runtime::CpuOptions::race_check)). The
    /// message names the buffer and offset where the two orders' results first differ, and the
    /// threads that last changed that word in each order; `site` is the one of the run in order
    /// (of the run in reverse order where no thread changed the word in order).
    #[error("kernel `{kernel}`: shared-memory race: {message}")]
    SharedMemoryRace {
        /// The kernel launched.
        kernel: String,
        /// Where the two orders differ and which threads wrote there.
        message: String,
        /// A thread that last changed the differing word (see above).
        site: Option<FaultSite>,
    },
    /// Two threads touched the same memory with nothing ordering them and at least one writing
    /// (cpu backend, [`CpuOptions::race_check`](crate::runtime::CpuOptions::race_check), with the
    /// kernel's race variant): threads of one block with no barrier between them, or two blocks
    /// of one launch, not both atomically. The message names the memory, both threads and both
    /// places in the source; `site` is the second access's.
    #[error("kernel `{kernel}`: data race on {message}")]
    DataRace {
        /// The kernel launched.
        kernel: String,
        /// The memory, both threads and both places in the source.
        message: String,
        /// The thread of the second access.
        site: FaultSite,
    },
    /// The backend cannot do this (yet).
    #[error("{backend} backend does not support {what}")]
    Unsupported {
        /// The backend asked.
        backend: Backend,
        /// What it cannot do.
        what: String,
    },
}

impl RuntimeError {
    /// The fault site for errors raised by a running kernel.
    pub fn fault_site(&self) -> Option<&FaultSite> {
        match self {
            RuntimeError::KernelFault { site, .. }
            | RuntimeError::OutOfBounds { site, .. }
            | RuntimeError::PartialBarrier { site, .. }
            | RuntimeError::DataRace { site, .. } => Some(site),
            RuntimeError::SharedMemoryRace { site, .. } => site.as_ref(),
            _ => None,
        }
    }
}

/// Shorthand for results of the runtime.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;
