// The gpu-benches microbenchmarks (github.com/te42kyfo/gpu-benches, CUDA originals by Dominik
// Ernst), written again in HIP for this repository: the same access patterns, sweeps and
// statistics; launched and timed from Rust (src/). Each kernel says which original it follows.
#include <hip/hip_runtime.h>

// Unrolling hints for the GPU compilers; the host compiler of the cpu backend does not know them.
#ifdef __HIP_CPU_RK__
#define UNROLL(n)
#else
#define UNROLL_STR(x) #x
#define UNROLL(n) _Pragma(UNROLL_STR(unroll n))
#endif

// ---------------------------------------------------------------- gpu-stream
// One element per thread. A static shared array that is never touched when `secretly_false` is
// 0 (the original's "spoiler") takes shared memory, so few blocks fit on a multiprocessor and the
// block size sets the occupancy.
#define STREAM_SPOILER 768

__global__ void stream_init(double* A, const double* __restrict__ B, const double* __restrict__ C,
                            int64_t n, int secretly_false) {
    __shared__ double spoiler[STREAM_SPOILER];
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i >= n) return;
    if (secretly_false) spoiler[threadIdx.x % STREAM_SPOILER] = B[threadIdx.x];
    A[i] = 0.23;
    if (secretly_false) A[i] = spoiler[i % STREAM_SPOILER];
}

__global__ void stream_read(double* A, const double* __restrict__ B, const double* __restrict__ C,
                            int64_t n, int secretly_false) {
    __shared__ double spoiler[STREAM_SPOILER];
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i >= n) return;
    if (secretly_false) spoiler[threadIdx.x % STREAM_SPOILER] = B[threadIdx.x];
    double t = B[i];
    if (secretly_false || t == 123.0) A[i] = t + spoiler[i % STREAM_SPOILER];
}

__global__ void stream_scale(double* A, const double* __restrict__ B, const double* __restrict__ C,
                             int64_t n, int secretly_false) {
    __shared__ double spoiler[STREAM_SPOILER];
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i >= n) return;
    if (secretly_false) spoiler[threadIdx.x % STREAM_SPOILER] = B[threadIdx.x];
    A[i] = B[i] * 1.2;
    if (secretly_false) A[i] = spoiler[i % STREAM_SPOILER];
}

__global__ void stream_triad(double* A, const double* __restrict__ B, const double* __restrict__ C,
                             int64_t n, int secretly_false) {
    __shared__ double spoiler[STREAM_SPOILER];
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i >= n) return;
    if (secretly_false) spoiler[threadIdx.x % STREAM_SPOILER] = B[threadIdx.x];
    A[i] = B[i] * 1.2 + C[i];
    if (secretly_false) A[i] = spoiler[i % STREAM_SPOILER];
}

__global__ void stream_3pt(double* A, const double* __restrict__ B, const double* __restrict__ C,
                           int64_t n, int secretly_false) {
    __shared__ double spoiler[STREAM_SPOILER];
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i >= n - 1 || i == 0) return;
    if (secretly_false) spoiler[threadIdx.x % STREAM_SPOILER] = B[threadIdx.x];
    A[i] = 0.5 * B[i - 1] - 1.0 * B[i] + 0.5 * B[i + 1];
    if (secretly_false) A[i] = spoiler[i % STREAM_SPOILER];
}

__global__ void stream_5pt(double* A, const double* __restrict__ B, const double* __restrict__ C,
                           int64_t n, int secretly_false) {
    __shared__ double spoiler[STREAM_SPOILER];
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i >= n - 2 || i < 2) return;
    if (secretly_false) spoiler[threadIdx.x % STREAM_SPOILER] = B[threadIdx.x];
    A[i] = 0.25 * B[i - 2] + 0.25 * B[i - 1] - 1.0 * B[i] + 0.5 * B[i + 1] + 0.5 * B[i + 2];
    if (secretly_false) A[i] = spoiler[i % STREAM_SPOILER];
}

// Fills a buffer (grid-stride), as the originals' initKernel.
__global__ void fill(double* A, int64_t n, double value) {
    for (int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x; i < n;
         i += (int64_t)blockDim.x * gridDim.x) {
        A[i] = value;
    }
}

// ---------------------------------------------------------------- gpu-cache
// In kernels/gpu_cache.hip, a library of its own.

// ---------------------------------------------------------------- gpu-l2-cache
// Each block reads N/2 pairs of doubles (N doubles a thread, 64: 512 kB a block of 1024) of a
// slice of `block_run` slices; consecutive blocks take consecutive slices, so the data set is
// `block_run` slices, shared by every multiprocessor through L2. N and the block size are
// template parameters as in the original (the loop unrolls fully); the index arithmetic is in
// `int`, as there (the largest index of the original's sweep, 9535 slices, fits).
template <int N, int BLOCKSIZE>
__global__ void l2_sum(double* __restrict__ A, const double* __restrict__ B, int block_run) {
    double sum = 0.0;
    for (int i = 0; i < N / 2; i++) {
        int idx = (blockDim.x * block_run * i + (blockIdx.x % block_run) * BLOCKSIZE) * 2 +
                  threadIdx.x;
        sum += B[idx] * B[idx + BLOCKSIZE];
    }
    sum *= 1.3;
    if (threadIdx.x > 1233 || sum == 23.12) A[threadIdx.x] += sum;
}
template __global__ void l2_sum<64, 1024>(double*, const double*, int);

// ---------------------------------------------------------------- gpu-latency
// Pointer chase: each load's address is the value loaded before, so loads cannot overlap; the
// time per step is the latency of wherever the chain lives (L1, L2, DRAM by its size).
__global__ void pchase(const int64_t* __restrict__ start, int64_t* __restrict__ dummy,
                       int64_t steps) {
    const int64_t* idx = start;
    for (int64_t s = 0; s < steps; s += 32) {
        UNROLL(32)
        for (int u = 0; u < 32; u++) {
            idx = (const int64_t*)*idx;
        }
    }
    if (threadIdx.x + blockIdx.x * blockDim.x > 12313) dummy[0] = (int64_t)idx;
}

// ---------------------------------------------------------------- gpu-strides
// Each thread reads one double `stride` elements after its neighbour's: from coalesced (1) to
// one cache line or sector per thread.
__global__ void strided_read(double* __restrict__ A, const double* __restrict__ B, int64_t n,
                             int stride) {
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i * stride >= n) return;
    double v = B[i * stride];
    if (v == 1233.0) A[i] = v;
}

// ---------------------------------------------------------------- gpu-small-kernels
// The original's `scale<double>`: one element a thread, an `int` size, launched back to back
// with the two buffers swapped each launch: the launch rate where the data set is small, and
// how short kernels use the device where it grows.
__global__ void small_kernels_scale(double* __restrict__ A, const double* __restrict__ B,
                                    const int size) {
    int tidx = threadIdx.x + blockIdx.x * blockDim.x;
    if (tidx >= size) return;
    A[tidx] = B[tidx] * 0.25;
}

// The same scale over a grid-stride loop (any grid covers any n): the ~10 µs kernel of
// `examples/ten_us.rs`.
__global__ void small_scale(double* __restrict__ A, const double* __restrict__ B, int64_t n) {
    for (int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x; i < n;
         i += (int64_t)blockDim.x * gridDim.x) {
        A[i] = B[i] * 0.25;
    }
}

// ---------------------------------------------------------------- gpu-roofline
// `iters` dependent multiply-adds on each element read: sweeping `iters` moves the kernel from
// memory bound to compute bound (2 flops per step).
__global__ void roofline(double* __restrict__ A, const double* __restrict__ B, int64_t n,
                         int iters) {
    for (int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x; i < n;
         i += (int64_t)blockDim.x * gridDim.x) {
        double v = B[i];
        for (int k = 0; k < iters; k++) {
            v = v * 1.0000001 + 0.0000001;
        }
        A[i] = v;
    }
}
