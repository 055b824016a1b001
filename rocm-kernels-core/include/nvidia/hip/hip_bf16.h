// cargo-rocm: HIP's hip_bf16.h on CUDA: the types come from cuda_fp16.h / cuda_bf16.h via hip_runtime.h.
#pragma once
#include <hip/hip_runtime.h>
