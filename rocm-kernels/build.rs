//! Compiles the cpu backend's C++ runtime (`cpu-runtime/`) once, into this crate, against the
//! kernel-language headers of `rocm-kernels-core` (the ABI it shares with compiled kernels).

fn main() {
    let include = std::env::var("DEP_ROCM_KERNELS_CORE_INCLUDE")
        .expect("rocm-kernels-core tells where its headers are");
    let cpu = std::path::Path::new(&include).join("cpu");
    println!("cargo:rerun-if-changed=cpu-runtime");
    println!(
        "cargo:rerun-if-changed={}",
        cpu.join("hip/detail/abi.h").display()
    );
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .file("cpu-runtime/runtime.cpp")
        // The race detector, which the race variant of kernels calls (rocm-kernels-build's
        // cpu/race.rs renames their instrumentation to it).
        .file("cpu-runtime/race.cpp")
        // The ABI as the compiler sees it, for the layout test in ffi.rs (unreferenced otherwise).
        .file("cpu-runtime/abi_layout.cpp")
        .include(&cpu)
        .include("cpu-runtime")
        .opt_level(2)
        .flag_if_supported("-fno-omit-frame-pointer")
        .warnings(true)
        .compile("rocm_kernels_cpu_runtime");
}
