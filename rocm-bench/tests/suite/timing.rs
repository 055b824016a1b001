//! Device timing on the cpu backend: events bracket the launches between them, and the device
//! selection reads what `cargo rocm bench` sets.

use std::time::Duration;

use rocm_bench::target::cpu_device;
use rocm_bench::{time_launches, BenchTarget};
use rocm_protocol::bench::BenchSelection;

#[testkit::test]
fn events_time_what_runs_between_them() {
    let device = cpu_device();
    let stream = device.stream().unwrap();
    // The cpu backend's events read the runtime's clock when recorded: work queued between them
    // (here a host sleep standing in for a launch, as launches run synchronously) is counted.
    let t = time_launches(&stream, 3, |_| {
        std::thread::sleep(Duration::from_millis(5));
        Ok(())
    })
    .unwrap();
    assert!(t >= Duration::from_millis(15), "{t:?}");
    assert!(t < Duration::from_secs(5), "{t:?}");
    let none = time_launches(&stream, 0, |_| unreachable!()).unwrap();
    assert!(none < Duration::from_millis(5), "{none:?}");
}

#[testkit::test]
fn targets_are_named_like_test_trials() {
    let target = BenchTarget::new(cpu_device());
    assert_eq!(target.place(), "cpu/w64");
    assert_eq!(target.id("saxpy"), "saxpy/cpu/w64");
    let record = target.record();
    assert_eq!(record.backend, "cpu");
    assert_eq!(record.place, "cpu/w64");
    let only_nvidia = BenchSelection {
        backends: vec![rocm_kernels::Backend::Nvidia],
        devices: vec![],
    };
    let admits = |s: &BenchSelection| {
        s.admits(
            target.backend(),
            &target.place(),
            &target.device().info().name,
        )
    };
    assert!(!admits(&only_nvidia));
    let by_place = BenchSelection {
        backends: vec![],
        devices: vec!["w64".into()],
    };
    assert!(admits(&by_place));
}
