// The decode path of a transformer: attention of one new query token per sequence over a paged
// KV cache, and a top-k / top-p sampler. Like kernels/llm.hip: f32 and half storage (f16, bf16)
// with f32 arithmetic, one template over the element type, Rust references in src/decode.rs,
// checks in tests/kernels.rs, benches in benches/kernels.rs. Launch through src/decode.rs's
// `*_launch` functions (they refuse unsupported shapes and compute the grid).
//
// Layouts (row-major, innermost last):
//   q, out         [num_seqs][heads][head_dim]                     (the new token of each sequence)
//   k/v caches     [num_blocks][DEC_BLOCK][kv_heads][head_dim]     (paged: "NHD" blocks of 16
//                  tokens, as FlashAttention's and FlashInfer's paged caches; vLLM splits the
//                  key's head_dim by 16-byte packs and puts the tokens inside, this keeps a token's
//                  head vector contiguous)
//   block_tables   [num_seqs][max_blocks]  (int: token t of sequence s is in physical block
//                  block_tables[s][t / DEC_BLOCK], slot t % DEC_BLOCK; entries past the context
//                  are not read; blocks may be shared between sequences)
//   context_lens   [num_seqs]              (int: the tokens each sequence attends to, 0 gives 0)
//   GQA: query head h reads kv head h / (heads / kv_heads); a block of threads serves all the
//   query heads of one kv head (at most DEC_MAX_GROUP), so the cache is read once.
//   Split over the context (flash-decoding, vLLM's paged attention v2): partitions of
//   `partition_size` tokens, each writing its max score, its sum of exp(score - max) and its
//   normalised output (f32), merged by `paged_decode_reduce`:
//   max_logits, exp_sums  [num_seqs][heads][max_parts];  tmp_out [num_seqs][heads][max_parts][head_dim]
//
// The sampler: logits[batch][vocab] (f32) -> one token id a row (int). See the comment above
// `sample_topk_chunks`.
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#if defined(__HIP_PLATFORM_AMD__)
#if __has_include(<hip/hip_bf16.h>)
#include <hip/hip_bf16.h>
#else
#include <hip/hip_bfloat16.h>
typedef hip_bfloat16 __hip_bfloat16;
__device__ inline float __bfloat162float(__hip_bfloat16 x) { return float(x); }
__device__ inline __hip_bfloat16 __float2bfloat16(float x) { return __hip_bfloat16(x); }
#endif
#else
#include <hip/hip_bf16.h>
#endif

// The same small helpers as kernels/llm.hip (each file is its own translation unit).
#define DEC_NEG_INF __int_as_float((int)0xff800000u)
typedef long long dec_index_t;

__device__ inline float dec_f32(float x) { return x; }
__device__ inline float dec_f32(__half x) { return __half2float(x); }
__device__ inline float dec_f32(__hip_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ inline T dec_store(float x);
template <>
__device__ inline float dec_store<float>(float x) { return x; }
template <>
__device__ inline __half dec_store<__half>(float x) { return __float2half(x); }
template <>
__device__ inline __hip_bfloat16 dec_store<__hip_bfloat16>(float x) { return __float2bfloat16(x); }

template <typename T, int N>
struct alignas(sizeof(T) * N) DecPack {
    T v[N];
};

// 16 bytes of the cache as 4 words (one 16-byte load whatever the type), and their 16 / sizeof(T)
// elements as floats: bf16 by shifts (its bits are a float's upper half), no conversion calls.
typedef DecPack<unsigned int, 4> DecRaw;
__device__ inline void dec_unpack(const DecRaw& r, float* f, const float*) {
#pragma unroll
    for (int i = 0; i < 4; ++i) f[i] = __uint_as_float(r.v[i]);
}
__device__ inline void dec_unpack(const DecRaw& r, float* f, const __half*) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __half2float(__ushort_as_half((unsigned short)(r.v[i] & 0xffffu)));
        f[2 * i + 1] = __half2float(__ushort_as_half((unsigned short)(r.v[i] >> 16)));
    }
}
__device__ inline void dec_unpack(const DecRaw& r, float* f, const __hip_bfloat16*) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __uint_as_float(r.v[i] << 16);
        f[2 * i + 1] = __uint_as_float(r.v[i] & 0xffff0000u);
    }
}

// A butterfly shuffle every lane of the wave takes part in. On CUDA with the full mask: HIP's
// __shfl_xor there asks __activemask() each time, an asm statement the compiler does not move
// shuffles across, which chained every score's reduction after the previous one's.
#if defined(__CUDACC__)
#define DEC_SHFL_XOR(x, o) __shfl_xor_sync(0xffffffffu, (x), (o))
#else
#define DEC_SHFL_XOR(x, o) __shfl_xor((x), (o))
#endif

#if defined(__CUDACC__)
#define DEC_WAVE 32
#elif defined(__AMDGCN_WAVEFRONT_SIZE)
#define DEC_WAVE __AMDGCN_WAVEFRONT_SIZE
#else
#define DEC_WAVE warpSize
#endif

// Tokens a cache block, threads a block of the attention kernels, tokens a pass (the physical
// block ids of a pass are kept in shared memory), query heads a kv head at most, query heads a
// token slot serves (`DEC_*` in src/decode.rs).
#define DEC_BLOCK 16
#define DEC_THREADS 128
#define DEC_CHUNK 1024
#define DEC_MAX_GROUP 8
#define DEC_SET 4
// Elements of a token's head vector a thread reads (one 16-byte load of a half type, two of f32),
// and 16-byte loads of K (and of V) a thread issues before it uses them: 128 bytes in flight.
#define DEC_VEC 8
#define DEC_UNROLL 4
// log2(e) and ln(2): the scores are kept in base 2 (q is scaled by log2(e)), the max written in
// the natural base.
#define DEC_LOG2E 1.4426950408889634f
#define DEC_LN2 0.6931471805599453f

// One block: the query heads of kv head blockIdx.x of sequence blockIdx.y over its context's
// tokens [start, end): all of them (partition_size 0), or partition blockIdx.z of
// `partition_size` tokens. A token's head vector is read by TPT threads (a token slot), DEC_VEC
// elements each (one 16-byte load of a half type, two of f32), K and V of DEC_UNROLL / loads
// tokens at a time (128 bytes a thread). Each slot keeps its own online
// softmax (running max, sum and output of its tokens, in registers) for DEC_SET query heads: a
// group of up to DEC_SET query heads a kv head is served by every slot; a larger one (up to
// DEC_MAX_GROUP) by two sets of slots, half the block each, which read the same K and V (the
// second read mostly from L1). No barrier while the tokens are read (one a pass of DEC_CHUNK
// tokens, for its block ids); the slots are merged at the end, by shuffles inside a wave, then
// through shared memory. With `out` it writes the normalised output in T; else the partition's
// max score, sum and normalised output (f32). The kernels call it directly, their template
// arguments deduced (the cpu backend then runs them without fibers).
// The shared memory of a block (declared by each kernel, as `__shared__ DecShared<D> sh`).
template <int D>
struct DecShared {
    float qs[DEC_MAX_GROUP][D];          // the queries, times the scale and log2(e)
    float outs[DEC_MAX_GROUP][D];        // the output, summed over the waves
    int blk[DEC_CHUNK / DEC_BLOCK];      // the pass's physical blocks
    float wave_m[DEC_THREADS / 32][DEC_SET];             // each wave's max (waves of 32 or 64)
    float run_m[DEC_MAX_GROUP], run_l[DEC_MAX_GROUP];    // the block's max and sum
};

template <int D, typename T>
__device__ void paged_decode_block(int heads, int kv_heads, int max_blocks, int partition_size, int max_parts,
                                   float scale, const T* q, const T* k_cache, const T* v_cache,
                                   const int* block_tables, const int* context_lens, T* out, float* max_logits,
                                   float* exp_sums, float* tmp_out, DecShared<D>& sh) {
    constexpr int VEC = DEC_VEC;                   // elements of a head vector a thread
    constexpr int LD = VEC * sizeof(T) / 16;       // 16-byte loads of them (2 for f32, 1 for halves)
    constexpr int U = DEC_UNROLL / LD;             // tokens a slot loads at once: 128 bytes of K and V
    constexpr int TPT = D / VEC;
    constexpr int NT = DEC_THREADS / TPT;
    float (*qs)[D] = sh.qs;
    float (*outs)[D] = sh.outs;
    int* blk = sh.blk;

    const int tid = threadIdx.x;
    const int kvh = blockIdx.x;
    const int seq = blockIdx.y;
    const int group = heads / kv_heads;
    const int sets = (group + DEC_SET - 1) / DEC_SET;  // 1 or 2: each half a block (whole waves)
    const int ns = NT / sets;                          // token slots a set
    const int tg = tid / TPT;                          // this thread's token slot
    const int set = tg / ns;
    const int ts = tg % ns;                            // its slot within the set
    const int lane = tid % TPT;                        // and its 16 bytes of the head vector
    const int d0 = lane * VEC;
    const int g0 = set * DEC_SET;                      // the set's first query head
    const int gs = min(DEC_SET, group - g0);           // and its query heads
    const int* table = block_tables + (dec_index_t)seq * max_blocks;
    const int ctx = context_lens[seq];
    const int part = blockIdx.z;
    const int start = part * partition_size;
    const int end = partition_size > 0 ? min(start + partition_size, ctx) : ctx;
    if (out == nullptr && start >= end) {
        return;  // a partition past the context: nothing to write (the merge does not read it)
    }

    const float qscale = scale * DEC_LOG2E;
    for (int e = tid; e < DEC_MAX_GROUP * D; e += DEC_THREADS) {
        const int g = e / D, d = e % D;
        qs[g][d] = g < group ? dec_f32(q[((dec_index_t)seq * heads + kvh * group + g) * D + d]) * qscale : 0.0f;
        outs[g][d] = 0.0f;
    }
    if (tid < DEC_MAX_GROUP) {
        sh.run_l[tid] = 0.0f;
    }
    // This slot's online softmax: max (base 2), sum, unnormalised output, a query head each.
    float m[DEC_SET], l[DEC_SET], acc[DEC_SET][VEC];
#pragma unroll
    for (int g = 0; g < DEC_SET; ++g) {
        m[g] = DEC_NEG_INF;
        l[g] = 0.0f;
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[g][j] = 0.0f;
    }
    const dec_index_t token_stride = (dec_index_t)kv_heads * D;  // between slots of a block
    const T* k_head = k_cache + (dec_index_t)kvh * D + d0;
    const T* v_head = v_cache + (dec_index_t)kvh * D + d0;

    for (int c0 = start; c0 < end; c0 += DEC_CHUNK) {
        const int n = min(DEC_CHUNK, end - c0);
        __syncthreads();  // the previous pass's block ids are no longer read (and qs is written)
        // The physical blocks of this pass (c0 is a multiple of DEC_BLOCK).
        const int nblk = (n + DEC_BLOCK - 1) / DEC_BLOCK;
        for (int j = tid; j < nblk; j += DEC_THREADS) {
            blk[j] = table[c0 / DEC_BLOCK + j];
        }
        __syncthreads();

        // Every thread runs every step (the shuffles need all lanes of a wave), loading only
        // tokens inside the pass; the others are zeros with a score of -inf.
        for (int base = 0; base < n; base += ns * U) {
            // Tokens past the pass load the pass's last token again (no branch around the
            // loads) and get a score of -inf.
            DecRaw kp[U][LD], vp[U][LD];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const unsigned tl = (unsigned)min(base + u * ns + ts, n - 1);
                const unsigned row = (unsigned)blk[tl / DEC_BLOCK] * DEC_BLOCK + tl % DEC_BLOCK;
                const DecRaw* kr = (const DecRaw*)(k_head + (dec_index_t)row * token_stride);
                const DecRaw* vr = (const DecRaw*)(v_head + (dec_index_t)row * token_stride);
#pragma unroll
                for (int x = 0; x < LD; ++x) {
                    kp[u][x] = kr[x];
                    vp[u][x] = vr[x];
                }
            }
            // The scores (base 2), summed over the slot's lanes: every lane gets them.
            float s[U][DEC_SET];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const bool in = base + u * ns + ts < n;
                float kf[VEC];
#pragma unroll
                for (int x = 0; x < LD; ++x) dec_unpack(kp[u][x], kf + x * (VEC / LD), q);
#pragma unroll
                for (int g = 0; g < DEC_SET; ++g) {
                    // Every head of the set, also past the group (q is 0 there, and so is p):
                    // no branch, so the compiler interleaves the reductions.
                    const float4* qv = (const float4*)&qs[g0 + g][d0];
                    float x = 0.0f;
#pragma unroll
                    for (int j = 0; j < VEC / 4; ++j) {
                        const float4 qq = qv[j];
                        x += qq.x * kf[4 * j] + qq.y * kf[4 * j + 1] + qq.z * kf[4 * j + 2] + qq.w * kf[4 * j + 3];
                    }
#pragma unroll
                    for (int o = TPT / 2; o > 0; o /= 2) x += DEC_SHFL_XOR(x, o);
                    s[u][g] = in && g < gs ? x : DEC_NEG_INF;
                }
            }
            // The online softmax over these tokens: the new max, the old state rescaled, the
            // probabilities in place of the scores.
#pragma unroll
            for (int g = 0; g < DEC_SET; ++g) {
                {
                    float mb = s[0][g];
#pragma unroll
                    for (int u = 1; u < U; ++u) mb = fmaxf(mb, s[u][g]);
                    const float mn = fmaxf(m[g], mb);
                    const float mr = mn == DEC_NEG_INF ? 0.0f : mn;  // nothing seen yet: all 0
                    const float alpha = exp2f(m[g] - mr);            // 0 while m is -inf
                    float sum = 0.0f;
#pragma unroll
                    for (int u = 0; u < U; ++u) {
                        s[u][g] = exp2f(s[u][g] - mr);
                        sum += s[u][g];
                    }
                    l[g] = l[g] * alpha + sum;
                    m[g] = mn;
#pragma unroll
                    for (int j = 0; j < VEC; ++j) acc[g][j] *= alpha;
                }
            }
            // P V: this thread's elements of each token's value vector.
#pragma unroll
            for (int u = 0; u < U; ++u) {
                float vf[VEC];
#pragma unroll
                for (int x = 0; x < LD; ++x) dec_unpack(vp[u][x], vf + x * (VEC / LD), q);
#pragma unroll
                for (int g = 0; g < DEC_SET; ++g) {
#pragma unroll
                    for (int j = 0; j < VEC; ++j) acc[g][j] += s[u][g] * vf[j];
                }
            }
        }
    }

    // The slots of a wave merged by shuffles (a wave's slots are of one set): the larger max,
    // each side's sum and output rescaled to it.
#pragma unroll
    for (int g = 0; g < DEC_SET; ++g) {
        if (g < gs) {
            for (int o = TPT; o < DEC_WAVE; o *= 2) {
                const float mo = DEC_SHFL_XOR(m[g], o);
                const float lo = DEC_SHFL_XOR(l[g], o);
                const float mn = fmaxf(m[g], mo);
                const float mr = mn == DEC_NEG_INF ? 0.0f : mn;
                const float a = exp2f(m[g] - mr), b = exp2f(mo - mr);
                l[g] = l[g] * a + lo * b;
#pragma unroll
                for (int j = 0; j < VEC; ++j) acc[g][j] = acc[g][j] * a + DEC_SHFL_XOR(acc[g][j], o) * b;
                m[g] = mn;
            }
        }
    }
    // Then the waves of a set through shared memory: each wave's max, the set's max, each wave's
    // sum and output rescaled to it and added, one wave after another.
    const int waves = DEC_THREADS / DEC_WAVE;
    const int wave = tid / DEC_WAVE;
    const int wps = waves / sets;  // waves a set
    const bool leader = tid % DEC_WAVE < TPT;  // the first slot of a wave: the merged state
    if (tid % DEC_WAVE == 0) {
#pragma unroll
        for (int g = 0; g < DEC_SET; ++g) sh.wave_m[wave][g] = m[g];
    }
    __syncthreads();
#pragma unroll
    for (int g = 0; g < DEC_SET; ++g) {
        if (g < gs) {
            float mx = DEC_NEG_INF;
            for (int w = set * wps; w < (set + 1) * wps; ++w) mx = fmaxf(mx, sh.wave_m[w][g]);
            const float a = exp2f(m[g] - (mx == DEC_NEG_INF ? 0.0f : mx));
            l[g] *= a;
#pragma unroll
            for (int j = 0; j < VEC; ++j) acc[g][j] *= a;
            m[g] = mx;
        }
    }
    for (int w = 0; w < wps; ++w) {
        if (leader && wave - set * wps == w) {
#pragma unroll
            for (int g = 0; g < DEC_SET; ++g) {
                if (g < gs) {
#pragma unroll
                    for (int j = 0; j < VEC; ++j) outs[g0 + g][d0 + j] += acc[g][j];
                    if (lane == 0) {
                        sh.run_l[g0 + g] += l[g];
                        sh.run_m[g0 + g] = m[g];
                    }
                }
            }
        }
        __syncthreads();
    }
    for (int e = tid; e < group * D; e += DEC_THREADS) {
        const int g = e / D, d = e % D;
        const dec_index_t h = (dec_index_t)seq * heads + kvh * group + g;
        const float l_sum = sh.run_l[g];
        const float o = l_sum > 0.0f ? outs[g][d] / l_sum : 0.0f;
        if (out != nullptr) {
            out[h * D + d] = dec_store<T>(o);
        } else {
            tmp_out[(h * max_parts + part) * D + d] = o;
            if (d == 0) {
                max_logits[h * max_parts + part] = sh.run_m[g] * DEC_LN2;
                exp_sums[h * max_parts + part] = l_sum;
            }
        }
    }
}
// The kernels: the whole context in one block a (kv head, sequence), grid (kv_heads, num_seqs);
// or a partition of `partition_size` tokens (a multiple of DEC_BLOCK) a block, grid (kv_heads,
// num_seqs, max_parts), partitions past a sequence's context writing nothing (the merge reads
// ceil(context_len / partition_size) of them).
#define DEC_KERNELS(D, SUFFIX, T)                                                                              \
    __global__ void __launch_bounds__(DEC_THREADS)                                                             \
        paged_decode_attention_d##D##SUFFIX(int num_seqs, int heads, int kv_heads, int max_blocks, float scale, \
                                            const T* q, const T* k_cache, const T* v_cache,                    \
                                            const int* block_tables, const int* context_lens, T* out) {       \
        __shared__ DecShared<D> sh;                                                                            \
        paged_decode_block(heads, kv_heads, max_blocks, 0, 0, scale, q, k_cache, v_cache, block_tables,       \
                           context_lens, out, (float*)nullptr, (float*)nullptr, (float*)nullptr, sh);         \
    }                                                                                                          \
    __global__ void __launch_bounds__(DEC_THREADS) paged_decode_partition_d##D##SUFFIX(                        \
        int num_seqs, int heads, int kv_heads, int max_blocks, int partition_size, int max_parts, float scale, \
        const T* q, const T* k_cache, const T* v_cache, const int* block_tables, const int* context_lens,     \
        float* max_logits, float* exp_sums, float* tmp_out) {                                                  \
        __shared__ DecShared<D> sh;                                                                            \
        paged_decode_block(heads, kv_heads, max_blocks, partition_size, max_parts, scale, q, k_cache, v_cache, \
                           block_tables, context_lens, (T*)nullptr, max_logits, exp_sums, tmp_out, sh);       \
    }

DEC_KERNELS(64, , float)
DEC_KERNELS(128, , float)
DEC_KERNELS(64, _f16, __half)
DEC_KERNELS(128, _f16, __half)
DEC_KERNELS(64, _bf16, __hip_bfloat16)
DEC_KERNELS(128, _bf16, __hip_bfloat16)

// The merge of the partitions: with M the largest partition max, partition p weighs
// w_p = exp_sums[p] * exp(max_logits[p] - M) and out = sum_p w_p tmp_out[p] / sum_p w_p.
// Grid (heads, num_seqs), threads over head_dim (any head_dim; a loop past DEC_THREADS).
template <typename T>
__device__ void paged_decode_merge(int heads, int head_dim, int partition_size, int max_parts,
                                   const int* context_lens, const float* max_logits, const float* exp_sums,
                                   const float* tmp_out, T* out) {
    const dec_index_t h = (dec_index_t)blockIdx.y * heads + blockIdx.x;
    const int parts = (context_lens[blockIdx.y] + partition_size - 1) / partition_size;
    const dec_index_t at = h * max_parts;
    float big = DEC_NEG_INF;
    for (int p = 0; p < parts; ++p) big = fmaxf(big, max_logits[at + p]);
    float total = 0.0f;
    for (int p = 0; p < parts; ++p) total += exp_sums[at + p] * expf(max_logits[at + p] - big);
    for (int d0 = 0; d0 < head_dim; d0 += DEC_THREADS) {
        const int d = d0 + threadIdx.x;
        if (d < head_dim) {
            float o = 0.0f;
            for (int p = 0; p < parts; ++p) {
                o += exp_sums[at + p] * expf(max_logits[at + p] - big) * tmp_out[(at + p) * head_dim + d];
            }
            out[h * head_dim + d] = dec_store<T>(total > 0.0f ? o / total : 0.0f);
        }
    }
}

#define DEC_REDUCE(SUFFIX, T)                                                                                 \
    __global__ void __launch_bounds__(DEC_THREADS) paged_decode_reduce##SUFFIX(                               \
        int num_seqs, int heads, int head_dim, int partition_size, int max_parts, const int* context_lens,   \
        const float* max_logits, const float* exp_sums, const float* tmp_out, T* out) {                       \
        /* T deduced, not written: the cpu backend's region form misses `f<T>(...)` reading threadIdx */     \
        paged_decode_merge(heads, head_dim, partition_size, max_parts, context_lens, max_logits, exp_sums,    \
                           tmp_out, out);                                                                     \
    }

DEC_REDUCE(, float)
DEC_REDUCE(_f16, __half)
DEC_REDUCE(_bf16, __hip_bfloat16)

// ---------------------------------------------------------------------------------------------
// The sampler: logits[batch][vocab] (f32) -> a token id a row, in two kernels.
//
// The rank of a token: by logit, highest first; equal logits by token id, lowest first (the tie
// rule). As one unsigned 64-bit key, larger ranking first: the logit's bits mapped to an order-
// preserving unsigned integer, above 0xffffffff - id. NaN logits are not supported.
//   1. `sample_topk_chunks`, grid (ceil(vocab / SAMPLE_CHUNK), batch): each block finds the first
//      top_k of a chunk of a row by rank (a bitonic top-k in shared memory) and writes them as
//      (logit, id) pairs in rank order (id -1, logit -inf where the chunk has fewer tokens).
//   2. `sample_topk_topp`, grid (batch): the first top_k of a row's candidates the same way (top-k), computes e_j = exp((logit_j - logit_0) / temperature) in rank order, keeps
//      the smallest prefix whose running sum (in f32, in rank order) reaches top_p times the sum of
//      the top_k (top-p; top_p >= 1 keeps them all), draws u in [0, 1) from (seed, row) and picks
//      the first token of the prefix whose running sum exceeds u times the prefix's sum.
//      temperature <= 0 picks the first (greedy), as does top_k = 1.
// The random number: splitmix64 of seed + (row + 1) * 0x9E3779B97F4A7C15, its top 24 bits over
// 2^24. Every step but the exponentials is exact or done in one fixed order, so the Rust reference
// (src/decode.rs) picks the same token; expf may differ from the host's by an ulp on a GPU.
#define SAMPLE_THREADS 256
#define SAMPLE_CHUNK 4096
#define SAMPLE_K_MAX 128
#define SAMPLE_SORT_MAX 4096

__device__ inline unsigned long long sample_key(float logit, int id) {
    if (id < 0) {
        return 0ull;
    }
    unsigned int b = (unsigned int)__float_as_int(logit);
    b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    return ((unsigned long long)b << 32) | (0xffffffffu - (unsigned int)id);
}

__device__ inline float sample_key_logit(unsigned long long key) {
    unsigned int b = (unsigned int)(key >> 32);
    b = (b & 0x80000000u) ? (b & 0x7fffffffu) : ~b;
    return __int_as_float((int)b);
}

__device__ inline int sample_key_id(unsigned long long key) {
    return key == 0ull ? -1 : (int)(0xffffffffu - (unsigned int)(key & 0xffffffffu));
}

// Whether key a ranks after key b: the keys are unique (the id is in them), so this is the
// whole order, ties included.
__device__ inline bool ranks_after(unsigned long long a, unsigned long long b) { return a < b; }

// Compare-exchange of keys i and i ^ j (i the lower), highest first where `desc`.
__device__ inline void order_pair(unsigned long long* keys, int i, int j, bool desc) {
    const unsigned long long a = keys[i], b = keys[i ^ j];
    if (desc ? ranks_after(a, b) : ranks_after(b, a)) {
        keys[i] = b;
        keys[i ^ j] = a;
    }
}

// The first `run` keys of keys[0..n) by rank, highest first, into keys[0..run) (n and run powers
// of two, run <= n; every thread of the block calls it). A bitonic top-k: runs of `run` keys
// sorted, alternately highest and lowest first; then, while more than one run is left, each pair
// of runs becomes the larger of their elements side by side (the first `run` of the pair, in a
// bitonic order) and is merged back into a sorted run. About run-size sorting steps over n keys
// instead of a whole sort's log2(n)^2 / 2.
#define SAMPLE_KEYS_PER_THREAD (SAMPLE_SORT_MAX / 2 / SAMPLE_THREADS)
__device__ void bitonic_top_desc(unsigned long long* keys, int n, int run) {
    for (int k = 2; k <= run; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int i = threadIdx.x; i < n; i += blockDim.x) {
                if ((i ^ j) > i) order_pair(keys, i, j, (i & k) == 0);
            }
            __syncthreads();
        }
    }
    for (int len = n; len > run; len >>= 1) {
        // Run 2p (highest first) against run 2p + 1 (lowest first): the larger of each pair of
        // elements, into run p. All reads before any write.
        unsigned long long top[SAMPLE_KEYS_PER_THREAD];
        int m = 0;
        for (int i = threadIdx.x; i < len / 2; i += blockDim.x, ++m) {
            const int p = i / run, o = i % run;
            const unsigned long long a = keys[2 * p * run + o], b = keys[(2 * p + 1) * run + o];
            top[m] = ranks_after(a, b) ? b : a;
        }
        __syncthreads();
        m = 0;
        for (int i = threadIdx.x; i < len / 2; i += blockDim.x, ++m) keys[i] = top[m];
        __syncthreads();
        for (int j = run >> 1; j > 0; j >>= 1) {
            for (int i = threadIdx.x; i < len / 2; i += blockDim.x) {
                if ((i ^ j) > i) order_pair(keys, i, j, (i & run) == 0);
            }
            __syncthreads();
        }
    }
}

// The power of two at or above top_k (at least 2), at most n.
__device__ inline int top_run(int top_k, int n) {
    int run = 2;
    while (run < top_k) run <<= 1;
    return min(run, n);
}

__global__ void __launch_bounds__(SAMPLE_THREADS) sample_topk_chunks(int batch, int vocab, int top_k,
                                                                     const float* logits, float* cand_logits,
                                                                     int* cand_ids) {
    __shared__ unsigned long long keys[SAMPLE_CHUNK];
    const int row = blockIdx.y;
    const int c0 = blockIdx.x * SAMPLE_CHUNK;
    const int n = min(SAMPLE_CHUNK, vocab - c0);
    int n2 = 2;
    while (n2 < n) n2 <<= 1;
    const float* x = logits + (dec_index_t)row * vocab + c0;
    for (int i = threadIdx.x; i < n2; i += blockDim.x) {
        keys[i] = i < n ? sample_key(x[i], c0 + i) : 0ull;
    }
    __syncthreads();
    bitonic_top_desc(keys, n2, top_run(top_k, n2));
    const dec_index_t out0 = ((dec_index_t)row * gridDim.x + blockIdx.x) * top_k;
    for (int i = threadIdx.x; i < top_k; i += blockDim.x) {
        const unsigned long long key = i < n2 ? keys[i] : 0ull;
        cand_ids[out0 + i] = sample_key_id(key);
        cand_logits[out0 + i] = key == 0ull ? DEC_NEG_INF : sample_key_logit(key);
    }
}

__device__ inline unsigned long long splitmix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__global__ void __launch_bounds__(SAMPLE_THREADS) sample_topk_topp(int batch, int n_cand, int top_k, float top_p,
                                                                   float temperature, unsigned long long seed,
                                                                   const float* cand_logits, const int* cand_ids,
                                                                   int* tokens) {
    __shared__ unsigned long long keys[SAMPLE_SORT_MAX];
    __shared__ float cum[SAMPLE_K_MAX];
    const int row = blockIdx.x;
    int n2 = 2;
    while (n2 < n_cand) n2 <<= 1;
    const dec_index_t c0 = (dec_index_t)row * n_cand;
    for (int i = threadIdx.x; i < n2; i += blockDim.x) {
        keys[i] = i < n_cand ? sample_key(cand_logits[c0 + i], cand_ids[c0 + i]) : 0ull;
    }
    __syncthreads();
    bitonic_top_desc(keys, n2, top_run(top_k, n2));
    if (threadIdx.x != 0) {
        return;
    }
    // Thread 0: the top_k in rank order (fewer where fewer tokens are left), one pass each.
    int k = min(top_k, n2);
    while (k > 1 && keys[k - 1] == 0ull) --k;
    int pick = 0;
    if (temperature > 0.0f && k > 1) {
        const float top = sample_key_logit(keys[0]);
        float sum = 0.0f;
        for (int j = 0; j < k; ++j) {
            sum += expf((sample_key_logit(keys[j]) - top) / temperature);
            cum[j] = sum;
        }
        int kept = k;
        if (top_p < 1.0f) {
            const float need = top_p * sum;
            kept = 1;
            while (kept < k && cum[kept - 1] < need) ++kept;
        }
        const unsigned long long z = splitmix64(seed + (unsigned long long)(row + 1) * 0x9E3779B97F4A7C15ull);
        const float u = (float)(z >> 40) * (1.0f / 16777216.0f);
        const float target = u * cum[kept - 1];
        pick = kept - 1;
        for (int j = 0; j < kept; ++j) {
            if (cum[j] > target) {
                pick = j;
                break;
            }
        }
    }
    tokens[row] = sample_key_id(keys[pick]);
}
