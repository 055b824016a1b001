//! Wiring to `rocm_kernels`' runtime: which targets exist here, and launching on them.
//! (Interim: the runtime API is being written on another branch.)

use rocm_kernels::{Backend, KernelLibrary};

use crate::options::HarnessOptions;
use crate::target::{TargetId, TargetSlot};

pub(crate) fn discover(_lib: &'static KernelLibrary, opts: &HarnessOptions) -> Vec<TargetSlot> {
    opts.wave_sizes
        .iter()
        .map(|w| TargetSlot {
            id: TargetId {
                backend: Backend::Cpu,
                target: format!("w{w}"),
            },
            target: Err("the runtime is not linked into this build yet".into()),
        })
        .collect()
}
