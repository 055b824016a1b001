//! Element types a kernel argument can have, and type-erased host data (`HostBuf`, `ScalarValue`)
//! so one check can mix `f32` buffers, `i32` sizes and `u64` seeds.

use std::fmt;

/// The element type of a buffer or scalar, as the kernel sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElemType {
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
}

impl ElemType {
    /// The Rust name (`f32`), used in reports.
    pub fn name(self) -> &'static str {
        match self {
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
            ElemType::I8 => "i8",
            ElemType::I16 => "i16",
            ElemType::I32 => "i32",
            ElemType::I64 => "i64",
            ElemType::U8 => "u8",
            ElemType::U16 => "u16",
            ElemType::U32 => "u32",
            ElemType::U64 => "u64",
        }
    }

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            ElemType::I8 | ElemType::U8 => 1,
            ElemType::I16 | ElemType::U16 => 2,
            ElemType::F32 | ElemType::I32 | ElemType::U32 => 4,
            ElemType::F64 | ElemType::I64 | ElemType::U64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, ElemType::F32 | ElemType::F64)
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The result of comparing one element with its expected value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ElemVerdict {
    pub pass: bool,
    /// |got − want| (infinite when exactly one side is NaN or the sides are different infinities).
    pub abs_err: f64,
    /// abs_err / |want| (infinite when want is 0 and got is not).
    pub rel_err: f64,
}

mod sealed {
    pub trait Sealed {}
}

/// A type that can be a kernel buffer element or by-value argument.
///
/// Implemented for `f32`, `f64`, `i8`–`i64` and `u8`–`u64`.
pub trait Element:
    Copy + fmt::Debug + PartialEq + Default + Send + Sync + 'static + sealed::Sealed
{
    /// The tag of this type.
    const TYPE: ElemType;
    /// The value written into output buffers before each launch, so an element the kernel never
    /// writes cannot pass: a NaN with a recognisable payload for floats, `0xABAB…` for integers.
    fn poison() -> Self;
    /// Whether `self` is bit-for-bit the poison value.
    fn is_poison(self) -> bool;
    /// Compare `got` with `want` under `tol`.
    fn verdict(got: Self, want: Self, tol: &crate::Tolerance) -> ElemVerdict;
    #[doc(hidden)]
    fn wrap_vec(v: Vec<Self>) -> HostBuf;
    #[doc(hidden)]
    fn slice(buf: &HostBuf) -> Option<&[Self]>;
    #[doc(hidden)]
    fn slice_mut(buf: &mut HostBuf) -> Option<&mut [Self]>;
    #[doc(hidden)]
    fn wrap_scalar(self) -> ScalarValue;
    #[doc(hidden)]
    fn unwrap_scalar(v: &ScalarValue) -> Option<Self>;
    #[doc(hidden)]
    fn from_usize(n: usize) -> Option<Self>;
}

macro_rules! elements {
    ($($t:ident $variant:ident $kind:ident $poison:expr;)*) => {
        /// A host buffer of any [`Element`] type.
        #[derive(Clone, PartialEq)]
        pub enum HostBuf {
            $($variant(Vec<$t>),)*
        }

        /// A by-value argument of any [`Element`] type.
        #[derive(Clone, Copy, PartialEq)]
        pub enum ScalarValue {
            $($variant($t),)*
        }

        impl HostBuf {
            pub fn elem_type(&self) -> ElemType {
                match self { $(HostBuf::$variant(_) => ElemType::$variant,)* }
            }
            pub fn len(&self) -> usize {
                match self { $(HostBuf::$variant(v) => v.len(),)* }
            }
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
            /// A buffer of `len` zeros.
            pub fn zeros(ty: ElemType, len: usize) -> HostBuf {
                match ty { $(ElemType::$variant => HostBuf::$variant(vec![<$t>::default(); len]),)* }
            }
            /// A buffer of `len` poison values (see [`Element::poison`]).
            pub fn poisoned(ty: ElemType, len: usize) -> HostBuf {
                match ty { $(ElemType::$variant => HostBuf::$variant(vec![<$t as Element>::poison(); len]),)* }
            }
            /// Overwrite every element with the poison value.
            pub fn poison(&mut self) {
                match self { $(HostBuf::$variant(v) => v.fill(<$t as Element>::poison()),)* }
            }
            /// Raw bytes in native byte order (what a device upload copies).
            pub fn as_bytes(&self) -> &[u8] {
                match self {
                    $(HostBuf::$variant(v) => {
                        // Safety: plain-old-data numbers; any bit pattern is a valid u8.
                        unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v.as_slice())) }
                    })*
                }
            }
            /// Raw bytes, writable (what a device download fills).
            pub fn as_bytes_mut(&mut self) -> &mut [u8] {
                match self {
                    $(HostBuf::$variant(v) => {
                        // Safety: every bit pattern is a valid value of these number types.
                        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v.as_slice())) }
                    })*
                }
            }
            pub(crate) fn fmt_elem(&self, i: usize) -> String {
                match self { $(HostBuf::$variant(v) => format!("{:?}", v[i]),)* }
            }
            pub(crate) fn is_poison_at(&self, i: usize) -> bool {
                match self { $(HostBuf::$variant(v) => v[i].is_poison(),)* }
            }
            /// Compare every element of `self` (got) with `want`.
            pub(crate) fn verdicts(&self, want: &HostBuf, tol: &crate::Tolerance) -> Vec<ElemVerdict> {
                match (self, want) {
                    $((HostBuf::$variant(g), HostBuf::$variant(w)) => {
                        g.iter().zip(w).map(|(g, w)| <$t as Element>::verdict(*g, *w, tol)).collect()
                    })*
                    _ => panic!("compared buffers of different element types"),
                }
            }
        }

        impl ScalarValue {
            pub fn elem_type(&self) -> ElemType {
                match self { $(ScalarValue::$variant(_) => ElemType::$variant,)* }
            }
            /// Raw bytes in native byte order, as the kernel argument is passed.
            pub fn to_bytes(&self) -> Vec<u8> {
                match self { $(ScalarValue::$variant(v) => v.to_ne_bytes().to_vec(),)* }
            }
        }

        impl fmt::Debug for ScalarValue {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self { $(ScalarValue::$variant(v) => write!(f, "{v:?}{}", stringify!($t)),)* }
            }
        }

        $(
            impl sealed::Sealed for $t {}
            impl Element for $t {
                const TYPE: ElemType = ElemType::$variant;
                fn poison() -> Self { $poison }
                fn is_poison(self) -> bool { self.to_ne_bytes() == Self::poison().to_ne_bytes() }
                fn verdict(got: Self, want: Self, tol: &crate::Tolerance) -> ElemVerdict {
                    elements!(@verdict $kind got want tol)
                }
                fn wrap_vec(v: Vec<Self>) -> HostBuf { HostBuf::$variant(v) }
                fn slice(buf: &HostBuf) -> Option<&[Self]> {
                    match buf { HostBuf::$variant(v) => Some(v), #[allow(unreachable_patterns)] _ => None }
                }
                fn slice_mut(buf: &mut HostBuf) -> Option<&mut [Self]> {
                    match buf { HostBuf::$variant(v) => Some(v), #[allow(unreachable_patterns)] _ => None }
                }
                fn wrap_scalar(self) -> ScalarValue { ScalarValue::$variant(self) }
                fn unwrap_scalar(v: &ScalarValue) -> Option<Self> {
                    match v { ScalarValue::$variant(x) => Some(*x), #[allow(unreachable_patterns)] _ => None }
                }
                fn from_usize(n: usize) -> Option<Self> {
                    elements!(@from_usize $kind $t n)
                }
            }
        )*
    };
    (@verdict float $got:ident $want:ident $tol:ident) => {
        crate::tolerance::float_verdict($got, $want, $tol)
    };
    (@verdict int $got:ident $want:ident $tol:ident) => {
        crate::tolerance::int_verdict($got as i128, $want as i128, $tol)
    };
    (@from_usize float $t:ident $n:ident) => { Some($n as $t) };
    (@from_usize int $t:ident $n:ident) => { <$t>::try_from($n).ok() };
}

elements! {
    f32 F32 float f32::from_bits(0x7FC0_0BAD);
    f64 F64 float f64::from_bits(0x7FF8_0000_0BAD_0BAD);
    i8 I8 int 0xABu8 as i8;
    i16 I16 int 0xABABu16 as i16;
    i32 I32 int 0xABAB_ABABu32 as i32;
    i64 I64 int 0xABAB_ABAB_ABAB_ABABu64 as i64;
    u8 U8 int 0xAB;
    u16 U16 int 0xABAB;
    u32 U32 int 0xABAB_ABAB;
    u64 U64 int 0xABAB_ABAB_ABAB_ABAB;
}

impl fmt::Debug for HostBuf {
    /// Short: the type, the length and the first elements, so a shrunk case stays readable.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 16;
        let n = self.len();
        write!(f, "[{}; {n}] [", self.elem_type())?;
        for i in 0..n.min(SHOWN) {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(&self.fmt_elem(i))?;
        }
        if n > SHOWN {
            write!(f, ", … {} more", n - SHOWN)?;
        }
        f.write_str("]")
    }
}

impl<T: Element> From<Vec<T>> for HostBuf {
    fn from(v: Vec<T>) -> Self {
        T::wrap_vec(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poison_is_recognised_and_float_poison_is_nan() {
        let b = HostBuf::poisoned(ElemType::F32, 3);
        assert!(b.is_poison_at(2));
        assert!(f32::poison().is_nan());
        assert!(f64::poison().is_nan());
        assert!(!f32::NAN.is_poison(), "an ordinary NaN is not the poison");
        assert_eq!(i32::poison() as u32, 0xABAB_ABAB);
        let mut b = HostBuf::from(vec![1u32, 2]);
        b.poison();
        assert_eq!(u32::slice(&b).unwrap(), &[0xABAB_ABAB, 0xABAB_ABAB]);
    }

    #[test]
    fn bytes_round_trip() {
        let mut b = HostBuf::from(vec![1.5f32, -2.0]);
        let bytes = b.as_bytes().to_vec();
        assert_eq!(bytes.len(), 8);
        b.as_bytes_mut()
            .copy_from_slice(&3.0f32.to_ne_bytes().repeat(2));
        assert_eq!(f32::slice(&b).unwrap(), &[3.0, 3.0]);
        assert_eq!(ScalarValue::I32(-1).to_bytes(), vec![0xFF; 4]);
    }

    #[test]
    fn debug_is_truncated() {
        let b = HostBuf::from((0..100).collect::<Vec<i32>>());
        let s = format!("{b:?}");
        assert!(s.starts_with("[i32; 100] [0, 1, 2"), "{s}");
        assert!(s.ends_with("… 84 more]"), "{s}");
    }

    #[test]
    fn from_usize_checks_range() {
        assert_eq!(<u8 as Element>::from_usize(300), None);
        assert_eq!(<i32 as Element>::from_usize(300), Some(300));
    }
}
