//! On a machine with HIP's runtime library but no AMD GPU (Debian's `libamdhip64` 5.2 without
//! `/dev/kfd`, as in this project's CI), the amd backend says "no AMD device" quickly and cleanly.
//!
//! One test in this file: it probes with the process's real environment.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use rocm_kernels::runtime::amd::{self, HipLibrary, HIP_LIB_ENV};
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

/// The default library search, on a machine that cannot have an AMD device.
const NO_AMD_DEVICE: testkit::Need = testkit::Need::check(
    "a machine without an AMD GPU (no /dev/kfd) and the default library search",
    "run it where no AMD GPU is, without ROCM_KERNELS_HIP_LIB",
    testkit::Kind::Machine,
    || {
        if std::env::var_os(HIP_LIB_ENV).is_some() {
            Err(format!("{HIP_LIB_ENV} is set"))
        } else if Path::new("/dev/kfd").exists() {
            Err("/dev/kfd exists".into())
        } else {
            Ok(())
        }
    },
);

#[testkit::test(needs = [testkit::needs::LIBAMDHIP64, NO_AMD_DEVICE])]
fn a_library_without_a_device_says_no_amd_device() {
    let hip = HipLibrary::open().expect("libamdhip64 is installed");

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
