// Planted bugs: each must be caught by the cpu backend (rocm-kernels/tests/cpu_bugs.rs).
#include <hip/hip_runtime.h>

// Missing barrier: each thread reads a neighbour's shared value without __syncthreads.
__global__ void missing_barrier(const int* in, int* out) {
    __shared__ int s[256];
    unsigned int t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    // __syncthreads(); -- forgotten
    out[blockIdx.x * blockDim.x + t] = s[(t + 1) % blockDim.x];
}

// Off-by-one: the bounds check lets thread n write one element past the end.
__global__ void oob_write(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) out[i] = 1.0f;
}

// Reads past the end of the input.
__global__ void oob_read(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i + 1];
}

// Threads 32.. return early, the others wait at a barrier.
__global__ void partial_barrier(float* data) {
    unsigned int t = threadIdx.x;
    if (t >= 32) return;
    data[t] += 1.0f;
    __syncthreads();
    data[t] *= 2.0f;
}

// Thread 0 returns early, the rest wait at a barrier (the plain-loop path of the runtime).
__global__ void partial_barrier_first(float* data) {
    unsigned int t = threadIdx.x;
    if (t == 0) return;
    __syncthreads();
    data[t] = 1.0f;
}

// Assumes 64 lanes: starts the shuffle tree at 32 and takes one partial per 64 threads.
__global__ void reduce_assumes_wave64(const float* in, float* out) {
    __shared__ float partial[16];
    unsigned int t = threadIdx.x;
    float v = in[blockIdx.x * blockDim.x + t];
    for (int offset = 32; offset > 0; offset /= 2) v += __shfl_down(v, offset);
    if (t % 64 == 0) partial[t / 64] = v;
    __syncthreads();
    if (t == 0) {
        float s = 0.0f;
        for (unsigned int w = 0; w < blockDim.x / 64; ++w) s += partial[w];
        out[blockIdx.x] = s;
    }
}

// Spins forever on a flag nobody sets.
__global__ void infinite_loop(const int* flag, int* out) {
    while (*(volatile const int*)flag == 0) {
    }
    out[0] = 1;
}

// Spins forever around a barrier (the fiber path of the watchdog).
__global__ void infinite_barrier_loop(const int* flag) {
    while (*(volatile const int*)flag == 0) __syncthreads();
}

// A failing assert in one thread.
__global__ void assert_positive(const int* in) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(in[i] >= 0);
}

// A null pointer dereference.
__global__ void null_write(int* out) {
    int* p = out;
    if (threadIdx.x == 3) p = nullptr;
    p[threadIdx.x] = 1;
}

// Blocks that depend on running in order: block b reads what block b-1 wrote.
__global__ void order_dependent(int* data) {
    if (threadIdx.x == 0 && blockIdx.x > 0) data[blockIdx.x] = data[blockIdx.x - 1] + 1;
}

// Unbounded recursion with a large frame: overflows the kernel thread's stack.
__device__ __noinline__ int recurse(int n) {
    volatile char frame[1024];
    frame[0] = static_cast<char>(n);
    return n == 0 ? frame[0] : recurse(n - 1) + frame[0];
}
__global__ void stack_overflow(int* out, int depth) { out[threadIdx.x] = recurse(depth); }

// A barrier inside a branch only some threads of the block take.
__global__ void divergent_barrier(float* data) {
    unsigned int t = threadIdx.x;
    if (t < 32) {
        data[t] += 1.0f;
        __syncthreads();
    }
    data[t] *= 2.0f;
}

// A block reduction whose loop lost its barrier: each step reads partial sums that other threads
// of the block are still adding to. It has a barrier before the loop, so it is not a partial
// barrier; only the race check (CpuOptions::race_check) reports it.
__global__ void reduce_missing_loop_barrier(const float* in, float* out) {
    __shared__ float partial[256];
    unsigned int t = threadIdx.x;
    partial[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s) partial[t] += partial[t + s];
        // __syncthreads(); -- forgotten
    }
    if (t == 0) out[blockIdx.x] = partial[0];
}

// Records the order in which the threads of the block run (after a barrier when `barrier` is
// set, so the runtime's fiber rounds order them rather than its plain loop).
__global__ void run_order(unsigned int* counter, unsigned int* order, int barrier) {
    if (barrier) __syncthreads();
    order[blockIdx.x * blockDim.x + threadIdx.x] = atomicAdd(counter, 1u);
}

// Thread 0 sets the shift every other thread uses, with no barrier between: run in order, thread
// 0 comes first; with its waves in reverse order the later waves read the shift before it is set
// and write one element past the end of `out` (blockDim.x - 1 elements).
__global__ void shift_without_barrier(int* out) {
    __shared__ int shift;
    unsigned int t = threadIdx.x;
    if (t == 0) shift = 1;
    // __syncthreads(); -- forgotten
    if (t > 0) out[t - shift] = static_cast<int>(t);
}

// The barrier between filling the tile and the reduction loop is missing; the loop itself has
// one. In region form the lanes of a wave run in step, so within one wave (64 threads at wave 64)
// the bug does not show, as on AMD hardware; the race check runs threads as fibers, on to their
// next real barrier, and reports it at any wave size.
__global__ void missing_barrier_before_loop(const float* x, float* partial) {
    __shared__ float tile[64];
    int t = threadIdx.x;
    tile[t] = x[blockIdx.x * 64 + t];
    // __syncthreads(); -- forgotten
    for (int stride = 32; stride > 0; stride /= 2) {
        if (t < stride) tile[t] += tile[t + stride];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = tile[0];
}

// Partial barriers under a condition that differs between the threads of a block (the correct
// forms are in fidelity.hip). Only threads 0..63 reach __syncthreads_count: the others take the
// other side of `?:`.
__global__ void partial_count_under_ternary(const int* in, int* out) {
    unsigned int t = threadIdx.x;
    int c = t < 64 ? __syncthreads_count(in[t] > 0) : 0;
    out[t] = c;
}

// `&&` skips the barrier for the threads whose left side is false.
__global__ void partial_or_under_and(const int* in, int* out) {
    unsigned int t = threadIdx.x;
    int seen = t < 64 && __syncthreads_or(in[t] > 0);
    out[t] = seen;
}

// A barrier under an `if` on the thread's index: every third thread skips it.
__global__ void partial_barrier_under_if(const int* in, int* out) {
    __shared__ int s[256];
    unsigned int t = threadIdx.x;
    s[t] = in[t];
    if (t % 3 != 0) __syncthreads();
    out[t] = s[(t + 1) % blockDim.x];
}

// A barrier in a loop whose trip count differs between threads: threads leave it after
// different numbers of barriers.
__global__ void divergent_loop_barrier(const int* in, int* out) {
    __shared__ int s[256];
    unsigned int t = threadIdx.x;
    int acc = 0;
    for (unsigned int k = 0; k < t / 32 + 1; ++k) {
        s[t] = acc + in[t];
        __syncthreads();
        acc += s[(t + 1) % blockDim.x];
    }
    out[t] = acc;
}

// Faults the first time only: thread 0 sets the flag it tested, then writes past the end.
// Checked launches run region forms without naming each lane and rerun a faulting launch
// naming them; here the rerun does not fault, and the report says its thread may be a neighbour.
__global__ void faults_once(int* flag, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) {
        int first = flag[0];
        flag[0] = 1;
        if (first == 0) out[n + 10] = 1.0f;
    }
}

// A float buffer read as float4 from element 1: a misaligned vector access (a GPU faults too).
__global__ void misaligned_float4(const float* in, float4* out) {
    out[threadIdx.x] = reinterpret_cast<const float4*>(in + 1)[threadIdx.x];
}

// Correct: a float buffer read as float4 from its start (device buffers start 256-byte aligned,
// as hipMalloc's do), the tail element by element.
__global__ void float4_from_start(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (4 * i + 3 < n) {
        float4 v = reinterpret_cast<const float4*>(in)[i];
        out[4 * i] = v.x;
        out[4 * i + 1] = v.y;
        out[4 * i + 2] = v.z;
        out[4 * i + 3] = v.w;
    } else {
        for (int j = 4 * i; j < n && j < 4 * i + 4; ++j) out[j] = in[j];
    }
}

// ---- The race detector's summaries (lane loops described ahead, then run uninstrumented) ----

// Correct: in place, each thread its own element. Launched with `x` one element into `y`'s
// buffer it races (thread i writes y[i], thread i - 1 reads it as x[i - 1]): aliasing only the
// launch shows.
__global__ void summary_axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// Blocks overlapping by one element: the last thread of block b and the first of b + 1 write
// the same element (different values).
__global__ void summary_blocks_overlap(float* out) {
    out[blockIdx.x * (blockDim.x - 1) + threadIdx.x] = (float)blockIdx.x;
}

// Every thread of a block writes the same shared word, with its own value.
__global__ void summary_shared_same_word(float* out) {
    __shared__ float s[1];
    s[0] = (float)threadIdx.x;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = s[0];
}

// An index that wraps: with 512 threads, threads t and t + 256 write the same element.
__global__ void summary_index_wraps(float* out) {
    __shared__ float s[256];
    s[(unsigned char)threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = s[(unsigned char)threadIdx.x];
}

// Correct: a tiled transpose (rows of a tile written, a barrier, columns read).
__global__ void summary_transpose(const float* in, float* out, int n) {
    __shared__ float tile[16][17];
    int x = blockIdx.x * 16 + threadIdx.x;
    int y = blockIdx.y * 16 + threadIdx.y;
    if (x < n && y < n) tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    __syncthreads();
    x = blockIdx.y * 16 + threadIdx.x;
    y = blockIdx.x * 16 + threadIdx.y;
    if (x < n && y < n) out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}

// The same without the barrier: a thread reads a column element another thread of the block
// writes in the same phase.
__global__ void summary_transpose_no_barrier(const float* in, float* out, int n) {
    __shared__ float tile[16][17];
    int x = blockIdx.x * 16 + threadIdx.x;
    int y = blockIdx.y * 16 + threadIdx.y;
    if (x < n && y < n) tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    x = blockIdx.y * 16 + threadIdx.x;
    y = blockIdx.x * 16 + threadIdx.y;
    if (x < n && y < n) out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}

// Correct: locals initialised with braces and parentheses.
__global__ void summary_brace_init(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v{i < n ? in[i] : 0.0f};
    float w(2.0f);
    if (i < n) out[i] = v * w;
}

// Parallel race checking (race.cpp): correct kernels whose blocks meet on device memory, which
// a check on several workers cannot decide alone. Every block writes the same value to one word
// (two writes of one value: no race reported).
__global__ void every_block_sets_flag(int* flag, float* out) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
    if (threadIdx.x == 0) *flag = 1;
}

// The "last block" sum of a threadfence reduction: each block publishes its partial sum, fences,
// and counts itself done; the block that counts last reads every partial sum (ordered after the
// others' writes by their fence and atomic).
__global__ void last_block_sum(const float* in, float* partial, unsigned int* done, float* out) {
    __shared__ float s[64];
    __shared__ int last;
    unsigned int t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (unsigned int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) {
        partial[blockIdx.x] = s[0];
        __threadfence();
        unsigned int prev = atomicAdd(done, 1u);
        last = prev == gridDim.x - 1;
    }
    __syncthreads();
    if (last && t == 0) {
        float sum = 0.0f;
        for (unsigned int b = 0; b < gridDim.x; ++b) sum += partial[b];
        out[0] = sum;
    }
}
