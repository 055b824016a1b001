//! Builds the corpus kernels with `rocm-kernels-build` for the cpu backend, and for the nvidia
//! backend when nvcc is here (`ROCM_NVIDIA_ARCH`, default sm_90), so the same checks run on an
//! NVIDIA GPU; and writes how the cpu build runs each kernel (`<NAME>_EXECUTION`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rocm_kernels_build::{Backend, Build};

/// nvcc on PATH, `NVCC` or `CUDA_PATH`.
fn have_nvcc() -> bool {
    for var in ["NVCC", "CUDA_PATH", "PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    std::env::var_os("NVCC")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("CUDA_PATH").map(|p| Path::new(&p).join("bin/nvcc")))
        .filter(|p| p.is_file())
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join("nvcc"))
                .find(|p| p.is_file())
        })
        .is_some()
}

fn main() {
    let nvidia = have_nvcc();
    let mut out = String::new();
    for (name, sources) in [
        (
            "features",
            &["kernels/features.hip", "kernels/warp.hip"][..],
        ),
        ("bugs", &["kernels/bugs.hip"][..]),
        ("bench", &["kernels/bench.hip"][..]),
        ("shapes", &["kernels/shapes.hip"][..]),
        ("fidelity", &["kernels/fidelity.hip"][..]),
    ] {
        let mut build = Build::new();
        build.files(sources).backend(Backend::Cpu);
        if nvidia {
            build.backend(Backend::Nvidia);
            if std::env::var_os("ROCM_NVIDIA_ARCH").is_none() {
                build.nvidia_arch("sm_90");
            }
        }
        let compiled = build.try_compile(name).unwrap_or_else(|e| panic!("{e}"));
        let upper = name.to_uppercase();
        writeln!(
            out,
            "/// The `{name}` library.\npub static {upper}: &KernelLibrary = rocm_kernels::include_kernels!({name:?});"
        )
        .unwrap();
        writeln!(
            out,
            "/// How the cpu build runs each kernel of `{name}`.\npub const {upper}_EXECUTION: &[(&str, &str)] = &["
        )
        .unwrap();
        for (kernel, how) in &compiled.cpu_execution {
            writeln!(out, "    ({kernel:?}, {how:?}),").unwrap();
        }
        writeln!(out, "];").unwrap();
    }
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("corpus.rs");
    std::fs::write(dest, out).unwrap();
}
