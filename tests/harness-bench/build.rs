//! Compiles the copy kernel the harness-overhead benchmark launches.

fn main() {
    rocm_kernels_build::Build::new()
        .file("kernels/copy.hip")
        .compile("bench");
}
