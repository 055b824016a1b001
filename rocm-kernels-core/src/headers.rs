//! The kernel-language headers this crate ships: `include/cpu` (the host C++ compiler's view of
//! the HIP kernel language, and the ABI with the cpu runtime) and `include/nvidia` (HIP on CUDA).
//!
//! Build scripts use the source tree's folders ([`cpu_dir`], [`nvidia_dir`]). nvcc and NVRTC also
//! run after the build, and a binary built here may run where this crate's source tree does not
//! exist (test binaries staged for a GPU machine, an application that compiles with NVRTC at run
//! time): the headers are embedded in every binary, and both functions write them once into a
//! folder named after their contents when the source tree is absent or holds other headers (it
//! can also vanish under a build: cargo reuses this crate's compiled library for a second checkout
//! that shares the target directory, so the path compiled in may be another checkout's).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

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
    (
        "hip/detail/rtc_std.h",
        include_str!("../include/nvidia/hip/detail/rtc_std.h"),
    ),
    (
        "rtc/algorithm",
        include_str!("../include/nvidia/rtc/algorithm"),
    ),
    (
        "rtc/assert.h",
        include_str!("../include/nvidia/rtc/assert.h"),
    ),
    ("rtc/cassert", include_str!("../include/nvidia/rtc/cassert")),
    ("rtc/cfloat", include_str!("../include/nvidia/rtc/cfloat")),
    ("rtc/climits", include_str!("../include/nvidia/rtc/climits")),
    ("rtc/cmath", include_str!("../include/nvidia/rtc/cmath")),
    ("rtc/cstddef", include_str!("../include/nvidia/rtc/cstddef")),
    ("rtc/cstdint", include_str!("../include/nvidia/rtc/cstdint")),
    ("rtc/cstdio", include_str!("../include/nvidia/rtc/cstdio")),
    ("rtc/float.h", include_str!("../include/nvidia/rtc/float.h")),
    ("rtc/limits", include_str!("../include/nvidia/rtc/limits")),
    (
        "rtc/limits.h",
        include_str!("../include/nvidia/rtc/limits.h"),
    ),
    ("rtc/math.h", include_str!("../include/nvidia/rtc/math.h")),
    (
        "rtc/stddef.h",
        include_str!("../include/nvidia/rtc/stddef.h"),
    ),
    (
        "rtc/stdint.h",
        include_str!("../include/nvidia/rtc/stdint.h"),
    ),
    ("rtc/stdio.h", include_str!("../include/nvidia/rtc/stdio.h")),
];

/// `include/cpu`, file by file (path under the folder, contents).
const CPU: &[(&str, &str)] = &[
    (
        "hip/detail/abi.h",
        include_str!("../include/cpu/hip/detail/abi.h"),
    ),
    (
        "hip/detail/amd.h",
        include_str!("../include/cpu/hip/detail/amd.h"),
    ),
    (
        "hip/detail/atomics.h",
        include_str!("../include/cpu/hip/detail/atomics.h"),
    ),
    (
        "hip/detail/bits.h",
        include_str!("../include/cpu/hip/detail/bits.h"),
    ),
    (
        "hip/detail/entry.h",
        include_str!("../include/cpu/hip/detail/entry.h"),
    ),
    (
        "hip/detail/math.h",
        include_str!("../include/cpu/hip/detail/math.h"),
    ),
    (
        "hip/detail/region.h",
        include_str!("../include/cpu/hip/detail/region.h"),
    ),
    (
        "hip/detail/vector_types.h",
        include_str!("../include/cpu/hip/detail/vector_types.h"),
    ),
    (
        "hip/detail/warp.h",
        include_str!("../include/cpu/hip/detail/warp.h"),
    ),
    (
        "hip/hip_bf16.h",
        include_str!("../include/cpu/hip/hip_bf16.h"),
    ),
    (
        "hip/hip_cooperative_groups.h",
        include_str!("../include/cpu/hip/hip_cooperative_groups.h"),
    ),
    (
        "hip/hip_fp16.h",
        include_str!("../include/cpu/hip/hip_fp16.h"),
    ),
    (
        "hip/hip_runtime.h",
        include_str!("../include/cpu/hip/hip_runtime.h"),
    ),
];

/// `include/cpu` in this crate's source tree as it was compiled (it may be gone: see [`cpu_dir`]).
pub fn cpu_source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include/cpu")
}

/// The folder to pass to the host C++ compiler as `-I` for the cpu backend's
/// `#include <hip/hip_runtime.h>`.
pub fn cpu_dir() -> std::io::Result<PathBuf> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    once(&DIR, "cpu", CPU)
}

/// The folder to pass to nvcc or NVRTC as `-I` for `#include <hip/hip_runtime.h>`.
pub fn nvidia_dir() -> std::io::Result<PathBuf> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    once(&DIR, "nvidia", NVIDIA)
}

/// [`source_or_materialized`], found once per process (callers ask for it per source line).
fn once(
    cell: &OnceLock<Result<PathBuf, String>>,
    name: &str,
    files: &[(&str, &str)],
) -> std::io::Result<PathBuf> {
    cell.get_or_init(|| source_or_materialized(name, files).map_err(|e| e.to_string()))
        .clone()
        .map_err(std::io::Error::other)
}

/// `include/<name>` of the source tree when it holds exactly the embedded headers, else a copy
/// of them written by [`materialize`].
fn source_or_materialized(name: &str, files: &[(&str, &str)]) -> std::io::Result<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("include")
        .join(name);
    if files
        .iter()
        .all(|(rel, text)| std::fs::read_to_string(source.join(rel)).is_ok_and(|t| t == *text))
    {
        return Ok(source);
    }
    materialize(name, files)
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
        assert!(super::cpu_dir().unwrap().ends_with("include/cpu"));
    }

    /// Every header of the source tree is embedded (a header added to `include/` but not to
    /// the lists would be missing wherever the copy is used).
    #[test]
    fn the_embedded_lists_hold_every_header() {
        fn files(dir: &std::path::Path, base: &std::path::Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    files(&path, base, out);
                } else {
                    out.push(path.strip_prefix(base).unwrap().display().to_string());
                }
            }
        }
        for (name, list) in [("cpu", super::CPU), ("nvidia", super::NVIDIA)] {
            let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("include")
                .join(name);
            let mut on_disk = Vec::new();
            files(&base, &base, &mut on_disk);
            on_disk.sort();
            let mut embedded: Vec<String> = list.iter().map(|(r, _)| r.to_string()).collect();
            embedded.sort();
            assert_eq!(
                on_disk, embedded,
                "include/{name} and the list in headers.rs differ"
            );
        }
    }
}
