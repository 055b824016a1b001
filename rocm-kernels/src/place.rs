//! Where work runs, by name: a backend and a target (`cpu/w64`, `amd/gfx90a`, `nvidia/sm_90`,
//! `nvidia/sm_90#1`). The test harness names its trials by place (`saxpy::nvidia/sm_90`), the
//! bench crate its benchmark ids (`saxpy/nvidia/sm_90/n=1M`) and the tuner its results, all with
//! the one rule here, so a trial, a benchmark and a tuning result of one device carry one name.

use std::fmt;

use crate::runtime::Device;
use crate::Backend;

/// A place: a backend and its target there.
///
/// ```
/// use rocm_kernels::{Backend, TrialPlace};
/// assert_eq!(TrialPlace::cpu(64).to_string(), "cpu/w64");
/// assert_eq!(TrialPlace::gpu(Backend::Nvidia, "sm_90", 1, false).to_string(), "nvidia/sm_90");
/// assert_eq!(TrialPlace::gpu(Backend::Nvidia, "sm_90", 1, true).to_string(), "nvidia/sm_90#1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TrialPlace {
    /// The backend.
    pub backend: Backend,
    /// `w32`/`w64` (cpu wave size), `gfx90a`, `sm_90`, `sm_90#1`, or empty when the backend has
    /// no target here.
    pub target: String,
}

impl TrialPlace {
    /// The cpu backend at a wave size: `cpu/w64`.
    pub fn cpu(wave_size: u32) -> TrialPlace {
        TrialPlace {
            backend: Backend::Cpu,
            target: format!("w{wave_size}"),
        }
    }

    /// GPU `ordinal` (counted among its backend's devices in the driver's order, as `cargo rocm
    /// detect` lists them) of architecture `arch`: `nvidia/sm_90`, or, when `shared` (other
    /// devices of this backend and architecture take part too), `nvidia/sm_90#1`, so each gets
    /// trials, benchmark ids and tuning results of its own.
    pub fn gpu(backend: Backend, arch: &str, ordinal: usize, shared: bool) -> TrialPlace {
        TrialPlace {
            backend,
            target: if shared {
                format!("{arch}#{ordinal}")
            } else {
                arch.to_owned()
            },
        }
    }

    /// The places of the devices taking part in a run, each given with its ordinal among its
    /// backend's devices: the cpu backend at its wave size, a GPU by its architecture, with
    /// `#ordinal` where another device of its backend and architecture takes part
    /// ([`TrialPlace::gpu`]).
    pub fn of_devices(devices: &[(usize, &Device)]) -> Vec<TrialPlace> {
        devices
            .iter()
            .map(|(ordinal, d)| {
                let info = d.info();
                if info.backend == Backend::Cpu {
                    return TrialPlace::cpu(info.wave_size);
                }
                let shared = devices
                    .iter()
                    .filter(|(_, o)| o.backend() == info.backend && o.info().arch == info.arch)
                    .count()
                    > 1;
                TrialPlace::gpu(info.backend, &info.arch, *ordinal, shared)
            })
            .collect()
    }
}

impl fmt::Display for TrialPlace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.target.is_empty() {
            write!(f, "{}", self.backend)
        } else {
            write!(f, "{}/{}", self.backend, self.target)
        }
    }
}

/// Each device of a list (`Device::probe().available`) at its place, named by
/// [`TrialPlace::of_devices`] with the ordinals of [`with_ordinals`]: the names bench ids and
/// `cargo rocm bench --device` use.
pub fn named(devices: &[Device]) -> Vec<(TrialPlace, &Device)> {
    let numbered = with_ordinals(devices);
    TrialPlace::of_devices(&numbered)
        .into_iter()
        .zip(numbered.into_iter().map(|(_, d)| d))
        .collect()
}

/// Each device of a list (`Device::probe().available`) with its ordinal among its backend's
/// devices: the numbering of `--devices`, `cargo rocm detect` and [`TrialPlace::gpu`].
pub fn with_ordinals(devices: &[Device]) -> Vec<(usize, &Device)> {
    devices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let ordinal = devices[..i]
                .iter()
                .filter(|o| o.backend() == d.backend())
                .count();
            (ordinal, d)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(TrialPlace::cpu(32).to_string(), "cpu/w32");
        let none = TrialPlace {
            backend: Backend::Nvidia,
            target: String::new(),
        };
        assert_eq!(none.to_string(), "nvidia");
        assert_eq!(
            TrialPlace::gpu(Backend::Amd, "gfx90a", 0, false).to_string(),
            "amd/gfx90a"
        );
        assert_eq!(
            TrialPlace::gpu(Backend::Amd, "gfx90a", 2, true).to_string(),
            "amd/gfx90a#2"
        );
    }

    #[test]
    fn ordinals_count_each_backends_devices() {
        use crate::runtime::CpuOptions;
        let cpu = |wave_size| {
            Device::cpu(CpuOptions {
                wave_size,
                ..CpuOptions::default()
            })
        };
        let devices = [cpu(64), cpu(32)];
        let numbered = with_ordinals(&devices);
        assert_eq!(numbered.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 1]);
        let places: Vec<String> = TrialPlace::of_devices(&numbered)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(places, ["cpu/w64", "cpu/w32"]);
    }
}
