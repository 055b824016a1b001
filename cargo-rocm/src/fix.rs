//! The commands that fix a missing piece, worded for this machine: `apt-get` lines where
//! apt exists (with `sudo` unless we are root), a documentation link otherwise.

use std::path::Path;

/// Where AMD documents installing ROCm on Linux.
pub const ROCM_INSTALL_DOCS: &str =
    "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/";

/// Debian/Ubuntu packages that make a working ROCm toolchain for cargo-rocm (Debian 12+,
/// Ubuntu 24.04+ ship them).
pub const ROCM_APT_PACKAGES: &[&str] =
    &["hipcc", "libamdhip64-dev", "rocm-device-libs", "rocminfo"];

/// `sudo apt-get install -y <packages>` (no `sudo` for root), or `None` without apt-get.
pub fn apt_install(packages: &[&str]) -> Option<String> {
    if !has_program("apt-get") {
        return None;
    }
    let sudo = if is_root() { "" } else { "sudo " };
    Some(format!("{sudo}apt-get install -y {}", packages.join(" ")))
}

/// The apt line for `packages`, or `otherwise` where there is no apt.
pub fn install_or(packages: &[&str], otherwise: &str) -> String {
    apt_install(packages).unwrap_or_else(|| otherwise.to_owned())
}

fn has_program(name: &str) -> bool {
    rocm_toolkit::process::which(name).is_some()
}

/// Whether this process runs as root (effective uid 0), read from `/proc/self/status` so no
/// libc binding is needed.
pub fn is_root() -> bool {
    std::fs::read_to_string(Path::new("/proc/self/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

/// How to get a ROCm toolchain on this machine.
pub fn rocm_install() -> String {
    install_or(
        ROCM_APT_PACKAGES,
        &format!("install ROCm ({ROCM_INSTALL_DOCS}) or set ROCM_PATH to an install"),
    )
}
