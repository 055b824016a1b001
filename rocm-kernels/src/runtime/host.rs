//! [`HostBuffer<T>`]: page-locked (pinned) host memory.

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use super::{Device, DeviceCopy, Result, RuntimeError};

/// `len` elements of `T` in page-locked (pinned) host memory, allocated for one device
/// (`hipHostMalloc` on amd; host memory pinned with `cuMemHostRegister` on nvidia; plain
/// page-aligned memory on cpu). It derefs to `[T]`, so [`Buffer::upload`](super::Buffer::upload)
/// and [`Buffer::download`](super::Buffer::download) take it as they take a `Vec`; copies from and
/// to pinned memory go straight to the device by DMA, where pageable memory is staged through a
/// bounce buffer by the driver (`cuda-memcpy` of gpu-benches measures both).
///
/// Contents start zeroed. Dropping it frees the memory. Pinned memory is a scarce resource of the
/// operating system: allocate it once and reuse it, as one would a staging buffer.
///
/// ```
/// use rocm_kernels::runtime::{CpuOptions, Device};
/// # fn main() -> Result<(), rocm_kernels::runtime::RuntimeError> {
/// let device = Device::cpu(CpuOptions::default());
/// let mut host = device.alloc_host::<f32>(1024)?;
/// host.fill(2.0);
/// let mut buffer = device.alloc::<f32>(1024)?;
/// buffer.upload(&host)?;
/// host.fill(0.0);
/// buffer.download(&mut host)?;
/// assert!(host.iter().all(|&x| x == 2.0));
/// # Ok(()) }
/// ```
pub struct HostBuffer<T: DeviceCopy> {
    device: Device,
    /// Dangling (and never freed) when the buffer holds no bytes.
    ptr: NonNull<T>,
    len: usize,
    _marker: PhantomData<T>,
}

// Safety: the buffer owns its memory like a `Box<[T]>`, and `DeviceCopy` types are Send + Sync.
unsafe impl<T: DeviceCopy> Send for HostBuffer<T> {}
// Safety: as above; shared access only reads.
unsafe impl<T: DeviceCopy> Sync for HostBuffer<T> {}

impl<T: DeviceCopy> std::fmt::Debug for HostBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuffer")
            .field("type", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("ptr", &self.ptr)
            .field("device", &self.device.info().name)
            .finish()
    }
}

impl<T: DeviceCopy> HostBuffer<T> {
    pub(crate) fn alloc(device: &Device, len: usize) -> Result<Self> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            RuntimeError::SizeMismatch(format!(
                "{len} elements of {} overflow usize",
                std::any::type_name::<T>()
            ))
        })?;
        let ptr = if bytes == 0 {
            NonNull::dangling()
        } else {
            let raw = device.inner.alloc_host(bytes)?;
            if raw.is_null() || !(raw as usize).is_multiple_of(std::mem::align_of::<T>()) {
                return Err(RuntimeError::Api {
                    backend: device.backend(),
                    call: "alloc_host".into(),
                    message: format!(
                        "the driver returned {raw:p} for {bytes} bytes of pinned memory, not \
                         aligned for {}",
                        std::any::type_name::<T>()
                    ),
                });
            }
            // Safety: `raw` is valid for `bytes` writes; zero bytes are a valid `T`.
            unsafe { std::ptr::write_bytes(raw, 0, bytes) };
            // Safety: checked non-null above.
            unsafe { NonNull::new_unchecked(raw.cast::<T>()) }
        };
        Ok(HostBuffer {
            device: device.clone(),
            ptr,
            len,
            _marker: PhantomData,
        })
    }

    /// Elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn byte_len(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The device it was allocated for.
    pub fn device(&self) -> &Device {
        &self.device
    }
}

impl<T: DeviceCopy> Deref for HostBuffer<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // Safety: `len` initialised elements (zeroed at allocation), or a dangling pointer with
        // length 0; the memory lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: DeviceCopy> DerefMut for HostBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // Safety: as in `deref`, and `&mut self` is unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: DeviceCopy> AsRef<[T]> for HostBuffer<T> {
    fn as_ref(&self) -> &[T] {
        self
    }
}

impl<T: DeviceCopy> AsMut<[T]> for HostBuffer<T> {
    fn as_mut(&mut self) -> &mut [T] {
        self
    }
}

impl<T: DeviceCopy> Drop for HostBuffer<T> {
    fn drop(&mut self) {
        let bytes = self.byte_len();
        if bytes > 0 {
            // Safety: allocated by `alloc_host` with this size on this device; gone after this.
            unsafe { self.device.inner.free_host(self.ptr.as_ptr().cast(), bytes) }
        }
    }
}
