// The cpu build's per-kernel fallback (rocm-kernels-build/src/cpu/compile.rs): the region form of
// `region_form_fails` does not compile, so that kernel, and only that one, runs with per-thread
// fibers; `region_form_compiles`, in the same file, keeps its region form. The construct is one
// the rewrite (rocm-kernels-build/src/cpu/region/) gets wrong today: `w`, an `auto` variable live
// across the barrier, is typed before the lane loop from `v`, which is not live across it and so
// is declared only inside the loop. tests/suite/cpu_regions.rs checks both and runs them. (When
// the rewrite learns this construct, replace it with another it gets wrong.)
#include <hip/hip_runtime.h>

__global__ void region_form_fails(const float* in, float* out, int n) {
    __shared__ float s[256];
    int t = threadIdx.x;
    float v = in[(blockIdx.x * blockDim.x + t) % n];
    auto w = v * 2.0f;
    s[t] = w;
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = s[blockDim.x - 1 - t] + w;
}

__global__ void region_form_compiles(const float* in, float* out, int n) {
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = in[(blockIdx.x * blockDim.x + t) % n];
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = s[blockDim.x - 1 - t] * 3.0f;
}
