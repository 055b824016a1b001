// gpu-cache (github.com/te42kyfo/gpu-benches, CUDA original by Dominik Ernst), written again in
// HIP for this repository, in its own library so that only this benchmark pays for compiling its
// 82 instantiations (NVRTC compiles a library at load time where there was no nvcc at build).
//
// One block of 256 threads per multiprocessor; every block sums the same data set of N elements
// `iters` times. The data-set size N and the block size are template parameters, as in the
// original: the inner loop has a trip count known at compile time (N / 256 loads per thread and
// pass, fully unrolled up to 64 of them), so a pass over a data set that fits the first-level
// cache is a run of independent loads, not a loop. A data set that fits L1 is served from it, a
// larger one from L2, then DRAM. `zero` is 0 at run time; adding it to the pointer each pass keeps
// the compiler from hoisting the loads out of the pass loop.
//
// The element is a float on NVIDIA (and on the cpu backend), a float4 with HIP on AMD, as in the
// original; the host side asks `cache_elem_bytes` which one the build has.
#include <hip/hip_runtime.h>

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
typedef float4 cache_t;
#define CACHE_ELEM_BYTES 16
#else
typedef float cache_t;
#define CACHE_ELEM_BYTES 4
#endif

// Unrolling hints for the GPU compilers; the host compiler of the cpu backend does not know them.
#ifdef __HIP_CPU_RK__
#define UNROLL(n)
#else
#define UNROLL_STR(x) #x
#define UNROLL(n) _Pragma(UNROLL_STR(unroll n))
#endif

template <int N, int BLOCKSIZE>
__global__ void cache_sum(cache_t* __restrict__ A, const cache_t* __restrict__ B, int iters,
                          int zero) {
    cache_t sum = (cache_t)0;
    B += threadIdx.x;
    // Passes of a small data set are unrolled so that about 32 loads are in flight per thread.
    UNROLL(N / BLOCKSIZE > 32 ? 1 : 32 / (N / BLOCKSIZE))
    for (int iter = 0; iter < iters; iter++) {
        B += zero;
        UNROLL(N / BLOCKSIZE >= 64 ? 32 : N / BLOCKSIZE)
        for (int i = 0; i < N; i += BLOCKSIZE) {
            sum += B[i];
        }
        sum *= (cache_t)1.3f;
    }
    if (sum == (cache_t)1233.0f) A[threadIdx.x] += sum;
}

// The element size of this build (one thread writes it): 4 (float) or 16 (float4).
__global__ void cache_elem_bytes(int* out) {
    if (threadIdx.x == 0 && blockIdx.x == 0) *out = CACHE_ELEM_BYTES;
}

// The original's data-set sizes in elements (its `measure<N>()` calls): 256 to 5·512 by hand,
// every 512 up to 32·512, then `expSeries(1..49)` without 15 (×1.17 a step from 32·512,
// truncated each step, rounded down to 512). `src/benches/cache.rs` computes the same list and a
// test checks that every size has its kernel.
#define CACHE_SIZES(X) \
    X(256) X(512) X(768) X(1024) X(1536) X(2048) X(2560) X(3072) X(3584) X(4096) X(4608) X(5120) \
    X(5632) X(6144) X(6656) X(7168) X(7680) X(8192) X(8704) X(9216) X(9728) X(10240) X(10752) \
    X(11264) X(11776) X(12288) X(12800) X(13312) X(13824) X(14336) X(14848) X(15360) X(15872) \
    X(16384) X(18944) X(22016) X(26112) X(30208) X(35840) X(41984) X(49152) X(57344) X(67072) \
    X(78336) X(91648) X(107520) X(125952) X(147456) X(201728) X(236032) X(276480) X(323072) \
    X(378368) X(442368) X(517632) X(605696) X(709120) X(829440) X(970752) X(1135616) X(1328640) \
    X(1554944) X(1819136) X(2128384) X(2490368) X(2913792) X(3408896) X(3988480) X(4666368) \
    X(5459968) X(6388224) X(7474176) X(8744960) X(10231808) X(11971072) X(14006272) X(16387072) \
    X(19172864) X(22432768) X(26246144) X(30707712) X(35928576)

#define CACHE_INSTANTIATE(n) \
    template __global__ void cache_sum<n, 256>(cache_t*, const cache_t*, int, int);
CACHE_SIZES(CACHE_INSTANTIATE)
