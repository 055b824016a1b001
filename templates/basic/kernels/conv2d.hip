// A 2D convolution with a 7 x 7 filter: out[r][c] = sum over i, j of in[r + i][c + j] * f[i][j],
// for an n x n output and an (n + 6) x (n + 6) input (row-major, the border already padded).
// Its thread-block shape, the outputs per thread and whether the input goes through shared
// memory are compile-time parameters, searched by `cargo rocm tune` (the tunable in
// tests/kernels.rs); the defaults below are CONV2D_DEFAULT in src/lib.rs.
#include <hip/hip_runtime.h>

#ifndef BLOCK_X
#define BLOCK_X 32 // threads per block along a row
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8 // threads per block along a column
#endif
#ifndef TILE_X
#define TILE_X 1 // outputs per thread along a row
#endif
#ifndef TILE_Y
#define TILE_Y 1 // outputs per thread along a column
#endif
#ifndef USE_SHARED
#define USE_SHARED 0 // stage the block's input window in shared memory
#endif

#define FW 7
#define FH 7
#define BM (BLOCK_Y * TILE_Y) // output rows per block
#define BN (BLOCK_X * TILE_X) // output columns per block

// Launch with blocks of (BLOCK_X, BLOCK_Y) threads and a grid of (ceil(n / BN), ceil(n / BM)).
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
    conv2d(const float* in, const float* filter, float* out, int n) {
    const int w = n + FW - 1;
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;
#if USE_SHARED
    __shared__ float window[BM + FH - 1][BN + FW - 1];
    for (int i = threadIdx.y; i < BM + FH - 1; i += BLOCK_Y) {
        for (int j = threadIdx.x; j < BN + FW - 1; j += BLOCK_X) {
            const int r = row0 + i;
            const int c = col0 + j;
            window[i][j] = (r < n + FH - 1 && c < w) ? in[r * w + c] : 0.0f;
        }
    }
    __syncthreads();
#endif
    for (int ty = 0; ty < TILE_Y; ty++) {
        for (int tx = 0; tx < TILE_X; tx++) {
            const int lr = threadIdx.y + ty * BLOCK_Y;
            const int lc = threadIdx.x + tx * BLOCK_X;
            const int r = row0 + lr;
            const int c = col0 + lc;
            if (r >= n || c >= n) {
                continue;
            }
            float sum = 0.0f;
            for (int i = 0; i < FH; i++) {
                for (int j = 0; j < FW; j++) {
#if USE_SHARED
                    sum += window[lr + i][lc + j] * filter[i * FW + j];
#else
                    sum += in[(r + i) * w + c + j] * filter[i * FW + j];
#endif
                }
            }
            out[r * n + c] = sum;
        }
    }
}
