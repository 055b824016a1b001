/* __hip_bfloat16 for the cpu backend: the upper 16 bits of an IEEE float, round-to-nearest-even
 * on conversion, arithmetic in float. */
#ifndef RK_CPU_HIP_BF16_H
#define RK_CPU_HIP_BF16_H

#include <cstdint>
#include <cstring>

namespace rk {
inline unsigned short float_to_bf16_bits(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<unsigned short>(x >> 16);
}
inline float bf16_bits_to_float(unsigned short b) {
    const uint32_t x = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}
}  // namespace rk

struct __hip_bfloat16 {
    unsigned short data;
    __hip_bfloat16() = default;
    __hip_bfloat16(float f) : data(rk::float_to_bf16_bits(f)) {}
    __hip_bfloat16(double d) : data(rk::float_to_bf16_bits(static_cast<float>(d))) {}
    __hip_bfloat16(int i) : data(rk::float_to_bf16_bits(static_cast<float>(i))) {}
    operator float() const { return rk::bf16_bits_to_float(data); }
    __hip_bfloat16 &operator+=(__hip_bfloat16 o) { return *this = __hip_bfloat16(float(*this) + float(o)); }
    __hip_bfloat16 &operator-=(__hip_bfloat16 o) { return *this = __hip_bfloat16(float(*this) - float(o)); }
    __hip_bfloat16 &operator*=(__hip_bfloat16 o) { return *this = __hip_bfloat16(float(*this) * float(o)); }
    __hip_bfloat16 &operator/=(__hip_bfloat16 o) { return *this = __hip_bfloat16(float(*this) / float(o)); }
};
struct alignas(4) __hip_bfloat162 {
    __hip_bfloat16 x, y;
};
typedef __hip_bfloat16 hip_bfloat16;

inline __hip_bfloat16 operator+(__hip_bfloat16 a, __hip_bfloat16 b) { return __hip_bfloat16(float(a) + float(b)); }
inline __hip_bfloat16 operator-(__hip_bfloat16 a, __hip_bfloat16 b) { return __hip_bfloat16(float(a) - float(b)); }
inline __hip_bfloat16 operator*(__hip_bfloat16 a, __hip_bfloat16 b) { return __hip_bfloat16(float(a) * float(b)); }
inline __hip_bfloat16 operator/(__hip_bfloat16 a, __hip_bfloat16 b) { return __hip_bfloat16(float(a) / float(b)); }
// The raw bits, as HIP and CUDA both spell it.
inline unsigned short __bfloat16_as_ushort(__hip_bfloat16 b) { return b.data; }
inline __hip_bfloat16 __ushort_as_bfloat16(unsigned short u) { __hip_bfloat16 r; r.data = u; return r; }
inline __hip_bfloat16 operator-(__hip_bfloat16 a) { __hip_bfloat16 r = a; r.data ^= 0x8000u; return r; }
inline bool operator==(__hip_bfloat16 a, __hip_bfloat16 b) { return float(a) == float(b); }
inline bool operator!=(__hip_bfloat16 a, __hip_bfloat16 b) { return float(a) != float(b); }
inline bool operator<(__hip_bfloat16 a, __hip_bfloat16 b) { return float(a) < float(b); }
inline bool operator>(__hip_bfloat16 a, __hip_bfloat16 b) { return float(a) > float(b); }

inline __hip_bfloat16 __float2bfloat16(float f) { return __hip_bfloat16(f); }
inline float __bfloat162float(__hip_bfloat16 b) { return float(b); }
inline __hip_bfloat16 __hadd(__hip_bfloat16 a, __hip_bfloat16 b) { return a + b; }
inline __hip_bfloat16 __hsub(__hip_bfloat16 a, __hip_bfloat16 b) { return a - b; }
inline __hip_bfloat16 __hmul(__hip_bfloat16 a, __hip_bfloat16 b) { return a * b; }
inline __hip_bfloat16 __hdiv(__hip_bfloat16 a, __hip_bfloat16 b) { return a / b; }
inline __hip_bfloat16 __hfma(__hip_bfloat16 a, __hip_bfloat16 b, __hip_bfloat16 c) {
    return __hip_bfloat16(fmaf(float(a), float(b), float(c)));
}
inline __hip_bfloat162 __floats2bfloat162_rn(float a, float b) { return __hip_bfloat162{__hip_bfloat16(a), __hip_bfloat16(b)}; }
inline __hip_bfloat162 __bfloat162bfloat162(__hip_bfloat16 a) { return __hip_bfloat162{a, a}; }
inline __hip_bfloat16 __low2bfloat16(__hip_bfloat162 v) { return v.x; }
inline __hip_bfloat16 __high2bfloat16(__hip_bfloat162 v) { return v.y; }
inline float __low2float(__hip_bfloat162 v) { return float(v.x); }
inline float __high2float(__hip_bfloat162 v) { return float(v.y); }

#endif
