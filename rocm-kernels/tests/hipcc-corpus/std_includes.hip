// expect: compiles
// The standard headers kernels include themselves: NVRTC has none of them, so the run-time
// include set provides them (include/nvidia/rtc), with what hipcc's give device code.
#include <cstdint>
#include <cstddef>
#include <cmath>
#include <cfloat>
#include <climits>
#include <cstdio>
#include <cassert>
#include <algorithm>
#include <limits>
#include <stdint.h>
#include <math.h>
#include <float.h>
#include <hip/hip_runtime.h>
__global__ void k(float* x, uint64_t* u) {
    x[0] = FLT_MAX + std::min(x[1], x[2]) + INFINITY + std::numeric_limits<float>::max() + std::sqrt(x[3]);
    u[0] = UINT64_MAX - (uint64_t)INT_MAX + SIZE_MAX;
    assert(x[0] > 0.0f);
}
