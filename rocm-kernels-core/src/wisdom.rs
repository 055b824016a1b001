//! The wisdom file: the best configuration `cargo rocm tune` found for each tunable kernel,
//! device and problem size, meant to be committed in the user's repository (`tune/wisdom.json`
//! by default) and compiled into the crate by its build script
//! (`rocm_kernels_build::Build::tuned`), so the runtime launches the best known configuration
//! (`rocm_kernels::tuning`).
//!
//! ```json
//! {
//!   "format": "cargo-rocm-wisdom",
//!   "version": 1,
//!   "kernels": {
//!     "matmul": {
//!       "defines": ["BM", "BN"],
//!       "entries": [{
//!         "backend": "nvidia", "arch": "sm_90", "device": "NVIDIA H100 80GB HBM3", "wave_size": 32,
//!         "problem": {"n": 2048}, "config": {"BM": 64, "BN": 128, "THREADS": 256},
//!         "time_ms": 1.21, "default_time_ms": 2.9, "strategy": "regression_prune",
//!         "evaluations": 100, "space": 1500, "tool": "cargo-rocm 0.1.0", "unix_time": 1767225600
//!       }]
//!     }
//!   }
//! }
//! ```
//!
//! An entry applies to a device of the same backend, architecture and wave size; among those,
//! the one whose problem size is nearest ([`nearest_problem`]) wins.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Backend;

/// The `format` field of every wisdom file.
pub const FORMAT: &str = "cargo-rocm-wisdom";
/// The version of the format this crate writes and reads.
pub const VERSION: u32 = 1;

/// A parameter's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    /// `true` or `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// Any other token (a type name such as `float`).
    Str(String),
}

impl ParamValue {
    /// As the C preprocessor sees it (`-DNAME=<this>`): `16`, `0.5`, `1`/`0` for booleans, a
    /// string as it is (a token such as `float`).
    pub fn define_text(&self) -> String {
        match self {
            ParamValue::Bool(b) => u8::from(*b).to_string(),
            ParamValue::Int(i) => i.to_string(),
            ParamValue::Float(f) => format!("{f:?}"),
            ParamValue::Str(s) => s.clone(),
        }
    }
}

impl std::fmt::Display for ParamValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValue::Str(s) => f.write_str(s),
            other => f.write_str(&other.define_text()),
        }
    }
}

/// A whole wisdom file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Wisdom {
    /// Always [`FORMAT`]; reading checks it.
    pub format: String,
    /// The format's version, [`VERSION`]; reading refuses any other.
    pub version: u32,
    /// Per tunable kernel (its tunable's name).
    pub kernels: BTreeMap<String, KernelWisdom>,
}

impl Default for Wisdom {
    fn default() -> Self {
        Wisdom {
            format: FORMAT.to_string(),
            version: VERSION,
            kernels: BTreeMap::new(),
        }
    }
}

/// What is known about one tunable kernel.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct KernelWisdom {
    /// The parameters passed to the compiler as definitions (`-DNAME=value`); the others only
    /// shape the launch.
    pub defines: Vec<String>,
    /// One entry per device kind and problem size.
    pub entries: Vec<WisdomEntry>,
}

/// The best configuration on one device for one problem size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WisdomEntry {
    /// Which backend measured it.
    pub backend: Backend,
    /// `sm_90`, `gfx90a`, `x86_64`.
    pub arch: String,
    /// The device's name, for people.
    pub device: String,
    /// Threads per wave (wavefront or warp) on that device.
    pub wave_size: u32,
    /// The problem size (the check's size names and values).
    pub problem: BTreeMap<String, i64>,
    /// The best configuration found: a value per tunable parameter.
    pub config: BTreeMap<String, ParamValue>,
    /// Its measured time in milliseconds.
    pub time_ms: f64,
    /// The declared default's time on the same device and problem, if it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_time_ms: Option<f64>,
    /// The search strategy that found it (`regression_prune`, `random`, ...).
    pub strategy: String,
    /// How many configurations the search measured.
    pub evaluations: usize,
    /// Valid configurations in the space.
    pub space: usize,
    /// What wrote it (`cargo-rocm 0.1.0`).
    pub tool: String,
    /// When (seconds since 1970).
    pub unix_time: u64,
}

impl WisdomEntry {
    /// Whether `other` is for the same device kind and problem (so it replaces this one).
    pub(crate) fn same_place(&self, other: &WisdomEntry) -> bool {
        self.backend == other.backend
            && self.arch == other.arch
            && self.device == other.device
            && self.wave_size == other.wave_size
            && self.problem == other.problem
    }
}

/// Why a wisdom file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum WisdomError {
    /// The file could not be read.
    #[error("cannot read the wisdom file {path}: {source}")]
    Read {
        /// The file's path.
        path: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The file could not be written.
    #[error("cannot write the wisdom file {path}: {source}")]
    Write {
        /// The file's path.
        path: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    #[error(
        "the wisdom file {path} is not valid: {message}; fix it or delete it (`cargo rocm tune` \
         writes a new one)"
    )]
    /// The text is not a wisdom file this version can read.
    Invalid {
        /// The file's path.
        path: String,
        /// What is wrong with it.
        message: String,
    },
}

impl Wisdom {
    /// Parse a wisdom file's text (`path` names it in errors).
    pub fn parse(text: &str, path: &str) -> Result<Wisdom, WisdomError> {
        let w: Wisdom = serde_json::from_str(text).map_err(|e| WisdomError::Invalid {
            path: path.to_string(),
            message: e.to_string(),
        })?;
        if w.format != FORMAT || w.version != VERSION {
            return Err(WisdomError::Invalid {
                path: path.to_string(),
                message: format!(
                    "format `{}` version {}, expected `{FORMAT}` version {VERSION}",
                    w.format, w.version
                ),
            });
        }
        Ok(w)
    }

    /// Read `path`; a missing file is an empty wisdom.
    pub fn load(path: &Path) -> Result<Wisdom, WisdomError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Wisdom::parse(&text, &path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Wisdom::default()),
            Err(source) => Err(WisdomError::Read {
                path: path.display().to_string(),
                source,
            }),
        }
    }

    /// Write to `path` (through a temporary file and a rename, so a reader never sees half a
    /// file), pretty-printed with sorted keys so diffs stay small.
    pub fn save(&self, path: &Path) -> Result<(), WisdomError> {
        let err = |source| WisdomError::Write {
            path: path.display().to_string(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let mut text = serde_json::to_string_pretty(self).expect("wisdom serializes");
        text.push('\n');
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, text).map_err(err)?;
        std::fs::rename(&tmp, path).map_err(err)
    }

    /// Record `entry` for `kernel`, replacing an entry for the same device and problem.
    pub fn record(&mut self, kernel: &str, defines: &[String], entry: WisdomEntry) {
        let k = self.kernels.entry(kernel.to_string()).or_default();
        k.defines = defines.to_vec();
        k.entries.retain(|e| !e.same_place(&entry));
        k.entries.push(entry);
        k.entries.sort_by(|a, b| {
            (a.backend, &a.arch, &a.device, a.wave_size, &a.problem).cmp(&(
                b.backend,
                &b.arch,
                &b.device,
                b.wave_size,
                &b.problem,
            ))
        });
    }
}

/// Which of `candidates` (problem sizes, as name → value lists) is nearest to `wanted`: the
/// smallest sum over the names of |ln(candidate / wanted)| (sizes scale multiplicatively: 1024
/// is as far from 512 as 2048 from 1024). A candidate missing a name of `wanted`, or with a
/// value ≤ 0 where the other is not equal, counts as infinitely far; ties go to the first.
///
/// ```
/// use rocm_kernels_core::wisdom::nearest_problem;
/// let sizes: [&[(&str, i64)]; 3] = [&[("n", 256)], &[("n", 1024)], &[("n", 4096)]];
/// assert_eq!(nearest_problem(&sizes, &[("n", 600)]), Some(1));
/// assert_eq!(nearest_problem(&sizes, &[("n", 100_000)]), Some(2));
/// assert_eq!(nearest_problem(&sizes, &[("m", 600)]), None);
/// ```
pub fn nearest_problem(candidates: &[&[(&str, i64)]], wanted: &[(&str, i64)]) -> Option<usize> {
    let distance = |c: &[(&str, i64)]| -> f64 {
        let mut d = 0.0;
        for (name, w) in wanted {
            let Some((_, v)) = c.iter().find(|(n, _)| n == name) else {
                return f64::INFINITY;
            };
            if v == w {
                continue;
            }
            if *v <= 0 || *w <= 0 {
                return f64::INFINITY;
            }
            d += ((*v as f64) / (*w as f64)).ln().abs();
        }
        d
    };
    let mut best: Option<(usize, f64)> = None;
    for (i, c) in candidates.iter().enumerate() {
        let d = distance(c);
        if d.is_finite() && best.is_none_or(|(_, b)| d < b) {
            best = Some((i, d));
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: i64, device: &str) -> WisdomEntry {
        WisdomEntry {
            backend: Backend::Cpu,
            arch: "x86_64".into(),
            device: device.into(),
            wave_size: 64,
            problem: [("n".to_string(), n)].into(),
            config: [("BM".to_string(), ParamValue::Int(32))].into(),
            time_ms: 1.0,
            default_time_ms: None,
            strategy: "random".into(),
            evaluations: 5,
            space: 10,
            tool: "test".into(),
            unix_time: 0,
        }
    }

    #[test]
    fn record_replaces_the_same_place_and_round_trips() {
        let mut w = Wisdom::default();
        w.record("mm", &["BM".into()], entry(256, "a"));
        w.record("mm", &["BM".into()], entry(512, "a"));
        let mut again = entry(256, "a");
        again.time_ms = 0.5;
        w.record("mm", &["BM".into()], again);
        let k = &w.kernels["mm"];
        assert_eq!(k.entries.len(), 2);
        assert_eq!(k.entries[0].time_ms, 0.5);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tune/wisdom.json");
        w.save(&path).unwrap();
        assert_eq!(Wisdom::load(&path).unwrap(), w);
        assert_eq!(
            Wisdom::load(&dir.path().join("none.json")).unwrap(),
            Wisdom::default()
        );
        std::fs::write(
            &path,
            "{\"format\": \"x\", \"version\": 1, \"kernels\": {}}",
        )
        .unwrap();
        let e = Wisdom::load(&path).unwrap_err().to_string();
        assert!(e.contains("expected `cargo-rocm-wisdom`"), "{e}");
    }

    #[test]
    fn values_as_defines() {
        assert_eq!(ParamValue::Int(16).define_text(), "16");
        assert_eq!(ParamValue::Bool(true).define_text(), "1");
        assert_eq!(ParamValue::Float(0.5).define_text(), "0.5");
        assert_eq!(ParamValue::Str("float".into()).define_text(), "float");
        let v: ParamValue = serde_json::from_str("16").unwrap();
        assert_eq!(v, ParamValue::Int(16));
        let v: ParamValue = serde_json::from_str("1.5").unwrap();
        assert_eq!(v, ParamValue::Float(1.5));
    }

    #[test]
    fn nearest_uses_ratios() {
        let sizes: [&[(&str, i64)]; 2] = [&[("m", 100), ("n", 100)], &[("m", 1000), ("n", 10)]];
        assert_eq!(nearest_problem(&sizes, &[("m", 200), ("n", 100)]), Some(0));
        assert_eq!(nearest_problem(&sizes, &[("m", 800), ("n", 12)]), Some(1));
        assert_eq!(nearest_problem(&[], &[("n", 1)]), None);
    }
}
