//! The workload's own launch log (`rocm_protocol::launch_log`, written by the runtime when
//! `ROCM_LAUNCH_LOG` is set): the timings of the cpu backend, and on every backend the launch
//! shapes, the declared bytes and FLOPs, and the driver's resources and occupancy.

use std::path::Path;

use rocm_kernels_core::Backend;
use rocm_protocol::launch_log::{read_launch_log, LaunchRecord};

use crate::dispatch::{Collected, Dispatch};
use crate::error::ProfileError;

/// Read a launch log; a missing file is an empty log (the workload launched nothing, or does
/// not use rocm-kernels).
pub fn read(path: &Path) -> Result<Vec<LaunchRecord>, ProfileError> {
    match std::fs::read_to_string(path) {
        Ok(text) => read_launch_log(&text).map_err(|source| ProfileError::LaunchLog {
            path: path.to_owned(),
            source,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(ProfileError::io(path, e)),
    }
}

/// The cpu backend's dispatches: every launch on `backend` with a duration (the runtime times
/// cpu launches, which complete before they return).
pub fn dispatches(records: &[LaunchRecord], backend: Backend) -> Collected {
    let mut out = Collected::new(
        "rocm-kernels launch log",
        "runtime timings of each launch",
        backend,
    );
    for r in records {
        let LaunchRecord::Launch(l) = r else { continue };
        if l.origin.backend != backend {
            continue;
        }
        let Some(ns) = l.duration_ns else { continue };
        out.device.get_or_insert_with(|| l.origin.device.clone());
        out.arch.get_or_insert_with(|| l.origin.arch.clone());
        let mut d = Dispatch::new(l.origin.kernel.clone(), ns as f64);
        d.start_ns = Some(l.start_ns);
        d.grid = Some(l.grid.map(u64::from));
        d.block = Some(l.block);
        d.shared_bytes = Some(l.shared_bytes);
        out.dispatches.push(d);
    }
    let others = records
        .iter()
        .filter(|r| matches!(r, LaunchRecord::Launch(l) if l.origin.backend != backend))
        .count();
    if others > 0 {
        out.notes.push(format!(
            "{others} launch(es) on other backends than {backend} are not in this profile"
        ));
    }
    out
}
