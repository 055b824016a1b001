//! AMD kernels' resources from the workload's code objects (read by `rocm-code-object`): the
//! registers, LDS, scratch and spills of the table, and the occupancy model's input.

use rocm_code_object::{CodeObjectError, KernelDescriptor, KernelMetadata};

use crate::dispatch::kernel_name;

/// One kernel of one AMD code object.
#[derive(Debug, Clone)]
pub struct AmdKernel {
    /// The runtime's spelling of its name.
    pub name: String,
    /// The code object's target id (`gfx90a:xnack-`).
    pub target: String,
    /// The code object's metadata of the kernel (registers, LDS, scratch, spills, wave size).
    pub metadata: KernelMetadata,
    /// Its kernel descriptor (`<name>.kd`), where the code object has one.
    pub descriptor: Option<KernelDescriptor>,
}

impl AmdKernel {
    /// `gfx90a` of `gfx90a:xnack-`.
    pub(crate) fn processor(&self) -> &str {
        self.target.split(':').next().unwrap_or_default()
    }
}

/// Every kernel of a code object container (bundle, AMDGPU ELF, host ELF with `.hip_fatbin`).
pub fn amd_kernels(bytes: &[u8]) -> Result<Vec<AmdKernel>, CodeObjectError> {
    let objects = rocm_code_object::parse(bytes)?;
    let mut out = Vec::new();
    for entry in objects.gpu_entries() {
        let target = entry.target_string();
        let descriptors = entry.kernel_descriptors().unwrap_or_default();
        for k in entry.kernels()? {
            out.push(AmdKernel {
                name: kernel_name(&k.name),
                target: target.clone(),
                descriptor: descriptors.get(&k.symbol).copied(),
                metadata: k,
            });
        }
    }
    Ok(out)
}
