//! NVIDIA GPUs from `nvidia-smi --query-gpu` (CSV), else `/proc/driver/nvidia/gpus/*/information`.

use std::path::Path;

use super::{Device, DeviceSource};
use crate::process::{probe, ProbeError};
use rocm_kernels_core::library::Backend;

/// The fields [`parse_nvidia_smi`] expects, in order, for `nvidia-smi --query-gpu=...
/// --format=csv,noheader,nounits`.
pub const NVIDIA_SMI_QUERY: &str = "index,name,compute_cap,memory.total,pci.bus_id";
/// The same without `compute_cap`, which drivers older than 510 do not know.
const NVIDIA_SMI_QUERY_OLD: &str = "index,name,memory.total,pci.bus_id";

pub(crate) fn run_nvidia_smi(smi: &Path) -> Result<Vec<Device>, ProbeError> {
    let query = |fields: &str| {
        probe(
            smi,
            &[
                &format!("--query-gpu={fields}"),
                "--format=csv,noheader,nounits",
            ],
        )
    };
    match query(NVIDIA_SMI_QUERY) {
        Ok(text) => Ok(parse_nvidia_smi(&text)),
        Err(ProbeError::Failed { stderr, .. }) | Err(ProbeError::Io(stderr))
            if stderr.contains("compute_cap") =>
        {
            Ok(parse_nvidia_smi_without_cc(&query(NVIDIA_SMI_QUERY_OLD)?))
        }
        Err(e) => Err(e),
    }
}

/// Parse `nvidia-smi --query-gpu=index,name,compute_cap,memory.total,pci.bus_id
/// --format=csv,noheader,nounits` output: one GPU per line, memory in MiB. Lines that do not
/// have the five fields are skipped.
pub fn parse_nvidia_smi(text: &str) -> Vec<Device> {
    text.lines()
        .filter_map(|line| {
            let fields = split_csv(line, 5)?;
            let mut device = Device::new(Backend::Nvidia, fields[1], DeviceSource::NvidiaSmi);
            let cc = fields[2];
            if cc
                .split_once('.')
                .is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok())
            {
                device.arch = Some(sm_name(cc));
                device.compute_capability = Some(cc.to_owned());
            }
            fill_common(&mut device, fields[3], fields[4]);
            Some(device)
        })
        .collect()
}

fn parse_nvidia_smi_without_cc(text: &str) -> Vec<Device> {
    text.lines()
        .filter_map(|line| {
            let fields = split_csv(line, 4)?;
            let mut device = Device::new(Backend::Nvidia, fields[1], DeviceSource::NvidiaSmi);
            set_guessed_cc(&mut device);
            fill_common(&mut device, fields[2], fields[3]);
            Some(device)
        })
        .collect()
}

/// Split a CSV line into exactly `n` trimmed fields. The name is the only field that could hold
/// a comma, so extra fields are joined back into it (field 1).
fn split_csv(line: &str, n: usize) -> Option<Vec<&str>> {
    let parts: Vec<&str> = line.split(',').map(str::trim).collect();
    if line.trim().is_empty() || parts.len() < n {
        return None;
    }
    if parts.len() == n {
        return Some(parts);
    }
    // Re-slice the name out of the original line: everything between the first comma and the
    // (n-2)-th comma from the end.
    let first = line.find(',')?;
    let mut end = line.len();
    for _ in 0..n - 2 {
        end = line[..end].rfind(',')?;
    }
    let mut fields = vec![parts[0], line[first + 1..end].trim()];
    fields.extend(&parts[parts.len() - (n - 2)..]);
    Some(fields)
}

fn fill_common(device: &mut Device, memory_mib: &str, bus_id: &str) {
    device.wave_sizes = vec![32];
    device.memory_bytes = memory_mib.parse::<u64>().ok().map(|m| m * 1024 * 1024);
    device.pci_address = normalize_bus_id(bus_id);
}

/// `00000000:19:00.0` (nvidia-smi) → `0000:19:00.0`.
fn normalize_bus_id(bus_id: &str) -> Option<String> {
    let (domain, rest) = bus_id.trim().split_once(':')?;
    let domain = u32::from_str_radix(domain, 16).ok()?;
    Some(format!("{domain:04x}:{}", rest.to_ascii_lowercase()))
}

fn sm_name(cc: &str) -> String {
    format!("sm_{}", cc.replace('.', ""))
}

fn set_guessed_cc(device: &mut Device) {
    if let Some(cc) = guess_compute_capability(&device.name) {
        device.arch = Some(sm_name(cc));
        device.compute_capability = Some(cc.to_owned());
        device.guess = true;
    }
}

/// Compute capability from a product name, for sources that do not report it. Checked in
/// order, so more specific names come first.
const CC_BY_NAME: &[(&str, &str)] = &[
    ("GB200", "10.0"),
    ("B200", "10.0"),
    ("B100", "10.0"),
    ("RTX 50", "12.0"),
    ("H100", "9.0"),
    ("H200", "9.0"),
    ("H800", "9.0"),
    ("GH200", "9.0"),
    ("L40", "8.9"),
    ("L4", "8.9"),
    ("RTX 40", "8.9"),
    ("RTX 6000 Ada", "8.9"),
    ("A100", "8.0"),
    ("A800", "8.0"),
    ("A30", "8.0"),
    ("A10", "8.6"),
    ("A40", "8.6"),
    ("RTX A", "8.6"),
    ("RTX 30", "8.6"),
    ("T4", "7.5"),
    ("RTX 20", "7.5"),
    ("TITAN RTX", "7.5"),
    ("V100", "7.0"),
    ("TITAN V", "7.0"),
    ("P100", "6.0"),
];

/// A compute capability for a product name (`NVIDIA H100 80GB HBM3` → `9.0`), if known.
pub fn guess_compute_capability(name: &str) -> Option<&'static str> {
    CC_BY_NAME
        .iter()
        .find(|(key, _)| name.contains(key))
        .map(|&(_, cc)| cc)
}

/// Parse one `/proc/driver/nvidia/gpus/<bus>/information` file (`Model:`, `Bus Location:`).
/// The compute capability is guessed from the model name. `None` without a `Model:` line.
pub fn parse_nvidia_proc_information(text: &str) -> Option<Device> {
    let field = |key: &str| {
        text.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim().to_owned())
    };
    let model = field("Model").filter(|m| !m.is_empty())?;
    let mut device = Device::new(Backend::Nvidia, model, DeviceSource::NvidiaProc);
    device.wave_sizes = vec![32];
    set_guessed_cc(&mut device);
    device.pci_address = field("Bus Location").map(|b| b.to_ascii_lowercase());
    Some(device)
}

pub(crate) fn read_proc(gpus_dir: &Path, notes: &mut Vec<String>) -> Vec<Device> {
    let Ok(entries) = std::fs::read_dir(gpus_dir) else {
        return Vec::new(); // no NVIDIA driver: not worth a note on most machines
    };
    let mut dirs: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    dirs.sort();
    dirs.into_iter()
        .filter_map(|dir| {
            let path = dir.join("information");
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    let device = parse_nvidia_proc_information(&text);
                    if device.is_none() {
                        notes.push(format!("{} has no `Model:` line; skipped", path.display()));
                    }
                    device
                }
                Err(e) => {
                    notes.push(format!("cannot read {}: {e}", path.display()));
                    None
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_names_with_commas_survive() {
        assert_eq!(
            split_csv("0, Foo, Bar GPU, 9.0, 81559, 00000000:19:00.0", 5).unwrap(),
            ["0", "Foo, Bar GPU", "9.0", "81559", "00000000:19:00.0"]
        );
        assert_eq!(split_csv("0, x", 5), None);
    }

    #[test]
    fn names_map_to_compute_capabilities() {
        assert_eq!(
            guess_compute_capability("NVIDIA H100 80GB HBM3"),
            Some("9.0")
        );
        assert_eq!(
            guess_compute_capability("NVIDIA A100-SXM4-40GB"),
            Some("8.0")
        );
        assert_eq!(guess_compute_capability("NVIDIA A10G"), Some("8.6"));
        assert_eq!(guess_compute_capability("Tesla T4"), Some("7.5"));
        assert_eq!(guess_compute_capability("NVIDIA L40S"), Some("8.9"));
        assert_eq!(guess_compute_capability("Mystery GPU"), None);
    }
}
