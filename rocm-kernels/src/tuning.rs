//! Launching a tunable kernel with the best configuration `cargo rocm tune` found for this
//! device and the nearest problem size, or with a declared default where nothing was found.
//!
//! The wisdom file (`tune/wisdom.json`, committed) is read by the build script, which compiles
//! one variant of the kernel's source per distinct set of compile-time parameters the file
//! names (`rocm_kernels_build::Build::compile_tuned`) and writes the whole table as static
//! data; [`include_tuned!`](crate::include_tuned) embeds it. At run time nothing is parsed or
//! compiled:
//!
//! ```ignore
//! // build.rs
//! rocm_kernels_build::Build::new().file("kernels/matmul.hip").compile_tuned("matmul", "tune/wisdom.json");
//! ```
//!
//! ```no_run
//! use rocm_kernels::tuning::{Param, TunedKernel};
//! # static KERNELS: rocm_kernels::KernelLibrary = rocm_kernels::KernelLibrary {
//! #     name: "kernels", code_objects: &[], kernels: &[], globals: &[] };
//! # static MATMUL: TunedKernel = TunedKernel { kernel: "matmul", defines: &[], entries: &[], variants: &[] };
//! // src/lib.rs:
//! // pub static MATMUL: &TunedKernel = rocm_kernels::include_tuned!("matmul");
//! const DEFAULT: &[(&str, Param)] = &[("BM", Param::Int(32)), ("THREADS", Param::Int(256))];
//!
//! let device = rocm_kernels::runtime::Device::default();
//! let chosen = MATMUL.select(device.info(), &[("n", 1024)], &KERNELS, DEFAULT);
//! println!("{}", chosen.why); // "tuned on ... for n=1024" or why the default runs
//! let module = device.load(chosen.library)?;
//! let kernel = module.kernel("matmul")?;
//! let threads = chosen.int("THREADS").unwrap_or(256);
//! # Ok::<(), rocm_kernels::runtime::RuntimeError>(())
//! ```

use crate::library::{Backend, KernelLibrary};
use crate::runtime::DeviceInfo;

pub use rocm_kernels_core::wisdom::nearest_problem;

/// A parameter's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Param {
    /// An integer (`-DBM=64`, a block size).
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// `true` or `false` (`1` or `0` as a definition).
    Bool(bool),
    /// Any other token (a type name such as `float`).
    Str(&'static str),
}

impl Param {
    /// The integer, if it is one.
    pub fn as_i64(self) -> Option<i64> {
        match self {
            Param::Int(i) => Some(i),
            _ => None,
        }
    }
    /// The number (integers too), if it is one.
    pub fn as_f64(self) -> Option<f64> {
        match self {
            Param::Int(i) => Some(i as f64),
            Param::Float(f) => Some(f),
            _ => None,
        }
    }
}

impl std::fmt::Display for Param {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Param::Int(i) => write!(f, "{i}"),
            Param::Float(x) => write!(f, "{x}"),
            Param::Bool(b) => write!(f, "{b}"),
            Param::Str(s) => f.write_str(s),
        }
    }
}

/// A configuration: parameter names and values.
pub type Config = &'static [(&'static str, Param)];

/// The integer value of parameter `name` in `config`.
pub fn int(config: Config, name: &str) -> Option<i64> {
    config
        .iter()
        .find(|(n, _)| *n == name)
        .and_then(|(_, v)| v.as_i64())
}

/// One compiled variant of the kernel's source: the compile-time parameters it was built with.
#[derive(Debug)]
pub struct Variant {
    /// The definitions it was compiled with (`("BM", "64")`), as passed to `-D`.
    pub defines: &'static [(&'static str, &'static str)],
    /// The library holding this variant's code.
    pub library: &'static KernelLibrary,
}

/// The best configuration found on one device for one problem size.
#[derive(Debug)]
pub struct TunedEntry {
    /// Which backend measured it.
    pub backend: Backend,
    /// `sm_90`, `gfx90a`, `x86_64`.
    pub arch: &'static str,
    /// The device's name, for people.
    pub device: &'static str,
    /// Threads per wave on that device.
    pub wave_size: u32,
    /// The problem size it was tuned for (size names and values).
    pub problem: &'static [(&'static str, i64)],
    /// The best configuration found.
    pub config: Config,
    /// Index into [`TunedKernel::variants`].
    pub variant: usize,
    /// Its measured time, in milliseconds.
    pub time_ms: f64,
    /// The declared default's time on the same device and problem, in milliseconds, if it ran.
    pub default_time_ms: Option<f64>,
}

/// A tunable kernel's wisdom, as the build script compiled it.
#[derive(Debug)]
pub struct TunedKernel {
    /// The kernel's name in its library.
    pub kernel: &'static str,
    /// The parameters that are compile-time definitions.
    pub defines: &'static [&'static str],
    /// One entry per device kind and problem size.
    pub entries: &'static [TunedEntry],
    /// The compiled variants the entries point into.
    pub variants: &'static [Variant],
}

/// What to launch: a library holding the kernel, and the configuration to launch it with.
#[derive(Debug, Clone)]
pub struct Selected {
    /// The library to load: the chosen entry's variant, or the default build.
    pub library: &'static KernelLibrary,
    /// The configuration to launch with: the entry's, or the declared default.
    pub config: Config,
    /// The wisdom entry used; `None` when the default was chosen.
    pub tuned: Option<&'static TunedEntry>,
    /// Why, for people and logs: where the tuned configuration comes from, or why the default
    /// runs.
    pub why: String,
}

impl Selected {
    /// The value of parameter `name`.
    pub fn param(&self, name: &str) -> Option<Param> {
        self.config
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }

    /// The integer value of parameter `name`.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.param(name).and_then(Param::as_i64)
    }

    /// Whether a tuned configuration was chosen.
    pub fn is_tuned(&self) -> bool {
        self.tuned.is_some()
    }
}

fn show_problem(problem: &[(&str, i64)]) -> String {
    problem
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl TunedKernel {
    /// The wisdom entry for `device` and the problem size nearest `problem`
    /// ([`nearest_problem`]): entries of the device's backend, architecture and wave size,
    /// preferring those tuned on a device of the same name. `Err` says why there is none.
    pub fn lookup(
        &'static self,
        device: &DeviceInfo,
        problem: &[(&str, i64)],
    ) -> Result<&'static TunedEntry, String> {
        let fits: Vec<&'static TunedEntry> = self
            .entries
            .iter()
            .filter(|e| {
                e.backend == device.backend
                    && e.arch == device.arch
                    && e.wave_size == device.wave_size
            })
            .collect();
        if fits.is_empty() {
            return Err(if self.entries.is_empty() {
                format!(
                    "no tuned configuration of `{}` (run `cargo rocm tune`)",
                    self.kernel
                )
            } else {
                format!(
                    "`{}` was not tuned for {} {} (wave {}): run `cargo rocm tune` there",
                    self.kernel, device.backend, device.arch, device.wave_size
                )
            });
        }
        let named: Vec<&'static TunedEntry> = fits
            .iter()
            .copied()
            .filter(|e| e.device == device.name)
            .collect();
        let pool = if named.is_empty() { fits } else { named };
        let sizes: Vec<&[(&str, i64)]> = pool.iter().map(|e| e.problem).collect();
        nearest_problem(&sizes, problem)
            .map(|i| pool[i])
            .ok_or_else(|| {
                format!(
                    "no tuned configuration of `{}` for a problem with {} (tuned: {})",
                    self.kernel,
                    show_problem(problem),
                    pool.iter()
                        .map(|e| show_problem(e.problem))
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            })
    }

    /// What to launch on `device` for `problem`: the tuned configuration and its variant, or
    /// `default` in `default_library` (the kernel as the crate's ordinary build compiled it)
    /// when there is none.
    pub fn select(
        &'static self,
        device: &DeviceInfo,
        problem: &[(&str, i64)],
        default_library: &'static KernelLibrary,
        default: Config,
    ) -> Selected {
        match self.lookup(device, problem) {
            Ok(entry) => match self.variants.get(entry.variant) {
                Some(v) => Selected {
                    library: v.library,
                    config: entry.config,
                    tuned: Some(entry),
                    why: format!(
                        "tuned on {} for {} ({:.4} ms{})",
                        entry.device,
                        show_problem(entry.problem),
                        entry.time_ms,
                        entry
                            .default_time_ms
                            .map(|d| format!(", default {d:.4} ms"))
                            .unwrap_or_default()
                    ),
                },
                None => Selected {
                    library: default_library,
                    config: default,
                    tuned: None,
                    why: format!(
                        "the wisdom of `{}` names variant {} that was not built: the default runs",
                        self.kernel, entry.variant
                    ),
                },
            },
            Err(why) => Selected {
                library: default_library,
                config: default,
                tuned: None,
                why: format!("{why}: the default runs"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static LIB_A: KernelLibrary = KernelLibrary {
        name: "a",
        code_objects: &[],
        kernels: &[],
        globals: &[],
    };
    static LIB_B: KernelLibrary = KernelLibrary {
        name: "b",
        code_objects: &[],
        kernels: &[],
        globals: &[],
    };
    static DEFAULT_LIB: KernelLibrary = KernelLibrary {
        name: "default",
        code_objects: &[],
        kernels: &[],
        globals: &[],
    };
    static TUNED: TunedKernel = TunedKernel {
        kernel: "mm",
        defines: &["BM"],
        entries: &[
            TunedEntry {
                backend: Backend::Cpu,
                arch: "x86_64",
                device: "cpu",
                wave_size: 64,
                problem: &[("n", 256)],
                config: &[("BM", Param::Int(16))],
                variant: 0,
                time_ms: 1.0,
                default_time_ms: Some(2.0),
            },
            TunedEntry {
                backend: Backend::Cpu,
                arch: "x86_64",
                device: "cpu",
                wave_size: 64,
                problem: &[("n", 1024)],
                config: &[("BM", Param::Int(64))],
                variant: 1,
                time_ms: 9.0,
                default_time_ms: None,
            },
        ],
        variants: &[
            Variant {
                defines: &[("BM", "16")],
                library: &LIB_A,
            },
            Variant {
                defines: &[("BM", "64")],
                library: &LIB_B,
            },
        ],
    };

    fn cpu(wave_size: u32) -> DeviceInfo {
        DeviceInfo {
            backend: Backend::Cpu,
            name: "cpu".into(),
            arch: "x86_64".into(),
            wave_size,
            total_memory: 0,
            compute_units: 1,
        }
    }

    #[test]
    fn nearest_problem_wins_and_other_devices_fall_back() {
        const DEFAULT: Config = &[("BM", Param::Int(32))];
        let s = TUNED.select(&cpu(64), &[("n", 300)], &DEFAULT_LIB, DEFAULT);
        assert_eq!(s.library.name, "a");
        assert_eq!(s.int("BM"), Some(16));
        assert!(s.why.contains("tuned on cpu for n=256"), "{}", s.why);
        let s = TUNED.select(&cpu(64), &[("n", 800)], &DEFAULT_LIB, DEFAULT);
        assert_eq!(s.library.name, "b");
        let s = TUNED.select(&cpu(32), &[("n", 256)], &DEFAULT_LIB, DEFAULT);
        assert!(!s.is_tuned());
        assert_eq!(s.library.name, "default");
        assert_eq!(s.int("BM"), Some(32));
        assert!(
            s.why.contains("not tuned for cpu x86_64 (wave 32)"),
            "{}",
            s.why
        );
        let s = TUNED.select(&cpu(64), &[("m", 256)], &DEFAULT_LIB, DEFAULT);
        assert!(!s.is_tuned() && s.why.contains("m=256"), "{}", s.why);
    }
}
