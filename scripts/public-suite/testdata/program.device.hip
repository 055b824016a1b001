// A whole HIP program in the rocm-examples style, for the host-code stripping test: kernels,
// device functions, templates, variables and host code (braces in comments: { and strings).
/* host include `"example_utils.hpp"` removed by public-suite */

#include <hip/hip_runtime.h>

/* host include `<iostream>` removed by public-suite */
/* host include `<vector>` removed by public-suite */

#define TILE 16

__constant__ float d_mask[TILE];

__device__ unsigned int lane() { return threadIdx.x % warpSize; }

/* host function `print_hello_host` removed by public-suite */




__device__ __host__ void print_hello()
{
    printf("Hello }\n");
}

namespace ns
{
/// \brief A kernel template whose parameters use its type parameter.
template<int Block, typename T = float>
__global__ void tiled(const T* in, T* out, const unsigned int n = 0)
{
    __shared__ T tile[Block];
    tile[threadIdx.x] = in[threadIdx.x] * d_mask[threadIdx.x % TILE];
    __syncthreads();
    out[threadIdx.x] = tile[Block - 1 - threadIdx.x];
}
} // namespace ns

template<unsigned int Size>
__global__ void cooperative(unsigned int* out)
{
    out[threadIdx.x] = Size + lane();
}

/* host function `reference` removed by public-suite */










/* host function `print_grid` removed by public-suite */






/* host variable `host_table` removed by public-suite */

namespace detail
{
/* host function `helper` removed by public-suite */
}

/* host function `main` removed by public-suite */
















