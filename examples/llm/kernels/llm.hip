// The inference kernels of a decoder-only transformer layer, in f32 and in the half-precision
// types models keep activations, weights and caches in: f16 (`__half`) and bf16
// (`__hip_bfloat16`). A half variant (`scale_f16`, `rmsnorm_bf16`, `flash_attention_d128_bf16`)
// reads and writes its type and computes in f32 (the attention accumulates in f32 and keeps its
// online-softmax state in f32). Each kernel is written once, as a template over the element type;
// a `__global__` function per type names it. Each one has a Rust reference in src/lib.rs (f64,
// rounded once to the type), a check in tests/kernels.rs and a bench in benches/kernels.rs.
// Launch them through the functions in src/lib.rs: they refuse the shapes a kernel does not
// support (with the reason) and compute the grid.
//
// Layouts (row-major, innermost last):
//   activations  x[rows][cols]                 (softmax, RMSNorm: one row per block)
//   q, k, v, o   [heads][seq][head_dim]        (attention; batch folded into heads)
//   RoPE input   x[tokens][heads][head_dim]    (rotate-half: pairs (i, i + head_dim/2))
//   KV cache     cache[max_seq][kv_heads][head_dim], contiguous (not paged)
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#if defined(__HIP_PLATFORM_AMD__)
#if __has_include(<hip/hip_bf16.h>)
#include <hip/hip_bf16.h>
#else
// ROCm before hip_bf16.h (Debian's ROCm 5.2) has bfloat16 as `hip_bfloat16`: the same 16 bits (the
// upper half of an IEEE float, rounded to nearest even), under another name and without the
// conversion functions HIP and CUDA share.
#include <hip/hip_bfloat16.h>
typedef hip_bfloat16 __hip_bfloat16;
__device__ inline float __bfloat162float(__hip_bfloat16 x) { return float(x); }
__device__ inline __hip_bfloat16 __float2bfloat16(float x) { return __hip_bfloat16(x); }
#endif
#else
#include <hip/hip_bf16.h>  // CUDA's __nv_bfloat16 under HIP's name, or the cpu backend's
#endif

// -infinity, and 64-bit offsets, without the standard headers (NVRTC has none: no INFINITY, no
// index_t); __int_as_float is in HIP, CUDA and the cpu backend alike.
#define NEG_INF __int_as_float((int)0xff800000u)
typedef long long index_t;

// Threads per block of the row kernels (ROW_BLOCK in src/lib.rs).
#define ROW_BLOCK 256

// f32 from and to the element types: the kernels compute in f32 whatever they store.
__device__ inline float to_f32(float x) { return x; }
__device__ inline float to_f32(__half x) { return __half2float(x); }
__device__ inline float to_f32(__hip_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ inline T from_f32(float x);
template <>
__device__ inline float from_f32<float>(float x) { return x; }
template <>
__device__ inline __half from_f32<__half>(float x) { return __float2half(x); }
template <>
__device__ inline __hip_bfloat16 from_f32<__hip_bfloat16>(float x) { return __float2bfloat16(x); }

// N = 16 / sizeof(T) elements of T, moved by one 16-byte load or store: 4 floats or 8 halves a
// thread in `scale`, `swiglu` and RoPE (`Dtype::VEC` in src/lib.rs), where the addresses are
// 16-byte aligned (device allocations are, on every backend: 256-byte aligned), else one
// element at a time (a sub-slice at an odd offset).
template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
    T v[N];
};

// Whether a, b and c are all `bytes`-aligned (a power of two).
__device__ bool aligned_to(const void* a, const void* b, const void* c, unsigned bytes) {
    return (((unsigned long long)a | (unsigned long long)b | (unsigned long long)c) & (bytes - 1)) == 0;
}

// y[i] = s * x[i]
template <typename T>
__device__ void scale_elems(int n, float s, const T* x, T* y) {
    constexpr int N = 16 / sizeof(T);
    index_t i = ((index_t)blockIdx.x * blockDim.x + threadIdx.x) * N;
    if (i + N <= n && aligned_to(x, y, y, 16)) {
        Pack<T, N> v = *(const Pack<T, N>*)(x + i);
#pragma unroll
        for (int j = 0; j < N; ++j) {
            v.v[j] = from_f32<T>(s * to_f32(v.v[j]));
        }
        *(Pack<T, N>*)(y + i) = v;
    } else {
        for (index_t end = i + N < n ? i + N : n; i < end; i++) {
            y[i] = from_f32<T>(s * to_f32(x[i]));
        }
    }
}

__global__ void scale(int n, float s, const float* x, float* y) { scale_elems(n, s, x, y); }
__global__ void scale_f16(int n, float s, const __half* x, __half* y) { scale_elems(n, s, x, y); }
__global__ void scale_bf16(int n, float s, const __hip_bfloat16* x, __hip_bfloat16* y) { scale_elems(n, s, x, y); }

// In place on scores[batch][rows][cols] (batch: heads, each the same pattern): -inf where key
// `c` lies after query `r`, i.e. c > r + offset (offset = cols - rows when the queries are the
// last `rows` positions of `cols`). One block per row of scores (batch * rows blocks,
// `mask_launch` in src/lib.rs). The masked keys of a row are one run of columns, `first` to the
// end: its threads fill that run with -inf, 16 bytes a store from its first 16-byte boundary on
// (the elements before it and after the last whole pack one at a time), and read nothing.
template <typename T>
__device__ void causal_mask_row(int rows, int cols, int offset, T* scores) {
    const int r = blockIdx.x % rows;
    T* row = scores + (index_t)blockIdx.x * cols;
    const int first = max(r + offset + 1, 0);
    if (first >= cols) {
        return;
    }
    constexpr int N = 16 / sizeof(T);
    const T inf = from_f32<T>(NEG_INF);
    T* run = row + first;
    const int n = cols - first;
    const int head = min((int)(((16 - ((unsigned long long)run & 15)) & 15) / sizeof(T)), n);
    const int packs = (n - head) / N;
    for (int c = threadIdx.x; c < head; c += blockDim.x) {
        run[c] = inf;
    }
    Pack<T, N> all;
#pragma unroll
    for (int j = 0; j < N; ++j) all.v[j] = inf;
    Pack<T, N>* body = (Pack<T, N>*)(run + head);
    for (int p = threadIdx.x; p < packs; p += blockDim.x) {
        body[p] = all;
    }
    for (int c = head + packs * N + threadIdx.x; c < n; c += blockDim.x) {
        run[c] = inf;
    }
}

__global__ void causal_mask(int batch, int rows, int cols, int offset, float* scores) {
    causal_mask_row(rows, cols, offset, scores);
}
__global__ void causal_mask_f16(int batch, int rows, int cols, int offset, __half* scores) {
    causal_mask_row(rows, cols, offset, scores);
}
__global__ void causal_mask_bf16(int batch, int rows, int cols, int offset, __hip_bfloat16* scores) {
    causal_mask_row(rows, cols, offset, scores);
}

// The wave size where the compiler knows it (CUDA: 32; an AMD target: __AMDGCN_WAVEFRONT_SIZE), so
// that the reductions' shuffle loops unroll; elsewhere (the cpu backend runs waves of 32 and 64
// from one build) `warpSize`, read at run time. On an H200 the run-time loop cost the half softmax
// a fifth of its bandwidth.
#if defined(__CUDACC__)
#define WAVE 32
#elif defined(__AMDGCN_WAVEFRONT_SIZE)
#define WAVE __AMDGCN_WAVEFRONT_SIZE
#else
#define WAVE warpSize
#endif

// Block-wide reductions: each wave reduces its lanes with shuffles, then every thread combines
// the waves' results through shared memory `red` (ROW_BLOCK floats; one a wave is used). Two
// barriers a reduction, where a shared-memory tree takes nine.
__device__ float block_max(float v, float* red) {
#pragma unroll
    for (int o = WAVE / 2; o > 0; o /= 2) {
        v = fmaxf(v, __shfl_xor(v, o));
    }
    if (threadIdx.x % WAVE == 0) {
        red[threadIdx.x / WAVE] = v;
    }
    __syncthreads();
    float r = red[0];
    for (int w = 1; w < ROW_BLOCK / WAVE; ++w) {
        r = fmaxf(r, red[w]);
    }
    __syncthreads();  // `red` is reused by the next reduction
    return r;
}

__device__ float block_sum(float v, float* red) {
#pragma unroll
    for (int o = WAVE / 2; o > 0; o /= 2) {
        v += __shfl_xor(v, o);
    }
    if (threadIdx.x % WAVE == 0) {
        red[threadIdx.x / WAVE] = v;
    }
    __syncthreads();
    float r = red[0];
    for (int w = 1; w < ROW_BLOCK / WAVE; ++w) {
        r += red[w];
    }
    __syncthreads();
    return r;
}

// exp in the softmax: `__expf` for the half types, whose ulp (2^-10, 2^-7 relative) dwarfs its
// error (CUDA: 2 + 1.2|x| ulps of f32, about 2e-6 relative at x = -17, below which the result
// underflows f16 anyway); `expf` in f32, checked at 1e-5. The half softmax is bound by its arithmetic as much as by memory: this
// took it from 68% to 78% of the stream triad on an H200.
template <typename T>
__device__ inline float row_exp(float x) {
    return sizeof(T) == 2 ? __expf(x) : expf(x);
}

// Values of a row each thread keeps in registers between the passes of the row kernels: rows of
// up to ROW_BLOCK * ROW_CACHE columns are read from memory once; the columns past that are read
// again in each pass.
#define ROW_CACHE 16

// The row kernels move V columns at a time (one load of a Pack<T, V>): 4 halves (8 bytes) in
// the half types, where a row holds a multiple of 4 columns and the rows are 8-byte aligned, else
// (and in f32) one element at a time. A 2-byte access per thread left the half rows at about two
// thirds of the stream bandwidth on an H200: too many memory instructions for the bytes moved.
template <typename T>
struct RowVec {
    static constexpr int V = sizeof(T) == 2 ? 4 : 1;
};

// The row's columns as packs of V: pack p holds columns V*p .. V*p + V - 1.
template <typename T, int V>
__device__ inline void load_pack(const T* row, int p, float* out) {
    Pack<T, V> a = ((const Pack<T, V>*)row)[p];
#pragma unroll
    for (int j = 0; j < V; ++j) out[j] = to_f32(a.v[j]);
}
template <typename T, int V>
__device__ inline void store_pack(T* row, int p, const float* in) {
    Pack<T, V> a;
#pragma unroll
    for (int j = 0; j < V; ++j) a.v[j] = from_f32<T>(in[j]);
    ((Pack<T, V>*)row)[p] = a;
}

// Numerically stable softmax of each row: y = exp(x - max) / sum(exp(x - max)). Masked entries
// (-inf) become 0. One block of ROW_BLOCK threads per row; V columns a pack (cols % V == 0).
template <typename T, int V>
__device__ void softmax_row_packs(int cols, const T* xr, T* yr, float* red) {
    constexpr int K = ROW_CACHE / V;  // packs a thread keeps
    const int packs = cols / V;
    const int rest = ROW_BLOCK * K;
    float v[ROW_CACHE];
    float m = NEG_INF;
#pragma unroll
    for (int k = 0; k < K; k++) {
        int p = threadIdx.x + k * ROW_BLOCK;
        if (p < packs) {
            load_pack<T, V>(xr, p, v + k * V);
        } else {
#pragma unroll
            for (int j = 0; j < V; ++j) v[k * V + j] = NEG_INF;
        }
#pragma unroll
        for (int j = 0; j < V; ++j) m = fmaxf(m, v[k * V + j]);
    }
    for (int p = threadIdx.x + rest; p < packs; p += ROW_BLOCK) {
        float t[V];
        load_pack<T, V>(xr, p, t);
#pragma unroll
        for (int j = 0; j < V; ++j) m = fmaxf(m, t[j]);
    }
    m = block_max(m, red);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < K; k++) {
        int p = threadIdx.x + k * ROW_BLOCK;
#pragma unroll
        for (int j = 0; j < V; ++j) {
            v[k * V + j] = p < packs ? row_exp<T>(v[k * V + j] - m) : 0.0f;
            s += v[k * V + j];
        }
    }
    for (int p = threadIdx.x + rest; p < packs; p += ROW_BLOCK) {
        float t[V];
        load_pack<T, V>(xr, p, t);
#pragma unroll
        for (int j = 0; j < V; ++j) s += row_exp<T>(t[j] - m);
    }
    s = block_sum(s, red);
    float inv = 1.0f / s;
#pragma unroll
    for (int k = 0; k < K; k++) {
        int p = threadIdx.x + k * ROW_BLOCK;
        if (p < packs) {
            float t[V];
#pragma unroll
            for (int j = 0; j < V; ++j) t[j] = v[k * V + j] * inv;
            store_pack<T, V>(yr, p, t);
        }
    }
    for (int p = threadIdx.x + rest; p < packs; p += ROW_BLOCK) {
        float t[V];
        load_pack<T, V>(xr, p, t);
#pragma unroll
        for (int j = 0; j < V; ++j) t[j] = row_exp<T>(t[j] - m) * inv;
        store_pack<T, V>(yr, p, t);
    }
}

template <typename T>
__device__ void softmax_row(int cols, const T* x, T* y, float* red) {
    constexpr int V = RowVec<T>::V;
    const T* xr = x + (index_t)blockIdx.x * cols;
    T* yr = y + (index_t)blockIdx.x * cols;
    // The same for every thread of the block: no barrier is under a divergent branch.
    if (V > 1 && cols % V == 0 && aligned_to(xr, yr, yr, sizeof(T) * V)) {
        softmax_row_packs<T, V>(cols, xr, yr, red);
    } else {
        softmax_row_packs<T, 1>(cols, xr, yr, red);
    }
}

__global__ void __launch_bounds__(ROW_BLOCK) softmax_rows(int rows, int cols, const float* x, float* y) {
    __shared__ float red[ROW_BLOCK];
    softmax_row(cols, x, y, red);
}
__global__ void __launch_bounds__(ROW_BLOCK) softmax_rows_f16(int rows, int cols, const __half* x, __half* y) {
    __shared__ float red[ROW_BLOCK];
    softmax_row(cols, x, y, red);
}
__global__ void __launch_bounds__(ROW_BLOCK) softmax_rows_bf16(int rows, int cols, const __hip_bfloat16* x, __hip_bfloat16* y) {
    __shared__ float red[ROW_BLOCK];
    softmax_row(cols, x, y, red);
}

// RMSNorm of each row: y = x / sqrt(mean(x^2) + eps) * w. One block of ROW_BLOCK threads per row;
// V columns a pack, as softmax.
template <typename T, int V>
__device__ void rmsnorm_row_packs(int cols, float eps, const T* xr, const T* w, T* yr, float* red) {
    constexpr int K = ROW_CACHE / V;
    const int packs = cols / V;
    const int rest = ROW_BLOCK * K;
    float v[ROW_CACHE];
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < K; k++) {
        int p = threadIdx.x + k * ROW_BLOCK;
        if (p < packs) {
            load_pack<T, V>(xr, p, v + k * V);
        } else {
#pragma unroll
            for (int j = 0; j < V; ++j) v[k * V + j] = 0.0f;
        }
#pragma unroll
        for (int j = 0; j < V; ++j) ss += v[k * V + j] * v[k * V + j];
    }
    for (int p = threadIdx.x + rest; p < packs; p += ROW_BLOCK) {
        float t[V];
        load_pack<T, V>(xr, p, t);
#pragma unroll
        for (int j = 0; j < V; ++j) ss += t[j] * t[j];
    }
    ss = block_sum(ss, red);
    float inv = 1.0f / sqrtf(ss / cols + eps);
#pragma unroll
    for (int k = 0; k < K; k++) {
        int p = threadIdx.x + k * ROW_BLOCK;
        if (p < packs) {
            float wt[V], t[V];
            load_pack<T, V>(w, p, wt);
#pragma unroll
            for (int j = 0; j < V; ++j) t[j] = v[k * V + j] * inv * wt[j];
            store_pack<T, V>(yr, p, t);
        }
    }
    for (int p = threadIdx.x + rest; p < packs; p += ROW_BLOCK) {
        float wt[V], t[V];
        load_pack<T, V>(xr, p, t);
        load_pack<T, V>(w, p, wt);
#pragma unroll
        for (int j = 0; j < V; ++j) t[j] = t[j] * inv * wt[j];
        store_pack<T, V>(yr, p, t);
    }
}

template <typename T>
__device__ void rmsnorm_row(int cols, float eps, const T* x, const T* w, T* y, float* red) {
    constexpr int V = RowVec<T>::V;
    const T* xr = x + (index_t)blockIdx.x * cols;
    T* yr = y + (index_t)blockIdx.x * cols;
    if (V > 1 && cols % V == 0 && aligned_to(xr, w, yr, sizeof(T) * V)) {
        rmsnorm_row_packs<T, V>(cols, eps, xr, w, yr, red);
    } else {
        rmsnorm_row_packs<T, 1>(cols, eps, xr, w, yr, red);
    }
}

__global__ void __launch_bounds__(ROW_BLOCK) rmsnorm(int rows, int cols, float eps, const float* x, const float* w, float* y) {
    __shared__ float red[ROW_BLOCK];
    rmsnorm_row(cols, eps, x, w, y, red);
}
__global__ void __launch_bounds__(ROW_BLOCK) rmsnorm_f16(int rows, int cols, float eps, const __half* x, const __half* w, __half* y) {
    __shared__ float red[ROW_BLOCK];
    rmsnorm_row(cols, eps, x, w, y, red);
}
__global__ void __launch_bounds__(ROW_BLOCK) rmsnorm_bf16(int rows, int cols, float eps, const __hip_bfloat16* x, const __hip_bfloat16* w, __hip_bfloat16* y) {
    __shared__ float red[ROW_BLOCK];
    rmsnorm_row(cols, eps, x, w, y, red);
}

__device__ float silu_times(float g, float u) { return g / (1.0f + expf(-g)) * u; }

// SwiGLU: y = silu(gate) * up, silu(g) = g / (1 + exp(-g)); 16 bytes a thread, as `scale`.
template <typename T>
__device__ void swiglu_elems(int n, const T* gate, const T* up, T* y) {
    constexpr int N = 16 / sizeof(T);
    index_t i = ((index_t)blockIdx.x * blockDim.x + threadIdx.x) * N;
    if (i + N <= n && aligned_to(gate, up, y, 16)) {
        Pack<T, N> g = *(const Pack<T, N>*)(gate + i);
        Pack<T, N> u = *(const Pack<T, N>*)(up + i);
#pragma unroll
        for (int j = 0; j < N; ++j) {
            g.v[j] = from_f32<T>(silu_times(to_f32(g.v[j]), to_f32(u.v[j])));
        }
        *(Pack<T, N>*)(y + i) = g;
    } else {
        for (index_t end = i + N < n ? i + N : n; i < end; i++) {
            y[i] = from_f32<T>(silu_times(to_f32(gate[i]), to_f32(up[i])));
        }
    }
}

__global__ void swiglu(int n, const float* gate, const float* up, float* y) { swiglu_elems(n, gate, up, y); }
__global__ void swiglu_f16(int n, const __half* gate, const __half* up, __half* y) { swiglu_elems(n, gate, up, y); }
__global__ void swiglu_bf16(int n, const __hip_bfloat16* gate, const __hip_bfloat16* up, __hip_bfloat16* y) {
    swiglu_elems(n, gate, up, y);
}

// RoPE, rotate-half: the pair (x1, x2) = (x[i], x[i + head_dim/2]) of a head at position `pos`
// turns by the angle pos * inv_freq[i], computed in f32 as models do (inv_freq[i] =
// theta^(-2i/head_dim), from `rope_inv_freq` in src/lib.rs: the base theta is the caller's).
//
// A thread rotates N = 16 / sizeof(T) pairs (i0 .. i0 + N) of ROPE_HEADS heads of one token: it
// computes their N sines and cosines once for all those heads, and moves each half of a head's
// pairs with one 16-byte load and store where the rows allow (head_dim a multiple of 2N and the
// buffers aligned), else one element at a time. Blocks are (pair groups, tokens): ROPE_THREADS
// threads, threadIdx.x over the groups of pairs of a head, threadIdx.y over tokens; gridDim.y
// over the heads, ROPE_HEADS a block (`rope_launch` in src/lib.rs). No 64-bit division anywhere.
#define ROPE_HEADS 4
#define ROPE_THREADS 256

// The rotation of one pair by the angle whose cosine and sine are c and s.
__device__ inline float2 rotated(float x1, float x2, float c, float s) {
    return make_float2(x1 * c - x2 * s, x2 * c + x1 * s);
}

// Pairs i0 .. i0 + N of heads h0 .. h0 + ROPE_HEADS (those below `heads`) of one token at `pos`:
// `k` rotated into `k_out` (the same buffer for RoPE in place) and, when `v` is given, `v` copied
// into `v_out` (the KV-cache append). The pointers are the token's first head.
template <typename T>
__device__ void rope_pairs(int heads, int h0, int head_dim, int i0, float pos, const float* inv_freq,
                           const T* k, T* k_out, const T* v, T* v_out) {
    constexpr int N = 16 / sizeof(T);
    const int half = head_dim / 2;
    const int n = min(N, half - i0);
    float c[N], s[N];
#pragma unroll
    for (int j = 0; j < N; ++j) {
        c[j] = 1.0f;
        s[j] = 0.0f;
        if (j < n) {
            sincosf(pos * inv_freq[i0 + j], &s[j], &c[j]);
        }
    }
    const bool vec = n == N && head_dim % (2 * N) == 0 && aligned_to(k, k_out, k_out, 16) &&
                     (v == nullptr || aligned_to(v, v_out, v_out, 16));
#pragma unroll
    for (int hh = 0; hh < ROPE_HEADS; ++hh) {
        const int h = h0 + hh;
        if (h >= heads) {
            break;
        }
        const index_t lo = (index_t)h * head_dim + i0;
        const index_t hi = lo + half;
        if (vec) {
            // Every load before any store: the compiler must assume the buffers overlap (k is
            // k_out for RoPE in place), and would otherwise wait for each store before a load.
            Pack<T, N> a = *(const Pack<T, N>*)(k + lo);
            Pack<T, N> b = *(const Pack<T, N>*)(k + hi);
            Pack<T, N> va, vb;
            if (v != nullptr) {
                va = *(const Pack<T, N>*)(v + lo);
                vb = *(const Pack<T, N>*)(v + hi);
            }
#pragma unroll
            for (int j = 0; j < N; ++j) {
                float2 r = rotated(to_f32(a.v[j]), to_f32(b.v[j]), c[j], s[j]);
                a.v[j] = from_f32<T>(r.x);
                b.v[j] = from_f32<T>(r.y);
            }
            *(Pack<T, N>*)(k_out + lo) = a;
            *(Pack<T, N>*)(k_out + hi) = b;
            if (v != nullptr) {
                *(Pack<T, N>*)(v_out + lo) = va;
                *(Pack<T, N>*)(v_out + hi) = vb;
            }
        } else {
            for (int j = 0; j < n; ++j) {
                float2 r = rotated(to_f32(k[lo + j]), to_f32(k[hi + j]), c[j], s[j]);
                k_out[lo + j] = from_f32<T>(r.x);
                k_out[hi + j] = from_f32<T>(r.y);
                if (v != nullptr) {
                    v_out[lo + j] = v[lo + j];
                    v_out[hi + j] = v[hi + j];
                }
            }
        }
    }
}

// RoPE in place on x[tokens][heads][head_dim]; token t is at position pos0 + t.
template <typename T>
__device__ void rope_tokens(int tokens, int heads, int head_dim, int pos0, const float* inv_freq, T* x) {
    constexpr int N = 16 / sizeof(T);
    const int t = blockIdx.x * blockDim.y + threadIdx.y;
    if (t >= tokens) {
        return;
    }
    T* xt = x + (index_t)t * heads * head_dim;
    for (int i0 = threadIdx.x * N; i0 < head_dim / 2; i0 += blockDim.x * N) {
        rope_pairs(heads, blockIdx.y * ROPE_HEADS, head_dim, i0, (float)(pos0 + t), inv_freq, xt, xt,
                   (const T*)nullptr, (T*)nullptr);
    }
}

__global__ void __launch_bounds__(ROPE_THREADS) rope(int tokens, int heads, int head_dim, int pos0, const float* inv_freq, float* x) {
    rope_tokens(tokens, heads, head_dim, pos0, inv_freq, x);
}
__global__ void __launch_bounds__(ROPE_THREADS) rope_f16(int tokens, int heads, int head_dim, int pos0, const float* inv_freq, __half* x) {
    rope_tokens(tokens, heads, head_dim, pos0, inv_freq, x);
}
__global__ void __launch_bounds__(ROPE_THREADS) rope_bf16(int tokens, int heads, int head_dim, int pos0, const float* inv_freq, __hip_bfloat16* x) {
    rope_tokens(tokens, heads, head_dim, pos0, inv_freq, x);
}

// RoPE fused with the KV-cache append (contiguous cache): k and v are [tokens][kv_heads][head_dim]
// for positions pos0 .. pos0 + tokens; the rotated k and the unchanged v are written at those rows
// of k_cache and v_cache ([max_seq][kv_heads][head_dim]). Rows outside are left as they are.
// One head a thread (ROPE_KV_HEADS; gridDim.y over the kv heads, `rope_kv_append_launch` in
// src/lib.rs): its K and V loads (both halves, 64 bytes) all issued before the sines and cosines
// and before any store. With ROPE_HEADS heads a thread (as `rope`), a head's loads waited for the
// previous head's stores (they may alias), 80 registers held 3 blocks an SM, and the bench shape
// was 2.6 waves of long blocks: 82% of the triad in f16. The sines and cosines are computed once
// a head instead of once for 4: the kernel still has issue slots to spare.
#define ROPE_KV_HEADS 1
template <typename T>
__device__ void rope_kv_append_tokens(int tokens, int kv_heads, int head_dim, int pos0, int max_seq,
                                      const float* inv_freq, const T* k, const T* v, T* k_cache, T* v_cache) {
    constexpr int N = 16 / sizeof(T);
    const int t = blockIdx.x * blockDim.y + threadIdx.y;
    const int h = blockIdx.y * ROPE_KV_HEADS;
    if (t >= tokens || pos0 + t >= max_seq || h >= kv_heads) {
        return;
    }
    const int half = head_dim / 2;
    const index_t src = ((index_t)t * kv_heads + h) * head_dim;
    const index_t dst = ((index_t)(pos0 + t) * kv_heads + h) * head_dim;
    const float pos = (float)(pos0 + t);
    const bool vec = head_dim % (2 * N) == 0 && aligned_to(k, k_cache, v, 16) && aligned_to(v_cache, v_cache, v_cache, 16);
    if (!vec) {
        // One pair at a time (a head_dim that is not a multiple of 2N, or unaligned buffers).
        for (int i0 = threadIdx.x * N; i0 < half; i0 += blockDim.x * N) {
            for (int i = i0; i < min(i0 + N, half); ++i) {
                float c, sn;
                sincosf(pos * inv_freq[i], &sn, &c);
                float2 r = rotated(to_f32(k[src + i]), to_f32(k[src + i + half]), c, sn);
                k_cache[dst + i] = from_f32<T>(r.x);
                k_cache[dst + i + half] = from_f32<T>(r.y);
                v_cache[dst + i] = v[src + i];
                v_cache[dst + i + half] = v[src + i + half];
            }
        }
        return;
    }
    for (int i0 = threadIdx.x * N; i0 < half; i0 += blockDim.x * N) {
        const index_t lo = i0, hi = i0 + half;
        const Pack<T, N> ka = *(const Pack<T, N>*)(k + src + lo);
        const Pack<T, N> kb = *(const Pack<T, N>*)(k + src + hi);
        const Pack<T, N> va = *(const Pack<T, N>*)(v + src + lo);
        const Pack<T, N> vb = *(const Pack<T, N>*)(v + src + hi);
        Pack<T, N> a, b;
#pragma unroll
        for (int j = 0; j < N; ++j) {
            float c, sn;
            sincosf(pos * inv_freq[i0 + j], &sn, &c);
            float2 r = rotated(to_f32(ka.v[j]), to_f32(kb.v[j]), c, sn);
            a.v[j] = from_f32<T>(r.x);
            b.v[j] = from_f32<T>(r.y);
        }
        *(Pack<T, N>*)(k_cache + dst + lo) = a;
        *(Pack<T, N>*)(k_cache + dst + hi) = b;
        *(Pack<T, N>*)(v_cache + dst + lo) = va;
        *(Pack<T, N>*)(v_cache + dst + hi) = vb;
    }
}

__global__ void __launch_bounds__(ROPE_THREADS) rope_kv_append(int tokens, int kv_heads, int head_dim, int pos0, int max_seq,
                                                               const float* inv_freq, const float* k, const float* v,
                                                               float* k_cache, float* v_cache) {
    rope_kv_append_tokens(tokens, kv_heads, head_dim, pos0, max_seq, inv_freq, k, v, k_cache, v_cache);
}
__global__ void __launch_bounds__(ROPE_THREADS) rope_kv_append_f16(int tokens, int kv_heads, int head_dim, int pos0, int max_seq,
                                                                   const float* inv_freq, const __half* k, const __half* v,
                                                                   __half* k_cache, __half* v_cache) {
    rope_kv_append_tokens(tokens, kv_heads, head_dim, pos0, max_seq, inv_freq, k, v, k_cache, v_cache);
}
__global__ void __launch_bounds__(ROPE_THREADS) rope_kv_append_bf16(int tokens, int kv_heads, int head_dim, int pos0, int max_seq,
                                                                    const float* inv_freq, const __hip_bfloat16* k,
                                                                    const __hip_bfloat16* v, __hip_bfloat16* k_cache,
                                                                    __hip_bfloat16* v_cache) {
    rope_kv_append_tokens(tokens, kv_heads, head_dim, pos0, max_seq, inv_freq, k, v, k_cache, v_cache);
}

// FlashAttention forward: o = softmax(scale * q k^T [+ causal mask]) v, without the score matrix.
// A block computes FA_BM query rows of one head; it walks the keys in tiles of BN (FaTile<D>),
// keeping for each row the running max m, the running sum l and the unnormalised output, rescaled
// by exp(m_old - m_new) when the max grows (the online softmax). Causal: query r (of seq_q, the
// last seq_q of seq_k positions) sees keys c <= r + seq_k - seq_q. q, k, v and o are of the
// element type T; the tiles in shared memory, the scores, the running state and the output's
// accumulators are f32 whatever T is.
//
// Register tiling, as in a SIMT GEMM: the FA_THREADS = 256 threads are a TY x TX grid (ty, tx),
// TY = 256 / TX. Thread (ty, tx) computes the scores of rows ty + TY i (i < FA_BM / TY) against
// keys tx + TX j of the tile, each a dot product of float4s read from shared memory (a q row is
// read by all TX threads of a row group at once: one broadcast), and owns the output of rows
// ty + TY i at columns 4(tx + TX g) .. 4(tx + TX g) + 3. A row's max goes across its TX threads
// with shuffles (xor TX / 2, ..., 1: within TX lanes whatever the wave size); its sum stays split
// over them until the end.
// Shared memory (dynamic, attention_shared_bytes in src/lib.rs): the q tile [FA_BM][D + 4] (scaled),
// one tile [BN][D + 4] holding K, then V, and the probabilities [FA_BM][BN + 4]. The +4 keeps
// rows 16-byte aligned and puts the rows a quarter-wave reads at once in different banks.
// Grid (ceil(seq_q / FA_BM), heads); causal grids run the blocks with the most keys first.
#define FA_BM 64
#define FA_THREADS 256

// Keys per tile (BN): 64 at head_dim 64, 32 at 128 (so that every tile fits in 64 KiB, the most a
// block has on AMD GPUs and the cpu backend). Threads across a row group (TX): 16. (8, a wave
// reading 8 keys' rows and 4 row groups' q rows at once, measured 11-14% slower at head_dim 128
// on the H100.)
template <int D>
struct FaTile {
    static constexpr int BN = D <= 64 ? 64 : 32;
    static constexpr int TX = 16;
};

// Four consecutive elements of T as f32: one 16-byte (f32) or 8-byte (half) load where `vec`.
template <typename T>
__device__ inline float4 load4(const T* p, bool vec) {
    if (vec) {
        Pack<T, 4> x = *(const Pack<T, 4>*)p;
        return make_float4(to_f32(x.v[0]), to_f32(x.v[1]), to_f32(x.v[2]), to_f32(x.v[3]));
    }
    return make_float4(to_f32(p[0]), to_f32(p[1]), to_f32(p[2]), to_f32(p[3]));
}
template <typename T>
__device__ inline void store4(T* p, float4 x, bool vec) {
    Pack<T, 4> y;
    y.v[0] = from_f32<T>(x.x);
    y.v[1] = from_f32<T>(x.y);
    y.v[2] = from_f32<T>(x.z);
    y.v[3] = from_f32<T>(x.w);
    if (vec) {
        *(Pack<T, 4>*)p = y;
    } else {
        for (int e = 0; e < 4; ++e) {
            p[e] = y.v[e];
        }
    }
}

// rows x D elements of src (rows src_rows and on are zeros) into dst [rows][D + 4], times `mul`.
template <int D, typename T>
__device__ inline void fa_load_tile(float* dst, const T* src, int rows, int src_rows, float mul, bool vec) {
    for (int e = threadIdx.x; e < rows * (D / 4); e += FA_THREADS) {
        const int r = e / (D / 4), c = (e % (D / 4)) * 4;
        float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (r < src_rows) {
            x = load4(src + (index_t)r * D + c, vec);
            x.x *= mul;
            x.y *= mul;
            x.z *= mul;
            x.w *= mul;
        }
        *(float4*)(dst + r * (D + 4) + c) = x;
    }
}

template <int D, typename T>
__device__ void flash_attention_block(int seq_q, int seq_k, int causal, float scale,
                                      const T* q, const T* k, const T* v, T* o, float* smem) {
    constexpr int BN = FaTile<D>::BN;
    constexpr int DP = D + 4;   // row stride of the q and K/V tiles
    constexpr int PP = BN + 4;  // row stride of the probabilities
    constexpr int TX = FaTile<D>::TX;
    constexpr int TY = FA_THREADS / TX;
    constexpr int RM = FA_BM / TY;     // rows a thread scores
    constexpr int CN = BN / TX;        // keys a thread scores
    constexpr int OG = D / (4 * TX);   // float4 column groups of the output a thread owns
    float* qs = smem;
    float* kv = qs + FA_BM * DP;
    float* ps = kv + BN * DP;
    const int t = threadIdx.x, ty = t / TX, tx = t % TX;
    const int qb = causal ? (int)gridDim.x - 1 - (int)blockIdx.x : (int)blockIdx.x;
    const int q0 = qb * FA_BM;
    const index_t head = blockIdx.y;
    q += head * seq_q * D;
    o += head * seq_q * D;
    k += head * seq_k * D;
    v += head * seq_k * D;
    const int shift = seq_k - seq_q;
    const bool vec = aligned_to(q, k, v, 4 * sizeof(T)) && aligned_to(o, o, o, 4 * sizeof(T));

    // Scores in base 2: q scaled by scale * log2(e), so that exp(x) is exp2f of the score (one
    // instruction on GPUs where expf takes a range reduction first).
    fa_load_tile<D>(qs, q + (index_t)q0 * D, FA_BM, seq_q - q0, scale * 1.4426950408889634f, vec);
    float m[RM], l[RM], acc[RM][4 * OG];
#pragma unroll
    for (int i = 0; i < RM; ++i) {
        m[i] = NEG_INF;
        l[i] = 0.0f;
#pragma unroll
        for (int c = 0; c < 4 * OG; ++c) {
            acc[i][c] = 0.0f;
        }
    }
    // Keys past the last one this block's last row sees are skipped.
    const int kv_end = causal ? min(seq_k, q0 + FA_BM + shift) : seq_k;

    for (int k0 = 0; k0 < kv_end; k0 += BN) {
        __syncthreads();  // the previous tile's V and probabilities are no longer read
        fa_load_tile<D>(kv, k + (index_t)k0 * D, BN, seq_k - k0, 1.0f, vec);
        __syncthreads();
        float s[RM][CN];
#pragma unroll
        for (int i = 0; i < RM; ++i) {
#pragma unroll
            for (int j = 0; j < CN; ++j) {
                s[i][j] = 0.0f;
            }
        }
#pragma unroll 4
        for (int d = 0; d < D; d += 4) {
            float4 a[RM], b[CN];
#pragma unroll
            for (int i = 0; i < RM; ++i) {
                a[i] = *(const float4*)(qs + (ty + TY * i) * DP + d);
            }
#pragma unroll
            for (int j = 0; j < CN; ++j) {
                b[j] = *(const float4*)(kv + (tx + TX * j) * DP + d);
            }
#pragma unroll
            for (int i = 0; i < RM; ++i) {
#pragma unroll
                for (int j = 0; j < CN; ++j) {
                    s[i][j] += a[i].x * b[j].x;
                    s[i][j] += a[i].y * b[j].y;
                    s[i][j] += a[i].z * b[j].z;
                    s[i][j] += a[i].w * b[j].w;
                }
            }
        }
        // The online softmax of each row: mask, the tile's max across the row's TX threads, the
        // rescale of what came before, the probabilities into shared memory.
#pragma unroll
        for (int i = 0; i < RM; ++i) {
            const int row = q0 + ty + TY * i;
            float mx = NEG_INF;
#pragma unroll
            for (int j = 0; j < CN; ++j) {
                const int key = k0 + tx + TX * j;
                if (key >= seq_k || (causal && key > row + shift)) {
                    s[i][j] = NEG_INF;
                }
                mx = fmaxf(mx, s[i][j]);
            }
#pragma unroll
            for (int x = TX / 2; x > 0; x /= 2) {
                mx = fmaxf(mx, __shfl_xor(mx, x, TX));
            }
            const float m_new = fmaxf(m[i], mx);
            // Nothing seen yet for this row (m_new = -inf): p = 0 everywhere, nothing to rescale.
            const float alpha = m_new == NEG_INF ? 1.0f : exp2f(m[i] - m_new);
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < CN; ++j) {
                const float p = m_new == NEG_INF ? 0.0f : exp2f(s[i][j] - m_new);
                ps[(ty + TY * i) * PP + tx + TX * j] = p;
                sum += p;
            }
            m[i] = m_new;
            l[i] = l[i] * alpha + sum;
#pragma unroll
            for (int c = 0; c < 4 * OG; ++c) {
                acc[i][c] *= alpha;
            }
        }
        __syncthreads();  // K is no longer read: V replaces it
        fa_load_tile<D>(kv, v + (index_t)k0 * D, BN, seq_k - k0, 1.0f, vec);
        __syncthreads();
#pragma unroll 2
        for (int n = 0; n < BN; n += 4) {
            float4 p4[RM];
#pragma unroll
            for (int i = 0; i < RM; ++i) {
                p4[i] = *(const float4*)(ps + (ty + TY * i) * PP + n);
            }
#pragma unroll
            for (int nn = 0; nn < 4; ++nn) {
                float4 vv[OG];
#pragma unroll
                for (int g = 0; g < OG; ++g) {
                    vv[g] = *(const float4*)(kv + (n + nn) * DP + 4 * (tx + TX * g));
                }
#pragma unroll
                for (int i = 0; i < RM; ++i) {
                    const float p = nn == 0 ? p4[i].x : nn == 1 ? p4[i].y : nn == 2 ? p4[i].z : p4[i].w;
#pragma unroll
                    for (int g = 0; g < OG; ++g) {
                        acc[i][4 * g + 0] += p * vv[g].x;
                        acc[i][4 * g + 1] += p * vv[g].y;
                        acc[i][4 * g + 2] += p * vv[g].z;
                        acc[i][4 * g + 3] += p * vv[g].w;
                    }
                }
            }
        }
    }
    // Each row's sum across its TX threads, then the normalised output.
#pragma unroll
    for (int i = 0; i < RM; ++i) {
        float sum = l[i];
#pragma unroll
        for (int x = TX / 2; x > 0; x /= 2) {
            sum += __shfl_xor(sum, x, TX);
        }
        const int row = q0 + ty + TY * i;
        if (row < seq_q) {
            const float inv = 1.0f / sum;
#pragma unroll
            for (int g = 0; g < OG; ++g) {
                const float4 y = make_float4(acc[i][4 * g] * inv, acc[i][4 * g + 1] * inv,
                                             acc[i][4 * g + 2] * inv, acc[i][4 * g + 3] * inv);
                store4(o + (index_t)row * D + 4 * (tx + TX * g), y, vec);
            }
        }
    }
}

// On NVIDIA GPUs with tensor cores (sm_80 and later), the f16 and bf16 kernels run
// flash_attention_mma instead: FlashAttention-2's scheme on the warp-level MMA
// (mma.sync.m16n8k16, f32 sums), whose fragment layouts the PTX ISA documents ("Matrix Fragments
// for mma.m16n8k16"): lane = 4 g + tig holds, of a 16 x 16 A, the pairs (g, 2 tig..), (g + 8,
// 2 tig..), (g, 2 tig + 8..), (g + 8, 2 tig + 8..); of a 16 x 8 B, (2 tig.., g) and
// (2 tig + 8.., g); of the 16 x 8 sums, (g, 2 tig..) and (g + 8, 2 tig..). Same launch as
// flash_attention_block (64 rows, 256 threads, its shared memory): warp w takes the 16 rows
// 16 (w % 4).. and half of each 64-key tile (keys 32 (w / 4)..); the scores stay in registers, and
// their layout is the A fragment of P for P V, rounded to T (as FlashAttention-2 does: the checks'
// tolerance for the half types allows it). The two warps of a row group merge their running
// states at the end. K and V tiles come by cp.async, each while the other is used (below). The
// f32 kernels run flash_attention_tf32, the same scheme in 3xTF32 (further below). AMD GPUs and
// the cpu backend run flash_attention_block.
#if defined(__HIP_PLATFORM_NVIDIA__) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define FA_TENSOR_CORES 1

__device__ inline unsigned fa_pack(float a, float b, const __half*) {
    __half2 h = __floats2half2_rn(a, b);
    return *(const unsigned*)&h;
}
__device__ inline unsigned fa_pack(float a, float b, const __hip_bfloat16*) {
    __hip_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *(const unsigned*)&h;
}
__device__ inline void fa_mma(float* c, const unsigned* a, unsigned b0, unsigned b1, const __half*) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ inline void fa_mma(float* c, const unsigned* a, unsigned b0, unsigned b1, const __hip_bfloat16*) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8 x 8 matrices of 16-bit elements from shared memory (ldmatrix; `trans`: each transposed):
// lane l gives the address of row l % 8 of matrix l / 8, and receives in r[i] the pair (l / 4,
// 2 (l % 4)..) of matrix i, the layout of an A or B fragment's register.
template <bool TRANS>
__device__ inline void fa_ldmatrix(unsigned* r, const void* row) {
    unsigned long long a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(row));
    if (TRANS) {
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"((unsigned)a));
    } else {
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"((unsigned)a));
    }
}

// A tile of ROWS rows of K or V (rows k0.., zeros from seq_k on) into shared memory [ROWS][STRIDE],
// 16 bytes a copy: cp.async where `vec` (the copy runs on while the block computes; fa_copy_wait
// waits for this thread's copies, a barrier after it for everyone's), else plain loads and stores.
__device__ inline void fa_cp_async16(void* dst, const void* src, bool in) {
    unsigned long long d;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(d) : "l"(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"((unsigned)d), "l"(src), "r"(in ? 16 : 0));
}
__device__ inline void fa_copy_wait() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
template <int D, int ROWS, int STRIDE, typename T>
__device__ inline void fa_copy_tile(T* dst, const T* src, int k0, int seq_k, bool vec) {
    constexpr int EPC = 16 / sizeof(T);  // elements a 16-byte copy
    constexpr int CH = D / EPC;          // copies a row
    for (int e = threadIdx.x; e < ROWS * CH; e += FA_THREADS) {
        const int r = e / CH, c = (e % CH) * EPC;
        const bool in = k0 + r < seq_k;
        if (vec) {
            // Past seq_k: nothing read (source size 0), 16 zero bytes written.
            fa_cp_async16(dst + r * STRIDE + c, src + (index_t)(in ? k0 + r : 0) * D + c, in);
        } else {
            Pack<T, EPC> x;
            for (int i = 0; i < EPC; ++i) {
                x.v[i] = in ? src[(index_t)(k0 + r) * D + c + i] : from_f32<T>(0.0f);
            }
            *(Pack<T, EPC>*)(dst + r * STRIDE + c) = x;
        }
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// The end of flash_attention_mma and flash_attention_tf32: each row's sum over its quad; then
// the key halves merge (warps 4-7 leave their state in shared memory, per lane as held; warps 0-3
// combine it with theirs) and store the normalised rows.
__device__ inline void fa_store2(float* out, float y0, float y1, bool vec) {
    if (vec) {
        *(float2*)out = make_float2(y0, y1);
    } else {
        out[0] = y0;
        out[1] = y1;
    }
}
template <typename T>
__device__ inline void fa_store2(T* out, float y0, float y1, bool vec) {
    if (vec) {
        *(unsigned*)out = fa_pack(y0, y1, (const T*)nullptr);
    } else {
        out[0] = from_f32<T>(y0);
        out[1] = from_f32<T>(y1);
    }
}
template <int D, typename T>
__device__ inline void fa_merge_store(float* m, float* l, float (*acc)[4], T* o, int r_lo, int r_hi, int seq_q,
                                      bool vec_o, float* smem, int rg, int kh, int lane, int tig) {
    constexpr int NB = D / 8;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] += __shfl_xor(l[h], 1);
        l[h] += __shfl_xor(l[h], 2);
    }
    constexpr int MW = NB * 4 + 4;
    float* mine = smem + rg * MW * 32 + lane;
    fa_copy_wait();  // (nothing is in flight after the last tile; this is cheap)
    __syncthreads();  // the tiles are no longer read: the merge area takes their place
    if (kh == 1) {
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                mine[(nb * 4 + e) * 32] = acc[nb][e];
            }
        }
        mine[(NB * 4) * 32] = m[0];
        mine[(NB * 4 + 1) * 32] = m[1];
        mine[(NB * 4 + 2) * 32] = l[0];
        mine[(NB * 4 + 3) * 32] = l[1];
    }
    __syncthreads();
    if (kh == 0) {
        float fa[2], fb[2], inv[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const float mb = mine[(NB * 4 + h) * 32], lb = mine[(NB * 4 + 2 + h) * 32];
            const float mm = fmaxf(m[h], mb);
            fa[h] = m[h] == NEG_INF ? 0.0f : exp2f(m[h] - mm);
            fb[h] = mb == NEG_INF ? 0.0f : exp2f(mb - mm);
            inv[h] = 1.0f / (l[h] * fa[h] + lb * fb[h]);
        }
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = h ? r_hi : r_lo;
                const float y0 = (acc[nb][2 * h] * fa[h] + mine[(nb * 4 + 2 * h) * 32] * fb[h]) * inv[h];
                const float y1 = (acc[nb][2 * h + 1] * fa[h] + mine[(nb * 4 + 2 * h + 1) * 32] * fb[h]) * inv[h];
                if (row < seq_q) {
                    fa_store2(o + (index_t)row * D + nb * 8 + 2 * tig, y0, y1, vec_o);
                }
            }
        }
    }
}

// The online softmax of a warp's block of scores s[NK][4] (this lane: rows r_lo for e < 2 and
// r_lo + 8, keys key0 + 8 nb + 2 tig + (e & 1), the mma's C layout), in base 2: the mask where
// `masked` (a tile reaching past seq_k or, causal, past the diagonal: the others skip the index
// arithmetic), each row's new max over its quad, the probabilities in place of the scores, the
// running sums, and the output rescaled, unless no row of the warp got a larger max (most tiles
// after the first few: 4 NB multiplies a lane saved).
// 2^x by the MUFU instruction alone (exp2f adds a scaling for results below 2^-126, which only
// flushes to 0 here, next to a running sum of at least 1).
__device__ inline float fa_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
template <int NK, int NB>
__device__ inline void fa_softmax(float (*s)[4], float* m, float* l, float (*acc)[4], int key0, int r_lo, int seq_k,
                                  int causal, int shift, float c2, bool masked) {
    const int tig = threadIdx.x % 4;
    float mx[2] = {NEG_INF, NEG_INF};
#pragma unroll
    for (int nb = 0; nb < NK; ++nb) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            float x = s[nb][e] * c2;
            if (masked) {
                const int key = key0 + nb * 8 + 2 * tig + (e & 1);
                const int row = e < 2 ? r_lo : r_lo + 8;
                if (key >= seq_k || (causal && key > row + shift)) {
                    x = NEG_INF;
                }
            }
            s[nb][e] = x;
            mx[e / 2] = fmaxf(mx[e / 2], x);
        }
    }
    float alpha[2], mr[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
        const float m_new = fmaxf(m[h], mx[h]);
        alpha[h] = m_new == NEG_INF ? 1.0f : fa_exp2(m[h] - m_new);
        m[h] = m_new;
        mr[h] = m_new == NEG_INF ? 0.0f : m_new;  // a row with nothing yet: every p is 0
    }
    float sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int nb = 0; nb < NK; ++nb) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const float p = fa_exp2(s[nb][e] - mr[e / 2]);
            s[nb][e] = p;
            sum[e / 2] += p;
        }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] = l[h] * alpha[h] + sum[h];
    }
    if (__any_sync(0xffffffffu, alpha[0] != 1.0f || alpha[1] != 1.0f)) {
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
            acc[nb][0] *= alpha[0];
            acc[nb][1] *= alpha[0];
            acc[nb][2] *= alpha[1];
            acc[nb][3] *= alpha[1];
        }
    }
}

template <int D, typename T>
__device__ void flash_attention_mma(int seq_q, int seq_k, int causal, float scale,
                                    const T* q, const T* k, const T* v, T* o, float* smem) {
    constexpr int BN = 64;              // keys per tile, 32 a warp
    constexpr int KP = D + 8;           // row stride of the K and V tiles (elements)
    constexpr int KS = D / 16;          // k-steps of q k^T
    constexpr int NB = D / 8;           // 8-column blocks of the output
    const T* tag = nullptr;
    T* qs = (T*)smem;  // q's 64 rows; then the K and V tiles (all of KP-element rows)
    T* ks = qs + FA_BM * KP;
    T* vs = ks + BN * KP;
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    const int g = lane / 4, tig = lane % 4;
    const int rg = warp % 4, kh = warp / 4;
    const int qb = causal ? (int)gridDim.x - 1 - (int)blockIdx.x : (int)blockIdx.x;
    const int q0 = qb * FA_BM;
    const index_t head = blockIdx.y;
    q += head * seq_q * D;
    o += head * seq_q * D;
    k += head * seq_k * D;
    v += head * seq_k * D;
    const int shift = seq_k - seq_q;
    const bool vec = aligned_to(k, v, v, 16);
    const bool vec_o = aligned_to(o, o, o, 4);
    const float c2 = scale * 1.4426950408889634f;  // scores in base 2
    const int r_lo = q0 + 16 * rg + g, r_hi = r_lo + 8;

    // q's tile into shared memory (zeros past seq_q), read as A fragments at each k-step (held in
    // registers instead, they would leave room for one block a multiprocessor at head_dim 128).
    for (int e = t; e < FA_BM * D; e += FA_THREADS) {
        const int r = e / D, c = e % D;
        qs[r * KP + c] = q0 + r < seq_q ? q[(index_t)(q0 + r) * D + c] : from_f32<T>(0.0f);
    }
    float m[2] = {NEG_INF, NEG_INF}, l[2] = {0.0f, 0.0f};
    float acc[NB][4];
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {
        acc[nb][0] = acc[nb][1] = acc[nb][2] = acc[nb][3] = 0.0f;
    }
    const int kv_end = causal ? min(seq_k, q0 + FA_BM + shift) : seq_k;

    // FlashAttention-2's pipeline over one K and one V tile: K of tile j is waited for, V of
    // tile j is asked for and arrives while the scores are computed, then K of tile j + 1 while
    // P V is (cp.async: the copies run beside the MMAs). Two barriers a tile, as without it.
    if (kv_end > 0) {
        fa_copy_tile<D, BN, KP>(ks, k, 0, seq_k, vec);
    }
    for (int k0 = 0; k0 < kv_end; k0 += BN) {
        fa_copy_wait();
        __syncthreads();  // K's tile is here for all; every warp is done with the last V tile
        fa_copy_tile<D, BN, KP>(vs, v, k0, seq_k, vec);
        // This warp's scores: rows r_lo, r_hi against 4 blocks of 8 keys.
        float s[4][4];
#pragma unroll
        for (int nb = 0; nb < 4; ++nb) {
            s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.0f;
        }
        // Fragments by ldmatrix: q's A (matrices: rows 0-7 and 8-15 of columns 0-7, then of
        // 8-15), K's B for two blocks of 8 keys (keys 0-7 at d 0-7, d 8-15, keys 8-15 likewise).
        const int lr = lane % 8, lm = lane / 8;
#pragma unroll
        for (int kk = 0; kk < KS; ++kk) {
            unsigned qa[4];
            fa_ldmatrix<false>(qa, qs + (16 * rg + lr + (lm % 2) * 8) * KP + kk * 16 + (lm / 2) * 8);
#pragma unroll
            for (int nb = 0; nb < 4; nb += 2) {
                unsigned kb[4];
                fa_ldmatrix<false>(kb, ks + (kh * 32 + nb * 8 + (lm / 2) * 8 + lr) * KP + kk * 16 + (lm % 2) * 8);
                fa_mma(s[nb], qa, kb[0], kb[1], tag);
                fa_mma(s[nb + 1], qa, kb[2], kb[3], tag);
            }
        }
        const bool masked = k0 + BN > seq_k || (causal && k0 + BN - 1 > q0 + shift);
        fa_softmax<4, NB>(s, m, l, acc, k0 + kh * 32, r_lo, seq_k, causal, shift, c2, masked);
        fa_copy_wait();
        __syncthreads();  // V's tile is here for all; every warp is done with K's
        if (k0 + BN < kv_end) {
            fa_copy_tile<D, BN, KP>(ks, k, k0 + BN, seq_k, vec);
        }
        // o += p v, 16 keys a step; p's A fragment is the scores' own registers, rounded to T.
#pragma unroll
        for (int kk = 0; kk < 2; ++kk) {
            const unsigned pa[4] = {fa_pack(s[2 * kk][0], s[2 * kk][1], tag), fa_pack(s[2 * kk][2], s[2 * kk][3], tag),
                                    fa_pack(s[2 * kk + 1][0], s[2 * kk + 1][1], tag),
                                    fa_pack(s[2 * kk + 1][2], s[2 * kk + 1][3], tag)};
            // V's B fragments for two blocks of 8 columns, transposed by ldmatrix (keys 0-7 and
            // 8-15 of columns 0-7, then of 8-15).
#pragma unroll
            for (int nb = 0; nb < NB; nb += 2) {
                unsigned vb[4];
                fa_ldmatrix<true>(vb, vs + (kh * 32 + kk * 16 + (lm % 2) * 8 + lr) * KP + nb * 8 + (lm / 2) * 8);
                fa_mma(acc[nb], pa, vb[0], vb[1], tag);
                fa_mma(acc[nb + 1], pa, vb[2], vb[3], tag);
            }
        }
    }
    fa_merge_store<D>(m, l, acc, o, r_lo, r_hi, seq_q, vec_o, smem, rg, kh, lane, tig);
}

// The f32 kernels on the same tensor cores, at f32's accuracy: each f32 operand x is split into
// two TF32 numbers, big = x rounded to TF32 (10-bit mantissa) and small = x - big rounded again,
// and a product a b is summed as a_small b_big + a_big b_small + a_big b_big (three
// mma.sync.m16n8k8 TF32 MMAs, f32 sums; the dropped a_small b_small is below f32's rounding:
// "3xTF32", as in CUTLASS). Same launch, warps and online softmax as flash_attention_mma; the
// fragment layouts of m16n8k8.tf32 (PTX ISA): lane 4 g + tig holds, of a 16 x 8 A, (g, tig),
// (g + 8, tig), (g, tig + 4), (g + 8, tig + 4); of an 8 x 8 B, (tig, g), (tig + 4, g); the sums
// as m16n8k16's. The scores' layout, (g, 2 tig), (g, 2 tig + 1), (g + 8, ..), is not P's A
// layout, but P V may take the 8 keys of a block in any order if V's rows take the same: A's
// columns tig, tig + 4 stand for keys 2 tig, 2 tig + 1, and B reads V's rows 2 tig, 2 tig + 1.
// Shared memory: q's tile in a static array (it does not fit beside K and V in the 52 / 60 KiB
// of dynamic memory attention_shared_bytes gives every backend), K's and V's tiles of BN keys
// (rows of D + 4 floats: the lanes of a fragment load hit 32 different banks) in the dynamic.
template <int D>
struct FaTf32 {
    // Keys a tile: K and V fit in the 52 / 60 KiB. (32 at head_dim 128 measured 5% slower on the
    // H100, and one block a multiprocessor with more registers 8%.)
    static constexpr int BN = D <= 64 ? 64 : 48;
};

__device__ inline void fa_split(float x, unsigned& big, unsigned& small) {
    // Without conversions: big is x truncated to TF32 (its low 13 bits cleared), small = x - big
    // exactly, passed as it is: the MMA reads a TF32 operand's upper 19 bits, so small is
    // truncated there (relative error 2^-10 of small, 2^-20 of x). Rounding both with
    // cvt.rna.tf32.f32 was as accurate on the checks and 1.4x slower on the H100: two
    // conversions a split, at a quarter of the FP32 rate, were the kernel's bottleneck.
    big = __float_as_uint(x) & 0xffffe000u;
    small = __float_as_uint(x - __uint_as_float(big));
}
__device__ inline void fa_mma_tf32(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// c += a b in 3xTF32: a as (big, small) fragments, b as its big and small registers.
__device__ inline void fa_mma3(float* c, const unsigned* ab, const unsigned* as, unsigned bb0, unsigned bb1,
                               unsigned bs0, unsigned bs1) {
    fa_mma_tf32(c, as, bb0, bb1);
    fa_mma_tf32(c, ab, bs0, bs1);
    fa_mma_tf32(c, ab, bb0, bb1);
}

template <int D>
__device__ void flash_attention_tf32(int seq_q, int seq_k, int causal, float scale,
                                     const float* q, const float* k, const float* v, float* o, float* smem) {
    constexpr int BN = FaTf32<D>::BN;
    constexpr int KW = BN / 2;  // keys a warp of each tile
    constexpr int NK = KW / 8;  // its blocks of 8 keys
    constexpr int DP = D + 4;   // row stride of the q, K and V tiles
    constexpr int KS = D / 8;   // k-steps of q k^T
    constexpr int NB = D / 8;   // 8-column blocks of the output
    __shared__ float qs[FA_BM * DP];
    float* ks = smem;
    float* vs = ks + BN * DP;
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    const int g = lane / 4, tig = lane % 4;
    const int rg = warp % 4, kh = warp / 4;
    const int qb = causal ? (int)gridDim.x - 1 - (int)blockIdx.x : (int)blockIdx.x;
    const int q0 = qb * FA_BM;
    const index_t head = blockIdx.y;
    q += head * seq_q * D;
    o += head * seq_q * D;
    k += head * seq_k * D;
    v += head * seq_k * D;
    const int shift = seq_k - seq_q;
    const bool vec = aligned_to(k, v, v, 16);
    const bool vec_q = aligned_to(q, q, q, 16);
    const bool vec_o = aligned_to(o, o, o, 8);
    const float c2 = scale * 1.4426950408889634f;  // scores in base 2
    const int r_lo = q0 + 16 * rg + g, r_hi = r_lo + 8;

    for (int e = t; e < FA_BM * (D / 4); e += FA_THREADS) {
        const int r = e / (D / 4), c = (e % (D / 4)) * 4;
        float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (q0 + r < seq_q) {
            x = load4(q + (index_t)(q0 + r) * D + c, vec_q);
        }
        *(float4*)(qs + r * DP + c) = x;
    }
    float m[2] = {NEG_INF, NEG_INF}, l[2] = {0.0f, 0.0f};
    float acc[NB][4];
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {
        acc[nb][0] = acc[nb][1] = acc[nb][2] = acc[nb][3] = 0.0f;
    }
    const int kv_end = causal ? min(seq_k, q0 + FA_BM + shift) : seq_k;
    const float* qr = qs + (16 * rg + g) * DP + tig;  // this lane's q fragment elements

    // The pipeline of flash_attention_mma: K of tile j waited for, V of tile j arriving during
    // the scores, K of tile j + 1 during P V.
    if (kv_end > 0) {
        fa_copy_tile<D, BN, DP>(ks, k, 0, seq_k, vec);
    }
    for (int k0 = 0; k0 < kv_end; k0 += BN) {
        fa_copy_wait();
        __syncthreads();
        fa_copy_tile<D, BN, DP>(vs, v, k0, seq_k, vec);
        // This warp's scores: rows r_lo, r_hi against NK blocks of 8 keys.
        float s[NK][4];
#pragma unroll
        for (int nb = 0; nb < NK; ++nb) {
            s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.0f;
        }
        const float* kr = ks + (kh * KW + g) * DP + tig;
#pragma unroll
        for (int kk = 0; kk < KS; ++kk) {
            unsigned ab[4], as[4];
            fa_split(qr[kk * 8], ab[0], as[0]);
            fa_split(qr[8 * DP + kk * 8], ab[1], as[1]);
            fa_split(qr[kk * 8 + 4], ab[2], as[2]);
            fa_split(qr[8 * DP + kk * 8 + 4], ab[3], as[3]);
#pragma unroll
            for (int nb = 0; nb < NK; ++nb) {
                unsigned bb0, bs0, bb1, bs1;
                fa_split(kr[nb * 8 * DP + kk * 8], bb0, bs0);
                fa_split(kr[nb * 8 * DP + kk * 8 + 4], bb1, bs1);
                fa_mma3(s[nb], ab, as, bb0, bb1, bs0, bs1);
            }
        }
        const bool masked = k0 + BN > seq_k || (causal && k0 + BN - 1 > q0 + shift);
        fa_softmax<NK, NB>(s, m, l, acc, k0 + kh * KW, r_lo, seq_k, causal, shift, c2, masked);
        fa_copy_wait();
        __syncthreads();
        if (k0 + BN < kv_end) {
            fa_copy_tile<D, BN, DP>(ks, k, k0 + BN, seq_k, vec);
        }
        // o += p v, a block of 8 keys a step: A = (p of keys 2 tig, 2 tig + 1 of the block).
#pragma unroll
        for (int nb = 0; nb < NK; ++nb) {
            unsigned ab[4], as[4];
            fa_split(s[nb][0], ab[0], as[0]);
            fa_split(s[nb][2], ab[1], as[1]);
            fa_split(s[nb][1], ab[2], as[2]);
            fa_split(s[nb][3], ab[3], as[3]);
            const float* vr = vs + (kh * KW + nb * 8 + 2 * tig) * DP + g;
#pragma unroll
            for (int ob = 0; ob < NB; ++ob) {
                unsigned bb0, bs0, bb1, bs1;
                fa_split(vr[ob * 8], bb0, bs0);
                fa_split(vr[DP + ob * 8], bb1, bs1);
                fa_mma3(acc[ob], ab, as, bb0, bb1, bs0, bs1);
            }
        }
    }
    fa_merge_store<D>(m, l, acc, o, r_lo, r_hi, seq_q, vec_o, smem, rg, kh, lane, tig);
}
#endif

// One kernel per head dimension and element type, each over dynamic shared memory
// (attention_shared_bytes in src/lib.rs: at most 64 KiB). On NVIDIA the half kernels (tensor
// cores, f32 in 3xTF32) ask for registers that let two blocks share a multiprocessor.
#if defined(__HIP_PLATFORM_NVIDIA__)
#define FA_MMA_BOUNDS __launch_bounds__(FA_THREADS, 2)
#else
#define FA_MMA_BOUNDS __launch_bounds__(FA_THREADS)
#endif
__global__ void FA_MMA_BOUNDS flash_attention_d64(int seq_q, int seq_k, int causal, float scale, const float* q,
                                           const float* k, const float* v, float* o) {
    extern __shared__ float4 fa_smem[];
#if FA_TENSOR_CORES
    flash_attention_tf32<64>(seq_q, seq_k, causal, scale, q, k, v, o, (float*)fa_smem);
#else
    flash_attention_block<64>(seq_q, seq_k, causal, scale, q, k, v, o, (float*)fa_smem);
#endif
}
__global__ void FA_MMA_BOUNDS flash_attention_d128(int seq_q, int seq_k, int causal, float scale, const float* q,
                                           const float* k, const float* v, float* o) {
    extern __shared__ float4 fa_smem[];
#if FA_TENSOR_CORES
    flash_attention_tf32<128>(seq_q, seq_k, causal, scale, q, k, v, o, (float*)fa_smem);
#else
    flash_attention_block<128>(seq_q, seq_k, causal, scale, q, k, v, o, (float*)fa_smem);
#endif
}
__global__ void FA_MMA_BOUNDS flash_attention_d64_f16(int seq_q, int seq_k, int causal, float scale, const __half* q,
                                                  const __half* k, const __half* v, __half* o) {
    extern __shared__ float4 fa_smem[];
#if FA_TENSOR_CORES
    flash_attention_mma<64>(seq_q, seq_k, causal, scale, q, k, v, o, (float*)fa_smem);
#else
    flash_attention_block<64>(seq_q, seq_k, causal, scale, q, k, v, o, (float*)fa_smem);
#endif
}
__global__ void FA_MMA_BOUNDS flash_attention_d128_f16(int seq_q, int seq_k, int causal, float scale, const __half* q,
                                                  const __half* k, const __half* v, __half* o) {
    extern __shared__ float4 fa_smem[];
#if FA_TENSOR_CORES
    flash_attention_mma<128>(seq_q, seq_k, causal, scale, q, k, v, o, (float*)fa_smem);
#else
    flash_attention_block<128>(seq_q, seq_k, causal, scale, q, k, v, o, (float*)fa_smem);
#endif
}
__global__ void FA_MMA_BOUNDS flash_attention_d64_bf16(int seq_q, int seq_k, int causal, float scale, const __hip_bfloat16* q,
                                                  const __hip_bfloat16* k, const __hip_bfloat16* v, __hip_bfloat16* o) {
    extern __shared__ float4 fa_smem[];
#if FA_TENSOR_CORES
    flash_attention_mma<64>(seq_q, seq_k, causal, scale, q, k, v, o, (float*)fa_smem);
#else
    flash_attention_block<64>(seq_q, seq_k, causal, scale, q, k, v, o, (float*)fa_smem);
#endif
}
__global__ void FA_MMA_BOUNDS flash_attention_d128_bf16(int seq_q, int seq_k, int causal, float scale, const __hip_bfloat16* q,
                                                  const __hip_bfloat16* k, const __hip_bfloat16* v, __hip_bfloat16* o) {
    extern __shared__ float4 fa_smem[];
#if FA_TENSOR_CORES
    flash_attention_mma<128>(seq_q, seq_k, causal, scale, q, k, v, o, (float*)fa_smem);
#else
    flash_attention_block<128>(seq_q, seq_k, causal, scale, q, k, v, o, (float*)fa_smem);
#endif
}

// The tiled f32 matmul is in kernels/matmul.hip: its tile shapes are compile-time parameters that
// `cargo rocm tune` searches, and a run-time compile of a candidate compiles that file alone.
