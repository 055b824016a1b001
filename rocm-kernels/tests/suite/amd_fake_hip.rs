//! The amd backend's Rust side against a stand-in `libamdhip64` (tests/amd_fixtures/fake_hip.c)
//! with the real C signatures: device queries, memory, streams, events, module loading with
//! bundle entry selection, kernel lookup by demangled name, argument passing, missing symbols.
//!
//! No AMD GPU is involved: this checks what the backend passes to HIP and how it reads HIP's
//! answers, not what a GPU does with them (see docs/amd-backend.md).

use crate::amd_common as common;

use std::path::Path;

use common::*;
use rocm_kernels::runtime::amd::{self, HipLibrary};
use rocm_kernels::runtime::{Device, LaunchConfig, RuntimeError};
use rocm_kernels::Backend;

/// A fresh copy of the fake library (its counters are per copy), opened, and its devices.
fn fake_devices(dir: &Path, name: &str, defines: &[&str]) -> (libloading::Library, Vec<Device>) {
    let path = fake_hip(dir, name, defines);
    let hip = HipLibrary::open_path(&path).unwrap();
    let devices = amd::devices(hip).unwrap();
    // Safety: the fake has no initialisers; the handle reads its counters.
    let probe = unsafe { libloading::Library::new(&path) }.unwrap();
    (probe, devices)
}

fn counter(library: &libloading::Library, name: &str) -> i32 {
    // Safety: the fake's counters are `int f(void)`.
    unsafe {
        let f = library
            .get::<unsafe extern "C" fn() -> i32>(name.as_bytes())
            .unwrap();
        f()
    }
}

#[testkit::test]
fn devices_are_described_from_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let (_, devices) = fake_devices(dir.path(), "libfake-info.so", &[]);
    assert_eq!(devices.len(), 2);
    let mi = devices[0].info();
    assert_eq!(mi.backend, Backend::Amd);
    assert_eq!(mi.name, "Fake Instinct (gfx90a:sramecc+:xnack-)");
    assert_eq!(mi.arch, "gfx90a", "features are stripped for matching");
    assert_eq!(mi.wave_size, 64);
    assert_eq!(mi.compute_units, 104);
    assert_eq!(mi.total_memory, 64 << 30);
    let radeon = devices[1].info();
    assert_eq!(radeon.name, "Fake Radeon (gfx1030)");
    assert_eq!(radeon.arch, "gfx1030");
    assert_eq!(radeon.wave_size, 32);
}

#[testkit::test]
fn memory_round_trips_and_fills_on_each_device() {
    let dir = tempfile::tempdir().unwrap();
    let (fake, devices) = fake_devices(dir.path(), "libfake-memory.so", &[]);
    let data: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
    // Alternate devices so a call that forgot to make its device current would hit memory of
    // the other one (the fake counts that).
    let mut a = devices[0].upload(&data).unwrap();
    let mut b = devices[1].upload(&data[..10]).unwrap();
    assert_eq!(a.to_vec().unwrap(), data);
    assert_eq!(b.to_vec().unwrap(), &data[..10]);

    a.fill(2.5f32).unwrap(); // hipMemsetD32
    assert!(a.to_vec().unwrap().iter().all(|&v| v == 2.5));
    b.fill(0.0f32).unwrap(); // hipMemsetD8
    assert_eq!(b.to_vec().unwrap(), vec![0.0; 10]);

    let mut halves = devices[1].alloc::<u16>(7).unwrap();
    halves.fill(0xBEEF).unwrap(); // hipMemsetD16
    assert_eq!(halves.to_vec().unwrap(), vec![0xBEEF; 7]);

    let mut wide = devices[0].alloc::<f64>(1001).unwrap();
    wide.fill(-1.25).unwrap(); // one host copy, then doubling device copies
    assert_eq!(wide.to_vec().unwrap(), vec![-1.25; 1001]);
    let mut triples = devices[1].alloc::<[u8; 3]>(5).unwrap();
    triples.fill([1, 2, 3]).unwrap();
    assert_eq!(triples.to_vec().unwrap(), vec![[1, 2, 3]; 5]);

    let mut c = devices[0].alloc::<f32>(1000).unwrap();
    c.copy_from(&a).unwrap();
    assert!(c.to_vec().unwrap().iter().all(|&v| v == 2.5));
    assert!(c.copy_from(&devices[0].alloc::<f32>(3).unwrap()).is_err());

    devices[0].synchronize().unwrap();
    drop((a, b, c, halves, wide, triples));
    assert_eq!(counter(&fake, "fake_device_mismatches"), 0);
}

#[testkit::test]
fn pinned_host_memory_comes_from_hip_host_malloc_and_goes_back() {
    let dir = tempfile::tempdir().unwrap();
    let (fake, devices) = fake_devices(dir.path(), "libfake-pinned.so", &[]);
    let mut host = devices[1].alloc_host::<f32>(1000).unwrap();
    assert_eq!(counter(&fake, "fake_host_live"), 1);
    assert_eq!(counter(&fake, "fake_host_flags"), 0, "hipHostMallocDefault");
    assert!(host.iter().all(|&x| x == 0.0), "zeroed");
    for (i, x) in host.iter_mut().enumerate() {
        *x = i as f32;
    }
    let mut buffer = devices[1].upload(&host).unwrap();
    buffer.fill(3.0f32).unwrap();
    buffer.download(&mut host).unwrap();
    assert!(host.iter().all(|&x| x == 3.0));
    let empty = devices[0].alloc_host::<f64>(0).unwrap();
    assert_eq!(
        counter(&fake, "fake_host_live"),
        1,
        "nothing allocated for no bytes"
    );
    drop((host, empty, buffer));
    assert_eq!(counter(&fake, "fake_host_live"), 0, "hipHostFree on drop");
    assert_eq!(counter(&fake, "fake_device_mismatches"), 0);
}

#[testkit::test]
fn events_time_work_on_a_stream() {
    let dir = tempfile::tempdir().unwrap();
    let (_, devices) = fake_devices(dir.path(), "libfake-events.so", &[]);
    let stream = devices[1].stream().unwrap();
    let start = stream.record().unwrap();
    let end = stream.record().unwrap();
    // The fake's clock advances 1.5 ms per record.
    let elapsed = end.elapsed_since(&start).unwrap();
    assert!((elapsed.as_secs_f64() - 0.0015).abs() < 1e-6, "{elapsed:?}");
    let other = devices[0].stream().unwrap();
    assert!(matches!(
        end.record(&other),
        Err(RuntimeError::WrongDevice(_))
    ));
    stream.synchronize().unwrap();
}

#[testkit::test(needs = [HIP_BUNDLER])]
fn modules_load_the_entry_for_the_device_and_launch() {
    let clang = clang();
    let dir = tempfile::tempdir().unwrap();
    let bundle = hip_bundle(
        &clang,
        KERNELS_HIP,
        &["gfx90a:xnack-", "gfx1030"],
        dir.path(),
    );
    let library = amd_library("demo", &bundle);
    let (fake, devices) = fake_devices(dir.path(), "libfake-modules.so", &[]);

    let radeon = devices[1].load(library).unwrap();
    assert_eq!(counter(&fake, "fake_loaded_mach") as u32, MACH_GFX1030);
    let module = devices[0].load(library).unwrap();
    assert_eq!(counter(&fake, "fake_loaded_mach") as u32, MACH_GFX90A);

    // Names are the library's (the build demangled the code object's symbols); a symbol works too.
    assert_eq!(module.kernel_names(), ["plain", "saxpy", "scale<float>"]);
    module.kernel("scale<float>").unwrap();
    module.kernel("plain").unwrap();
    module.kernel("_Z5plainPi").unwrap();
    match module.kernel("saxpi") {
        Err(RuntimeError::KernelNotFound { available, .. }) => {
            assert_eq!(available, "plain, saxpy, scale<float>")
        }
        other => panic!("expected KernelNotFound, got {other:?}"),
    }

    // saxpy runs in the fake with the values HIP got through kernelParams.
    let saxpy = module.kernel("saxpy").unwrap();
    let n = 300usize;
    let x = devices[0].upload(&vec![2.0f32; n]).unwrap();
    let y = devices[0].upload(&vec![1.0f32; n]).unwrap();
    let stream = devices[0].stream().unwrap();
    // Make the other device current on this thread: the launch must switch back.
    let _other = devices[1].upload(&[0.0f32; 4]).unwrap();
    saxpy
        .launch(LaunchConfig::cover(n, 128))
        .arg(&3.0f32)
        .arg(&x)
        .arg(&y)
        .arg(&(n as i32))
        .run(&stream)
        .unwrap();
    stream.synchronize().unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![7.0; n]);
    assert_eq!(counter(&fake, "fake_launches"), 1);

    // Launches are checked against the build's declaration before reaching HIP.
    let wrong = saxpy
        .launch(LaunchConfig::cover(n, 128))
        .arg(&3.0f32)
        .arg(&x)
        .run(&stream);
    assert!(
        matches!(wrong, Err(RuntimeError::ArgMismatch { .. })),
        "{wrong:?}"
    );
    let elsewhere = devices[1].upload(&vec![0.0f32; n]).unwrap();
    let wrong = saxpy
        .launch(LaunchConfig::cover(n, 128))
        .arg(&3.0f32)
        .arg(&elsewhere)
        .arg(&y)
        .arg(&(n as i32))
        .run(&stream);
    assert!(
        matches!(wrong, Err(RuntimeError::ArgMismatch { .. })),
        "{wrong:?}"
    );
    assert_eq!(counter(&fake, "fake_launches"), 1);
    assert_eq!(counter(&fake, "fake_device_mismatches"), 0);

    // A module stays loaded while a kernel from it lives.
    drop(module);
    assert_eq!(counter(&fake, "fake_unloads"), 0);
    drop(saxpy);
    assert_eq!(counter(&fake, "fake_unloads"), 1);
    drop(radeon);
    assert_eq!(counter(&fake, "fake_unloads"), 2);
}

#[testkit::test(needs = [HIP_BUNDLER])]
fn a_library_without_the_devices_target_is_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let (fake, devices) = fake_devices(dir.path(), "libfake-targets.so", &[]);

    let no_amd = Box::leak(Box::new(rocm_kernels::KernelLibrary {
        name: "cpu-only",
        code_objects: &[],
        kernels: &[],
        globals: &[],
    }));
    match devices[0].load(no_amd) {
        Err(RuntimeError::LibraryMissing { backend, hint, .. }) => {
            assert_eq!(backend, Backend::Amd);
            assert!(hint.contains("gfx90a"), "{hint}");
        }
        other => panic!("expected LibraryMissing, got {other:?}"),
    }

    let clang = clang();
    let other_archs = hip_bundle(
        &clang,
        KERNELS_HIP,
        &["gfx942", "gfx90a:xnack+"],
        dir.path(),
    );
    let library = amd_library("elsewhere", &other_archs);
    let error = devices[0].load(library).unwrap_err();
    match &error {
        RuntimeError::NoMatchingCodeObject {
            arch, available, ..
        } => {
            assert_eq!(arch, "gfx90a:sramecc+:xnack-");
            assert!(available.contains("gfx942"), "{available}");
            assert!(available.contains("gfx90a:xnack+"), "{available}");
        }
        other => panic!("expected NoMatchingCodeObject, got {other:?}"),
    }
    assert!(
        error.to_string().contains("add `gfx90a:sramecc+:xnack-`"),
        "{error}"
    );
    assert_eq!(counter(&fake, "fake_loaded_mach"), -1, "nothing was loaded");

    // A code object is matched by the target the build recorded.
    let bundle = hip_bundle(&clang, KERNELS_HIP, &["gfx1030"], dir.path());
    let bare = amd_library("bare", &bundle);
    devices[1].load(bare).unwrap();
    assert_eq!(counter(&fake, "fake_loaded_mach") as u32, MACH_GFX1030);
    // No gfx90a code at all: the processor is the target to add.
    match devices[0].load(bare) {
        Err(RuntimeError::NoMatchingCodeObject {
            arch, available, ..
        }) => {
            assert_eq!(arch, "gfx90a");
            assert_eq!(available, "src/kernels.hip: gfx1030");
        }
        other => panic!("expected NoMatchingCodeObject, got {other:?}"),
    }
}

#[testkit::test]
fn a_missing_function_is_an_error_for_the_call_that_needs_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_, devices) = fake_devices(dir.path(), "libfake-nomalloc.so", &["-DFAKE_NO_MALLOC"]);
    // Everything else works.
    assert_eq!(devices[0].info().arch, "gfx90a");
    devices[0].stream().unwrap().synchronize().unwrap();
    match devices[0].alloc::<f32>(16) {
        Err(RuntimeError::LibraryLoad { library, reason }) => {
            assert!(library.ends_with("libfake-nomalloc.so"), "{library}");
            assert!(reason.contains("no function `hipMalloc`"), "{reason}");
        }
        other => panic!("expected LibraryLoad, got {other:?}"),
    }
}

#[testkit::test]
fn a_library_lacking_device_functions_gives_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = fake_hip(dir.path(), "libfake-minimal.so", &["-DFAKE_MINIMAL"]);
    let hip = HipLibrary::open_path(&path).unwrap();
    let reason = amd::devices(hip).unwrap_err();
    assert!(
        reason.starts_with("no usable AMD device: device 0:"),
        "{reason}"
    );
    assert!(reason.contains("no function `hipSetDevice`"), "{reason}");
}

#[testkit::test]
fn init_failure_is_a_clean_no_device_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = fake_hip(dir.path(), "libfake-init.so", &["-DFAKE_INIT_ERROR=100"]);
    let hip = HipLibrary::open_path(&path).unwrap();
    let reason = amd::devices(hip).unwrap_err();
    assert!(
        reason.starts_with(
            "no AMD device: hipInit failed: no ROCm-capable device is detected (hipErrorNoDevice)"
        ),
        "{reason}"
    );
}

#[testkit::test]
fn the_first_library_that_loads_is_used_and_broken_ones_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent/libamdhip64.so");
    let broken = dir.path().join("libbroken.so");
    std::fs::write(&broken, "not a shared library").unwrap();
    let fake = fake_hip(dir.path(), "libfake-search.so", &[]);

    let hip = HipLibrary::open_first(&[missing.clone(), broken.clone(), fake.clone()]).unwrap();
    assert_eq!(hip.path(), fake);

    match HipLibrary::open_first(&[missing.clone(), broken.clone()]) {
        Err(RuntimeError::LibraryLoad { library, reason }) => {
            assert_eq!(library, "libamdhip64");
            assert!(reason.contains(&missing.display().to_string()), "{reason}");
            assert!(reason.contains(&broken.display().to_string()), "{reason}");
            // Why the existing file did not load is shown; the missing one is just listed.
            assert!(reason.contains("libbroken.so:"), "{reason}");
            assert!(!reason.contains("No such file"), "{reason}");
            assert!(reason.starts_with("not loadable (tried"), "{reason}");
            assert!(reason.ends_with("or set ROCM_KERNELS_HIP_LIB to the library's path"));
        }
        other => panic!("expected LibraryLoad, got {other:?}"),
    }
}
