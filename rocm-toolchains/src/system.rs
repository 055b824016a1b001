//! ROCm from the distribution's packages: which command installs it, and whether we may run it.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::error::{Error, Result};

/// Debian and Ubuntu: the compiler driver, HIP headers and runtime, device libraries, rocminfo.
pub const DEBIAN_PACKAGES: &[&str] = &["hipcc", "libamdhip64-dev", "rocm-device-libs", "rocminfo"];
/// Fedora's names for the same.
pub const FEDORA_PACKAGES: &[&str] = &["hipcc", "rocm-hip-devel", "rocm-device-libs", "rocminfo"];

/// How this process may get root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Privilege {
    /// Already root.
    Root,
    /// Through `sudo`.
    Sudo,
    /// Neither: the command cannot be run from here.
    None,
}

/// The command that installs ROCm from distribution packages here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SystemPlan {
    /// `debian`, `ubuntu`, `fedora`, ... (`ID` in /etc/os-release).
    pub distro: String,
    /// The ROCm packages to install, by the distribution's names.
    pub packages: Vec<String>,
    /// The full command, `sudo` included when needed.
    pub command: Vec<String>,
    /// How the command gets root.
    pub privilege: Privilege,
    /// Where the packages install to; linked as the `system` toolchain afterwards.
    pub prefix: PathBuf,
}

impl SystemPlan {
    /// The command as one shell-ready line.
    pub fn command_line(&self) -> String {
        self.command.join(" ")
    }

    /// For this machine: /etc/os-release, the effective user, and `sudo` on PATH.
    pub fn detect(assume_yes: bool) -> Result<SystemPlan> {
        let os_release = std::fs::read_to_string("/etc/os-release")
            .or_else(|_| std::fs::read_to_string("/usr/lib/os-release"))
            .map_err(|_| Error::System {
                message: "cannot read /etc/os-release to tell which distribution this is; install ROCm yourself and use `cargo rocm toolchain link NAME PREFIX`".into(),
            })?;
        let privilege = if effective_uid() == Some(0) {
            Privilege::Root
        } else if find_in_path("sudo").is_some() {
            Privilege::Sudo
        } else {
            Privilege::None
        };
        Self::plan(&os_release, privilege, assume_yes)
    }

    /// The plan for a distribution described by `os_release` text.
    pub fn plan(os_release: &str, privilege: Privilege, assume_yes: bool) -> Result<SystemPlan> {
        let field = |key: &str| {
            os_release.lines().find_map(|l| {
                l.strip_prefix(key)?
                    .strip_prefix('=')
                    .map(|v| v.trim().trim_matches('"').to_string())
            })
        };
        let id = field("ID").unwrap_or_default();
        let like = field("ID_LIKE").unwrap_or_default();
        let family: Vec<&str> = std::iter::once(id.as_str())
            .chain(like.split_whitespace())
            .collect();
        let (tool, packages): (&[&str], &[&str]) = if family
            .iter()
            .any(|f| matches!(*f, "debian" | "ubuntu"))
        {
            (&["apt-get", "install"], DEBIAN_PACKAGES)
        } else if family.iter().any(|f| matches!(*f, "fedora" | "rhel")) {
            (&["dnf", "install"], FEDORA_PACKAGES)
        } else {
            return Err(Error::System {
                message: format!(
                    "distribution `{id}` is not supported for `install system` (Debian, Ubuntu and Fedora are); install its ROCm packages yourself and run `cargo rocm toolchain link system /usr`, or install a TheRock build with `cargo rocm toolchain install`"
                ),
            });
        };
        let mut command = Vec::new();
        if privilege == Privilege::Sudo {
            command.push("sudo".to_string());
        }
        command.extend(tool.iter().map(|s| s.to_string()));
        if assume_yes {
            command.push("-y".into());
        }
        command.extend(packages.iter().map(|s| s.to_string()));
        Ok(SystemPlan {
            distro: id,
            packages: packages.iter().map(|s| s.to_string()).collect(),
            command,
            privilege,
            prefix: PathBuf::from("/usr"),
        })
    }

    /// Run the command with the terminal attached (the package manager may ask questions).
    pub fn run(&self) -> Result<()> {
        if self.privilege == Privilege::None {
            return Err(Error::System {
                message: format!(
                    "installing distribution packages needs root, and this process is not root and has no `sudo`; run as root: {}",
                    self.command_line()
                ),
            });
        }
        let status = Command::new(&self.command[0])
            .args(&self.command[1..])
            .status()
            .map_err(|e| Error::System {
                message: format!("cannot run `{}`: {e}", self.command_line()),
            })?;
        if !status.success() {
            return Err(Error::CommandFailed {
                command: self.command_line(),
                status: status.to_string(),
            });
        }
        Ok(())
    }
}

/// The effective user id, from /proc (no libc needed); `None` where /proc is absent.
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

fn find_in_path(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOOKWORM: &str =
        "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nID=debian\n";
    const NOBLE: &str = "NAME=\"Ubuntu\"\nID=ubuntu\nID_LIKE=debian\n";

    #[test]
    fn debian_family_uses_apt() {
        let p = SystemPlan::plan(BOOKWORM, Privilege::Root, false).unwrap();
        assert_eq!(
            p.command_line(),
            "apt-get install hipcc libamdhip64-dev rocm-device-libs rocminfo"
        );
        let p = SystemPlan::plan(NOBLE, Privilege::Sudo, true).unwrap();
        assert_eq!(
            p.command_line(),
            "sudo apt-get install -y hipcc libamdhip64-dev rocm-device-libs rocminfo"
        );
        let p = SystemPlan::plan("ID=fedora\n", Privilege::Root, false).unwrap();
        assert_eq!(p.command[0], "dnf");
    }

    #[test]
    fn unsupported_or_unprivileged_is_a_clear_error() {
        let err = SystemPlan::plan("ID=alpine\n", Privilege::Root, false).unwrap_err();
        assert!(err.to_string().contains("toolchain link"), "{err}");
        let p = SystemPlan::plan(BOOKWORM, Privilege::None, false).unwrap();
        let err = p.run().unwrap_err();
        assert!(err.to_string().contains("needs root"), "{err}");
    }

    #[test]
    fn reads_own_uid() {
        assert!(effective_uid().is_some());
    }
}
