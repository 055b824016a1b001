//! The kernel-language headers this crate ships (`include/nvidia`), embedded in every binary.
//!
//! nvcc and NVRTC need them as files (`-I`), and a binary built here may run where this crate's
//! source tree does not exist: test binaries staged for a GPU machine, or an application that
//! compiles with NVRTC at run time. [`nvidia_dir`] gives the source tree's folder when it is there
//! and otherwise writes the embedded copies once into a folder named after their contents.

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
];

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
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for (rel, text) in files {
        hash.update(rel.as_bytes());
        hash.update([0]);
        hash.update(text.as_bytes());
    }
    let digest = hash.finalize();
    let short: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
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
