//! Which gfx target a HIP device is (`gfx90a:sramecc+:xnack-`).
//!
//! HIP reports it only as `gcnArchName`, a string inside `hipDeviceProp_t`, a struct whose
//! layout changed between ROCm 5 and 6 (and `hipDeviceGetAttribute` cannot return strings). We
//! read it in two ways, the first that gives a valid target id winning:
//!
//! 1. `hipGetDeviceProperties`, the legacy symbol that fills the ROCm 4.2–5.x layout on every
//!    ROCm from 4.2 to 6.x, into an 8 KiB zeroed buffer, reading `gcnArchName` at its fixed
//!    offset (see [`super::sys::props_r0000`]). The result is trusted only when the struct's
//!    `name` equals `hipDeviceGetName` and its `warpSize` equals the attribute: if a future
//!    runtime changed what that symbol fills, the check fails and we fall through.
//! 2. The KFD topology in sysfs (the amdgpu driver's own list of GPUs), matched to the HIP
//!    device by PCI domain/bus/device from `hipDeviceGetAttribute`; its `gfx_target_version`
//!    gives the processor without features (`gfx90a`).

use std::path::Path;

use super::sys::props_r0000 as layout;
use super::TargetId;
use rocm_toolkit::detect::{decode_gfx_target_version, parse_properties};

/// NUL-terminated text at `offset` of `bytes`, at most `max` bytes long; `None` when it has no
/// NUL within `max` or is not UTF-8.
fn c_string_at(bytes: &[u8], offset: usize, max: usize) -> Option<&str> {
    let field = bytes.get(offset..offset + max)?;
    let len = field.iter().position(|&b| b == 0)?;
    std::str::from_utf8(&field[..len]).ok()
}

/// The target id in the raw bytes `hipGetDeviceProperties` wrote, when the struct passes the
/// consistency checks against `name` and `wave_size` (from the API's other calls).
pub(crate) fn target_from_properties(
    props: &[u8],
    name: &str,
    wave_size: u32,
) -> Result<TargetId, String> {
    let props_name = c_string_at(props, layout::NAME_OFFSET, layout::STRING_LEN);
    if props_name != Some(name) {
        return Err(format!(
            "hipGetDeviceProperties's name field {props_name:?} differs from hipDeviceGetName's \
             {name:?}: unexpected struct layout"
        ));
    }
    let warp = props
        .get(layout::WARP_SIZE_OFFSET..layout::WARP_SIZE_OFFSET + 4)
        .map(|b| i32::from_ne_bytes(b.try_into().expect("4 bytes")));
    if warp != Some(wave_size as i32) {
        return Err(format!(
            "hipGetDeviceProperties's warpSize field {warp:?} differs from the attribute's \
             {wave_size}: unexpected struct layout"
        ));
    }
    let arch = c_string_at(props, layout::GCN_ARCH_NAME_OFFSET, layout::STRING_LEN)
        .ok_or("gcnArchName is not a terminated string")?;
    TargetId::parse(arch).ok_or_else(|| format!("gcnArchName `{arch}` is not a gfx target id"))
}

/// PCI address of a device as HIP and KFD both report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PciAddress {
    pub domain: u32,
    pub bus: u32,
    pub device: u32,
}

/// The processor of the KFD node at `pci` under `nodes_dir`
/// (`/sys/class/kfd/kfd/topology/nodes`). KFD's `location_id` is `bus << 8 | device << 3 |
/// function`.
pub(crate) fn target_from_kfd(nodes_dir: &Path, pci: PciAddress) -> Result<TargetId, String> {
    let nodes = std::fs::read_dir(nodes_dir)
        .map_err(|e| format!("cannot read {}: {e}", nodes_dir.display()))?;
    for node in nodes.flatten() {
        let Ok(text) = std::fs::read_to_string(node.path().join("properties")) else {
            continue;
        };
        let (props, _) = parse_properties(&text);
        let location = props.get("location_id").copied().unwrap_or(u64::MAX);
        let domain = props.get("domain").copied().unwrap_or(0);
        let matches = domain == u64::from(pci.domain)
            && location >> 8 == u64::from(pci.bus)
            && (location & 0xff) >> 3 == u64::from(pci.device);
        if !matches {
            continue;
        }
        let version = props.get("gfx_target_version").copied().unwrap_or(0);
        return decode_gfx_target_version(version)
            .and_then(|arch| TargetId::parse(&arch))
            .ok_or_else(|| {
                format!(
                    "KFD node {} has gfx_target_version {version}, which is not a gfx target",
                    node.path().display()
                )
            });
    }
    Err(format!(
        "no KFD node in {} at PCI {:04x}:{:02x}:{:02x}",
        nodes_dir.display(),
        pci.domain,
        pci.bus,
        pci.device
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(name: &str, warp: i32, arch: &str) -> Vec<u8> {
        let mut bytes = vec![0u8; layout::BUFFER_SIZE];
        bytes[..name.len()].copy_from_slice(name.as_bytes());
        bytes[layout::WARP_SIZE_OFFSET..layout::WARP_SIZE_OFFSET + 4]
            .copy_from_slice(&warp.to_ne_bytes());
        let at = layout::GCN_ARCH_NAME_OFFSET;
        bytes[at..at + arch.len()].copy_from_slice(arch.as_bytes());
        bytes
    }

    #[test]
    fn properties_give_the_full_target_id() {
        let bytes = props("AMD Instinct MI210", 64, "gfx90a:sramecc+:xnack-");
        let target = target_from_properties(&bytes, "AMD Instinct MI210", 64).unwrap();
        assert_eq!(target.to_string(), "gfx90a:sramecc+:xnack-");
        assert_eq!(target.processor, "gfx90a");
    }

    #[test]
    fn properties_with_an_unexpected_layout_are_refused() {
        let bytes = props("AMD Instinct MI210", 64, "gfx90a");
        let error = target_from_properties(&bytes, "Radeon RX 6800", 64).unwrap_err();
        assert!(error.contains("unexpected struct layout"), "{error}");
        let error = target_from_properties(&bytes, "AMD Instinct MI210", 32).unwrap_err();
        assert!(error.contains("warpSize"), "{error}");
        let bytes = props("X", 64, "not-an-arch");
        let error = target_from_properties(&bytes, "X", 64).unwrap_err();
        assert!(error.contains("not a gfx target id"), "{error}");
        // No terminating NUL within the field.
        let mut bytes = props("X", 64, "");
        bytes[layout::GCN_ARCH_NAME_OFFSET..layout::GCN_ARCH_NAME_OFFSET + 256].fill(b'g');
        assert!(target_from_properties(&bytes, "X", 64).is_err());
    }

    #[test]
    fn kfd_nodes_are_matched_by_pci_address() {
        let dir = tempfile::tempdir().unwrap();
        let write = |node: &str, text: &str| {
            let path = dir.path().join(node);
            std::fs::create_dir_all(&path).unwrap();
            std::fs::write(path.join("properties"), text).unwrap();
        };
        write("0", "cpu_cores_count 16\nsimd_count 0\n");
        // 0000:03:00.0 → location_id 0x300; 0000:c3:00.0 → 0xc300.
        write(
            "1",
            "simd_count 440\nlocation_id 768\ndomain 0\ngfx_target_version 90010\n",
        );
        write(
            "2",
            "simd_count 120\nlocation_id 49920\ndomain 0\ngfx_target_version 100300\n",
        );
        let at = |bus| PciAddress {
            domain: 0,
            bus,
            device: 0,
        };
        assert_eq!(
            target_from_kfd(dir.path(), at(0x03)).unwrap().to_string(),
            "gfx90a"
        );
        assert_eq!(
            target_from_kfd(dir.path(), at(0xc3)).unwrap().to_string(),
            "gfx1030"
        );
        let error = target_from_kfd(dir.path(), at(0x04)).unwrap_err();
        assert!(error.contains("0000:04:00"), "{error}");
        assert!(target_from_kfd(&dir.path().join("absent"), at(3)).is_err());
    }
}
