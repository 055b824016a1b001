//! rocprofv3's CSV files, read by column header.
//!
//! `*kernel_trace.csv` (one row per dispatch). rocprofiler-sdk 0.5 (ROCm 6.3) writes `Kind`,
//! `Agent_Id`, `Queue_Id`, `Thread_Id`, `Dispatch_Id`, `Kernel_Id`, `Kernel_Name`,
//! `Correlation_Id`, `Start_Timestamp`, `End_Timestamp`, `Private_Segment_Size`,
//! `Group_Segment_Size`, `Workgroup_Size_X/Y/Z`, `Grid_Size_X/Y/Z`; later releases add
//! `Stream_Id`, `VGPR_Count`, `Accum_VGPR_Count`, `SGPR_Count` and call the LDS and scratch
//! columns `LDS_Block_Size` and `Scratch_Size`. Grid sizes count work-items.
//!
//! `*counter_collection.csv` (one row per dispatch and counter): `Dispatch_Id`, `Kernel_Name`,
//! `Counter_Name`, `Counter_Value`, among others.
//!
//! `*agent_info.csv`: one row per agent; `Agent_Type` (`GPU`), `Name` (`gfx942`),
//! `Product_Name`.

use std::collections::HashMap;
use std::path::Path;

use rocm_kernels_core::Backend;

use crate::dispatch::{kernel_name, Collected, Dispatch};
use crate::error::ProfileError;

/// A CSV file's rows with its header, looked up by column name.
pub(crate) struct Table {
    path: std::path::PathBuf,
    header: Vec<String>,
    rows: Vec<::csv::StringRecord>,
}

impl Table {
    pub(crate) fn open(path: &Path) -> Result<Table, ProfileError> {
        let text = std::fs::read(path).map_err(|e| ProfileError::io(path, e))?;
        Table::parse(path, &text)
    }

    pub(crate) fn parse(path: &Path, bytes: &[u8]) -> Result<Table, ProfileError> {
        let mut reader = ::csv::ReaderBuilder::new()
            .flexible(true)
            .from_reader(bytes);
        let header = reader
            .headers()
            .map_err(|e| ProfileError::malformed(path, e.to_string()))?
            .iter()
            .map(|h| h.trim().to_owned())
            .collect();
        let rows = reader
            .records()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ProfileError::malformed(path, e.to_string()))?;
        Ok(Table {
            path: path.to_owned(),
            header,
            rows,
        })
    }

    /// The index of the first of `names` the header has.
    pub(crate) fn column(&self, names: &[&str]) -> Option<usize> {
        names
            .iter()
            .find_map(|n| self.header.iter().position(|h| h == n))
    }

    pub(crate) fn require(&self, names: &[&str]) -> Result<usize, ProfileError> {
        self.column(names)
            .ok_or_else(|| ProfileError::MissingColumn {
                path: self.path.clone(),
                wanted: names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(" or "),
                found: self.header.join(", "),
            })
    }

    pub(crate) fn header(&self) -> &[String] {
        &self.header
    }

    pub(crate) fn rows(&self) -> &[::csv::StringRecord] {
        &self.rows
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// A cell as a number, `None` when absent or empty.
pub(crate) fn number(row: &::csv::StringRecord, column: Option<usize>) -> Option<f64> {
    let cell = row.get(column?)?.trim().replace(',', "");
    cell.parse().ok()
}

/// Read a kernel trace, and the counters and agents beside it.
pub fn read(
    trace: &Path,
    counters: Option<&Path>,
    agents: Option<&Path>,
) -> Result<Collected, ProfileError> {
    let t = Table::open(trace)?;
    let name = t.require(&["Kernel_Name"])?;
    let start = t.require(&["Start_Timestamp"])?;
    let end = t.require(&["End_Timestamp"])?;
    let dispatch = t.column(&["Dispatch_Id"]);
    let lds = t.column(&["LDS_Block_Size", "Group_Segment_Size"]);
    let wg = ["Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z"].map(|c| t.column(&[c]));
    let grid = ["Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"].map(|c| t.column(&[c]));
    let file = trace
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let mut out = Collected::new("rocprofv3", format!("CSV ({file})"), Backend::Amd);
    let mut by_dispatch = HashMap::new();
    for (i, row) in t.rows().iter().enumerate() {
        let bad = |what: &str| {
            ProfileError::malformed(trace, format!("row {}: {what} is not a number", i + 2))
        };
        let s = number(row, Some(start)).ok_or_else(|| bad("Start_Timestamp"))?;
        let e = number(row, Some(end)).ok_or_else(|| bad("End_Timestamp"))?;
        let mut d = Dispatch::new(
            kernel_name(row.get(name).unwrap_or_default()),
            (e - s).max(0.0),
        );
        d.start_ns = Some(s as u64);
        if let [Some(x), Some(y), Some(z)] = wg.map(|c| number(row, c)) {
            let block = [x as u32, y as u32, z as u32];
            d.block = Some(block);
            if let [Some(gx), Some(gy), Some(gz)] = grid.map(|c| number(row, c)) {
                d.grid = Some([
                    super::blocks(gx as u64, block[0]),
                    super::blocks(gy as u64, block[1]),
                    super::blocks(gz as u64, block[2]),
                ]);
            }
        }
        d.shared_bytes = number(row, lds).map(|v| v as u32);
        if let Some(id) = number(row, dispatch) {
            by_dispatch.insert(id as u64, out.dispatches.len());
        }
        out.dispatches.push(d);
    }
    if let Some(path) = counters {
        let c = Table::open(path)?;
        let id = c.require(&["Dispatch_Id"])?;
        let counter = c.require(&["Counter_Name"])?;
        let value = c.require(&["Counter_Value"])?;
        let mut orphans = 0;
        for row in c.rows() {
            let (Some(d), Some(v)) = (number(row, Some(id)), number(row, Some(value))) else {
                continue;
            };
            match by_dispatch.get(&(d as u64)) {
                Some(&i) => {
                    let name = row.get(counter).unwrap_or_default().to_owned();
                    *out.dispatches[i].counters.entry(name).or_insert(0.0) += v;
                }
                None => orphans += 1,
            }
        }
        if orphans > 0 {
            out.notes.push(format!(
                "{}: {orphans} counter value(s) name a dispatch the kernel trace does not list; they are left out",
                c.path().display()
            ));
        }
    }
    if let Some(path) = agents {
        let a = Table::open(path)?;
        let kind = a.column(&["Agent_Type"]);
        let name = a.column(&["Name"]);
        let product = a.column(&["Product_Name", "Marketing_Name"]);
        if let Some(row) = a.rows().iter().find(|r| {
            kind.and_then(|k| r.get(k))
                .is_some_and(|t| t.trim() == "GPU")
        }) {
            out.arch = name.and_then(|n| row.get(n)).map(str::to_owned);
            out.device = product.and_then(|n| row.get(n)).map(str::to_owned);
        }
    }
    Ok(out)
}
