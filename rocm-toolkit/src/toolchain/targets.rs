//! gfx target names and the device-library files that cover them.
//!
//! ROCm's device libraries ship one `oclc_isa_version_<N>.bc` per processor, where `<N>` is the
//! gfx name without its `gfx` prefix (`gfx90a` ↔ `oclc_isa_version_90a.bc`, `gfx1030` ↔
//! `oclc_isa_version_1030.bc`). Compiling for a target whose file is missing fails at link time,
//! so the set of these files is the set of targets a toolchain can build for.

/// Targets worth naming in `doctor` whether or not a toolchain covers them: the data-centre parts
/// (MI50/60, MI100, MI200, MI300, MI350) and common consumer and APU parts.
pub const NOTABLE_TARGETS: &[&str] = &[
    "gfx906", "gfx908", "gfx90a", "gfx940", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1101",
    "gfx1151", "gfx1200", "gfx1201",
];

const ISA_PREFIX: &str = "oclc_isa_version_";

/// The processor part of a target id: `gfx90a:sramecc+:xnack-` → `gfx90a`.
pub fn base_target(target: &str) -> &str {
    target.split(':').next().unwrap_or(target).trim()
}

/// Whether `name` looks like an AMDGPU processor name (`gfx` then digits and hex letters,
/// or a generic target such as `gfx10-3-generic`).
pub fn is_gfx_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("gfx") else {
        return false;
    };
    if let Some(generic) = rest.strip_suffix("-generic") {
        return !generic.is_empty()
            && generic
                .split('-')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    }
    rest.len() >= 3
        && rest.as_bytes()[0].is_ascii_digit()
        && rest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The device-library file a target needs: `gfx942` → `oclc_isa_version_942.bc`.
/// Feature suffixes are ignored (`gfx90a:xnack+` needs the same file as `gfx90a`).
/// `None` when `target` is not a gfx name.
///
/// ```
/// use rocm_toolkit::toolchain::device_lib_file;
/// assert_eq!(device_lib_file("gfx942").as_deref(), Some("oclc_isa_version_942.bc"));
/// assert_eq!(device_lib_file("gfx90a:xnack+").as_deref(), Some("oclc_isa_version_90a.bc"));
/// assert_eq!(device_lib_file("sm_90"), None);
/// ```
pub fn device_lib_file(target: &str) -> Option<String> {
    let base = base_target(target);
    is_gfx_name(base).then(|| format!("{ISA_PREFIX}{}.bc", &base[3..]))
}

/// The target a device-library file covers: `oclc_isa_version_1030.bc` → `gfx1030`.
/// `None` for every other file name.
pub fn target_of_device_lib_file(file_name: &str) -> Option<String> {
    let suffix = file_name.strip_prefix(ISA_PREFIX)?.strip_suffix(".bc")?;
    let name = format!("gfx{suffix}");
    is_gfx_name(&name).then_some(name)
}

/// Sort gfx names the way people read them: by generation, then model (`gfx90a` after
/// `gfx908`, `gfx1030` after `gfx940`).
pub fn sort_targets(targets: &mut [String]) {
    targets.sort_by_key(|t| target_sort_key(t));
}

fn target_sort_key(target: &str) -> (u32, u32, String) {
    let rest = target.strip_prefix("gfx").unwrap_or(target);
    // The last two characters are minor and stepping; the rest is the major version.
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let major_len = rest.len().saturating_sub(2).min(digits.len());
    let major = rest[..major_len].parse().unwrap_or(u32::MAX);
    let minor = u32::from_str_radix(&rest[major_len..], 16).unwrap_or(u32::MAX);
    (major, minor, target.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_decode_to_gfx_names() {
        for (file, gfx) in [
            ("oclc_isa_version_90a.bc", "gfx90a"),
            ("oclc_isa_version_940.bc", "gfx940"),
            ("oclc_isa_version_1030.bc", "gfx1030"),
            ("oclc_isa_version_600.bc", "gfx600"),
            ("oclc_isa_version_90c.bc", "gfx90c"),
            ("oclc_isa_version_1151.bc", "gfx1151"),
            ("oclc_isa_version_10-3-generic.bc", "gfx10-3-generic"),
        ] {
            assert_eq!(
                target_of_device_lib_file(file).as_deref(),
                Some(gfx),
                "{file}"
            );
            assert_eq!(device_lib_file(gfx).as_deref(), Some(file), "{gfx}");
        }
        for other in [
            "ocml.bc",
            "oclc_isa_version_.bc",
            "oclc_isa_version_90a.txt",
            "oclc_isa_version_xyz.bc",
            "oclc_wavefrontsize64_on.bc",
        ] {
            assert_eq!(target_of_device_lib_file(other), None, "{other}");
        }
    }

    #[test]
    fn features_are_ignored_and_non_gfx_names_rejected() {
        assert_eq!(base_target("gfx90a:sramecc+:xnack-"), "gfx90a");
        assert_eq!(
            device_lib_file("gfx942:xnack+").as_deref(),
            Some("oclc_isa_version_942.bc")
        );
        assert_eq!(device_lib_file("sm_80"), None);
        assert_eq!(device_lib_file("gfx"), None);
        assert_eq!(device_lib_file("gfx9z0"), None);
    }

    #[test]
    fn targets_sort_by_generation() {
        let mut t: Vec<String> = ["gfx1030", "gfx90a", "gfx803", "gfx908", "gfx940", "gfx1100"]
            .map(String::from)
            .to_vec();
        sort_targets(&mut t);
        assert_eq!(
            t,
            ["gfx803", "gfx908", "gfx90a", "gfx940", "gfx1030", "gfx1100"]
        );
    }
}
