// expect: compiles
// What kernels beside host code rely on: glibc's <sys/types.h> short names (`uint`, which
// hipcc's and nvcc's host headers bring in), and a namespace-scope variable without a memory
// space that only host code uses (a host variable to nvcc and hipcc; NVRTC refuses it in JIT
// mode unless told `-default-device`). HIP-Examples' Histogram and dct, HeCBench's matrixT.
#include <hip/hip_runtime.h>
int problem_size = 1024;
__global__ void host_names(uint* out, ushort s, ulong l) {
    uint i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = i + s + (uint)l;
}
