//! TEMPORARY: a minimal `inspect`/`discover` until `toolchain::inspect` and
//! `toolchain::discover` land from the discovery branch; delete after `git merge main`.

use std::path::{Path, PathBuf};

use crate::toolchain::{CompilerKind, HipCompiler, Toolchain, ToolchainSource};

pub(crate) fn inspect(root: &Path, source: ToolchainSource) -> Option<Toolchain> {
    if !root.is_dir() {
        return None;
    }
    let compilers: Vec<HipCompiler> = [
        ("lib/llvm/bin/clang++", CompilerKind::Clang),
        ("llvm/bin/clang++", CompilerKind::Clang),
        ("bin/hipcc", CompilerKind::Hipcc),
    ]
    .iter()
    .map(|(rel, kind)| (root.join(rel), *kind))
    .filter(|(p, _)| p.is_file())
    .map(|(path, kind)| HipCompiler {
        kind,
        path,
        version: None,
    })
    .collect();
    let device_lib_path = [
        "amdgcn/bitcode",
        "lib/llvm/amdgcn/bitcode",
        "llvm/amdgcn/bitcode",
        "lib/x86_64-linux-gnu/amdgcn/bitcode",
        "lib/amdgcn/bitcode",
    ]
    .iter()
    .map(|rel| root.join(rel))
    .find(|p| p.is_dir());
    if compilers.is_empty() && device_lib_path.is_none() {
        return None;
    }
    let mut device_lib_targets: Vec<String> = device_lib_path
        .as_deref()
        .and_then(|d| std::fs::read_dir(d).ok())
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let n = name
                .strip_prefix("oclc_isa_version_")?
                .strip_suffix(".bc")?;
            Some(format!("gfx{n}"))
        })
        .collect();
    device_lib_targets.sort();
    let version = std::fs::read_to_string(root.join(".info/version"))
        .ok()
        .and_then(|t| t.lines().next().map(|l| l.trim().to_string()))
        .filter(|v| !v.is_empty());
    let hip_runtime_lib = ["lib", "lib/x86_64-linux-gnu"]
        .iter()
        .map(|d| root.join(d).join("libamdhip64.so"))
        .find(|p| p.exists());
    let name = match &source {
        ToolchainSource::Managed { name } => name.clone(),
        _ => "system".to_string(),
    };
    Some(Toolchain {
        name,
        root: root.to_path_buf(),
        source,
        version,
        compilers,
        device_lib_path,
        device_lib_targets,
        hip_runtime_lib,
    })
}

pub(crate) fn discover() -> Vec<Toolchain> {
    let mut out = Vec::new();
    for var in ["ROCM_PATH", "HIP_PATH"] {
        if let Some(p) = std::env::var_os(var) {
            out.extend(inspect(
                &PathBuf::from(p),
                ToolchainSource::EnvVar { var: var.into() },
            ));
        }
    }
    out.extend(inspect(Path::new("/opt/rocm"), ToolchainSource::Opt));
    out.extend(inspect(Path::new("/usr"), ToolchainSource::Distro));
    out
}
