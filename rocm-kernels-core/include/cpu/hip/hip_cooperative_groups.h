/* Cooperative groups for the cargo-rocm cpu backend, at block and tile level: a block's group
 * (`this_thread_block()`) and tiles of a power-of-two number of lanes of one wave
 * (`tiled_partition<N>(block)`), with their barriers, shuffles, votes and `reduce`. Grid groups
 * (cooperative launches) are not provided.
 *
 * Each method is written with the kernel language's own collectives, in exactly the form the
 * build's region form lowers it to (rocm-kernels-build/src/cpu/region/groups.rs), so a kernel
 * gives the same results whichever way its blocks run: a block's sync() is __syncthreads(), a
 * tile's sync() a barrier of its wave (__syncwarp), a tile's shfl_down(v, d) is
 * __shfl_down(v, d, N), its ballot the tile's part of __ballot. A group whose kind the build
 * cannot see (a `thread_group` parameter) runs the same code with per-thread fibers. */
#ifndef RK_CPU_HIP_COOPERATIVE_GROUPS_H
#define RK_CPU_HIP_COOPERATIVE_GROUPS_H

#include "hip_runtime.h"

/* The tile reduction `cooperative_groups::reduce` runs: the butterfly over the tile's lanes, every
 * lane ending with the result (rk::region::tile_reduce computes the same in region form). */
template <class T, class Op>
inline T __rk_tile_reduce(T value, Op op, int width) {
    for (int offset = 1; offset < width; offset <<= 1) value = static_cast<T>(op(value, __shfl_xor(value, offset, width)));
    return value;
}

namespace cooperative_groups {

namespace detail {
enum class group_kind : unsigned int { block, tile };

inline unsigned int block_threads() { return blockDim.x * blockDim.y * blockDim.z; }

inline void check_tile(unsigned int width) {
    if (width == 0 || (width & (width - 1)) || width > static_cast<unsigned int>(warpSize))
        rk_kernel_fault("tiled_partition: a tile's size must be a power of two no larger than the wave (warpSize)");
}
}  // namespace detail

/* A group of the block's threads: the block itself, or a tile (what a `thread_block` or a
 * `thread_block_tile<N>` converts to). */
class thread_group {
  protected:
    detail::group_kind kind_;
    unsigned int tile_size_;
    constexpr thread_group(detail::group_kind kind, unsigned int tile_size) : kind_(kind), tile_size_(tile_size) {}

  public:
    unsigned int size() const { return kind_ == detail::group_kind::block ? detail::block_threads() : tile_size_; }
    unsigned int num_threads() const { return size(); }
    unsigned int thread_rank() const {
        return kind_ == detail::group_kind::block ? rk_linear_tid() : __lane_id() & (tile_size_ - 1);
    }
    void sync() const {
        if (kind_ == detail::group_kind::block)
            __syncthreads();
        else
            __syncwarp();
    }
    bool is_valid() const { return true; }
};

/* The threads of the running block. */
class thread_block : public thread_group {
    friend thread_block this_thread_block();
    constexpr thread_block() : thread_group(detail::group_kind::block, 0) {}

  public:
    unsigned int size() const { return detail::block_threads(); }
    unsigned int num_threads() const { return size(); }
    unsigned int thread_rank() const { return rk_linear_tid(); }
    void sync() const { __syncthreads(); }
    dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    dim3 group_dim() const { return dim3(blockDim.x, blockDim.y, blockDim.z); }
    dim3 dim_threads() const { return group_dim(); }
};

inline thread_block this_thread_block() { return thread_block(); }

/* N consecutive lanes of a wave (N a power of two, at most the wave size). */
template <unsigned int N>
class thread_block_tile : public thread_group {
    static_assert(N > 0 && (N & (N - 1)) == 0 && N <= 64, "a tile's size is a power of two of at most 64 lanes");

  public:
    constexpr thread_block_tile() : thread_group(detail::group_kind::tile, N) {}
    static constexpr unsigned int size() { return N; }
    static constexpr unsigned int num_threads() { return N; }
    unsigned int thread_rank() const { return __lane_id() & (N - 1); }
    /* Which tile of the block this is, and how many there are. */
    unsigned int meta_group_rank() const { return rk_linear_tid() / N; }
    unsigned int meta_group_size() const { return (detail::block_threads() + N - 1) / N; }
    void sync() const { __syncwarp(); }
    template <class T>
    T shfl(T value, int src_rank) const { return __shfl(value, src_rank, N); }
    template <class T>
    T shfl_down(T value, unsigned int delta) const { return __shfl_down(value, delta, N); }
    template <class T>
    T shfl_up(T value, unsigned int delta) const { return __shfl_up(value, delta, N); }
    template <class T>
    T shfl_xor(T value, int lane_mask) const { return __shfl_xor(value, lane_mask, N); }
    /* Votes over the tile's active lanes; bit i of a ballot is the tile's lane i. */
    unsigned long long ballot(int pred) const { return rk::tile_bits(__ballot(pred), N, __lane_id()); }
    bool any(int pred) const { return rk::tile_bits(__ballot(pred), N, __lane_id()) != 0; }
    bool all(int pred) const {
        return rk::tile_bits(__ballot(pred), N, __lane_id()) == rk::tile_bits(__activemask(), N, __lane_id());
    }
};

/* The calling thread's tile of N lanes. */
template <unsigned int N, class Parent>
inline thread_block_tile<N> tiled_partition(const Parent &) {
    detail::check_tile(N);
    return thread_block_tile<N>();
}

/* A tile whose size is only known at run time: a `thread_group`. */
class runtime_tile : public thread_group {
  public:
    explicit runtime_tile(unsigned int size) : thread_group(detail::group_kind::tile, size) {}
};
inline thread_group tiled_partition(const thread_group &, unsigned int tile_size) {
    detail::check_tile(tile_size);
    return runtime_tile(tile_size);
}

template <class Group>
inline void sync(const Group &group) {
    group.sync();
}
template <class Group>
inline unsigned int thread_rank(const Group &group) {
    return group.thread_rank();
}
template <class Group>
inline unsigned int group_size(const Group &group) {
    return group.size();
}

/* The operators `reduce` takes: less keeps the smaller value, greater the larger. */
template <class T>
struct plus {
    T operator()(const T &a, const T &b) const { return a + b; }
};
template <class T>
struct less {
    T operator()(const T &a, const T &b) const { return b < a ? b : a; }
};
template <class T>
struct greater {
    T operator()(const T &a, const T &b) const { return a < b ? b : a; }
};
template <class T>
struct bit_and {
    T operator()(const T &a, const T &b) const { return a & b; }
};
template <class T>
struct bit_or {
    T operator()(const T &a, const T &b) const { return a | b; }
};
template <class T>
struct bit_xor {
    T operator()(const T &a, const T &b) const { return a ^ b; }
};

/* `op` over the tile's values, the result in every lane of the tile. */
template <unsigned int N, class T, class Op>
inline T reduce(const thread_block_tile<N> &, T value, Op op) {
    return __rk_tile_reduce(value, op, static_cast<int>(N));
}

}  // namespace cooperative_groups

#endif
