//! AMD GPUs from the KFD topology in sysfs, the amdgpu kernel driver's own description of each
//! node: `nodes/<N>/properties` holds `key value` lines (`simd_count 1216`,
//! `gfx_target_version 90402`, ...), `nodes/<N>/name` a short name, and
//! `nodes/<N>/mem_banks/<M>/properties` the memory heaps (`heap_type`, `size_in_bytes`).

use std::collections::BTreeMap;
use std::path::Path;

use super::lspci::amd_pci_device;
use super::{Device, DeviceSource};
use rocm_kernels_core::library::Backend;

/// Parsed `key value` lines of a KFD `properties` file.
pub type Properties = BTreeMap<String, u64>;

/// Heap types (`heap_type` in a memory bank) that are device memory: HSA's frame buffer public
/// (1) and private (2). 0 is system memory, 3+ are GPU-internal apertures.
const VRAM_HEAP_TYPES: [u64; 2] = [1, 2];

/// Parse a KFD `properties` file. Returns the values and a description of every malformed
/// line (a line must be a key and an unsigned decimal number).
pub fn parse_properties(text: &str) -> (Properties, Vec<String>) {
    let mut values = Properties::new();
    let mut bad = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let mut parts = line.split_whitespace();
        match (parts.next(), parts.next(), parts.next()) {
            (Some(key), Some(value), None) => match value.parse::<u64>() {
                Ok(v) => {
                    values.insert(key.to_owned(), v);
                }
                Err(_) => bad.push(format!("`{line}` (value is not a number)")),
            },
            _ => bad.push(format!("`{line}` (expected `name value`)")),
        }
    }
    (values, bad)
}

/// Decode KFD's `gfx_target_version` into a gfx name: the value is
/// `major * 10000 + minor * 100 + stepping`, and the gfx name writes minor and stepping as one
/// hex digit each (90010 → `gfx90a`, 90402 → `gfx942`, 110501 → `gfx1151`). `None` for 0 (a
/// CPU node) or a value whose minor or stepping does not fit one hex digit.
///
/// ```
/// use rocm_toolkit::detect::decode_gfx_target_version;
/// assert_eq!(decode_gfx_target_version(90010).as_deref(), Some("gfx90a"));
/// assert_eq!(decode_gfx_target_version(110000).as_deref(), Some("gfx1100"));
/// ```
pub fn decode_gfx_target_version(value: u64) -> Option<String> {
    let major = value / 10000;
    let minor = (value / 100) % 100;
    let stepping = value % 100;
    (major > 0 && minor < 16 && stepping < 16).then(|| format!("gfx{major}{minor:x}{stepping:x}"))
}

/// Read every node under `nodes_dir` (`/sys/class/kfd/kfd/topology/nodes`) and return its GPU
/// nodes as devices. CPU nodes (no SIMDs) are skipped; each unreadable or malformed node adds a
/// note and is skipped. A missing `nodes_dir` adds a note and returns nothing.
pub fn read_kfd_topology(nodes_dir: &Path, notes: &mut Vec<String>) -> Vec<Device> {
    let entries = match std::fs::read_dir(nodes_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            notes.push(format!(
                "no AMD GPU driver interface: {} does not exist (no AMD GPU, or the amdgpu \
                 kernel driver is not loaded)",
                nodes_dir.display()
            ));
            return Vec::new();
        }
        Err(e) => {
            notes.push(format!("cannot list {}: {e}", nodes_dir.display()));
            return Vec::new();
        }
    };
    let mut nodes: Vec<(u32, std::path::PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path())))
        .collect();
    nodes.sort();
    nodes
        .into_iter()
        .filter_map(|(id, dir)| read_node(id, &dir, notes))
        .collect()
}

fn read_node(id: u32, dir: &Path, notes: &mut Vec<String>) -> Option<Device> {
    let path = dir.join("properties");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            notes.push(format!(
                "KFD node {id}: cannot read {}: {e}; node skipped",
                path.display()
            ));
            return None;
        }
    };
    let (props, bad) = parse_properties(&text);
    for line in &bad {
        notes.push(format!(
            "KFD node {id}: ignored malformed line {line} in {}",
            path.display()
        ));
    }
    let Some(&simd_count) = props.get("simd_count") else {
        notes.push(format!(
            "KFD node {id}: {} has no simd_count; node skipped",
            path.display()
        ));
        return None;
    };
    if simd_count == 0 {
        return None; // a CPU node
    }
    let short_name = std::fs::read_to_string(dir.join("name"))
        .ok()
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty());
    let version = props.get("gfx_target_version").copied().unwrap_or(0);
    let arch = decode_gfx_target_version(version).or_else(|| {
        // Kernels before gfx_target_version existed put the gfx name in `name`.
        short_name.clone().filter(|n| n.starts_with("gfx"))
    });
    if arch.is_none() {
        notes.push(format!(
            "KFD node {id}: gfx_target_version {version} in {} cannot be decoded; node skipped",
            path.display()
        ));
        return None;
    }

    let pci = props
        .get("device_id")
        .filter(|_| props.get("vendor_id") == Some(&0x1002))
        .and_then(|&id| amd_pci_device(id as u16));
    let name = match (pci, &short_name) {
        (Some(pci), _) => pci.1.to_owned(),
        (None, Some(n)) if !n.starts_with("gfx") => n.clone(),
        _ => format!("AMD {}", arch.as_deref().unwrap_or("GPU")),
    };
    let mut device = Device::new(Backend::Amd, name, DeviceSource::KfdSysfs);
    device.arch = arch;
    device.compute_units = props
        .get("simd_per_cu")
        .filter(|&&per_cu| per_cu > 0)
        .map(|per_cu| (simd_count / per_cu) as u32);
    device.wave_sizes = props
        .get("wave_front_size")
        .filter(|&&w| w > 0)
        .map(|&w| vec![w as u32])
        .unwrap_or_default();
    device.lds_bytes = props
        .get("lds_size_in_kb")
        .filter(|&&kb| kb > 0)
        .map(|kb| kb * 1024);
    device.memory_bytes = props
        .get("local_mem_size")
        .copied()
        .filter(|&m| m > 0)
        .or_else(|| vram_from_mem_banks(id, dir, notes));
    device.pci_address = props.get("location_id").map(|&loc| {
        let domain = props.get("domain").copied().unwrap_or(0);
        format!(
            "{domain:04x}:{:02x}:{:02x}.{:x}",
            (loc >> 8) & 0xff,
            (loc >> 3) & 0x1f,
            loc & 0x7
        )
    });
    Some(device)
}

/// Sum the device-memory heaps of a node's memory banks (`local_mem_size` reads 0 on many
/// kernels).
fn vram_from_mem_banks(id: u32, dir: &Path, notes: &mut Vec<String>) -> Option<u64> {
    let banks = std::fs::read_dir(dir.join("mem_banks")).ok()?;
    let mut total = 0;
    for bank in banks.filter_map(|b| b.ok()) {
        let path = bank.path().join("properties");
        let Ok(text) = std::fs::read_to_string(&path) else {
            notes.push(format!(
                "KFD node {id}: cannot read {}; memory size may be low",
                path.display()
            ));
            continue;
        };
        let (props, _) = parse_properties(&text);
        if props
            .get("heap_type")
            .is_some_and(|t| VRAM_HEAP_TYPES.contains(t))
        {
            total += props.get("size_in_bytes").copied().unwrap_or(0);
        }
    }
    (total > 0).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfx_target_versions_decode_with_hex_minor_and_stepping() {
        for (value, name) in [
            (90010, "gfx90a"),
            (90402, "gfx942"),
            (110000, "gfx1100"),
            (110501, "gfx1151"),
            (90008, "gfx908"),
            (90012, "gfx90c"),
            (100300, "gfx1030"),
            (90400, "gfx940"),
            (120001, "gfx1201"),
            (90500, "gfx950"),
        ] {
            assert_eq!(
                decode_gfx_target_version(value).as_deref(),
                Some(name),
                "{value}"
            );
        }
        assert_eq!(decode_gfx_target_version(0), None);
        assert_eq!(
            decode_gfx_target_version(91600),
            None,
            "minor 16 is not a hex digit"
        );
        assert_eq!(decode_gfx_target_version(90017), None);
    }

    #[test]
    fn properties_parse_and_report_bad_lines() {
        let (props, bad) =
            parse_properties("simd_count 104\nwave_front_size 64\nbogus\nname gfx90a\n\n");
        assert_eq!(props.get("simd_count"), Some(&104));
        assert_eq!(props.get("wave_front_size"), Some(&64));
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert!(bad[0].contains("bogus"));
        assert!(bad[1].contains("not a number"));
    }
}
