//! Running kernels: find a [`Device`], load a [`Module`] from an embedded [`KernelLibrary`](crate::KernelLibrary), take a
//! [`Kernel`] by name and launch it on [`Buffer`]s; stage copies through pinned [`HostBuffer`]s.
//!
//! ```no_run
//! use rocm_kernels::runtime::{Device, LaunchConfig};
//! # fn demo(library: &'static rocm_kernels::KernelLibrary) -> Result<(), rocm_kernels::runtime::RuntimeError> {
//! let device = Device::default();
//! let module = device.load(library)?;
//! let saxpy = module.kernel("saxpy")?;
//! let x = device.upload(&[1.0f32; 1024])?;
//! let mut y = device.upload(&[2.0f32; 1024])?;
//! let stream = device.stream()?;
//! saxpy
//!     .launch(LaunchConfig::cover(1024, 256))
//!     .arg(&2.0f32)
//!     .arg(&x)
//!     .arg(&mut y)
//!     .arg(&1024i32)
//!     .run(&stream)?;
//! assert_eq!(y.to_vec()?[0], 4.0);
//! # Ok(()) }
//! ```
//!
//! The types here are the safe layer over the backends (cpu, amd, nvidia), which are private;
//! two lower layers are public on purpose: [`rtc`] (compiling kernels at run time with NVRTC or
//! hipRTC) and [`amd`] (choosing the HIP library the amd backend opens, and HIP's C ABI).

pub mod amd;
pub(crate) mod backend;
mod device;
mod error;
mod host;
mod launch;
mod launch_log;
mod memory;
mod module;
pub mod rtc;
mod stream;

pub use device::{
    CpuExec, CpuOptions, Device, DeviceInfo, Devices, RaceMethod, ENV_DEFAULT_BACKEND,
};
pub use error::{FaultSite, Result, RuntimeError};
pub use host::HostBuffer;
pub use launch::{ArgKind, ArgRef, ByValue, Dim3, KernelArg, LaunchBuilder, LaunchConfig, PushArg};
pub use memory::{Buffer, DeviceCopy};
pub use module::{Global, Kernel, Module};
pub use stream::{Event, Stream};

pub use crate::library::Backend;
pub use backend::cpu::{fiber_switch_ns, race_parallel_stats, race_summary_stats};
pub use rocm_protocol::launch_log::{DriverResources, ENV_LAUNCH_LOG};
