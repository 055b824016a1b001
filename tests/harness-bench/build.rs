fn main() {
    rocm_kernels::Build::new()
        .file("kernels/copy.hip")
        .compile("bench");
}
