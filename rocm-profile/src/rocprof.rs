//! rocprofv3 (ROCprofiler-SDK): running it, and reading what it writes. Both of its output
//! formats are read **by name, never by position**, because every release adds columns:
//!
//! - the rocpd SQLite database (the default from ROCm 7.0): the `rocpd_metadata` view gives the
//!   schema version, the `kernels` view one row per dispatch, the `kernel_pmc_events` (newer) or
//!   `pmc_events` (older) view the counters, `rocpd_info_agent` the GPU ([`rocpd`]);
//! - the CSV files (`--output-format csv`, the only format before ROCm 7.0):
//!   `*kernel_trace.csv` and `*counter_collection.csv`, by column header ([`csv`]).
//!
//! What the readers expect is written from rocprofiler-sdk's own schema files
//! (`source/share/rocprofiler-sdk-rocpd/*.sql`) and CSV writer, and from its documentation; no
//! AMD GPU was available to this project, so they were tested on databases and CSV files the
//! tests build to that schema, never on rocprofv3's own output (`docs/profile.md`).

pub mod csv;
pub mod rocpd;
pub mod run;

use std::path::{Path, PathBuf};

use crate::dispatch::Collected;
use crate::error::ProfileError;

/// Read what rocprofv3 wrote under `dir` (searched recursively: rocprofv3 adds
/// `<hostname>/<pid>` levels): every rocpd database (`*.db`) if there is one, else the CSV files.
/// Several databases or CSV sets (one per process) are merged.
pub fn read_output(dir: &Path) -> Result<Collected, ProfileError> {
    let files = files_under(dir)?;
    let databases: Vec<&PathBuf> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "db"))
        .collect();
    let mut parts = Vec::new();
    if !databases.is_empty() {
        for db in databases {
            parts.push(rocpd::read(db)?);
        }
    } else {
        let traces: Vec<&PathBuf> = files
            .iter()
            .filter(|p| name_ends(p, "kernel_trace.csv"))
            .collect();
        for trace in traces {
            let counters = files
                .iter()
                .find(|p| name_ends(p, "counter_collection.csv") && p.parent() == trace.parent());
            let agents = files
                .iter()
                .find(|p| name_ends(p, "agent_info.csv") && p.parent() == trace.parent());
            parts.push(csv::read(
                trace,
                counters.map(PathBuf::as_path),
                agents.map(PathBuf::as_path),
            )?);
        }
    }
    let mut parts = parts.into_iter();
    let Some(mut all) = parts.next() else {
        return Err(ProfileError::NoOutput {
            tool: "rocprofv3".into(),
            what: "rocpd database (*.db) or kernel_trace.csv".into(),
            dir: dir.to_owned(),
        });
    };
    for p in parts {
        all.dispatches.extend(p.dispatches);
        all.notes.extend(p.notes);
        all.device = all.device.or(p.device);
        all.arch = all.arch.or(p.arch);
    }
    Ok(all)
}

fn name_ends(p: &Path, suffix: &str) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(suffix))
}

/// Every file under `dir`, sorted (so merged output is in a stable order).
pub(crate) fn files_under(dir: &Path) -> Result<Vec<PathBuf>, ProfileError> {
    let mut out = Vec::new();
    if !dir.exists() {
        // The tool made no folder: nothing was written (said as NoOutput by the caller).
        return Ok(out);
    }
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| ProfileError::io(&d, e))?;
        for entry in entries {
            let path = entry.map_err(|e| ProfileError::io(&d, e))?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Blocks in a grid from rocprofv3's grid size, which (as HSA's) counts work-items.
pub(crate) fn blocks(grid_items: u64, block: u32) -> u64 {
    grid_items.div_ceil(u64::from(block.max(1)))
}
