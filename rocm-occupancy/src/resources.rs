//! The model's input from a code object: `rocm-code-object` reads the metadata note and the
//! kernel descriptors (the one reader of that format); this module turns one kernel's entries
//! into [`KernelResources`] and works out its occupancy.

use rocm_code_object::{Entry, KernelDescriptor, KernelMetadata};
use rocm_kernels_core::TargetId;
use serde::Serialize;

use crate::model::{occupancy, KernelResources, Occupancy};
use crate::target::Target;
use crate::Error;

/// VGPRs the hardware allocates per wave according to a kernel descriptor
/// (`GRANULATED_WORKITEM_VGPR_COUNT`). LLVM encodes `NumVGPRsForWavesPerEU` there, which an
/// `amdgpu_waves_per_eu` maximum can raise above `.vgpr_count`. The encoding block is 8 registers
/// on the gfx90a family and in wave32, otherwise 4.
pub fn descriptor_vgprs(target: &Target, descriptor: &KernelDescriptor) -> u32 {
    let p = target.processor();
    let block = if p.has_unified_vgpr_file() || (p.is_gfx10_plus() && descriptor.wave32()) {
        8
    } else {
        4
    };
    (descriptor.vgpr_blocks() + 1) * block
}

/// The model's input for one kernel: its metadata, and its descriptor where one was found.
///
/// `.vgpr_count` is raised to the descriptor's allocated VGPRs when those are more: LLVM pads the
/// allocation (not the metadata) to honour an `amdgpu_waves_per_eu` maximum, and the compiler's
/// remark counts the padding. Rounding `.vgpr_count` to the encoding block and then to the
/// allocation granule gives the same answer as rounding it to the granule alone (the granule is
/// a multiple of the block), so this only changes the result where LLVM padded. The wave size
/// and WGP mode come from the metadata, else from the descriptor's bits.
pub fn kernel_resources(
    target: &Target,
    kernel: &KernelMetadata,
    descriptor: Option<&KernelDescriptor>,
) -> KernelResources {
    let vgprs = descriptor.map_or(kernel.vgpr_count, |d| {
        kernel.vgpr_count.max(descriptor_vgprs(target, d))
    });
    let wave = match (kernel.wavefront_size, descriptor) {
        (32 | 64, _) => kernel.wavefront_size,
        (_, Some(d)) if d.wave32() => 32,
        (_, Some(_)) => 64,
        (_, None) => 0,
    };
    KernelResources {
        vgpr_count: vgprs,
        agpr_count: kernel.agpr_count.unwrap_or(0),
        sgpr_count: kernel.sgpr_count,
        group_segment_fixed_size: kernel.group_segment_fixed_size,
        dynamic_lds_size: 0,
        max_flat_workgroup_size: kernel.max_flat_workgroup_size,
        wavefront_size: wave,
        workgroup_processor_mode: kernel
            .workgroup_processor_mode
            .or(descriptor.map(KernelDescriptor::wgp_mode)),
    }
}

/// One kernel of a code object with its theoretical occupancy (or why there is none).
#[derive(Debug, Clone, Serialize)]
pub struct KernelOccupancy {
    /// The kernel's `.name` (the mangled symbol for C++ kernels).
    pub name: String,
    /// What the model was given.
    pub resources: KernelResources,
    /// The model's answer, or why it could not give one (an unknown processor, for instance).
    pub occupancy: Result<Occupancy, String>,
}

/// The occupancy of every kernel of one code object (a bundle entry or a raw AMDGPU ELF), at
/// its maximum workgroup size and without dynamic LDS: the number the compiler prints.
pub fn code_object_occupancy(entry: &Entry<'_>) -> Result<Vec<KernelOccupancy>, Error> {
    let target_id: TargetId = entry
        .target
        .clone()
        .ok_or_else(|| Error::InvalidCodeObject("the code object names no target".into()))?;
    let kernels = entry
        .kernels()
        .map_err(|e| Error::InvalidCodeObject(e.to_string()))?;
    // A missing symbol table leaves only the metadata to go by; that is a weaker answer, not an
    // error.
    let descriptors = entry.kernel_descriptors().unwrap_or_default();
    let target = Target::from_id(&target_id);
    Ok(kernels
        .into_iter()
        .map(|k| {
            let descriptor = descriptors.get(&k.symbol);
            match &target {
                Ok(t) => {
                    let resources = kernel_resources(t, &k, descriptor);
                    KernelOccupancy {
                        occupancy: occupancy(t, &resources).map_err(|e| e.to_string()),
                        resources,
                        name: k.name,
                    }
                }
                Err(e) => KernelOccupancy {
                    resources: KernelResources::default(),
                    occupancy: Err(e.to_string()),
                    name: k.name,
                },
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(rsrc1: u32, props: u16) -> KernelDescriptor {
        let mut b = [0u8; rocm_code_object::KERNEL_DESCRIPTOR_SIZE];
        b[48..52].copy_from_slice(&rsrc1.to_le_bytes());
        b[56..58].copy_from_slice(&props.to_le_bytes());
        KernelDescriptor::from_bytes(&b)
    }

    #[test]
    fn descriptor_blocks_depend_on_target_and_wave_size() {
        let gfx90a = Target::new("gfx90a").unwrap();
        let gfx900 = Target::new("gfx900").unwrap();
        let gfx1030 = Target::new("gfx1030").unwrap();
        assert_eq!(descriptor_vgprs(&gfx90a, &descriptor(15, 0)), 128);
        assert_eq!(descriptor_vgprs(&gfx900, &descriptor(15, 0)), 64);
        assert_eq!(descriptor_vgprs(&gfx1030, &descriptor(15, 1 << 10)), 128);
        assert_eq!(descriptor_vgprs(&gfx1030, &descriptor(15, 0)), 64);
    }
}
