// expect: compiles
// <cmath>'s functions and classification macros at global scope, and the CUDA/HIP float forms.
#include <hip/hip_runtime.h>
__global__ void math(float* x, double* d) {
    x[0] = fmaxf(x[0], 1.f) + sqrtf(x[2]) + expf(x[3]) + fabsf(x[8]) + rsqrtf(x[1]) + __expf(x[2]) + __fdividef(x[1], x[2]);
    x[1] = isnan(x[4]) + isinf(x[5]) + isfinite(x[6]) + signbit(x[7]) + copysignf(1.f, x[0]) + nanf("");
    x[2] = fminf(x[0], x[1]) + min(x[0], x[1]) + max(x[1], x[2]) + ::fabs(x[2]) + powf(x[1], 2.f) + log1pf(x[3]);
    d[0] = sqrt(d[1]) + fma(d[0], d[1], d[2]) + exp(d[2]) + fabs(d[3]) + isnan(d[4]) + floor(d[5]) + rint(d[6]);
}
