//! Searching the usual places for ROCm installs.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{inspect, version_numbers, Toolchain, ToolchainSource};
use crate::process::python_sys_path;

/// Folder names a pip-installed ROCm SDK (TheRock's `rocm-sdk-core` wheel) uses in
/// site-packages.
const PIP_PACKAGES: &[&str] = &["_rocm_sdk_core", "rocm_sdk_core"];

/// Where [`discover_with`] looks. [`DiscoverOptions::default`] (same as
/// [`DiscoverOptions::from_env`]) is this machine's real places; tests start from
/// [`DiscoverOptions::none`] and point single fields at fixture trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoverOptions {
    /// The value of `ROCM_PATH`, searched first.
    pub rocm_path: Option<PathBuf>,
    /// The value of `HIP_PATH` (older installs point it at `<rocm>/hip`; the parent is used then).
    pub hip_path: Option<PathBuf>,
    /// Folder holding `rocm` and `rocm-X.Y.Z` (normally `/opt`).
    pub opt_dir: Option<PathBuf>,
    /// A distribution's prefix (normally `/usr`).
    pub system_prefix: Option<PathBuf>,
    /// A Python to ask for its `sys.path`, to find pip-installed ROCm SDKs (normally `python3`).
    pub python: Option<PathBuf>,
    /// More site-packages folders to scan for pip-installed ROCm SDKs.
    pub site_dirs: Vec<PathBuf>,
}

impl Default for DiscoverOptions {
    fn default() -> Self {
        Self::from_env()
    }
}

impl DiscoverOptions {
    /// This machine's places: `ROCM_PATH` and `HIP_PATH` from the environment (empty values
    /// ignored), `/opt`, `/usr`, and `python3`'s `sys.path`.
    pub fn from_env() -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        DiscoverOptions {
            rocm_path: var("ROCM_PATH"),
            hip_path: var("HIP_PATH"),
            opt_dir: Some(PathBuf::from("/opt")),
            system_prefix: Some(PathBuf::from("/usr")),
            python: Some(PathBuf::from("python3")),
            site_dirs: Vec::new(),
        }
    }

    /// Nowhere at all: set the fields to search.
    pub fn none() -> Self {
        DiscoverOptions {
            rocm_path: None,
            hip_path: None,
            opt_dir: None,
            system_prefix: None,
            python: None,
            site_dirs: Vec::new(),
        }
    }
}

/// Every ROCm install found, in search order, without duplicates, plus notes on what was
/// skipped and why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Discovery {
    /// The installs, in search order (`ROCM_PATH`/`HIP_PATH`, `/opt`, `/usr`, pip).
    pub toolchains: Vec<Toolchain>,
    /// Things a person may want to know: a `ROCM_PATH` that is not a ROCm install, a second
    /// path to an install already listed, a Python that could not be asked.
    pub notes: Vec<String>,
}

impl Discovery {
    /// The toolchain to use when nothing else is said: one named by `ROCM_PATH`/`HIP_PATH` if
    /// it can compile; else, of those that can compile (a compiler and device libraries), the
    /// newest version, earlier in search order on a tie; else the first one found.
    pub fn best(&self) -> Option<&Toolchain> {
        let usable = || self.toolchains.iter().filter(|t| t.can_compile());
        usable()
            .find(|t| matches!(t.source, ToolchainSource::EnvVar { .. }))
            .or_else(|| {
                // max_by_key keeps the last maximum; iterate in reverse so ties keep the first.
                usable()
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .max_by_key(|t| t.version_numbers())
            })
            .or_else(|| self.toolchains.first())
    }

    /// The toolchain whose root is `root` (compared after resolving links).
    pub fn find_root(&self, root: &Path) -> Option<&Toolchain> {
        let wanted = canonical(root);
        self.toolchains
            .iter()
            .find(|t| canonical(&t.root) == wanted)
    }
}

/// Search this machine: `ROCM_PATH`, `HIP_PATH`, `/opt/rocm` (link followed), `/opt/rocm-*`
/// (newest first), `/usr`, and pip-installed ROCm SDKs on `python3`'s `sys.path`.
pub fn discover() -> Discovery {
    discover_with(&DiscoverOptions::from_env())
}

/// Search the places `options` names, in the order of [`discover`].
pub fn discover_with(options: &DiscoverOptions) -> Discovery {
    let mut search = Search::default();
    // Asking Python for sys.path takes half a second behind a pyenv shim: do it meanwhile.
    let python = options.python.clone().map(|python| {
        std::thread::spawn(move || {
            python_sys_path(&python).map_err(|e| {
                format!(
                    "could not ask {} for its sys.path to look for a pip-installed ROCm SDK: {e}",
                    python.display()
                )
            })
        })
    });

    if let Some(path) = &options.rocm_path {
        search.env_var("ROCM_PATH", path);
    }
    if let Some(path) = &options.hip_path {
        // ROCm ≤ 5 set HIP_PATH to `<rocm>/hip`, which holds only part of the install.
        let root = match path.parent() {
            Some(parent) if path.ends_with("hip") && parent.join("bin").is_dir() => parent,
            _ => path.as_path(),
        };
        search.env_var("HIP_PATH", root);
    }
    if let Some(opt) = &options.opt_dir {
        search.opt(opt);
    }
    if let Some(prefix) = &options.system_prefix {
        search.add(prefix, ToolchainSource::Distro, false);
    }
    let mut site_dirs = options.site_dirs.clone();
    if let Some(python) = python {
        match python.join() {
            Ok(Ok(dirs)) => site_dirs.extend(dirs),
            Ok(Err(note)) => search.found.notes.push(note),
            Err(_) => search
                .found
                .notes
                .push("the thread asking Python for sys.path panicked".to_owned()),
        }
    }
    for dir in site_dirs {
        for package in PIP_PACKAGES {
            let root = dir.join(package);
            if root.is_dir() {
                search.add(&root, ToolchainSource::Pip, true);
            }
        }
    }
    search.found
}

#[derive(Default)]
struct Search {
    found: Discovery,
    seen: Vec<PathBuf>,
}

impl Search {
    fn env_var(&mut self, var: &str, root: &Path) {
        if !root.is_dir() {
            self.found.notes.push(format!(
                "{var}={} is not a folder; unset it or point it at a ROCm install",
                root.display()
            ));
            return;
        }
        let source = ToolchainSource::EnvVar {
            var: var.to_owned(),
        };
        if !self.add(root, source, true) {
            self.found.notes.push(format!(
                "{var}={} does not look like a ROCm install (no HIP compiler, device \
                 libraries, libamdhip64 or version file under it)",
                root.display()
            ));
        }
    }

    fn opt(&mut self, opt: &Path) {
        self.add(&opt.join("rocm"), ToolchainSource::Opt, false);
        let Ok(entries) = std::fs::read_dir(opt) else {
            return;
        };
        let mut versioned: Vec<(Vec<u64>, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let version = name.strip_prefix("rocm-")?;
                Some((version_numbers(version), e.path()))
            })
            .collect();
        versioned.sort_by(|a, b| b.cmp(a));
        for (_, path) in versioned {
            self.add(&path, ToolchainSource::Opt, true);
        }
    }

    /// Inspect `root` unless an install with the same canonical path is listed. Returns whether
    /// `root` is (now or already) a listed toolchain.
    fn add(&mut self, root: &Path, source: ToolchainSource, note_duplicate: bool) -> bool {
        if !root.is_dir() {
            return false;
        }
        let canonical = canonical(root);
        if let Some(i) = self.seen.iter().position(|s| *s == canonical) {
            if note_duplicate {
                self.found.notes.push(format!(
                    "{} is the same install as {}",
                    root.display(),
                    self.found.toolchains[i].root.display()
                ));
            }
            return true;
        }
        // Inspect the resolved path so `/opt/rocm` reports where it really is.
        match inspect(&canonical, source) {
            Some(toolchain) => {
                self.seen.push(canonical);
                self.found.toolchains.push(toolchain);
                true
            }
            None => false,
        }
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}
