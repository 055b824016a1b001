//! TEMPORARY: a minimal ROCm toolchain lookup used until `crate::toolchain::discover` is merged.
//! It looks at `ROCM_PATH`/`HIP_PATH`, `/opt/rocm` and the distro layout under `/usr`.

use std::path::{Path, PathBuf};

use super::settings::EnvReader;
use crate::toolchain::{CompilerKind, HipCompiler, Toolchain, ToolchainSource};

pub(crate) fn find(env: &EnvReader) -> Option<Toolchain> {
    let mut roots: Vec<(PathBuf, ToolchainSource)> = Vec::new();
    for var in ["ROCM_PATH", "HIP_PATH"] {
        if let Some(v) = env.get(var) {
            roots.push((
                PathBuf::from(v),
                ToolchainSource::EnvVar { var: var.into() },
            ));
        }
    }
    roots.push((PathBuf::from("/opt/rocm"), ToolchainSource::Opt));
    roots.push((PathBuf::from("/usr"), ToolchainSource::Distro));
    roots
        .into_iter()
        .find_map(|(root, source)| inspect(&root, source))
}

fn inspect(root: &Path, source: ToolchainSource) -> Option<Toolchain> {
    let mut compilers = Vec::new();
    for c in ["lib/llvm/bin/clang++", "llvm/bin/clang++"] {
        let p = root.join(c);
        if p.is_file() {
            compilers.push(HipCompiler {
                kind: CompilerKind::Clang,
                path: p,
                version: None,
            });
        }
    }
    if source == ToolchainSource::Distro {
        for n in (14..=30).rev() {
            let p = root.join(format!("bin/clang++-{n}"));
            if p.is_file() {
                compilers.push(HipCompiler {
                    kind: CompilerKind::Clang,
                    path: p,
                    version: None,
                });
            }
        }
    }
    let hipcc = root.join("bin/hipcc");
    if hipcc.is_file() {
        compilers.push(HipCompiler {
            kind: CompilerKind::Hipcc,
            path: hipcc,
            version: None,
        });
    }
    let device_lib_path = [
        "amdgcn/bitcode",
        "lib/amdgcn/bitcode",
        "lib/x86_64-linux-gnu/amdgcn/bitcode",
    ]
    .iter()
    .map(|d| root.join(d))
    .find(|d| d.join("ocml.bc").is_file());
    if compilers.is_empty() || device_lib_path.is_none() {
        return None;
    }
    let mut device_lib_targets: Vec<String> = device_lib_path
        .as_ref()
        .and_then(|d| std::fs::read_dir(d).ok())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_prefix("oclc_isa_version_")
                .and_then(|r| r.strip_suffix(".bc"))
                .map(|v| format!("gfx{v}"))
        })
        .collect();
    device_lib_targets.sort();
    Some(Toolchain {
        name: "system".into(),
        root: root.to_path_buf(),
        source,
        version: None,
        compilers,
        device_lib_path,
        device_lib_targets,
        hip_runtime_lib: None,
    })
}

/// gfx targets of this machine's AMD GPUs, from the KFD topology (`gfx_target_version` of each
/// node: major*10000 + minor*100 + stepping, e.g. 90010 → gfx90a). Empty without a GPU.
pub(crate) fn detect_gfx_targets() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Ok(nodes) = std::fs::read_dir("/sys/class/kfd/kfd/topology/nodes") else {
        return out;
    };
    for node in nodes.flatten() {
        let Ok(props) = std::fs::read_to_string(node.path().join("properties")) else {
            continue;
        };
        let version = props.lines().find_map(|l| {
            l.strip_prefix("gfx_target_version ")
                .and_then(|v| v.trim().parse::<u32>().ok())
        });
        if let Some(v) = version.filter(|v| *v > 0) {
            let t = format!("gfx{}{:x}{:x}", v / 10000, (v / 100) % 100, v % 100);
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out.sort();
    out
}
