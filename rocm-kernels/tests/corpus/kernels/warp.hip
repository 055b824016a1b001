// Warp collectives; results depend on the wave size, which the tests compute per launch.
#include <hip/hip_runtime.h>

// Per thread: [shfl from lane 0, shfl_up 1, shfl_down 1, shfl_xor 1, shfl width 8 from lane 3,
//              popcount(ballot(odd lane)), any(lane == 5), all(lane < 1000), popcount(activemask),
//              warpSize, __lane_id()]
__global__ void warp_ops(const int* in, int* out) {
    unsigned int t = threadIdx.x;
    int v = in[blockIdx.x * blockDim.x + t];
    int* o = out + 11 * (blockIdx.x * blockDim.x + t);
    int lane = (int)__lane_id();
    o[0] = __shfl(v, 0);
    o[1] = __shfl_up(v, 1);
    o[2] = __shfl_down(v, 1);
    o[3] = __shfl_xor(v, 1);
    o[4] = __shfl(v, 3, 8);
    o[5] = __popcll(__ballot(lane & 1));
    o[6] = __any(lane == 5);
    o[7] = __all(lane < 1000);
    o[8] = __popcll(__activemask());
    o[9] = warpSize;
    o[10] = lane;
}

// Divergent collective: only even lanes take part; each gets the ballot of its active lanes.
__global__ void warp_divergent(int* out) {
    unsigned int t = threadIdx.x;
    int r = -1;
    if ((t & 1) == 0) r = (int)__popcll(__activemask());
    out[t] = r;
}

// A correct warp reduction for any wave size, then across warps through shared memory.
__global__ void warp_sum(const float* in, float* out) {
    __shared__ float warp_sums[1024 / 32];
    unsigned int t = threadIdx.x;
    float v = in[blockIdx.x * blockDim.x + t];
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down(v, offset);
    unsigned int warps = (blockDim.x + warpSize - 1) / warpSize;
    if (__lane_id() == 0) warp_sums[t / warpSize] = v;
    __syncthreads();
    if (t == 0) {
        float s = 0.0f;
        for (unsigned int w = 0; w < warps; ++w) s += warp_sums[w];
        out[blockIdx.x] = s;
    }
}

// Double and 64-bit shuffles.
__global__ void shfl_wide(const double* in, double* out, long long* lout) {
    unsigned int t = threadIdx.x;
    double v = in[t];
    out[t] = __shfl_xor(v, 2);
    lout[t] = __shfl((long long)t * 10000000000ll, 1);
}

// Thread 0 returns before the others shuffle: the block switches to fibers at thread 1. A lane
// whose partner has returned reads its own value.
__global__ void early_exit_shuffle(const int* in, int* out) {
    unsigned int t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
    if (t == 0) {
        out[g] = -1;
        return;
    }
    out[g] = __shfl_xor(in[g], 1);
}

// The same reduction through a helper: the collective is inside another function, which the
// region form inlines where the call is a statement of its own.
__device__ float warp_reduce_helper(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}
__global__ void warp_sum_helper(const float* in, float* out) {
    unsigned int t = threadIdx.x;
    float v = warp_reduce_helper(in[blockIdx.x * blockDim.x + t]);
    if (__lane_id() == 0) atomicAdd(&out[blockIdx.x], v);
}
// Called under `?:` the helper stays a call (only some lanes might evaluate it), so this kernel
// keeps per-thread fibers, and its execution report says why.
__global__ void warp_sum_helper_guarded(const float* in, float* out) {
    unsigned int t = threadIdx.x;
    float x = in[blockIdx.x * blockDim.x + t];
    float v = blockDim.x > 0 ? warp_reduce_helper(x) : 0.0f;
    if (__lane_id() == 0) atomicAdd(&out[blockIdx.x], v);
}

// Barriers inside a loop whose trip count differs per block but not per thread, with `break`,
// `continue` and an early `return` of some lanes between barriers (lanes that returned must not
// be waited for at the last barrier-free stretch), plus a collective in an `if` condition.
__global__ void loop_control(const int* rounds, int* out) {
    __shared__ int acc[256];
    unsigned int t = threadIdx.x;
    acc[t] = 0;
    __syncthreads();
    int r = 0;
    while (true) {
        if (r >= rounds[blockIdx.x]) break;
        ++r;
        acc[t] += (int)t;
        __syncthreads();
        if ((r & 1) == 0) continue;
        int next = acc[(t + 1) % blockDim.x];
        __syncthreads();
        acc[t] += next & 1;
        __syncthreads();
    }
    if (__any(acc[t] > 1000)) acc[t] += 1;
    int total = acc[t];
    if (t % 3 == 2) return;
    out[blockIdx.x * blockDim.x + t] = total + r;
}
