#include <hip/hip_runtime.h>

// A kernel that does next to nothing, so the harness's own cost shows.
__global__ void copy(int n, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
