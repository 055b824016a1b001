//! `$CARGO_ROCM_HOME/settings.toml`: the default toolchain and per-directory overrides.
//!
//! ```toml
//! default = "therock-7.0.0-gfx94X-dcgpu"
//!
//! [overrides]
//! "/home/me/project" = "system"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The contents of `settings.toml`. A missing file is the default value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// The toolchain used when nothing more specific selects one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Directory (absolute, canonical) → toolchain name; applies to the directory and below.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overrides: BTreeMap<PathBuf, String>,
}

impl Settings {
    /// The override for `dir` or its nearest ancestor that has one: (that directory, name).
    pub fn override_for(&self, dir: &Path) -> Option<(&Path, &str)> {
        dir.ancestors().find_map(|a| {
            self.overrides
                .get_key_value(a)
                .map(|(k, v)| (k.as_path(), v.as_str()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_override_wins() {
        let text = r#"
default = "a"
[overrides]
"/p" = "outer"
"/p/q" = "inner"
"#;
        let s: Settings = toml::from_str(text).unwrap();
        assert_eq!(s.default.as_deref(), Some("a"));
        assert_eq!(
            s.override_for(Path::new("/p/q/r")),
            Some((Path::new("/p/q"), "inner"))
        );
        assert_eq!(
            s.override_for(Path::new("/p/x")).map(|o| o.1),
            Some("outer")
        );
        assert_eq!(s.override_for(Path::new("/other")), None);
        let back: Settings = toml::from_str(&toml::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }
}
