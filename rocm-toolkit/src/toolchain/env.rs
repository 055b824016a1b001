//! The environment variables that point ROCm tools (hipcc, CMake's HIP support, our own build
//! helper) at one toolchain.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use super::{CompilerKind, Toolchain};

/// Folders already on every `PATH`: prepending them would only reorder the user's `PATH`.
const SYSTEM_BIN_DIRS: &[&str] = &["/usr/bin", "/bin", "/usr/local/bin"];

/// Environment for one toolchain: variables to set, and folders to put in front of `PATH`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolchainEnv {
    /// `(name, value)` in this order, each present only when the toolchain has it:
    /// `ROCM_PATH`, `HIP_PATH`, `HIP_CLANG_PATH`, `HIP_DEVICE_LIB_PATH`, `DEVICE_LIB_PATH`.
    pub vars: Vec<(String, PathBuf)>,
    /// Folders to put in front of `PATH`, first wins. Standard system folders are left out.
    pub path_prepend: Vec<PathBuf>,
}

impl ToolchainEnv {
    pub(crate) fn for_toolchain(tc: &Toolchain) -> Self {
        let mut vars = vec![
            ("ROCM_PATH".to_owned(), tc.root.clone()),
            ("HIP_PATH".to_owned(), tc.root.clone()),
        ];
        // hipcc runs `$HIP_CLANG_PATH/clang++` (Debian's: `clang++-15` in it), so this is the
        // folder of the preferred clang.
        let clang_dir = tc
            .compiler_of_kind(CompilerKind::Clang)
            .and_then(|c| c.path.parent())
            .map(Path::to_path_buf);
        if let Some(dir) = &clang_dir {
            vars.push(("HIP_CLANG_PATH".to_owned(), dir.clone()));
        }
        if let Some(dir) = &tc.device_lib_path {
            // HIP_DEVICE_LIB_PATH is hipcc's name; DEVICE_LIB_PATH older tools'.
            vars.push(("HIP_DEVICE_LIB_PATH".to_owned(), dir.clone()));
            vars.push(("DEVICE_LIB_PATH".to_owned(), dir.clone()));
        }
        let mut path_prepend: Vec<PathBuf> = Vec::new();
        for dir in [Some(tc.root.join("bin")), clang_dir].into_iter().flatten() {
            let system = SYSTEM_BIN_DIRS.iter().any(|s| Path::new(s) == dir);
            if dir.is_dir() && !system && !path_prepend.contains(&dir) {
                path_prepend.push(dir);
            }
        }
        ToolchainEnv { vars, path_prepend }
    }

    /// The value `PATH` should have: [`ToolchainEnv::path_prepend`] then `current`.
    pub fn path_with(&self, current: Option<&std::ffi::OsStr>) -> OsString {
        let mut dirs: Vec<PathBuf> = self.path_prepend.clone();
        if let Some(current) = current {
            dirs.extend(std::env::split_paths(current).filter(|d| !self.path_prepend.contains(d)));
        }
        std::env::join_paths(dirs).unwrap_or_default()
    }

    /// Set these variables (and the extended `PATH`) on a command about to run.
    pub fn apply(&self, command: &mut Command) {
        for (name, value) in &self.vars {
            command.env(name, value);
        }
        if !self.path_prepend.is_empty() {
            command.env("PATH", self.path_with(std::env::var_os("PATH").as_deref()));
        }
    }
}
