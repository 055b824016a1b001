//! Device-timed benchmarks of HIP kernels, for `benches/*.rs` and for `cargo rocm bench`.
//!
//! - [`timing`]: [`time_launches`] times N back-to-back launches with two events on the stream
//!   (HIP events on `amd`, CUDA events on `nvidia`, the runtime's clock on `cpu`), and
//!   [`DeviceGroup`] plugs it into criterion (`Bencher::iter_custom`), one benchmark group per
//!   device: `saxpy/cpu/w64/n=1M`, `saxpy/nvidia/sm_90/n=1M`.
//! - [`target`]: the devices a benchmark runs on ([`targets`]), chosen as `cargo rocm bench
//!   --backend/--device` asked, each named as the test trials name it.
//! - what a bench binary tells `cargo rocm bench` (one JSON line per finished benchmark, in the
//!   file `ROCM_BENCH_EVENTS` names), so every result is recorded as soon as it is measured: the
//!   stream's format is `rocm_protocol::bench`, re-exported here ([`BenchEvent`],
//!   [`EventSink`], [`vars`]) for bench binaries that write results of their own.
//!
//! ```no_run
//! use criterion::{criterion_group, criterion_main, Criterion, Throughput};
//! use rocm_kernels::runtime::LaunchConfig;
//!
//! # fn kernels() -> &'static rocm_kernels::KernelLibrary { unimplemented!() }
//! fn saxpy(c: &mut Criterion) {
//!     let n = 1usize << 20;
//!     for target in rocm_bench::targets() {
//!         let device = target.device();
//!         let module = device.load(kernels()).unwrap();
//!         let kernel = module.kernel("saxpy").unwrap();
//!         let x = device.upload(&vec![1.0f32; n]).unwrap();
//!         let mut y = device.upload(&vec![2.0f32; n]).unwrap();
//!         let stream = device.stream().unwrap();
//!         let mut group = rocm_bench::DeviceGroup::new(c, "saxpy", &target);
//!         group.throughput(Throughput::Bytes(12 * n as u64));
//!         group.bench_launches("n=1M", &stream, |s| {
//!             kernel.launch(LaunchConfig::cover(n, 256))
//!                 .arg(&(n as i32)).arg(&2.0f32).arg(&x).arg(&mut y)
//!                 .run(s)
//!         });
//!         group.finish();
//!     }
//! }
//! criterion_group!(benches, saxpy);
//! criterion_main!(benches);
//! ```

pub mod target;
pub mod timing;

pub use rocm_protocol::bench::{
    vars, BenchEvent, BenchRecord, DeviceRecord, EventSink, Param, ThroughputKind,
};
pub use target::{targets, BenchTarget};
pub use timing::{time_launches, DeviceGroup};
