// Benchmark kernels (rocm-kernels/benches/cpu_backend.rs); the same source builds against
// ROCm's HIP-CPU for the side-by-side comparison (scripts/bench-hip-cpu.sh).
#include <hip/hip_runtime.h>

__global__ void bench_saxpy(float a, const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// (b) shared-memory block reduction with __syncthreads, 256 threads a block.
__global__ void bench_block_reduce(const float* __restrict__ in, float* __restrict__ out, int n) {
    __shared__ float partial[256];
    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + t;
    partial[t] = i < (unsigned)n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) partial[t] += partial[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = partial[0];
}

// (c) warp-shuffle reduction: shuffles within each wave, one atomic per wave.
__global__ void bench_warp_reduce(const float* __restrict__ in, float* __restrict__ out, int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < (unsigned)n ? in[i] : 0.0f;
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down(v, offset);
    if ((threadIdx.x & (warpSize - 1)) == 0) out[i / warpSize] = v;
}

// (c) written the common way, with the shuffles in a helper function (the region form inlines
// it; before, a collective inside a called function kept the kernel on per-thread fibers).
__device__ float bench_warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down(v, offset);
    return v;
}
__global__ void bench_warp_reduce_helper(const float* __restrict__ in, float* __restrict__ out, int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = bench_warp_sum(i < (unsigned)n ? in[i] : 0.0f);
    if ((threadIdx.x & (warpSize - 1)) == 0) out[i / warpSize] = v;
}

// (d) shared-memory tiled transpose, 32x8 threads moving 32x32 tiles.
__global__ void bench_transpose(const float* __restrict__ in, float* __restrict__ out, int width, int height) {
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < height && y + j < width) out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
