// expect: compiles
// <climits>, <cfloat> and <cstdint> names (<cstdint> without its include).
#include <hip/hip_runtime.h>
#include <cfloat>  // hipcc: FLT_MAX needs it; nvcc and NVRTC have it either way
#include <climits>
__global__ void limits(float* f, double* d, int* i, long long* l, size_t n) {
    f[0] = FLT_MAX + FLT_MIN + FLT_EPSILON + (float)FLT_MANT_DIG + (float)FLT_DIG;
    d[0] = DBL_MAX + DBL_MIN + DBL_EPSILON + (double)DBL_MANT_DIG;
    i[0] = INT_MAX + INT_MIN + SHRT_MAX + SHRT_MIN + SCHAR_MAX + CHAR_BIT + (int)UCHAR_MAX;
    l[0] = LLONG_MAX + LLONG_MIN + LONG_MAX + (long long)(UINT_MAX + ULONG_MAX + ULLONG_MAX);
    uint32_t a = UINT32_MAX;
    int64_t b = INT64_MAX;
    uint8_t c = UINT8_MAX;
    int8_t e = INT8_MIN;
    uint16_t g = UINT16_MAX;
    intptr_t p = 0;
    uintptr_t q = (uintptr_t)f;
    ptrdiff_t r = f - f;
    uint64_t s = UINT64_MAX + (uint64_t)SIZE_MAX + INT64_C(1) + UINT64_C(1);
    l[1] = a + b + c + e + g + p + (long long)q + r + (long long)s + INT32_MAX + INT32_MIN + INT16_MAX + (long long)n;
}
