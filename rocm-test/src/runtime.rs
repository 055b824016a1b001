//! Wiring to `rocm_kernels::runtime`: which targets exist here, and launching on them.
//! The only file of the harness that touches the runtime API (with `tune/evaluate.rs`, which
//! does for tuning what this does for trials, with the device buffers defined here).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rocm_kernels::library::{CodeObject, ObjectFormat, TargetId};
use rocm_kernels::runtime::{Buffer, CpuExec, CpuOptions, Device, LaunchBuilder, Module};
use rocm_kernels::{Backend, KernelLibrary};

use crate::element::{HostBuf, ScalarValue};
use crate::options::HarnessOptions;
use crate::target::{Bandwidth, GlobalArg, LaunchArg, Target, TargetSlot, TrialPlace};
use crate::{Error, Launch};

/// A launch on the cpu backend that runs longer than this fails (a missing barrier or an
/// endless loop must not hang CI).
const CPU_TIME_LIMIT: Duration = Duration::from_secs(60);

/// The targets of this machine for `lib`: the cpu backend once per wave size, and one target per
/// GPU architecture the library was built for (usable when such a device is present).
pub(crate) fn discover(lib: &'static KernelLibrary, opts: &HarnessOptions) -> Vec<TargetSlot> {
    let mut slots = Vec::new();
    if opts.selects(Backend::Cpu) {
        let cpu_built = lib.kernels.is_empty() || lib.has_cpu();
        for &wave_size in &opts.wave_sizes {
            let id = TrialPlace::cpu(wave_size);
            let target: Result<Arc<dyn Target>, Error> = if cpu_built {
                Ok(cpu_target(lib, wave_size, opts.cpu_exec))
            } else {
                Err(Error::Target(format!(
                    "library `{}` was built without the cpu backend (enable it in build.rs)",
                    lib.name
                )))
            };
            slots.push(TargetSlot { id, target });
        }
    }
    let gpus: Vec<Backend> = [Backend::Amd, Backend::Nvidia]
        .into_iter()
        .filter(|b| opts.selects(*b))
        .collect();
    if gpus.is_empty() {
        return slots;
    }
    let probe = Device::probe();
    for backend in gpus {
        let objects: Vec<&CodeObject> = lib.objects_of(backend).map(|(_, o)| o).collect();
        // Machine code names the targets (gfx90a, sm_90). PTX and source beside it are
        // fallbacks of the same kernels, not targets of their own.
        let mut archs: Vec<String> = objects
            .iter()
            .filter(|o| !is_jit(o.format))
            .map(|o| o.target.to_owned())
            .collect();
        let all: Vec<&Device> = probe
            .available
            .iter()
            .filter(|d| d.backend() == backend)
            .collect();
        // (ordinal, device) of the devices `--devices` selects.
        let devices: Vec<(usize, &Device)> = opts
            .devices
            .pick(all.len())
            .into_iter()
            .map(|i| (i, all[i]))
            .collect();
        if archs.is_empty() && !objects.is_empty() {
            // Only PTX or source: the driver (or NVRTC) compiles for whatever device is here.
            archs = devices.iter().map(|(_, d)| d.info().arch.clone()).collect();
            if archs.is_empty() {
                archs.push(String::new());
            }
        }
        archs.sort();
        archs.dedup();
        let why_none = if !all.is_empty() && devices.is_empty() {
            format!(
                "--devices {} selects none of the {} {backend} device(s) here (ordinals 0 to {})",
                opts.devices,
                all.len(),
                all.len() - 1
            )
        } else {
            probe
                .unavailable
                .iter()
                .find(|(b, _)| *b == backend)
                .map(|(_, r)| r.clone())
                .unwrap_or_else(|| format!("no {backend} device found"))
        };
        if archs.is_empty() {
            slots.push(TargetSlot {
                id: TrialPlace {
                    backend,
                    target: String::new(),
                },
                // With no device at all, that is the reason that matters here.
                target: Err(Error::Target(if devices.is_empty() {
                    why_none.clone()
                } else {
                    format!(
                        "library `{}` has no {backend} code objects: build.rs built none for \
                         {backend} (its warnings, or `cargo rocm doctor`, say why)",
                        lib.name
                    )
                })),
            });
            continue;
        }
        for arch in archs {
            let matching: Vec<&(usize, &Device)> = devices
                .iter()
                .filter(|(_, d)| arch_matches(backend, &d.info().arch, &arch))
                .collect();
            if matching.is_empty() {
                let target = if devices.is_empty() {
                    why_none.clone()
                } else {
                    format!(
                        "no {backend} device with {arch} here (found: {})",
                        devices
                            .iter()
                            .map(|(_, d)| d.info().arch.clone())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                slots.push(TargetSlot {
                    id: TrialPlace {
                        backend,
                        target: arch,
                    },
                    target: Err(Error::Target(target)),
                });
                continue;
            }
            // Several devices of one architecture: trials of their own for each (`sm_90#1`).
            let several = matching.len() > 1;
            for (ordinal, device) in matching {
                slots.push(TargetSlot {
                    id: TrialPlace::gpu(backend, &arch, *ordinal, several),
                    target: Ok(Arc::new(DeviceTarget::new((*device).clone(), lib))),
                });
            }
        }
    }
    slots
}

/// The cpu backend with this wave size, in checked mode, with a time limit: one device for plain
/// launches and one for race-checked ones (its race detector, or two thread orders for kernels
/// built without their race variant).
pub(crate) fn cpu_target(
    lib: &'static KernelLibrary,
    wave_size: u32,
    exec: Option<CpuExec>,
) -> Arc<dyn Target> {
    let device = |race_check: bool| {
        Device::cpu(CpuOptions {
            wave_size,
            checked: true,
            time_limit: Some(CPU_TIME_LIMIT),
            race_check,
            exec: exec.unwrap_or_else(CpuExec::from_env),
            ..CpuOptions::from_env()
        })
    };
    Arc::new(CpuTarget {
        plain: DeviceTarget::new(device(false), lib),
        race: DeviceTarget::new(device(true), lib),
        wave_size,
    })
}

/// Race-checked launches whose buffers hold more than this run plain instead: the detector keeps
/// 12 bytes of shadow per byte of device memory a launch touches.
const RACE_CHECK_MAX_BYTES: usize = 64 << 20;

/// The cpu backend's two devices (see [`cpu_target`]).
struct CpuTarget {
    plain: DeviceTarget,
    race: DeviceTarget,
    wave_size: u32,
}

impl Target for CpuTarget {
    fn wave_size(&self) -> Option<u32> {
        Some(self.wave_size)
    }

    fn launch(
        &self,
        kernel: &str,
        launch: &Launch,
        args: &mut [LaunchArg<'_>],
        globals: &mut [GlobalArg<'_>],
        race: bool,
    ) -> Result<(), Error> {
        let bytes: usize = args
            .iter()
            .map(|a| match a {
                LaunchArg::Buffer { data, .. } => data.as_bytes().len(),
                LaunchArg::Scalar(_) | LaunchArg::Struct(_) => 0,
            })
            .sum();
        if race && bytes <= RACE_CHECK_MAX_BYTES {
            self.race.launch(kernel, launch, args, globals, true)
        } else {
            self.plain.launch(kernel, launch, args, globals, false)
        }
    }

    fn time(
        &self,
        kernel: &str,
        launch: &Launch,
        args: &mut [LaunchArg<'_>],
        bytes: u64,
        reps: u32,
    ) -> Result<Bandwidth, Error> {
        self.plain.time(kernel, launch, args, bytes, reps)
    }
}

/// Formats compiled for the device at load time rather than ahead of it.
fn is_jit(format: ObjectFormat) -> bool {
    matches!(format, ObjectFormat::Ptx | ObjectFormat::CudaSource)
}

/// Whether a device reporting `device_arch` runs code built for `code_arch`: an AMD target id's
/// processor and fixed features (`gfx90a` and `gfx90a:xnack-` run on `gfx90a:sramecc+:xnack-`),
/// the same `sm_XX` on NVIDIA.
fn arch_matches(backend: Backend, device_arch: &str, code_arch: &str) -> bool {
    if code_arch.is_empty() || device_arch == code_arch {
        return true;
    }
    match (
        backend,
        TargetId::parse(code_arch),
        TargetId::parse(device_arch),
    ) {
        (Backend::Amd, Some(code), Some(device)) => code.runs_on(&device),
        _ => false,
    }
}

/// A runtime device and the library's module on it (loaded once, on first use).
struct DeviceTarget {
    device: Device,
    library: &'static KernelLibrary,
    module: OnceLock<Result<Module, Error>>,
}

impl DeviceTarget {
    fn new(device: Device, library: &'static KernelLibrary) -> Self {
        DeviceTarget {
            device,
            library,
            module: OnceLock::new(),
        }
    }
}

macro_rules! device_bufs {
    ($($variant:ident $t:ty),*; as_bytes: $($bvariant:ident $bt:ty),*) => {
        /// A device buffer of any element type.
        pub(crate) enum DevBuf { $($variant(Buffer<$t>),)* $($bvariant(Buffer<$bt>),)* }

        impl DevBuf {
            pub(crate) fn upload(device: &Device, host: &HostBuf) -> rocm_kernels::runtime::Result<DevBuf> {
                Ok(match host {
                    $(HostBuf::$variant(v) => DevBuf::$variant(device.upload(v)?),)*
                    $(HostBuf::$bvariant(v) => DevBuf::$bvariant(device.upload(v)?),)*
                })
            }
            /// Overwrite the device contents with another device buffer's (same type and
            /// length), without a trip through the host.
            #[cfg_attr(not(feature = "tune"), allow(dead_code))] // used in tune mode
            pub(crate) fn copy_from(&mut self, other: &DevBuf) -> rocm_kernels::runtime::Result<()> {
                match (self, other) {
                    $((DevBuf::$variant(b), DevBuf::$variant(o)) => b.copy_from(o),)*
                    $((DevBuf::$bvariant(b), DevBuf::$bvariant(o)) => b.copy_from(o),)*
                    _ => unreachable!("both buffers are created from the same host buffer"),
                }
            }
            pub(crate) fn download(&self, host: &mut HostBuf) -> rocm_kernels::runtime::Result<()> {
                match (self, host) {
                    $((DevBuf::$variant(b), HostBuf::$variant(v)) => b.download(v),)*
                    $((DevBuf::$bvariant(b), HostBuf::$bvariant(v)) => b.download(v),)*
                    _ => unreachable!("device and host buffers are created from each other"),
                }
            }
            pub(crate) fn push<'a>(&'a self, l: LaunchBuilder<'a>) -> LaunchBuilder<'a> {
                match self {
                    $(DevBuf::$variant(b) => l.arg(b),)*
                    $(DevBuf::$bvariant(b) => l.arg(b),)*
                }
            }
        }

        /// A by-value argument as the runtime takes it: the numbers and vectors themselves, the
        /// types the runtime has no by-value argument for (half precision) as their bytes.
        fn dev_scalar(v: &ScalarValue) -> DevArg {
            match v {
                $(ScalarValue::$variant(_) => DevArg::Scalar(*v),)*
                $(ScalarValue::$bvariant(x) => DevArg::Struct(crate::RawValue::of(x)),)*
            }
        }

        pub(crate) fn push_scalar<'a>(v: &'a ScalarValue, l: LaunchBuilder<'a>) -> LaunchBuilder<'a> {
            match v {
                $(ScalarValue::$variant(x) => l.arg(x),)*
                $(ScalarValue::$bvariant(_) => unreachable!("passed as bytes: see dev_scalar"),)*
            }
        }
    };
}

use rocm_kernels::vector::*;
device_bufs!(
    F32 f32, F64 f64, I8 i8, I16 i16, I32 i32, I64 i64, U8 u8, U16 u16, U32 u32, U64 u64,
    I8x2 Char2, I8x3 Char3, I8x4 Char4, U8x2 UChar2, U8x3 UChar3, U8x4 UChar4,
    I16x2 Short2, I16x3 Short3, I16x4 Short4, U16x2 UShort2, U16x3 UShort3, U16x4 UShort4,
    I32x2 Int2, I32x3 Int3, I32x4 Int4, U32x2 UInt2, U32x3 UInt3, U32x4 UInt4,
    I64x2 Long2, I64x3 Long3, I64x4 Long4, U64x2 ULong2, U64x3 ULong3, U64x4 ULong4,
    F32x2 Float2, F32x3 Float3, F32x4 Float4, F64x2 Double2, F64x3 Double3, F64x4 Double4;
    as_bytes: F16 half::f16, BF16 half::bf16
);

enum DevArg {
    Scalar(ScalarValue),
    Struct(crate::RawValue),
    Buffer(DevBuf),
}

impl DeviceTarget {
    fn module(&self) -> Result<&Module, Error> {
        self.module
            .get_or_init(|| self.device.load(self.library).map_err(Error::runtime))
            .as_ref()
            .map_err(Clone::clone)
    }

    fn upload(&self, args: &[LaunchArg<'_>]) -> Result<Vec<DevArg>, Error> {
        args.iter()
            .map(|a| match a {
                LaunchArg::Scalar(v) => Ok(dev_scalar(v)),
                LaunchArg::Struct(v) => Ok(DevArg::Struct(v.clone())),
                LaunchArg::Buffer { data, .. } => {
                    DevBuf::upload(&self.device, data).map(DevArg::Buffer)
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(Error::runtime_while("upload"))
    }

    /// Launch once on `stream` (asynchronously).
    fn run(
        kernel: &rocm_kernels::runtime::Kernel,
        launch: &Launch,
        dev_args: &[DevArg],
        stream: &rocm_kernels::runtime::Stream,
    ) -> Result<(), Error> {
        // The check's launch is the runtime's type: handed over as it is.
        let mut builder = kernel.launch(*launch);
        for a in dev_args {
            builder = match a {
                DevArg::Scalar(v) => push_scalar(v, builder),
                DevArg::Struct(v) => builder.arg(v),
                DevArg::Buffer(b) => b.push(builder),
            };
        }
        builder.run(stream).map_err(Error::runtime)
    }
}

/// The median of `reps` runs of `f`, in seconds.
fn median_secs(reps: u32, mut f: impl FnMut() -> Result<(), Error>) -> Result<f64, Error> {
    let mut times = Vec::with_capacity(reps as usize);
    for _ in 0..reps.max(1) {
        let start = std::time::Instant::now();
        f()?;
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

impl Target for DeviceTarget {
    fn wave_size(&self) -> Option<u32> {
        Some(self.device.info().wave_size)
    }

    fn launch(
        &self,
        kernel: &str,
        launch: &Launch,
        args: &mut [LaunchArg<'_>],
        globals: &mut [GlobalArg<'_>],
        _race: bool,
    ) -> Result<(), Error> {
        let module = self.module()?;
        let kernel = module.kernel(kernel)?;
        let dev_args = self.upload(args)?;
        for g in globals.iter() {
            module
                .global(g.name)
                .and_then(|v| v.write(g.data.as_bytes()))
                .map_err(Error::runtime_while(format!(
                    "setting variable `{}`",
                    g.name
                )))?;
        }
        let stream = self.device.stream()?;
        Self::run(&kernel, launch, &dev_args, &stream)?;
        stream.synchronize()?;
        for g in globals.iter_mut().filter(|g| g.read_back) {
            module
                .global(g.name)
                .and_then(|v| v.read(g.data.as_bytes_mut()))
                .map_err(Error::runtime_while(format!(
                    "reading variable `{}`",
                    g.name
                )))?;
        }
        for (a, d) in args.iter_mut().zip(&dev_args) {
            if let (
                LaunchArg::Buffer {
                    data,
                    read_back: true,
                },
                DevArg::Buffer(b),
            ) = (a, d)
            {
                b.download(data).map_err(Error::runtime_while("download"))?;
            }
        }
        Ok(())
    }

    fn time(
        &self,
        kernel: &str,
        launch: &Launch,
        args: &mut [LaunchArg<'_>],
        bytes: u64,
        reps: u32,
    ) -> Result<Bandwidth, Error> {
        let kernel = self.module()?.kernel(kernel)?;
        let dev_args = self.upload(args)?;
        let stream = self.device.stream()?;
        let sync = |r: Result<(), Error>| r.and_then(|_| Ok(stream.synchronize()?));
        sync(Self::run(&kernel, launch, &dev_args, &stream))?; // warm-up
        let kernel_s = median_secs(reps, || {
            sync(Self::run(&kernel, launch, &dev_args, &stream))
        })?;
        // A copy of bytes/2 reads and writes `bytes` in all.
        let half = (bytes / 2).max(1) as usize;
        let mut src = self.device.alloc::<u8>(half)?;
        src.fill(1)?;
        let mut dst = self.device.alloc::<u8>(half)?;
        dst.copy_from(&src)?; // warm-up
        let copy_s = median_secs(reps, || {
            dst.copy_from(&src)?;
            Ok(self.device.synchronize()?)
        })?;
        let gbps = |secs: f64| bytes as f64 / secs / 1e9;
        Ok(Bandwidth {
            bytes,
            kernel_ms: kernel_s * 1e3,
            kernel_gbps: gbps(kernel_s),
            copy_ms: copy_s * 1e3,
            copy_gbps: gbps(copy_s),
            ratio: copy_s / kernel_s,
        })
    }
}

#[cfg(test)]
mod tests {
    use rocm_kernels::Backend;

    #[test]
    fn code_runs_where_its_target_id_allows() {
        use super::arch_matches;
        assert!(arch_matches(
            Backend::Amd,
            "gfx90a:sramecc+:xnack-",
            "gfx90a"
        ));
        assert!(arch_matches(
            Backend::Amd,
            "gfx90a:sramecc+:xnack-",
            "gfx90a:xnack-"
        ));
        assert!(!arch_matches(
            Backend::Amd,
            "gfx90a:sramecc+:xnack-",
            "gfx90a:xnack+"
        ));
        assert!(!arch_matches(Backend::Amd, "gfx1030", "gfx90a"));
        assert!(arch_matches(Backend::Nvidia, "sm_90", "sm_90"));
        assert!(!arch_matches(Backend::Nvidia, "sm_90", "sm_80"));
    }
}
