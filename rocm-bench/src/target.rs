//! The devices a benchmark runs on, and their names in benchmark ids.
//!
//! Each usable device is one [`BenchTarget`], named by its trial place as `rocm-test` names test
//! trials (`cpu/w64`, `nvidia/sm_90`, `amd/gfx90a`), so `saxpy/nvidia/sm_90/n=1M` is the
//! benchmark of the trial `saxpy::nvidia/sm_90`. `cargo rocm bench --backend/--device` narrow the
//! list through `ROCM_BENCH_BACKEND` and `ROCM_BENCH_DEVICE`. On a machine with several GPUs of
//! one architecture each has ids of its own (`saxpy/nvidia/sm_90#1/n=1M`).

use rocm_kernels::place::named;
use rocm_kernels::runtime::{CpuOptions, Device};
use rocm_kernels::{Backend, TrialPlace};

use crate::DeviceRecord;
use rocm_protocol::bench::BenchSelection;

/// A device to benchmark on, with its place name.
#[derive(Debug, Clone)]
pub struct BenchTarget {
    device: Device,
    place: TrialPlace,
}

impl BenchTarget {
    /// The target for a device: its backend and its architecture (`w32`/`w64` on cpu).
    pub fn new(device: Device) -> Self {
        BenchTarget::numbered(device, None)
    }

    /// The target for GPU `ordinal` of its backend on a machine with several of its
    /// architecture: `nvidia/sm_90#1`, as the test trials of that device are named.
    fn numbered(device: Device, ordinal: Option<usize>) -> Self {
        let info = device.info();
        let place = match info.backend {
            Backend::Cpu => TrialPlace::cpu(info.wave_size),
            b => TrialPlace::gpu(b, &info.arch, ordinal.unwrap_or(0), ordinal.is_some()),
        };
        BenchTarget { place, device }
    }

    /// The target for a device at a place already named (by [`rocm_kernels::place::named`]).
    fn at(device: Device, place: TrialPlace) -> Self {
        BenchTarget { place, device }
    }

    /// The device to load kernels, upload buffers and open streams on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The device's backend (to pick smaller sizes on `cpu`, or a vendor baseline).
    pub fn backend(&self) -> Backend {
        self.place.backend
    }

    /// `cpu/w64`, `nvidia/sm_90`.
    pub fn place(&self) -> String {
        self.place.to_string()
    }

    /// `NAME/PLACE`: the group name of a benchmark on this device (`saxpy/cpu/w64`).
    pub fn id(&self, name: &str) -> String {
        format!("{name}/{}", self.place)
    }

    /// What the runtime knows of the device, for the history.
    pub fn record(&self) -> DeviceRecord {
        let info = self.device.info();
        DeviceRecord {
            backend: info.backend.as_str().to_owned(),
            place: self.place(),
            name: info.name.clone(),
            arch: Some(info.arch.clone()),
            ..Default::default()
        }
    }
}

/// The cpu device benchmarks use: unchecked (no guard pages: checking is the tests' job), wave
/// 64, every core.
pub fn cpu_device() -> Device {
    Device::cpu(CpuOptions {
        checked: false,
        ..CpuOptions::from_env()
    })
}

/// Every device selected for benchmarks, GPUs first and the cpu backend last. Backends asked
/// for that have no device here are said on stderr (`cargo rocm bench` refuses them earlier).
pub fn targets() -> Vec<BenchTarget> {
    let selection = BenchSelection::from_env().unwrap_or_else(|e| {
        eprintln!("rocm-bench: {e}; benchmarking every device");
        BenchSelection::default()
    });
    let probe = Device::probe();
    for (backend, why) in &probe.unavailable {
        if selection.backends.contains(backend) {
            eprintln!("rocm-bench: no {backend} device: {why}");
        }
    }
    // Ordinals count each backend's devices; ids carry one where an architecture has several.
    named(&probe.available)
        .into_iter()
        .map(|(place, d)| {
            if d.backend() == Backend::Cpu {
                return BenchTarget::new(cpu_device());
            }
            BenchTarget::at(d.clone(), place)
        })
        .filter(|t| selection.admits(t.backend(), &t.place(), &t.device().info().name))
        .collect()
}
