//! The CPU backend: always present. Its "compute units" are the logical cores this process may
//! use, and it runs kernels with either wave size.

use super::{Device, DeviceSource};
use rocm_kernels_core::library::Backend;

/// Wave sizes the CPU backend emulates.
pub const CPU_WAVE_SIZES: [u32; 2] = [32, 64];

/// The CPU model from `/proc/cpuinfo` text: `model name` (x86), else `Model` or `Hardware`
/// (Arm boards), else `cpu model` (MIPS) or `cpu` (POWER).
pub fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    for key in ["model name", "Model", "Hardware", "cpu model", "cpu"] {
        let found = cpuinfo
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, v)| k.trim() == key && !v.trim().is_empty())
            .map(|(_, v)| v.split_whitespace().collect::<Vec<_>>().join(" "));
        if found.is_some() {
            return found;
        }
    }
    None
}

/// `MemTotal` from `/proc/meminfo` text, in bytes.
pub fn parse_mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut parts = line["MemTotal:".len()..].split_whitespace();
    let value: u64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") | None => Some(value * 1024),
        Some(_) => None,
    }
}

/// The CPU device from `/proc/cpuinfo` and `/proc/meminfo` text. `logical_cores` is what the
/// process may use (its affinity); when `None`, the `processor` entries of `cpuinfo` are counted.
pub fn cpu_device(cpuinfo: &str, meminfo: &str, logical_cores: Option<u32>) -> Device {
    let name = parse_cpu_model(cpuinfo).unwrap_or_else(|| "host CPU".to_owned());
    let mut device = Device::new(Backend::Cpu, name, DeviceSource::Cpuinfo);
    device.arch = Some(std::env::consts::ARCH.to_owned());
    let counted = cpuinfo
        .lines()
        .filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor"))
        .count() as u32;
    device.compute_units = logical_cores.or((counted > 0).then_some(counted));
    device.wave_sizes = CPU_WAVE_SIZES.to_vec();
    device.memory_bytes = parse_mem_total(meminfo);
    device
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_and_arm_models_are_read() {
        let x86 = "processor\t: 0\nmodel name\t: AMD EPYC 9654 96-Core Processor\n\
                   processor\t: 1\nmodel name\t: AMD EPYC 9654 96-Core Processor\n";
        assert_eq!(
            parse_cpu_model(x86).as_deref(),
            Some("AMD EPYC 9654 96-Core Processor")
        );
        let dev = cpu_device(x86, "MemTotal:       16318412 kB\n", None);
        assert_eq!(dev.compute_units, Some(2));
        assert_eq!(dev.memory_bytes, Some(16318412 * 1024));
        assert_eq!(dev.wave_sizes, [32, 64]);
        let arm =
            "processor\t: 0\nBogoMIPS\t: 108.00\nCPU part\t: 0xd0c\n\nModel\t: Raspberry Pi 5\n";
        assert_eq!(parse_cpu_model(arm).as_deref(), Some("Raspberry Pi 5"));
        assert_eq!(cpu_device("", "", Some(8)).compute_units, Some(8));
        assert_eq!(cpu_device("", "", None).name, "host CPU");
    }
}
