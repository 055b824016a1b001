//! The amd backend: AMD GPUs through HIP's runtime library, `libamdhip64`, opened at run time.
//!
//! Layers, as in cudarc:
//! * [`sys`]: raw types and enum values of the HIP API;
//! * [`library`]: finding and `dlopen`ing `libamdhip64`, resolving each function on first use
//!   (a missing one is a [`RuntimeError::LibraryLoad`] for that call, never a panic);
//! * `result`: one method per HIP call on [`HipLibrary`], turning `hipError_t` into
//!   [`RuntimeError::Api`] with HIP's own error text;
//! * [`hiprtc`]: run-time compilation (hipRTC), for kernels compiled with parameters chosen at
//!   run time;
//! * `device` and `module`: the backend traits over those ([`AmdDevice`] per HIP ordinal, streams,
//!   events, modules loaded from embedded code objects, kernels found by their demangled names).
//!
//! The build splits offload bundles into one code object per target, so a module loads the one
//! for the device's gfx target (or says up front which targets the library has). See
//! `docs/amd-backend.md` for what has and has not been run on AMD hardware.

mod arch;
mod device;
pub mod hiprtc;
pub mod library;
mod module;
mod result;
pub mod sys;

use std::path::Path;
use std::sync::Arc;

pub use crate::library::TargetId;
pub use device::AmdDevice;
pub use hiprtc::{compile_at_run_time, hiprtc_version};
pub use library::{library_candidates, HipLibrary, HIP_LIB_ENV};

use super::{DeviceBackend, ProbeResult};
use crate::runtime::{Device, RuntimeError};

/// The kernel driver's device node HIP (through ROCr) opens; `/dev/dxg` under WSL.
const DEVICE_NODES: [&str; 2] = ["/dev/kfd", "/dev/dxg"];

/// Find the library, check that the GPU driver is there, and list the devices.
pub(crate) fn probe() -> ProbeResult {
    let hip = HipLibrary::open().map_err(|error| match error {
        RuntimeError::LibraryLoad { library, reason } => format!("{library} {reason}"),
        other => other.to_string(),
    })?;
    // Without the driver's device node there is nothing HIP could open; not calling into the
    // runtime at all keeps the probe fast and immune to how a given ROCm version reacts.
    if !DEVICE_NODES.iter().any(|node| Path::new(node).exists()) {
        return Err(format!(
            "no AMD device: /dev/kfd does not exist (the amdgpu kernel driver is not loaded, or \
             this container was started without `--device /dev/kfd --device /dev/dri`); {} was \
             found but not used",
            hip.path().display()
        ));
    }
    open_devices(hip)
}

/// The devices of an opened library: `hipInit`, `hipGetDeviceCount`, then each ordinal.
///
/// Unlike the probe behind [`Device::probe`], this calls HIP even without `/dev/kfd`. Errors are
/// the reasons the probe reports (`no AMD device: ...`). A device that fails
/// to open is left out while others work; the error lists every failure when none does.
pub fn devices(hip: &'static HipLibrary) -> Result<Vec<Device>, String> {
    Ok(open_devices(hip)?
        .into_iter()
        .map(|inner| Device { inner })
        .collect())
}

fn open_devices(hip: &'static HipLibrary) -> ProbeResult {
    let hint = || {
        if Path::new(DEVICE_NODES[0]).exists() {
            " (check that this user may open /dev/kfd and /dev/dri/renderD*: usually membership \
             of the `render` and `video` groups)"
        } else {
            ""
        }
    };
    hip.init()
        .map_err(|e| format!("no AMD device: {}{}", api_text(&e), hint()))?;
    let count = hip
        .device_count()
        .map_err(|e| format!("no AMD device: {}{}", api_text(&e), hint()))?;
    if count == 0 {
        let filter = [
            "HIP_VISIBLE_DEVICES",
            "ROCR_VISIBLE_DEVICES",
            "CUDA_VISIBLE_DEVICES",
        ]
        .iter()
        .find_map(|var| std::env::var(var).ok().map(|v| format!(" ({var}={v})")))
        .unwrap_or_default();
        return Err(format!("no AMD device: HIP reports 0 devices{filter}"));
    }
    let mut devices: Vec<Arc<dyn DeviceBackend>> = Vec::new();
    let mut failures = Vec::new();
    for ordinal in 0..count {
        match AmdDevice::open(hip, ordinal as i32) {
            Ok(device) => devices.push(Arc::new(device)),
            Err(error) => failures.push(format!("device {ordinal}: {error}")),
        }
    }
    if devices.is_empty() {
        return Err(format!("no usable AMD device: {}", failures.join("; ")));
    }
    Ok(devices)
}

/// `hipInit failed: <HIP's text>` for API errors, the error itself otherwise.
fn api_text(error: &RuntimeError) -> String {
    match error {
        RuntimeError::Api { call, message, .. } => format!("{call} failed: {message}"),
        other => other.to_string(),
    }
}
