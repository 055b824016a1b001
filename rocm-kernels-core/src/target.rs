//! AMD GPU target ids (`gfx90a:sramecc+:xnack-`) as clang writes them, and which code runs on
//! which device: the one target type of the build, the runtime and the harness.

use std::fmt;

use serde::Serialize;

/// A processor plus the target features it was compiled with, e.g. `gfx90a:xnack-`.
///
/// A feature that is absent means "any" (the code runs whether the feature is on or off).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct TargetId {
    /// `gfx90a`, `gfx1030`, `gfx10-3-generic`, ...
    pub processor: String,
    /// In the order written.
    pub features: Vec<TargetFeature>,
}

/// One `name+` / `name-` of a target id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct TargetFeature {
    /// `xnack`, `sramecc`, ...
    pub name: String,
    /// `true` for `+`, `false` for `-`.
    pub enabled: bool,
}

impl TargetId {
    /// Parse `processor(:feature(+|-))*`. Returns `None` unless the processor is an AMDGPU one
    /// (`gfx…`) and every feature ends in `+` or `-`.
    ///
    /// ```
    /// use rocm_kernels_core::TargetId;
    /// let t = TargetId::parse("gfx90a:xnack-").unwrap();
    /// assert_eq!(t.processor, "gfx90a");
    /// assert_eq!(t.feature("xnack"), Some(false));
    /// ```
    pub fn parse(text: &str) -> Option<TargetId> {
        let mut parts = text.trim().split(':');
        let processor = parts.next()?;
        // AMDGPU processors: `gfx90a`, `gfx1030`, and generic ones such as `gfx10-3-generic`.
        let valid = processor.len() > 3
            && processor.starts_with("gfx")
            && processor[3..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if !valid {
            return None;
        }
        let features = parts
            .map(|f| {
                let (name, enabled) = if let Some(name) = f.strip_suffix('+') {
                    (name, true)
                } else {
                    (f.strip_suffix('-')?, false)
                };
                (!name.is_empty()).then(|| TargetFeature {
                    name: name.to_owned(),
                    enabled,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(TargetId {
            processor: processor.to_owned(),
            features,
        })
    }

    /// `Some(true)` for `name+`, `Some(false)` for `name-`, `None` when not specified ("any").
    pub fn feature(&self, name: &str) -> Option<bool> {
        self.features
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.enabled)
    }
}

impl fmt::Display for TargetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.processor)?;
        for feat in &self.features {
            write!(f, ":{}{}", feat.name, if feat.enabled { '+' } else { '-' })?;
        }
        Ok(())
    }
}

impl TargetId {
    /// Whether code compiled for `self` runs on a device whose target id is `device`: same
    /// processor, and every feature `self` fixes is set the same way on the device (a feature
    /// the device does not report is assumed compatible).
    ///
    /// ```
    /// use rocm_kernels_core::TargetId;
    /// let device = TargetId::parse("gfx90a:sramecc+:xnack-").unwrap();
    /// assert!(TargetId::parse("gfx90a").unwrap().runs_on(&device));
    /// assert!(TargetId::parse("gfx90a:xnack-").unwrap().runs_on(&device));
    /// assert!(!TargetId::parse("gfx90a:xnack+").unwrap().runs_on(&device));
    /// assert!(!TargetId::parse("gfx942").unwrap().runs_on(&device));
    /// ```
    pub fn runs_on(&self, device: &TargetId) -> bool {
        self.processor == device.processor
            && self
                .features
                .iter()
                .all(|f| device.feature(&f.name).is_none_or(|on| on == f.enabled))
    }

    /// Of `candidates`, the one whose code a `device` should load: a compatible one that fixes
    /// the most features (a `gfx90a:xnack-` build beats a generic `gfx90a` one on an `xnack-`
    /// device, as HIP's own loader chooses).
    pub fn best_for<'a, T>(
        device: &TargetId,
        candidates: impl IntoIterator<Item = (T, &'a TargetId)>,
    ) -> Option<T> {
        candidates
            .into_iter()
            .filter(|(_, t)| t.runs_on(device))
            .max_by_key(|(_, t)| t.features.len())
            .map(|(c, _)| c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_id_with_features_round_trips() {
        let t = TargetId::parse("gfx90a:sramecc+:xnack-").unwrap();
        assert_eq!(t.processor, "gfx90a");
        assert_eq!(t.feature("sramecc"), Some(true));
        assert_eq!(t.feature("xnack"), Some(false));
        assert_eq!(t.feature("wavefrontsize64"), None);
        assert_eq!(t.to_string(), "gfx90a:sramecc+:xnack-");
        assert_eq!(
            TargetId::parse("gfx10-3-generic").unwrap().processor,
            "gfx10-3-generic"
        );
    }

    #[test]
    fn malformed_target_ids_are_rejected() {
        assert_eq!(TargetId::parse(""), None);
        assert_eq!(TargetId::parse("not-an-arch"), None);
        assert_eq!(TargetId::parse("sm_90"), None);
        assert_eq!(TargetId::parse(":xnack+"), None);
        assert_eq!(TargetId::parse("gfx90a:xnack"), None);
        assert_eq!(TargetId::parse("gfx90a:+"), None);
    }

    #[test]
    fn the_most_specific_compatible_target_is_chosen() {
        let device = TargetId::parse("gfx90a:sramecc+:xnack-").unwrap();
        let targets: Vec<TargetId> = ["gfx1030", "gfx90a", "gfx90a:xnack-", "gfx90a:xnack+"]
            .iter()
            .map(|t| TargetId::parse(t).unwrap())
            .collect();
        let best = TargetId::best_for(&device, targets.iter().enumerate());
        assert_eq!(best, Some(2));
        let none = TargetId::parse("gfx942").unwrap();
        assert_eq!(TargetId::best_for(&none, targets.iter().enumerate()), None);
    }
}
