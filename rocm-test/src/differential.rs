//! Differential checks ([`Check::differential`](crate::Check::differential)): a kernel whose
//! expected outputs come from another backend rather than a Rust reference.
//!
//! - On a GPU trial the expected outputs are the cpu backend's for the same inputs and launch
//!   (its wave size the GPU's, race check off), computed in the same process.
//! - On a cpu trial they are a snapshot: outputs recorded once on a GPU (with
//!   `ROCM_TEST_RECORD=1`) and committed, in [`Suite::snapshots`](crate::Suite::snapshots)'
//!   folder, one JSON file per check, one entry per case keyed by a hash of the case's inputs and
//!   launch. Generated inputs are the same on every machine (the seed is stable per check), so a
//!   GPU-less CI checks the cpu backend against what the GPU computed.
//!
//! Recording never replaces a GPU's outputs with the cpu backend's: a cpu trial records only
//! cases no GPU has recorded (useful to try a differential check on a machine without a GPU).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use rocm_kernels::{Backend, KernelLibrary};
use serde::{Deserialize, Serialize};

use crate::element::HostBuf;
use crate::target::{Target, TrialPlace};
use crate::Error;

/// The environment variable that makes differential checks record their outputs.
pub const RECORD_VAR: &str = "ROCM_TEST_RECORD";

/// Where differential checks find their expected outputs: the cpu backend, made on first use
/// per wave size, and the snapshot folder.
pub(crate) struct Oracle {
    library: &'static KernelLibrary,
    cpu: Mutex<BTreeMap<u32, Arc<dyn Target>>>,
    snapshots: Option<PathBuf>,
    record: bool,
    /// Snapshot files read so far (and written, when recording), by path.
    files: Mutex<BTreeMap<PathBuf, SnapshotFile>>,
}

impl std::fmt::Debug for Oracle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oracle")
            .field("snapshots", &self.snapshots)
            .field("record", &self.record)
            .finish_non_exhaustive()
    }
}

/// What tests set instead of the environment and the real cpu backend.
#[derive(Clone, Default)]
pub(crate) struct OracleSetup {
    pub record: Option<bool>,
    pub cpu: Option<Arc<dyn Target>>,
}

/// One check's recorded outputs.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct SnapshotFile {
    /// The check's name.
    check: String,
    /// The kernel it launches.
    kernel: String,
    /// By case key (see [`case_key`]).
    cases: BTreeMap<String, SnapshotCase>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SnapshotCase {
    /// The trial's place (`nvidia/sm_90`, `cpu/w32`).
    recorded_on: String,
    outputs: Vec<SnapshotBuf>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SnapshotBuf {
    name: String,
    /// The element type's name ([`crate::ElemType::name`]).
    #[serde(rename = "type")]
    ty: String,
    len: usize,
    /// The elements' bytes in standard base64, in the host's byte order (little-endian on
    /// every host the project supports).
    data: String,
}

impl Oracle {
    /// `setup` overrides the environment's recording switch and the cpu backend (tests).
    pub(crate) fn new(
        library: &'static KernelLibrary,
        snapshots: Option<PathBuf>,
        setup: &OracleSetup,
    ) -> Self {
        let record = setup
            .record
            .unwrap_or_else(|| std::env::var(RECORD_VAR).is_ok_and(|v| !v.is_empty() && v != "0"));
        let mut cpu = BTreeMap::new();
        if let Some(t) = &setup.cpu {
            for w in [32, 64] {
                cpu.insert(w, t.clone());
            }
        }
        Oracle {
            library,
            cpu: Mutex::new(cpu),
            snapshots,
            record,
            files: Mutex::new(BTreeMap::new()),
        }
    }

    /// The cpu backend with this wave size, race check off.
    pub(crate) fn cpu(&self, wave_size: u32) -> Arc<dyn Target> {
        self.cpu
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(wave_size)
            .or_insert_with(|| crate::runtime::cpu_target(self.library, wave_size, None))
            .clone()
    }

    fn file_of(&self, check: &str) -> Option<PathBuf> {
        let name: String = check
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        // Distinct names that sanitize alike stay apart.
        let tag = crate::run::fnv1a(check.as_bytes()) & 0xffff;
        self.snapshots
            .as_ref()
            .map(|d| d.join(format!("{name}-{tag:04x}.json")))
    }

    fn with_file<R>(
        &self,
        path: &Path,
        f: impl FnOnce(&mut SnapshotFile) -> R,
    ) -> Result<R, Error> {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if !files.contains_key(path) {
            let file = match std::fs::read_to_string(path) {
                Ok(text) => serde_json::from_str(&text).map_err(|e| {
                    Error::Failed(format!(
                        "the snapshot file {} is malformed ({e}): delete it and record it again \
                         with {RECORD_VAR}=1 on a GPU\n",
                        path.display()
                    ))
                })?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => SnapshotFile::default(),
                Err(e) => {
                    return Err(Error::Failed(format!(
                        "cannot read the snapshot file {}: {e}\n",
                        path.display()
                    )))
                }
            };
            files.insert(path.to_owned(), file);
        }
        Ok(f(files.get_mut(path).expect("just inserted")))
    }

    /// Fill `expected` (in `names`' order) with this case's recorded outputs and say where they
    /// were recorded: `Ok(None)` when they never were.
    pub(crate) fn load(
        &self,
        check: &str,
        key: &str,
        names: &[String],
        expected: &mut [HostBuf],
    ) -> Result<Option<String>, Error> {
        let Some(path) = self.file_of(check) else {
            return Ok(None);
        };
        let case = self.with_file(&path, |f| f.cases.get(key).cloned())?;
        let Some(case) = case else { return Ok(None) };
        for (name, want) in names.iter().zip(expected.iter_mut()) {
            let buf = case
                .outputs
                .iter()
                .find(|b| &b.name == name)
                .ok_or_else(|| stale(&path, format!("it has no output `{name}`")))?;
            if buf.ty != want.elem_type().name() || buf.len != want.len() {
                return Err(stale(
                    &path,
                    format!(
                        "its `{name}` holds {} {} where the check now makes {} {}",
                        buf.len,
                        buf.ty,
                        want.len(),
                        want.elem_type().name()
                    ),
                ));
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(&buf.data)
                .ok()
                .filter(|b| b.len() == want.as_bytes().len())
                .ok_or_else(|| stale(&path, format!("its `{name}` is not valid data")))?;
            want.as_bytes_mut().copy_from_slice(&bytes);
        }
        Ok(Some(case.recorded_on))
    }

    /// Record this case's outputs, when recording (see the module's docs for what is kept).
    pub(crate) fn record(
        &self,
        check: &str,
        kernel: &str,
        key: &str,
        place: &TrialPlace,
        outputs: &[(&String, &HostBuf)],
    ) -> Result<(), Error> {
        if !self.record {
            return Ok(());
        }
        let Some(path) = self.file_of(check) else {
            return Err(Error::Declaration(format!(
                "{RECORD_VAR} is set but the suite has no snapshot folder: call \
                 `Suite::snapshots(dir)`"
            )));
        };
        let on_gpu = place.backend != Backend::Cpu;
        let text = self.with_file(&path, |f| {
            let keep_gpus = f
                .cases
                .get(key)
                .is_some_and(|c| !c.recorded_on.starts_with("cpu") && !on_gpu);
            if keep_gpus {
                return None;
            }
            f.check = check.to_owned();
            f.kernel = kernel.to_owned();
            f.cases.insert(
                key.to_owned(),
                SnapshotCase {
                    recorded_on: place.to_string(),
                    outputs: outputs
                        .iter()
                        .map(|(name, buf)| SnapshotBuf {
                            name: (*name).clone(),
                            ty: buf.elem_type().name().to_owned(),
                            len: buf.len(),
                            data: base64::engine::general_purpose::STANDARD.encode(buf.as_bytes()),
                        })
                        .collect(),
                },
            );
            Some(serde_json::to_string_pretty(f).expect("snapshots serialize"))
        })?;
        let Some(text) = text else { return Ok(()) };
        // Written whole next to the file, then renamed over it: an interrupted run leaves the
        // previous snapshot intact.
        let write = || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
            std::fs::write(&tmp, text + "\n")?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|e| {
            Error::Failed(format!(
                "cannot write the snapshot file {}: {e}\n",
                path.display()
            ))
        })
    }

    pub(crate) fn recording(&self) -> bool {
        self.record
    }

    pub(crate) fn snapshot_dir(&self) -> Option<&Path> {
        self.snapshots.as_deref()
    }
}

fn stale(path: &Path, why: String) -> Error {
    Error::Failed(format!(
        "the snapshot file {} does not fit the check: {why}; record it again with \
         {RECORD_VAR}=1 on a GPU\n",
        path.display()
    ))
}

/// A case's key: a hash of the kernel, the launch and every value the kernel is given (argument
/// bytes and variables set before the launch), in hex.
pub(crate) fn case_key(kernel: &str, launch: &str, values: &[&[u8]]) -> String {
    let mut bytes = Vec::with_capacity(kernel.len() + launch.len() + 64);
    bytes.extend_from_slice(kernel.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(launch.as_bytes());
    for v in values {
        bytes.extend_from_slice(&(v.len() as u64).to_le_bytes());
        bytes.extend_from_slice(v);
    }
    format!("{:016x}", crate::run::fnv1a(&bytes))
}
