//! AMDGPU processors and the per-generation constants the occupancy rules use.
//!
//! Every number here mirrors a function of LLVM's AMDGPU backend (see the
//! crate README for the list): `IsaInfo::getMaxWavesPerEU`,
//! `getVGPRAllocGranule`, `getTotalNumVGPRs`, `getEUsPerCU`,
//! `getLocalMemorySize`, `getMaxWorkGroupsPerCU`, and the processor feature
//! lists of `GCNProcessors.td` / `AMDGPU.td`.

use std::fmt;

use rocm_kernels_core::TargetId;
use serde::Serialize;

use crate::Error;

/// GPU generation, as LLVM's `AMDGPUSubtarget::Generation` sees it.
///
/// Only the generation decides whether SGPRs limit occupancy (they do before
/// GFX10) and which SGPR table applies (GFX6/7 vs. GFX8/9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Generation {
    /// Southern Islands (GCN 1): gfx600..gfx602.
    Gfx6,
    /// Sea Islands (GCN 2): gfx700..gfx705.
    Gfx7,
    /// Volcanic Islands (GCN 3/4): gfx801..gfx810.
    Gfx8,
    /// GCN 5 / CDNA 1-3: gfx900..gfx950.
    Gfx9,
    /// RDNA 1/2: gfx1010..gfx1036.
    Gfx10,
    /// RDNA 3/3.5: gfx1100..gfx1153.
    Gfx11,
    /// RDNA 4: gfx1200, gfx1201.
    Gfx12,
}

/// Wavefront size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WaveSize {
    /// 32 lanes (gfx10+ only; the HIP default there).
    Wave32,
    /// 64 lanes (the only size before gfx10; `-mwavefrontsize64` on gfx10+).
    Wave64,
}

impl WaveSize {
    /// Lanes per wave.
    pub fn lanes(self) -> u32 {
        match self {
            WaveSize::Wave32 => 32,
            WaveSize::Wave64 => 64,
        }
    }

    /// From a lane count (the metadata's `.wavefront_size`).
    pub fn from_lanes(lanes: u32) -> Result<WaveSize, Error> {
        match lanes {
            32 => Ok(WaveSize::Wave32),
            64 => Ok(WaveSize::Wave64),
            n => Err(Error::InvalidWavefrontSize(n)),
        }
    }
}

/// Which block the waves of one workgroup must share on gfx10+.
///
/// In WGP mode (the default, `-mno-cumode`) a workgroup may spread over the
/// two CUs of a work-group processor: 4 SIMDs, twice the LDS and 32 barriers.
/// In CU mode (`-mcumode`) it stays in one CU: 2 SIMDs, 16 barriers.
/// Before gfx10 there is only the CU (4 SIMDs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkgroupMode {
    /// Compute-unit mode (always the case before gfx10).
    Cu,
    /// Work-group-processor mode (gfx10+ default).
    Wgp,
}

// Feature bits of the processor table (names follow AMDGPU.td).
const GFX90A: u32 = 1 << 0; // FeatureGFX90AInsts: unified 512-entry VGPR/AGPR file, 8 waves
const MAI: u32 = 1 << 1; // FeatureMAIInsts: the kernel has AGPRs (.agpr_count exists)
const GFX10_3: u32 = 1 << 2; // FeatureGFX10_3Insts: 16 waves, doubled VGPR granule
const VGPRS_1_5X: u32 = 1 << 3; // FeatureGFX11FullVGPRs (LLVM 20+: Feature1_5xVGPRs)
const SGPR_INIT_BUG: u32 = 1 << 4; // FeatureSGPRInitBug: SGPR count fixed at 96
const XNACK: u32 = 1 << 5; // FeatureSupportsXNACK
const LDS_32K: u32 = 1 << 6; // FeatureLocalMemorySize32768
const LDS_160K: u32 = 1 << 7; // FeatureAddressableLocalMemorySize163840 (LLVM 20+)
const SRAMECC: u32 = 1 << 8; // FeatureSupportsSRAMECC
const COV6_ONLY: u32 = 1 << 9; // generic targets: need code object v6

/// One entry of the processor table.
#[derive(Debug, PartialEq, Eq)]
pub struct Processor {
    /// Canonical name (`gfx90a`, `gfx10-3-generic`, ...).
    pub name: &'static str,
    /// Generation.
    pub generation: Generation,
    /// First LLVM major release that knows the processor.
    pub llvm_since: u32,
    flags: u32,
}

macro_rules! p {
    ($name:literal, $gen:ident, $since:literal, $flags:expr) => {
        Processor {
            name: $name,
            generation: Generation::$gen,
            llvm_since: $since,
            flags: $flags,
        }
    };
}

/// Every processor the model knows, in LLVM's order.
///
/// `llvm_since` only documents where a name appeared; the rules applied are
/// those of LLVM 19 unless noted (gfx950's 160 KiB LDS is LLVM 20's rule).
pub static PROCESSORS: &[Processor] = &[
    p!("gfx600", Gfx6, 3, LDS_32K),
    p!("gfx601", Gfx6, 3, LDS_32K),
    p!("gfx602", Gfx6, 3, LDS_32K),
    p!("gfx700", Gfx7, 3, 0),
    p!("gfx701", Gfx7, 3, 0),
    p!("gfx702", Gfx7, 3, 0),
    p!("gfx703", Gfx7, 3, 0),
    p!("gfx704", Gfx7, 3, 0),
    p!("gfx705", Gfx7, 12, 0),
    p!("gfx801", Gfx8, 3, XNACK),
    p!("gfx802", Gfx8, 3, SGPR_INIT_BUG),
    p!("gfx803", Gfx8, 3, 0),
    p!("gfx805", Gfx8, 12, SGPR_INIT_BUG),
    p!("gfx810", Gfx8, 3, XNACK),
    p!("gfx900", Gfx9, 4, XNACK),
    p!("gfx902", Gfx9, 4, XNACK),
    p!("gfx904", Gfx9, 7, XNACK),
    p!("gfx906", Gfx9, 7, XNACK | SRAMECC),
    p!("gfx908", Gfx9, 10, XNACK | SRAMECC | MAI),
    p!("gfx909", Gfx9, 10, XNACK),
    p!("gfx90a", Gfx9, 13, XNACK | SRAMECC | MAI | GFX90A),
    p!("gfx90c", Gfx9, 12, XNACK),
    p!("gfx940", Gfx9, 15, XNACK | SRAMECC | MAI | GFX90A),
    p!("gfx941", Gfx9, 16, XNACK | SRAMECC | MAI | GFX90A),
    p!("gfx942", Gfx9, 16, XNACK | SRAMECC | MAI | GFX90A),
    p!(
        "gfx950",
        Gfx9,
        20,
        XNACK | SRAMECC | MAI | GFX90A | LDS_160K
    ),
    p!("gfx9-generic", Gfx9, 19, XNACK | COV6_ONLY),
    p!(
        "gfx9-4-generic",
        Gfx9,
        20,
        XNACK | SRAMECC | MAI | GFX90A | COV6_ONLY
    ),
    p!("gfx1010", Gfx10, 9, XNACK),
    p!("gfx1011", Gfx10, 10, XNACK),
    p!("gfx1012", Gfx10, 10, XNACK),
    p!("gfx1013", Gfx10, 13, XNACK),
    p!("gfx10-1-generic", Gfx10, 19, XNACK | COV6_ONLY),
    p!("gfx1030", Gfx10, 12, GFX10_3),
    p!("gfx1031", Gfx10, 12, GFX10_3),
    p!("gfx1032", Gfx10, 12, GFX10_3),
    p!("gfx1033", Gfx10, 12, GFX10_3),
    p!("gfx1034", Gfx10, 13, GFX10_3),
    p!("gfx1035", Gfx10, 13, GFX10_3),
    p!("gfx1036", Gfx10, 15, GFX10_3),
    p!("gfx10-3-generic", Gfx10, 19, GFX10_3 | COV6_ONLY),
    p!("gfx1100", Gfx11, 16, GFX10_3 | VGPRS_1_5X),
    p!("gfx1101", Gfx11, 16, GFX10_3 | VGPRS_1_5X),
    p!("gfx1102", Gfx11, 16, GFX10_3),
    p!("gfx1103", Gfx11, 16, GFX10_3),
    p!("gfx1150", Gfx11, 17, GFX10_3),
    p!("gfx1151", Gfx11, 17, GFX10_3 | VGPRS_1_5X),
    p!("gfx1152", Gfx11, 19, GFX10_3),
    p!("gfx1153", Gfx11, 20, GFX10_3),
    p!("gfx11-generic", Gfx11, 19, GFX10_3 | COV6_ONLY),
    p!("gfx1200", Gfx12, 18, GFX10_3 | VGPRS_1_5X),
    p!("gfx1201", Gfx12, 18, GFX10_3 | VGPRS_1_5X),
    p!("gfx12-generic", Gfx12, 19, GFX10_3 | VGPRS_1_5X | COV6_ONLY),
];

impl Processor {
    /// Looks a processor up by its canonical name (case-insensitive).
    pub fn find(name: &str) -> Option<&'static Processor> {
        PROCESSORS
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
    }

    fn has(&self, f: u32) -> bool {
        self.flags & f != 0
    }

    /// gfx10 and later (wave32, WGP mode, no SGPR limit).
    pub fn is_gfx10_plus(&self) -> bool {
        self.generation >= Generation::Gfx10
    }

    /// gfx90a/gfx94x/gfx950: one 512-entry file shared by VGPRs and AGPRs.
    pub fn has_unified_vgpr_file(&self) -> bool {
        self.has(GFX90A)
    }

    /// Has accumulation registers (MFMA): gfx908, gfx90a, gfx94x, gfx950.
    pub fn has_agprs(&self) -> bool {
        self.has(MAI)
    }

    /// The SGPR-init hardware bug: LLVM always reports 96 SGPRs.
    pub fn has_sgpr_init_bug(&self) -> bool {
        self.has(SGPR_INIT_BUG)
    }

    /// Supports XNACK (replayable page faults), which costs extra SGPRs before gfx10.
    pub fn supports_xnack(&self) -> bool {
        self.has(XNACK)
    }

    /// Supports the SRAMECC target-ID feature.
    pub fn supports_sramecc(&self) -> bool {
        self.has(SRAMECC)
    }

    /// A `*-generic` processor, which needs code object version 6.
    pub fn is_generic(&self) -> bool {
        self.has(COV6_ONLY)
    }

    /// gfx11's larger VGPR file (1536 per SIMD in wave32) on some chips.
    pub fn has_1_5x_vgprs(&self) -> bool {
        self.has(VGPRS_1_5X)
    }

    /// `hasGFX10_3Insts`: gfx1030 and later.
    pub fn has_gfx10_3_insts(&self) -> bool {
        self.has(GFX10_3)
    }
}

impl fmt::Display for Processor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// A processor together with the code-generation modes that change occupancy.
///
/// Construct it from a processor name or a full target ID
/// (`gfx90a`, `gfx90a:sramecc+:xnack-`, `amdgcn-amd-amdhsa--gfx1100`).
/// Defaults follow clang's HIP defaults: wave64 before gfx10, wave32 and WGP
/// mode on gfx10+.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    processor: &'static Processor,
    wave_size: WaveSize,
    mode: WorkgroupMode,
    xnack: Option<bool>,
    sramecc: Option<bool>,
}

impl Target {
    /// Parses a processor name or target id (`gfx90a`, `gfx90a:sramecc+:xnack-`,
    /// `amdgcn-amd-amdhsa--gfx1100`). Unknown processors and features are an error.
    pub fn new(target_id: &str) -> Result<Target, Error> {
        let s = target_id.trim();
        // Strip an `amdgcn-amd-amdhsa--` triple prefix.
        let s = match s.rfind("--") {
            Some(i) if s.starts_with("amdgcn") => &s[i + 2..],
            _ => s,
        };
        let lower = s.to_ascii_lowercase();
        let id = TargetId::parse(&lower).ok_or_else(|| {
            let name = lower.split(':').next().unwrap_or_default();
            match Processor::find(name) {
                Some(_) => Error::InvalidTargetFeature(lower.clone()),
                None => Error::UnknownProcessor(name.to_owned()),
            }
        })?;
        Target::from_id(&id)
    }

    /// The target a parsed target id names, with clang's HIP defaults for wave size and mode.
    pub fn from_id(id: &TargetId) -> Result<Target, Error> {
        let processor = Processor::find(&id.processor)
            .ok_or_else(|| Error::UnknownProcessor(id.processor.clone()))?;
        let mut xnack = None;
        let mut sramecc = None;
        for f in &id.features {
            match f.name.as_str() {
                "xnack" if processor.supports_xnack() => xnack = Some(f.enabled),
                "sramecc" if processor.supports_sramecc() => sramecc = Some(f.enabled),
                _ => {
                    return Err(Error::InvalidTargetFeature(format!(
                        "{}{}",
                        f.name,
                        if f.enabled { '+' } else { '-' }
                    )))
                }
            }
        }
        let (wave_size, mode) = if processor.is_gfx10_plus() {
            (WaveSize::Wave32, WorkgroupMode::Wgp)
        } else {
            (WaveSize::Wave64, WorkgroupMode::Cu)
        };
        Ok(Target {
            processor,
            wave_size,
            mode,
            xnack,
            sramecc,
        })
    }

    /// The same target with another wave size (wave32 only exists on gfx10+).
    pub fn with_wave_size(mut self, wave_size: WaveSize) -> Result<Target, Error> {
        if wave_size == WaveSize::Wave32 && !self.processor.is_gfx10_plus() {
            return Err(Error::Wave32Unsupported(self.processor.name));
        }
        self.wave_size = wave_size;
        Ok(self)
    }

    /// The same target in CU or WGP mode (WGP mode only exists on gfx10+).
    pub fn with_mode(mut self, mode: WorkgroupMode) -> Result<Target, Error> {
        if mode == WorkgroupMode::Wgp && !self.processor.is_gfx10_plus() {
            return Err(Error::WgpModeUnsupported(self.processor.name));
        }
        self.mode = mode;
        Ok(self)
    }

    /// The processor.
    pub fn processor(&self) -> &'static Processor {
        self.processor
    }

    /// Processor name.
    pub fn name(&self) -> &'static str {
        self.processor.name
    }

    /// Generation.
    pub fn generation(&self) -> Generation {
        self.processor.generation
    }

    /// Wave size.
    pub fn wave_size(&self) -> WaveSize {
        self.wave_size
    }

    /// CU or WGP mode.
    pub fn mode(&self) -> WorkgroupMode {
        self.mode
    }

    /// The `xnack` setting of the target ID (`None` = "any").
    pub fn xnack(&self) -> Option<bool> {
        self.xnack
    }

    /// The `sramecc` setting of the target ID (`None` = "any").
    pub fn sramecc(&self) -> Option<bool> {
        self.sramecc
    }

    /// Hardware limit of waves per SIMD (`getMaxWavesPerEU`): 8 on the
    /// gfx90a family, 10 before gfx10, 20 on gfx10.1, 16 from gfx10.3 on.
    pub fn max_waves_per_simd(&self) -> u32 {
        let p = self.processor;
        if p.has(GFX90A) {
            8
        } else if !p.is_gfx10_plus() {
            10
        } else if p.has(GFX10_3) {
            16
        } else {
            20
        }
    }

    /// SIMDs ("EUs") sharing one workgroup's waves (`getEUsPerCU`): 2 in gfx10+
    /// CU mode, otherwise 4 (a CU before gfx10, a WGP on gfx10+).
    pub fn simds_per_cu(&self) -> u32 {
        if self.processor.is_gfx10_plus() && self.mode == WorkgroupMode::Cu {
            2
        } else {
            4
        }
    }

    /// VGPRs are allocated per wave in blocks of this many registers
    /// (`getVGPRAllocGranule`).
    pub fn vgpr_alloc_granule(&self) -> u32 {
        let p = self.processor;
        let w32 = self.wave_size == WaveSize::Wave32;
        if p.has(GFX90A) {
            8
        } else if p.has(VGPRS_1_5X) {
            if w32 {
                24
            } else {
                12
            }
        } else if p.has(GFX10_3) {
            if w32 {
                16
            } else {
                8
            }
        } else if w32 {
            8
        } else {
            4
        }
    }

    /// VGPRs per SIMD per lane shared by all resident waves (`getTotalNumVGPRs`):
    /// 256 before gfx10, 512 on the gfx90a family (VGPRs + AGPRs), 1024 (wave32)
    /// or 512 (wave64) on gfx10+, and 1.5x that on gfx1100/1101/1151/gfx12.
    pub fn total_vgprs(&self) -> u32 {
        let p = self.processor;
        let w32 = self.wave_size == WaveSize::Wave32;
        if p.has(GFX90A) {
            512
        } else if !p.is_gfx10_plus() {
            256
        } else if p.has(VGPRS_1_5X) {
            if w32 {
                1536
            } else {
                768
            }
        } else if w32 {
            1024
        } else {
            512
        }
    }

    /// Most VGPRs one wave may use (`getAddressableNumVGPRs`): 512 on the
    /// gfx90a family (VGPRs + AGPRs together), 256 elsewhere.
    pub fn addressable_vgprs(&self) -> u32 {
        if self.processor.has(GFX90A) {
            512
        } else {
            256
        }
    }

    /// Most SGPRs one wave may address (`getAddressableNumSGPRs`).
    pub fn addressable_sgprs(&self) -> u32 {
        if self.processor.has(SGPR_INIT_BUG) {
            96
        } else {
            match self.processor.generation {
                Generation::Gfx6 | Generation::Gfx7 => 104,
                Generation::Gfx8 | Generation::Gfx9 => 102,
                _ => 106,
            }
        }
    }

    /// Whether SGPR usage limits occupancy (only before gfx10, where SGPRs
    /// come from a shared per-SIMD file).
    pub fn sgprs_limit_occupancy(&self) -> bool {
        !self.processor.is_gfx10_plus()
    }

    /// LDS bytes shared by the workgroups resident on one CU (or WGP):
    /// `getLocalMemorySize` — 32 KiB on gfx6, 64 KiB otherwise, 160 KiB on
    /// gfx950, doubled in gfx10+ WGP mode.
    pub fn lds_bytes_per_cu(&self) -> u32 {
        let base = self.max_lds_per_workgroup();
        if self.processor.is_gfx10_plus() && self.mode == WorkgroupMode::Wgp {
            base * 2
        } else {
            base
        }
    }

    /// Most LDS one workgroup may allocate (`getAddressableLocalMemorySize`).
    pub fn max_lds_per_workgroup(&self) -> u32 {
        let p = self.processor;
        if p.has(LDS_32K) {
            32 * 1024
        } else if p.has(LDS_160K) {
            160 * 1024
        } else {
            64 * 1024
        }
    }

    /// Barrier resources per CU (WGP): a workgroup of more than one wave needs
    /// one, so at most 16 such workgroups fit (32 in gfx10+ WGP mode).
    pub fn max_barriers_per_cu(&self) -> u32 {
        if self.processor.is_gfx10_plus() && self.mode == WorkgroupMode::Wgp {
            32
        } else {
            16
        }
    }

    /// Waves of a workgroup of `flat_size` work-items.
    pub fn waves_per_workgroup(&self, flat_size: u32) -> u32 {
        flat_size.div_ceil(self.wave_size.lanes())
    }

    /// Largest VGPR count (VGPRs + AGPRs on the gfx90a family) that still
    /// allows `waves` waves per SIMD (`getMaxNumVGPRs`).
    pub fn max_vgprs_for_waves(&self, waves: u32) -> u32 {
        let waves = waves.max(1);
        let g = self.vgpr_alloc_granule();
        let n = self.total_vgprs() / waves / g * g;
        n.min(self.addressable_vgprs())
    }

    /// What LLVM writes as `.vgpr_count` for `arch_vgprs` VGPRs and `agprs`
    /// AGPRs (`AMDGPUMCExpr` "totalnumvgprs"): on the gfx90a family the AGPRs
    /// start at the next multiple of 4 (`accum_offset`) after the VGPRs; on
    /// gfx908 the two files are separate and the larger one counts.
    pub fn total_vgpr_count(&self, arch_vgprs: u32, agprs: u32) -> u32 {
        if self.processor.has(GFX90A) && agprs > 0 {
            arch_vgprs.div_ceil(4) * 4 + agprs
        } else {
            arch_vgprs.max(agprs)
        }
    }

    /// SGPRs LLVM adds to the explicitly used ones for VCC, FLAT_SCRATCH and
    /// XNACK (`getNumExtraSGPRs`); `.sgpr_count` already includes them.
    /// `xnack` is "on or any" (the default "any" counts as on). gfx94x have
    /// architected flat scratch, which LLVM 19 always counts as used.
    pub fn extra_sgprs(&self, vcc_used: bool, flat_scratch_used: bool) -> u32 {
        let mut extra = if vcc_used { 2 } else { 0 };
        match self.processor.generation {
            Generation::Gfx10 | Generation::Gfx11 | Generation::Gfx12 => {}
            Generation::Gfx6 | Generation::Gfx7 => {
                if flat_scratch_used {
                    extra = 4;
                }
            }
            Generation::Gfx8 | Generation::Gfx9 => {
                if self.processor.supports_xnack() && self.xnack != Some(false) {
                    extra = 4;
                }
                let architected = self.processor.has(GFX90A) && self.processor.name != "gfx90a";
                if flat_scratch_used || architected {
                    extra = 6;
                }
            }
        }
        extra
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.processor.name)?;
        if let Some(s) = self.sramecc {
            write!(f, ":sramecc{}", if s { '+' } else { '-' })?;
        }
        if let Some(x) = self.xnack {
            write!(f, ":xnack{}", if x { '+' } else { '-' })?;
        }
        if self.processor.is_gfx10_plus() {
            let w = if self.wave_size == WaveSize::Wave32 {
                "wave32"
            } else {
                "wave64"
            };
            let m = if self.mode == WorkgroupMode::Wgp {
                "wgp"
            } else {
                "cu"
            };
            write!(f, " ({w}, {m} mode)")?;
        }
        Ok(())
    }
}
