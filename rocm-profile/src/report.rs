//! The profile report: one entry per kernel joining the profiler's timings (with their
//! statistics and stability verdict, `rocm-stats`), the resources the code object or the driver
//! reports, the theoretical occupancy and what limits it, and the bandwidth and FLOP rate the
//! workload declared work for. Its JSON form is versioned ([`SCHEMA_VERSION`]) and published as
//! `docs/profile-schema.json` (prose: `docs/profile.md`).

use std::collections::BTreeMap;

use rocm_kernels_core::Backend;
use rocm_occupancy::{occupancy, KernelResources, Target};
use rocm_protocol::launch_log::{Function, Launch, LaunchRecord};
use serde::Serialize;

use crate::dispatch::{Collected, Dispatch};
use crate::error::ProfileError;
use crate::resources::AmdKernel;

/// The `schema` field of every report.
pub const SCHEMA: &str = "cargo-rocm-profile";
/// The version of the report's JSON form; bumped when a field changes meaning or goes away
/// (added fields do not bump it).
pub const SCHEMA_VERSION: u32 = 1;

/// A whole profile.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileReport {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// [`SCHEMA_VERSION`] of the crate that wrote it.
    pub schema_version: u32,
    /// What measured the times.
    pub tool: ToolInfo,
    /// The backend the workload ran on.
    pub backend: Backend,
    /// The device, for people, from the tool or the launch log (`AMD Instinct MI300X`).
    pub device: Option<String>,
    /// The device's architecture, from the tool or the launch log (`gfx942`, `sm_90`).
    pub arch: Option<String>,
    /// The workload's command line.
    pub command: Vec<String>,
    /// Dispatches profiled, all kernels.
    pub dispatches: usize,
    /// Sum of every dispatch's time, nanoseconds.
    pub total_time_ns: f64,
    /// One entry per kernel, the most time first.
    pub kernels: Vec<KernelReport>,
    /// What is missing or was left out (a partial result says so here).
    pub notes: Vec<String>,
}

/// The tool that measured.
#[derive(Debug, Clone, Serialize)]
pub struct ToolInfo {
    /// `rocprofv3`, `ncu`, `rocm-kernels launch log`.
    pub name: String,
    /// What was read: `rocpd database, schema 3`, `CSV (pass_kernel_trace.csv)`, `ncu CSV`.
    pub source: String,
}

/// One kernel.
#[derive(Debug, Clone, Serialize)]
pub struct KernelReport {
    /// The kernel, in the runtime's spelling (`saxpy`, `scale<float>`).
    pub name: String,
    /// Dispatches profiled.
    pub calls: usize,
    /// Statistics of its dispatch times.
    pub time: TimeStats,
    /// This kernel's share of all profiled kernel time, 0..1.
    pub share: f64,
    /// Whether its timings can be trusted.
    pub stability: StabilityReport,
    /// The launch shape seen most often.
    pub launch: Option<LaunchShape>,
    /// Registers and memory, where the code object or the driver says.
    pub resources: Option<Resources>,
    /// Theoretical occupancy at [`KernelReport::launch`], where resources and the device are
    /// known.
    pub occupancy: Option<OccupancyReport>,
    /// From the work the workload declared (`LaunchBuilder::bytes`/`flops`).
    pub throughput: Option<Throughput>,
    /// Mean of each hardware counter or metric over the dispatches that have it.
    pub counters: BTreeMap<String, f64>,
}

/// Time statistics over a kernel's dispatches, nanoseconds.
#[derive(Debug, Clone, Serialize)]
pub struct TimeStats {
    /// Sum of every dispatch's time.
    pub total_ns: f64,
    /// Mean dispatch time.
    pub mean_ns: f64,
    /// Median dispatch time.
    pub median_ns: f64,
    /// Shortest dispatch.
    pub min_ns: f64,
    /// Longest dispatch.
    pub max_ns: f64,
    /// Sample standard deviation.
    pub std_dev_ns: f64,
    /// Median absolute deviation, scaled to estimate the standard deviation (×1.4826).
    pub mad_ns: f64,
}

/// Whether the timings can be trusted (thresholds in `rocm_stats::stats`, quoted in
/// `docs/profile.md`).
#[derive(Debug, Clone, Serialize)]
pub struct StabilityReport {
    /// `stable`, `noisy`, `unstable` or `too_few_samples`.
    pub class: rocm_stats::Stability,
    /// Coefficient of variation (std dev / mean).
    pub cv: f64,
    /// Robust spread: scaled MAD / median.
    pub rel_mad: f64,
    /// Two clusters of timings (a clock change during the run, for instance).
    pub bimodal: bool,
    /// When bimodal: the medians of the two clusters, nanoseconds.
    pub modes_ns: Option<[f64; 2]>,
}

/// Grid, block and dynamic shared memory of a launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaunchShape {
    /// Blocks (workgroups) in the grid, x y z, where known.
    pub grid: Option<[u64; 3]>,
    /// Threads (work-items) in a block, x y z.
    pub block: [u32; 3],
    /// Dynamic shared memory (LDS) per block, bytes, where known.
    pub dynamic_shared_bytes: Option<u32>,
}

/// Registers and memory per kernel, from the code object (amd) or the driver (nvidia).
#[derive(Debug, Clone, Serialize)]
pub struct Resources {
    /// `code object <target>` or `driver`.
    pub source: String,
    /// VGPRs (amd; AGPRs included on targets with a unified file) or registers per thread
    /// (nvidia).
    pub vgprs: Option<u32>,
    /// AGPRs per thread (amd, targets with accumulation registers).
    pub agprs: Option<u32>,
    /// SGPRs per wave (amd).
    pub sgprs: Option<u32>,
    /// Static LDS / shared memory per block, bytes.
    pub lds_bytes: Option<u32>,
    /// Scratch (amd) or local memory (nvidia) per thread, bytes.
    pub scratch_bytes: Option<u32>,
    /// VGPRs spilled to scratch (amd).
    pub vgpr_spills: Option<u32>,
    /// SGPRs spilled (amd).
    pub sgpr_spills: Option<u32>,
    /// Threads per wave (amd) or warp (nvidia).
    pub wave_size: Option<u32>,
}

/// Theoretical occupancy at the launch shape seen most often.
#[derive(Debug, Clone, Serialize)]
pub struct OccupancyReport {
    /// `model (LLVM AMDGPU rules)` or `driver (cuOccupancyMaxActiveBlocksPerMultiprocessor)`.
    pub source: String,
    /// Waves per SIMD (amd) or warps per SM (nvidia) resident.
    pub waves: u32,
    /// The most the hardware holds in the same unit.
    pub max_waves: u32,
    /// `waves / max_waves`.
    pub fraction: f64,
    /// What limits it (amd: `vgprs`, `lds`, `workgroup_size`, ...), where known.
    pub limiter: Option<String>,
    /// Workgroups (blocks) resident per CU or SM.
    pub blocks_per_cu: Option<u32>,
    /// The block size it was computed for.
    pub block_threads: u32,
    /// The profiler's own theoretical occupancy, 0..1, where it reports one (ncu's
    /// `sm__maximum_warps_per_active_cycle_pct`), to compare with.
    pub profiler_fraction: Option<f64>,
}

/// Achieved rates from declared work.
#[derive(Debug, Clone, Serialize)]
pub struct Throughput {
    /// Declared bytes per launch, the mean over the launches that declared them.
    pub bytes_per_launch: Option<f64>,
    /// Declared bytes / time, 10^9 bytes per second.
    pub gb_per_s: Option<f64>,
    /// Declared floating-point operations per launch, the mean over the launches that declared
    /// them.
    pub flops_per_launch: Option<f64>,
    /// Declared operations / time, 10^9 per second.
    pub gflop_per_s: Option<f64>,
}

/// What the report is built from.
#[derive(Debug, Clone)]
pub struct ReportInput {
    /// The profiler's dispatches (or the launch log's, on cpu).
    pub collected: Collected,
    /// The workload's launch log (empty when it does not use rocm-kernels).
    pub launches: Vec<LaunchRecord>,
    /// AMD kernels of the workload's code objects (empty elsewhere).
    pub amd_kernels: Vec<AmdKernel>,
    /// The workload's command line.
    pub command: Vec<String>,
}

/// Build the report.
pub fn build(input: ReportInput) -> Result<ProfileReport, ProfileError> {
    let ReportInput {
        collected,
        launches,
        amd_kernels,
        command,
    } = input;
    let mut notes = collected.notes.clone();
    let log_launches: Vec<&Launch> = launches
        .iter()
        .filter_map(|r| match r {
            LaunchRecord::Launch(l) => Some(l),
            LaunchRecord::Function(_) => None,
        })
        .collect();
    let functions: Vec<&Function> = launches
        .iter()
        .filter_map(|r| match r {
            LaunchRecord::Function(f) => Some(f),
            LaunchRecord::Launch(_) => None,
        })
        .collect();
    let device = collected
        .device
        .clone()
        .or_else(|| log_launches.first().map(|l| l.origin.device.clone()));
    let arch = collected
        .arch
        .clone()
        .or_else(|| log_launches.first().map(|l| l.origin.arch.clone()));

    let mut by_kernel: BTreeMap<&str, Vec<&Dispatch>> = BTreeMap::new();
    for d in &collected.dispatches {
        by_kernel.entry(d.kernel.as_str()).or_default().push(d);
    }
    let total: f64 = collected.dispatches.iter().map(|d| d.duration_ns).sum();
    let mut kernels = Vec::new();
    for (name, dispatches) in by_kernel {
        let logged: Vec<&Launch> = log_launches
            .iter()
            .copied()
            .filter(|l| l.origin.kernel == name)
            .collect();
        let report = kernel_report(
            name,
            &dispatches,
            &logged,
            &functions,
            &amd_kernels,
            arch.as_deref(),
            collected.backend,
            total,
            &mut notes,
        )?;
        kernels.push(report);
    }
    kernels.sort_by(|a, b| {
        b.time
            .total_ns
            .total_cmp(&a.time.total_ns)
            .then(a.name.cmp(&b.name))
    });
    if kernels.is_empty() {
        notes.push(
            "no kernel dispatch was recorded: the workload launched no kernel on this backend"
                .into(),
        );
    }
    Ok(ProfileReport {
        schema: SCHEMA,
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: collected.tool.clone(),
            source: collected.source.clone(),
        },
        backend: collected.backend,
        device,
        arch,
        command,
        dispatches: collected.dispatches.len(),
        total_time_ns: total,
        kernels,
        notes,
    })
}

#[allow(clippy::too_many_arguments)]
fn kernel_report(
    name: &str,
    dispatches: &[&Dispatch],
    logged: &[&Launch],
    functions: &[&Function],
    amd_kernels: &[AmdKernel],
    arch: Option<&str>,
    backend: Backend,
    grand_total: f64,
    notes: &mut Vec<String>,
) -> Result<KernelReport, ProfileError> {
    let durations: Vec<f64> = dispatches.iter().map(|d| d.duration_ns).collect();
    let s = rocm_stats::summarize(&durations).map_err(|source| ProfileError::Stats {
        kernel: name.to_owned(),
        source,
    })?;
    let total: f64 = durations.iter().sum();
    let launch = launch_shape(dispatches, logged);
    let mut resources = None;
    let mut occupancy = None;
    match backend {
        Backend::Amd => {
            if let Some((k, target)) = amd_kernel(name, amd_kernels, arch, notes) {
                resources = Some(amd_resources(k));
                // Without the launch log, the dynamic LDS is what the dispatch was given beyond
                // the kernel's static LDS.
                let shape = launch.clone().map(|mut l| {
                    l.dynamic_shared_bytes = l.dynamic_shared_bytes.or_else(|| {
                        dispatches
                            .iter()
                            .find_map(|d| d.shared_bytes)
                            .map(|total| total.saturating_sub(k.metadata.group_segment_fixed_size))
                    });
                    l
                });
                occupancy = shape
                    .as_ref()
                    .and_then(|l| amd_occupancy(k, &target, l, notes));
            }
        }
        Backend::Nvidia => {
            let threads = launch.as_ref().map(|l| l.block.iter().product::<u32>());
            let f = functions
                .iter()
                .filter(|f| f.origin.kernel == name)
                .find(|f| Some(f.block_threads) == threads)
                .or_else(|| functions.iter().find(|f| f.origin.kernel == name));
            if let Some(f) = f {
                resources = Some(Resources {
                    source: "driver".into(),
                    vgprs: f.resources.registers,
                    agprs: None,
                    sgprs: None,
                    lds_bytes: f.resources.static_shared_bytes,
                    scratch_bytes: f.resources.local_bytes,
                    vgpr_spills: None,
                    sgpr_spills: None,
                    wave_size: Some(f.warp_size),
                });
                if let Some(e) = &f.resources.error {
                    notes.push(format!(
                        "`{name}`: the driver did not report everything: {e}"
                    ));
                }
                let profiler = mean_counter(dispatches, "sm__maximum_warps_per_active_cycle_pct")
                    .map(|pct| pct / 100.0);
                if let (Some(warps), Some(max)) =
                    (f.active_warps_per_sm(), f.resources.max_warps_per_sm)
                {
                    occupancy = Some(OccupancyReport {
                        source: "driver (cuOccupancyMaxActiveBlocksPerMultiprocessor)".into(),
                        waves: warps,
                        max_waves: max,
                        fraction: f64::from(warps) / f64::from(max.max(1)),
                        limiter: ncu_limiter(dispatches),
                        blocks_per_cu: f.resources.active_blocks_per_sm,
                        block_threads: f.block_threads,
                        profiler_fraction: profiler,
                    });
                }
            }
        }
        Backend::Cpu => {}
    }
    let mut counters = BTreeMap::new();
    for d in dispatches {
        for k in d.counters.keys() {
            counters.entry(k.clone()).or_insert(0.0);
        }
    }
    for (k, v) in counters.iter_mut() {
        *v = mean_counter(dispatches, k).unwrap_or(f64::NAN);
    }
    Ok(KernelReport {
        name: name.to_owned(),
        calls: dispatches.len(),
        time: TimeStats {
            total_ns: total,
            mean_ns: s.mean,
            median_ns: s.median,
            min_ns: s.min,
            max_ns: s.max,
            std_dev_ns: s.std_dev,
            mad_ns: s.mad,
        },
        share: if grand_total > 0.0 {
            total / grand_total
        } else {
            0.0
        },
        stability: StabilityReport {
            class: s.stability,
            cv: s.cv,
            rel_mad: s.rel_mad,
            bimodal: s.bimodality.bimodal,
            modes_ns: s
                .bimodality
                .split
                .as_ref()
                .filter(|_| s.bimodality.bimodal)
                .map(|m| [m.low_median, m.high_median]),
        },
        throughput: throughput(logged, s.mean),
        launch,
        resources,
        occupancy,
        counters,
    })
}

fn mean_counter(dispatches: &[&Dispatch], counter: &str) -> Option<f64> {
    let values: Vec<f64> = dispatches
        .iter()
        .filter_map(|d| d.counters.get(counter).copied())
        .filter(|v| v.is_finite())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// ncu's occupancy limiters: the smallest `launch__occupancy_limit_*` (in blocks) names it.
fn ncu_limiter(dispatches: &[&Dispatch]) -> Option<String> {
    [
        ("registers", "launch__occupancy_limit_registers"),
        ("shared_memory", "launch__occupancy_limit_shared_mem"),
        ("warps", "launch__occupancy_limit_warps"),
        ("blocks", "launch__occupancy_limit_blocks"),
    ]
    .iter()
    .filter_map(|(what, metric)| Some((*what, mean_counter(dispatches, metric)?)))
    .min_by(|a, b| a.1.total_cmp(&b.1))
    .map(|(what, _)| what.to_owned())
}

/// The launch shape seen most often: from the profiler's dispatches, else the launch log.
fn launch_shape(dispatches: &[&Dispatch], logged: &[&Launch]) -> Option<LaunchShape> {
    let logged_shared = logged.first().map(|l| l.shared_bytes);
    let mut shapes: Vec<LaunchShape> = dispatches
        .iter()
        .filter_map(|d| {
            Some(LaunchShape {
                grid: d.grid,
                block: d.block?,
                dynamic_shared_bytes: logged_shared,
            })
        })
        .collect();
    if shapes.is_empty() {
        shapes = logged
            .iter()
            .map(|l| LaunchShape {
                grid: Some(l.grid.map(u64::from)),
                block: l.block,
                dynamic_shared_bytes: Some(l.shared_bytes),
            })
            .collect();
    }
    let mut counts: Vec<(usize, LaunchShape)> = Vec::new();
    for shape in shapes {
        match counts.iter_mut().find(|(_, s)| *s == shape) {
            Some((n, _)) => *n += 1,
            None => counts.push((1, shape)),
        }
    }
    // The most frequent; the first seen among equals.
    counts
        .into_iter()
        .rev()
        .max_by_key(|(n, _)| *n)
        .map(|(_, shape)| shape)
}

fn throughput(logged: &[&Launch], mean_ns: f64) -> Option<Throughput> {
    let mean = |f: fn(&Launch) -> Option<u64>| -> Option<f64> {
        let v: Vec<f64> = logged
            .iter()
            .filter_map(|l| f(l))
            .map(|b| b as f64)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let bytes = mean(|l| l.bytes);
    let flops = mean(|l| l.flops);
    if bytes.is_none() && flops.is_none() {
        return None;
    }
    let rate = |x: Option<f64>| x.filter(|_| mean_ns > 0.0).map(|x| x / mean_ns);
    Some(Throughput {
        bytes_per_launch: bytes,
        gb_per_s: rate(bytes),
        flops_per_launch: flops,
        gflop_per_s: rate(flops),
    })
}

/// The AMD code object entry of this kernel for the device's processor (or the only one).
fn amd_kernel<'a>(
    name: &str,
    amd_kernels: &'a [AmdKernel],
    arch: Option<&str>,
    notes: &mut Vec<String>,
) -> Option<(&'a AmdKernel, Target)> {
    let candidates: Vec<&AmdKernel> = amd_kernels.iter().filter(|k| k.name == name).collect();
    let processor = arch.and_then(|a| a.split(':').next());
    let chosen = match processor {
        Some(p) => candidates.iter().find(|k| k.processor() == p).copied(),
        None if candidates.len() == 1 => Some(candidates[0]),
        None => None,
    };
    let Some(k) = chosen else {
        if !amd_kernels.is_empty() {
            notes.push(format!(
                "`{name}`: no code object for {} among the build's ({}); its registers and occupancy are not shown",
                processor.unwrap_or("an unknown GPU"),
                candidates.iter().map(|k| k.target.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
        return None;
    };
    match Target::new(&k.target) {
        Ok(t) => Some((k, t)),
        Err(e) => {
            notes.push(format!("`{name}`: {e}; its occupancy is not shown"));
            None
        }
    }
}

fn amd_resources(k: &AmdKernel) -> Resources {
    let m = &k.metadata;
    Resources {
        source: format!("code object {}", k.target),
        vgprs: Some(m.vgpr_count),
        agprs: m.agpr_count,
        sgprs: Some(m.sgpr_count),
        lds_bytes: Some(m.group_segment_fixed_size),
        scratch_bytes: Some(m.private_segment_fixed_size),
        vgpr_spills: m.vgpr_spill_count,
        sgpr_spills: m.sgpr_spill_count,
        wave_size: Some(m.wavefront_size),
    }
}

/// The model's occupancy for the launch's workgroup size and dynamic LDS (the compiler's
/// remark assumes the largest workgroup the kernel allows and no dynamic LDS).
fn amd_occupancy(
    k: &AmdKernel,
    target: &Target,
    launch: &LaunchShape,
    notes: &mut Vec<String>,
) -> Option<OccupancyReport> {
    let threads: u32 = launch.block.iter().product();
    let r: KernelResources =
        rocm_occupancy::kernel_resources(target, &k.metadata, k.descriptor.as_ref());
    let at_launch = KernelResources {
        max_flat_workgroup_size: threads.clamp(1, 1024),
        dynamic_lds_size: launch.dynamic_shared_bytes.unwrap_or(0),
        ..r
    };
    match occupancy(target, &at_launch) {
        Ok(o) => Some(OccupancyReport {
            source: "model (LLVM AMDGPU rules)".into(),
            waves: o.waves_per_simd,
            max_waves: o.limits.hardware,
            fraction: f64::from(o.waves_per_simd) / f64::from(o.limits.hardware.max(1)),
            limiter: Some(serde_json::to_value(o.limiter).ok()?.as_str()?.to_owned()),
            blocks_per_cu: Some(o.workgroups_per_cu),
            block_threads: threads,
            profiler_fraction: None,
        }),
        Err(e) => {
            notes.push(format!("`{}`: occupancy: {e}", k.name));
            None
        }
    }
}
