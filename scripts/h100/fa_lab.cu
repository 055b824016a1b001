// A stand-alone nvcc harness for the llm template's FlashAttention kernels (no Rust, no rocm-kernels):
// times every type, head dim and mask at 32 heads and sequence lengths 1024-8192 (cudaEvent, the
// best of 5 rounds of several launches) and checks heads 0 and 31 of the lengths up to 2048
// against a float64 reference on the GPU (maxerr, and err/tol: the largest |error| over
// tol + tol |reference|, tol = 1e-5, plus the type's epsilon for f16/bf16, as the checks do).
// Used to compare kernel variants in one device call; the template's own bench
// (scripts/h100/llm.sh) gives the table against the unfused cuBLAS attention.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -I rocm-kernels-core/include/nvidia \
//     -DLLM_HIP='"../../examples/llm/kernels/llm.hip"' -x cu scripts/h100/fa_lab.cu -o fa_lab \
//     -cudart static            # (-L the pip wheel's lib directory where nvcc comes from PyPI)
//   ./fa_lab [all|f32|f16|bf16]  # LAB_SEQS=4096,8192 LAB_FULL_ONLY=1 LAB_D128_ONLY=1 narrow it
#include <hip/hip_runtime.h>
#include LLM_HIP
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <string>
#include <algorithm>

// Exits on a CUDA error, saying where.
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); exit(1);} } while (0)

template <typename T> __device__ double tod(T x) { return (double)to_f32(x); }

template <typename T>
__global__ void ref_attn(int S, int D, int causal, float scale, const T* q, const T* k, const T* v, double* o, int head) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= S) return;
    const T* qh = q + (size_t)head * S * D; const T* kh = k + (size_t)head * S * D; const T* vh = v + (size_t)head * S * D;
    double m = -1e300;
    int end = causal ? r + 1 : S;
    for (int c = 0; c < end; ++c) { double x = 0; for (int d = 0; d < D; ++d) x += tod(qh[(size_t)r*D+d]) * tod(kh[(size_t)c*D+d]); x *= scale; m = fmax(m, x); }
    double acc[128]; for (int d = 0; d < D; ++d) acc[d] = 0; double l = 0;
    for (int c = 0; c < end; ++c) { double x = 0; for (int d = 0; d < D; ++d) x += tod(qh[(size_t)r*D+d]) * tod(kh[(size_t)c*D+d]); double p = exp(x * scale - m); l += p; for (int d = 0; d < D; ++d) acc[d] += p * tod(vh[(size_t)c*D+d]); }
    for (int d = 0; d < D; ++d) o[(size_t)r*D+d] = acc[d] / l;
}

template <typename T> T fromf(float x);
template <> float fromf<float>(float x) { return x; }
template <> __half fromf<__half>(float x) { return __float2half(x); }
template <> __hip_bfloat16 fromf<__hip_bfloat16>(float x) { return __float2bfloat16(x); }
template <typename T> float tof(T x);
template <> float tof<float>(float x) { return x; }
template <> float tof<__half>(__half x) { return __half2float(x); }
template <> float tof<__hip_bfloat16>(__hip_bfloat16 x) { return __bfloat162float(x); }

typedef void (*Kern)(int, int, int, float, const void*, const void*, const void*, void*);

template <typename T>
void run(const char* tname, Kern kern, int D, int causal, size_t smem, std::vector<int> seqs, double eps, int check) {
    const int H = 32;
    CK(cudaFuncSetAttribute((const void*)kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    for (int S : seqs) {
        size_t n = (size_t)H * S * D;
        std::vector<T> hq(n), hk(n), hv(n);
        unsigned long long st = 12345 + S;
        auto rnd = [&]() { st = st * 6364136223846793005ull + 1442695040888963407ull; return (float)((st >> 40) & 0xffffff) / 16777216.0f * 2.0f - 1.0f; };
        for (size_t i = 0; i < n; ++i) { hq[i] = fromf<T>(rnd()); hk[i] = fromf<T>(rnd()); hv[i] = fromf<T>(rnd()); }
        T *q, *k, *v, *o;
        CK(cudaMalloc(&q, n * sizeof(T))); CK(cudaMalloc(&k, n * sizeof(T))); CK(cudaMalloc(&v, n * sizeof(T))); CK(cudaMalloc(&o, n * sizeof(T)));
        CK(cudaMemcpy(q, hq.data(), n * sizeof(T), cudaMemcpyHostToDevice)); CK(cudaMemcpy(k, hk.data(), n * sizeof(T), cudaMemcpyHostToDevice)); CK(cudaMemcpy(v, hv.data(), n * sizeof(T), cudaMemcpyHostToDevice));
        float scale = 1.0f / sqrtf((float)D);
        dim3 grid((S + 63) / 64, H);
        auto launch = [&]() { kern<<<grid, 256, smem>>>(S, S, causal, scale, q, k, v, o); };
        launch(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
        double maxerr = 0, worst = 0;
        if (check && S <= 2048) {
            std::vector<T> ho(n); CK(cudaMemcpy(ho.data(), o, n * sizeof(T), cudaMemcpyDeviceToHost));
            double* r; CK(cudaMalloc(&r, (size_t)S * D * 8)); std::vector<double> hr((size_t)S * D);
            for (int h : {0, H - 1}) {
                ref_attn<T><<<(S + 127) / 128, 128>>>(S, D, causal, scale, q, k, v, r, h); CK(cudaDeviceSynchronize());
                CK(cudaMemcpy(hr.data(), r, (size_t)S * D * 8, cudaMemcpyDeviceToHost));
                for (size_t i = 0; i < (size_t)S * D; ++i) {
                    double got = tof<T>(ho[(size_t)h * S * D + i]), want = hr[i];
                    double e = fabs(got - want); maxerr = std::max(maxerr, e);
                    worst = std::max(worst, e / (eps + eps * fabs(want)));
                }
            }
            CK(cudaFree(r));
        }
        cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
        int iters = S >= 8192 ? 3 : S >= 4096 ? 10 : 30;
        float best = 1e30f;
        for (int rep = 0; rep < 5; ++rep) {
            cudaEventRecord(a); for (int i = 0; i < iters; ++i) launch(); cudaEventRecord(b); cudaEventSynchronize(b);
            float ms; cudaEventElapsedTime(&ms, a, b); best = std::min(best, ms / iters);
        }
        CK(cudaGetLastError());
        double flop = 4.0 * H * (double)S * S * D * (causal ? 0.5 : 1.0);
        printf("%-5s d%-3d %-6s S=%-5d %9.1f us %7.1f TFLOP/s  maxerr %.3g  err/tol %.3g\n", tname, D, causal ? "causal" : "full", S, best * 1e3, flop / (best * 1e-3) / 1e12, maxerr, worst);
        fflush(stdout);
        cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(o);
    }
}

int main(int argc, char** argv) {
    std::string which = argc > 1 ? argv[1] : "all";
    std::vector<int> seqs = {1024, 2048, 4096, 8192};
    if (getenv("LAB_SEQS")) { seqs.clear(); for (char* p = getenv("LAB_SEQS"); *p;) { seqs.push_back(strtol(p, &p, 10)); if (*p == ',') ++p; } }
    int masks[2] = {0, 1}; int nmask = getenv("LAB_FULL_ONLY") ? 1 : 2;
    size_t s64 = ((64 + 64) * 68 + 64 * 68) * 4, s128 = ((64 + 32) * 132 + 64 * 36) * 4;
#ifdef FA_F32_SMEM
    size_t f64s = FA_F32_SMEM(64), f128s = FA_F32_SMEM(128);
#else
    size_t f64s = s64, f128s = s128;
#endif
#ifdef FA_HALF_SMEM
    size_t h64s = FA_HALF_SMEM(64), h128s = FA_HALF_SMEM(128);
#else
    size_t h64s = s64, h128s = s128;
#endif
    for (int mi = 0; mi < nmask; ++mi) { int causal = masks[mi];
        if (which == "all" || which == "f32") {
            run<float>("f32", (Kern)flash_attention_d128, 128, causal, f128s, seqs, 1e-5, 1);
            if (!getenv("LAB_D128_ONLY")) run<float>("f32", (Kern)flash_attention_d64, 64, causal, f64s, seqs, 1e-5, 1);
        }
        if (which == "all" || which == "f16") {
            run<__half>("f16", (Kern)flash_attention_d128_f16, 128, causal, h128s, seqs, 1e-5 + 1.0 / 1024, 1);
            if (!getenv("LAB_D128_ONLY")) run<__half>("f16", (Kern)flash_attention_d64_f16, 64, causal, h64s, seqs, 1e-5 + 1.0 / 1024, 1);
        }
        if (which == "all" || which == "bf16") {
            run<__hip_bfloat16>("bf16", (Kern)flash_attention_d128_bf16, 128, causal, h128s, seqs, 1e-5 + 1.0 / 128, 1);
        }
    }
    return 0;
}
