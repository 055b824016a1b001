//! Builds the corpus kernels with rocm-kernels' cpu build path (included by `#[path]`, since a
//! build script cannot depend on the crate it tests) and writes the `KernelLibrary` statics.

#[allow(dead_code)]
#[path = "../../src/build/cpu.rs"]
mod cpu;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn library(name: &str, sources: &[&str], out: &mut String) {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join(name);
    let req = cpu::CpuBuildRequest {
        name: name.to_string(),
        sources: sources.iter().map(|s| root.join(s)).collect(),
        crate_root: root.clone(),
        out_dir,
        header_dir: root.join("../../include/cpu"),
        include_dirs: vec![],
        defines: vec![],
        flags: vec![],
        opt_level: None,
        cargo_metadata: true,
    };
    let built = cpu::build_cpu(&req).unwrap_or_else(|e| panic!("{e}"));
    // How each kernel runs (region form or fibers, and why), for tests to check.
    let upper = name.to_uppercase();
    writeln!(out, "pub const {upper}_EXECUTION: &[(&str, &str)] = &[").unwrap();
    for k in &built.kernels {
        let how = match &k.region_form {
            Ok(true) => "regions".to_string(),
            Ok(false) => "per-thread loop".to_string(),
            Err(why) => format!("fibers: {why}"),
        };
        writeln!(out, "    ({:?}, {how:?}),", k.name).unwrap();
    }
    writeln!(out, "];").unwrap();
    for path in &built.rerun_if_changed {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    writeln!(out, "unsafe extern \"C\" {{").unwrap();
    for k in &built.kernels {
        writeln!(out, "    fn {}();", k.symbol).unwrap();
    }
    writeln!(out, "}}").unwrap();
    writeln!(out, "pub static {upper}: KernelLibrary = KernelLibrary {{").unwrap();
    writeln!(out, "    name: {name:?},\n    code_objects: &[").unwrap();
    for (source, target, format, path) in nvidia_objects(name, sources, &root) {
        writeln!(
            out,
            "        rocm_kernels::embedded::EmbeddedObject {{ backend: \
             rocm_kernels::Backend::Nvidia, targets: {target:?}, source: {source:?}, format: \
             {format:?}, bytes: include_bytes!({path:?}) }},"
        )
        .unwrap();
    }
    writeln!(out, "    ],\n    kernels: &[").unwrap();
    for k in &built.kernels {
        writeln!(
            out,
            "        KernelDecl {{ name: {:?}, source: {:?}, params: &[",
            k.name, k.source_rel
        )
        .unwrap();
        for p in &k.params {
            let kind = if p.is_pointer {
                "GlobalBuffer"
            } else {
                "ByValue"
            };
            writeln!(
                out,
                "            ParamDecl {{ name: {:?}, type_name: {:?}, size: {}, kind: ParamKind::{kind} }},",
                p.name, p.type_name, p.size
            )
            .unwrap();
        }
        writeln!(out, "        ] }},").unwrap();
    }
    writeln!(out, "    ],\n    cpu_kernels: &[").unwrap();
    for k in &built.kernels {
        writeln!(
            out,
            "        CpuKernel {{ name: {:?}, entry: {} as *const () }},",
            k.name, k.symbol
        )
        .unwrap();
    }
    writeln!(out, "    ],\n}};").unwrap();
}

/// With nvcc available (PATH, NVCC or CUDA_PATH), the corpus is also compiled for the nvidia
/// backend (`ROCM_NVIDIA_ARCH`, default sm_90), so the same checks run on an NVIDIA GPU. Without
/// it the libraries have no nvidia code and those runs are skipped. A plain nvcc command rather
/// than `rocm_kernels::Build`: this build script cannot depend on the crate it tests.
fn nvidia_objects(
    name: &str,
    sources: &[&str],
    root: &Path,
) -> Vec<(String, String, &'static str, PathBuf)> {
    for var in ["NVCC", "CUDA_PATH", "PATH", "ROCM_NVIDIA_ARCH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let nvcc = std::env::var_os("NVCC")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("CUDA_PATH").map(|p| Path::new(&p).join("bin/nvcc")))
        .filter(|p| p.is_file())
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join("nvcc"))
                .find(|p| p.is_file())
        });
    let Some(nvcc) = nvcc else {
        return Vec::new();
    };
    let arch = std::env::var("ROCM_NVIDIA_ARCH").unwrap_or_else(|_| "sm_90".into());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join(name);
    let mut objects = Vec::new();
    for source in sources {
        let stem = Path::new(source).file_stem().unwrap().to_string_lossy();
        let out = out_dir.join(format!("{stem}.{arch}.cubin"));
        let status = std::process::Command::new(&nvcc)
            .args(["-x", "cu", "-cubin", &format!("-arch={arch}"), "-O3", "-I"])
            .arg(root.join("../../include/nvidia"))
            .arg("-o")
            .arg(&out)
            .arg(root.join(source))
            .status()
            .expect("run nvcc");
        assert!(status.success(), "nvcc failed for {source}");
        objects.push((source.to_string(), arch.clone(), "cubin", out));
    }
    println!("cargo:rerun-if-changed=../../include/nvidia");
    objects
}

fn main() {
    let mut out = String::from(
        "use rocm_kernels::embedded::{CpuKernel, KernelDecl, KernelLibrary, ParamDecl, ParamKind};\n",
    );
    library(
        "features",
        &["kernels/features.hip", "kernels/warp.hip"],
        &mut out,
    );
    library("bugs", &["kernels/bugs.hip"], &mut out);
    library("bench", &["kernels/bench.hip"], &mut out);
    library("shapes", &["kernels/shapes.hip"], &mut out);
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("corpus.rs");
    std::fs::write(dest, out).unwrap();
    println!("cargo:rerun-if-changed=../../include/cpu");
    println!("cargo:rerun-if-changed=../../src/build/cpu.rs");
    println!("cargo:rerun-if-changed=../../src/build/cpu");
}
