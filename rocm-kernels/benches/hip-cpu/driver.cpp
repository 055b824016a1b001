// Runs the benchmark kernels of tests/corpus/kernels/bench.hip on ROCm's HIP-CPU header library,
// with the same sizes and launch shapes as benches/cpu_backend.rs, and prints one line per kernel.
// Built by run.sh against a HIP-CPU checkout the user supplies (never vendored here).
#include <hip/hip_runtime.h>

#include "../../tests/corpus/kernels/bench.hip"

#include <tbb/global_control.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <vector>

struct Best {
    double wall_ms, cpu_ms;
};

// CPU time of the process (all threads), as the Rust benchmark measures it.
static double cpu_ms() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

template <class F>
static Best best_ms(int runs, F f) {
    f();  // warm up
    if (hipDeviceSynchronize() != hipSuccess) std::fprintf(stderr, "synchronize failed\n");
    Best best{1e300, 1e300};
    for (int r = 0; r < runs; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        double c0 = cpu_ms();
        f();
        if (hipDeviceSynchronize() != hipSuccess) std::fprintf(stderr, "synchronize failed\n");
        double c1 = cpu_ms();
        auto t1 = std::chrono::steady_clock::now();
        best.wall_ms = std::min(best.wall_ms, std::chrono::duration<double, std::milli>(t1 - t0).count());
        best.cpu_ms = std::min(best.cpu_ms, c1 - c0);
    }
    return best;
}

int main() {
    // BENCH_THREADS=N limits HIP-CPU's TBB pool, as it limits the cpu backend's workers.
    std::unique_ptr<tbb::global_control> limit;
    if (const char *t = std::getenv("BENCH_THREADS"))
        if (std::atoi(t) > 0)
            limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                          static_cast<size_t>(std::atoi(t)));
    const int n = 16 << 20;
    const int runs = 5;
    float *x, *y, *out;
    hipMalloc(&x, n * sizeof(float));
    hipMalloc(&y, n * sizeof(float));
    hipMalloc(&out, n * sizeof(float));
    std::vector<float> host(n);
    for (int i = 0; i < n; ++i) host[i] = float(i % 7);
    hipMemcpy(x, host.data(), n * sizeof(float), hipMemcpyHostToDevice);
    hipMemcpy(y, host.data(), n * sizeof(float), hipMemcpyHostToDevice);

    const Best saxpy = best_ms(runs, [&] {
        hipLaunchKernelGGL(bench_saxpy, dim3(n / 256), dim3(256), 0, nullptr, 2.0f, x, y, n);
    });
    const Best reduce = best_ms(runs, [&] {
        hipLaunchKernelGGL(bench_block_reduce, dim3(n / 256), dim3(256), 0, nullptr, x, out, n);
    });
    const Best warp = best_ms(runs, [&] {
        hipLaunchKernelGGL(bench_warp_reduce, dim3(n / 256), dim3(256), 0, nullptr, x, out, n);
    });
    const int side = 4096;
    const Best transpose = best_ms(runs, [&] {
        hipLaunchKernelGGL(bench_transpose, dim3(side / 32, side / 32), dim3(32, 8), 0, nullptr, x, out, side, side);
    });
    std::printf("%-44s %12s %12s\n", "HIP-CPU kernel", "wall ms", "cpu ms");
    std::printf("%-44s %12.3f %12.3f\n", "(a) saxpy, 16777216 floats", saxpy.wall_ms, saxpy.cpu_ms);
    std::printf("%-44s %12.3f %12.3f\n", "(b) block reduction, 16777216 floats, 256/block", reduce.wall_ms, reduce.cpu_ms);
    std::printf("%-44s %12.3f %12.3f\n", "(c) warp-shuffle reduction, 16777216 floats", warp.wall_ms, warp.cpu_ms);
    std::printf("%-44s %12.3f %12.3f\n", "(d) tiled transpose 4096x4096", transpose.wall_ms, transpose.cpu_ms);
    hipFree(x);
    hipFree(y);
    hipFree(out);
    return 0;
}
