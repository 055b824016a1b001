//! Element types a kernel argument can have, and type-erased host data (`HostBuf`, `ScalarValue`)
//! so one check can mix `f32` buffers, `i32` sizes and `u64` seeds.

use std::fmt;

use half::{bf16, f16};

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The result of comparing one element with its expected value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ElemVerdict {
    /// Whether the element is within the tolerance (NaN matches NaN; an unwritten element fails).
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
/// Implemented for `f32`, `f64`, `i8`–`i64`, `u8`–`u64`, the half-precision floats
/// [`half::f16`] (HIP's `__half`) and [`half::bf16`] (`__hip_bfloat16`), and HIP's vector types of
/// the numbers (`rocm_kernels::vector::Float4`, ...: compared component by component).
pub trait Element:
    Copy + fmt::Debug + PartialEq + Default + Send + Sync + 'static + sealed::Sealed
{
    /// The tag of this type.
    const TYPE: ElemType;
    /// Whether its numbers are floating point.
    const FLOAT: bool;
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
    /// A fast way to fill a buffer with draws from `strategy`, when it is a plain range of this
    /// type (`-1.0f32..1.0`): uniform samples straight from the runner's random generator,
    /// instead of a proptest value tree per element (about 1.5 us an element in a debug build,
    /// most of a test run's time).
    #[doc(hidden)]
    fn uniform_fill(strategy: &dyn std::any::Any) -> Option<crate::gen::UniformFill>;
}

/// The bytes of a plain-old-data value (numbers and HIP vectors of them), native order.
fn pod_bytes<T: Copy>(v: &T) -> &[u8] {
    // Safety: every type here is a number or a repr(C) vector of numbers without padding.
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>()) }
}

/// The worst of a vector's component verdicts: it passes when every component does.
fn worst(components: impl Iterator<Item = ElemVerdict>) -> ElemVerdict {
    components.fold(
        ElemVerdict {
            pass: true,
            abs_err: 0.0,
            rel_err: 0.0,
        },
        |a, v| ElemVerdict {
            pass: a.pass && v.pass,
            abs_err: a.abs_err.max(v.abs_err),
            rel_err: a.rel_err.max(v.rel_err),
        },
    )
}

macro_rules! elements {
    (
        scalars { $($t:ident $variant:ident $kind:ident $cname:literal $poison:expr;)* }
        vectors { $($vt:ident $vvariant:ident $velem:ident $vname:literal;)* }
    ) => {
        /// The element type of a buffer or scalar, as the kernel sees it: a number (`F16` is
        /// HIP's `__half`, `BF16` its `__hip_bfloat16`), or one of HIP's vector types
        /// (`rocm_kernels::vector`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ElemType {
            $(#[doc = concat!("`", stringify!($t), "` (`", $cname, "` in a kernel).")] $variant,)*
            $(#[doc = concat!("`", $vname, "` (`rocm_kernels::vector::", stringify!($vt), "`).")] $vvariant,)*
        }

        impl ElemType {
            /// The Rust name of a number (`f32`, `bf16`), HIP's of a vector (`float4`), for
            /// reports.
            pub fn name(self) -> &'static str {
                match self {
                    $(ElemType::$variant => stringify!($t),)*
                    $(ElemType::$vvariant => $vname,)*
                }
            }

            /// What a kernel calls it: `float`, `unsigned int`, `__half`, `__hip_bfloat16`,
            /// `float4`.
            pub fn c_name(self) -> &'static str {
                match self {
                    $(ElemType::$variant => $cname,)*
                    $(ElemType::$vvariant => $vname,)*
                }
            }

            /// Size of one element in bytes.
            pub fn size(self) -> usize {
                match self {
                    $(ElemType::$variant => std::mem::size_of::<$t>(),)*
                    $(ElemType::$vvariant => std::mem::size_of::<rocm_kernels::vector::$vt>(),)*
                }
            }

            /// Whether its numbers are floating point.
            pub fn is_float(self) -> bool {
                match self {
                    $(ElemType::$variant => <$t as Element>::FLOAT,)*
                    $(ElemType::$vvariant => <$velem as Element>::FLOAT,)*
                }
            }
        }

        /// A host buffer of any [`Element`] type.
        #[derive(Clone, PartialEq)]
        pub enum HostBuf {
            $(#[doc = concat!("A buffer of `", stringify!($t), "`.")] $variant(Vec<$t>),)*
            $(#[doc = concat!("A buffer of `", $vname, "`.")] $vvariant(Vec<rocm_kernels::vector::$vt>),)*
        }

        /// A by-value argument of any [`Element`] type.
        #[derive(Clone, Copy, PartialEq)]
        pub enum ScalarValue {
            $(#[doc = concat!("A `", stringify!($t), "`.")] $variant($t),)*
            $(#[doc = concat!("A `", $vname, "`.")] $vvariant(rocm_kernels::vector::$vt),)*
        }

        impl HostBuf {
            /// The type of its elements.
            pub fn elem_type(&self) -> ElemType {
                match self {
                    $(HostBuf::$variant(_) => ElemType::$variant,)*
                    $(HostBuf::$vvariant(_) => ElemType::$vvariant,)*
                }
            }
            /// Its length, in elements.
            pub fn len(&self) -> usize {
                match self {
                    $(HostBuf::$variant(v) => v.len(),)*
                    $(HostBuf::$vvariant(v) => v.len(),)*
                }
            }
            /// Whether it has no elements.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
            /// A buffer of `len` zeros.
            pub fn zeros(ty: ElemType, len: usize) -> HostBuf {
                match ty {
                    $(ElemType::$variant => HostBuf::$variant(vec![<$t>::default(); len]),)*
                    $(ElemType::$vvariant => HostBuf::$vvariant(vec![Default::default(); len]),)*
                }
            }
            /// A buffer of `len` poison values (see [`Element::poison`]).
            pub fn poisoned(ty: ElemType, len: usize) -> HostBuf {
                match ty {
                    $(ElemType::$variant => HostBuf::$variant(vec![<$t as Element>::poison(); len]),)*
                    $(ElemType::$vvariant => HostBuf::$vvariant(vec![<rocm_kernels::vector::$vt as Element>::poison(); len]),)*
                }
            }
            /// Overwrite every element with the poison value.
            pub fn poison(&mut self) {
                match self {
                    $(HostBuf::$variant(v) => v.fill(<$t as Element>::poison()),)*
                    $(HostBuf::$vvariant(v) => v.fill(<rocm_kernels::vector::$vt as Element>::poison()),)*
                }
            }
            /// Raw bytes in native byte order (what a device upload copies).
            pub fn as_bytes(&self) -> &[u8] {
                match self {
                    $(HostBuf::$variant(v) => {
                        // Safety: plain-old-data numbers; any bit pattern is a valid u8.
                        unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v.as_slice())) }
                    })*
                    $(HostBuf::$vvariant(v) => {
                        // Safety: vectors of numbers without padding.
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
                    $(HostBuf::$vvariant(v) => {
                        // Safety: as above, component by component.
                        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v.as_slice())) }
                    })*
                }
            }
            pub(crate) fn fmt_elem(&self, i: usize) -> String {
                match self {
                    $(HostBuf::$variant(v) => format!("{:?}", v[i]),)*
                    $(HostBuf::$vvariant(v) => format!("{:?}", v[i].to_array()),)*
                }
            }
            pub(crate) fn is_poison_at(&self, i: usize) -> bool {
                match self {
                    $(HostBuf::$variant(v) => v[i].is_poison(),)*
                    $(HostBuf::$vvariant(v) => v[i].is_poison(),)*
                }
            }
            /// Whether every element of `self` (got) is within `tol` of `want`, without keeping
            /// the per-element verdicts: the common case of a comparison, so it allocates nothing
            /// (a 4M-element output's verdicts are 96 MB, which `cargo rocm tune` paid for every
            /// candidate).
            pub(crate) fn all_within(&self, want: &HostBuf, tol: &crate::Tolerance) -> bool {
                match (self, want) {
                    $((HostBuf::$variant(g), HostBuf::$variant(w)) => {
                        par_all(g, w, |g, w| <$t as Element>::verdict(g, w, tol).pass)
                    })*
                    $((HostBuf::$vvariant(g), HostBuf::$vvariant(w)) => {
                        par_all(g, w, |g, w| <rocm_kernels::vector::$vt as Element>::verdict(g, w, tol).pass)
                    })*
                    _ => panic!("compared buffers of different element types"),
                }
            }
            /// Compare every element of `self` (got) with `want`.
            pub(crate) fn verdicts(&self, want: &HostBuf, tol: &crate::Tolerance) -> Vec<ElemVerdict> {
                match (self, want) {
                    $((HostBuf::$variant(g), HostBuf::$variant(w)) => {
                        g.iter().zip(w).map(|(g, w)| <$t as Element>::verdict(*g, *w, tol)).collect()
                    })*
                    $((HostBuf::$vvariant(g), HostBuf::$vvariant(w)) => {
                        g.iter().zip(w).map(|(g, w)| <rocm_kernels::vector::$vt as Element>::verdict(*g, *w, tol)).collect()
                    })*
                    _ => panic!("compared buffers of different element types"),
                }
            }
        }

        impl ScalarValue {
            /// The type of the value.
            pub fn elem_type(&self) -> ElemType {
                match self {
                    $(ScalarValue::$variant(_) => ElemType::$variant,)*
                    $(ScalarValue::$vvariant(_) => ElemType::$vvariant,)*
                }
            }
            /// Raw bytes in native byte order, as the kernel argument is passed.
            pub fn to_bytes(&self) -> Vec<u8> {
                match self {
                    $(ScalarValue::$variant(v) => pod_bytes(v).to_vec(),)*
                    $(ScalarValue::$vvariant(v) => pod_bytes(v).to_vec(),)*
                }
            }
        }

        impl fmt::Debug for ScalarValue {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $(ScalarValue::$variant(v) => write!(f, "{v:?}{}", stringify!($t)),)*
                    $(ScalarValue::$vvariant(v) => write!(f, "{}{:?}", $vname, v.to_array()),)*
                }
            }
        }

        $(
            impl sealed::Sealed for $t {}
            impl Element for $t {
                const TYPE: ElemType = ElemType::$variant;
                const FLOAT: bool = elements!(@is_float $kind);
                fn poison() -> Self { $poison }
                fn is_poison(self) -> bool { pod_bytes(&self) == pod_bytes(&Self::poison()) }
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
                fn uniform_fill(strategy: &dyn std::any::Any) -> Option<crate::gen::UniformFill> {
                    elements!(@uniform_fill $kind $t $variant strategy)
                }
            }
        )*

        $(
            impl sealed::Sealed for rocm_kernels::vector::$vt {}
            impl Element for rocm_kernels::vector::$vt {
                const TYPE: ElemType = ElemType::$vvariant;
                const FLOAT: bool = <$velem as Element>::FLOAT;
                fn poison() -> Self {
                    use rocm_kernels::vector::HipVector;
                    Self::from_slice(&[<$velem as Element>::poison(); 4])
                }
                fn is_poison(self) -> bool { pod_bytes(&self) == pod_bytes(&Self::poison()) }
                fn verdict(got: Self, want: Self, tol: &crate::Tolerance) -> ElemVerdict {
                    worst(got.to_array().iter().zip(want.to_array()).map(|(g, w)| <$velem as Element>::verdict(*g, w, tol)))
                }
                fn wrap_vec(v: Vec<Self>) -> HostBuf { HostBuf::$vvariant(v) }
                fn slice(buf: &HostBuf) -> Option<&[Self]> {
                    match buf { HostBuf::$vvariant(v) => Some(v), #[allow(unreachable_patterns)] _ => None }
                }
                fn slice_mut(buf: &mut HostBuf) -> Option<&mut [Self]> {
                    match buf { HostBuf::$vvariant(v) => Some(v), #[allow(unreachable_patterns)] _ => None }
                }
                fn wrap_scalar(self) -> ScalarValue { ScalarValue::$vvariant(self) }
                fn unwrap_scalar(v: &ScalarValue) -> Option<Self> {
                    match v { ScalarValue::$vvariant(x) => Some(*x), #[allow(unreachable_patterns)] _ => None }
                }
                fn from_usize(_: usize) -> Option<Self> { None }
                fn uniform_fill(strategy: &dyn std::any::Any) -> Option<crate::gen::UniformFill> {
                    use proptest::prelude::RngExt;
                    use rocm_kernels::vector::HipVector;
                    let e = strategy.downcast_ref::<crate::gen::Each<Self>>()?;
                    let (lo, hi, inclusive) = (e.lo, e.hi, e.inclusive);
                    if !(lo < hi || (inclusive && lo == hi)) {
                        return None;
                    }
                    Some(std::sync::Arc::new(move |rng, n| {
                        HostBuf::$vvariant((0..n).map(|_| {
                            let mut c = [<$velem>::default(); 4];
                            for x in c.iter_mut().take(Self::LANES) {
                                *x = if inclusive { rng.random_range(lo..=hi) } else { rng.random_range(lo..hi) };
                            }
                            Self::from_slice(&c)
                        }).collect())
                    }))
                }
            }
        )*
    };
    (@is_float float) => { true };
    (@is_float half) => { true };
    (@is_float int) => { false };
    (@verdict float $got:ident $want:ident $tol:ident) => {
        crate::tolerance::float_verdict($got, $want, $tol)
    };
    (@verdict half $got:ident $want:ident $tol:ident) => {
        crate::tolerance::float_verdict($got, $want, $tol)
    };
    (@verdict int $got:ident $want:ident $tol:ident) => {
        crate::tolerance::int_verdict($got as i128, $want as i128, $tol)
    };
    (@from_usize float $t:ident $n:ident) => { Some($n as $t) };
    // Only sizes the type holds exactly (f16 stops at 2048, bf16 at 256).
    (@from_usize half $t:ident $n:ident) => {{
        let v = <$t>::from_f64($n as f64);
        (v.to_f64() == $n as f64).then_some(v)
    }};
    // Plain ranges of the type; for floats also `gen::rounded` (the only way to draw halves:
    // proptest has no strategies for them).
    (@uniform_fill int $t:ident $variant:ident $strategy:ident) => {
        elements!(@uniform_ranges $t $variant $strategy)
    };
    (@uniform_fill float $t:ident $variant:ident $strategy:ident) => {{
        if let Some(r) = $strategy.downcast_ref::<crate::gen::Rounded<$t>>() {
            return Some(r.fill());
        }
        elements!(@uniform_ranges $t $variant $strategy)
    }};
    (@uniform_fill half $t:ident $variant:ident $strategy:ident) => {
        $strategy.downcast_ref::<crate::gen::Rounded<$t>>().map(|r| r.fill())
    };
    (@uniform_ranges $t:ident $variant:ident $strategy:ident) => {{
        use proptest::prelude::RngExt;
        if let Some(r) = $strategy.downcast_ref::<std::ops::Range<$t>>() {
            let r = r.clone();
            if r.start < r.end {
                return Some(std::sync::Arc::new(move |rng, n| {
                    HostBuf::$variant((0..n).map(|_| rng.random_range(r.clone())).collect())
                }));
            }
        }
        if let Some(r) = $strategy.downcast_ref::<std::ops::RangeInclusive<$t>>() {
            let r = r.clone();
            if r.start() <= r.end() {
                return Some(std::sync::Arc::new(move |rng, n| {
                    HostBuf::$variant((0..n).map(|_| rng.random_range(r.clone())).collect())
                }));
            }
        }
        None
    }};
    (@from_usize int $t:ident $n:ident) => { <$t>::try_from($n).ok() };
}

elements! {
    scalars {
        f32 F32 float "float" f32::from_bits(0x7FC0_0BAD);
        f64 F64 float "double" f64::from_bits(0x7FF8_0000_0BAD_0BAD);
        // Quiet NaNs with the payload 0xAB (f16: sign 0, exponent 11111, quiet bit, 0x0AB;
        // bf16: exponent 0xFF, quiet bit, 0x2B, all the bits its 7-bit mantissa has left).
        f16 F16 half "__half" f16::from_bits(0x7EAB);
        bf16 BF16 half "__hip_bfloat16" bf16::from_bits(0x7FEB);
        i8 I8 int "signed char" 0xABu8 as i8;
        i16 I16 int "short" 0xABABu16 as i16;
        i32 I32 int "int" 0xABAB_ABABu32 as i32;
        i64 I64 int "long long" 0xABAB_ABAB_ABAB_ABABu64 as i64;
        u8 U8 int "unsigned char" 0xAB;
        u16 U16 int "unsigned short" 0xABAB;
        u32 U32 int "unsigned int" 0xABAB_ABAB;
        u64 U64 int "unsigned long long" 0xABAB_ABAB_ABAB_ABAB;
    }
    vectors {
        Char2 I8x2 i8 "char2"; Char3 I8x3 i8 "char3"; Char4 I8x4 i8 "char4";
        UChar2 U8x2 u8 "uchar2"; UChar3 U8x3 u8 "uchar3"; UChar4 U8x4 u8 "uchar4";
        Short2 I16x2 i16 "short2"; Short3 I16x3 i16 "short3"; Short4 I16x4 i16 "short4";
        UShort2 U16x2 u16 "ushort2"; UShort3 U16x3 u16 "ushort3"; UShort4 U16x4 u16 "ushort4";
        Int2 I32x2 i32 "int2"; Int3 I32x3 i32 "int3"; Int4 I32x4 i32 "int4";
        UInt2 U32x2 u32 "uint2"; UInt3 U32x3 u32 "uint3"; UInt4 U32x4 u32 "uint4";
        Long2 I64x2 i64 "long2"; Long3 I64x3 i64 "long3"; Long4 I64x4 i64 "long4";
        ULong2 U64x2 u64 "ulong2"; ULong3 U64x3 u64 "ulong3"; ULong4 U64x4 u64 "ulong4";
        Float2 F32x2 f32 "float2"; Float3 F32x3 f32 "float3"; Float4 F32x4 f32 "float4";
        Double2 F64x2 f64 "double2"; Double3 F64x3 f64 "double3"; Double4 F64x4 f64 "double4";
    }
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

/// Whether `pass` holds for every pair, on several threads for large buffers: a tuning run
/// compares a 4M-element output after every candidate, where one thread took tens of
/// milliseconds. (Scoped threads over a few chunks; a thread pool crate would add a dependency
/// for this one loop.)
fn par_all<T: Copy + Sync>(got: &[T], want: &[T], pass: impl Fn(T, T) -> bool + Sync) -> bool {
    const CHUNK: usize = 1 << 18;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if got.len() < 2 * CHUNK || threads < 2 {
        return got.iter().zip(want).all(|(g, w)| pass(*g, *w));
    }
    let per = got
        .len()
        .div_ceil(threads.min(got.len() / CHUNK))
        .max(CHUNK);
    let failed = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for (g, w) in got.chunks(per).zip(want.chunks(per)) {
            let (pass, failed) = (&pass, &failed);
            scope.spawn(move || {
                for (g, w) in g.chunks(4096).zip(w.chunks(4096)) {
                    if failed.load(std::sync::atomic::Ordering::Relaxed) {
                        return;
                    }
                    if !g.iter().zip(w).all(|(g, w)| pass(*g, *w)) {
                        failed.store(true, std::sync::atomic::Ordering::Relaxed);
                        return;
                    }
                }
            });
        }
    });
    !failed.into_inner()
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
    fn half_precision_poison_is_a_nan_only_it_matches() {
        for (ty, bits) in [(ElemType::F16, 0x7EABu16), (ElemType::BF16, 0x7FEB)] {
            let mut b = HostBuf::poisoned(ty, 2);
            assert!(b.is_poison_at(1));
            assert_eq!(
                b.as_bytes(),
                [bits.to_ne_bytes(), bits.to_ne_bytes()].concat()
            );
            assert!(ty.is_float() && ty.size() == 2);
            b.as_bytes_mut().fill(0);
            assert!(!b.is_poison_at(0), "zero is a value");
        }
        assert!(f16::poison().is_nan() && bf16::poison().is_nan());
        assert!(!f16::NAN.is_poison() && !bf16::NAN.is_poison());
        assert_eq!(
            (ElemType::F16.name(), ElemType::F16.c_name()),
            ("f16", "__half")
        );
        assert_eq!(
            (ElemType::BF16.name(), ElemType::BF16.c_name()),
            ("bf16", "__hip_bfloat16")
        );
        let b = HostBuf::from(vec![bf16::from_f32(1.5), bf16::from_f32(-2.0)]);
        assert_eq!(format!("{b:?}"), "[bf16; 2] [1.5, -2.0]");
        assert_eq!(format!("{:?}", f16::from_f32(0.5).wrap_scalar()), "0.5f16");
    }

    #[test]
    fn half_precision_sizes_only_where_exact() {
        assert_eq!(
            <f16 as Element>::from_usize(2048),
            Some(f16::from_f32(2048.0))
        );
        assert_eq!(<f16 as Element>::from_usize(2049), None, "2049 is no f16");
        assert_eq!(
            <bf16 as Element>::from_usize(256),
            Some(bf16::from_f32(256.0))
        );
        assert_eq!(<bf16 as Element>::from_usize(257), None);
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
