//! The comparison itself: every kernel of a compiled unit, read back through
//! `rocm-code-object`, run through the model, and held against the compiler's remark; plus
//! cross-checks between the metadata, the descriptor and the remark, so a reader bug cannot hide
//! behind an agreeing number.

use rocm_code_object::remarks::{parse_resource_usage_remarks, ResourceRemark};
use rocm_code_object::KernelMetadata;

use super::{Compiled, Config};
use crate::model::{occupancy, KernelResources, Limiter};
use crate::resources::kernel_resources;
use crate::target::Target;

/// One kernel's outcome.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The kernel's name.
    pub kernel: String,
    /// What the compiler said.
    pub remark: ResourceRemark,
    /// What the code object says.
    pub metadata: KernelMetadata,
    /// What the model was given.
    pub resources: KernelResources,
    /// The model's answer (waves per SIMD, limiter) or its error.
    pub model: Result<(u32, Limiter), String>,
    /// Cross-checks between remark, metadata and descriptor that failed.
    pub inconsistencies: Vec<String>,
    /// Whether the descriptor's padded VGPR allocation changed the answer.
    pub padded: bool,
}

impl Outcome {
    /// The model's waves per SIMD equal the remark's.
    pub fn agrees(&self) -> bool {
        matches!((&self.model, self.remark.occupancy), (Ok((m, _)), Some(r)) if *m == r)
    }
}

/// Run the model on every kernel of a compiled unit and compare it with the remarks.
pub fn analyse(compiled: &Compiled, config: &Config) -> Result<Vec<Outcome>, String> {
    let objects = rocm_code_object::parse(&compiled.object).map_err(|e| e.to_string())?;
    let entry = objects
        .gpu_entries()
        .next()
        .ok_or("the compiler wrote no AMDGPU code object")?;
    let metadata = entry.metadata().map_err(|e| e.to_string())?;
    let target = match (&metadata.target, &entry.target) {
        (Some(t), _) => Target::new(t),
        (None, Some(id)) => Target::from_id(id),
        (None, None) => return Err("the code object names no target".into()),
    }
    .map_err(|e| e.to_string())?;
    let descriptors = entry.kernel_descriptors().map_err(|e| e.to_string())?;
    let remarks = parse_resource_usage_remarks(&compiled.stderr);
    let mut out = Vec::new();
    for md in &metadata.kernels {
        let remark = remarks
            .iter()
            .find(|r| r.function == md.name)
            .cloned()
            .ok_or_else(|| format!("no remark for kernel {}", md.name))?;
        let descriptor = descriptors.get(&md.symbol);
        let resources = kernel_resources(&target, md, descriptor);
        let unpadded = KernelResources {
            vgpr_count: md.vgpr_count,
            ..resources
        };
        let waves = |r: &KernelResources| occupancy(&target, r).ok().map(|o| o.waves_per_simd);
        let padded = waves(&unpadded) != waves(&resources);
        let model = occupancy(&target, &resources)
            .map(|o| (o.waves_per_simd, o.limiter))
            .map_err(|e| e.to_string());
        out.push(Outcome {
            kernel: md.name.clone(),
            inconsistencies: cross_check(&target, config, md, descriptor, &remark),
            remark,
            metadata: md.clone(),
            resources,
            model,
            padded,
        });
    }
    if out.len() != remarks.len() {
        return Err(format!(
            "{} kernels in the metadata, {} remark blocks",
            out.len(),
            remarks.len()
        ));
    }
    Ok(out)
}

/// What disagrees between the metadata, the descriptor, the remark and the configuration.
fn cross_check(
    target: &Target,
    config: &Config,
    md: &KernelMetadata,
    descriptor: Option<&rocm_code_object::KernelDescriptor>,
    remark: &ResourceRemark,
) -> Vec<String> {
    let p = target.processor();
    let mut inc = Vec::new();
    if Some(md.sgpr_count) != remark.sgprs {
        inc.push(format!(
            "sgpr_count {} != remark SGPRs {:?}",
            md.sgpr_count, remark.sgprs
        ));
    }
    if let Some(v) = remark.vgprs {
        let expect = target.total_vgpr_count(v, remark.agprs.unwrap_or(0));
        if expect != md.vgpr_count {
            inc.push(format!(
                "vgpr_count {} != total(VGPRs {v}, AGPRs {:?}) = {expect}",
                md.vgpr_count, remark.agprs
            ));
        }
    }
    if md.agpr_count.is_some() != p.has_agprs() || md.agpr_count != remark.agprs {
        inc.push(format!(
            "agpr_count {:?} vs remark AGPRs {:?}",
            md.agpr_count, remark.agprs
        ));
    }
    if Some(md.group_segment_fixed_size) != remark.lds_size {
        inc.push(format!(
            "LDS {} != remark {:?}",
            md.group_segment_fixed_size, remark.lds_size
        ));
    }
    let want_wave = if config.wave64 || !p.is_gfx10_plus() {
        64
    } else {
        32
    };
    if md.wavefront_size != want_wave {
        inc.push(format!(
            "wavefront_size {} != {want_wave}",
            md.wavefront_size
        ));
    }
    if p.is_gfx10_plus() {
        if md.workgroup_processor_mode != Some(!config.cumode) {
            inc.push(format!(
                "workgroup_processor_mode {:?}, cumode {}",
                md.workgroup_processor_mode, config.cumode
            ));
        }
    } else if md.workgroup_processor_mode.is_some() {
        inc.push("workgroup_processor_mode before gfx10".into());
    }
    let Some(d) = descriptor else {
        inc.push("no kernel descriptor".into());
        return inc;
    };
    if p.is_gfx10_plus() {
        if d.wgp_mode() == config.cumode {
            inc.push("descriptor WGP_MODE disagrees".into());
        }
        if d.wave32() != (want_wave == 32) {
            inc.push("descriptor wave32 bit disagrees".into());
        }
    }
    if d.group_segment_fixed_size != md.group_segment_fixed_size {
        inc.push("descriptor LDS disagrees".into());
    }
    if p.has_unified_vgpr_file() {
        if let (Some(v), Some(a)) = (remark.vgprs, remark.agprs) {
            if a > 0 && d.accum_offset() != v.max(1).div_ceil(4) * 4 {
                inc.push(format!("accum_offset {} for {v} VGPRs", d.accum_offset()));
            }
        }
    }
    inc
}
