//! The occupancy computation itself.
//!
//! It reproduces what LLVM 19 prints as "Occupancy [waves/SIMD]"
//! (`AMDGPUAsmPrinter::getSIProgramInfo` → `AMDGPUMCExpr::createOccupancy`):
//!
//! ```text
//! occupancy = min( max waves per SIMD,
//!                  LDS / workgroup limit   (getOccupancyWithLocalMemSize),
//!                  SGPR limit              (before gfx10 only),
//!                  VGPR limit              (getNumWavesPerEUWithNumVGPRs) )
//! ```

use std::fmt;

use serde::Serialize;

use crate::target::{Generation, Target, WaveSize, WorkgroupMode};
use crate::Error;

/// A kernel's resource usage, named and defined as in the AMDGPU code object
/// V4/V5 metadata (`amdhsa.kernels`), i.e. the numbers a tool reads from a
/// real code object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KernelResources {
    /// `.vgpr_count`: VGPRs the wave is allocated. On the gfx90a family this
    /// already includes the AGPRs (VGPRs rounded up to 4, plus AGPRs); on
    /// gfx908 it is the larger of the two counts. Use
    /// [`Target::total_vgpr_count`] to build it from separate counts.
    pub vgpr_count: u32,
    /// `.agpr_count`: accumulation registers (0 where the target has none).
    /// Only used to say which register kind limits; `vgpr_count` decides.
    pub agpr_count: u32,
    /// `.sgpr_count`: SGPRs including VCC / FLAT_SCRATCH / XNACK_MASK.
    pub sgpr_count: u32,
    /// `.group_segment_fixed_size`: static LDS bytes per workgroup.
    pub group_segment_fixed_size: u32,
    /// Dynamic LDS bytes given at launch (HIP `sharedMemBytes`); not in the
    /// metadata and not seen by the compiler's remark. 0 reproduces the remark.
    pub dynamic_lds_size: u32,
    /// `.max_flat_workgroup_size`: 1024 unless `__launch_bounds__` says less.
    pub max_flat_workgroup_size: u32,
    /// `.wavefront_size`: 32 or 64; 0 means "the target's setting".
    pub wavefront_size: u32,
    /// `.workgroup_processor_mode` (code object V5, gfx10+); `None` means
    /// "the target's setting".
    pub workgroup_processor_mode: Option<bool>,
}

impl Default for KernelResources {
    fn default() -> Self {
        KernelResources {
            vgpr_count: 0,
            agpr_count: 0,
            sgpr_count: 0,
            group_segment_fixed_size: 0,
            dynamic_lds_size: 0,
            max_flat_workgroup_size: 1024,
            wavefront_size: 0,
            workgroup_processor_mode: None,
        }
    }
}

/// What limits the occupancy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    /// Nothing: the hardware's waves-per-SIMD limit is reached.
    HardwareMax,
    /// Architected VGPRs (the only vector registers, or the larger file on gfx908).
    Vgprs,
    /// AGPRs on gfx908, where they have their own file and outnumber the VGPRs.
    Agprs,
    /// The unified VGPR+AGPR file of gfx90a/gfx94x/gfx950 (kernel uses AGPRs).
    UnifiedVgprAgpr,
    /// SGPRs (before gfx10 only).
    Sgprs,
    /// LDS: too few workgroups' worth of LDS fit in the CU (WGP).
    Lds,
    /// Workgroup size: whole workgroups must fit in the CU's wave slots.
    WorkgroupSize,
    /// Barriers: at most 16 (32 in WGP mode) multi-wave workgroups per CU.
    Barriers,
}

impl fmt::Display for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limiter::HardwareMax => "hardware max",
            Limiter::Vgprs => "VGPRs",
            Limiter::Agprs => "AGPRs",
            Limiter::UnifiedVgprAgpr => "VGPRs+AGPRs",
            Limiter::Sgprs => "SGPRs",
            Limiter::Lds => "LDS",
            Limiter::WorkgroupSize => "workgroup size",
            Limiter::Barriers => "barriers",
        })
    }
}

/// The waves per SIMD each resource alone would allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Hardware limit (`getMaxWavesPerEU`).
    pub hardware: u32,
    /// From `.vgpr_count` (VGPR file or the unified VGPR/AGPR file).
    pub vgprs: u32,
    /// From `.sgpr_count`; `None` on gfx10+ where SGPRs do not limit.
    pub sgprs: Option<u32>,
    /// From LDS per workgroup (static + dynamic).
    pub lds: u32,
    /// From fitting whole workgroups into the CU's wave slots.
    pub workgroup_size: u32,
    /// From the barrier count; `None` for single-wave workgroups (no barrier).
    pub barriers: Option<u32>,
}

/// Result of [`occupancy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Occupancy {
    /// Theoretical waves per SIMD ("waves per EU"); what the compiler prints.
    pub waves_per_simd: u32,
    /// The limit that decided it (ties: registers, SGPRs, LDS, barriers,
    /// workgroup size, in that order).
    pub limiter: Limiter,
    /// Each limit on its own.
    pub limits: Limits,
    /// Wave size used.
    pub wave_size: WaveSize,
    /// CU/WGP mode used.
    pub mode: WorkgroupMode,
    /// Waves in one (maximum-size) workgroup.
    pub waves_per_workgroup: u32,
    /// SIMDs a workgroup's waves spread over (4, or 2 in gfx10+ CU mode).
    pub simds_per_cu: u32,
    /// Workgroups resident per CU (WGP) at this occupancy, as LLVM counts them
    /// before rounding waves per SIMD up.
    pub workgroups_per_cu: u32,
    /// VGPRs actually allocated per wave (`.vgpr_count` rounded to the granule).
    pub vgprs_allocated: u32,
    /// LDS bytes per workgroup used in the LDS limit (static + dynamic).
    pub lds_per_workgroup: u32,
    /// LDS bytes shared by the workgroups of one CU (WGP).
    pub lds_per_cu: u32,
}

/// Waves per SIMD allowed by `vgprs` (`getNumWavesPerEUWithNumVGPRs`): the
/// count is rounded up to the allocation granule and the SIMD's file divided
/// by it; fewer registers than one granule never limit.
pub fn waves_with_vgprs(target: &Target, vgprs: u32) -> u32 {
    let max = target.max_waves_per_simd();
    let granule = target.vgpr_alloc_granule();
    let vgprs = vgprs.max(1);
    if vgprs < granule {
        return max;
    }
    let rounded = u64::from(vgprs).div_ceil(u64::from(granule)) * u64::from(granule);
    (u64::from(target.total_vgprs()) / rounded).clamp(1, u64::from(max)) as u32
}

/// Waves per SIMD allowed by `sgprs` (`getOccupancyWithNumSGPRs`, LLVM 19's
/// table): before gfx10, 800 SGPRs per SIMD (512 on gfx6/7) allocated in
/// blocks of 16 (8); `None` from gfx10 on.
pub fn waves_with_sgprs(target: &Target, sgprs: u32) -> Option<u32> {
    if !target.sgprs_limit_occupancy() {
        return None;
    }
    let sgprs = sgprs.max(1);
    let waves = match target.generation() {
        Generation::Gfx8 | Generation::Gfx9 => match sgprs {
            0..=80 => 10,
            81..=88 => 9,
            89..=100 => 8,
            _ => 7,
        },
        _ => match sgprs {
            0..=48 => 10,
            49..=56 => 9,
            57..=64 => 8,
            65..=72 => 7,
            73..=80 => 6,
            _ => 5,
        },
    };
    Some(waves.min(target.max_waves_per_simd()))
}

/// Computes the theoretical occupancy of a kernel on a target.
///
/// The kernel's `.wavefront_size` and `.workgroup_processor_mode`, when set,
/// override the target's settings (the metadata describes how the code object
/// was really built). Errors on impossible inputs; never panics.
pub fn occupancy(target: &Target, k: &KernelResources) -> Result<Occupancy, Error> {
    let mut t = *target;
    if k.wavefront_size != 0 {
        t = t.with_wave_size(WaveSize::from_lanes(k.wavefront_size)?)?;
    }
    if let Some(wgp) = k.workgroup_processor_mode {
        if t.processor().is_gfx10_plus() {
            t = t.with_mode(if wgp {
                WorkgroupMode::Wgp
            } else {
                WorkgroupMode::Cu
            })?;
        } else if wgp {
            return Err(Error::WgpModeUnsupported(t.name()));
        }
    }
    let wg_size = k.max_flat_workgroup_size;
    if wg_size == 0 || wg_size > 1024 {
        return Err(Error::InvalidWorkgroupSize(wg_size));
    }

    let max_waves = t.max_waves_per_simd();
    let simds = t.simds_per_cu();
    let wave_slots_per_cu = max_waves * simds;
    let waves_per_wg = t.waves_per_workgroup(wg_size);

    // Waves per SIMD when `groups` workgroups are resident on the CU: LLVM
    // spreads their waves evenly over the SIMDs, rounding up.
    let per_simd = |groups: u32| -> u32 {
        (groups.saturating_mul(waves_per_wg).div_ceil(simds)).min(max_waves)
    };

    // getMaxWorkGroupsPerCU: wave slots, and one barrier per multi-wave group.
    let (slot_groups, barrier_groups) = if waves_per_wg == 1 {
        (wave_slots_per_cu, None)
    } else {
        (
            wave_slots_per_cu / waves_per_wg,
            Some(t.max_barriers_per_cu()),
        )
    };

    let lds_per_wg = k
        .group_segment_fixed_size
        .saturating_add(k.dynamic_lds_size);
    let lds_per_cu = t.lds_bytes_per_cu();
    let lds_groups = lds_per_cu / lds_per_wg.max(1);

    let lds_limit = if lds_groups == 0 {
        1
    } else {
        per_simd(lds_groups)
    };
    let wg_limit = per_simd(slot_groups);
    let barrier_limit = barrier_groups.map(per_simd);
    let vgpr_limit = waves_with_vgprs(&t, k.vgpr_count);
    let sgpr_limit = waves_with_sgprs(&t, k.sgpr_count);

    let mut groups = slot_groups.min(barrier_groups.unwrap_or(u32::MAX));
    if lds_groups > 0 {
        groups = groups.min(lds_groups);
    }

    let vgpr_kind = if k.agpr_count > 0 && t.processor().has_unified_vgpr_file() {
        Limiter::UnifiedVgprAgpr
    } else if k.agpr_count > 0 && k.agpr_count >= k.vgpr_count {
        Limiter::Agprs
    } else {
        Limiter::Vgprs
    };
    let candidates = [
        (vgpr_kind, Some(vgpr_limit)),
        (Limiter::Sgprs, sgpr_limit),
        (Limiter::Lds, Some(lds_limit)),
        (Limiter::Barriers, barrier_limit),
        (Limiter::WorkgroupSize, Some(wg_limit)),
    ];
    let mut waves = max_waves;
    let mut limiter = Limiter::HardwareMax;
    for (kind, limit) in candidates {
        if let Some(l) = limit {
            if l < waves {
                waves = l;
                limiter = kind;
            }
        }
    }

    let granule = t.vgpr_alloc_granule();
    Ok(Occupancy {
        waves_per_simd: waves,
        limiter,
        limits: Limits {
            hardware: max_waves,
            vgprs: vgpr_limit,
            sgprs: sgpr_limit,
            lds: lds_limit,
            workgroup_size: wg_limit,
            barriers: barrier_limit,
        },
        wave_size: t.wave_size(),
        mode: t.mode(),
        waves_per_workgroup: waves_per_wg,
        simds_per_cu: simds,
        workgroups_per_cu: if lds_groups == 0 { 0 } else { groups },
        vgprs_allocated: k
            .vgpr_count
            .max(1)
            .div_ceil(granule)
            .saturating_mul(granule),
        lds_per_workgroup: lds_per_wg,
        lds_per_cu,
    })
}
