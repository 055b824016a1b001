//! `toolchains/<name>/.cargo-rocm-toolchain.toml`: what cargo-rocm knows about a toolchain it
//! installed or linked. Written before the install's final rename, so a toolchain folder
//! without it is not one of ours.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::version::{Channel, Version};
use super::HomeError;

/// The metadata file's name inside a toolchain folder.
pub const METADATA_FILE: &str = ".cargo-rocm-toolchain.toml";

/// How a toolchain came to be in the home.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InstallKind {
    /// Unpacked from an archive into the toolchain folder.
    Archive,
    /// An existing install elsewhere (`toolchain link`, or distribution packages); the folder
    /// holds only this metadata.
    Linked,
}

/// Where an archive came from, as downloaded: enough to audit or repeat the download.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveRecord {
    /// The URL, or `file://` + the path of a local archive.
    pub url: String,
    /// Bytes.
    pub size: u64,
    /// Lower-case hex sha256 of the archive bytes.
    pub sha256: String,
    /// Whether `sha256` was checked against a published or given checksum (`false`: only computed).
    pub sha256_verified: bool,
    /// The server's `ETag` for the archive, when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
}

/// What a TheRock file name said about the build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DistInfo {
    /// The ROCm version, e.g. `7.0.0rc20250818`.
    pub version: Version,
    /// The channel it was published on.
    pub channel: Channel,
    /// e.g. `gfx94X-dcgpu`, `gfx90a`.
    pub family: String,
    /// e.g. `linux`.
    pub platform: String,
}

/// The whole metadata file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolchainMetadata {
    /// The toolchain's name, as its folder is named.
    pub name: String,
    /// Unpacked here, or linked to an install elsewhere.
    pub kind: InstallKind,
    /// For [`InstallKind::Linked`]: the install prefix it points at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<PathBuf>,
    /// Seconds since the Unix epoch.
    pub installed_at: u64,
    /// The TheRock build it is, when known (from the archive's file name); what pins match on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dist: Option<DistInfo>,
    /// The archive it was unpacked from, for [`InstallKind::Archive`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveRecord>,
}

impl ToolchainMetadata {
    /// Read `dir`'s metadata; `Ok(None)` when the folder has none (not ours).
    pub fn read(dir: &Path) -> Result<Option<ToolchainMetadata>, HomeError> {
        let path = dir.join(METADATA_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(HomeError::io(&path, e)),
        };
        toml::from_str(&text)
            .map(Some)
            .map_err(|e| HomeError::BadMetadata {
                path,
                message: e.to_string(),
            })
    }

    /// Write it into `dir` (a folder being prepared under `tmp/`, or a linked toolchain's).
    pub fn write(&self, dir: &Path) -> Result<(), HomeError> {
        let path = dir.join(METADATA_FILE);
        let text = toml::to_string(self).map_err(|e| HomeError::BadMetadata {
            path: path.clone(),
            message: e.to_string(),
        })?;
        std::fs::write(&path, text).map_err(|e| HomeError::io(&path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let m = ToolchainMetadata {
            name: "therock-7.0.0-gfx90a".into(),
            kind: InstallKind::Archive,
            root: None,
            installed_at: 1,
            dist: Some(DistInfo {
                version: "7.0.0".parse().unwrap(),
                channel: Channel::Release,
                family: "gfx90a".into(),
                platform: "linux".into(),
            }),
            archive: Some(ArchiveRecord {
                url: "http://x/y.tar.gz".into(),
                size: 3,
                sha256: "ab".into(),
                sha256_verified: true,
                etag: Some("\"e\"".into()),
            }),
        };
        assert_eq!(ToolchainMetadata::read(dir.path()).unwrap(), None);
        m.write(dir.path()).unwrap();
        assert_eq!(ToolchainMetadata::read(dir.path()).unwrap(), Some(m));
    }
}
