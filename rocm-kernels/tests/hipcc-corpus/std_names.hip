// expect: compiles
// The std names hipcc's headers declare for device code: <algorithm>'s min/max, <limits>,
// <cmath>'s overloads (constexpr host functions hipcc lets device code call).
#include <hip/hip_runtime.h>
__global__ void std_float(float* x, int* i) {
    x[0] = std::min(x[0], x[1]) + std::max(x[0], 2.f) + std::abs(x[1]) + std::sqrt(x[3]) + std::exp(x[1])
         + std::floor(x[2]) + std::ceil(x[2]) + std::pow(x[1], 2.f) + std::log(x[4]) + std::tanh(x[5]);
    x[1] = std::fmod(x[1], 2.f) + std::fma(x[0], x[1], x[2]) + std::erf(x[3]) + std::fmax(x[0], x[1])
         + std::fmin(x[0], x[1]) + std::round(x[2]) + std::trunc(x[3]) + std::exp2(x[1]) + std::log2(x[2]);
    x[2] = std::isnan(x[3]) + std::isinf(x[4]) + std::isfinite(x[5]) + std::signbit(x[6]) + std::copysign(1.f, x[0]);
    x[3] = std::numeric_limits<float>::max() + std::numeric_limits<float>::infinity()
         + std::numeric_limits<float>::lowest() + std::numeric_limits<float>::epsilon();
    i[0] = std::numeric_limits<int>::max() + std::min(i[1], i[2]) + std::max(i[1], i[2]) + std::abs(i[3]);
    i[1] = std::numeric_limits<int>::min();
}
__global__ void std_double(double* d) {
    d[0] = std::fmod(d[1], 2.0) + std::fma(d[0], d[1], d[2]) + std::erf(d[3]) + std::erfc(d[3]) + std::sin(d[2])
         + std::atan2(d[1], d[2]) + std::hypot(d[0], d[1]) + std::cbrt(d[2]) + std::lgamma(d[0]) + std::ldexp(d[1], 3);
    double ip;
    d[1] = std::modf(d[2], &ip) + ip + std::numeric_limits<double>::quiet_NaN();
}
