/* __half and __half2 for the cpu backend: IEEE binary16 storage, arithmetic in float (rounded back
 * to half after each operation, as HIP does for scalar half math), round-to-nearest-even. */
#ifndef RK_CPU_HIP_FP16_H
#define RK_CPU_HIP_FP16_H

#include <cstdint>
#include <cstring>

namespace rk {
inline unsigned short float_to_half_bits(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xff) return static_cast<unsigned short>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
    const int e = static_cast<int>(exp) - 127 + 15;
    if (e >= 31) return static_cast<unsigned short>(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return static_cast<unsigned short>(sign);
        mant |= 0x800000u;
        const int shift = 14 - e;
        uint32_t h = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) ++h;
        return static_cast<unsigned short>(sign | h);
    }
    uint32_t h = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
    const uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry rounds up into inf: correct
    return static_cast<unsigned short>(sign | h);
}

inline float half_bits_to_float(unsigned short h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {
            int e = -1;
            do {
                ++e;
                mant <<= 1;
            } while (!(mant & 0x400u));
            x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (mant << 13);
    } else {
        x = sign | ((exp + 112u) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}
}  // namespace rk

struct __half {
    unsigned short __x;
    __half() = default;
    __half(float f) : __x(rk::float_to_half_bits(f)) {}
    __half(double d) : __x(rk::float_to_half_bits(static_cast<float>(d))) {}
    __half(int i) : __x(rk::float_to_half_bits(static_cast<float>(i))) {}
    __half(unsigned int i) : __x(rk::float_to_half_bits(static_cast<float>(i))) {}
    operator float() const { return rk::half_bits_to_float(__x); }
    __half &operator+=(__half o) { return *this = __half(float(*this) + float(o)); }
    __half &operator-=(__half o) { return *this = __half(float(*this) - float(o)); }
    __half &operator*=(__half o) { return *this = __half(float(*this) * float(o)); }
    __half &operator/=(__half o) { return *this = __half(float(*this) / float(o)); }
};
inline __half operator+(__half a, __half b) { return __half(float(a) + float(b)); }
inline __half operator-(__half a, __half b) { return __half(float(a) - float(b)); }
inline __half operator*(__half a, __half b) { return __half(float(a) * float(b)); }
inline __half operator/(__half a, __half b) { return __half(float(a) / float(b)); }
inline __half operator-(__half a) { __half r = a; r.__x ^= 0x8000u; return r; }
inline bool operator==(__half a, __half b) { return float(a) == float(b); }
inline bool operator!=(__half a, __half b) { return float(a) != float(b); }
inline bool operator<(__half a, __half b) { return float(a) < float(b); }
inline bool operator>(__half a, __half b) { return float(a) > float(b); }
inline bool operator<=(__half a, __half b) { return float(a) <= float(b); }
inline bool operator>=(__half a, __half b) { return float(a) >= float(b); }

struct alignas(4) __half2 {
    __half x, y;
};
typedef __half half;
typedef __half2 half2;

inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half h) { return float(h); }
inline __half __double2half(double d) { return __half(d); }
inline __half __int2half_rn(int i) { return __half(i); }
inline int __half2int_rn(__half h) { return static_cast<int>(nearbyintf(float(h))); }
inline int __half2int_rz(__half h) { return static_cast<int>(float(h)); }
inline short __half_as_short(__half h) { return static_cast<short>(h.__x); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline __half __short_as_half(short s) { __half h; h.__x = static_cast<unsigned short>(s); return h; }
inline __half __ushort_as_half(unsigned short s) { __half h; h.__x = s; return h; }
inline __half __hadd(__half a, __half b) { return a + b; }
inline __half __hsub(__half a, __half b) { return a - b; }
inline __half __hmul(__half a, __half b) { return a * b; }
inline __half __hdiv(__half a, __half b) { return a / b; }
inline __half __hneg(__half a) { return -a; }
inline __half __habs(__half a) { __half r = a; r.__x &= 0x7fffu; return r; }
inline __half __hfma(__half a, __half b, __half c) { return __half(fmaf(float(a), float(b), float(c))); }
inline __half __hmax(__half a, __half b) { return __half(fmaxf(float(a), float(b))); }
inline __half __hmin(__half a, __half b) { return __half(fminf(float(a), float(b))); }
inline bool __heq(__half a, __half b) { return a == b; }
inline bool __hne(__half a, __half b) { return a != b; }
inline bool __hlt(__half a, __half b) { return a < b; }
inline bool __hle(__half a, __half b) { return a <= b; }
inline bool __hgt(__half a, __half b) { return a > b; }
inline bool __hge(__half a, __half b) { return a >= b; }
inline bool __hisnan(__half a) { return (a.__x & 0x7c00u) == 0x7c00u && (a.__x & 0x3ffu); }
inline bool __hisinf(__half a) { return (a.__x & 0x7fffu) == 0x7c00u; }
inline __half hsqrt(__half a) { return __half(sqrtf(float(a))); }
inline __half hrsqrt(__half a) { return __half(1.0f / sqrtf(float(a))); }
inline __half hexp(__half a) { return __half(expf(float(a))); }
inline __half hlog(__half a) { return __half(logf(float(a))); }
inline __half hsin(__half a) { return __half(sinf(float(a))); }
inline __half hcos(__half a) { return __half(cosf(float(a))); }
inline __half hfloor(__half a) { return __half(floorf(float(a))); }
inline __half hceil(__half a) { return __half(ceilf(float(a))); }

inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
inline __half2 __float2half2_rn(float a) { return __half2{__half(a), __half(a)}; }
inline __half2 __half2half2(__half a) { return __half2{a, a}; }
inline float __low2float(__half2 h) { return float(h.x); }
inline float __high2float(__half2 h) { return float(h.y); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline __half2 __hadd2(__half2 a, __half2 b) { return __half2{a.x + b.x, a.y + b.y}; }
inline __half2 __hsub2(__half2 a, __half2 b) { return __half2{a.x - b.x, a.y - b.y}; }
inline __half2 __hmul2(__half2 a, __half2 b) { return __half2{a.x * b.x, a.y * b.y}; }
inline __half2 __h2div(__half2 a, __half2 b) { return __half2{a.x / b.x, a.y / b.y}; }
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return __half2{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; }
inline __half2 __hneg2(__half2 a) { return __half2{-a.x, -a.y}; }
inline __half2 operator+(__half2 a, __half2 b) { return __hadd2(a, b); }
inline __half2 operator-(__half2 a, __half2 b) { return __hsub2(a, b); }
inline __half2 operator*(__half2 a, __half2 b) { return __hmul2(a, b); }
inline __half2 operator/(__half2 a, __half2 b) { return __h2div(a, b); }
inline __half2 __habs2(__half2 a) { return __half2{__habs(a.x), __habs(a.y)}; }
inline __half2 __hmax2(__half2 a, __half2 b) { return __half2{__hmax(a.x, b.x), __hmax(a.y, b.y)}; }
inline __half2 __hmin2(__half2 a, __half2 b) { return __half2{__hmin(a.x, b.x), __hmin(a.y, b.y)}; }
/* Lane-wise comparisons: 1.0 where true, 0.0 where false (HIP's and CUDA's __h*2); __hb*2: both
 * lanes true. */
#define RK_H2_CMP(NAME, OP)                                                                          \
    inline __half2 __h##NAME##2(__half2 a, __half2 b) {                                             \
        return __half2{__half((a.x OP b.x) ? 1.0f : 0.0f), __half((a.y OP b.y) ? 1.0f : 0.0f)};      \
    }                                                                                                \
    inline bool __hb##NAME##2(__half2 a, __half2 b) { return (a.x OP b.x) && (a.y OP b.y); }
RK_H2_CMP(eq, ==)
RK_H2_CMP(ne, !=)
RK_H2_CMP(lt, <)
RK_H2_CMP(le, <=)
RK_H2_CMP(gt, >)
RK_H2_CMP(ge, >=)
#undef RK_H2_CMP
inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2{a.x, b.x}; }
inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2{a.y, b.y}; }
inline __half2 __low2half2(__half2 a) { return __half2{a.x, a.x}; }
inline __half2 __high2half2(__half2 a) { return __half2{a.y, a.y}; }
inline __half2 __lowhigh2highlow(__half2 a) { return __half2{a.y, a.x}; }
inline __half2 h2exp(__half2 a) { return __half2{hexp(a.x), hexp(a.y)}; }
inline __half2 h2log(__half2 a) { return __half2{hlog(a.x), hlog(a.y)}; }
inline __half2 h2sqrt(__half2 a) { return __half2{hsqrt(a.x), hsqrt(a.y)}; }
inline __half2 h2rsqrt(__half2 a) { return __half2{hrsqrt(a.x), hrsqrt(a.y)}; }
#ifdef RK_CPU_VECTOR_TYPES_H
/* With HIP's vector types (hip_runtime.h includes them first): float2 conversions. */
inline float2 __half22float2(__half2 h) { return float2{float(h.x), float(h.y)}; }
inline __half2 __float22half2_rn(float2 f) { return __half2{__half(f.x), __half(f.y)}; }
#endif

#endif
