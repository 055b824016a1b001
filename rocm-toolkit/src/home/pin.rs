//! `rocm-toolchain.toml`: a project's pinned ROCm toolchain, found by walking up from the
//! crate's directory (like `rust-toolchain.toml`).
//!
//! ```toml
//! [toolchain]
//! version = "7.0.0rc20250818"   # or: channel = "nightly" | name = "my-rocm" | path = "/opt/rocm-6.4.1"
//! family = "gfx94X-dcgpu"       # or: targets = ["gfx942"]
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::family::family_covers;
use super::version::{Channel, Version};
use super::HomeError;

/// The pin file's name.
pub const PIN_FILE_NAME: &str = "rocm-toolchain.toml";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PinFileToml {
    toolchain: ToolchainPin,
}

/// What a pin file asks for. Exactly one of `version`, `channel`, `name` and `path` is set;
/// `family` and `targets` narrow `version` and `channel`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolchainPin {
    /// An exact TheRock version, e.g. `7.0.0rc20250818`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<Version>,
    /// The newest installed build of a channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<Channel>,
    /// An installed or linked toolchain, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A ROCm install prefix; relative paths are relative to the pin file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// A TheRock GPU family, e.g. `gfx94X-dcgpu` or `gfx1151`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// gfx targets the toolchain must cover, e.g. `["gfx942"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
}

/// A parsed pin file and where it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinFile {
    /// The `rocm-toolchain.toml`.
    pub path: PathBuf,
    /// Its `[toolchain]` table, a relative `path` already made absolute.
    pub pin: ToolchainPin,
}

impl PinFile {
    /// Read and validate a pin file.
    pub fn read(path: &Path) -> Result<PinFile, HomeError> {
        let text = std::fs::read_to_string(path).map_err(|e| HomeError::io(path, e))?;
        Self::parse(path, &text)
    }

    /// Parse pin file text; `path` is used for messages and to anchor a relative `path`.
    pub fn parse(path: &Path, text: &str) -> Result<PinFile, HomeError> {
        let bad = |message: String| HomeError::BadPinFile {
            path: path.to_path_buf(),
            message,
        };
        let parsed: PinFileToml = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        let mut pin = parsed.toolchain;
        let selectors = [
            pin.version.is_some(),
            pin.channel.is_some(),
            pin.name.is_some(),
            pin.path.is_some(),
        ]
        .iter()
        .filter(|s| **s)
        .count();
        if selectors != 1 {
            return Err(bad(
                "[toolchain] needs exactly one of `version`, `channel`, `name` or `path`".into(),
            ));
        }
        if (pin.name.is_some() || pin.path.is_some())
            && (pin.family.is_some() || !pin.targets.is_empty())
        {
            return Err(bad(
                "`family` and `targets` narrow `version` or `channel`; they cannot be used with `name` or `path`".into(),
            ));
        }
        if let (Some(family), false) = (&pin.family, pin.targets.is_empty()) {
            if let Some(t) = pin.targets.iter().find(|t| !family_covers(family, t)) {
                return Err(bad(format!(
                    "family `{family}` does not cover target `{t}`"
                )));
            }
        }
        if let Some(p) = &pin.path {
            if p.is_relative() {
                let base = path.parent().unwrap_or(Path::new("."));
                pin.path = Some(base.join(p));
            }
        }
        Ok(PinFile {
            path: path.to_path_buf(),
            pin,
        })
    }

    /// The nearest pin file in `start` or its ancestors.
    pub fn find(start: &Path) -> Result<Option<PinFile>, HomeError> {
        for dir in start.ancestors() {
            let candidate = dir.join(PIN_FILE_NAME);
            if candidate.is_file() {
                return Self::read(&candidate).map(Some);
            }
        }
        Ok(None)
    }
}

impl ToolchainPin {
    /// Whether a TheRock build of `family` suits this pin's `family`/`targets`.
    pub fn family_matches(&self, family: &str) -> bool {
        self.family.as_deref().is_none_or(|f| f == family)
            && self.targets.iter().all(|t| family_covers(family, t))
    }
}

impl fmt::Display for ToolchainPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(v) = &self.version {
            write!(f, "version {v}")?;
        } else if let Some(c) = &self.channel {
            write!(f, "the newest {c} build")?;
        } else if let Some(n) = &self.name {
            write!(f, "toolchain `{n}`")?;
        } else if let Some(p) = &self.path {
            write!(f, "path {}", p.display())?;
        }
        if let Some(fam) = &self.family {
            write!(f, " for {fam}")?;
        }
        if !self.targets.is_empty() {
            write!(f, " for {}", self.targets.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<PinFile, HomeError> {
        PinFile::parse(Path::new("/proj/rocm-toolchain.toml"), text)
    }

    #[test]
    fn reads_each_selector() {
        let p = parse("[toolchain]\nversion = \"7.0.0rc20250818\"\nfamily = \"gfx94X-dcgpu\"\n")
            .unwrap();
        assert_eq!(p.pin.version.as_ref().unwrap().as_str(), "7.0.0rc20250818");
        assert!(p.pin.family_matches("gfx94X-dcgpu"));
        assert!(!p.pin.family_matches("gfx90a"));
        let p = parse("[toolchain]\nchannel = \"nightly\"\ntargets = [\"gfx90a\"]\n").unwrap();
        assert_eq!(p.pin.channel, Some(Channel::Nightly));
        assert!(p.pin.family_matches("gfx90a") && p.pin.family_matches("gfx90X-dcgpu"));
        assert!(!p.pin.family_matches("gfx94X-dcgpu"));
        let p = parse("[toolchain]\npath = \"vendor/rocm\"\n").unwrap();
        assert_eq!(p.pin.path.unwrap(), Path::new("/proj/vendor/rocm"));
        assert_eq!(
            parse("[toolchain]\nname = \"debian\"\n")
                .unwrap()
                .pin
                .to_string(),
            "toolchain `debian`"
        );
    }

    #[test]
    fn rejects_ambiguous_or_malformed_pins() {
        for bad in [
            "[toolchain]\n",
            "[toolchain]\nversion = \"7.0.0\"\nchannel = \"nightly\"\n",
            "[toolchain]\nname = \"x\"\nfamily = \"gfx90a\"\n",
            "[toolchain]\nversion = \"seven\"\n",
            "[toolchain]\nchannel = \"beta\"\n",
            "[toolchain]\nversion = \"7.0.0\"\nfamily = \"gfx94X-dcgpu\"\ntargets = [\"gfx90a\"]\n",
            "[toolchain]\nversion = \"7.0.0\"\nflavour = \"x\"\n",
            "version = \"7.0.0\"\n",
        ] {
            let err = parse(bad).unwrap_err();
            assert!(
                err.to_string().contains("/proj/rocm-toolchain.toml"),
                "{err}"
            );
        }
    }
}
