//! Choosing a build for a request or a pin, and installing a pinned toolchain that is missing.

use std::path::Path;

use rocm_toolkit::home::family::{families_for_target, family_covers};
use rocm_toolkit::home::{Channel, HomeError, Resolved, ToolchainPin};

use crate::dist::{self, DistFile, Selector};
use crate::error::{Error, Result};
use crate::gpu;
use crate::install::{Event, InstallOptions, InstallReport, Installer};

/// Set (to anything but `0` or empty) to stop cargo-rocm installing a missing pinned toolchain.
pub const NO_AUTO_INSTALL_ENV: &str = "CARGO_ROCM_NO_AUTO_INSTALL";

/// Acceptable tarball families, preferred first, for a `--family`, `--target`s, or (neither)
/// the GPUs found under `gpu_nodes` (normally [`gpu::KFD_NODES`]).
pub fn families_for(
    family: Option<&str>,
    targets: &[String],
    gpu_nodes: &Path,
) -> Result<Vec<String>> {
    if let Some(f) = family {
        return Ok(vec![f.to_string()]);
    }
    let targets = if targets.is_empty() {
        let found = gpu::detect_gfx_targets(gpu_nodes);
        if found.is_empty() {
            return Err(Error::NoFamily {
                reason: "no AMD GPU detected on this machine".into(),
            });
        }
        found
    } else {
        targets.to_vec()
    };
    let families: Vec<String> = families_for_target(&targets[0])
        .into_iter()
        .filter(|f| targets.iter().all(|t| family_covers(f, t)))
        .collect();
    if families.is_empty() {
        return Err(Error::NoFamily {
            reason: format!(
                "no single tarball family covers all of {}",
                targets.join(", ")
            ),
        });
    }
    Ok(families)
}

/// The index pages to read: `override_urls` (comma-separated), else [`dist::INDEX_URL_ENV`],
/// else TheRock's for `channel` (every channel when `None`).
pub fn index_urls(channel: Option<Channel>, override_urls: Option<&str>) -> Vec<String> {
    let env = std::env::var(dist::INDEX_URL_ENV).ok();
    if let Some(list) = override_urls
        .or(env.as_deref())
        .filter(|s| !s.trim().is_empty())
    {
        return list
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
    }
    let channels: &[Channel] = match channel {
        Some(c) => &[c][..],
        None => &Channel::ALL[..],
    };
    channels
        .iter()
        .flat_map(|c| dist::default_index_urls(*c).iter().map(|s| s.to_string()))
        .collect()
}

/// The published build a pin asks for.
pub fn select_for_pin(
    installer: &Installer,
    pin: &ToolchainPin,
    index_override: Option<&str>,
    events: &mut dyn FnMut(Event<'_>),
) -> Result<DistFile> {
    let channel = pin.version.as_ref().map(|v| v.channel()).or(pin.channel);
    let urls = index_urls(channel, index_override);
    let files = installer.fetch_index(&urls, events)?;
    let selector = Selector {
        platform: dist::host_platform().to_string(),
        families: families_for(
            pin.family.as_deref(),
            &pin.targets,
            Path::new(gpu::KFD_NODES),
        )?,
        version: pin.version.clone(),
        channel: pin.channel,
    };
    selector
        .select(&files)
        .cloned()
        .ok_or_else(|| Error::NoMatchingBuild {
            wanted: selector.describe(),
            indexes: urls.join(", "),
        })
}

fn auto_install_disabled() -> bool {
    std::env::var(NO_AUTO_INSTALL_ENV).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// [`rocm_toolkit::home::Home::resolve`], installing a pinned toolchain that is missing
/// (unless [`NO_AUTO_INSTALL_ENV`] is set). Returns the install's report when one happened.
pub fn resolve_or_install(
    installer: &Installer,
    start_dir: &Path,
    env_selection: Option<&str>,
    index_override: Option<&str>,
    events: &mut dyn FnMut(Event<'_>),
) -> Result<(Resolved, Option<InstallReport>)> {
    match installer.home().resolve(start_dir, env_selection) {
        Err(HomeError::PinnedNotInstalled { pin_file, pin }) => {
            if auto_install_disabled() {
                return Err(Error::AutoInstallDisabled {
                    pin_file,
                    pin: pin.to_string(),
                });
            }
            let file = select_for_pin(installer, &pin, index_override, events)?;
            let report = installer.install_dist(&file, &InstallOptions::default(), events)?;
            let resolved = installer.home().resolve(start_dir, env_selection)?;
            Ok((resolved, Some(report)))
        }
        other => Ok((other?, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_from_flags_targets_or_gpu() {
        let none = Path::new("/nonexistent-kfd");
        assert_eq!(
            families_for(Some("gfx94X-dcgpu"), &[], none).unwrap(),
            ["gfx94X-dcgpu"]
        );
        assert_eq!(
            families_for(None, &["gfx90a".into()], none).unwrap(),
            ["gfx90a", "gfx90X-dcgpu"]
        );
        assert_eq!(
            families_for(None, &["gfx908".into(), "gfx90a".into()], none).unwrap(),
            ["gfx90X-dcgpu"]
        );
        assert!(families_for(None, &["gfx90a".into(), "gfx942".into()], none).is_err());
        let err = families_for(None, &[], none).unwrap_err();
        assert!(err.to_string().contains("--target"), "{err}");
    }

    #[test]
    fn index_urls_follow_channel_or_override() {
        assert_eq!(
            index_urls(Some(Channel::Release), Some("http://a/, http://b/")),
            ["http://a/", "http://b/"]
        );
        if std::env::var_os(dist::INDEX_URL_ENV).is_none() {
            assert_eq!(index_urls(Some(Channel::Nightly), None).len(), 2);
            assert_eq!(index_urls(None, None).len(), 4);
        }
    }
}
