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
// A block computes FA_BM query rows of one head; it walks the keys in tiles of FA_BN, keeping for
// each row the running max m, the running sum l and the unnormalised output, rescaled by
// exp(m_old - m_new) when the max grows (the online softmax). Causal: query r (of seq_q, the
// last seq_q of seq_k positions) sees keys c <= r + seq_k - seq_q. q, k, v and o are of the
// element type T; the tiles in shared memory, the scores, the running state and the output's
// accumulators are f32 whatever T is.
// Grid (ceil(seq_q / FA_BM), heads), FA_THREADS threads (FA_* in src/lib.rs).
#define FA_BM 16
#define FA_BN 32
#define FA_THREADS 128
#define FA_LANES (FA_THREADS / FA_BM)

template <int D, typename T>
__device__ void flash_attention_block(int seq_q, int seq_k, int causal, float scale,
                                      const T* q, const T* k, const T* v, T* o,
                                      float (*qs)[D], float (*ks)[D + 1], float (*vs)[D],
                                      float (*ps)[FA_BN], float* row_m, float* row_l,
                                      float* row_alpha) {
    const int t = threadIdx.x;
    const int q0 = blockIdx.x * FA_BM;
    const index_t head = blockIdx.y;
    q += head * seq_q * D;
    o += head * seq_q * D;
    k += head * seq_k * D;
    v += head * seq_k * D;
    const int shift = seq_k - seq_q;

    for (int e = t; e < FA_BM * D; e += FA_THREADS) {
        int r = e / D, c = e % D;
        qs[r][c] = q0 + r < seq_q ? to_f32(q[(index_t)(q0 + r) * D + c]) * scale : 0.0f;
    }
    if (t < FA_BM) {
        row_m[t] = NEG_INF;
        row_l[t] = 0.0f;
    }
    // This thread's share of the output: row `my_row`, columns lane, lane + FA_LANES, ...
    const int my_row = t / FA_LANES;
    const int lane = t % FA_LANES;
    float acc[D / FA_LANES];
    for (int j = 0; j < D / FA_LANES; ++j) {
        acc[j] = 0.0f;
    }
    // Keys past the last one this block's last row sees are skipped.
    const int kv_end = causal ? min(seq_k, q0 + FA_BM + shift) : seq_k;

    for (int k0 = 0; k0 < kv_end; k0 += FA_BN) {
        __syncthreads();  // the previous tile's ks, vs and ps are no longer read
        for (int e = t; e < FA_BN * D; e += FA_THREADS) {
            int r = e / D, c = e % D;
            bool in = k0 + r < seq_k;
            ks[r][c] = in ? to_f32(k[(index_t)(k0 + r) * D + c]) : 0.0f;
            vs[r][c] = in ? to_f32(v[(index_t)(k0 + r) * D + c]) : 0.0f;
        }
        __syncthreads();
        for (int e = t; e < FA_BM * FA_BN; e += FA_THREADS) {
            int r = e / FA_BN, c = e % FA_BN;
            int key = k0 + c;
            float s = NEG_INF;
            if (key < seq_k && !(causal && key > q0 + r + shift)) {
                s = 0.0f;
                for (int d = 0; d < D; ++d) {
                    s += qs[r][d] * ks[c][d];
                }
            }
            ps[r][c] = s;
        }
        __syncthreads();
        if (t < FA_BM) {
            float m_old = row_m[t];
            float m_new = m_old;
            for (int c = 0; c < FA_BN; ++c) {
                m_new = fmaxf(m_new, ps[t][c]);
            }
            float alpha = 1.0f;
            float sum = 0.0f;
            if (m_new == NEG_INF) {
                // Nothing seen yet for this row: p = 0 everywhere.
                for (int c = 0; c < FA_BN; ++c) {
                    ps[t][c] = 0.0f;
                }
            } else {
                alpha = expf(m_old - m_new);
                for (int c = 0; c < FA_BN; ++c) {
                    float p = expf(ps[t][c] - m_new);
                    ps[t][c] = p;
                    sum += p;
                }
            }
            row_alpha[t] = alpha;
            row_m[t] = m_new;
            row_l[t] = row_l[t] * alpha + sum;
        }
        __syncthreads();
        const float alpha = row_alpha[my_row];
        for (int j = 0; j < D / FA_LANES; ++j) {
            const int c = lane + j * FA_LANES;
            float a = acc[j] * alpha;
            for (int n = 0; n < FA_BN; ++n) {
                a += ps[my_row][n] * vs[n][c];
            }
            acc[j] = a;
        }
    }
    __syncthreads();
    if (q0 + my_row < seq_q) {
        const float inv = 1.0f / row_l[my_row];
        for (int j = 0; j < D / FA_LANES; ++j) {
            o[(index_t)(q0 + my_row) * D + lane + j * FA_LANES] = from_f32<T>(acc[j] * inv);
        }
    }
}

// One kernel per head dimension and element type; each declares its tiles in f32 (D + 1 columns
// of ks: padded, as a wave reads a column of it) and runs flash_attention_block.
#define FA_SHARED(D)                          \
    __shared__ float qs[FA_BM][D];            \
    __shared__ float ks[FA_BN][D + 1];        \
    __shared__ float vs[FA_BN][D];            \
    __shared__ float ps[FA_BM][FA_BN];        \
    __shared__ float row_m[FA_BM], row_l[FA_BM], row_alpha[FA_BM]

__global__ void __launch_bounds__(FA_THREADS) flash_attention_d64(int seq_q, int seq_k, int causal, float scale,
                                                                  const float* q, const float* k, const float* v, float* o) {
    FA_SHARED(64);
    flash_attention_block<64>(seq_q, seq_k, causal, scale, q, k, v, o, qs, ks, vs, ps, row_m, row_l, row_alpha);
}
__global__ void __launch_bounds__(FA_THREADS) flash_attention_d128(int seq_q, int seq_k, int causal, float scale,
                                                                   const float* q, const float* k, const float* v, float* o) {
    FA_SHARED(128);
    flash_attention_block<128>(seq_q, seq_k, causal, scale, q, k, v, o, qs, ks, vs, ps, row_m, row_l, row_alpha);
}
__global__ void __launch_bounds__(FA_THREADS) flash_attention_d64_f16(int seq_q, int seq_k, int causal, float scale,
                                                                      const __half* q, const __half* k, const __half* v, __half* o) {
    FA_SHARED(64);
    flash_attention_block<64>(seq_q, seq_k, causal, scale, q, k, v, o, qs, ks, vs, ps, row_m, row_l, row_alpha);
}
__global__ void __launch_bounds__(FA_THREADS) flash_attention_d128_f16(int seq_q, int seq_k, int causal, float scale,
                                                                       const __half* q, const __half* k, const __half* v, __half* o) {
    FA_SHARED(128);
    flash_attention_block<128>(seq_q, seq_k, causal, scale, q, k, v, o, qs, ks, vs, ps, row_m, row_l, row_alpha);
}
__global__ void __launch_bounds__(FA_THREADS) flash_attention_d64_bf16(int seq_q, int seq_k, int causal, float scale,
                                                                       const __hip_bfloat16* q, const __hip_bfloat16* k,
                                                                       const __hip_bfloat16* v, __hip_bfloat16* o) {
    FA_SHARED(64);
    flash_attention_block<64>(seq_q, seq_k, causal, scale, q, k, v, o, qs, ks, vs, ps, row_m, row_l, row_alpha);
}
__global__ void __launch_bounds__(FA_THREADS) flash_attention_d128_bf16(int seq_q, int seq_k, int causal, float scale,
                                                                        const __hip_bfloat16* q, const __hip_bfloat16* k,
                                                                        const __hip_bfloat16* v, __hip_bfloat16* o) {
    FA_SHARED(128);
    flash_attention_block<128>(seq_q, seq_k, causal, scale, q, k, v, o, qs, ks, vs, ps, row_m, row_l, row_alpha);
}

// Tiled matmul c[m][n] = a[m][k] * b[k][n]: blocks of MM_THREADS threads compute MM_TILE x MM_TILE
// tiles of c, each thread an 8 x 8 grid of it (rows tr + 16i, columns tc + 16j, so a wave reads
// shared memory without bank conflicts and writes c coalesced), stepping through k by MM_BK.
// Grid (ceil(n / MM_TILE), ceil(m / MM_TILE)). Any m, n, k >= 1.
#define MM_TILE 128
#define MM_BK 8
#define MM_THREADS 256

__global__ void __launch_bounds__(MM_THREADS) matmul(int m, int n, int k, const float* a, const float* b, float* c) {
    __shared__ float as[MM_BK][MM_TILE];  // a's tile, transposed
    __shared__ float bs[MM_BK][MM_TILE];
    const int t = threadIdx.x;
    const int tr = t / 16, tc = t % 16;
    const int row0 = blockIdx.y * MM_TILE, col0 = blockIdx.x * MM_TILE;
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            acc[i][j] = 0.0f;
        }
    }
    for (int k0 = 0; k0 < k; k0 += MM_BK) {
#pragma unroll
        for (int l = 0; l < (MM_TILE * MM_BK) / MM_THREADS; ++l) {
            int e = t + l * MM_THREADS;
            int r = e / MM_BK, kk = e % MM_BK;
            as[kk][r] = (row0 + r < m && k0 + kk < k) ? a[(index_t)(row0 + r) * k + k0 + kk] : 0.0f;
            int kb = e / MM_TILE, cb = e % MM_TILE;
            bs[kb][cb] = (k0 + kb < k && col0 + cb < n) ? b[(index_t)(k0 + kb) * n + col0 + cb] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < MM_BK; ++kk) {
            float ar[8], br[8];
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                ar[i] = as[kk][tr + 16 * i];
                br[i] = bs[kk][tc + 16 * i];
            }
#pragma unroll
            for (int i = 0; i < 8; ++i) {
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    acc[i][j] += ar[i] * br[j];
                }
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        int r = row0 + tr + 16 * i;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            int col = col0 + tc + 16 * j;
            if (r < m && col < n) {
                c[(index_t)r * n + col] = acc[i][j];
            }
        }
    }
}
