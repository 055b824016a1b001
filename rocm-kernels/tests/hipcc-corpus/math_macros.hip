// expect: compiles
// <cmath>'s macros and POSIX's M_ constants, used without an include (hipcc's hip_runtime.h brings
// them); the INFINITY case is issue 26's `identifier "INFINITY" is undefined` under NVRTC.
#include <hip/hip_runtime.h>
__global__ void row_max(const float* x, float* out, int n) {
    float m = -INFINITY;
    for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, x[i]);
    out[threadIdx.x] = m;
}
__global__ void constants(float* f, double* d) {
    f[0] = NAN + HUGE_VALF + (float)M_PI + (float)M_PI_2 + (float)M_PI_4 + (float)M_E;
    f[1] = (float)(M_SQRT2 + M_SQRT1_2 + M_LN2 + M_LN10 + M_LOG2E + M_LOG10E + M_1_PI + M_2_PI + M_2_SQRTPI);
    d[0] = HUGE_VAL + M_PI;
}
