//! By-value arguments of any `#[repr(C)]` type (a struct of parameters): kept as bytes with the
//! type's size, alignment and identity, passed to the kernel as they are, and read back by the
//! reference as the same type.

use std::any::TypeId;
use std::ffi::c_void;
use std::fmt;

use rocm_kernels::runtime::{ArgKind, DeviceCopy, KernelArg};

/// A by-value argument's bytes (see [`Check::by_value`](crate::Check::by_value)).
#[derive(Clone)]
pub struct RawValue {
    /// 16-byte-aligned storage (a kernel parameter never needs more).
    words: Vec<u128>,
    size: usize,
    align: usize,
    type_name: &'static str,
    type_id: TypeId,
    debug: String,
}

impl RawValue {
    /// The bytes of `value`.
    pub fn of<T: DeviceCopy + fmt::Debug>(value: &T) -> RawValue {
        let size = std::mem::size_of::<T>();
        let mut words = vec![0u128; size.div_ceil(16).max(1)];
        // Safety: `T: DeviceCopy` is plain data; the storage holds at least `size` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (value as *const T).cast::<u8>(),
                words.as_mut_ptr().cast::<u8>(),
                size,
            )
        };
        RawValue {
            words,
            size,
            align: std::mem::align_of::<T>(),
            type_name: std::any::type_name::<T>(),
            type_id: TypeId::of::<T>(),
            debug: format!("{value:?}"),
        }
    }

    /// The value back as `T`, or `None` when it is another type.
    pub fn get<T: DeviceCopy>(&self) -> Option<T> {
        (self.type_id == TypeId::of::<T>()).then(|| {
            // Safety: the bytes were copied from a `T`, and the storage is aligned to 16.
            unsafe { std::ptr::read(self.words.as_ptr().cast::<T>()) }
        })
    }

    /// The value's size in bytes (`size_of` of its type).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Its type's alignment in bytes (`align_of`), kept when the value is passed to a kernel.
    pub fn align(&self) -> usize {
        self.align
    }

    /// The Rust type's name (`my_crate::Params`).
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }
}

impl fmt::Debug for RawValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.debug)
    }
}

// Safety: `arg_ptr` points to `size` bytes that are the value, alive while `self` is borrowed.
unsafe impl KernelArg for RawValue {
    fn arg_ptr(&self) -> *const c_void {
        self.words.as_ptr().cast()
    }
    fn arg_size(&self) -> usize {
        self.size
    }
    fn arg_kind(&self) -> ArgKind {
        ArgKind::Value
    }
    fn arg_align(&self) -> usize {
        self.align
    }
    fn arg_type(&self) -> String {
        self.type_name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    #[repr(C)]
    struct Params {
        n: i32,
        scale: f32,
        offset: f64,
    }
    unsafe impl DeviceCopy for Params {}

    #[test]
    fn round_trip_keeps_type_size_and_alignment() {
        let p = Params {
            n: 3,
            scale: 2.0,
            offset: -1.5,
        };
        let raw = RawValue::of(&p);
        assert_eq!((raw.size(), raw.align()), (16, 8));
        assert_eq!(raw.get::<Params>(), Some(p));
        assert_eq!(raw.get::<u64>(), None);
        assert!(raw.type_name().ends_with("Params"));
        assert_eq!(format!("{raw:?}"), format!("{p:?}"));
    }
}
