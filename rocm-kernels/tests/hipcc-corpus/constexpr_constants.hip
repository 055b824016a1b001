// expect: compiles
// The macros in constant expressions, as tables and initialisers use them.
#include <hip/hip_runtime.h>
#include <cfloat>  // hipcc: FLT_MAX needs it; nvcc and NVRTC have it either way
#include <climits>
constexpr float kInf = INFINITY;
constexpr double kPi = M_PI;
__constant__ float kNan = NAN;
static_assert(FLT_MAX > 1e38f, "cfloat");
static_assert(INT_MAX == 2147483647, "climits");
static_assert(sizeof(uint64_t) == 8 && sizeof(int16_t) == 2, "cstdint");
__global__ void k(float* x) { x[threadIdx.x] = kInf + kNan + (float)kPi; }
