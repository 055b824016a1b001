//! Writing the launch log (`rocm_protocol::launch_log`) when `ROCM_LAUNCH_LOG` names a
//! file: one JSON line per launch, and one per kernel and block size with the driver's
//! resources where the backend reports them. `cargo rocm profile` sets the variable and reads
//! the file; without it [`log`] is `None` and launches do nothing more.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use rocm_protocol::launch_log::{
    Function, Launch, LaunchRecord, Origin, ENV_LAUNCH_LOG, LAUNCH_LOG_VERSION,
};

use super::backend::DriverResources;
use super::{DeviceInfo, LaunchConfig};

/// The open log of this process.
pub(crate) struct LaunchLog {
    file: Mutex<File>,
    opened: Instant,
    /// (library, kernel, block threads, dynamic shared bytes) already described by a `function`
    /// record.
    described: Mutex<HashSet<(String, String, u32, u32)>>,
}

/// The log, opened on first use; `None` when `ROCM_LAUNCH_LOG` is unset or cannot be opened
/// (then a warning on stderr says why, once: profiling must not break the workload).
pub(crate) fn log() -> Option<&'static LaunchLog> {
    static LOG: OnceLock<Option<LaunchLog>> = OnceLock::new();
    LOG.get_or_init(|| {
        let path = std::env::var_os(ENV_LAUNCH_LOG).filter(|p| !p.is_empty())?;
        match OpenOptions::new().create(true).append(true).open(&path) {
            Ok(file) => Some(LaunchLog {
                file: Mutex::new(file),
                opened: Instant::now(),
                described: Mutex::new(HashSet::new()),
            }),
            Err(e) => {
                eprintln!(
                    "warning: rocm-kernels: cannot open the launch log {} named by {ENV_LAUNCH_LOG}: {e}; launches are not recorded",
                    std::path::Path::new(&path).display()
                );
                None
            }
        }
    })
    .as_ref()
}

/// What a launch declared and measured, beside its configuration.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Work {
    pub bytes: Option<u64>,
    pub flops: Option<u64>,
}

impl LaunchLog {
    /// Nanoseconds since the log was opened.
    pub(crate) fn now_ns(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn write(&self, record: &LaunchRecord) {
        let line = record.to_line();
        // One write per line: with O_APPEND, lines of concurrent writers do not interleave.
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let _ = file.write_all(line.as_bytes());
    }

    fn origin(library: &str, kernel: &str, device: &DeviceInfo) -> Origin {
        Origin {
            v: LAUNCH_LOG_VERSION,
            pid: std::process::id(),
            library: library.to_owned(),
            kernel: kernel.to_owned(),
            backend: device.backend,
            device: device.name.clone(),
            arch: device.arch.clone(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch(
        &self,
        library: &str,
        kernel: &str,
        device: &DeviceInfo,
        config: &LaunchConfig,
        start_ns: u64,
        duration_ns: Option<u64>,
        work: Work,
    ) {
        let dim = |d: super::Dim3| [d.x, d.y, d.z];
        self.write(&LaunchRecord::Launch(Launch {
            origin: Self::origin(library, kernel, device),
            grid: dim(config.grid),
            block: dim(config.block),
            shared_bytes: config.shared_bytes,
            start_ns,
            duration_ns,
            bytes: work.bytes,
            flops: work.flops,
        }));
    }

    /// Whether this kernel and block shape still needs a `function` record (true once).
    pub(crate) fn first_time(&self, library: &str, kernel: &str, config: &LaunchConfig) -> bool {
        let threads = u32::try_from(config.block.count()).unwrap_or(u32::MAX);
        self.described
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((
                library.to_owned(),
                kernel.to_owned(),
                threads,
                config.shared_bytes,
            ))
    }

    pub(crate) fn function(
        &self,
        library: &str,
        kernel: &str,
        device: &DeviceInfo,
        config: &LaunchConfig,
        resources: DriverResources,
    ) {
        self.write(&LaunchRecord::Function(Function {
            origin: Self::origin(library, kernel, device),
            block_threads: u32::try_from(config.block.count()).unwrap_or(u32::MAX),
            shared_bytes: config.shared_bytes,
            warp_size: device.wave_size,
            resources,
        }));
    }
}
