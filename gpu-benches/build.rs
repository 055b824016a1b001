//! Compiles the suite's HIP kernels for every backend whose compiler is here.

fn main() {
    rocm_kernels_build::Build::new()
        .file("kernels/gpu_benches.hip")
        .compile("gpu_benches");
}
