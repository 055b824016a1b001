//! Compiles the cpu backend's C++ runtime (`cpu-runtime/`) once, into this crate.

fn main() {
    println!("cargo:rerun-if-changed=cpu-runtime");
    println!("cargo:rerun-if-changed=include/cpu/hip/detail/abi.h");
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .file("cpu-runtime/runtime.cpp")
        .include("include/cpu")
        .opt_level(2)
        .flag_if_supported("-fno-omit-frame-pointer")
        .warnings(true)
        .compile("rocm_kernels_cpu_runtime");
}
