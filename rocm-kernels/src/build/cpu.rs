//! TEMPORARY stand-in until the cpu backend's compile path (h-cpu) is merged.

use super::error::BuildError;
use super::{CpuBuildOutput, CpuBuildRequest};
use crate::Backend;

pub(crate) fn build_cpu(req: &CpuBuildRequest) -> Result<CpuBuildOutput, BuildError> {
    let _ = (
        req.lib_name,
        req.sources,
        req.includes,
        req.defines,
        req.flags,
    );
    let _ = (req.opt_level, req.out_dir);
    Err(BuildError::Backend {
        backend: Backend::Cpu,
        message: "the cpu backend's compile path is not merged into this branch yet; \
                  build with ROCM_BACKENDS=amd"
            .into(),
    })
}
