// A tiled single-precision matrix multiplication, C = A * B for n x n row-major matrices, whose
// tile shapes are compile-time parameters: `cargo rocm tune` searches them (the tunable in
// tests/kernels.rs), and build.rs compiles the best ones it found (tune/wisdom.json) for
// `src/lib.rs`'s `matmul_tuned`. The defaults below are what the crate's ordinary build uses
// and must match MATMUL_DEFAULT in src/lib.rs.
#include <hip/hip_runtime.h>

#ifndef BLOCK_X
#define BLOCK_X 16 // threads per block along a row of C
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 16 // threads per block along a column of C
#endif
#ifndef TILE_X
#define TILE_X 2 // columns of C per thread
#endif
#ifndef TILE_Y
#define TILE_Y 2 // rows of C per thread
#endif
#ifndef BK
#define BK 16 // depth of the tiles of A and B in shared memory
#endif
#ifndef PAD
#define PAD 0 // padding of the shared tiles (against bank conflicts)
#endif

#define BM (BLOCK_Y * TILE_Y) // rows of C per block
#define BN (BLOCK_X * TILE_X) // columns of C per block

// Launch with blocks of (BLOCK_X, BLOCK_Y) threads and a grid of (ceil(n / BN), ceil(n / BM)).
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
    matmul(const float* A, const float* B, float* C, int n) {
    __shared__ float As[BK][BM + PAD];
    __shared__ float Bs[BK][BN + PAD];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tid = ty * BLOCK_X + tx;
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;
    float acc[TILE_Y][TILE_X];
    for (int i = 0; i < TILE_Y; i++) {
        for (int j = 0; j < TILE_X; j++) {
            acc[i][j] = 0.0f;
        }
    }
    for (int k0 = 0; k0 < n; k0 += BK) {
        for (int e = tid; e < BM * BK; e += BLOCK_X * BLOCK_Y) {
            int r = e / BK;
            int k = e % BK;
            As[k][r] = (row0 + r < n && k0 + k < n) ? A[(row0 + r) * n + k0 + k] : 0.0f;
        }
        for (int e = tid; e < BK * BN; e += BLOCK_X * BLOCK_Y) {
            int k = e / BN;
            int c = e % BN;
            Bs[k][c] = (k0 + k < n && col0 + c < n) ? B[(k0 + k) * n + col0 + c] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < BK; k++) {
            float a[TILE_Y];
            float b[TILE_X];
            for (int i = 0; i < TILE_Y; i++) {
                a[i] = As[k][ty + i * BLOCK_Y];
            }
            for (int j = 0; j < TILE_X; j++) {
                b[j] = Bs[k][tx + j * BLOCK_X];
            }
            for (int i = 0; i < TILE_Y; i++) {
                for (int j = 0; j < TILE_X; j++) {
                    acc[i][j] += a[i] * b[j];
                }
            }
        }
        __syncthreads();
    }
    for (int i = 0; i < TILE_Y; i++) {
        for (int j = 0; j < TILE_X; j++) {
            int r = row0 + ty + i * BLOCK_Y;
            int c = col0 + tx + j * BLOCK_X;
            if (r < n && c < n) {
                C[r * n + c] = acc[i][j];
            }
        }
    }
}
