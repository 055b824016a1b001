// cargo-rocm: HIP's cooperative groups on CUDA (nvcc or NVRTC).
//
// `#include <hip/hip_cooperative_groups.h>` resolves here for the `nvidia` backend. HIP's
// cooperative groups are CUDA's, in the same namespace (`cooperative_groups`) with the same names
// for what the cpu backend provides too: `this_thread_block()`, `thread_block`, `thread_group`,
// `tiled_partition<N>()`, `thread_block_tile<N>` (sync, thread_rank, size, meta_group_rank,
// shfl/shfl_up/shfl_down/shfl_xor, ballot, any, all), and `reduce` with plus, less, greater.
// Difference a kernel can observe: a tile's ballot is 32 bits here (HIP on AMD and the cpu backend
// give 64).
#pragma once

#include "hip_runtime.h"

// hip_runtime.h maps HIP's mask-free collectives onto CUDA's with macros; CUDA's cooperative
// groups headers use CUDA's own names, so they are included with those macros undefined, and the
// macros are defined again after them.
#undef __shfl
#undef __shfl_up
#undef __shfl_down
#undef __shfl_xor
#undef __ballot
#undef __any
#undef __all
#undef __activemask
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include "detail/collective_macros.h"
