//! HIP's vector types (`float4`, `int2`, `uchar4`, ...) on the Rust side, with HIP's layout and
//! alignment (2-element vectors aligned to their size, 4-element ones to `min(size, 16)`, 3-element
//! ones to their element), so a `Buffer<Float4>` holds what a `float4*` parameter reads and a
//! `Float2` passed by value is what a `float2` parameter receives.
//!
//! ```
//! use rocm_kernels::vector::{Float4, HipVector};
//! let v = Float4::new(1.0, 2.0, 3.0, 4.0);
//! assert_eq!(v.to_array(), [1.0, 2.0, 3.0, 4.0]);
//! assert_eq!(std::mem::align_of::<Float4>(), 16);
//! assert_eq!(Float4::C_NAME, "float4");
//! ```

use std::ffi::c_void;

use crate::runtime::{ArgKind, DeviceCopy, KernelArg};

/// What every vector type here offers: its element type, lane count, C name and array views.
pub trait HipVector: DeviceCopy + Default + PartialEq + std::fmt::Debug {
    /// The element type (`f32` for `Float4`).
    type Elem: Copy;
    /// The number of components (2, 3 or 4).
    const LANES: usize;
    /// HIP's name for the type (`float4`).
    const C_NAME: &'static str;
    /// The components, `x` first.
    fn to_vec(self) -> Vec<Self::Elem>;
    /// From components, `x` first (`lanes` of them; missing ones are the default).
    fn from_slice(c: &[Self::Elem]) -> Self;
}

macro_rules! vector {
    ($name:ident, $c:literal, $t:ty, $align:literal, [$($f:ident),+], $n:literal) => {
        #[doc = concat!("HIP's `", $c, "`.")]
        #[repr(C, align($align))]
        #[derive(Debug, Clone, Copy, PartialEq, Default)]
        pub struct $name {
            $(
                #[doc = concat!("Component `", stringify!($f), "`, as in HIP's `", $c, "`.")]
                pub $f: $t,
            )+
        }

        impl $name {
            #[doc = concat!("A `", $c, "` from its components (`make_", $c, "`).")]
            pub const fn new($($f: $t),+) -> Self {
                $name { $($f),+ }
            }
            /// The components, `x` first.
            pub const fn to_array(self) -> [$t; $n] {
                [$(self.$f),+]
            }
            /// From components, `x` first.
            pub const fn from_array(a: [$t; $n]) -> Self {
                let [$($f),+] = a;
                $name { $($f),+ }
            }
        }

        // Safety: a repr(C) struct of numbers whose size is a multiple of its alignment, so it
        // has no padding, and every bit pattern is valid.
        unsafe impl DeviceCopy for $name {}

        impl HipVector for $name {
            type Elem = $t;
            const LANES: usize = $n;
            const C_NAME: &'static str = $c;
            fn to_vec(self) -> Vec<$t> {
                self.to_array().to_vec()
            }
            fn from_slice(c: &[$t]) -> Self {
                let mut a = [<$t>::default(); $n];
                for (d, s) in a.iter_mut().zip(c) {
                    *d = *s;
                }
                Self::from_array(a)
            }
        }

        // Safety: the value itself is what the kernel parameter holds.
        unsafe impl KernelArg for $name {
            fn arg_ptr(&self) -> *const c_void {
                (self as *const $name).cast()
            }
            fn arg_size(&self) -> usize {
                std::mem::size_of::<$name>()
            }
            fn arg_kind(&self) -> ArgKind {
                ArgKind::Value
            }
            fn arg_align(&self) -> usize {
                std::mem::align_of::<$name>()
            }
            fn arg_type(&self) -> String {
                $c.to_string()
            }
        }
    };
}

// `align(...)` takes a literal only, hence the spelled-out alignments.
macro_rules! vector_set {
    ($t:ty, $a2:literal, $a3:literal, $a4:literal: $n2:ident $c2:literal, $n3:ident $c3:literal, $n4:ident $c4:literal) => {
        vector!($n2, $c2, $t, $a2, [x, y], 2);
        vector!($n3, $c3, $t, $a3, [x, y, z], 3);
        vector!($n4, $c4, $t, $a4, [x, y, z, w], 4);
    };
}

vector_set!(i8, 2, 1, 4: Char2 "char2", Char3 "char3", Char4 "char4");
vector_set!(u8, 2, 1, 4: UChar2 "uchar2", UChar3 "uchar3", UChar4 "uchar4");
vector_set!(i16, 4, 2, 8: Short2 "short2", Short3 "short3", Short4 "short4");
vector_set!(u16, 4, 2, 8: UShort2 "ushort2", UShort3 "ushort3", UShort4 "ushort4");
vector_set!(i32, 8, 4, 16: Int2 "int2", Int3 "int3", Int4 "int4");
vector_set!(u32, 8, 4, 16: UInt2 "uint2", UInt3 "uint3", UInt4 "uint4");
vector_set!(i64, 16, 8, 16: Long2 "long2", Long3 "long3", Long4 "long4");
vector_set!(u64, 16, 8, 16: ULong2 "ulong2", ULong3 "ulong3", ULong4 "ulong4");
vector_set!(f32, 8, 4, 16: Float2 "float2", Float3 "float3", Float4 "float4");
vector_set!(f64, 16, 8, 16: Double2 "double2", Double3 "double3", Double4 "double4");

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, size_of};

    #[test]
    fn layouts_are_hips() {
        assert_eq!((size_of::<Float2>(), align_of::<Float2>()), (8, 8));
        assert_eq!((size_of::<Float3>(), align_of::<Float3>()), (12, 4));
        assert_eq!((size_of::<Float4>(), align_of::<Float4>()), (16, 16));
        assert_eq!((size_of::<Double4>(), align_of::<Double4>()), (32, 16));
        assert_eq!((size_of::<UChar4>(), align_of::<UChar4>()), (4, 4));
        assert_eq!((size_of::<Short3>(), align_of::<Short3>()), (6, 2));
        assert_eq!(Int2::from_slice(&[7]).to_array(), [7, 0]);
    }

    /// Every type's size and alignment is what the cpu backend's C++ header makes of it
    /// (`cpu-runtime/abi_layout.cpp` lists them).
    #[test]
    fn the_cpp_header_agrees() {
        let cpp = crate::runtime::backend::cpu::ffi::tests::cpp_facts();
        macro_rules! check {
            ($($t:ty),*) => {$(
                let c = <$t as HipVector>::C_NAME;
                assert_eq!(cpp[&format!("sizeof({c})")], size_of::<$t>() as u64, "{c}");
                assert_eq!(cpp[&format!("alignof({c})")], align_of::<$t>() as u64, "{c}");
            )*};
        }
        check!(
            Char2, Char3, Char4, UChar2, UChar3, UChar4, Short2, Short3, Short4, UShort2, UShort3,
            UShort4, Int2, Int3, Int4, UInt2, UInt3, UInt4, Long2, Long3, Long4, ULong2, ULong3,
            ULong4, Float2, Float3, Float4, Double2, Double3, Double4
        );
    }
}
