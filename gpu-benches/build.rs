//! Compiles the suite's HIP kernels for every backend whose compiler is here: most benchmarks'
//! in one library, gpu-cache's 82 instantiations in another (only that benchmark loads it).

fn main() {
    rocm_kernels_build::Build::new()
        .file("kernels/gpu_benches.hip")
        .compile("gpu_benches");
    rocm_kernels_build::Build::new()
        .file("kernels/gpu_cache.hip")
        .compile("gpu_cache");
}
