//! What the machine says about a device beyond what the runtime knows: driver and toolchain
//! versions, clocks where readable. Read once per run and added to every result of that device.

use std::collections::HashMap;
use std::process::Command;

use rocm_protocol::bench::DeviceRecord;

/// Driver, toolchain and clocks per backend, read when first asked.
#[derive(Default)]
pub struct MachineInfo {
    cache: HashMap<String, DeviceRecord>,
}

fn first_line(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}

/// The first `cpu MHz` of `/proc/cpuinfo` (the clock of one core when read; it varies).
fn cpu_mhz() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    parse_cpu_mhz(&text)
}

pub fn parse_cpu_mhz(cpuinfo: &str) -> Option<f64> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("cpu MHz"))?
        .split(':')
        .nth(1)?
        .trim()
        .parse()
        .ok()
}

/// `nvidia-smi`'s driver version and current SM and memory clocks of the first GPU.
pub fn parse_nvidia_smi_clocks(line: &str) -> (Option<String>, Option<f64>, Option<f64>) {
    let mut f = line.split(',').map(str::trim);
    let driver = f.next().filter(|s| !s.is_empty()).map(str::to_owned);
    let sm = f.next().and_then(|s| s.parse().ok());
    let mem = f.next().and_then(|s| s.parse().ok());
    (driver, sm, mem)
}

impl MachineInfo {
    /// Fills what `record` lacks from what this machine says about its backend.
    pub fn complete(&mut self, record: &mut DeviceRecord) {
        let extra = self
            .cache
            .entry(record.backend.clone())
            .or_insert_with(|| probe(&record.backend));
        if record.driver_version.is_none() {
            record.driver_version = extra.driver_version.clone();
        }
        if record.toolchain_version.is_none() {
            record.toolchain_version = extra.toolchain_version.clone();
        }
        if record.gpu_clock_mhz.is_none() {
            record.gpu_clock_mhz = extra.gpu_clock_mhz;
        }
        if record.mem_clock_mhz.is_none() {
            record.mem_clock_mhz = extra.mem_clock_mhz;
        }
    }
}

fn probe(backend: &str) -> DeviceRecord {
    let mut r = DeviceRecord::default();
    match backend {
        "cpu" => {
            r.driver_version = std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|v| format!("linux {}", v.trim()));
            let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned());
            r.toolchain_version = first_line(&cxx, &["--version"]);
            r.gpu_clock_mhz = cpu_mhz();
        }
        "nvidia" => {
            if let Some(line) = first_line(
                "nvidia-smi",
                &[
                    "--query-gpu=driver_version,clocks.sm,clocks.mem",
                    "--format=csv,noheader,nounits",
                ],
            ) {
                let (driver, sm, mem) = parse_nvidia_smi_clocks(&line);
                r.driver_version = driver;
                r.gpu_clock_mhz = sm;
                r.mem_clock_mhz = mem;
            }
            r.toolchain_version = rocm_toolkit::nvcc::find_nvcc(&|k| std::env::var_os(k))
                .ok()
                .and_then(|nvcc| rocm_toolkit::nvcc::nvcc_version(&nvcc.path))
                .map(|v| format!("nvcc {v}"));
        }
        "amd" => {
            r.driver_version = std::fs::read_to_string("/sys/module/amdgpu/version")
                .ok()
                .map(|v| format!("amdgpu {}", v.trim()));
        }
        _ => {}
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_clocks() {
        assert_eq!(
            parse_cpu_mhz("processor\t: 0\ncpu MHz\t\t: 2445.406\n"),
            Some(2445.406)
        );
        assert_eq!(
            parse_nvidia_smi_clocks("580.95.05, 1980, 2619"),
            (Some("580.95.05".into()), Some(1980.0), Some(2619.0))
        );
        assert_eq!(
            parse_nvidia_smi_clocks("580.95.05, [N/A], [N/A]"),
            (Some("580.95.05".into()), None, None)
        );
    }
}
