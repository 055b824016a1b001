/* The HIP kernel language for the cargo-rocm cpu backend.
 *
 * Kernels built by `rocm_kernels::Build` for the cpu backend are compiled by the host C++
 * compiler with `-I <rocm-kernels>/include/cpu`, so `#include <hip/hip_runtime.h>` lands here.
 * It provides the device side of HIP only (launching is done from Rust): thread coordinates,
 * shared memory, barriers, atomics, warp collectives, math, vector types, __half, bfloat16,
 * printf and assert. Blocks run on the runtime's worker threads, the threads of a block as
 * fibers (see rocm-kernels/cpu-runtime/runtime.cpp). */
#ifndef RK_CPU_HIP_RUNTIME_H
#define RK_CPU_HIP_RUNTIME_H

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "the cargo-rocm cpu kernel language needs C++17 or later"
#endif

#include <cassert>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <math.h>
#include <tuple>
#include <type_traits>
#include <utility>

#include "detail/abi.h"

/* A failed `assert` in a kernel becomes a kernel fault naming the block and thread. glibc's
 * assert macro calls __assert_fail; renaming it here also covers <cassert> included later. */
#define __assert_fail rk_assert_fail

/* The cpu backend is a platform of its own: code written for AMD GPUs (`#ifdef
 * __HIP_PLATFORM_AMD__`: inline GCN assembly, wave-64 assumptions) or NVIDIA ones must not be
 * taken here. `__HIP__`, `__HIPCC__` and `__HIP_DEVICE_COMPILE__` say "HIP kernel code, device
 * side", which it is. */
#define __HIP_PLATFORM_ROCM_KERNELS_CPU__ 1
#define __HIP_CPU_RK__ 1
#define __HIP__ 1
#define __HIPCC__ 1
#define __HIP_DEVICE_COMPILE__ 1

/* ---- function and variable qualifiers ---- */
#ifdef RK_SCAN
/* The build's scanner preprocesses with RK_SCAN to find kernels by this marker, and the
 * __constant__ and __device__ variables by these attributes (rocm-kernels-build cpu/globals.rs). */
#define __global__ __rk_kernel__
#define __device__ __attribute__((__rk_device__))
#define __constant__ __attribute__((__rk_constant__))
#else
#define __global__
#define __device__
#define __constant__
#endif
#define __host__
#define __managed__
#define __shared__ thread_local
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define HIP_DYNAMIC_SHARED_ATTRIBUTE
#define HIP_DYNAMIC_SHARED(type, var) type *const var = reinterpret_cast<type *>(rk_cur.dyn_shared);

/* ---- thread coordinates ---- */
extern __thread rk_ctx rk_cur __attribute__((tls_model("initial-exec")));

#define threadIdx (rk_cur.thread_idx)
#define blockIdx (rk_cur.block_idx)
#define blockDim (rk_cur.block_dim)
#define gridDim (rk_cur.grid_dim)
#ifdef __SANITIZE_THREAD__
namespace rk {
/* The race variant (-fsanitize=thread) reads and writes the runtime's own words (the coordinates
 * it publishes, the wave size, the region form's lane masks and collective operands: never the
 * kernel's memory) through an asm operand, out of the instrumentation's sight: a race detector
 * call saved per lane and word. RK_RAW / RK_RAW_SET are plain accesses elsewhere (macros, so the
 * plain code compiles exactly as written). */
template <class T>
__attribute__((always_inline)) inline T raw(const T &p) {
    T v;
    __asm__("mov %1, %0" : "=r"(v) : "m"(p));
    return v;
}
template <class T>
__attribute__((always_inline)) inline void raw_set(T &p, T v) {
    __asm__ volatile("mov %1, %0" : "=m"(p) : "r"(v));
}
}  // namespace rk
#define RK_RAW(e) (::rk::raw(e))
#define RK_RAW_SET(p, v) (::rk::raw_set((p), (v)))
#define warpSize (static_cast<int>(RK_RAW(rk_cur.wave_size)))
#else
#define RK_RAW(e) (e)
#define RK_RAW_SET(p, v) ((p) = (v))
#define warpSize (static_cast<int>(rk_cur.wave_size))
#endif
#define hipThreadIdx_x (threadIdx.x)
#define hipThreadIdx_y (threadIdx.y)
#define hipThreadIdx_z (threadIdx.z)
#define hipBlockIdx_x (blockIdx.x)
#define hipBlockIdx_y (blockIdx.y)
#define hipBlockIdx_z (blockIdx.z)
#define hipBlockDim_x (blockDim.x)
#define hipBlockDim_y (blockDim.y)
#define hipBlockDim_z (blockDim.z)
#define hipGridDim_x (gridDim.x)
#define hipGridDim_y (gridDim.y)
#define hipGridDim_z (gridDim.z)

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
    constexpr dim3(rk_uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

/* Dynamic shared memory of the running block (what `extern __shared__` arrays are rewritten to). */
inline void *rk_dynamic_shared() { return rk_cur.dyn_shared; }

namespace rk {
/* What a namespace-scope `extern __shared__ T name[];` is rewritten to: it reads the running
 * block's dynamic shared memory on every use. */
template <class T>
struct dynamic_shared {
    operator T *() const { return static_cast<T *>(rk_cur.dyn_shared); }
    T &operator[](std::size_t i) const { return static_cast<T *>(rk_cur.dyn_shared)[i]; }
};
}  // namespace rk

inline unsigned int rk_linear_tid() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

/* ---- barriers and fences ---- */
inline void __syncthreads() { rk_syncthreads(); }
inline int __syncthreads_count(int pred) { return rk_syncthreads_op(RK_BARRIER_COUNT, pred); }
inline int __syncthreads_and(int pred) { return rk_syncthreads_op(RK_BARRIER_AND, pred); }
inline int __syncthreads_or(int pred) { return rk_syncthreads_op(RK_BARRIER_OR, pred); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
[[noreturn]] inline void __trap() { rk_kernel_fault("__trap() called"); }

/* ---- clocks ---- */
#if defined(__x86_64__)
inline long long clock64() { return static_cast<long long>(__builtin_ia32_rdtsc()); }
#else
inline long long clock64() { return static_cast<long long>(std::clock()); }
#endif
inline long long wall_clock64() { return clock64(); }
inline unsigned int __smid() { return 0; }
/* Loads through the read-only / non-coherent cache on GPUs; plain loads here. */
template <typename T> inline T __ldg(const T *p) { return *p; }
#if !defined(__clang__) /* clang has these builtins itself */
template <typename T> inline T __builtin_nontemporal_load(const T *p) { return *p; }
template <typename T> inline void __builtin_nontemporal_store(T v, T *p) { *p = v; }
#endif

#include "detail/atomics.h"
#include "detail/bits.h"
#include "detail/math.h"
#include "detail/vector_types.h"
#include "detail/warp.h"
#include "detail/amd.h"
#include "hip_bf16.h"
#include "hip_fp16.h"
#include "detail/entry.h"
#include "detail/region.h"

#endif
