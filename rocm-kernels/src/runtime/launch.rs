//! Launch configuration and typed arguments.

use std::ffi::c_void;
use std::marker::PhantomData;

use smallvec::SmallVec;

use super::launch_log::Work;
use super::{Buffer, DeviceCopy, Kernel, Result, Stream};

/// Three extents, as HIP's `dim3`. Converts from `u32`, `(u32, u32)` and `(u32, u32, u32)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// Extent along x (the fastest-varying dimension).
    pub x: u32,
    /// Extent along y.
    pub y: u32,
    /// Extent along z.
    pub z: u32,
}

impl Dim3 {
    /// `dim3(x, y, z)`, usable in constants.
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }

    /// `x * y * z`, widened so it cannot overflow.
    pub fn count(&self) -> u64 {
        u64::from(self.x) * u64::from(self.y) * u64::from(self.z)
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3::new(x, 1, 1)
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3::new(x, y, 1)
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3::new(x, y, z)
    }
}

impl std::fmt::Display for Dim3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({}, {}, {})", self.x, self.y, self.z)
    }
}

/// Grid, block and dynamic shared memory of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid (`gridDim`).
    pub grid: Dim3,
    /// Threads in a block (`blockDim`).
    pub block: Dim3,
    /// Bytes of dynamic shared memory (`extern __shared__`) per block.
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// A fixed grid and block.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        LaunchConfig {
            grid: grid.into(),
            block: block.into(),
            shared_bytes: 0,
        }
    }

    /// One thread per element: blocks of `block` threads, as many as cover `n` (at least one).
    ///
    /// ```
    /// use rocm_kernels::runtime::LaunchConfig;
    /// let l = LaunchConfig::cover(1000, 256);
    /// assert_eq!((l.grid.x, l.block.x), (4, 256));
    /// ```
    pub fn cover(n: usize, block: u32) -> Self {
        let block = block.max(1);
        let blocks = n.div_ceil(block as usize).max(1);
        LaunchConfig::new(u32::try_from(blocks).unwrap_or(u32::MAX), block)
    }

    /// A 2-D version of [`LaunchConfig::cover`]: `(nx, ny)` elements in `(bx, by)` blocks.
    pub fn cover_2d((nx, ny): (usize, usize), (bx, by): (u32, u32)) -> Self {
        let gx = nx.div_ceil(bx.max(1) as usize).max(1);
        let gy = ny.div_ceil(by.max(1) as usize).max(1);
        LaunchConfig::new(
            (
                u32::try_from(gx).unwrap_or(u32::MAX),
                u32::try_from(gy).unwrap_or(u32::MAX),
            ),
            (bx, by),
        )
    }

    /// Dynamic shared memory per block, in bytes.
    pub fn shared_bytes(mut self, bytes: u32) -> Self {
        self.shared_bytes = bytes;
        self
    }
}

impl std::fmt::Display for LaunchConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "grid {} block {}", self.grid, self.block)?;
        if self.shared_bytes > 0 {
            write!(f, " shared {} B", self.shared_bytes)?;
        }
        Ok(())
    }
}

/// How an argument is passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// A device address (a [`Buffer`]).
    Pointer,
    /// A value copied into the kernel's parameter.
    Value,
}

/// Something that can be passed to a kernel parameter.
///
/// # Safety
/// `arg_ptr` points to `arg_size` readable bytes that are exactly what the kernel parameter
/// holds (a device address for `Pointer`), valid while `self` is borrowed.
pub unsafe trait KernelArg {
    /// The address of the bytes the kernel parameter receives.
    fn arg_ptr(&self) -> *const c_void;
    /// How many bytes [`KernelArg::arg_ptr`] points to (checked against the parameter's size where
    /// it is known).
    fn arg_size(&self) -> usize;
    /// Whether it is a device pointer or a value copied in.
    fn arg_kind(&self) -> ArgKind;
    /// Alignment of the value in bytes (checked against the parameter's where it is known).
    fn arg_align(&self) -> usize {
        1
    }
    /// For error messages: `f32`, `Buffer<f32>`.
    fn arg_type(&self) -> String;
    /// The device a pointer argument lives on, when known (checked at launch).
    fn arg_device(&self) -> Option<&super::Device> {
        None
    }
}

macro_rules! value_arg {
    ($($t:ty),*) => {$(
        unsafe impl KernelArg for $t {
            fn arg_ptr(&self) -> *const c_void { (self as *const $t).cast() }
            fn arg_size(&self) -> usize { std::mem::size_of::<$t>() }
            fn arg_kind(&self) -> ArgKind { ArgKind::Value }
            fn arg_align(&self) -> usize { std::mem::align_of::<$t>() }
            fn arg_type(&self) -> String { stringify!($t).to_string() }
        }
    )*};
}
value_arg!(u8, i8, u16, i16, u32, i32, u64, i64, usize, isize, f32, f64);
// HIP's `__half` and `__hip_bfloat16` by value (`.arg(&bf16::from_f32(0.5))`).
#[cfg(feature = "half")]
value_arg!(half::f16, half::bf16);

/// A by-value argument of any [`DeviceCopy`] type (a `#[repr(C)]` struct, an array).
#[derive(Debug, Clone, Copy)]
pub struct ByValue<T: DeviceCopy>(pub T);

unsafe impl<T: DeviceCopy> KernelArg for ByValue<T> {
    fn arg_ptr(&self) -> *const c_void {
        (&self.0 as *const T).cast()
    }
    fn arg_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
    fn arg_kind(&self) -> ArgKind {
        ArgKind::Value
    }
    fn arg_align(&self) -> usize {
        std::mem::align_of::<T>()
    }
    fn arg_type(&self) -> String {
        std::any::type_name::<T>().to_string()
    }
}

unsafe impl<T: DeviceCopy> KernelArg for Buffer<T> {
    fn arg_ptr(&self) -> *const c_void {
        (&self.ptr as *const u64).cast()
    }
    fn arg_size(&self) -> usize {
        std::mem::size_of::<u64>()
    }
    fn arg_kind(&self) -> ArgKind {
        ArgKind::Pointer
    }
    fn arg_align(&self) -> usize {
        8
    }
    fn arg_type(&self) -> String {
        format!("Buffer<{}>", std::any::type_name::<T>())
    }
    fn arg_device(&self) -> Option<&super::Device> {
        Some(&self.device)
    }
}

/// One argument as collected by a [`LaunchBuilder`] (opaque): what the launch copies, and the
/// argument itself, asked for its type name and device only when a check needs them (a launch
/// that passes its checks allocates nothing for its arguments: `gpu-small-kernels` is bound by
/// this path).
#[derive(Clone, Copy)]
pub struct ArgRef<'a> {
    pub(crate) ptr: *const c_void,
    pub(crate) size: usize,
    pub(crate) kind: ArgKind,
    pub(crate) align: usize,
    pub(crate) arg: &'a dyn KernelArg,
}

impl ArgRef<'_> {
    /// For error messages: `f32`, `Buffer<f32>`.
    pub(crate) fn type_name(&self) -> String {
        self.arg.arg_type()
    }

    /// The device a pointer argument lives on, when known.
    pub(crate) fn device(&self) -> Option<&super::Device> {
        self.arg.arg_device()
    }
}

impl std::fmt::Debug for ArgRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgRef")
            .field("type", &self.type_name())
            .field("size", &self.size)
            .field("kind", &self.kind)
            .field("align", &self.align)
            .finish()
    }
}

/// What [`LaunchBuilder::arg`] accepts: a shared reference to any [`KernelArg`], or a mutable
/// reference to a [`Buffer`] (to say, at the call site, that the kernel writes it).
pub trait PushArg<'a> {
    #[doc(hidden)]
    fn to_arg_ref(self) -> ArgRef<'a>;
}

fn arg_ref<A: KernelArg>(arg: &A) -> ArgRef<'_> {
    ArgRef {
        ptr: arg.arg_ptr(),
        size: arg.arg_size(),
        kind: arg.arg_kind(),
        align: arg.arg_align(),
        arg,
    }
}

impl<'a, A: KernelArg> PushArg<'a> for &'a A {
    fn to_arg_ref(self) -> ArgRef<'a> {
        arg_ref(self)
    }
}

impl<'a, T: DeviceCopy> PushArg<'a> for &'a mut Buffer<T> {
    fn to_arg_ref(self) -> ArgRef<'a> {
        arg_ref(&*self)
    }
}

/// Arguments of one launch, kept inline up to this many (kernels with more spill to the heap).
pub(crate) const INLINE_ARGS: usize = 16;

/// Collects the arguments of one launch: `kernel.launch(cfg).arg(&x).arg(&n).run(&stream)`.
///
/// Arguments are borrowed until `run` returns, so buffers cannot be freed under a running kernel.
#[must_use = "a launch does nothing until `run` is called"]
pub struct LaunchBuilder<'a> {
    pub(crate) kernel: &'a Kernel,
    pub(crate) config: LaunchConfig,
    pub(crate) args: SmallVec<[ArgRef<'a>; INLINE_ARGS]>,
    work: Work,
    _borrows: PhantomData<&'a ()>,
}

impl<'a> LaunchBuilder<'a> {
    pub(crate) fn new(kernel: &'a Kernel, config: LaunchConfig) -> Self {
        LaunchBuilder {
            kernel,
            config,
            args: SmallVec::new(),
            work: Work::default(),
            _borrows: PhantomData,
        }
    }

    /// Append an argument: `&buffer` or `&mut buffer` (a [`Buffer`] the kernel reads or
    /// writes), `&scalar`, or `&ByValue(x)`.
    pub fn arg<A: PushArg<'a>>(mut self, arg: A) -> Self {
        self.args.push(arg.to_arg_ref());
        self
    }

    /// Declare the bytes this launch moves (reads plus writes), so `cargo rocm profile` can
    /// report achieved bandwidth. Only recorded when profiling (`ROCM_LAUNCH_LOG`); it changes
    /// nothing else.
    ///
    /// ```no_run
    /// # use rocm_kernels::runtime::*;
    /// # fn f(k: &Kernel, x: &Buffer<f32>, y: &mut Buffer<f32>, s: &Stream, n: usize) -> Result<()> {
    /// k.launch(LaunchConfig::cover(n, 256))
    ///     .arg(&2.0f32).arg(x).arg(y)
    ///     .bytes(3 * 4 * n as u64) // x read, y read and written
    ///     .flops(2 * n as u64)     // one multiply-add per element
    ///     .run(s)
    /// # }
    /// ```
    pub fn bytes(mut self, bytes: u64) -> Self {
        self.work.bytes = Some(bytes);
        self
    }

    /// Declare the floating-point operations this launch performs (a fused multiply-add counts
    /// two), so `cargo rocm profile` can report the achieved FLOP rate. Only recorded when
    /// profiling, like [`LaunchBuilder::bytes`].
    pub fn flops(mut self, flops: u64) -> Self {
        self.work.flops = Some(flops);
        self
    }

    /// Check the arguments against the kernel's parameters and launch on `stream`.
    ///
    /// # Trust boundary
    ///
    /// `run` is safe to call, unlike cudarc's `launch` (an `unsafe fn`), because what it cannot
    /// check it takes from the kernel library, which this crate trusts as it trusts its own code:
    /// the parameter list recorded by the build (`rocm-kernels-build`: the kernel's declaration
    /// as the cpu front end read it, else the AMD code object's metadata), embedded with
    /// [`include_kernels!`](crate::include_kernels). That list must match what the compiled
    /// kernel reads; a library assembled by hand, or a kernel that reads memory its arguments do
    /// not reach (an index out of bounds, a pointer it made up), is outside what `run` can make
    /// safe, as it is for any GPU API.
    ///
    /// What `run` checks before anything is launched, each failure an error rather than a launch:
    /// * the stream and every buffer argument belong to the kernel's device;
    /// * the grid and block have no zero extent;
    /// * where the parameter list is known (on `cpu` the compiled entry's own layout, on `amd`
    ///   and `nvidia` the build's): the number of arguments, pointer parameters given a [`Buffer`] and by-value
    ///   ones a value, each argument's size (where the build recorded one) and a by-value
    ///   argument's alignment (where the compiled code reports one). With no list recorded (a
    ///   kernel the build found no parameters for), the arguments are passed as given.
    ///
    /// What it guarantees on the Rust side: every argument stays borrowed until `run` returns,
    /// so no buffer can be freed or moved under the launch; by-value arguments are copied into
    /// 16-byte-aligned storage. GPU launches are asynchronous: a kernel's faults are reported by
    /// a later call on the stream (synchronize, a copy), naming the kernel; the cpu backend runs
    /// the kernel to its end here and, in its checked mode ([`CpuOptions::checked`]), reports
    /// out-of-bounds accesses as errors.
    ///
    /// [`CpuOptions::checked`]: super::CpuOptions::checked
    pub fn run(self, stream: &Stream) -> Result<()> {
        self.kernel
            .launch_checked(&self.config, &self.args, self.work, stream)
    }
}
