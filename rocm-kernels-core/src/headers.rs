//! The kernel-language headers this crate ships: `include/cpu` (the host C++ compiler's view of
//! the HIP kernel language, and the ABI with the cpu runtime) and `include/nvidia` (HIP on CUDA).
//!
//! Build scripts use the source tree's folders ([`cpu_dir`], [`nvidia_dir`]). nvcc and NVRTC also
//! run after the build, and a binary built here may run where this crate's source tree does not
//! exist (test binaries staged for a GPU machine, an application that compiles with NVRTC at run
//! time): the nvidia headers are embedded in every binary, and [`nvidia_dir`] writes them once into
//! a folder named after their contents when the source tree is absent.

use std::path::{Path, PathBuf};

/// `include/nvidia`, file by file (path under the folder, contents).
const NVIDIA: &[(&str, &str)] = &[
    (
        "hip/hip_runtime.h",
        include_str!("../include/nvidia/hip/hip_runtime.h"),
    ),
    (
        "hip/hip_fp16.h",
        include_str!("../include/nvidia/hip/hip_fp16.h"),
    ),
    (
        "hip/hip_bf16.h",
        include_str!("../include/nvidia/hip/hip_bf16.h"),
    ),
    (
        "hip/hip_cooperative_groups.h",
        include_str!("../include/nvidia/hip/hip_cooperative_groups.h"),
    ),
    (
        "hip/detail/collective_macros.h",
        include_str!("../include/nvidia/hip/detail/collective_macros.h"),
    ),
];

/// The folder to pass to the host C++ compiler as `-I` for the cpu backend's
/// `#include <hip/hip_runtime.h>` (only at build time: it is this crate's source tree).
pub fn cpu_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include/cpu")
}

/// The folder to pass to nvcc or NVRTC as `-I` for `#include <hip/hip_runtime.h>`.
pub fn nvidia_dir() -> std::io::Result<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/nvidia");
    if NVIDIA
        .iter()
        .all(|(rel, text)| std::fs::read_to_string(source.join(rel)).is_ok_and(|t| t == *text))
    {
        return Ok(source);
    }
    materialize("nvidia", NVIDIA)
}

/// Writes `files` under `<temp>/rocm-kernels-headers-<hash>/<name>` unless they are there
/// already, each through a temporary file and a rename so concurrent processes never see a
/// partial header.
fn materialize(name: &str, files: &[(&str, &str)]) -> std::io::Result<PathBuf> {
    // FNV-1a of the names and contents: the folder only needs a name that changes with them.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (rel, text) in files {
        for b in rel.bytes().chain([0]).chain(text.bytes()).chain([0]) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    let short = format!("{hash:016x}");
    let dir = std::env::temp_dir()
        .join(format!("rocm-kernels-headers-{short}"))
        .join(name);
    for (rel, text) in files {
        let path = dir.join(rel);
        if std::fs::read_to_string(&path).is_ok_and(|t| t == *text) {
            continue;
        }
        let parent = path.parent().expect("a header path has a folder");
        std::fs::create_dir_all(parent)?;
        let tmp = parent.join(format!(".{}.{}", std::process::id(), rel.replace('/', "_")));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    #[test]
    fn embedded_headers_are_written_where_the_source_tree_is_absent() {
        let dir = super::materialize("nvidia", super::NVIDIA).unwrap();
        for (rel, text) in super::NVIDIA {
            assert_eq!(std::fs::read_to_string(dir.join(rel)).unwrap(), *text);
        }
        // A second call finds them and writes nothing new.
        assert_eq!(super::materialize("nvidia", super::NVIDIA).unwrap(), dir);
        // In this checkout the source tree is used.
        assert!(super::nvidia_dir().unwrap().ends_with("include/nvidia"));
    }
}
