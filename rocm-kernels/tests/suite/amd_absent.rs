//! With `ROCM_KERNELS_HIP_LIB` pointing at a file that does not exist, the amd backend reports a
//! missing library (and what to do), and everything else keeps working.
//!
//! Isolated in a process of its own: it sets an environment variable for the whole process.

use rocm_kernels::runtime::amd::{library_candidates, HipLibrary, HIP_LIB_ENV};
use rocm_kernels::runtime::{Device, RuntimeError};
use rocm_kernels::Backend;

#[testkit::test(isolated)]
fn an_absent_library_is_a_reason_not_a_panic() {
    let missing = "/nonexistent/rocm-kernels-test/libamdhip64.so";
    std::env::set_var(HIP_LIB_ENV, missing);

    // The override replaces the search entirely.
    assert_eq!(library_candidates(), [std::path::PathBuf::from(missing)]);
    match HipLibrary::open() {
        Err(RuntimeError::LibraryLoad { library, reason }) => {
            assert_eq!(library, "libamdhip64");
            assert!(reason.contains(missing), "{reason}");
        }
        other => panic!("expected LibraryLoad, got {other:?}"),
    }

    let devices = Device::probe();
    let (_, reason) = devices
        .unavailable
        .iter()
        .find(|(backend, _)| *backend == Backend::Amd)
        .expect("the amd backend reports why it has no devices");
    assert!(
        reason.starts_with(&format!("libamdhip64 not found (tried {missing})")),
        "{reason}"
    );
    assert!(reason.contains("cargo rocm toolchain install"), "{reason}");
    assert!(reason.contains(HIP_LIB_ENV), "{reason}");
    assert!(devices
        .available
        .iter()
        .all(|d| d.backend() != Backend::Amd));
    assert!(devices
        .available
        .iter()
        .any(|d| d.backend() == Backend::Cpu));
}
