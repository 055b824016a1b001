// The template's tiled f32 matmul, c[m][n] = a[m][k] * b[k][n] (row-major), whose tile shapes are
// compile-time parameters: `cargo rocm tune` searches them (the tunable in tests/kernels.rs),
// build.rs compiles the best ones it found (tune/wisdom.json), and src/lib.rs's `MatmulPlan` and
// `matmul_tuned` launch them. The defaults below are what the crate's ordinary build (`KERNELS`)
// uses and must match MATMUL_DEFAULT in src/lib.rs. A file of its own, so that a candidate's
// run-time compile (NVRTC, hipRTC, the host compiler) and each tuned variant of the build compile
// this kernel alone.
//
// A block of MM_THREADS = (MM_BM / MM_TM) x (MM_BN / MM_TN) threads computes an MM_BM x MM_BN tile
// of c; a thread an MM_TM x MM_TN grid of it, in 4 x 4 pieces spread over the tile: with
// MM_TY = MM_BM / MM_TM thread rows and MM_TX = MM_BN / MM_TN thread columns, thread (tr, tc) has
// rows 4 tr + i + 4 MM_TY q and columns 4 tc + j + 4 MM_TX p (i, j < 4; q < MM_TM / 4,
// p < MM_TN / 4), so its shared-memory reads are 16-byte loads, its stores of c 16-byte stores,
// and the threads of a warp read consecutive 16-byte groups. k advances by MM_BK with two shared
// buffers: the next tiles of a and b are loaded from global memory into registers while the
// current ones are multiplied, and stored into the other buffer (one barrier a step). Global
// loads and stores are 16-byte wide where the row length (k for a, n for b and c) is a multiple
// of 4 and the pointers are 16-byte aligned, element by element otherwise.
// Grid (ceil(n / MM_BN), ceil(m / MM_BM)). Any m, n, k >= 1.
#include <hip/hip_runtime.h>

#ifndef MM_BM
#define MM_BM 128 // rows of c per block
#endif
#ifndef MM_BN
#define MM_BN 128 // columns of c per block
#endif
#ifndef MM_BK
#define MM_BK 8 // depth of a k step (a multiple of 4)
#endif
#ifndef MM_TM
#define MM_TM 8 // rows of c per thread (a multiple of 4)
#endif
#ifndef MM_TN
#define MM_TN 8 // columns of c per thread (a multiple of 4)
#endif
#ifndef MM_MIN_BLOCKS
#define MM_MIN_BLOCKS 2 // blocks an SM the registers must allow (__launch_bounds__)
#endif

#define MM_TY (MM_BM / MM_TM) // thread rows
#define MM_TX (MM_BN / MM_TN) // thread columns
#define MM_THREADS (MM_TX * MM_TY)
// 16-byte groups of a tile of a (MM_BM x MM_BK) and of b (MM_BK x MM_BN), and how many of each a
// thread loads a step (the last round partial where the threads outnumber what is left).
#define MM_A_GROUPS (MM_BM * MM_BK / 4)
#define MM_B_GROUPS (MM_BK * MM_BN / 4)
#define MM_A_LOADS ((MM_A_GROUPS + MM_THREADS - 1) / MM_THREADS)
#define MM_B_LOADS ((MM_B_GROUPS + MM_THREADS - 1) / MM_THREADS)

#if MM_BM % MM_TM != 0 || MM_BN % MM_TN != 0 || MM_TM % 4 != 0 || MM_TN % 4 != 0 || MM_BK % 4 != 0
#error "matmul: MM_TM and MM_TN divide MM_BM and MM_BN; MM_TM, MM_TN and MM_BK are multiples of 4"
#endif

// No standard headers (NVRTC has none).
typedef long long mm_index_t;

// Four floats, moved by one 16-byte load or store.
struct alignas(16) MmF4 {
    float v[4];
};

// Four elements of a row, `row[col..col + 4)` of a row of `len` (zero past its end; all zero
// when the row is not there).
__device__ inline MmF4 mm_load4(const float* row, bool there, int col, int len, bool vec) {
    MmF4 v;
    if (there && vec && col + 4 <= len) {
        v = *reinterpret_cast<const MmF4*>(row + col);
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            v.v[j] = there && col + j < len ? row[col + j] : 0.0f;
        }
    }
    return v;
}

__device__ inline bool mm_aligned16(const void* a, const void* b) {
    return (((unsigned long long)a | (unsigned long long)b) & 15) == 0;
}

// The defaults: at most 128 registers a thread (no spills on sm_90), two blocks an SM.
__global__ void __launch_bounds__(MM_THREADS, MM_MIN_BLOCKS)
    matmul(int m, int n, int k, const float* a, const float* b, float* c) {
    // a's tile transposed (one more group of 4 a row, against bank conflicts) and b's tile, in
    // groups of 4 floats; two of each.
    __shared__ MmF4 as[2][MM_BK][MM_BM / 4 + 1];
    __shared__ MmF4 bs[2][MM_BK][MM_BN / 4];
    const int t = threadIdx.x;
    const int tr = t / MM_TX, tc = t % MM_TX;
    const int row0 = blockIdx.y * MM_BM, col0 = blockIdx.x * MM_BN;
    const bool a_vec = k % 4 == 0 && mm_aligned16(a, a);
    const bool b_vec = n % 4 == 0 && mm_aligned16(b, c);
    // The groups this thread loads of each tile: group e of a is row e / (MM_BK / 4), k offset
    // 4 (e % (MM_BK / 4)); group e of b is k offset e / (MM_BN / 4), column 4 (e % (MM_BN / 4)).
    int ar[MM_A_LOADS], ak[MM_A_LOADS], bk[MM_B_LOADS], bc[MM_B_LOADS];
    bool a_in[MM_A_LOADS], b_in[MM_B_LOADS];
#pragma unroll
    for (int l = 0; l < MM_A_LOADS; ++l) {
        const int e = t + l * MM_THREADS;
        a_in[l] = MM_A_GROUPS % MM_THREADS == 0 || e < MM_A_GROUPS;
        ar[l] = e / (MM_BK / 4);
        ak[l] = (e % (MM_BK / 4)) * 4;
    }
#pragma unroll
    for (int l = 0; l < MM_B_LOADS; ++l) {
        const int e = t + l * MM_THREADS;
        b_in[l] = MM_B_GROUPS % MM_THREADS == 0 || e < MM_B_GROUPS;
        bk[l] = e / (MM_BN / 4);
        bc[l] = (e % (MM_BN / 4)) * 4;
    }
    float acc[MM_TM][MM_TN];
#pragma unroll
    for (int i = 0; i < MM_TM; ++i) {
#pragma unroll
        for (int j = 0; j < MM_TN; ++j) {
            acc[i][j] = 0.0f;
        }
    }
    MmF4 na[MM_A_LOADS], nb[MM_B_LOADS];
#pragma unroll
    for (int l = 0; l < MM_A_LOADS; ++l) {
        const int r = row0 + ar[l];
        na[l] = mm_load4(a + (mm_index_t)r * k, a_in[l] && r < m, ak[l], k, a_vec);
    }
#pragma unroll
    for (int l = 0; l < MM_B_LOADS; ++l) {
        nb[l] = mm_load4(b + (mm_index_t)bk[l] * n, b_in[l] && bk[l] < k, col0 + bc[l], n, b_vec);
    }
#pragma unroll
    for (int l = 0; l < MM_A_LOADS; ++l) {
        if (a_in[l]) {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                as[0][ak[l] + j][ar[l] / 4].v[ar[l] % 4] = na[l].v[j];
            }
        }
    }
#pragma unroll
    for (int l = 0; l < MM_B_LOADS; ++l) {
        if (b_in[l]) {
            bs[0][bk[l]][bc[l] / 4] = nb[l];
        }
    }
    __syncthreads();
    int buf = 0;
    for (int k0 = 0; k0 < k; k0 += MM_BK) {
        const bool more = k0 + MM_BK < k;
        if (more) {
#pragma unroll
            for (int l = 0; l < MM_A_LOADS; ++l) {
                const int r = row0 + ar[l];
                na[l] = mm_load4(a + (mm_index_t)r * k, a_in[l] && r < m, k0 + MM_BK + ak[l], k, a_vec);
            }
#pragma unroll
            for (int l = 0; l < MM_B_LOADS; ++l) {
                const int kb = k0 + MM_BK + bk[l];
                nb[l] = mm_load4(b + (mm_index_t)kb * n, b_in[l] && kb < k, col0 + bc[l], n, b_vec);
            }
        }
#pragma unroll
        for (int kk = 0; kk < MM_BK; ++kk) {
            MmF4 av[MM_TM / 4], bv[MM_TN / 4];
#pragma unroll
            for (int q = 0; q < MM_TM / 4; ++q) {
                av[q] = as[buf][kk][tr + MM_TY * q];
            }
#pragma unroll
            for (int p = 0; p < MM_TN / 4; ++p) {
                bv[p] = bs[buf][kk][tc + MM_TX * p];
            }
#pragma unroll
            for (int i = 0; i < MM_TM; ++i) {
#pragma unroll
                for (int j = 0; j < MM_TN; ++j) {
                    acc[i][j] += av[i / 4].v[i % 4] * bv[j / 4].v[j % 4];
                }
            }
        }
        if (more) {
            // The other buffer was last read before the previous barrier.
#pragma unroll
            for (int l = 0; l < MM_A_LOADS; ++l) {
                if (a_in[l]) {
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        as[buf ^ 1][ak[l] + j][ar[l] / 4].v[ar[l] % 4] = na[l].v[j];
                    }
                }
            }
#pragma unroll
            for (int l = 0; l < MM_B_LOADS; ++l) {
                if (b_in[l]) {
                    bs[buf ^ 1][bk[l]][bc[l] / 4] = nb[l];
                }
            }
            __syncthreads();
            buf ^= 1;
        }
    }
#pragma unroll
    for (int i = 0; i < MM_TM; ++i) {
        const int r = row0 + 4 * tr + i % 4 + 4 * MM_TY * (i / 4);
        if (r < m) {
            float* crow = c + (mm_index_t)r * n;
#pragma unroll
            for (int p = 0; p < MM_TN / 4; ++p) {
                const int col = col0 + 4 * tc + 4 * MM_TX * p;
                if (b_vec && col + 4 <= n) {
                    MmF4 v;
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        v.v[j] = acc[i][4 * p + j];
                    }
                    *reinterpret_cast<MmF4*>(crow + col) = v;
                } else {
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        if (col + j < n) {
                            crow[col + j] = acc[i][4 * p + j];
                        }
                    }
                }
            }
        }
    }
}
