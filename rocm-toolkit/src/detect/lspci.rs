//! GPUs from `lspci -nn`: the last resort, which sees hardware even when no driver serves it.
//! The gfx target comes from a table of PCI device IDs, so it is a guess.

use serde::Serialize;

use super::{Device, DeviceSource};
use rocm_kernels_core::library::Backend;

/// PCI vendor ID of AMD (ATI).
pub(crate) const AMD: u16 = 0x1002;
/// PCI vendor ID of NVIDIA.
pub(crate) const NVIDIA: u16 = 0x10de;

/// PCI classes of GPUs and compute accelerators: VGA, 3D, other display, processing accelerator.
const GPU_CLASSES: [&str; 4] = ["0300", "0302", "0380", "1200"];

/// AMD GPUs ROCm can target, by PCI device ID: (device ID, gfx target, marketing name).
/// Names follow the PCI ID database; IDs newer than it are from AMD's product pages.
const AMD_GPUS: &[(u16, &str, &str)] = &[
    // CDNA (Instinct)
    (0x6860, "gfx900", "AMD Instinct MI25"),
    (0x66a0, "gfx906", "AMD Instinct MI50/MI60"),
    (0x66a1, "gfx906", "AMD Instinct MI50 32GB / Radeon Pro VII"),
    (0x738c, "gfx908", "AMD Instinct MI100"),
    (0x738e, "gfx908", "AMD Instinct MI100"),
    (0x7408, "gfx90a", "AMD Instinct MI250X"),
    (0x740c, "gfx90a", "AMD Instinct MI250X/MI250"),
    (0x740f, "gfx90a", "AMD Instinct MI210"),
    (0x74a0, "gfx942", "AMD Instinct MI300A"),
    (0x74a1, "gfx942", "AMD Instinct MI300X"),
    (0x74a5, "gfx942", "AMD Instinct MI325X"),
    // GCN / Vega consumer
    (0x6861, "gfx900", "AMD Radeon PRO WX 9100"),
    (0x687f, "gfx900", "AMD Radeon RX Vega 56/64"),
    (0x66af, "gfx906", "AMD Radeon VII"),
    // RDNA 1
    (0x731f, "gfx1010", "AMD Radeon RX 5600/5700 (XT)"),
    (0x7340, "gfx1012", "AMD Radeon RX 5500"),
    // RDNA 2
    (0x73a1, "gfx1030", "AMD Radeon Pro V620"),
    (0x73a2, "gfx1030", "AMD Radeon Pro W6900X"),
    (0x73a3, "gfx1030", "AMD Radeon PRO W6800"),
    (0x73af, "gfx1030", "AMD Radeon RX 6900 XT"),
    (0x73bf, "gfx1030", "AMD Radeon RX 6800/6800 XT/6900 XT"),
    (0x73df, "gfx1031", "AMD Radeon RX 6700/6700 XT/6750 XT"),
    (0x73e3, "gfx1032", "AMD Radeon PRO W6600"),
    (0x73ef, "gfx1032", "AMD Radeon RX 6650 XT"),
    (0x73ff, "gfx1032", "AMD Radeon RX 6600/6600 XT"),
    (0x743f, "gfx1034", "AMD Radeon RX 6400/6500 XT"),
    // RDNA 3
    (0x744c, "gfx1100", "AMD Radeon RX 7900 XT/XTX"),
    (0x7448, "gfx1100", "AMD Radeon PRO W7900"),
    (0x747e, "gfx1101", "AMD Radeon RX 7700 XT/7800 XT"),
    (0x7480, "gfx1102", "AMD Radeon RX 7600"),
    // RDNA 4
    (0x7550, "gfx1201", "AMD Radeon RX 9070 (XT)"),
    // APUs
    (0x15dd, "gfx902", "AMD Raven Ridge APU (Radeon Vega)"),
    (0x1638, "gfx90c", "AMD Cezanne APU (Radeon Vega)"),
    (0x1681, "gfx1035", "AMD Rembrandt APU (Radeon 680M)"),
    (0x164e, "gfx1036", "AMD Raphael APU"),
    (0x15bf, "gfx1103", "AMD Phoenix APU (Radeon 780M)"),
    (0x150e, "gfx1150", "AMD Strix Point APU (Radeon 890M)"),
    (0x1586, "gfx1151", "AMD Strix Halo APU (Radeon 8060S)"),
];

/// The gfx target and marketing name of an AMD PCI device ID, if the table knows it.
pub fn amd_pci_device(device_id: u16) -> Option<(&'static str, &'static str)> {
    AMD_GPUS
        .iter()
        .find(|(id, _, _)| *id == device_id)
        .map(|&(_, gfx, name)| (gfx, name))
}

/// A GPU line of `lspci -nn`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PciGpu {
    /// `63:00.0` or `0000:63:00.0`, as lspci printed it.
    pub address: String,
    /// The PCI vendor ID (`0x1002` AMD, `0x10de` NVIDIA).
    pub vendor_id: u16,
    /// The PCI device ID, looked up in the table by [`amd_pci_device`].
    pub device_id: u16,
    /// lspci's description (`Advanced Micro Devices, Inc. [AMD/ATI] Aldebaran/MI200 [Instinct MI210]`).
    pub description: String,
}

impl PciGpu {
    /// A device whose architecture is guessed from the PCI ID table (flagged as a guess).
    pub(crate) fn into_device(self) -> Device {
        let backend = if self.vendor_id == NVIDIA {
            Backend::Nvidia
        } else {
            Backend::Amd
        };
        let known = (self.vendor_id == AMD)
            .then(|| amd_pci_device(self.device_id))
            .flatten();
        let name = known
            .map(|(_, name)| name.to_owned())
            .unwrap_or_else(|| self.description.clone());
        let mut device = Device::new(backend, name, DeviceSource::Lspci);
        device.arch = known.map(|(gfx, _)| gfx.to_owned());
        device.pci_address = Some(if self.address.matches(':').count() == 1 {
            format!("0000:{}", self.address)
        } else {
            self.address
        });
        device.guess = true;
        device
    }
}

/// The AMD and NVIDIA GPUs in `lspci -nn` output. Lines of other vendors or classes are skipped.
pub fn parse_lspci(text: &str) -> Vec<PciGpu> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<PciGpu> {
    // `63:00.0 Display controller [0380]: Advanced ... [Instinct MI210] [1002:740f] (rev 02)`
    let (address, rest) = line.trim().split_once(' ')?;
    let class_start = rest.find('[')?;
    let class = rest.get(class_start + 1..class_start + 5)?;
    if !GPU_CLASSES.contains(&class) {
        return None;
    }
    let (_, after_class) = rest.split_once("]: ")?;
    // The vendor:device pair is the last bracket holding `xxxx:xxxx`.
    let (ids_at, vendor_id, device_id) = after_class.rmatch_indices('[').find_map(|(i, _)| {
        let inner = after_class.get(i + 1..i + 11)?;
        let (v, d) = inner.strip_suffix(']')?.split_once(':')?;
        Some((
            i,
            u16::from_str_radix(v, 16).ok()?,
            u16::from_str_radix(d, 16).ok()?,
        ))
    })?;
    if vendor_id != AMD && vendor_id != NVIDIA {
        return None;
    }
    Some(PciGpu {
        address: address.to_owned(),
        vendor_id,
        device_id,
        description: after_class[..ids_at].trim().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LSPCI: &str = "\
00:00.0 Host bridge [0600]: Intel Corporation Device [8086:0d57]
00:02.0 VGA compatible controller [0300]: Intel Corporation Device [8086:a780] (rev 04)
03:00.0 Display controller [0380]: Advanced Micro Devices, Inc. [AMD/ATI] Aldebaran/MI200 [Instinct MI210] [1002:740f] (rev 02)
0000:c3:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 [Radeon RX 7900 XT/7900 XTX] [1002:744c] (rev c8)
0a:00.1 Audio device [0403]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 HDMI/DP Audio [1002:ab30]
19:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)
44:00.0 Display controller [0380]: Advanced Micro Devices, Inc. [AMD/ATI] Device [1002:ffff]
garbage line
";

    #[test]
    fn gpus_are_picked_out_with_their_ids() {
        let gpus = parse_lspci(LSPCI);
        assert_eq!(gpus.len(), 4, "{gpus:#?}");
        assert_eq!(gpus[0].address, "03:00.0");
        assert_eq!((gpus[0].vendor_id, gpus[0].device_id), (0x1002, 0x740f));
        assert_eq!(
            gpus[0].description,
            "Advanced Micro Devices, Inc. [AMD/ATI] Aldebaran/MI200 [Instinct MI210]"
        );
        assert_eq!(gpus[2].vendor_id, NVIDIA);
    }

    #[test]
    fn devices_from_lspci_are_flagged_guesses() {
        let devices: Vec<Device> = parse_lspci(LSPCI)
            .into_iter()
            .map(PciGpu::into_device)
            .collect();
        assert_eq!(devices[0].arch.as_deref(), Some("gfx90a"));
        assert_eq!(devices[0].name, "AMD Instinct MI210");
        assert_eq!(devices[0].pci_address.as_deref(), Some("0000:03:00.0"));
        assert!(devices.iter().all(|d| d.guess));
        assert_eq!(devices[1].arch.as_deref(), Some("gfx1100"));
        assert_eq!(devices[1].pci_address.as_deref(), Some("0000:c3:00.0"));
        assert_eq!(devices[2].backend, Backend::Nvidia);
        assert_eq!(devices[2].arch, None);
        // Unknown AMD ID: listed under lspci's name, no architecture.
        assert_eq!(devices[3].arch, None);
        assert!(devices[3].name.contains("Device"));
    }

    #[test]
    fn table_has_one_entry_per_id() {
        let mut ids: Vec<u16> = AMD_GPUS.iter().map(|g| g.0).collect();
        ids.sort();
        let n = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), n);
        for (_, gfx, _) in AMD_GPUS {
            assert!(crate::toolchain::is_gfx_name(gfx), "{gfx}");
        }
    }
}
