// A whole HIP program in the rocm-examples style, for the host-code stripping test: kernels,
// device functions, templates, variables and host code (braces in comments: { and strings).
#include "example_utils.hpp"

#include <hip/hip_runtime.h>

#include <iostream>
#include <vector>

#define TILE 16

__constant__ float d_mask[TILE];

__device__ unsigned int lane() { return threadIdx.x % warpSize; }

__host__ void print_hello_host()
{
    std::cout << "Hello { from host" << std::endl;
}

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

std::vector<float> reference(const std::vector<float>& in)
{
    auto copy = [](float v) { return v; };
    std::vector<float> out;
    for(float v : in)
    {
        out.push_back(copy(v));
    }
    return out;
}

template<typename T>
void print_grid(std::vector<T> vec, int width)
{
    const char* s = R"(raw { string)";
    std::cout << s << width << vec.size() << std::endl;
}

const std::vector<int> host_table = {1, 2, 3};

namespace detail
{
int helper(int x) { return x + 1; }
}

int main()
{
#ifdef __HIP_PLATFORM_AMD__
    std::cout << "amd" << std::endl;
#endif
    constexpr unsigned int block_size = 16;
    const unsigned int     not_constant = 4;
    float*                 d_in{};
    float*                 d_out{};
    ns::tiled<block_size, float><<<dim3(1), dim3(block_size), 0, hipStreamDefault>>>(d_in, d_out, not_constant);
    unsigned int* d_u{};
    void* params[] = {&d_u};
    HIP_CHECK(hipLaunchCooperativeKernel(cooperative<block_size>, dim3(1), dim3(16), params, 0, hipStreamDefault));
    if(block_size < not_constant) { std::cout << "unreachable" << std::endl; }
    print_hello();
    return detail::helper(0);
}
