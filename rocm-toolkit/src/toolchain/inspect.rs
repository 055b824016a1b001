//! Inspecting one install prefix: version, HIP compilers, device libraries, HIP runtime.

use std::path::{Path, PathBuf};

use super::targets::{sort_targets, target_of_device_lib_file};
use super::{CompilerKind, HipCompiler, MissingTool, Toolchain, ToolchainSource};
use crate::process::{is_executable, probe, version_line};

/// Inspect one install prefix (`/opt/rocm-6.2.0`, `/usr`, a pip `_rocm_sdk_core` folder, a
/// managed toolchain) and describe it, or `None` when nothing under `root` looks like ROCm
/// (no HIP compiler, device library, HIP runtime or version file).
///
/// This runs the compilers it finds with `--version` (and, for a distribution's `clang++-N`,
/// `--print-targets` to check for the AMDGPU backend), so it takes a fraction of a second.
///
/// ```no_run
/// use rocm_toolkit::toolchain::{inspect, ToolchainSource};
/// if let Some(tc) = inspect("/opt/rocm".as_ref(), ToolchainSource::Opt) {
///     println!("{} {:?} builds for {:?}", tc.name, tc.version, tc.device_lib_targets);
/// }
/// ```
pub fn inspect(root: &Path, source: ToolchainSource) -> Option<Toolchain> {
    if !root.is_dir() {
        return None;
    }
    let mut notes = Vec::new();
    let version = read_version(root);
    let compilers = find_compilers(root, &mut notes);
    let device_lib_path = find_device_lib_dir(root);
    let device_lib_targets = device_lib_path
        .as_deref()
        .map(device_lib_targets)
        .unwrap_or_default();
    let hip_runtime_lib = find_hip_runtime(root);

    // A bare upstream clang under /usr is not a ROCm install: require something HIP-specific.
    let has_hipcc = compilers.iter().any(|c| c.kind == CompilerKind::Hipcc);
    let rocm_clang = compilers
        .iter()
        .any(|c| c.kind == CompilerKind::Clang && !is_distro_clang(root, &c.path));
    if version.is_none()
        && device_lib_path.is_none()
        && hip_runtime_lib.is_none()
        && !has_hipcc
        && !rocm_clang
    {
        return None;
    }
    if compilers.is_empty() {
        notes.push(format!(
            "no HIP compiler under {} (looked for lib/llvm/bin/clang++, llvm/bin/clang++, \
             an AMDGPU-capable clang++-N, bin/hipcc)",
            root.display()
        ));
    }
    if device_lib_path.is_none() {
        notes.push(format!(
            "no device libraries (oclc_isa_version_*.bc) under {}",
            root.display()
        ));
    }
    Some(Toolchain {
        name: toolchain_name(root, &source, version.as_deref()),
        root: root.to_path_buf(),
        source,
        version,
        compilers,
        device_lib_path,
        device_lib_targets,
        hip_runtime_lib,
        notes,
    })
}

fn toolchain_name(root: &Path, source: &ToolchainSource, version: Option<&str>) -> String {
    match source {
        ToolchainSource::Managed { name } => name.clone(),
        ToolchainSource::Distro => "system".to_owned(),
        ToolchainSource::Pip => match version {
            Some(v) => format!("pip-{v}"),
            None => "pip".to_owned(),
        },
        ToolchainSource::Opt | ToolchainSource::EnvVar { .. } | ToolchainSource::Path => root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| root.display().to_string()),
    }
}

/// The version, from the first source that has one: `.info/version*` (ROCm's release number),
/// `share/hip/version` (HIP's), a pip wheel's `.dist-info` folder, `bin/hipconfig --version`.
pub(crate) fn read_version(root: &Path) -> Option<String> {
    info_version(root)
        .or_else(|| hip_version_file(&root.join("share/hip/version")))
        .or_else(|| dist_info_version(root))
        .or_else(|| hipconfig_version(root))
}

fn info_version(root: &Path) -> Option<String> {
    let info = root.join(".info");
    // `version` first, then `version-dev`, `version-hip-sdk`...: sorted gives that order.
    let mut files: Vec<PathBuf> = std::fs::read_dir(&info)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("version"))
        })
        .collect();
    files.sort();
    files
        .iter()
        .find_map(|f| first_line(&std::fs::read_to_string(f).ok()?))
}

fn first_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}

/// `share/hip/version` is a `KEY=VALUE` file; render it as `hipconfig --version` does:
/// `MAJOR.MINOR.PATCH[-GITHASH]`.
pub(crate) fn hip_version_file(path: &Path) -> Option<String> {
    parse_hip_version(&std::fs::read_to_string(path).ok()?)
}

pub(crate) fn parse_hip_version(text: &str) -> Option<String> {
    let get = |key: &str| {
        text.lines()
            .filter_map(|l| l.split_once('='))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim().to_owned())
    };
    let major = get("HIP_VERSION_MAJOR")?;
    let minor = get("HIP_VERSION_MINOR")?;
    let patch = get("HIP_VERSION_PATCH").unwrap_or_else(|| "0".to_owned());
    let mut version = format!("{major}.{minor}.{patch}");
    if let Some(hash) = get("HIP_VERSION_GITHASH").filter(|h| !h.is_empty()) {
        version.push('-');
        version.push_str(&hash);
    }
    Some(version)
}

/// A pip ROCm SDK lives in `site-packages/_rocm_sdk_core`; its version is in the name of the
/// sibling `rocm_sdk_core-<version>.dist-info` folder.
fn dist_info_version(root: &Path) -> Option<String> {
    let package = root.file_name()?.to_str()?.trim_start_matches('_');
    let parent = root.parent()?;
    std::fs::read_dir(parent)
        .ok()?
        .filter_map(|e| e.ok())
        .find_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let rest = name.strip_suffix(".dist-info")?;
            let (pkg, version) = rest.split_once('-')?;
            (pkg.replace('-', "_") == package).then(|| version.to_owned())
        })
}

fn hipconfig_version(root: &Path) -> Option<String> {
    let hipconfig = root.join("bin/hipconfig");
    if !is_executable(&hipconfig) {
        return None;
    }
    first_line(&probe(&hipconfig, &["--version"]).ok()?)
}

/// HIP compilers under `root`, preferred first: ROCm's own clang, then a distribution's
/// AMDGPU-capable `clang++-N` (newest first), then `hipcc`.
fn find_compilers(root: &Path, notes: &mut Vec<String>) -> Vec<HipCompiler> {
    let mut compilers = Vec::new();
    for rel in ["lib/llvm/bin/clang++", "llvm/bin/clang++"] {
        let path = root.join(rel);
        if is_executable(&path) {
            compilers.push(HipCompiler {
                kind: CompilerKind::Clang,
                version: version_line(&path),
                missing: missing_tools(&path),
                path,
            });
            break; // `llvm` is a link to `lib/llvm` in ROCm 6: one is enough.
        }
    }
    for (major, path) in distro_clangs(root) {
        match probe(&path, &["--print-targets"]) {
            Ok(targets) if targets.contains("amdgcn") => compilers.push(HipCompiler {
                kind: CompilerKind::Clang,
                version: version_line(&path),
                missing: missing_tools(&path),
                path,
            }),
            Ok(_) => notes.push(format!(
                "{} (LLVM {major}) was built without the AMDGPU backend; skipped",
                path.display()
            )),
            Err(e) => notes.push(format!("{} did not run ({e}); skipped", path.display())),
        }
    }
    let hipcc = root.join("bin/hipcc");
    if is_executable(&hipcc) {
        compilers.push(HipCompiler {
            kind: CompilerKind::Hipcc,
            // Not run: hipcc is often a perl script that starts clang to answer (about a second),
            // and it reports the HIP version, which is the toolchain's `version` anyway.
            version: None,
            // hipcc finds its own clang (HIP_CLANG_PATH, its package's LLVM); a broken one
            // shows in the build's (and doctor's) test compile.
            missing: Vec::new(),
            path: hipcc,
        });
    }
    compilers
}

/// The programs a clang runs for `-x hip --cuda-device-only` with several `--offload-arch`s that
/// it cannot find: `ld.lld` links each target's code object, `clang-offload-bundler` bundles
/// them, and the bundler runs `llvm-objcopy`. The clang itself is asked where it finds the first
/// two (`-print-prog-name` searches exactly where the driver will: `-B` folders, the clang's own
/// folder, then `PATH`); `llvm-objcopy` is looked for where the bundler looks (beside the bundler,
/// then `PATH`). Empty for `hipcc`, which finds its own clang. A clang that does not answer is
/// reported as missing them, which is what a build with it would find.
pub fn missing_tools(compiler: &Path) -> Vec<MissingTool> {
    let is_hipcc = compiler
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("hipcc"));
    if is_hipcc {
        return Vec::new();
    }
    let real = std::fs::canonicalize(compiler).unwrap_or_else(|_| compiler.to_path_buf());
    let dir = real.parent().map(Path::to_path_buf).unwrap_or_default();
    // Debian and Ubuntu (and apt.llvm.org) put LLVM N in /usr/lib/llvm-N, split into packages.
    let llvm_major = dir
        .parent()
        .and_then(|p| p.file_name()?.to_str()?.strip_prefix("llvm-"))
        .filter(|n| n.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_owned);
    let missing = |tool: &str, package: &str, dir: &Path| MissingTool {
        tool: tool.to_owned(),
        dir: dir.to_path_buf(),
        package: llvm_major.as_ref().map(|n| format!("{package}-{n}")),
    };
    let found = |tool: &str| -> Option<PathBuf> {
        let out = probe(compiler, &[&format!("-print-prog-name={tool}")]).ok()?;
        // Found: an absolute path. Not found: clang echoes the bare name back.
        let path = PathBuf::from(out.trim());
        (path.is_absolute() && is_executable(&path)).then_some(path)
    };
    let mut out = Vec::new();
    if found("ld.lld").is_none() {
        out.push(missing("ld.lld", "lld", &dir));
    }
    match found("clang-offload-bundler") {
        None => out.push(missing("clang-offload-bundler", "clang-tools", &dir)),
        Some(bundler) => {
            let bundler_dir = bundler.parent().map(Path::to_path_buf).unwrap_or_default();
            let objcopy = std::fs::canonicalize(&bundler_dir)
                .unwrap_or_else(|_| bundler_dir.clone())
                .join("llvm-objcopy");
            if !is_executable(&objcopy) && crate::process::which("llvm-objcopy").is_none() {
                out.push(missing("llvm-objcopy", "llvm", &bundler_dir));
            }
        }
    }
    out
}

/// Debian/Ubuntu ship LLVM N as `lib/llvm-N/bin/clang++` with a `bin/clang++-N` link. Report
/// the `bin/clang++-N` name when it exists (it is what people type and what Debian's hipcc
/// looks for next to itself), newest LLVM first.
fn distro_clangs(root: &Path) -> Vec<(u32, PathBuf)> {
    let mut found: Vec<(u32, PathBuf)> = Vec::new();
    let lib = root.join("lib");
    if let Ok(entries) = std::fs::read_dir(&lib) {
        for entry in entries.filter_map(|e| e.ok()) {
            let name = entry.file_name();
            let Some(major) = name
                .to_str()
                .and_then(|n| n.strip_prefix("llvm-"))
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let linked = root.join(format!("bin/clang++-{major}"));
            let inner = entry.path().join("bin/clang++");
            if is_executable(&linked) {
                found.push((major, linked));
            } else if is_executable(&inner) {
                found.push((major, inner));
            }
        }
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found
}

fn is_distro_clang(root: &Path, path: &Path) -> bool {
    distro_clangs(root).iter().any(|(_, p)| p == path)
}

/// Folders that may hold device libraries, in ROCm's historical order of preference.
const DEVICE_LIB_PATTERNS: &[&str] = &[
    "amdgcn/bitcode",
    "lib/llvm/amdgcn/bitcode",
    "llvm/amdgcn/bitcode",
    "lib/llvm/lib/clang/*/lib/amdgcn/bitcode",
    "llvm/lib/clang/*/lib/amdgcn/bitcode",
    "lib/amdgcn/bitcode",
    "lib/*-linux-*/amdgcn/bitcode",
    "lib/llvm-*/lib/clang/*/amdgcn/bitcode",
    "lib/llvm-*/lib/clang/*/lib/amdgcn/bitcode",
];

/// The device-library folder under `root`. When several exist (a distro with device libraries
/// for two LLVM versions), the one covering the most targets wins; ties go to the earlier
/// pattern.
fn find_device_lib_dir(root: &Path) -> Option<PathBuf> {
    let escaped = glob::Pattern::escape(&root.to_string_lossy());
    let mut best: Option<(usize, PathBuf)> = None;
    for pattern in DEVICE_LIB_PATTERNS {
        let Ok(paths) = glob::glob(&format!("{escaped}/{pattern}")) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = paths.filter_map(|p| p.ok()).collect();
        dirs.sort();
        dirs.reverse(); // newest LLVM or clang version first
        for dir in dirs {
            let count = device_lib_targets(&dir).len();
            let has_ocml = dir.join("ocml.bc").is_file();
            if count == 0 && !has_ocml {
                continue;
            }
            if best.as_ref().is_none_or(|(n, _)| count > *n) {
                best = Some((count, dir));
            }
        }
    }
    best.map(|(_, dir)| dir)
}

/// The gfx targets covered by the `oclc_isa_version_*.bc` files in `dir`, sorted.
pub fn device_lib_targets(dir: &Path) -> Vec<String> {
    let mut targets: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| target_of_device_lib_file(e.file_name().to_str()?))
                .collect()
        })
        .unwrap_or_default();
    sort_targets(&mut targets);
    targets.dedup();
    targets
}

/// `libamdhip64.so*` in `lib`, `lib64` or a multiarch `lib/<triple>` folder; the unversioned
/// development link first, else the shortest (least specific) name.
fn find_hip_runtime(root: &Path) -> Option<PathBuf> {
    let escaped = glob::Pattern::escape(&root.to_string_lossy());
    for dir_pattern in ["lib", "lib64", "lib/*-linux-*"] {
        let Ok(paths) = glob::glob(&format!("{escaped}/{dir_pattern}/libamdhip64.so*")) else {
            continue;
        };
        let mut libs: Vec<PathBuf> = paths.filter_map(|p| p.ok()).collect();
        libs.sort_by_key(|p| (p.as_os_str().len(), p.clone()));
        if let Some(lib) = libs.into_iter().next() {
            return Some(lib);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hip_version_file_renders_like_hipconfig() {
        let debian = "# Auto-generated by cmake\nHIP_VERSION_MAJOR=5\nHIP_VERSION_MINOR=2\n\
                      HIP_VERSION_PATCH=21153\nHIP_VERSION_GITHASH=\n";
        assert_eq!(parse_hip_version(debian).as_deref(), Some("5.2.21153"));
        let upstream = "HIP_VERSION_MAJOR=6\nHIP_VERSION_MINOR=2\nHIP_VERSION_PATCH=41133\n\
                        HIP_VERSION_GITHASH=dd7f95766\n";
        assert_eq!(
            parse_hip_version(upstream).as_deref(),
            Some("6.2.41133-dd7f95766")
        );
        assert_eq!(parse_hip_version("garbage\n"), None);
    }
}
