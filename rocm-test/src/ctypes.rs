//! The C spellings of kernel parameter types the harness checks arguments against: which
//! element types a pointer parameter's pointee accepts (`const float* x` takes a buffer of `f32`,
//! `float4*` one of `Float4`), and the alignment HIP gives its vector types.

use crate::ElemType;

/// Qualifiers and attributes that do not change what a pointer points to.
const QUALIFIERS: &[&str] = &[
    "const",
    "volatile",
    "__restrict__",
    "__restrict",
    "restrict",
    "struct",
    "HIP_vector_type",
];

/// The pointee of a one-level pointer type, normalised (`const float* __restrict__` → `float`,
/// `unsigned int *` → `unsigned int`); `None` for anything else.
pub(crate) fn pointee(type_name: &str) -> Option<String> {
    let star = type_name.find('*')?;
    if type_name[star + 1..].contains('*') {
        return None;
    }
    let words: Vec<&str> = type_name[..star]
        .split_whitespace()
        .filter(|w| !QUALIFIERS.contains(w))
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// Whether a buffer of `elem` is what a pointer to C type `c` reads. Unknown C types (structs,
/// typedefs the harness cannot see through) match anything.
pub(crate) fn matches(elem: ElemType, c: &str) -> bool {
    match c_elem(c) {
        Some(known) => known.contains(&elem),
        None => true,
    }
}

/// The element type a buffer for a pointer to C type `c` should have, when the harness knows it
/// (`__hip_bfloat16` → `bf16`).
pub(crate) fn elem_for(c: &str) -> Option<ElemType> {
    c_elem(c).and_then(|known| known.first().copied())
}

/// The element types a C type name can hold, when the harness knows the name.
fn c_elem(c: &str) -> Option<&'static [ElemType]> {
    use ElemType::*;
    let c = c.strip_prefix("std::").unwrap_or(c);
    Some(match c {
        "float" => &[F32],
        "double" => &[F64],
        // IEEE binary16: HIP's and CUDA's `__half` (and HIP's `half`), the compilers' own types.
        "__half" | "half" | "_Float16" | "__fp16" => &[F16],
        // bfloat16: HIP's `__hip_bfloat16` (ROCm before hip_bf16.h: `hip_bfloat16`), CUDA's
        // `__nv_bfloat16`, the compilers' `__bf16`, and the usual typedef.
        "__hip_bfloat16" | "hip_bfloat16" | "__nv_bfloat16" | "__bf16" | "bf16" => &[BF16],
        "char" | "signed char" | "int8_t" => &[I8, U8],
        "unsigned char" | "uint8_t" | "uchar" => &[U8, I8],
        "short" | "short int" | "int16_t" | "signed short" => &[I16],
        "unsigned short" | "uint16_t" | "ushort" | "unsigned short int" => &[U16],
        "int" | "signed" | "signed int" | "int32_t" => &[I32],
        "unsigned" | "unsigned int" | "uint32_t" | "uint" => &[U32],
        "long" | "long int" | "long long" | "long long int" | "int64_t" | "ptrdiff_t"
        | "intptr_t" => &[I64],
        "unsigned long"
        | "unsigned long int"
        | "unsigned long long"
        | "unsigned long long int"
        | "uint64_t"
        | "size_t"
        | "uintptr_t" => &[U64],
        "char2" => &[I8x2],
        "char3" => &[I8x3],
        "char4" => &[I8x4],
        "uchar2" => &[U8x2],
        "uchar3" => &[U8x3],
        "uchar4" => &[U8x4],
        "short2" => &[I16x2],
        "short3" => &[I16x3],
        "short4" => &[I16x4],
        "ushort2" => &[U16x2],
        "ushort3" => &[U16x3],
        "ushort4" => &[U16x4],
        "int2" => &[I32x2],
        "int3" => &[I32x3],
        "int4" => &[I32x4],
        "uint2" => &[U32x2],
        "uint3" => &[U32x3],
        "uint4" => &[U32x4],
        "long2" | "longlong2" => &[I64x2],
        "long3" | "longlong3" => &[I64x3],
        "long4" | "longlong4" => &[I64x4],
        "ulong2" | "ulonglong2" => &[U64x2],
        "ulong3" | "ulonglong3" => &[U64x3],
        "ulong4" | "ulonglong4" => &[U64x4],
        "float2" => &[F32x2],
        "float3" => &[F32x3],
        "float4" => &[F32x4],
        "double2" => &[F64x2],
        "double3" => &[F64x3],
        "double4" => &[F64x4],
        _ => return None,
    })
}

/// HIP's alignment of a by-value parameter of a vector type (`const float4` → 16); `None` for
/// other types (their alignment is checked at launch where the backend reports it).
pub(crate) fn vector_align(type_name: &str) -> Option<usize> {
    let words: Vec<&str> = type_name
        .split_whitespace()
        .filter(|w| !QUALIFIERS.contains(w))
        .collect();
    let [name] = words.as_slice() else {
        return None;
    };
    let known = c_elem(name)?;
    let elem = *known.first()?;
    // The Rust mirror's alignment is HIP's (rocm_kernels::vector's test holds them together).
    matches!(name.chars().last(), Some('2' | '3' | '4')).then(|| vector_type_align(elem))
}

fn vector_type_align(elem: ElemType) -> usize {
    use rocm_kernels::vector::*;
    use std::mem::align_of;
    use ElemType::*;
    match elem {
        I8x2 => align_of::<Char2>(),
        I8x3 => align_of::<Char3>(),
        I8x4 => align_of::<Char4>(),
        U8x2 => align_of::<UChar2>(),
        U8x3 => align_of::<UChar3>(),
        U8x4 => align_of::<UChar4>(),
        I16x2 => align_of::<Short2>(),
        I16x3 => align_of::<Short3>(),
        I16x4 => align_of::<Short4>(),
        U16x2 => align_of::<UShort2>(),
        U16x3 => align_of::<UShort3>(),
        U16x4 => align_of::<UShort4>(),
        I32x2 => align_of::<Int2>(),
        I32x3 => align_of::<Int3>(),
        I32x4 => align_of::<Int4>(),
        U32x2 => align_of::<UInt2>(),
        U32x3 => align_of::<UInt3>(),
        U32x4 => align_of::<UInt4>(),
        I64x2 => align_of::<Long2>(),
        I64x3 => align_of::<Long3>(),
        I64x4 => align_of::<Long4>(),
        U64x2 => align_of::<ULong2>(),
        U64x3 => align_of::<ULong3>(),
        U64x4 => align_of::<ULong4>(),
        F32x2 => align_of::<Float2>(),
        F32x3 => align_of::<Float3>(),
        F32x4 => align_of::<Float4>(),
        F64x2 => align_of::<Double2>(),
        F64x3 => align_of::<Double3>(),
        F64x4 => align_of::<Double4>(),
        scalar => scalar.size(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointees_and_matches() {
        assert_eq!(
            pointee("const float* __restrict__").as_deref(),
            Some("float")
        );
        assert_eq!(pointee("unsigned int *").as_deref(), Some("unsigned int"));
        assert_eq!(pointee("float**"), None);
        assert_eq!(pointee("int"), None);
        assert!(matches(ElemType::F32, "float"));
        assert!(!matches(ElemType::F64, "float"));
        assert!(matches(ElemType::F32x4, "float4"));
        assert!(!matches(ElemType::F32, "float4"));
        assert!(
            matches(ElemType::U8, "MyPixel"),
            "unknown types match anything"
        );
        for c in ["__half", "half", "_Float16", "__fp16"] {
            assert!(
                matches(ElemType::F16, c) && !matches(ElemType::BF16, c),
                "{c}"
            );
            assert!(
                !matches(ElemType::U16, c) && !matches(ElemType::F32, c),
                "{c}"
            );
        }
        for c in [
            "__hip_bfloat16",
            "hip_bfloat16",
            "__nv_bfloat16",
            "__bf16",
            "bf16",
        ] {
            assert!(
                matches(ElemType::BF16, c) && !matches(ElemType::F16, c),
                "{c}"
            );
        }
        assert_eq!(
            pointee("const __hip_bfloat16* __restrict__").as_deref(),
            Some("__hip_bfloat16")
        );
        assert_eq!(elem_for("__nv_bfloat16"), Some(ElemType::BF16));
        assert_eq!(elem_for("MyPixel"), None);
        assert_eq!(vector_align("const float4"), Some(16));
        assert_eq!(vector_align("uint2"), Some(8));
        assert_eq!(vector_align("float3"), Some(4));
        assert_eq!(vector_align("int"), None);
    }
}
