//! The per-kernel resource table: rows read from each manifest's code objects, rendered for
//! people or as JSON, plus the warnings (spills, scratch) worth acting on.

use std::path::{Path, PathBuf};

use rocm_code_object::CodeObjectError;
use rocm_kernels_core::manifest::{BuildManifest, ManifestObject};
use rocm_kernels_core::ObjectFormat;
use serde::Serialize;

/// One kernel on one target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelRow {
    pub source: String,
    pub backend: String,
    pub target: String,
    /// The symbol name (`_Z4axpyfPKfPfi`).
    pub kernel: String,
    /// The C++ name when the symbol is mangled (`axpy(float, float const*, float*, int)`).
    pub demangled: Option<String>,
    /// VGPRs, AGPRs included on targets with a unified register file.
    pub vgpr_count: u32,
    pub agpr_count: Option<u32>,
    pub sgpr_count: u32,
    /// Static LDS per work-group, bytes.
    pub lds_bytes: u32,
    /// Scratch per work-item, bytes.
    pub scratch_bytes: u32,
    pub vgpr_spill_count: Option<u32>,
    pub sgpr_spill_count: Option<u32>,
    pub wavefront_size: u32,
    pub max_flat_workgroup_size: u32,
    /// Theoretical occupancy at the largest workgroup the kernel allows and no dynamic LDS (what
    /// clang's `-Rpass-analysis=kernel-resource-usage` prints): waves per SIMD, the most the
    /// hardware holds, and what limits it (`rocm-occupancy`).
    pub occupancy: Option<OccupancyCell>,
}

/// The occupancy column of a kernel row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OccupancyCell {
    pub waves_per_simd: u32,
    pub max_waves_per_simd: u32,
    /// `vgprs`, `lds`, `workgroup_size`, ... (`rocm_occupancy::Limiter`).
    pub limiter: rocm_occupancy::Limiter,
}

impl OccupancyCell {
    fn text(&self) -> String {
        format!(
            "{}/{} {}",
            self.waves_per_simd,
            self.max_waves_per_simd,
            rocm_occupancy::corpus::limiter_key(self.limiter)
        )
    }
}

impl KernelRow {
    fn display_name(&self) -> &str {
        self.demangled.as_deref().unwrap_or(&self.kernel)
    }

    /// A warning for spills or scratch use, if any.
    pub fn warning(&self) -> Option<String> {
        let (v, s) = (
            self.vgpr_spill_count.unwrap_or(0),
            self.sgpr_spill_count.unwrap_or(0),
        );
        if v > 0 || s > 0 {
            return Some(format!(
                "`{}` spills on {} ({v} VGPRs, {s} SGPRs; {} bytes of scratch per work-item, {}): \
                 reduce live values, or allow more registers per work-item with a smaller \
                 `__launch_bounds__`",
                self.display_name(),
                self.target,
                self.scratch_bytes,
                self.source
            ));
        }
        (self.scratch_bytes > 0).then(|| {
            format!(
                "`{}` uses {} bytes of scratch per work-item on {} ({}): a private array \
                 indexed at run time or a call stack; scratch is slow global memory",
                self.display_name(),
                self.scratch_bytes,
                self.target,
                self.source
            )
        })
    }
}

/// One kernel in one NVIDIA cubin, from ptxas's resource report kept beside the cubin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NvidiaRow {
    pub source: String,
    /// `sm_90`.
    pub target: String,
    pub kernel: String,
    pub demangled: Option<String>,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory per block, bytes.
    pub shared_bytes: u32,
    /// Stack frame per thread, bytes (local memory).
    pub stack_bytes: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
    pub barriers: u32,
}

impl NvidiaRow {
    /// A warning for spills to local memory, if any.
    pub fn warning(&self) -> Option<String> {
        (self.spill_store_bytes > 0 || self.spill_load_bytes > 0).then(|| {
            format!(
                "`{}` spills on {} ({} bytes stored, {} loaded per thread, {}): reduce live \
                 values, or allow more registers with a smaller `__launch_bounds__`",
                self.demangled.as_deref().unwrap_or(&self.kernel),
                self.target,
                self.spill_store_bytes,
                self.spill_load_bytes,
                self.source
            )
        })
    }
}

/// An object whose kernels are not read (yet): why, instead of numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectNote {
    pub source: String,
    pub backend: String,
    pub format: String,
    pub target: String,
    pub note: String,
}

/// One kernel library (one manifest).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LibraryReport {
    pub package: String,
    pub name: String,
    pub manifest: PathBuf,
    pub kernels: Vec<KernelRow>,
    pub nvidia_kernels: Vec<NvidiaRow>,
    pub notes: Vec<ObjectNote>,
    /// How the cpu backend runs each kernel (from the build's `cpu-execution.txt`): `regions`,
    /// `per-thread loop (no barriers)` or `fibers: <why>`.
    pub cpu: Vec<CpuExecution>,
}

/// One kernel of the cpu build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpuExecution {
    pub kernel: String,
    pub execution: String,
}

/// The cpu build's report beside a manifest (`<name>/cpu/cpu-execution.txt`), if there is one.
/// How the cpu build runs each kernel, as the manifest records it.
fn cpu_execution(manifest: &BuildManifest) -> Vec<CpuExecution> {
    manifest
        .kernels
        .iter()
        .filter_map(|k| {
            Some(CpuExecution {
                kernel: k.name.clone(),
                execution: k.cpu.as_ref()?.execution.clone(),
            })
        })
        .collect()
}

/// Reading an object listed in a manifest failed.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot read code object {path} (listed in {manifest}): {source}")]
    Io {
        path: PathBuf,
        manifest: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot parse code object {path} (listed in {manifest}): {source}")]
    Parse {
        path: PathBuf,
        manifest: PathBuf,
        source: CodeObjectError,
    },
}

/// Read every object of a manifest into rows (AMD) or notes (formats not parsed yet).
pub fn library_report(
    package: &str,
    manifest_path: &Path,
    manifest: &BuildManifest,
) -> Result<LibraryReport, ReportError> {
    let mut report = LibraryReport {
        package: package.to_owned(),
        name: manifest.name.clone(),
        manifest: manifest_path.to_owned(),
        kernels: Vec::new(),
        nvidia_kernels: Vec::new(),
        notes: Vec::new(),
        cpu: cpu_execution(manifest),
    };
    for object in &manifest.objects {
        match object.format {
            ObjectFormat::AmdgpuElf => {
                report.kernels.extend(amd_rows(manifest_path, object)?);
            }
            ObjectFormat::Cubin => match nvidia_rows(object) {
                Some(rows) => report.nvidia_kernels.extend(rows),
                None => report
                    .notes
                    .push(note(object, "no ptxas resource report beside it")),
            },
            ObjectFormat::Ptx => report.notes.push(note(
                object,
                "PTX is compiled by the driver at load time; its resources are those of the cubin",
            )),
            ObjectFormat::CudaSource => report.notes.push(note(
                object,
                "built without nvcc: compiled by NVRTC at run time, so no resources are known yet",
            )),
        }
    }
    Ok(report)
}

fn note(object: &ManifestObject, text: &str) -> ObjectNote {
    ObjectNote {
        source: object.source.clone(),
        backend: object.backend.to_string(),
        format: object.format.as_str().to_owned(),
        target: object.target.clone(),
        note: text.to_owned(),
    }
}

/// Rows of a cubin from the report the build kept beside it (`None` when there is none).
fn nvidia_rows(object: &ManifestObject) -> Option<Vec<NvidiaRow>> {
    let path = rocm_kernels_build::nvidia_resources_path(&object.path);
    let text = std::fs::read_to_string(path).ok()?;
    let kernels: Vec<rocm_toolkit::nvcc::KernelResources> = serde_json::from_str(&text).ok()?;
    let target = object.target.clone();
    Some(
        kernels
            .into_iter()
            .map(|k| NvidiaRow {
                source: object.source.clone(),
                target: target.clone(),
                demangled: demangle(&k.symbol),
                kernel: k.symbol,
                registers: k.registers,
                shared_bytes: k.shared_bytes,
                stack_bytes: k.stack_frame_bytes,
                spill_store_bytes: k.spill_store_bytes,
                spill_load_bytes: k.spill_load_bytes,
                barriers: k.barriers,
            })
            .collect(),
    )
}

fn amd_rows(manifest: &Path, object: &ManifestObject) -> Result<Vec<KernelRow>, ReportError> {
    let parse_err = |source| ReportError::Parse {
        path: object.path.clone(),
        manifest: manifest.to_owned(),
        source,
    };
    let bytes = std::fs::read(&object.path).map_err(|source| ReportError::Io {
        path: object.path.clone(),
        manifest: manifest.to_owned(),
        source,
    })?;
    let objects = rocm_code_object::parse(&bytes).map_err(parse_err)?;
    let mut rows = Vec::new();
    for entry in objects.gpu_entries() {
        let target = entry.target_string();
        // An occupancy the model cannot give (a processor it does not know) leaves the cell empty.
        let occupancies = rocm_occupancy::code_object_occupancy(entry).unwrap_or_default();
        for k in entry.kernels().map_err(parse_err)? {
            let occupancy = occupancies
                .iter()
                .find(|o| o.name == k.name)
                .and_then(|o| o.occupancy.as_ref().ok())
                .map(|o| OccupancyCell {
                    waves_per_simd: o.waves_per_simd,
                    max_waves_per_simd: o.limits.hardware,
                    limiter: o.limiter,
                });
            rows.push(KernelRow {
                source: object.source.clone(),
                backend: object.backend.to_string(),
                target: target.clone(),
                demangled: demangle(&k.name),
                kernel: k.name,
                vgpr_count: k.vgpr_count,
                agpr_count: k.agpr_count,
                sgpr_count: k.sgpr_count,
                lds_bytes: k.group_segment_fixed_size,
                scratch_bytes: k.private_segment_fixed_size,
                vgpr_spill_count: k.vgpr_spill_count,
                sgpr_spill_count: k.sgpr_spill_count,
                wavefront_size: k.wavefront_size,
                max_flat_workgroup_size: k.max_flat_workgroup_size,
                occupancy,
            });
        }
    }
    Ok(rows)
}

fn demangle(name: &str) -> Option<String> {
    if !name.starts_with("_Z") {
        return None;
    }
    cpp_demangle::Symbol::new(name).ok()?.demangle().ok()
}

fn opt(v: Option<u32>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// The human table of one library.
pub fn render(lib: &LibraryReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "kernel library `{}` (package {})",
        lib.name, lib.package
    );
    let header = [
        "kernel",
        "target",
        "VGPR",
        "AGPR",
        "SGPR",
        "LDS",
        "scratch",
        "spills v/s",
        "wave",
        "occupancy",
    ];
    let rows: Vec<[String; 10]> = lib
        .kernels
        .iter()
        .map(|r| {
            [
                r.display_name().to_owned(),
                r.target.clone(),
                r.vgpr_count.to_string(),
                opt(r.agpr_count),
                r.sgpr_count.to_string(),
                r.lds_bytes.to_string(),
                r.scratch_bytes.to_string(),
                format!("{}/{}", opt(r.vgpr_spill_count), opt(r.sgpr_spill_count)),
                r.wavefront_size.to_string(),
                r.occupancy
                    .as_ref()
                    .map_or_else(|| "-".to_owned(), OccupancyCell::text),
            ]
        })
        .collect();
    let line = aligned_columns(&header, &rows);
    let mut current_source: Option<&str> = None;
    for (row, cells) in lib.kernels.iter().zip(&rows) {
        if current_source != Some(&row.source) {
            current_source = Some(&row.source);
            let _ = writeln!(out, "  {} ({})", row.source, row.backend);
            let _ = writeln!(out, "{}", line(&header));
        }
        let _ = writeln!(out, "{}", line(&cells.each_ref().map(String::as_str)));
    }
    out.push_str(&render_nvidia(&lib.nvidia_kernels));
    for note in &lib.notes {
        let _ = writeln!(
            out,
            "  {} ({}, {} for {}): {}",
            note.source, note.backend, note.format, note.target, note.note
        );
    }
    if !lib.cpu.is_empty() {
        let regions = lib
            .cpu
            .iter()
            .filter(|c| c.execution.starts_with("regions"))
            .count();
        let _ = writeln!(
            out,
            "  cpu backend: {regions} of {} kernel(s) run without fibers (region form)",
            lib.cpu.len()
        );
        for c in lib
            .cpu
            .iter()
            .filter(|c| !c.execution.starts_with("regions"))
        {
            let _ = writeln!(out, "    {}: {}", c.kernel, c.execution);
        }
    }
    if lib.kernels.is_empty() && lib.nvidia_kernels.is_empty() && lib.notes.is_empty() {
        let _ = writeln!(out, "  (no code objects)");
    }
    out
}

/// A formatter for the lines of a table whose columns fit `header` and every row: the first two
/// columns (names) left-aligned, the numbers right-aligned, indented under a source line.
fn aligned_columns<const N: usize>(
    header: &[&str; N],
    rows: &[[String; N]],
) -> impl Fn(&[&str; N]) -> String {
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    move |cells| {
        use std::fmt::Write;
        let mut s = String::from("   ");
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i < 2 {
                let _ = write!(s, " {cell:<w$}");
            } else {
                let _ = write!(s, " {cell:>w$}");
            }
        }
        s.trim_end().to_owned()
    }
}

/// The NVIDIA rows: registers per thread, static shared memory, stack, spills, barriers.
fn render_nvidia(rows: &[NvidiaRow]) -> String {
    use std::fmt::Write;
    let header = [
        "kernel",
        "target",
        "regs",
        "smem",
        "stack",
        "spill st/ld",
        "barriers",
    ];
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            [
                r.demangled.clone().unwrap_or_else(|| r.kernel.clone()),
                r.target.clone(),
                r.registers.to_string(),
                r.shared_bytes.to_string(),
                r.stack_bytes.to_string(),
                format!("{}/{}", r.spill_store_bytes, r.spill_load_bytes),
                r.barriers.to_string(),
            ]
        })
        .collect();
    let line = aligned_columns(&header, &cells);
    let mut out = String::new();
    let mut current: Option<&str> = None;
    for (row, c) in rows.iter().zip(&cells) {
        if current != Some(&row.source) {
            current = Some(&row.source);
            let _ = writeln!(out, "  {} (nvidia)", row.source);
            let _ = writeln!(out, "{}", line(&header));
        }
        let _ = writeln!(out, "{}", line(&c.each_ref().map(String::as_str)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kernel: &str, spills: u32, scratch: u32) -> KernelRow {
        KernelRow {
            source: "src/k.hip".into(),
            backend: "amd".into(),
            target: "gfx1030".into(),
            kernel: kernel.into(),
            demangled: demangle(kernel),
            vgpr_count: 128,
            agpr_count: None,
            sgpr_count: 12,
            lds_bytes: 0,
            scratch_bytes: scratch,
            vgpr_spill_count: Some(spills),
            sgpr_spill_count: Some(0),
            wavefront_size: 32,
            max_flat_workgroup_size: 1024,
            occupancy: Some(OccupancyCell {
                waves_per_simd: 8,
                max_waves_per_simd: 16,
                limiter: rocm_occupancy::Limiter::Vgprs,
            }),
        }
    }

    #[test]
    fn warnings_for_spills_and_scratch_only() {
        let spill = row("_Z6spillsPKfPfi", 268, 1552).warning().unwrap();
        assert!(
            spill.contains("`spills(float const*, float*, int)` spills on gfx1030 (268 VGPRs"),
            "{spill}"
        );
        let scratch = row("k", 0, 16).warning().unwrap();
        assert!(scratch.contains("16 bytes of scratch"), "{scratch}");
        assert_eq!(row("k", 0, 0).warning(), None);
    }

    #[test]
    fn table_groups_by_source_and_aligns_columns() {
        let lib = LibraryReport {
            package: "demo".into(),
            name: "kernels".into(),
            manifest: "/m".into(),
            kernels: vec![row("axpy", 0, 0), row("_Z6spillsPKfPfi", 268, 1552)],
            nvidia_kernels: vec![NvidiaRow {
                source: "src/k.hip".into(),
                target: "sm_90".into(),
                kernel: "_Z4axpyfPKfPfi".into(),
                demangled: demangle("_Z4axpyfPKfPfi"),
                registers: 10,
                shared_bytes: 1024,
                stack_bytes: 0,
                spill_store_bytes: 0,
                spill_load_bytes: 0,
                barriers: 1,
            }],
            notes: vec![ObjectNote {
                source: "src/k.hip".into(),
                backend: "nvidia".into(),
                format: "ptx".into(),
                target: "compute_90".into(),
                note: "PTX is compiled by the driver at load time".into(),
            }],
            cpu: vec![
                CpuExecution {
                    kernel: "axpy".into(),
                    execution: "regions (no fibers)".into(),
                },
                CpuExecution {
                    kernel: "spills".into(),
                    execution: "fibers: it calls `helper`, which waits for other threads".into(),
                },
            ],
        };
        let text = render(&lib);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "kernel library `kernels` (package demo)");
        assert_eq!(lines[1], "  src/k.hip (amd)");
        assert!(lines[2].trim_start().starts_with("kernel "));
        assert!(lines[3].trim_start().starts_with("axpy "));
        assert!(
            lines[4].contains("spills(float const*, float*, int)")
                && lines[4].ends_with("268/0   32 8/16 vgpr"),
            "{text}"
        );
        assert_eq!(lines[5], "  src/k.hip (nvidia)");
        assert!(lines[6].trim_start().starts_with("kernel "), "{text}");
        assert!(
            lines[7].contains("axpy(float, float const*, float*, int)")
                && lines[7].contains("sm_90")
                && lines[7].ends_with("10 1024     0         0/0        1"),
            "{text}"
        );
        assert!(lines[8].contains("(nvidia, ptx for compute_90): PTX is compiled"));
        assert_eq!(
            lines[9],
            "  cpu backend: 1 of 2 kernel(s) run without fibers (region form)"
        );
        assert_eq!(
            lines[10],
            "    spills: fibers: it calls `helper`, which waits for other threads"
        );
        // Columns line up: every data row has the same width as the header.
        assert_eq!(lines[2].len(), lines[4].len());
    }
}
