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
    for path in &built.rerun_if_changed {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    writeln!(out, "unsafe extern \"C\" {{").unwrap();
    for k in &built.kernels {
        writeln!(out, "    fn {}();", k.symbol).unwrap();
    }
    writeln!(out, "}}").unwrap();
    let upper = name.to_uppercase();
    writeln!(out, "pub static {upper}: KernelLibrary = KernelLibrary {{").unwrap();
    writeln!(
        out,
        "    name: {name:?},\n    code_objects: &[],\n    kernels: &["
    )
    .unwrap();
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
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("corpus.rs");
    std::fs::write(dest, out).unwrap();
    println!("cargo:rerun-if-changed=../../include/cpu");
    println!("cargo:rerun-if-changed=../../src/build/cpu.rs");
    println!("cargo:rerun-if-changed=../../src/build/cpu");
}
