// Kernel shapes the cpu backend's region form (rocm-kernels-build/src/cpu/region.rs) rewrites:
// tests/cpu_regions.rs runs each in region form and with per-thread fibers and compares.
#include <hip/hip_runtime.h>

struct Pair {
    float a;
    int b;
};

// `auto`, a struct and a float4 living across barriers; a const used as an array bound.
__global__ void shape_locals(const float* in, float* out, int n) {
    const int TILE = 64;
    __shared__ float s[TILE * 4];
    const unsigned t = threadIdx.x;
    auto g = blockIdx.x * blockDim.x + t;
    Pair p{in[g % n], (int)t};
    float4 v = make_float4(in[g % n], 1.0f, 2.0f, 3.0f);
    s[t] = p.a;
    __syncthreads();
    p.a += s[(t + 1) % blockDim.x];
    v.x += p.a;
    __syncthreads();
    out[g] = v.x + v.w + p.b + (float)g;
}

// Nested loops with barriers: one the same for every thread, a do-while whose trip count is
// kept per thread (it is the same for the block here).
__global__ void shape_loops(const float* in, float* out, int n) {
    __shared__ float s[256];
    unsigned t = threadIdx.x;
    float acc = 0.0f;
    for (int i = 0; i < 3; ++i) {
        s[t] = in[(blockIdx.x * blockDim.x + t + i) % n];
        __syncthreads();
        int k = 0;
        do {
            acc += s[(t + k) % blockDim.x];
            ++k;
            __syncthreads();
        } while (k < (int)(blockIdx.x % 3) + 1);
    }
    out[blockIdx.x * blockDim.x + t] = acc;
}

// Barriers in both branches of an if/else the whole block takes alike.
__global__ void shape_branches(const float* in, float* out, int n) {
    __shared__ float s[256];
    unsigned t = threadIdx.x;
    float v = in[(blockIdx.x * blockDim.x + t) % n];
    if (blockIdx.x % 2 == 0) {
        s[t] = v * 2.0f;
        __syncthreads();
        v = s[blockDim.x - 1 - t];
    } else {
        s[t] = v + 1.0f;
        __syncthreads();
        v = s[(t + 3) % blockDim.x] - s[t];
    }
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = v;
}

// Pointer parameters (restrict-qualified) moved per thread, a 3-D block, __syncthreads_count
// in a declaration.
__global__ void shape_params_3d(const float* __restrict__ in, float* __restrict__ out, int n) {
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned nt = blockDim.x * blockDim.y * blockDim.z;
    in += blockIdx.x * nt;
    out += blockIdx.x * nt;
    float v = in[t % n];
    int big = __syncthreads_count(v > 3.0f);
    out[t] = v + (float)big + (float)(threadIdx.z * 100 + threadIdx.y * 10 + threadIdx.x);
}

// Dynamic shared memory, a lambda and a switch in the code between barriers, a shuffle with a
// width.
__global__ void shape_dynamic(const float* in, float* out, int n) {
    extern __shared__ float dyn[];
    unsigned t = threadIdx.x;
    auto sq = [](float x) { return x * x; };
    float v = in[(blockIdx.x * blockDim.x + t) % n];
    switch (t % 3) {
        case 0: v = sq(v); break;
        case 1: v += 1.0f; break;
        default: break;
    }
    dyn[t] = v;
    __syncthreads();
    float w = dyn[(t + 5) % blockDim.x] + __shfl_xor(v, 1, 16);
    out[blockIdx.x * blockDim.x + t] = w;
}

// A template with a shared array of T, and lanes returning after the last barrier.
template <typename T, int B>
__global__ void shape_template(const T* in, T* out, int n) {
    __shared__ T s[B];
    int t = threadIdx.x;
    s[t] = in[(blockIdx.x * B + t) % n];
    __syncthreads();
    if (t >= B / 2) return;
    out[blockIdx.x * B + t] = s[t] + s[t + B / 2];
    out[blockIdx.x * B + t + B / 2] = T(0);
}
template __global__ void shape_template<float, 128>(const float*, float*, int);

// No barrier (one call runs the whole block), and the thread's index read only inside a helper
// called with explicit template arguments (`lane_value<float>(...)`): the block function must
// still set each lane's coordinates for it (HeCBench-style helpers; the decode template's first
// version read thread 0's everywhere).
template <typename T>
__device__ T lane_value(const T* in, int n) {
    return in[(blockIdx.x * blockDim.x + threadIdx.x) % n] * T(2);
}
__global__ void shape_template_helper(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = lane_value<float>(in, n) + 1.0f;
}

// Locals reached through pointers taken from them, in later statements (HeCBench's relu: a float4
// loaded, its halves used through half2*, written back through the float4): a copy of `in`.
__global__ void shape_type_pun(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (4 * i + 3 >= n) return;
    float4 v = reinterpret_cast<const float4*>(in)[i];
    float2* halves = reinterpret_cast<float2*>(&v);
    float4 w;
    float2* w_halves = reinterpret_cast<float2*>(&w);
    for (int k = 0; k < 2; k++) w_halves[k] = halves[k];
    reinterpret_cast<float4*>(out)[i] = w;
}

// A float4 local written through `unsigned short*` (HeCBench's relu writes one through `half2*`),
// then stored as the float4: a copy of `in` unless the host compiler's strict-aliasing rule
// drops the writes.
__global__ void shape_half_pun(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (4 * i + 3 >= n) return;
    float4 v = reinterpret_cast<const float4*>(in)[i];
    const unsigned short* vs = reinterpret_cast<const unsigned short*>(&v);
    float4 w;
    unsigned short* ws = reinterpret_cast<unsigned short*>(&w);
    for (int k = 0; k < 8; k++) ws[k] = vs[k];
    reinterpret_cast<float4*>(out)[i] = w;
}
