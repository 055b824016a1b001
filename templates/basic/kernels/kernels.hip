// The crate's kernels. Each one has a Rust reference in src/lib.rs and a check in
// tests/kernels.rs; `cargo rocm test` runs every check on every backend that can run here.
#include <hip/hip_runtime.h>

// Elementwise: y[i] = a * x[i] + y[i] for i < n.
__global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}

// Must match BLOCK in src/lib.rs.
#define BLOCK 256

// Reduction in shared memory: block b writes the sum of x[b*BLOCK .. (b+1)*BLOCK) (within n)
// to partial[b]. Launch with blocks of exactly BLOCK threads.
__global__ void __launch_bounds__(BLOCK) block_sum(const float* x, float* partial, int n) {
    __shared__ float tile[BLOCK];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    tile[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
        if (t < stride) {
            tile[t] += tile[t + stride];
        }
        __syncthreads();
    }
    if (t == 0) {
        partial[blockIdx.x] = tile[0];
    }
}
