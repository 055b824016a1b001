//! Where a trial runs: a backend and a target (`cpu/w64`, `amd/gfx90a`, `nvidia/sm_90`), and the
//! one thing the harness needs from it: launch a kernel on host data and copy results back.
//! This trait is the only seam between the harness and `rocm_kernels`' runtime (see `runtime.rs`).

use std::sync::Arc;

use crate::element::{HostBuf, ScalarValue};
use crate::{Error, Launch};

/// One kernel argument as handed to a [`Target`].
pub(crate) enum LaunchArg<'a> {
    Scalar(ScalarValue),
    Struct(crate::RawValue),
    Buffer {
        data: &'a mut HostBuf,
        /// Copy the device's contents back into `data` after the launch.
        read_back: bool,
    },
}

/// A `__constant__`/`__device__` variable set before a launch (and read back after it when
/// `read_back`).
pub(crate) struct GlobalArg<'a> {
    pub name: &'a str,
    pub data: &'a mut HostBuf,
    pub read_back: bool,
}

pub use rocm_protocol::Bandwidth;

/// A device (or emulated configuration) that can run the library's kernels.
pub(crate) trait Target: Send + Sync {
    /// Time `kernel` with these arguments (`reps` runs after a warm-up) against a
    /// device-to-device copy that moves `bytes` (reads plus writes).
    fn time(
        &self,
        kernel: &str,
        launch: &Launch,
        args: &mut [LaunchArg<'_>],
        bytes: u64,
        reps: u32,
    ) -> Result<Bandwidth, Error> {
        let _ = (kernel, launch, args, bytes, reps);
        Err(Error::Target("this target cannot time kernels".into()))
    }

    /// The number of lanes in a wave here (32 or 64), when known.
    fn wave_size(&self) -> Option<u32> {
        None
    }

    /// Upload the buffers, set the `globals`, launch `kernel` once, wait, and download the
    /// `read_back` buffers and variables. `race`: run it under the race detector where the target
    /// has one (the cpu backend). The error is the runtime's (launch failure, out-of-bounds
    /// access, timeout…), with what the harness was doing when it says more.
    fn launch(
        &self,
        kernel: &str,
        launch: &Launch,
        args: &mut [LaunchArg<'_>],
        globals: &mut [GlobalArg<'_>],
        race: bool,
    ) -> Result<(), Error>;
}

/// A trial's place: `cpu/w64` (the runtime's place names, shared with benchmarks and tuning).
pub use rocm_kernels::TrialPlace;

/// A target this harness will make trials for: usable, or why not.
#[derive(Clone)]
pub(crate) struct TargetSlot {
    pub id: TrialPlace,
    pub target: Result<Arc<dyn Target>, Error>,
}

/// The trial name for a check on a target: `saxpy::cpu/w64`.
pub(crate) fn trial_name(check: &str, id: &TrialPlace) -> String {
    format!("{check}::{id}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocm_kernels::Backend;

    #[test]
    fn names() {
        let id = TrialPlace {
            backend: Backend::Cpu,
            target: "w64".into(),
        };
        assert_eq!(trial_name("saxpy", &id), "saxpy::cpu/w64");
        let id = TrialPlace {
            backend: Backend::Nvidia,
            target: String::new(),
        };
        assert_eq!(trial_name("saxpy", &id), "saxpy::nvidia");
    }
}
