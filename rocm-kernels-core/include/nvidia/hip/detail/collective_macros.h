// cargo-rocm: HIP's mask-free warp collectives mapped onto CUDA's (`::rocm_nv`, hip_runtime.h).
//
// No include guard on purpose: hip_runtime.h includes it, and hip_cooperative_groups.h includes it
// again after CUDA's cooperative groups headers, which use CUDA's own names and are included with
// these macros undefined (NVRTC ignores `#pragma push_macro`/`pop_macro`, so they are defined
// again here rather than restored).
#define __shfl(...) ::rocm_nv::shfl(__VA_ARGS__)
#define __shfl_up(...) ::rocm_nv::shfl_up(__VA_ARGS__)
#define __shfl_down(...) ::rocm_nv::shfl_down(__VA_ARGS__)
#define __shfl_xor(...) ::rocm_nv::shfl_xor(__VA_ARGS__)
#define __ballot(p) ::rocm_nv::ballot(p)
#define __any(p) ::rocm_nv::any(p)
#define __all(p) ::rocm_nv::all(p)
#define __activemask() ::rocm_nv::activemask()
