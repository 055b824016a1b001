// Real-world HIP the cpu backend must run correctly whichever way it runs a block (region form
// as waves or whole blocks, per-thread fibers) at wave sizes 32 and 64:
// rocm-kernels/tests/suite/cpu_fidelity.rs checks each kernel against results computed in Rust,
// and how the build runs it. The planted-bug counterparts are in bugs.hip.
#include <hip/hip_runtime.h>
#include <hip/hip_cooperative_groups.h>

namespace cg = cooperative_groups;

// The thread's index in its block, and in the grid, for any block shape.
#define FID_TID (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))
#define FID_GID (blockIdx.x * blockDim.x * blockDim.y * blockDim.z + FID_TID)

// ---- barriers and collectives under conditions every thread of the block evaluates alike ----

// __syncthreads_count under `?:` whose condition is the block's: correct, run on fibers (the
// region form does not take collectives under `?:`).
__global__ void count_under_uniform_ternary(const int* in, int* out) {
    const unsigned g = FID_GID;
    int c = blockIdx.x % 2 == 0 ? __syncthreads_count(in[g] > 10) : -1;
    out[g] = c;
}

// __syncthreads_or on the right of `&&`, whose left side holds in every block.
__global__ void or_under_uniform_and(const int* in, int* out) {
    const unsigned g = FID_GID;
    int seen = blockDim.x > 1 && __syncthreads_or(in[g] == 7);
    out[g] = seen;
}

// A shuffle under an `if` only odd lanes take: partners are odd lanes too (region form: under a
// mask).
__global__ void shuffle_in_divergent_if(const int* in, int* out) {
    const unsigned t = FID_TID, g = FID_GID;
    int v = in[g];
    if (t & 1) v += __shfl_xor(v, 2);
    out[g] = v;
}

// A helper that shuffles, called under `?:` by the lanes whose bit 1 is set (pairs of them).
__device__ int pair_sum(int v) { return v + __shfl_xor(v, 1); }
__global__ void helper_under_ternary(const int* in, int* out) {
    const unsigned t = FID_TID, g = FID_GID;
    int v = in[g];
    int r = (t & 2) ? pair_sum(v) : -v;
    out[g] = r;
}

// ---- shuffles in blocks of any shape: 2-D, 3-D, thread counts not a multiple of the wave ----

// Per thread: shfl from lane 0, xor 1, down 3, up 5 within 16 lanes, and how many lanes of the
// wave hold more than 11.
__global__ void shuffles_any_shape(const int* in, int* out) {
    const unsigned g = FID_GID;
    int v = in[g];
    int a = __shfl(v, 0);
    int b = __shfl_xor(v, 1);
    int c = __shfl_down(v, 3);
    int d = __shfl_up(v, 5, 16);
    int m = __popcll(__ballot(v > 11));
    out[g] = a + 3 * b + 7 * c + 11 * d + 13 * m + 17 * (int)__lane_id();
}

// ---- helpers with trailing return types, functors, lambdas ----

__device__ auto wave_sum(int v) -> int {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}
__device__ auto mirror_through(int* s, int v) -> int {
    const unsigned t = threadIdx.x;
    s[t] = v;
    __syncthreads();
    return s[blockDim.x - 1 - t];
}
// Both helpers are put in place of their calls (region form).
__global__ void trailing_return_helpers(const int* in, int* out) {
    __shared__ int s[256];
    const unsigned g = FID_GID;
    int w = wave_sum(in[g]);
    int m = mirror_through(s, in[g]);
    out[g] = w * 1000 + m;
}

// A functor whose call operator shuffles: the kernel runs on fibers, the functor named.
struct WaveMax {
    __device__ int operator()(int v) const {
        for (int offset = 1; offset < warpSize; offset *= 2) v = max(v, __shfl_xor(v, offset));
        return v;
    }
};
__global__ void functor_with_collective(const int* in, int* out) {
    const unsigned g = FID_GID;
    WaveMax op;
    out[g] = op(in[g]);
}

// Kernel templates calling the functor they are instantiated with. A template has one region
// form for all its instantiations: instantiated with WaveMax it runs on fibers, named.
template <class Op>
__global__ void apply_functor(const int* in, int* out) {
    const unsigned g = FID_GID;
    Op op;
    out[g] = op(in[g]);
}
template __global__ void apply_functor<WaveMax>(const int*, int*);
struct Doubler {
    __device__ int operator()(int v) const { return 2 * v; }
};
template <class Op>
__global__ void apply_plain_functor(const int* in, int* out) {
    const unsigned g = FID_GID;
    Op op;
    out[g] = op(in[g]);
}
template __global__ void apply_plain_functor<Doubler>(const int*, int*);

// A functor without collectives living across a barrier (region form).
struct Affine {
    int scale;
    int shift;
    __device__ int operator()(int x) const { return x * scale + shift; }
};
__global__ void functor_across_barrier(const int* in, int* out) {
    __shared__ int s[256];
    const unsigned t = threadIdx.x, g = FID_GID;
    Affine f{3, (int)t};
    s[t] = in[g];
    __syncthreads();
    out[g] = f(s[blockDim.x - 1 - t]);
}

// Lambdas that capture nothing, declared at the level of the barrier and used after it, one of
// them reading the thread's index (region form).
__global__ void lambdas_at_barrier_level(const int* in, int* out) {
    __shared__ int s[256];
    const unsigned t = threadIdx.x, g = FID_GID;
    auto square = [](int x) { return x * x; };
    auto my_index = []() { return (int)threadIdx.x; };
    s[t] = square(in[g]);
    __syncthreads();
    out[g] = s[blockDim.x - 1 - t] + 1000 * my_index();
}

// A lambda capturing a local by reference, used on both sides of a barrier: fibers, named.
__global__ void capturing_lambda_across_barrier(const int* in, int* out) {
    __shared__ int s[256];
    const unsigned t = threadIdx.x, g = FID_GID;
    int base = in[g];
    auto plus_base = [&](int x) { return x + base; };
    s[t] = plus_base(1);
    __syncthreads();
    out[g] = plus_base(s[blockDim.x - 1 - t]);
}

// ---- structs, auto and templates living across barriers ----

struct Stats {
    int sum = 0;
    int count = 0;
    int bias = 100;
};
struct Pinned {
    int a, b;
    __device__ Pinned(int x, int y) : a(x), b(y) {}
};
// Default member initialisers (run again each time `fresh` is declared), and a type without a
// default constructor, across barriers in a loop (region form).
__global__ void structs_across_barriers(const int* in, int* out) {
    __shared__ int s[256];
    const unsigned t = threadIdx.x, g = FID_GID;
    Stats st;
    Pinned p(in[g], (int)t);
    for (int round = 0; round < 2; ++round) {
        Stats fresh;
        fresh.sum += round;
        st.sum += in[g];
        st.count += 1;
        s[t] = st.sum;
        __syncthreads();
        st.sum += s[(t + 1) % blockDim.x] + fresh.sum + fresh.bias;
        __syncthreads();
    }
    out[g] = st.sum * 7 + st.count + st.bias + p.a * 3 + p.b;
}

// `auto` living across the barrier, typed from a local that does not.
__global__ void auto_from_a_local(const int* in, int* out) {
    __shared__ int s[256];
    const unsigned t = threadIdx.x, g = FID_GID;
    int v = in[g];
    auto w = v * 2;
    s[t] = w;
    __syncthreads();
    out[g] = s[blockDim.x - 1 - t] + w;
}

// Non-type template parameters: a tile size and a stride (region form).
template <int TILE, int STRIDE>
__global__ void tiled_template(const int* in, int* out) {
    __shared__ int tile[TILE];
    const unsigned t = threadIdx.x, g = FID_GID;
    tile[t % TILE] = in[g];
    __syncthreads();
    int acc = 0;
    for (int k = 0; k < TILE; k += STRIDE) acc += tile[(t + k) % TILE];
    out[g] = acc;
}
template __global__ void tiled_template<64, 3>(const int*, int*);

// A template helper with a collective: it stays a call, so the kernel runs on fibers.
template <int WIDTH>
__device__ int segment_sum(int v) {
    for (int offset = WIDTH / 2; offset > 0; offset /= 2) v += __shfl_down(v, offset, WIDTH);
    return v;
}
template <int WIDTH>
__global__ void template_helper_collective(const int* in, int* out) {
    const unsigned g = FID_GID;
    int s = segment_sum<WIDTH>(in[g]);
    out[g] = s;
}
template __global__ void template_helper_collective<8>(const int*, int*);

// ---- macros and #pragma unroll ----

#define FID_TILE 64
#define FID_LOAD(p, i) ((p)[(i)])
#define FID_SYNC() __syncthreads()
// Blocks of FID_TILE threads.
__global__ void macros_and_unroll(const int* in, int* out) {
    __shared__ int s[FID_TILE];
    const unsigned t = threadIdx.x, g = FID_GID;
    s[t] = FID_LOAD(in, g);
    FID_SYNC();
    int acc = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        acc += s[(t + k) % FID_TILE];
        FID_SYNC();
    }
#pragma unroll 2
    for (int k = 0; k < 3; ++k) acc += k;
    out[g] = acc;
}

// ---- cooperative groups ----

// Block and tiles of 8 lanes, with every tile operation (region form). Eight values per thread.
__global__ void groups_block_and_tiles(const int* in, int* out) {
    cg::thread_block block = cg::this_thread_block();
    auto tile = cg::tiled_partition<8>(block);
    const unsigned t = block.thread_rank();
    const unsigned g = blockIdx.x * block.size() + t;
    const int v = in[g];
    int* o = out + 8 * g;
    o[0] = cg::reduce(tile, v, cg::plus<int>());
    o[1] = cg::reduce(tile, v, cg::less<int>()) * 100 + cg::reduce(tile, v, cg::greater<int>());
    o[2] = tile.shfl_down(v, 1) + 100 * tile.shfl_up(v, 2);
    o[3] = tile.shfl_xor(v, 2) + 100 * tile.shfl(v, 5);
    o[4] = (int)tile.ballot(v > 10);
    o[5] = tile.any(v > 20) + 2 * tile.all(v >= 0) + 4 * tile.all(v > 3);
    o[6] = (int)(tile.thread_rank() + 100 * tile.meta_group_rank() + 10000 * tile.size());
    block.sync();
    o[7] = in[blockIdx.x * block.size() + (block.size() - 1 - t)];
}

// A reduction written for any group, taken through `thread_group` (the shape of the HIP-Basic
// cooperative groups example): the group's kind is not known where it syncs, so fibers run it.
__device__ int group_sum(cg::thread_group group, int* scratch, int v) {
    const unsigned rank = group.thread_rank();
    for (unsigned half = group.size() / 2; half > 0; half /= 2) {
        scratch[rank] = v;
        group.sync();
        if (rank < half) v += scratch[rank + half];
        group.sync();
    }
    return rank == 0 ? v : 0;
}
// Per block: its total at its first output, then each tile's.
template <unsigned TILE>
__global__ void groups_generic_reduce(const int* in, int* out) {
    __shared__ int scratch[1024];
    cg::thread_block block = cg::this_thread_block();
    const unsigned base = blockIdx.x * block.size();
    const int v = in[base + block.thread_rank()];
    const int block_total = group_sum(block, scratch, v);
    if (block.thread_rank() == 0) out[base] = block_total;
    cg::thread_block_tile<TILE> tile = cg::tiled_partition<TILE>(block);
    const unsigned first = block.thread_rank() - tile.thread_rank();
    const int tile_total = group_sum(tile, &scratch[first], v);
    if (tile.thread_rank() == 0) out[base + 1 + block.thread_rank() / TILE] = tile_total;
}
template __global__ void groups_generic_reduce<16>(const int*, int*);

// ---- AMD's device intrinsics (not on CUDA) ----

#if !defined(__HIP_PLATFORM_NVIDIA__)
// Eight values per thread.
__global__ void amd_device_intrinsics(const int* in, int* out) {
    const unsigned t = FID_TID, g = FID_GID;
    const unsigned v = static_cast<unsigned>(in[g]) * 2654435761u;
    int* o = out + 8 * g;
    o[0] = (int)__bitextract_u32(v, 5, 9) + (int)(__bitextract_u64(0xfedcba9876543210ull, 28, 12) << 9);
    o[1] = (int)__bitinsert_u32(v, t, 8, 6);
    o[2] = __fns64(0xf0f0f0f0ull, t % 64, 2) + 100 * __fns32(0xf0f0f0f0u, 31 - t % 32, -3);
    o[3] = (int)__lastbit_u32_u64(static_cast<unsigned long long>(in[g] + 1) << 20) + 100 * (int)__lastbit_u32_u32(0);
    o[5] = (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u)) - (int)__lane_id();
    o[6] = __builtin_amdgcn_ds_bpermute((int)(((__lane_id() + 1) % warpSize) * 4), in[g]) +
           1000 * (int)__builtin_amdgcn_workitem_id_x();
    // Last: with per-thread fibers, lanes that leave a branch with a collective in it do not
    // wait for the others before the next collective after it.
    o[4] = __builtin_amdgcn_readfirstlane(in[g]);
    if (t & 1) o[4] += 1000 * __builtin_amdgcn_readfirstlane(in[g]);
#if defined(__HIP_PLATFORM_AMD__)
    o[7] = -1;  // AMD-only code: must not be compiled for the cpu backend
#elif defined(__HIP_PLATFORM_ROCM_KERNELS_CPU__) && defined(__HIPCC__) && defined(__HIP__)
    o[7] = 1;
#else
    o[7] = 2;
#endif
}
#endif
