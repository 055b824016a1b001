// cargo-rocm: under NVRTC, what hipcc's hip_runtime.h brings in from the C and C++ standard
// headers and kernels use without including them: <cstdint>'s types and limits, <climits>,
// <cfloat>, <cmath>'s macros (INFINITY, NAN, HUGE_VALF...) and POSIX's M_PI family, and the
// common <algorithm>/<limits>/<cmath> names in namespace std. nvcc gets them from the host's
// headers (hip_runtime.h includes them); NVRTC has none of those headers, so a source that
// compiles with nvcc would fail here (`identifier "INFINITY" is undefined`). Every macro is
// guarded, so a kernel that defines its own, or includes libcu++'s headers, is no redefinition.
// `tests/suite/nvidia_rtc_parity.rs` (rocm-kernels) compiles one corpus with nvcc and with NVRTC
// and fails on any difference.
#pragma once

// ---- libcu++, where NVRTC's include path has it (CUDA 11.x and later ship it with the headers):
// its <cstdint>, <climits>, <cfloat> and <cmath> define most of what follows; the definitions
// below fill in what it leaves out, or all of it without libcu++. It costs NVRTC more than a
// second a program, so the runtime first compiles a source that never names `std` with
// ROCM_RTC_NO_LIBCUXX defined (nvrtc.rs), and again without it if that fails.
#if !defined(ROCM_RTC_NO_LIBCUXX) && __has_include(<cuda/std/limits>)
#include <cuda/std/limits>
#include <cuda/std/cstdint>
#include <cuda/std/climits>
#include <cuda/std/cfloat>
#include <cuda/std/cmath>
#include <cuda/std/utility>
#include <cuda/std/__algorithm/min.h>
#include <cuda/std/__algorithm/max.h>
#endif

// ---- <cstdint> --------------------------------------------------------------------------------
// The same aliases as libcu++'s <cuda/std/cstdint> under NVRTC, so including that too is no
// redefinition.
using int8_t = signed char;
using int16_t = signed short;
using int32_t = signed int;
using int64_t = signed long long;
using uint8_t = unsigned char;
using uint16_t = unsigned short;
using uint32_t = unsigned int;
using uint64_t = unsigned long long;
using int_least8_t = int8_t;
using int_least16_t = int16_t;
using int_least32_t = int32_t;
using int_least64_t = int64_t;
using uint_least8_t = uint8_t;
using uint_least16_t = uint16_t;
using uint_least32_t = uint32_t;
using uint_least64_t = uint64_t;
using int_fast8_t = int8_t;
using int_fast16_t = int16_t;
using int_fast32_t = int32_t;
using int_fast64_t = int64_t;
using uint_fast8_t = uint8_t;
using uint_fast16_t = uint16_t;
using uint_fast32_t = uint32_t;
using uint_fast64_t = uint64_t;
using intptr_t = int64_t;
using uintptr_t = uint64_t;
using intmax_t = int64_t;
using uintmax_t = uint64_t;
using ptrdiff_t = decltype((char*)0 - (char*)0);
namespace std {
using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t;
using ::uint8_t; using ::uint16_t; using ::uint32_t; using ::uint64_t;
using ::intptr_t; using ::uintptr_t; using ::intmax_t; using ::uintmax_t;
using ::size_t; using ::ptrdiff_t;
}  // namespace std

#ifndef INT8_MIN
#define INT8_MIN (-128)
#endif
#ifndef INT16_MIN
#define INT16_MIN (-32767 - 1)
#endif
#ifndef INT32_MIN
#define INT32_MIN (-2147483647 - 1)
#endif
#ifndef INT64_MIN
#define INT64_MIN (-9223372036854775807LL - 1)
#endif
#ifndef INT8_MAX
#define INT8_MAX 127
#endif
#ifndef INT16_MAX
#define INT16_MAX 32767
#endif
#ifndef INT32_MAX
#define INT32_MAX 2147483647
#endif
#ifndef INT64_MAX
#define INT64_MAX 9223372036854775807LL
#endif
#ifndef UINT8_MAX
#define UINT8_MAX 255
#endif
#ifndef UINT16_MAX
#define UINT16_MAX 65535
#endif
#ifndef UINT32_MAX
#define UINT32_MAX 4294967295U
#endif
#ifndef UINT64_MAX
#define UINT64_MAX 18446744073709551615ULL
#endif
#ifndef INTPTR_MIN
#define INTPTR_MIN INT64_MIN
#endif
#ifndef INTPTR_MAX
#define INTPTR_MAX INT64_MAX
#endif
#ifndef UINTPTR_MAX
#define UINTPTR_MAX UINT64_MAX
#endif
#ifndef INTMAX_MIN
#define INTMAX_MIN INT64_MIN
#endif
#ifndef INTMAX_MAX
#define INTMAX_MAX INT64_MAX
#endif
#ifndef UINTMAX_MAX
#define UINTMAX_MAX UINT64_MAX
#endif
#ifndef PTRDIFF_MIN
#define PTRDIFF_MIN INT64_MIN
#endif
#ifndef PTRDIFF_MAX
#define PTRDIFF_MAX INT64_MAX
#endif
#ifndef SIZE_MAX
#define SIZE_MAX 18446744073709551615UL
#endif
#ifndef INT8_C
#define INT8_C(c) c
#endif
#ifndef INT16_C
#define INT16_C(c) c
#endif
#ifndef INT32_C
#define INT32_C(c) c
#endif
#ifndef INT64_C
#define INT64_C(c) c##LL
#endif
#ifndef UINT8_C
#define UINT8_C(c) c
#endif
#ifndef UINT16_C
#define UINT16_C(c) c
#endif
#ifndef UINT32_C
#define UINT32_C(c) c##U
#endif
#ifndef UINT64_C
#define UINT64_C(c) c##ULL
#endif

// ---- <climits> (LP64) ---------------------------------------------------------------------------
#ifndef CHAR_BIT
#define CHAR_BIT 8
#endif
#ifndef SCHAR_MIN
#define SCHAR_MIN (-128)
#endif
#ifndef SCHAR_MAX
#define SCHAR_MAX 127
#endif
#ifndef UCHAR_MAX
#define UCHAR_MAX 255
#endif
#ifndef CHAR_MIN
#define CHAR_MIN SCHAR_MIN
#endif
#ifndef CHAR_MAX
#define CHAR_MAX SCHAR_MAX
#endif
#ifndef SHRT_MIN
#define SHRT_MIN (-32768)
#endif
#ifndef SHRT_MAX
#define SHRT_MAX 32767
#endif
#ifndef USHRT_MAX
#define USHRT_MAX 65535
#endif
#ifndef INT_MIN
#define INT_MIN (-2147483647 - 1)
#endif
#ifndef INT_MAX
#define INT_MAX 2147483647
#endif
#ifndef UINT_MAX
#define UINT_MAX 4294967295U
#endif
#ifndef LONG_MIN
#define LONG_MIN (-9223372036854775807L - 1L)
#endif
#ifndef LONG_MAX
#define LONG_MAX 9223372036854775807L
#endif
#ifndef ULONG_MAX
#define ULONG_MAX 18446744073709551615UL
#endif
#ifndef LLONG_MIN
#define LLONG_MIN (-9223372036854775807LL - 1LL)
#endif
#ifndef LLONG_MAX
#define LLONG_MAX 9223372036854775807LL
#endif
#ifndef ULLONG_MAX
#define ULLONG_MAX 18446744073709551615ULL
#endif

// ---- <cfloat> -----------------------------------------------------------------------------------
#ifndef FLT_RADIX
#define FLT_RADIX 2
#endif
#ifndef FLT_MANT_DIG
#define FLT_MANT_DIG 24
#endif
#ifndef DBL_MANT_DIG
#define DBL_MANT_DIG 53
#endif
#ifndef FLT_DIG
#define FLT_DIG 6
#endif
#ifndef DBL_DIG
#define DBL_DIG 15
#endif
#ifndef FLT_DECIMAL_DIG
#define FLT_DECIMAL_DIG 9
#endif
#ifndef DBL_DECIMAL_DIG
#define DBL_DECIMAL_DIG 17
#endif
#ifndef DECIMAL_DIG
#define DECIMAL_DIG 17
#endif
#ifndef FLT_MIN_EXP
#define FLT_MIN_EXP (-125)
#endif
#ifndef DBL_MIN_EXP
#define DBL_MIN_EXP (-1021)
#endif
#ifndef FLT_MIN_10_EXP
#define FLT_MIN_10_EXP (-37)
#endif
#ifndef DBL_MIN_10_EXP
#define DBL_MIN_10_EXP (-307)
#endif
#ifndef FLT_MAX_EXP
#define FLT_MAX_EXP 128
#endif
#ifndef DBL_MAX_EXP
#define DBL_MAX_EXP 1024
#endif
#ifndef FLT_MAX_10_EXP
#define FLT_MAX_10_EXP 38
#endif
#ifndef DBL_MAX_10_EXP
#define DBL_MAX_10_EXP 308
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.40282346638528859811704183484516925e+38F
#endif
#ifndef DBL_MAX
#define DBL_MAX 1.79769313486231570814527423731704357e+308
#endif
#ifndef FLT_MIN
#define FLT_MIN 1.17549435082228750796873653722224568e-38F
#endif
#ifndef DBL_MIN
#define DBL_MIN 2.22507385850720138309023271733240406e-308
#endif
#ifndef FLT_EPSILON
#define FLT_EPSILON 1.19209289550781250000000000000000000e-7F
#endif
#ifndef DBL_EPSILON
#define DBL_EPSILON 2.22044604925031308084726333618164062e-16
#endif
#ifndef FLT_TRUE_MIN
#define FLT_TRUE_MIN 1.40129846432481707092372958328991613e-45F
#endif
#ifndef DBL_TRUE_MIN
#define DBL_TRUE_MIN 4.94065645841246544176568792868221372e-324
#endif
#ifndef FLT_EVAL_METHOD
#define FLT_EVAL_METHOD 0
#endif

// ---- <cmath> macros and POSIX's constants ---------------------------------------------------------
#ifndef INFINITY
#define INFINITY (__builtin_bit_cast(float, 0x7f800000U))
#endif
#ifndef NAN
#define NAN (__builtin_bit_cast(float, 0x7fc00000U))
#endif
#ifndef HUGE_VALF
#define HUGE_VALF (__builtin_bit_cast(float, 0x7f800000U))
#endif
#ifndef HUGE_VAL
#define HUGE_VAL (__builtin_bit_cast(double, 0x7ff0000000000000ULL))
#endif
#ifndef M_E
#define M_E 2.7182818284590452354
#endif
#ifndef M_LOG2E
#define M_LOG2E 1.4426950408889634074
#endif
#ifndef M_LOG10E
#define M_LOG10E 0.43429448190325182765
#endif
#ifndef M_LN2
#define M_LN2 0.69314718055994530942
#endif
#ifndef M_LN10
#define M_LN10 2.30258509299404568402
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#ifndef M_PI_2
#define M_PI_2 1.57079632679489661923
#endif
#ifndef M_PI_4
#define M_PI_4 0.78539816339744830962
#endif
#ifndef M_1_PI
#define M_1_PI 0.31830988618379067154
#endif
#ifndef M_2_PI
#define M_2_PI 0.63661977236758134308
#endif
#ifndef M_2_SQRTPI
#define M_2_SQRTPI 1.12837916709551257390
#endif
#ifndef M_SQRT2
#define M_SQRT2 1.41421356237309504880
#endif
#ifndef M_SQRT1_2
#define M_SQRT1_2 0.70710678118654752440
#endif
#ifndef FP_NAN
#define FP_NAN 0
#endif
#ifndef FP_INFINITE
#define FP_INFINITE 1
#endif
#ifndef FP_ZERO
#define FP_ZERO 2
#endif
#ifndef FP_SUBNORMAL
#define FP_SUBNORMAL 3
#endif
#ifndef FP_NORMAL
#define FP_NORMAL 4
#endif

// ---- <sys/types.h>'s short names (glibc, under _DEFAULT_SOURCE) --------------------------------
// hipcc's and nvcc's host headers bring them in on Linux, and kernels use them (HIP-Examples'
// Histogram and MatrixMultiplication: `uint`). Typedefs of the same type may be repeated.
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned long ulong;

// ---- the std names hipcc's headers declare for device code ------------------------------------
// From libcu++ (CUDA's own standard library, on NVRTC's include path with the CUDA headers):
// <limits>'s numeric_limits, <algorithm>'s min/max, <cmath>'s overloads, <utility>'s swap.
#if !defined(ROCM_RTC_NO_LIBCUXX) && __has_include(<cuda/std/limits>)
namespace std {
using cuda::std::numeric_limits;
using cuda::std::min;
using cuda::std::max;
using cuda::std::swap;
using cuda::std::abs; using cuda::std::fabs;
using cuda::std::fmax; using cuda::std::fmin;
using cuda::std::exp; using cuda::std::exp2; using cuda::std::expm1; using cuda::std::log;
using cuda::std::log2; using cuda::std::log10; using cuda::std::log1p; using cuda::std::pow;
using cuda::std::sqrt; using cuda::std::cbrt; using cuda::std::hypot; using cuda::std::sin;
using cuda::std::cos; using cuda::std::tan; using cuda::std::asin; using cuda::std::acos;
using cuda::std::atan; using cuda::std::atan2; using cuda::std::sinh; using cuda::std::cosh;
using cuda::std::tanh; using cuda::std::asinh; using cuda::std::acosh; using cuda::std::atanh;
using cuda::std::tgamma; using cuda::std::lgamma;
using cuda::std::ceil; using cuda::std::floor; using cuda::std::trunc; using cuda::std::round;
using cuda::std::nearbyint; using cuda::std::rint; using cuda::std::lround; using cuda::std::llround;
using cuda::std::frexp; using cuda::std::ldexp; using cuda::std::copysign;
using cuda::std::isnan; using cuda::std::isinf; using cuda::std::isfinite; using cuda::std::signbit;
using cuda::std::isnormal; using cuda::std::fpclassify;
// What this libcu++ leaves out of <cmath>, onto CUDA's own functions.
__device__ __forceinline__ float fmod(float a, float b) { return ::fmodf(a, b); }
__device__ __forceinline__ double fmod(double a, double b) { return ::fmod(a, b); }
__device__ __forceinline__ float remainder(float a, float b) { return ::remainderf(a, b); }
__device__ __forceinline__ double remainder(double a, double b) { return ::remainder(a, b); }
__device__ __forceinline__ float fma(float a, float b, float c) { return ::fmaf(a, b, c); }
__device__ __forceinline__ double fma(double a, double b, double c) { return ::fma(a, b, c); }
__device__ __forceinline__ float fdim(float a, float b) { return ::fdimf(a, b); }
__device__ __forceinline__ double fdim(double a, double b) { return ::fdim(a, b); }
__device__ __forceinline__ float erf(float a) { return ::erff(a); }
__device__ __forceinline__ double erf(double a) { return ::erf(a); }
__device__ __forceinline__ float erfc(float a) { return ::erfcf(a); }
__device__ __forceinline__ double erfc(double a) { return ::erfc(a); }
__device__ __forceinline__ float modf(float a, float* i) { return ::modff(a, i); }
__device__ __forceinline__ double modf(double a, double* i) { return ::modf(a, i); }
}  // namespace std
#endif
