//! Finding the compute devices of this machine: AMD GPUs (KFD sysfs topology, else `rocminfo`,
//! else `lspci` with a PCI-ID table), NVIDIA GPUs (`nvidia-smi`, else `/proc/driver/nvidia`),
//! and the CPU backend, which is always there.
//!
//! Every source is read as text and parsed by a function that takes that text, so tests feed
//! captured outputs. Nothing here panics on a missing, unreadable or malformed source: each
//! problem becomes a note in [`Detection::notes`].
//!
//! ```no_run
//! use rocm_kernels_core::Backend;
//! use rocm_toolkit::detect;
//! let found = detect::detect();
//! for gpu in found.devices_of(Backend::Amd) {
//!     println!("{} {:?} {:?} CUs", gpu.name, gpu.arch, gpu.compute_units);
//! }
//! ```

mod cpu;
mod kfd;
mod lspci;
mod nvidia;
mod rocminfo;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::process::{is_executable, probe, which, ProbeError};
use rocm_kernels_core::library::Backend;

pub use cpu::{cpu_device, parse_cpu_model, parse_mem_total, CPU_WAVE_SIZES};
pub use kfd::{decode_gfx_target_version, parse_properties, read_kfd_topology, Properties};
pub use lspci::{amd_pci_device, parse_lspci, PciGpu};
pub use nvidia::{
    guess_compute_capability, parse_nvidia_proc_information, parse_nvidia_smi, NVIDIA_SMI_QUERY,
};
pub use rocminfo::parse_rocminfo;

/// One compute device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Device {
    /// The backend that runs kernels on it.
    pub backend: Backend,
    /// Marketing name where known (`AMD Instinct MI300X`, `NVIDIA H100 80GB HBM3`, the CPU model).
    pub name: String,
    /// What code is compiled for: `gfx942`, `sm_90`, or the host architecture (`x86_64`).
    pub arch: Option<String>,
    /// Compute units (AMD), streaming multiprocessors (NVIDIA, when known) or logical cores (CPU).
    pub compute_units: Option<u32>,
    /// Wave (warp) sizes kernels run with: `[64]` on CDNA, `[32]` on RDNA and NVIDIA, and
    /// both on the CPU backend, which emulates either.
    pub wave_sizes: Vec<u32>,
    /// Local data share (shared memory) per workgroup, in bytes.
    pub lds_bytes: Option<u64>,
    /// Device memory (VRAM, or system RAM for the CPU), in bytes.
    pub memory_bytes: Option<u64>,
    /// NVIDIA compute capability, `major.minor`.
    pub compute_capability: Option<String>,
    /// PCI address, `domain:bus:device.function`.
    pub pci_address: Option<String>,
    /// Where this came from.
    pub source: DeviceSource,
    /// True when `arch` or `compute_capability` was inferred from a PCI ID or a product name
    /// rather than reported by the driver.
    pub guess: bool,
}

impl Device {
    fn new(backend: Backend, name: impl Into<String>, source: DeviceSource) -> Self {
        Device {
            backend,
            name: name.into(),
            arch: None,
            compute_units: None,
            wave_sizes: Vec::new(),
            lds_bytes: None,
            memory_bytes: None,
            compute_capability: None,
            pci_address: None,
            source,
            guess: false,
        }
    }
}

/// Where a [`Device`] was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceSource {
    /// `/sys/class/kfd/kfd/topology/nodes/*` (the amdgpu kernel driver).
    KfdSysfs,
    /// `rocminfo` output.
    Rocminfo,
    /// `lspci -nn` and a PCI-ID table: a guess, the driver may not even be loaded.
    Lspci,
    /// `nvidia-smi --query-gpu`.
    NvidiaSmi,
    /// `/proc/driver/nvidia/gpus/*/information`.
    NvidiaProc,
    /// `/proc/cpuinfo` and the process's CPU affinity.
    Cpuinfo,
}

impl DeviceSource {
    /// The name used in JSON and tables: `kfd-sysfs`, `rocminfo`, `lspci`, `nvidia-smi`,
    /// `nvidia-proc`, `cpuinfo`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceSource::KfdSysfs => "kfd-sysfs",
            DeviceSource::Rocminfo => "rocminfo",
            DeviceSource::Lspci => "lspci",
            DeviceSource::NvidiaSmi => "nvidia-smi",
            DeviceSource::NvidiaProc => "nvidia-proc",
            DeviceSource::Cpuinfo => "cpuinfo",
        }
    }
}

impl std::fmt::Display for DeviceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What [`detect`] found, and notes on every source that could not be used and why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Detection {
    /// Every device found: AMD GPUs, then NVIDIA GPUs (each from the first source that saw
    /// any), then the CPU.
    pub devices: Vec<Device>,
    /// For people: what a source could not tell or why it failed (`nvidia-smi failed: …`, a
    /// GPU seen only by lspci and what to do about it).
    pub notes: Vec<String>,
}

impl Detection {
    /// The devices of one backend, in detection order.
    pub fn devices_of(&self, backend: Backend) -> impl Iterator<Item = &Device> {
        self.devices.iter().filter(move |d| d.backend == backend)
    }

    /// Whether at least one device of `backend` was found.
    pub fn has(&self, backend: Backend) -> bool {
        self.devices_of(backend).next().is_some()
    }
}

/// Where [`detect_with`] looks. The default is this machine; tests point the roots at fixture
/// trees and set the programs to `None` (or to scripts printing captured output).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetectOptions {
    /// Root of sysfs (`/sys`); KFD topology is read from `<root>/class/kfd/kfd/topology/nodes`.
    pub sysfs_root: PathBuf,
    /// Root of procfs (`/proc`): `cpuinfo`, `meminfo`, `driver/nvidia/gpus`.
    pub proc_root: PathBuf,
    /// `rocminfo` to run when KFD sysfs shows no GPU; `None` to skip.
    pub rocminfo: Option<PathBuf>,
    /// `lspci` to run when neither KFD nor rocminfo shows a GPU; `None` to skip.
    pub lspci: Option<PathBuf>,
    /// `nvidia-smi` to run; `None` to skip straight to `/proc/driver/nvidia`.
    pub nvidia_smi: Option<PathBuf>,
}

impl Default for DetectOptions {
    fn default() -> Self {
        // rocminfo is often only in a ROCm install's bin/, which need not be on PATH.
        let rocminfo = which("rocminfo").or_else(|| {
            let p = PathBuf::from("/opt/rocm/bin/rocminfo");
            is_executable(&p).then_some(p)
        });
        DetectOptions {
            sysfs_root: PathBuf::from("/sys"),
            proc_root: PathBuf::from("/proc"),
            rocminfo: Some(rocminfo.unwrap_or_else(|| PathBuf::from("rocminfo"))),
            lspci: Some(PathBuf::from("lspci")),
            nvidia_smi: Some(PathBuf::from("nvidia-smi")),
        }
    }
}

impl DetectOptions {
    /// Read sysfs and procfs under `root` (`root/sys`, `root/proc`) and run no programs.
    pub fn fixture(root: &Path) -> Self {
        DetectOptions {
            sysfs_root: root.join("sys"),
            proc_root: root.join("proc"),
            rocminfo: None,
            lspci: None,
            nvidia_smi: None,
        }
    }
}

/// Detect this machine's devices (see [`detect_with`]).
pub fn detect() -> Detection {
    detect_with(&DetectOptions::default())
}

/// Detect devices from the sources `options` names: AMD, then NVIDIA, then the CPU.
pub fn detect_with(options: &DetectOptions) -> Detection {
    let mut found = Detection::default();
    let mut lspci_gpus: Option<Vec<PciGpu>> = None;
    let mut run_lspci = |notes: &mut Vec<String>| -> Vec<PciGpu> {
        lspci_gpus
            .get_or_insert_with(|| match &options.lspci {
                Some(lspci) => match probe(lspci, &["-nn"]) {
                    Ok(text) => parse_lspci(&text),
                    Err(e) => {
                        if e != ProbeError::NotFound {
                            notes.push(format!("lspci -nn failed: {e}"));
                        }
                        Vec::new()
                    }
                },
                None => Vec::new(),
            })
            .clone()
    };

    // AMD: the kernel driver's own view first; rocminfo (needs /dev/kfd access) next; lspci
    // last, which sees the hardware even without a driver.
    let kfd_root = options.sysfs_root.join("class/kfd/kfd/topology/nodes");
    let mut amd = read_kfd_topology(&kfd_root, &mut found.notes);
    if amd.is_empty() {
        if let Some(rocminfo) = &options.rocminfo {
            match probe(rocminfo, &[]) {
                Ok(text) => amd = parse_rocminfo(&text),
                Err(ProbeError::NotFound) => {}
                // Without KFD rocminfo is bound to fail; the note above already says why.
                Err(_) if !kfd_root.exists() => {}
                Err(e) => found.notes.push(format!("rocminfo failed: {e}")),
            }
        }
    }
    if amd.is_empty() {
        for gpu in run_lspci(&mut found.notes)
            .into_iter()
            .filter(|g| g.vendor_id == lspci::AMD)
        {
            found.notes.push(format!(
                "{} at {} was found by lspci only: the amdgpu kernel driver is not serving \
                 it (no {}). Load it (`sudo modprobe amdgpu`) and make sure you are in the \
                 `render` and `video` groups; its gfx target is a guess from the PCI ID",
                gpu.description,
                gpu.address,
                kfd_root.display()
            ));
            amd.push(gpu.into_device());
        }
    }
    found.devices.extend(amd);

    // NVIDIA.
    let mut nv = Vec::new();
    if let Some(smi) = &options.nvidia_smi {
        match nvidia::run_nvidia_smi(smi) {
            Ok(devices) => nv = devices,
            Err(ProbeError::NotFound) => {}
            Err(e) => found.notes.push(format!("nvidia-smi failed: {e}")),
        }
    }
    if nv.is_empty() {
        nv = nvidia::read_proc(
            &options.proc_root.join("driver/nvidia/gpus"),
            &mut found.notes,
        );
    }
    if nv.is_empty() {
        for gpu in run_lspci(&mut found.notes)
            .into_iter()
            .filter(|g| g.vendor_id == lspci::NVIDIA)
        {
            found.notes.push(format!(
                "{} at {} was found by lspci only: the NVIDIA driver is not loaded \
                 (install it, e.g. `sudo apt-get install nvidia-driver`)",
                gpu.description, gpu.address
            ));
            nv.push(gpu.into_device());
        }
    }
    found.devices.extend(nv);

    // The CPU backend.
    let real_proc = options.proc_root == Path::new("/proc");
    let read = |name: &str| std::fs::read_to_string(options.proc_root.join(name)).ok();
    let cpuinfo = read("cpuinfo");
    if cpuinfo.is_none() {
        found.notes.push(format!(
            "cannot read {}; the CPU model is unknown",
            options.proc_root.join("cpuinfo").display()
        ));
    }
    let logical = if real_proc {
        std::thread::available_parallelism()
            .ok()
            .map(|n| n.get() as u32)
    } else {
        None
    };
    found.devices.push(cpu_device(
        cpuinfo.as_deref().unwrap_or(""),
        read("meminfo").as_deref().unwrap_or(""),
        logical,
    ));
    found
}

/// Bytes in human units (`64 GiB`, `512 MiB`, `64 KiB`), for tables.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value >= 100.0 || value.fract() < 0.05 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::format_bytes;

    #[test]
    fn source_names_match_their_json() {
        use super::DeviceSource::*;
        for source in [KfdSysfs, Rocminfo, Lspci, NvidiaSmi, NvidiaProc, Cpuinfo] {
            let json = serde_json::to_value(source).unwrap();
            assert_eq!(json.as_str(), Some(source.as_str()));
        }
    }

    #[test]
    fn bytes_are_formatted_for_people() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(64 * 1024), "64 KiB");
        assert_eq!(format_bytes(192 * 1024 * 1024 * 1024), "192 GiB");
        assert_eq!(format_bytes(1536 * 1024 * 1024), "1.5 GiB");
    }
}
