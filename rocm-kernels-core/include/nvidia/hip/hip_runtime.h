// cargo-rocm: the HIP kernel language on CUDA (nvcc or NVRTC).
//
// `#include <hip/hip_runtime.h>` resolves here when rocm-kernels builds for the `nvidia` backend.
// Only the *kernel language* is provided: launching, memory and streams are done from Rust
// through the CUDA driver API, so none of HIP's host API is needed (the distro HIP headers'
// NVIDIA host API does not compile against current CUDA, which is why this header exists).
//
// Differences from HIP on AMD that kernels can observe:
//  * warpSize is 32.
//  * __launch_bounds__(MAX_THREADS, X): CUDA reads X as "minimum blocks per multiprocessor",
//    HIP as "minimum waves per execution unit"; the first argument means the same on both.
//  * __ballot/__activemask masks are 64-bit as in HIP; the upper 32 bits are always zero.
#pragma once

#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#error "include/nvidia/hip/hip_runtime.h is for nvcc or NVRTC; for AMD use ROCm's headers, for the cpu backend include/cpu"
#endif

#ifndef __CUDACC_RTC__
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cassert>
#include <climits>
#include <cfloat>
#else
#include "detail/rtc_std.h"
#endif
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define __HIP_PLATFORM_NVIDIA__ 1
#define __HIP_PLATFORM_NVCC__ 1
#define __HIPCC__ 1
#define __HIP__ 1
#define ROCM_KERNELS_BACKEND_NVIDIA 1
#if defined(__CUDA_ARCH__)
#define __HIP_DEVICE_COMPILE__ 1
#endif

// ---- indexing ---------------------------------------------------------------------------------
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

#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define HIP_SYMBOL(X) X
#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];
#define HIP_DYNAMIC_SHARED_ATTRIBUTE

// ---- types HIP names differently ---------------------------------------------------------------
typedef __nv_bfloat16 __hip_bfloat16;
typedef __nv_bfloat162 __hip_bfloat162;

// ---- warp collectives: HIP's mask-free forms over the lanes that are active ---------------------
// HIP's collectives (like AMD hardware's exec mask) involve the lanes active at the call; lanes that
// already returned take no part. `__activemask()` gives CUDA the same set; a full mask would wait
// for (or read garbage from) exited lanes.
#define ROCM_ACTIVE_MASK __activemask()

// CUDA still declares its deprecated mask-free intrinsics (with 32-bit ballots), so HIP's
// names are macros onto our own functions rather than overloads that would clash with them.
namespace rocm_nv {
template <typename T>
__device__ __forceinline__ T shfl(T var, int src_lane, int width = 32) {
    return __shfl_sync(ROCM_ACTIVE_MASK, var, src_lane, width);
}
template <typename T>
__device__ __forceinline__ T shfl_up(T var, unsigned int delta, int width = 32) {
    return __shfl_up_sync(ROCM_ACTIVE_MASK, var, delta, width);
}
template <typename T>
__device__ __forceinline__ T shfl_down(T var, unsigned int delta, int width = 32) {
    return __shfl_down_sync(ROCM_ACTIVE_MASK, var, delta, width);
}
template <typename T>
__device__ __forceinline__ T shfl_xor(T var, int lane_mask, int width = 32) {
    return __shfl_xor_sync(ROCM_ACTIVE_MASK, var, lane_mask, width);
}
__device__ __forceinline__ unsigned long long ballot(int predicate) {
    return (unsigned long long)__ballot_sync(ROCM_ACTIVE_MASK, predicate);
}
__device__ __forceinline__ int any(int predicate) { return __any_sync(ROCM_ACTIVE_MASK, predicate); }
__device__ __forceinline__ int all(int predicate) { return __all_sync(ROCM_ACTIVE_MASK, predicate); }
__device__ __forceinline__ unsigned long long activemask() { return (unsigned long long)__activemask(); }
}  // namespace rocm_nv
#include "detail/collective_macros.h"
__device__ __forceinline__ unsigned int __lane_id() {
    unsigned int lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}

// ---- atomics HIP has and CUDA lacks ------------------------------------------------------------
__device__ __forceinline__ float atomicSub(float* address, float val) { return atomicAdd(address, -val); }
__device__ __forceinline__ double atomicSub(double* address, double val) { return atomicAdd(address, -val); }
__device__ __forceinline__ unsigned long long atomicSub(unsigned long long* address, unsigned long long val) {
    return atomicAdd(address, 0ull - val);
}
__device__ __forceinline__ long long atomicAdd(long long* address, long long val) {
    return (long long)atomicAdd((unsigned long long*)address, (unsigned long long)val);
}
__device__ __forceinline__ long long atomicSub(long long* address, long long val) {
    return (long long)atomicAdd((unsigned long long*)address, (unsigned long long)(-val));
}
__device__ __forceinline__ long long atomicExch(long long* address, long long val) {
    return (long long)atomicExch((unsigned long long*)address, (unsigned long long)val);
}
__device__ __forceinline__ double atomicExch(double* address, double val) {
    return __longlong_as_double(
        (long long)atomicExch((unsigned long long*)address, (unsigned long long)__double_as_longlong(val)));
}
__device__ __forceinline__ long long atomicCAS(long long* address, long long compare, long long val) {
    return (long long)atomicCAS((unsigned long long*)address, (unsigned long long)compare, (unsigned long long)val);
}
// Floating-point min/max by compare-and-swap on the bit pattern (HIP provides these natively).
__device__ __forceinline__ float atomicMin(float* address, float val) {
    int* a = (int*)address;
    int old = *a;
    while (val < __int_as_float(old)) {
        int assumed = old;
        old = atomicCAS(a, assumed, __float_as_int(val));
        if (old == assumed) break;
    }
    return __int_as_float(old);
}
__device__ __forceinline__ float atomicMax(float* address, float val) {
    int* a = (int*)address;
    int old = *a;
    while (val > __int_as_float(old)) {
        int assumed = old;
        old = atomicCAS(a, assumed, __float_as_int(val));
        if (old == assumed) break;
    }
    return __int_as_float(old);
}
__device__ __forceinline__ double atomicMin(double* address, double val) {
    unsigned long long* a = (unsigned long long*)address;
    unsigned long long old = *a;
    while (val < __longlong_as_double((long long)old)) {
        unsigned long long assumed = old;
        old = atomicCAS(a, assumed, (unsigned long long)__double_as_longlong(val));
        if (old == assumed) break;
    }
    return __longlong_as_double((long long)old);
}
__device__ __forceinline__ double atomicMax(double* address, double val) {
    unsigned long long* a = (unsigned long long*)address;
    unsigned long long old = *a;
    while (val > __longlong_as_double((long long)old)) {
        unsigned long long assumed = old;
        old = atomicCAS(a, assumed, (unsigned long long)__double_as_longlong(val));
        if (old == assumed) break;
    }
    return __longlong_as_double((long long)old);
}
// HIP's "no return value" atomics are plain atomics on CUDA.
#define atomicAddNoRet(p, v) ((void)atomicAdd((p), (v)))
#define unsafeAtomicAdd(p, v) atomicAdd((p), (v))
#define safeAtomicAdd(p, v) atomicAdd((p), (v))

// ---- clocks --------------------------------------------------------------------------------------
__device__ __forceinline__ unsigned long long wall_clock64() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// ---- vector arithmetic HIP defines on its vector types ----------------------------------------
#define ROCM_VEC_OP2(T, OP)                                                                      \
    __host__ __device__ __forceinline__ T operator OP(T a, T b) { return T{a.x OP b.x, a.y OP b.y}; } \
    __host__ __device__ __forceinline__ T& operator OP##=(T& a, T b) { a.x OP## = b.x; a.y OP## = b.y; return a; }
#define ROCM_VEC_OP3(T, OP)                                                                      \
    __host__ __device__ __forceinline__ T operator OP(T a, T b) { return T{a.x OP b.x, a.y OP b.y, a.z OP b.z}; } \
    __host__ __device__ __forceinline__ T& operator OP##=(T& a, T b) { a.x OP## = b.x; a.y OP## = b.y; a.z OP## = b.z; return a; }
#define ROCM_VEC_OP4(T, OP)                                                                      \
    __host__ __device__ __forceinline__ T operator OP(T a, T b) { return T{a.x OP b.x, a.y OP b.y, a.z OP b.z, a.w OP b.w}; } \
    __host__ __device__ __forceinline__ T& operator OP##=(T& a, T b) { a.x OP## = b.x; a.y OP## = b.y; a.z OP## = b.z; a.w OP## = b.w; return a; }
// Vector with scalar, scalar with vector, and negation, as HIP's vector types allow.
#define ROCM_VEC_SCALAR2(T, S, OP)                                                                \
    __host__ __device__ __forceinline__ T operator OP(T a, S b) { return T{a.x OP b, a.y OP b}; } \
    __host__ __device__ __forceinline__ T operator OP(S a, T b) { return T{a OP b.x, a OP b.y}; }
#define ROCM_VEC_SCALAR3(T, S, OP)                                                                       \
    __host__ __device__ __forceinline__ T operator OP(T a, S b) { return T{a.x OP b, a.y OP b, a.z OP b}; } \
    __host__ __device__ __forceinline__ T operator OP(S a, T b) { return T{a OP b.x, a OP b.y, a OP b.z}; }
#define ROCM_VEC_SCALAR4(T, S, OP)                                                                   \
    __host__ __device__ __forceinline__ T operator OP(T a, S b) {                                    \
        return T{a.x OP b, a.y OP b, a.z OP b, a.w OP b};                                            \
    }                                                                                                 \
    __host__ __device__ __forceinline__ T operator OP(S a, T b) {                                    \
        return T{a OP b.x, a OP b.y, a OP b.z, a OP b.w};                                            \
    }
#define ROCM_VEC_NEG2(T) __host__ __device__ __forceinline__ T operator-(T a) { return T{-a.x, -a.y}; }
#define ROCM_VEC_NEG3(T) __host__ __device__ __forceinline__ T operator-(T a) { return T{-a.x, -a.y, -a.z}; }
#define ROCM_VEC_NEG4(T) __host__ __device__ __forceinline__ T operator-(T a) { return T{-a.x, -a.y, -a.z, -a.w}; }
#define ROCM_VEC_ALL(N, T, S)                                                                  \
    ROCM_VEC_OP##N(T, +) ROCM_VEC_OP##N(T, -) ROCM_VEC_OP##N(T, *) ROCM_VEC_OP##N(T, /)         \
    ROCM_VEC_SCALAR##N(T, S, +) ROCM_VEC_SCALAR##N(T, S, -) ROCM_VEC_SCALAR##N(T, S, *)       \
    ROCM_VEC_SCALAR##N(T, S, /)
ROCM_VEC_ALL(2, float2, float) ROCM_VEC_ALL(3, float3, float) ROCM_VEC_ALL(4, float4, float)
ROCM_VEC_ALL(2, double2, double) ROCM_VEC_ALL(3, double3, double)
ROCM_VEC_ALL(2, int2, int) ROCM_VEC_ALL(3, int3, int) ROCM_VEC_ALL(4, int4, int)
ROCM_VEC_ALL(2, uint2, unsigned int) ROCM_VEC_ALL(3, uint3, unsigned int) ROCM_VEC_ALL(4, uint4, unsigned int)
ROCM_VEC_NEG2(float2) ROCM_VEC_NEG3(float3) ROCM_VEC_NEG4(float4)
ROCM_VEC_NEG2(double2) ROCM_VEC_NEG3(double3)
ROCM_VEC_NEG2(int2) ROCM_VEC_NEG3(int3) ROCM_VEC_NEG4(int4)
#undef ROCM_VEC_ALL
#undef ROCM_VEC_SCALAR2
#undef ROCM_VEC_SCALAR3
#undef ROCM_VEC_SCALAR4
#undef ROCM_VEC_NEG2
#undef ROCM_VEC_NEG3
#undef ROCM_VEC_NEG4
#undef ROCM_VEC_OP2
#undef ROCM_VEC_OP3
#undef ROCM_VEC_OP4
