//! On a machine with HIP's runtime library but no AMD GPU (Debian's `libamdhip64` 5.2 without
//! `/dev/kfd`, as in this project's CI), the amd backend says "no AMD device" quickly and cleanly.
//!
//! One test in this file: it probes with the process's real environment.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use rocm_kernels::runtime::backend::amd::{self, HipLibrary, HIP_LIB_ENV};
use rocm_kernels::runtime::Device;
use rocm_kernels::Backend;

/// Run `f` on a thread; fail the test instead of hanging if it takes longer than `limit`.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("did not finish within {limit:?}: a hang"))
}

#[test]
fn a_library_without_a_device_says_no_amd_device() {
    if std::env::var_os(HIP_LIB_ENV).is_some() {
        eprintln!("skipped: {HIP_LIB_ENV} is set; this test is about the default search");
        return;
    }
    let Ok(hip) = HipLibrary::open() else {
        eprintln!("skipped: no libamdhip64 on this machine (CI installs libamdhip64-dev)");
        return;
    };
    if Path::new("/dev/kfd").exists() {
        eprintln!("skipped: /dev/kfd exists, this machine may have an AMD GPU");
        return;
    }

    // Through the public probe: the missing driver node is named and HIP is not initialised.
    let devices = within(Duration::from_secs(60), Device::probe);
    let (_, reason) = devices
        .unavailable
        .iter()
        .find(|(backend, _)| *backend == Backend::Amd)
        .expect("the amd backend reports why it has no devices");
    assert!(
        reason.starts_with("no AMD device: /dev/kfd does not exist"),
        "{reason}"
    );
    assert!(
        reason.contains(&hip.path().display().to_string()),
        "{reason}"
    );

    // Calling into the real runtime anyway (hipInit, hipGetDeviceCount) gives HIP's own error
    // as a value: no abort, no hang, nothing printed.
    let reason = within(Duration::from_secs(60), move || {
        amd::devices(hip).unwrap_err()
    });
    assert!(reason.starts_with("no AMD device: hip"), "{reason}");
    eprintln!("{} → {reason}", hip.path().display());
    let version = hip.runtime_version().unwrap();
    assert!(version > 0, "HIP_VERSION {version}");
}
