//! The runtime API on the cpu backend: devices, buffers, events, launch validation.

use std::time::Duration;

use rocm_kernels::library::{KernelDecl, KernelLibrary};
use rocm_kernels::runtime::{
    fiber_switch_ns, Backend, CpuOptions, Device, Dim3, LaunchConfig, RuntimeError,
};
use rocm_kernels_corpus::FEATURES;

fn cpu() -> Device {
    Device::cpu(CpuOptions {
        threads: 2,
        ..CpuOptions::default()
    })
}

#[testkit::test]
fn probe_lists_cpu_and_explains_missing_backends() {
    let devices = Device::probe();
    let cpu = devices
        .available
        .iter()
        .find(|d| d.backend() == Backend::Cpu)
        .expect("the cpu backend is always available");
    assert_eq!(cpu.info().arch, std::env::consts::ARCH);
    assert!(cpu.info().total_memory > 0);
    for (backend, reason) in &devices.unavailable {
        assert_ne!(*backend, Backend::Cpu);
        assert!(!reason.is_empty());
    }
    assert_eq!(
        Device::all().last().map(|d| d.backend()),
        Some(Backend::Cpu)
    );
    let _ = Device::default();
}

#[testkit::test]
fn device_info_reflects_options() {
    let d = Device::cpu(CpuOptions {
        wave_size: 32,
        threads: 3,
        ..CpuOptions::default()
    });
    assert_eq!(d.info().wave_size, 32);
    assert_eq!(d.info().compute_units, 3);
    assert!(d.info().name.contains("wave 32"), "{}", d.info().name);
    let odd = Device::cpu(CpuOptions {
        wave_size: 48,
        ..CpuOptions::default()
    });
    assert_eq!(
        odd.info().wave_size,
        64,
        "unsupported wave sizes fall back to 64"
    );
}

#[testkit::test]
fn buffers_upload_download_fill_copy() {
    for checked in [true, false] {
        let d = Device::cpu(CpuOptions {
            checked,
            ..CpuOptions::default()
        });
        let mut a = d.upload(&[1u16, 2, 3, 4, 5]).unwrap();
        assert_eq!(a.len(), 5);
        assert_eq!(a.byte_len(), 10);
        assert_eq!(a.to_vec().unwrap(), vec![1, 2, 3, 4, 5]);
        a.fill(9).unwrap();
        assert_eq!(a.to_vec().unwrap(), vec![9; 5]);
        let mut b = d.alloc::<u16>(5).unwrap();
        assert_eq!(
            b.to_vec().unwrap(),
            vec![0; 5],
            "cpu allocations start zeroed"
        );
        b.copy_from(&a).unwrap();
        let mut out = [0u16; 5];
        b.download(&mut out).unwrap();
        assert_eq!(out, [9; 5]);
        let err = b.upload(&[1, 2]).unwrap_err();
        assert!(matches!(err, RuntimeError::SizeMismatch(_)), "{err}");
        let empty = d.alloc::<f64>(0).unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.to_vec().unwrap(), Vec::<f64>::new());
        let other = d.alloc::<u16>(4).unwrap();
        assert!(b.copy_from(&other).is_err());
        let elsewhere = cpu().upload(&[0u16; 5]).unwrap();
        assert!(matches!(
            b.copy_from(&elsewhere),
            Err(RuntimeError::WrongDevice(_))
        ));
    }
}

#[testkit::test]
fn half_precision_buffers_keep_every_bit() {
    use rocm_kernels::half::{bf16, f16};
    let d = cpu();
    // Values, the largest finite ones, a subnormal and NaNs with payloads: copied, never converted.
    let h: Vec<f16> = [0x3c00u16, 0x7bff, 0x0001, 0x7eab, 0xfc00]
        .map(f16::from_bits)
        .to_vec();
    let b: Vec<bf16> = [0x3f80u16, 0x7f7f, 0x0001, 0x7feb, 0xff80]
        .map(bf16::from_bits)
        .to_vec();
    let bits = |v: Vec<f16>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let bbits = |v: Vec<bf16>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let on_device = d.upload(&h).unwrap();
    assert_eq!(on_device.byte_len(), 10);
    assert_eq!(bits(on_device.to_vec().unwrap()), bits(h));
    let mut on_device = d.alloc::<bf16>(b.len()).unwrap();
    on_device.upload(&b).unwrap();
    assert_eq!(bbits(on_device.to_vec().unwrap()), bbits(b));
}

#[testkit::test]
fn pinned_host_buffers_stage_copies_both_ways() {
    for checked in [true, false] {
        let d = Device::cpu(CpuOptions {
            checked,
            ..CpuOptions::default()
        });
        let mut host = d.alloc_host::<f64>(1000).unwrap();
        assert_eq!(host.len(), 1000);
        assert_eq!(host.byte_len(), 8000);
        assert!(host.iter().all(|&x| x == 0.0), "host buffers start zeroed");
        assert_eq!(
            host.as_ptr() as usize % 4096,
            0,
            "page-aligned, as the drivers' pinned memory"
        );
        assert!(host.device().same_as(&d));
        for (i, x) in host.iter_mut().enumerate() {
            *x = i as f64 * 0.5;
        }
        // Through the same copy functions as a Vec, both ways.
        let mut buffer = d.alloc::<f64>(1000).unwrap();
        buffer.upload(&host).unwrap();
        let expected: Vec<f64> = (0..1000).map(|i| i as f64 * 0.5).collect();
        assert_eq!(buffer.to_vec().unwrap(), expected);
        buffer.fill(-2.0).unwrap();
        buffer.download(&mut host).unwrap();
        assert!(host.iter().all(|&x| x == -2.0));
        // A size mismatch is refused as for slices.
        let small = d.alloc_host::<f64>(10).unwrap();
        let err = buffer.upload(&small).unwrap_err();
        assert!(matches!(err, RuntimeError::SizeMismatch(_)), "{err}");
        // Empty buffers allocate nothing and copy nothing.
        let empty = d.alloc_host::<u8>(0).unwrap();
        assert!(empty.is_empty());
        d.alloc::<u8>(0).unwrap().upload(&empty).unwrap();
        // Struct elements keep their alignment.
        let mut triples = d.alloc_host::<[u16; 3]>(5).unwrap();
        triples.fill([1, 2, 3]);
        let mut on_device = d.alloc::<[u16; 3]>(5).unwrap();
        on_device.upload(&triples).unwrap();
        assert_eq!(on_device.to_vec().unwrap(), vec![[1, 2, 3]; 5]);
    }
    // Too large to describe: a clear error, not an abort.
    let err = cpu().alloc_host::<u64>(usize::MAX / 4).unwrap_err();
    assert!(matches!(err, RuntimeError::SizeMismatch(_)), "{err}");
}

#[testkit::test]
fn events_time_work_on_a_stream() {
    let d = cpu();
    let m = d.load(FEATURES).unwrap();
    let s = d.stream().unwrap();
    let n = 1 << 16;
    let x = d.upload(&vec![1.0f32; n]).unwrap();
    let mut y = d.upload(&vec![1.0f32; n]).unwrap();
    let start = s.record().unwrap();
    m.kernel("saxpy")
        .unwrap()
        .launch(LaunchConfig::cover(n, 256))
        .arg(&1.0f32)
        .arg(&x)
        .arg(&mut y)
        .arg(&(n as i32))
        .run(&s)
        .unwrap();
    let end = s.record().unwrap();
    let elapsed = end.elapsed_since(&start).unwrap();
    assert!(elapsed > Duration::ZERO && elapsed < Duration::from_secs(60));
    s.synchronize().unwrap();
    d.synchronize().unwrap();
}

#[testkit::test]
fn launch_config_helpers() {
    let c = LaunchConfig::cover(1000, 256);
    assert_eq!(c.grid, Dim3::new(4, 1, 1));
    assert_eq!(c.block, Dim3::new(256, 1, 1));
    assert_eq!(LaunchConfig::cover(0, 256).grid.x, 1);
    assert_eq!(
        LaunchConfig::new((2, 3), 8).shared_bytes(64).shared_bytes,
        64
    );
    assert_eq!(Dim3::from((2, 3, 4)).count(), 24);
}

#[testkit::test]
fn invalid_launches_are_refused() {
    let d = cpu();
    let m = d.load(FEATURES).unwrap();
    let s = d.stream().unwrap();
    let k = m.kernel("corpus::fill_iota").unwrap();
    let mut out = d.alloc::<i32>(4096).unwrap();
    for (config, needle) in [
        (LaunchConfig::new(1, 2048), "at most 1024"),
        (LaunchConfig::new(0, 32), "no zero extent"),
        (
            LaunchConfig::new(1, 32).shared_bytes(1 << 20),
            "dynamic shared memory",
        ),
    ] {
        let err = k
            .launch(config)
            .arg(&mut out)
            .arg(&0i32)
            .run(&s)
            .unwrap_err();
        assert!(matches!(err, RuntimeError::InvalidLaunch { .. }), "{err}");
        assert!(err.to_string().contains(needle), "{err}");
    }
    // The race check refuses the same launches, before running anything.
    let racy = Device::cpu(CpuOptions {
        race_check: true,
        ..CpuOptions::default()
    });
    let m = racy.load(FEATURES).unwrap();
    let mut out = racy.alloc::<i32>(32).unwrap();
    let err = m
        .kernel("corpus::fill_iota")
        .unwrap()
        .launch(LaunchConfig::new(1, 2048))
        .arg(&mut out)
        .arg(&0i32)
        .run(&racy.stream().unwrap())
        .unwrap_err();
    assert!(matches!(err, RuntimeError::InvalidLaunch { .. }), "{err}");
}

static GPU_ONLY: KernelLibrary = KernelLibrary {
    name: "gpu_only",
    code_objects: &[],
    kernels: &[KernelDecl {
        name: "k",
        source: "k.hip",
        params: &[],
        symbols: &[],
        cpu: None,
    }],
    globals: &[],
};

#[testkit::test]
fn a_library_without_cpu_code_says_so() {
    let err = cpu().load(&GPU_ONLY).unwrap_err();
    assert!(matches!(err, RuntimeError::LibraryMissing { .. }), "{err}");
    assert!(
        err.to_string().contains("built without the cpu backend"),
        "{err}"
    );
}

#[testkit::test]
fn fiber_switch_cost_is_measurable() {
    let ns = fiber_switch_ns(10_000);
    assert!(ns > 0.0 && ns < 100_000.0, "{ns}");
}
