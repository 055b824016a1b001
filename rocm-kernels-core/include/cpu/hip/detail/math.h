/* Math beyond <cmath>: HIP's fast intrinsics (here: the accurate functions, which are at least as
 * precise), reciprocal square roots, bit casts and conversions with a rounding mode. */
#ifndef RK_CPU_MATH_H
#define RK_CPU_MATH_H

#define RK_MINMAX(T)                                      \
    inline T min(T a, T b) { return b < a ? b : a; }      \
    inline T max(T a, T b) { return a < b ? b : a; }
RK_MINMAX(int)
RK_MINMAX(unsigned int)
RK_MINMAX(long)
RK_MINMAX(unsigned long)
RK_MINMAX(long long)
RK_MINMAX(unsigned long long)
#undef RK_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int umax(unsigned int a, unsigned int b) { return a < b ? b : a; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a < b ? b : a; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a < b ? b : a; }

inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / cbrt(x); }
inline float rhypotf(float x, float y) { return 1.0f / hypotf(x, y); }
inline float norm3df(float a, float b, float c) { return sqrtf(a * a + b * b + c * c); }
inline float rnorm3df(float a, float b, float c) { return 1.0f / norm3df(a, b, c); }
inline float norm4df(float a, float b, float c, float d) { return sqrtf(a * a + b * b + c * c + d * d); }
inline float sinpif(float x) { return sinf(static_cast<float>(M_PI) * x); }
inline float cospif(float x) { return cosf(static_cast<float>(M_PI) * x); }
inline double sinpi(double x) { return sin(M_PI * x); }
inline double cospi(double x) { return cos(M_PI * x); }
inline void sincospif(float x, float *s, float *c) { *s = sinpif(x); *c = cospif(x); }
inline float saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float fdividef(float a, float b) { return a / b; }

inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float *s, float *c) { *s = sinf(x); *c = cosf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return saturatef(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline double __drcp_rn(double x) { return 1.0 / x; }
inline double __dsqrt_rn(double x) { return sqrt(x); }

namespace rk {
template <class To, class From>
inline To bit_cast(From f) {
    static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
    To t;
    std::memcpy(&t, &f, sizeof t);
    return t;
}
}  // namespace rk
inline int __float_as_int(float x) { return rk::bit_cast<int>(x); }
inline unsigned int __float_as_uint(float x) { return rk::bit_cast<unsigned int>(x); }
inline float __int_as_float(int x) { return rk::bit_cast<float>(x); }
inline float __uint_as_float(unsigned int x) { return rk::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return rk::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return rk::bit_cast<double>(x); }
inline int __double2hiint(double x) { return static_cast<int>(rk::bit_cast<unsigned long long>(x) >> 32); }
inline int __double2loint(double x) { return static_cast<int>(rk::bit_cast<unsigned long long>(x)); }
inline double __hiloint2double(int hi, int lo) {
    return rk::bit_cast<double>((static_cast<unsigned long long>(static_cast<unsigned int>(hi)) << 32) |
                                static_cast<unsigned int>(lo));
}
inline int __float2int_rn(float x) { return static_cast<int>(nearbyintf(x)); }
inline int __float2int_rz(float x) { return static_cast<int>(x); }
inline int __float2int_rd(float x) { return static_cast<int>(floorf(x)); }
inline int __float2int_ru(float x) { return static_cast<int>(ceilf(x)); }
inline unsigned int __float2uint_rn(float x) { return static_cast<unsigned int>(nearbyintf(x)); }
inline unsigned int __float2uint_rz(float x) { return static_cast<unsigned int>(x); }
inline long long __float2ll_rn(float x) { return static_cast<long long>(nearbyintf(x)); }
inline long long __float2ll_rz(float x) { return static_cast<long long>(x); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline float __uint2float_rn(unsigned int x) { return static_cast<float>(x); }
inline int __double2int_rn(double x) { return static_cast<int>(nearbyint(x)); }
inline int __double2int_rz(double x) { return static_cast<int>(x); }
inline float __double2float_rn(double x) { return static_cast<float>(x); }
inline double __int2double_rn(int x) { return static_cast<double>(x); }

#endif
