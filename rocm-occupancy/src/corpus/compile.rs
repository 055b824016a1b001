//! Compiling a corpus unit with clang, device code only, into a plain linked AMDGPU ELF
//! (`--no-gpu-bundle-output`: no offload bundler needed; the link needs lld), keeping the
//! compiler's remarks. Results are cached by a hash of the compiler version, the flags and the
//! source, so a second run of the comparison compiles nothing.

use std::path::Path;
use std::process::Command;

use sha2::{Digest, Sha256};

/// A compiled unit.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The AMDGPU ELF.
    pub object: Vec<u8>,
    /// The compiler's stderr: the `kernel-resource-usage` remarks.
    pub stderr: String,
    /// Whether it came from the cache.
    pub cached: bool,
}

/// The first line of `clang --version`, or `None` when it does not run.
pub fn clang_version(clang: &str) -> Option<String> {
    let out = Command::new(clang).arg("--version").output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .map(str::to_owned)
}

/// Compile `source` with `flags` (those of a [`Config`](super::Config)), caching the object and
/// the remarks in `cache` by content hash.
pub fn compile(
    clang: &str,
    version: &str,
    source: &str,
    flags: &[String],
    cache: &Path,
) -> Result<Compiled, String> {
    let joined = flags.join(" ");
    let mut hash = Sha256::new();
    for part in [version, &joined, source] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    let key: String = hash.finalize()[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let object_path = cache.join(format!("{key}.o"));
    let log_path = cache.join(format!("{key}.stderr"));
    if let (Ok(object), Ok(stderr)) = (
        std::fs::read(&object_path),
        std::fs::read_to_string(&log_path),
    ) {
        return Ok(Compiled {
            object,
            stderr,
            cached: true,
        });
    }
    std::fs::create_dir_all(cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let src = cache.join(format!("{key}.hip"));
    std::fs::write(&src, source).map_err(|e| format!("{}: {e}", src.display()))?;
    let tmp = cache.join(format!("{key}.o.tmp{}", std::process::id()));
    let out = Command::new(clang)
        .args(["-x", "hip", "--cuda-device-only", "-nogpulib", "-O2"])
        .args([
            "--no-gpu-bundle-output",
            "-c",
            "-Rpass-analysis=kernel-resource-usage",
        ])
        .arg("-Wno-inline-asm")
        .args(flags)
        .arg(&src)
        .arg("-o")
        .arg(&tmp)
        .output()
        .map_err(|e| format!("cannot run {clang}: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
        return Err(format!(
            "{clang} {joined} {} failed:\n{}",
            src.display(),
            errors.join("\n")
        ));
    }
    let object = std::fs::read(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::write(&log_path, &stderr).map_err(|e| format!("{}: {e}", log_path.display()))?;
    std::fs::rename(&tmp, &object_path).map_err(|e| format!("{}: {e}", object_path.display()))?;
    Ok(Compiled {
        object,
        stderr,
        cached: false,
    })
}
