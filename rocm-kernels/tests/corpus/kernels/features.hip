// The kernel-language corpus of the cpu backend: each kernel exercises one feature; the expected
// results are computed in rocm-kernels/tests/cpu_corpus.rs.
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <hip/hip_bf16.h>

__global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// Each thread writes its global linear id at the position given by the 3-D coordinates.
__global__ __launch_bounds__(64) void coords(unsigned int* out) {
    unsigned int bx = hipBlockIdx_x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned int threads = blockDim.x * blockDim.y * hipBlockDim_z;
    unsigned int t = threadIdx.x + blockDim.x * (hipThreadIdx_y + blockDim.y * threadIdx.z);
    out[bx * threads + t] = (threadIdx.x + 1) + 100 * (threadIdx.y + 1) + 10000 * (threadIdx.z + 1) +
                            1000000 * blockIdx.x + 10000000 * blockIdx.y + 100000000 * blockIdx.z;
}

// Static shared memory + __syncthreads: block sums by a tree reduction (256 threads a block).
__global__ void block_sum_static(const float* in, float* out, int n) {
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

// extern __shared__: reverse each block's slice through dynamic shared memory.
__global__ void reverse_dynamic(const int* in, int* out) {
    extern __shared__ int buf[];
    unsigned int t = threadIdx.x, n = blockDim.x, base = blockIdx.x * n;
    buf[t] = in[base + t];
    __syncthreads();
    out[base + t] = buf[n - 1 - t];
}

// HIP_DYNAMIC_SHARED, two arrays carved out of it.
__global__ void dynamic_macro(const float* in, float* out) {
    HIP_DYNAMIC_SHARED(float, smem)
    float* a = smem;
    float* b = smem + blockDim.x;
    unsigned int t = threadIdx.x;
    a[t] = in[blockIdx.x * blockDim.x + t];
    b[t] = 2.0f * a[t];
    __syncthreads();
    unsigned int o = (t + 1) % blockDim.x;
    out[blockIdx.x * blockDim.x + t] = a[o] + b[o];
}

// __syncthreads_count/_and/_or of (in[i] > 0); results per block.
__global__ void sync_predicates(const int* in, int* out) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    int p = in[i] > 0;
    int c = __syncthreads_count(p);
    int a = __syncthreads_and(p);
    int o = __syncthreads_or(p);
    if (threadIdx.x == 0) {
        out[3 * blockIdx.x] = c;
        out[3 * blockIdx.x + 1] = a;
        out[3 * blockIdx.x + 2] = o;
    }
}

// Atomics on every type, from every thread of the grid. Layout of the outputs in cpu_corpus.rs.
__global__ void atomics(int* ints, unsigned int* uints, unsigned long long* ulls, long long* lls, float* f,
                        double* d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&ints[0], 1);
    atomicSub(&ints[1], 2);
    atomicMin(&ints[2], -i);
    atomicMax(&ints[3], i);
    atomicAnd(&ints[4], ~(1 << (i % 31)));
    atomicOr(&ints[5], 1 << (i % 31));
    atomicXor(&ints[6], i);
    atomicExch(&ints[7], 7);
    if (atomicCAS(&ints[8], 0, i + 1) == 0) atomicAdd(&ints[9], 1);  // exactly one thread wins
    atomicInc(&uints[0], 9);  // wraps to 0 after 9
    atomicDec(&uints[1], 1000000);
    atomicAdd(&uints[2], 3u);
    atomicMax(&uints[3], (unsigned)i);
    atomicAdd(&ulls[0], 1ull << 33);
    atomicCAS(&ulls[1], 0ull, 5ull);
    atomicMin(&lls[0], -(long long)i * 1000000000ll);
    atomicAdd(&f[0], 0.5f);
    atomicMax(&f[1], (float)i);
    atomicAdd(&d[0], 0.25);
    atomicExch(&f[2], 1.5f);
}

__global__ void bits(const unsigned int* in, unsigned int* out) {
    unsigned int i = threadIdx.x;
    unsigned int x = in[i];
    unsigned long long y = ((unsigned long long)x << 32) | (x ^ 0xffffffffu);
    unsigned int* o = out + 10 * i;
    o[0] = __popc(x);
    o[1] = __clz((int)x);
    o[2] = __ffs((int)x);
    o[3] = __brev(x);
    o[4] = __popcll(y);
    o[5] = __clzll((long long)x);
    o[6] = __ffsll((long long)(y & 0xffffffff00000000ull));
    o[7] = (unsigned int)(__brevll(y) >> 32);
    o[8] = __umulhi(x, 0x9e3779b9u);
    o[9] = __byte_perm(x, 0x11223344u, 0x5140);
}

// Math, with fast intrinsics. One input, many outputs.
__global__ void math(const float* in, float* out, double* dout) {
    unsigned int i = threadIdx.x;
    float x = in[i];
    float* o = out + 12 * i;
    o[0] = expf(x);
    o[1] = __expf(x);
    o[2] = rsqrtf(x + 1.0f);
    o[3] = fmaf(x, 2.0f, 1.0f);
    o[4] = __fdividef(x, 3.0f);
    o[5] = sinf(x) + __cosf(x);
    o[6] = __logf(x + 1.0f);
    o[7] = __powf(x + 1.0f, 1.5f);
    o[8] = fminf(x, 0.5f) + max(x, 0.25f) + min(1.0f, x);
    o[9] = __saturatef(x - 0.5f);
    o[10] = __int_as_float(__float_as_int(x));
    o[11] = (float)min((int)(x * 10.0f), 3) + (float)abs(-2);
    dout[i] = sqrt((double)x) + rsqrt((double)x + 1.0) + fma((double)x, 2.0, 0.5);
}

__global__ void vectors(const float4* in, float4* out, int2* iout) {
    unsigned int i = threadIdx.x;
    float4 v = in[i];
    float4 w = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
    float4 r = v * 2.0f + w - make_float4(0.5f, 0.5f, 0.5f, 0.5f);
    r += w;
    r = -r / 2.0f;
    out[i] = r;
    int2 a = make_int2((int)i, (int)i * 2);
    a += make_int2(1, 1);
    iout[i] = a * 3;
}

// __half and bfloat16 round trips and arithmetic.
__global__ void low_precision(const float* in, float* out, unsigned short* bits) {
    unsigned int i = threadIdx.x;
    __half h = __float2half(in[i]);
    __half h2 = __hadd(h, __float2half(1.0f));
    __hip_bfloat16 b = __float2bfloat16(in[i]);
    __hip_bfloat16 b2 = b * __float2bfloat16(2.0f);
    out[3 * i] = __half2float(h);
    out[3 * i + 1] = __half2float(h2 * h2);
    out[3 * i + 2] = __bfloat162float(b2);
    bits[2 * i] = __half_as_ushort(h);
    bits[2 * i + 1] = __bfloat16_as_ushort(b);
}

template <typename T>
__global__ void scale(T* x, T factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * factor;
}
template __global__ void scale<float>(float*, float, int);
template __global__ void scale<int>(int*, int, int);
template __global__ void scale<double>(double*, double, int);
template __global__ void scale<__hip_bfloat16>(__hip_bfloat16*, __hip_bfloat16, int);

namespace corpus {
__global__ void fill_iota(int* out, int start) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = start + i;
    __threadfence();
    __threadfence_block();
}
}  // namespace corpus

// Device printf and a passing assert.
__global__ void print_and_assert(const int* in, int* out) {
    int i = threadIdx.x;
    assert(in[i] >= 0);
    if (i == 0) printf("cpu backend printf from block %u thread %u: %d\n", blockIdx.x, threadIdx.x, in[i]);
    out[i] = in[i] + 1;
}

// Shared-memory tiled transpose of a width x height matrix, 16x16 tiles, 2-D blocks.
__global__ void transpose_tiled(const float* in, float* out, int width, int height) {
    __shared__ float tile[16][17];
    int x = blockIdx.x * 16 + threadIdx.x;
    int y = blockIdx.y * 16 + threadIdx.y;
    if (x < width && y < height) tile[threadIdx.y][threadIdx.x] = in[y * width + x];
    __syncthreads();
    x = blockIdx.y * 16 + threadIdx.x;
    y = blockIdx.x * 16 + threadIdx.y;
    if (x < height && y < width) out[y * height + x] = tile[threadIdx.x][threadIdx.y];
}
