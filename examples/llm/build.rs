//! Compiles `kernels/*.hip` for every backend whose compiler is here (the cpu backend always),
//! and writes `$OUT_DIR/kernels.rs`, which `src/lib.rs` embeds with `include_kernels!`.

fn main() {
    rocm_kernels_build::Build::new()
        .file("kernels/llm.hip")
        .file("kernels/decode.hip")
        .compile("kernels");
}
