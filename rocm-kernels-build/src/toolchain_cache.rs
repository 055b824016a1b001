//! Which ROCm toolchain the `amd` backend uses, remembered between build-script runs.
//!
//! [`rocm_toolkit::toolchain::discover`] inspects installs by running their compilers (`--version`) and
//! python (pip SDKs); a build script that reruns with nothing to compile must not start any of
//! that. So the choice is stored under OUT_DIR with what it depended on (`ROCM_PATH`,
//! `HIP_PATH`, and the size and mtime of `/opt`, `/usr/bin`, the install's root, its compilers
//! and device libraries) and reused while all of that is unchanged: installing or removing a
//! toolchain changes one of those folders and triggers a new discovery.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cache::{write_atomic, Stat};
use crate::settings::EnvReader;
use rocm_toolkit::toolchain::{CompilerKind, MissingTool, Toolchain};

/// 2: compilers record the programs they lack.
const FORMAT: u32 = 2;

/// The parts of a [`Toolchain`] a build needs (serializable, unlike `Toolchain`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ToolchainInfo {
    pub name: String,
    pub root: PathBuf,
    pub version: Option<String>,
    /// Preferred first.
    pub compilers: Vec<CompilerInfo>,
    pub device_lib_path: Option<PathBuf>,
    /// Sorted gfx names the device libraries cover; empty when unknown.
    pub device_lib_targets: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CompilerInfo {
    pub hipcc: bool,
    pub path: PathBuf,
    /// What it cannot find ([`rocm_toolkit::toolchain::HipCompiler::missing`]).
    #[serde(default)]
    pub missing: Vec<MissingTool>,
}

impl CompilerInfo {
    pub(crate) fn kind(&self) -> CompilerKind {
        if self.hipcc {
            CompilerKind::Hipcc
        } else {
            CompilerKind::Clang
        }
    }

    /// A compiler named by path: `hipcc*` is hipcc, anything else a clang++, asked what it
    /// lacks (the answer kept in `cache` while the compiler and its folder are unchanged).
    pub(crate) fn from_path(path: PathBuf, cache: &Path) -> CompilerInfo {
        let hipcc = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("hipcc"));
        let missing = super::cache::ProbeCache::get_or_run(cache, &path, "missing-tools", || {
            let missing = rocm_toolkit::toolchain::missing_tools(&path);
            // A program appearing where it is missing must be seen.
            let watch = missing.iter().map(|m| m.dir.clone()).collect();
            let answer = serde_json::to_string(&missing).expect("missing tools serialize");
            Ok((answer, watch))
        })
        .ok()
        .and_then(|answer| serde_json::from_str(&answer).ok())
        // A compiler that cannot be asked is reported by the compile that uses it.
        .unwrap_or_default();
        CompilerInfo {
            hipcc,
            path,
            missing,
        }
    }
}

impl From<&Toolchain> for ToolchainInfo {
    fn from(t: &Toolchain) -> Self {
        ToolchainInfo {
            name: t.name.clone(),
            root: t.root.clone(),
            version: t.version.clone(),
            compilers: t
                .compilers
                .iter()
                .map(|c| CompilerInfo {
                    hipcc: c.kind == CompilerKind::Hipcc,
                    path: c.path.clone(),
                    missing: c.missing.clone(),
                })
                .collect(),
            device_lib_path: t.device_lib_path.clone(),
            device_lib_targets: t.device_lib_targets.clone(),
        }
    }
}

/// What the stored choice depended on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stored {
    format: u32,
    env: Vec<(String, Option<String>)>,
    watched: Vec<(PathBuf, Option<Stat>)>,
    toolchain: Option<ToolchainInfo>,
}

/// What the resolver reads: `CARGO_ROCM_HOME`, `CARGO_ROCM_TOOLCHAIN`, `HOME`, `ROCM_PATH`,
/// `HIP_PATH`.
fn env_values(env: &EnvReader) -> Vec<(String, Option<String>)> {
    rocm_toolkit::home::RESOLUTION_ENV_VARS
        .iter()
        .map(|v| (v.to_string(), env.get(v)))
        .collect()
}

fn stat(p: &Path) -> Option<Stat> {
    Stat::of(p).ok()
}

/// The toolchain to build with: the stored choice if nothing it depended on changed, else
/// what `discover` picks (stored for next time). `None` when no install can compile HIP.
/// `also_watch` are files whose appearance, change or removal must trigger a new choice
/// (pin files, the home's settings).
pub(crate) fn find(
    env: &EnvReader,
    store: &Path,
    also_watch: &[PathBuf],
    discover: impl FnOnce() -> Option<Toolchain>,
) -> Option<ToolchainInfo> {
    let env_now = env_values(env);
    if let Some(s) = std::fs::read_to_string(store)
        .ok()
        .and_then(|t| serde_json::from_str::<Stored>(&t).ok())
    {
        let unchanged = s.format == FORMAT
            && s.env == env_now
            && s.watched.iter().all(|(p, st)| stat(p) == *st);
        if unchanged {
            return s.toolchain;
        }
    }
    let toolchain = discover().map(|t| ToolchainInfo::from(&t));
    let mut watched: Vec<PathBuf> = vec!["/opt".into(), "/usr/bin".into()];
    watched.extend(also_watch.iter().cloned());
    for (_, v) in &env_now {
        if let Some(v) = v {
            watched.push(v.into());
        }
    }
    if let Some(t) = &toolchain {
        watched.push(t.root.clone());
        watched.extend(t.compilers.iter().map(|c| c.path.clone()));
        // Where a compiler looks for what it lacks: installing it there must be seen.
        for c in &t.compilers {
            watched.extend(c.missing.iter().map(|m| m.dir.clone()));
        }
        watched.extend(t.device_lib_path.clone());
    }
    let stored = Stored {
        format: FORMAT,
        env: env_now,
        watched: watched.into_iter().map(|p| (p.clone(), stat(&p))).collect(),
        toolchain: toolchain.clone(),
    };
    // Not being able to remember only costs a discovery next time.
    let _ = write_atomic(
        store,
        serde_json::to_string_pretty(&stored)
            .expect("toolchain choice serializes")
            .as_bytes(),
    );
    toolchain
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocm_toolkit::toolchain::{HipCompiler, ToolchainSource};

    fn toolchain(root: &Path) -> Toolchain {
        Toolchain {
            name: "test".into(),
            root: root.to_path_buf(),
            source: ToolchainSource::Distro,
            version: Some("5.2.3".into()),
            compilers: vec![HipCompiler {
                kind: CompilerKind::Hipcc,
                path: root.join("bin/hipcc"),
                version: None,
                missing: vec![],
            }],
            device_lib_path: Some(root.join("bitcode")),
            device_lib_targets: vec!["gfx90a".into()],
            hip_runtime_lib: None,
            notes: vec![],
        }
    }

    #[test]
    fn discovery_runs_once_until_the_install_changes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        std::fs::write(dir.path().join("bin/hipcc"), "v1").unwrap();
        let out = tempfile::tempdir().unwrap();
        let store = out.path().join("toolchain.json");
        let env = EnvReader::default();
        let pin = dir.path().join("rocm-toolchain.toml");
        let watch = [pin.clone()];
        let first = find(&env, &store, &watch, || Some(toolchain(dir.path()))).unwrap();
        assert!(first.compilers[0].hipcc);
        let again = find(&env, &store, &watch, || panic!("must not discover again")).unwrap();
        assert_eq!(again, first);
        // A new compiler binary: discover again.
        std::fs::write(dir.path().join("bin/hipcc"), "version two").unwrap();
        let mut ran = false;
        find(&env, &store, &watch, || {
            ran = true;
            Some(toolchain(dir.path()))
        });
        assert!(ran);
        // A pin file appears: choose again.
        std::fs::write(&pin, "[toolchain]\nversion = \"6.2\"\n").unwrap();
        let mut ran = false;
        find(&env, &store, &watch, || {
            ran = true;
            Some(toolchain(dir.path()))
        });
        assert!(ran, "a new pin file must trigger a new choice");
        assert!(env.names().contains(&"ROCM_PATH".to_string()));
    }

    #[test]
    fn compiler_kind_from_name() {
        let out = tempfile::tempdir().unwrap();
        let cache = out.path().join("probes.json");
        assert!(CompilerInfo::from_path("/usr/bin/hipcc".into(), &cache).hipcc);
        assert!(!CompilerInfo::from_path("/opt/rocm/lib/llvm/bin/clang++".into(), &cache).hipcc);
    }
}
