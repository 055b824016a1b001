//! The backend layer: what every device kind (cpu, amd, nvidia) implements.
//!
//! This mirrors cudarc's split: the traits here are the `result` layer (every call returns
//! `Result`, raw device addresses and type-erased handles), and [`crate::runtime`]'s `Device`,
//! `Buffer<T>`, `Module`, `Kernel`, `Stream` and `Event` are the safe layer on top. A backend is
//! one module under `backend/` with a `probe()` that lists its devices or says why there are none;
//! `probe_all` asks every backend in turn.

use std::any::Any;
use std::ffi::c_void;
use std::fmt::Debug;
use std::sync::Arc;

use super::{DeviceInfo, LaunchConfig, Result};
use crate::library::{Backend, KernelLibrary};
pub use rocm_protocol::launch_log::DriverResources;

pub mod amd;
pub mod cpu;
pub mod nvidia;
mod rtc;

/// Kernels compiled at run time for one device (NVRTC on `nvidia`, hipRTC on `amd`): the code of
/// one source for one target, and each kernel's symbol in it. What `cargo rocm tune` makes of a
/// configuration with compile-time parameters; embed it in a [`KernelLibrary`] as a code object
/// to load it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtcImage {
    /// `Cubin` (for `sm_XX`) or `Ptx` (`compute_XX`, where NVRTC cannot make machine code);
    /// `AmdgpuElf` for AMD.
    pub format: crate::library::ObjectFormat,
    /// What the code is for: `sm_90`, `compute_90`, `gfx90a`.
    pub target: String,
    /// The code itself: a cubin, PTX text or an AMDGPU ELF code object.
    pub bytes: Vec<u8>,
    /// (kernel name as asked, its symbol in the code), for the kernels found.
    pub symbols: Vec<(String, String)>,
    /// The compiler's warnings, if any.
    pub log: String,
}

/// A device address. On the cpu backend it is a host address.
pub type DevicePtr = u64;

/// One device of a backend.
pub trait DeviceBackend: Send + Sync + Debug {
    fn info(&self) -> &DeviceInfo;
    /// Allocate `bytes` (> 0) of device memory. Contents are unspecified.
    fn alloc(&self, bytes: usize) -> Result<DevicePtr>;
    /// Free memory returned by [`alloc`](Self::alloc).
    ///
    /// # Safety
    /// `ptr` came from `alloc` on this device with this size and is not used afterwards.
    unsafe fn free(&self, ptr: DevicePtr, bytes: usize);
    /// Allocate `bytes` (> 0) of page-locked (pinned) host memory, which the device copies to
    /// and from directly, without staging through a pageable bounce buffer. Contents
    /// unspecified. The memory stays valid until [`free_host`](Self::free_host), whatever
    /// happens to the device meanwhile (a reset may unpin it, never free it).
    fn alloc_host(&self, bytes: usize) -> Result<*mut u8>;
    /// Free memory returned by [`alloc_host`](Self::alloc_host).
    ///
    /// # Safety
    /// `ptr` came from `alloc_host` on this device with this size and is not used afterwards.
    unsafe fn free_host(&self, ptr: *mut u8, bytes: usize);
    fn new_stream(&self) -> Result<Box<dyn StreamBackend>>;
    fn new_event(&self) -> Result<Box<dyn EventBackend>>;
    /// # Safety
    /// `src` is valid for `bytes` reads, `dst..dst+bytes` lies in one live allocation.
    unsafe fn copy_to_device(
        &self,
        dst: DevicePtr,
        src: *const u8,
        bytes: usize,
        stream: &dyn StreamBackend,
    ) -> Result<()>;
    /// # Safety
    /// `dst` is valid for `bytes` writes, `src..src+bytes` lies in one live allocation.
    unsafe fn copy_to_host(
        &self,
        dst: *mut u8,
        src: DevicePtr,
        bytes: usize,
        stream: &dyn StreamBackend,
    ) -> Result<()>;
    /// # Safety
    /// Both ranges lie in live allocations of this device.
    unsafe fn copy_on_device(
        &self,
        dst: DevicePtr,
        src: DevicePtr,
        bytes: usize,
        stream: &dyn StreamBackend,
    ) -> Result<()>;
    /// Write `count` copies of `pattern` starting at `dst`.
    ///
    /// # Safety
    /// `dst..dst+count*pattern.len()` lies in one live allocation.
    unsafe fn fill(
        &self,
        dst: DevicePtr,
        pattern: &[u8],
        count: usize,
        stream: &dyn StreamBackend,
    ) -> Result<()>;
    /// Load the part of `library` that runs on this device.
    fn load_module(&self, library: &'static KernelLibrary) -> Result<Arc<dyn ModuleBackend>>;
    /// Wait for all work on the device.
    fn synchronize(&self) -> Result<()>;
}

/// A loaded module: the kernels of one library for one device.
pub trait ModuleBackend: Send + Sync + Debug {
    /// Names of the kernels it holds.
    fn kernel_names(&self) -> Vec<String>;
    /// The kernel of that name, or `None`.
    fn function(&self, name: &str) -> Result<Option<Arc<dyn FunctionBackend>>>;
    /// The device address and size of the `__constant__`/`__device__` variable `decl` (or, where
    /// the build did not list it, the one whose symbol is `symbol`), or `None` when this module
    /// has none.
    fn global(
        &self,
        decl: Option<&'static crate::library::GlobalDecl>,
        symbol: &str,
    ) -> Result<Option<(DevicePtr, usize)>>;
}

/// How the backend itself sees a parameter (from the compiled code, exact), used to check a
/// launch's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamLayout {
    pub size: u32,
    pub is_pointer: bool,
    /// Alignment of the parameter's type in bytes; 0 when the backend cannot tell.
    pub align: u32,
}

/// One kernel of a loaded module.
pub trait FunctionBackend: Send + Sync + Debug {
    /// The parameter layout the compiled code has, when the backend can tell.
    fn param_layout(&self) -> Option<Vec<ParamLayout>>;
    /// Registers, shared and local memory, and the driver's occupancy for blocks of
    /// `block_threads` with `dynamic_shared` bytes, where the backend's driver reports them
    /// (nvidia); `None` elsewhere.
    fn resources(&self, _block_threads: u32, _dynamic_shared: u32) -> Option<DriverResources> {
        None
    }
    /// Launch; `args[i]` points to the value of argument `i` (like `hipModuleLaunchKernel`).
    ///
    /// # Safety
    /// The arguments match the kernel's parameters and every pointer argument addresses memory
    /// that stays alive until the launch completes.
    unsafe fn launch(
        &self,
        config: &LaunchConfig,
        args: &[*mut c_void],
        stream: &dyn StreamBackend,
    ) -> Result<()>;
}

/// A queue of work. The cpu backend runs everything synchronously on `launch`/copy.
pub trait StreamBackend: Send + Sync + Debug {
    fn synchronize(&self) -> Result<()>;
    fn as_any(&self) -> &dyn Any;
}

/// A point in a stream, for timing.
pub trait EventBackend: Send + Sync + Debug {
    fn record(&self, stream: &dyn StreamBackend) -> Result<()>;
    fn synchronize(&self) -> Result<()>;
    /// Milliseconds from `self` to `end` (both recorded).
    fn elapsed_ms(&self, end: &dyn EventBackend) -> Result<f32>;
    fn as_any(&self) -> &dyn Any;
}

/// Alignment of [`page_aligned_alloc`]'s memory: a page, as the drivers' own pinned allocations.
pub(crate) const HOST_PAGE: usize = 4096;

/// `bytes` (> 0) of host memory aligned to a page, from the global allocator; `backend` names who
/// asked, for the out-of-memory error.
pub(crate) fn page_aligned_alloc(bytes: usize, backend: Backend) -> Result<*mut u8> {
    let layout = std::alloc::Layout::from_size_align(bytes, HOST_PAGE).map_err(|_| {
        super::RuntimeError::SizeMismatch(format!("{bytes} bytes of host memory overflow"))
    })?;
    // Safety: the layout has a non-zero size (callers pass bytes > 0).
    let ptr = unsafe { std::alloc::alloc(layout) };
    if ptr.is_null() {
        return Err(super::RuntimeError::Api {
            backend,
            call: "alloc_host".into(),
            message: format!("out of host memory allocating {bytes} bytes"),
        });
    }
    Ok(ptr)
}

/// Free memory of [`page_aligned_alloc`].
///
/// # Safety
/// `ptr` came from `page_aligned_alloc(bytes, _)` and is not used afterwards.
pub(crate) unsafe fn page_aligned_free(ptr: *mut u8, bytes: usize) {
    // Safety: the same layout `page_aligned_alloc` made (it succeeded, so this one is valid).
    std::alloc::dealloc(
        ptr,
        std::alloc::Layout::from_size_align_unchecked(bytes, HOST_PAGE),
    );
}

/// The result of asking one backend for its devices.
pub(crate) type ProbeResult = std::result::Result<Vec<Arc<dyn DeviceBackend>>, String>;

/// Every backend in the order devices are listed (GPUs first so that `Device::default()` prefers
/// them). A backend not compiled into this version reports why.
pub(crate) fn probe_all() -> Vec<(Backend, ProbeResult)> {
    vec![
        (Backend::Amd, amd::probe()),
        (Backend::Nvidia, nvidia::probe()),
        (Backend::Cpu, cpu::probe()),
    ]
}
