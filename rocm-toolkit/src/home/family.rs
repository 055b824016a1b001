//! GPU families as TheRock names its tarballs, and which gfx targets each one covers.
//!
//! TheRock has published two layouts. The older one has one tarball per *family*
//! (`therock-dist-linux-gfx94X-dcgpu-7.0.0rc20250818.tar.gz`); the newer multi-arch one has one
//! per *target* for single-chip families (`...-gfx90a-...`, `...-gfx1151-...`) and bundles for
//! the rest (`...-gfx120X-all-...`). [`families_for_target`] lists every name that can serve a
//! target, preferred first, so a selection works against either index.

/// A family and the gfx targets its tarball carries device libraries for.
struct Family {
    name: &'static str,
    targets: &'static [&'static str],
}

/// Known family names. Single-target names (`gfx90a`, `gfx1151`) are not listed: a target's
/// own name is always a candidate.
const FAMILIES: &[Family] = &[
    Family {
        name: "gfx90X-dcgpu",
        targets: &["gfx908", "gfx90a"],
    },
    Family {
        name: "gfx94X-dcgpu",
        targets: &["gfx940", "gfx941", "gfx942"],
    },
    Family {
        name: "gfx950-dcgpu",
        targets: &["gfx950"],
    },
    Family {
        name: "gfx101X-dgpu",
        targets: &["gfx1010", "gfx1011", "gfx1012"],
    },
    Family {
        name: "gfx103X-dgpu",
        targets: &["gfx1030", "gfx1031", "gfx1032", "gfx1034"],
    },
    Family {
        name: "gfx103X-all",
        targets: &[
            "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036",
        ],
    },
    Family {
        name: "gfx110X-dgpu",
        targets: &["gfx1100", "gfx1101", "gfx1102"],
    },
    Family {
        name: "gfx110X-all",
        targets: &["gfx1100", "gfx1101", "gfx1102", "gfx1103"],
    },
    Family {
        name: "gfx115X-all",
        targets: &["gfx1150", "gfx1151", "gfx1152", "gfx1153"],
    },
    Family {
        name: "gfx120X-all",
        targets: &["gfx1200", "gfx1201"],
    },
];

/// Strip feature suffixes (`gfx90a:sramecc+:xnack-` → `gfx90a`) and lower-case the target.
pub fn normalize_target(target: &str) -> String {
    target
        .split(':')
        .next()
        .unwrap_or(target)
        .trim()
        .to_ascii_lowercase()
}

/// Every tarball family that can serve `target`, preferred first: the target's own name
/// (multi-arch layout), then the narrowest family, then wider bundles.
///
/// ```
/// use rocm_toolkit::home::family::families_for_target;
/// assert_eq!(families_for_target("gfx942"), ["gfx942", "gfx94X-dcgpu"]);
/// assert_eq!(families_for_target("gfx1100"), ["gfx1100", "gfx110X-dgpu", "gfx110X-all"]);
/// ```
pub fn families_for_target(target: &str) -> Vec<String> {
    let target = normalize_target(target);
    let mut out = vec![target.clone()];
    out.extend(
        FAMILIES
            .iter()
            .filter(|f| f.targets.contains(&target.as_str()))
            .map(|f| f.name.to_string()),
    );
    out
}

/// Whether the tarball family `family` carries code for `target`.
pub fn family_covers(family: &str, target: &str) -> bool {
    families_for_target(target).iter().any(|f| f == family)
}

/// The gfx targets a family name covers, if it is known (a single-target name covers itself).
pub fn targets_of_family(family: &str) -> Vec<String> {
    match FAMILIES.iter().find(|f| f.name == family) {
        Some(f) => f.targets.iter().map(|t| t.to_string()).collect(),
        None if family.starts_with("gfx") && !family.contains(['X', '-']) => {
            vec![family.to_string()]
        }
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_targets_to_both_layouts() {
        assert_eq!(families_for_target("gfx90a"), ["gfx90a", "gfx90X-dcgpu"]);
        assert_eq!(
            families_for_target("gfx90a:sramecc+:xnack-"),
            ["gfx90a", "gfx90X-dcgpu"]
        );
        assert_eq!(families_for_target("gfx1151"), ["gfx1151", "gfx115X-all"]);
        assert_eq!(families_for_target("gfx1201"), ["gfx1201", "gfx120X-all"]);
        assert_eq!(
            families_for_target("gfx1030"),
            ["gfx1030", "gfx103X-dgpu", "gfx103X-all"]
        );
        assert_eq!(families_for_target("gfx1103"), ["gfx1103", "gfx110X-all"]);
        // Unknown targets still get their own name.
        assert_eq!(families_for_target("gfx9999"), ["gfx9999"]);
    }

    #[test]
    fn coverage() {
        assert!(family_covers("gfx94X-dcgpu", "gfx942"));
        assert!(family_covers("gfx90a", "gfx90a"));
        assert!(!family_covers("gfx94X-dcgpu", "gfx90a"));
        assert_eq!(targets_of_family("gfx120X-all"), ["gfx1200", "gfx1201"]);
        assert_eq!(targets_of_family("gfx1151"), ["gfx1151"]);
        assert!(targets_of_family("gfx999X-none").is_empty());
    }
}
