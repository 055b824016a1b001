//! The gfx targets of this machine's AMD GPUs, read from the kernel driver's topology in sysfs
//! (what `rocminfo` reads too), so choosing a tarball needs no ROCm installed yet.

use std::path::Path;

/// The KFD topology folder.
pub const KFD_NODES: &str = "/sys/class/kfd/kfd/topology/nodes";

/// gfx targets of the GPUs under `nodes` (normally [`KFD_NODES`]), sorted, without duplicates.
pub fn detect_gfx_targets(nodes: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(nodes)
        .into_iter()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("properties")).ok())
        .filter_map(|props| {
            props.lines().find_map(|l| {
                let v = l
                    .strip_prefix("gfx_target_version ")?
                    .trim()
                    .parse::<u32>()
                    .ok()?;
                gfx_from_target_version(v)
            })
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// KFD's `gfx_target_version` (major·10000 + minor·100 + stepping) → `gfx<major><minor><step:x>`;
/// 0 (a CPU node) → `None`. E.g. 90010 → gfx90a, 90402 → gfx942, 110001 → gfx1101.
pub fn gfx_from_target_version(v: u32) -> Option<String> {
    if v == 0 {
        return None;
    }
    let (major, minor, step) = (v / 10000, (v / 100) % 100, v % 100);
    Some(format!("gfx{major}{minor}{step:x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_target_versions() {
        assert_eq!(gfx_from_target_version(90010).unwrap(), "gfx90a");
        assert_eq!(gfx_from_target_version(90402).unwrap(), "gfx942");
        assert_eq!(gfx_from_target_version(110001).unwrap(), "gfx1101");
        assert_eq!(gfx_from_target_version(100300).unwrap(), "gfx1030");
        assert_eq!(gfx_from_target_version(120001).unwrap(), "gfx1201");
        assert_eq!(gfx_from_target_version(0), None);
    }

    #[test]
    fn reads_a_topology_tree() {
        let tmp = tempfile::tempdir().unwrap();
        for (node, v) in [("0", 0), ("1", 90402), ("2", 90402), ("3", 110000)] {
            let d = tmp.path().join(node);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(
                d.join("properties"),
                format!("cpu_cores_count 0\ngfx_target_version {v}\n"),
            )
            .unwrap();
        }
        assert_eq!(detect_gfx_targets(tmp.path()), ["gfx1100", "gfx942"]);
        assert!(detect_gfx_targets(&tmp.path().join("none")).is_empty());
    }
}
