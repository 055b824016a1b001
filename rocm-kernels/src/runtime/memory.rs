//! [`Buffer<T>`]: typed device memory.

use std::marker::PhantomData;

use super::backend::DevicePtr;
use super::{Device, Result, RuntimeError};

/// Types that can live in device memory and be copied to and from it byte for byte.
///
/// # Safety
/// Every bit pattern of `size_of::<T>()` bytes must be a valid `T` (device memory can hold
/// anything), and `T` must have no padding the kernel could observe as uninitialised. Implement it
/// for your `#[repr(C)]` structs of such fields.
pub unsafe trait DeviceCopy: Copy + Send + Sync + 'static {}

macro_rules! device_copy {
    ($($t:ty),*) => { $(unsafe impl DeviceCopy for $t {})* };
}
device_copy!(u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize, f32, f64);
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}
// HIP's `__half` and `__hip_bfloat16`: two bytes, every bit pattern a value (NaNs included).
#[cfg(feature = "half")]
device_copy!(half::f16, half::bf16);

/// `len` elements of `T` in the memory of one device. Dropping it frees the memory.
///
/// Copies (`upload`, `download`, `fill`, `copy_from`) complete before they return.
pub struct Buffer<T: DeviceCopy> {
    pub(crate) device: Device,
    /// Device address; kept in a field so a launch can point at it (`hipModuleLaunchKernel`
    /// takes pointers to argument values).
    pub(crate) ptr: DevicePtr,
    len: usize,
    _marker: PhantomData<T>,
}

impl<T: DeviceCopy> std::fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("type", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("device", &self.device.info().name)
            .finish()
    }
}

impl<T: DeviceCopy> Buffer<T> {
    pub(crate) fn alloc(device: &Device, len: usize) -> Result<Self> {
        let bytes = Self::bytes_for(len)?;
        // Zero-length buffers still get an address so kernels can be passed one.
        let ptr = device.inner.alloc(bytes.max(1))?;
        Ok(Buffer {
            device: device.clone(),
            ptr,
            len,
            _marker: PhantomData,
        })
    }

    fn bytes_for(len: usize) -> Result<usize> {
        len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            RuntimeError::SizeMismatch(format!(
                "{len} elements of {} overflow usize",
                std::any::type_name::<T>()
            ))
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

    /// The device whose memory holds it.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The device address (a host address on the cpu backend).
    pub fn device_ptr(&self) -> DevicePtr {
        self.ptr
    }

    fn check_len(&self, other: usize, what: &str) -> Result<()> {
        if other == self.len {
            Ok(())
        } else {
            Err(RuntimeError::SizeMismatch(format!(
                "{what}: buffer has {} elements, slice has {other}",
                self.len
            )))
        }
    }

    /// Copy `data` (exactly `len()` elements) into the buffer.
    pub fn upload(&mut self, data: &[T]) -> Result<()> {
        self.check_len(data.len(), "upload")?;
        if data.is_empty() {
            return Ok(());
        }
        let stream = self.device.inner.new_stream()?;
        // Safety: `data` is a live slice of exactly the buffer's size.
        unsafe {
            self.device.inner.copy_to_device(
                self.ptr,
                data.as_ptr().cast(),
                self.byte_len(),
                stream.as_ref(),
            )?;
        }
        stream.synchronize()
    }

    /// Copy the buffer into `out` (exactly `len()` elements).
    pub fn download(&self, out: &mut [T]) -> Result<()> {
        self.check_len(out.len(), "download")?;
        if out.is_empty() {
            return Ok(());
        }
        let stream = self.device.inner.new_stream()?;
        // Safety: `out` is a live slice of exactly the buffer's size; any bytes are a valid `T`.
        unsafe {
            self.device.inner.copy_to_host(
                out.as_mut_ptr().cast(),
                self.ptr,
                self.byte_len(),
                stream.as_ref(),
            )?;
        }
        stream.synchronize()
    }

    /// The buffer's contents as a `Vec`.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = Vec::with_capacity(self.len);
        // Safety: `DeviceCopy` types are valid for any bytes and `download` overwrites them all.
        unsafe {
            std::ptr::write_bytes(out.as_mut_ptr(), 0, self.len);
            out.set_len(self.len);
        }
        self.download(&mut out)?;
        Ok(out)
    }

    /// Set every element to `value`.
    pub fn fill(&mut self, value: T) -> Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        // Safety: a `DeviceCopy` value is plain bytes.
        let pattern = unsafe {
            std::slice::from_raw_parts((&value as *const T).cast::<u8>(), std::mem::size_of::<T>())
        };
        let stream = self.device.inner.new_stream()?;
        unsafe {
            self.device
                .inner
                .fill(self.ptr, pattern, self.len, stream.as_ref())?;
        }
        stream.synchronize()
    }

    /// Copy all of `other` (same device, same length) into this buffer.
    pub fn copy_from(&mut self, other: &Buffer<T>) -> Result<()> {
        self.device.check_same(&other.device)?;
        self.check_len(other.len, "copy_from")?;
        if self.len == 0 {
            return Ok(());
        }
        let stream = self.device.inner.new_stream()?;
        unsafe {
            self.device.inner.copy_on_device(
                self.ptr,
                other.ptr,
                self.byte_len(),
                stream.as_ref(),
            )?;
        }
        stream.synchronize()
    }
}

impl<T: DeviceCopy> Drop for Buffer<T> {
    fn drop(&mut self) {
        // Safety: allocated by `alloc` with this size; the buffer is gone after this.
        unsafe { self.device.inner.free(self.ptr, self.byte_len().max(1)) }
    }
}
