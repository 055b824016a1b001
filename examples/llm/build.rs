//! Compiles `kernels/*.hip` for every backend whose compiler is here (the cpu backend always),
//! and writes `$OUT_DIR/kernels.rs`, which `src/lib.rs` embeds with `include_kernels!`; then the
//! variants of `matmul` that `cargo rocm tune` found best (`tune/wisdom.json`, when there is
//! one), which `src/lib.rs` embeds with `include_tuned!`.

fn main() {
    rocm_kernels_build::Build::new()
        .file("kernels/llm.hip")
        .file("kernels/decode.hip")
        .file("kernels/matmul.hip")
        .compile("kernels");
    rocm_kernels_build::Build::new()
        .file("kernels/matmul.hip")
        .compile_tuned("matmul", "tune/wisdom.json");
}
