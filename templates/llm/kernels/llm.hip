// The inference kernels of a decoder-only transformer layer, in f32. Each one has a Rust
// reference in src/lib.rs (f64 accumulation), a check in tests/kernels.rs and a bench in
// benches/kernels.rs. Launch them through the functions in src/lib.rs: they refuse the shapes a
// kernel does not support (with the reason) and compute the grid.
//
// Layouts (row-major, innermost last):
//   activations  x[rows][cols]                 (softmax, RMSNorm: one row per block)
//   q, k, v, o   [heads][seq][head_dim]        (attention; batch folded into heads)
//   RoPE input   x[tokens][heads][head_dim]    (rotate-half: pairs (i, i + head_dim/2))
//   KV cache     cache[max_seq][kv_heads][head_dim], contiguous (not paged)
#include <hip/hip_runtime.h>

// -infinity, and 64-bit offsets, without the standard headers (NVRTC has none: no INFINITY, no
// index_t); __int_as_float is in HIP, CUDA and the cpu backend alike.
#define NEG_INF __int_as_float((int)0xff800000u)
typedef long long index_t;

// Threads per block of the row kernels (ROW_BLOCK in src/lib.rs).
#define ROW_BLOCK 256

// Elements per thread of `scale` and `swiglu` (VEC in src/lib.rs): one 16-byte load per input
// and one store where the buffers are 16-byte aligned (device allocations are), else one element
// at a time (a sub-slice at an odd offset; the cpu backend's checked mode, which ends a buffer at
// a guard page); the last n % 4 elements one at a time.
#define VEC 4

__device__ bool aligned16(const void* a, const void* b, const void* c) {
    return (((unsigned long long)a | (unsigned long long)b | (unsigned long long)c) & 15) == 0;
}

// y[i] = s * x[i]
__global__ void scale(int n, float s, const float* x, float* y) {
    index_t i = ((index_t)blockIdx.x * blockDim.x + threadIdx.x) * VEC;
    if (i + VEC <= n && aligned16(x, y, y)) {
        float4 v = *(const float4*)(x + i);
        v.x *= s;
        v.y *= s;
        v.z *= s;
        v.w *= s;
        *(float4*)(y + i) = v;
    } else {
        for (index_t end = i + VEC < n ? i + VEC : n; i < end; i++) {
            y[i] = s * x[i];
        }
    }
}

// In place on scores[batch][rows][cols] (batch: heads, each the same pattern): -inf where key
// `c` lies after query `r`, i.e. c > r + offset (offset = cols - rows when the queries are the
// last `rows` positions of `cols`).
__global__ void causal_mask(int batch, int rows, int cols, int offset, float* scores) {
    index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (index_t)batch * rows * cols) {
        int r = (int)((i / cols) % rows);
        int c = (int)(i % cols);
        if (c > r + offset) {
            scores[i] = NEG_INF;
        }
    }
}

// Block-wide reductions over ROW_BLOCK threads through shared memory `red` (ROW_BLOCK floats);
// every thread gets the result.
__device__ float block_max(float v, float* red) {
    int t = threadIdx.x;
    red[t] = v;
    __syncthreads();
    for (int s = ROW_BLOCK / 2; s > 0; s /= 2) {
        if (t < s) {
            red[t] = fmaxf(red[t], red[t + s]);
        }
        __syncthreads();
    }
    float r = red[0];
    __syncthreads();  // `red` is reused by the next reduction
    return r;
}

__device__ float block_sum(float v, float* red) {
    int t = threadIdx.x;
    red[t] = v;
    __syncthreads();
    for (int s = ROW_BLOCK / 2; s > 0; s /= 2) {
        if (t < s) {
            red[t] += red[t + s];
        }
        __syncthreads();
    }
    float r = red[0];
    __syncthreads();
    return r;
}

// Values of a row each thread keeps in registers between the passes of the row kernels: rows of
// up to ROW_BLOCK * ROW_CACHE columns are read from memory once; the columns past that are read
// again in each pass.
#define ROW_CACHE 16

// Numerically stable softmax of each row: y = exp(x - max) / sum(exp(x - max)). Masked entries
// (-inf) become 0. One block of ROW_BLOCK threads per row.
__global__ void __launch_bounds__(ROW_BLOCK) softmax_rows(int rows, int cols, const float* x, float* y) {
    __shared__ float red[ROW_BLOCK];
    const float* xr = x + (index_t)blockIdx.x * cols;
    float* yr = y + (index_t)blockIdx.x * cols;
    const int rest = ROW_BLOCK * ROW_CACHE;
    float v[ROW_CACHE];
    float m = NEG_INF;
#pragma unroll
    for (int k = 0; k < ROW_CACHE; k++) {
        int c = threadIdx.x + k * ROW_BLOCK;
        v[k] = c < cols ? xr[c] : NEG_INF;
        m = fmaxf(m, v[k]);
    }
    for (int c = threadIdx.x + rest; c < cols; c += ROW_BLOCK) {
        m = fmaxf(m, xr[c]);
    }
    m = block_max(m, red);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < ROW_CACHE; k++) {
        int c = threadIdx.x + k * ROW_BLOCK;
        v[k] = c < cols ? expf(v[k] - m) : 0.0f;
        s += v[k];
    }
    for (int c = threadIdx.x + rest; c < cols; c += ROW_BLOCK) {
        s += expf(xr[c] - m);
    }
    s = block_sum(s, red);
    float inv = 1.0f / s;
#pragma unroll
    for (int k = 0; k < ROW_CACHE; k++) {
        int c = threadIdx.x + k * ROW_BLOCK;
        if (c < cols) {
            yr[c] = v[k] * inv;
        }
    }
    for (int c = threadIdx.x + rest; c < cols; c += ROW_BLOCK) {
        yr[c] = expf(xr[c] - m) * inv;
    }
}

// RMSNorm of each row: y = x / sqrt(mean(x^2) + eps) * w. One block of ROW_BLOCK threads per row.
__global__ void __launch_bounds__(ROW_BLOCK) rmsnorm(int rows, int cols, float eps, const float* x, const float* w, float* y) {
    __shared__ float red[ROW_BLOCK];
    const float* xr = x + (index_t)blockIdx.x * cols;
    float* yr = y + (index_t)blockIdx.x * cols;
    const int rest = ROW_BLOCK * ROW_CACHE;
    float v[ROW_CACHE];
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < ROW_CACHE; k++) {
        int c = threadIdx.x + k * ROW_BLOCK;
        v[k] = c < cols ? xr[c] : 0.0f;
        ss += v[k] * v[k];
    }
    for (int c = threadIdx.x + rest; c < cols; c += ROW_BLOCK) {
        ss += xr[c] * xr[c];
    }
    ss = block_sum(ss, red);
    float inv = 1.0f / sqrtf(ss / cols + eps);
#pragma unroll
    for (int k = 0; k < ROW_CACHE; k++) {
        int c = threadIdx.x + k * ROW_BLOCK;
        if (c < cols) {
            yr[c] = v[k] * inv * w[c];
        }
    }
    for (int c = threadIdx.x + rest; c < cols; c += ROW_BLOCK) {
        yr[c] = xr[c] * inv * w[c];
    }
}

__device__ float silu_times(float g, float u) { return g / (1.0f + expf(-g)) * u; }

// SwiGLU: y = silu(gate) * up, silu(g) = g / (1 + exp(-g)); VEC elements a thread, as `scale`.
__global__ void swiglu(int n, const float* gate, const float* up, float* y) {
    index_t i = ((index_t)blockIdx.x * blockDim.x + threadIdx.x) * VEC;
    if (i + VEC <= n && aligned16(gate, up, y)) {
        float4 g = *(const float4*)(gate + i);
        float4 u = *(const float4*)(up + i);
        float4 r;
        r.x = silu_times(g.x, u.x);
        r.y = silu_times(g.y, u.y);
        r.z = silu_times(g.z, u.z);
        r.w = silu_times(g.w, u.w);
        *(float4*)(y + i) = r;
    } else {
        for (index_t end = i + VEC < n ? i + VEC : n; i < end; i++) {
            y[i] = silu_times(gate[i], up[i]);
        }
    }
}

// Rotates the pair (x1, x2) = (x[i], x[i + half]) of one head by angle pos * inv_freq[i].
__device__ void rotate_pair(const float* in, float* out, int i, int half, float angle) {
    float c = cosf(angle);
    float s = sinf(angle);
    float x1 = in[i];
    float x2 = in[i + half];
    out[i] = x1 * c - x2 * s;
    out[i + half] = x2 * c + x1 * s;
}

// RoPE in place, rotate-half layout, on x[tokens][heads][head_dim]; token t is at position
// pos0 + t. inv_freq[i] = theta^(-2i/head_dim) (head_dim/2 of them, from `rope_inv_freq` in
// src/lib.rs: the base theta is the caller's). The angle is pos * inv_freq[i] in f32, as models
// compute it. One thread per pair.
__global__ void rope(int tokens, int heads, int head_dim, int pos0, const float* inv_freq, float* x) {
    int half = head_dim / 2;
    index_t p = (index_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p < (index_t)tokens * heads * half) {
        int i = (int)(p % half);
        index_t th = p / half;  // token * heads + head
        int t = (int)(th / heads);
        float* xh = x + th * head_dim;
        rotate_pair(xh, xh, i, half, (float)(pos0 + t) * inv_freq[i]);
    }
}

// RoPE fused with the KV-cache append (contiguous cache): k and v are [tokens][kv_heads][head_dim]
// for positions pos0 .. pos0 + tokens; the rotated k and the unchanged v are written at those rows
// of k_cache and v_cache ([max_seq][kv_heads][head_dim]). Rows outside are left as they are.
// One thread per pair.
__global__ void rope_kv_append(int tokens, int kv_heads, int head_dim, int pos0, int max_seq,
                               const float* inv_freq, const float* k, const float* v,
                               float* k_cache, float* v_cache) {
    int half = head_dim / 2;
    index_t p = (index_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p < (index_t)tokens * kv_heads * half) {
        int i = (int)(p % half);
        index_t th = p / half;
        int t = (int)(th / kv_heads);
        if (pos0 + t >= max_seq) {
            return;
        }
        index_t dst = ((index_t)pos0 * kv_heads + th) * head_dim;
        rotate_pair(k + th * head_dim, k_cache + dst, i, half, (float)(pos0 + t) * inv_freq[i]);
        v_cache[dst + i] = v[th * head_dim + i];
        v_cache[dst + i + half] = v[th * head_dim + i + half];
    }
}

// FlashAttention forward: o = softmax(scale * q k^T [+ causal mask]) v, without the score matrix.
// A block computes FA_BM query rows of one head; it walks the keys in tiles of FA_BN, keeping for
// each row the running max m, the running sum l and the unnormalised output, rescaled by
// exp(m_old - m_new) when the max grows (the online softmax). Causal: query r (of seq_q, the
// last seq_q of seq_k positions) sees keys c <= r + seq_k - seq_q.
// Grid (ceil(seq_q / FA_BM), heads), FA_THREADS threads (FA_* in src/lib.rs).
#define FA_BM 16
#define FA_BN 32
#define FA_THREADS 128
#define FA_LANES (FA_THREADS / FA_BM)

template <int D>
__device__ void flash_attention_block(int seq_q, int seq_k, int causal, float scale,
                                      const float* q, const float* k, const float* v, float* o,
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
        qs[r][c] = q0 + r < seq_q ? q[(index_t)(q0 + r) * D + c] * scale : 0.0f;
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
            ks[r][c] = in ? k[(index_t)(k0 + r) * D + c] : 0.0f;
            vs[r][c] = in ? v[(index_t)(k0 + r) * D + c] : 0.0f;
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
            o[(index_t)(q0 + my_row) * D + lane + j * FA_LANES] = acc[j] * inv;
        }
    }
}

__global__ void __launch_bounds__(FA_THREADS) flash_attention_d64(int seq_q, int seq_k, int causal, float scale,
                                                                  const float* q, const float* k, const float* v, float* o) {
    __shared__ float qs[FA_BM][64];
    __shared__ float ks[FA_BN][64 + 1];  // padded: a wave reads a column of ks
    __shared__ float vs[FA_BN][64];
    __shared__ float ps[FA_BM][FA_BN];
    __shared__ float row_m[FA_BM], row_l[FA_BM], row_alpha[FA_BM];
    flash_attention_block<64>(seq_q, seq_k, causal, scale, q, k, v, o, qs, ks, vs, ps, row_m, row_l, row_alpha);
}

__global__ void __launch_bounds__(FA_THREADS) flash_attention_d128(int seq_q, int seq_k, int causal, float scale,
                                                                   const float* q, const float* k, const float* v, float* o) {
    __shared__ float qs[FA_BM][128];
    __shared__ float ks[FA_BN][128 + 1];  // padded: a wave reads a column of ks
    __shared__ float vs[FA_BN][128];
    __shared__ float ps[FA_BM][FA_BN];
    __shared__ float row_m[FA_BM], row_l[FA_BM], row_alpha[FA_BM];
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
