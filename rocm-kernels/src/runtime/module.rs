//! [`Module`] and [`Kernel`]: the kernels of one library, loaded on one device.

use std::ffi::c_void;
use std::sync::Arc;

use super::backend::{FunctionBackend, ModuleBackend, ParamLayout};
use smallvec::SmallVec;

use super::launch::{ArgKind, ArgRef, INLINE_ARGS};
use super::launch_log::{self, Work};
use super::{Device, DeviceCopy, LaunchBuilder, LaunchConfig, Result, RuntimeError, Stream};
use crate::library::{KernelDecl, KernelLibrary, ParamKind};

/// A kernel library loaded on a device.
#[derive(Debug, Clone)]
pub struct Module {
    device: Device,
    library: &'static KernelLibrary,
    inner: Arc<dyn ModuleBackend>,
}

impl Module {
    pub(crate) fn new(
        device: Device,
        library: &'static KernelLibrary,
        inner: Arc<dyn ModuleBackend>,
    ) -> Self {
        Module {
            device,
            library,
            inner,
        }
    }

    /// The device it is loaded on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The kernel library it was loaded from.
    pub fn library(&self) -> &'static KernelLibrary {
        self.library
    }

    /// The `__constant__` or `__device__` variable `name` (`mask`, `ns::mask`) of this module, to
    /// read or write between launches (`hipMemcpyToSymbol`'s job):
    ///
    /// ```no_run
    /// # fn f(module: &rocm_kernels::runtime::Module) -> rocm_kernels::runtime::Result<()> {
    /// module.global("mask")?.write(&[0.25f32, 0.5, 0.25])?;
    /// # Ok(()) }
    /// ```
    pub fn global(&self, name: &str) -> Result<Global> {
        let decl = self.library.global(name);
        let symbol = decl
            .map(|d| d.symbol.to_string())
            .unwrap_or_else(|| crate::library::variable_symbol(name));
        match self.inner.global(decl, &symbol)? {
            Some((ptr, bytes)) => Ok(Global {
                device: self.device.clone(),
                name: decl.map_or(name, |d| d.name).to_string(),
                ptr,
                bytes,
            }),
            None => {
                let known: Vec<&str> = self.library.globals.iter().map(|g| g.name).collect();
                Err(RuntimeError::GlobalNotFound {
                    name: name.to_string(),
                    library: self.library.name.to_string(),
                    available: if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    },
                })
            }
        }
    }

    /// Names of the kernels this module holds on its device.
    pub fn kernel_names(&self) -> Vec<String> {
        let mut names = self.inner.kernel_names();
        names.sort();
        names
    }

    /// The kernel called `name` (`saxpy`, or `scale<float>` for a template instantiation).
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        match self.inner.function(name)? {
            Some(function) => {
                let decl = self.library.kernel(name);
                Ok(Kernel {
                    name: name.to_string(),
                    library: self.library.name,
                    device: self.device.clone(),
                    params: expected_params(function.as_ref(), decl).map(Arc::from),
                    decl,
                    function,
                })
            }
            None => {
                let names = self.kernel_names();
                Err(RuntimeError::KernelNotFound {
                    name: name.to_string(),
                    library: self.library.name.to_string(),
                    available: if names.is_empty() {
                        "no kernels".to_string()
                    } else {
                        names.join(", ")
                    },
                })
            }
        }
    }
}

/// One kernel, ready to launch.
#[derive(Debug, Clone)]
pub struct Kernel {
    name: String,
    /// The library's name, for the launch log.
    library: &'static str,
    device: Device,
    decl: Option<&'static KernelDecl>,
    /// The parameters launches are checked against, found once (see [`expected_params`]).
    params: Option<Arc<[ParamLayout]>>,
    function: Arc<dyn FunctionBackend>,
}

/// The parameters to check launches against: the compiled code's layout when the backend knows
/// it, else the build's declarations (sizes of 0 there mean "unknown"); `None` when neither
/// says anything.
fn expected_params(
    function: &dyn FunctionBackend,
    decl: Option<&'static KernelDecl>,
) -> Option<Vec<ParamLayout>> {
    if let Some(layout) = function.param_layout() {
        return Some(layout);
    }
    let decl = decl?;
    if decl.params.is_empty() {
        return None;
    }
    Some(
        decl.params
            .iter()
            .map(|p| ParamLayout {
                size: p.size,
                is_pointer: p.kind == ParamKind::GlobalBuffer,
                align: 0,
            })
            .collect(),
    )
}

impl Kernel {
    /// The name it was looked up by ([`Module::kernel`]).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device it runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The declaration the build recorded (parameter names and source types), if any.
    pub fn decl(&self) -> Option<&'static KernelDecl> {
        self.decl
    }

    /// What the compiled kernel uses (registers, shared and local memory) and how many blocks of
    /// `block_threads` threads with `dynamic_shared` bytes fit on one multiprocessor, as the
    /// driver reports them (nvidia; a failed driver call is named in `error`); `None` where the
    /// backend cannot tell. The same record the launch log keeps for `cargo rocm profile`.
    pub fn resources(
        &self,
        block_threads: u32,
        dynamic_shared: u32,
    ) -> Option<super::backend::DriverResources> {
        self.function.resources(block_threads, dynamic_shared)
    }

    /// Start a launch: add arguments with `.arg(..)`, then `.run(&stream)`.
    pub fn launch(&self, config: LaunchConfig) -> LaunchBuilder<'_> {
        LaunchBuilder::new(self, config)
    }

    fn mismatch(&self, message: String) -> RuntimeError {
        RuntimeError::ArgMismatch {
            kernel: self.name.clone(),
            message,
        }
    }

    /// Parameter `i` as the source declares it (`` `float* x` ``), or `#i`: for messages.
    fn param_name(&self, i: usize) -> String {
        self.decl
            .and_then(|d| d.params.get(i))
            .map(|p| format!("`{} {}`", p.type_name, p.name))
            .unwrap_or_else(|| format!("#{i}"))
    }

    fn check_args(&self, args: &[ArgRef<'_>]) -> Result<()> {
        for (i, arg) in args.iter().enumerate() {
            if let Some(device) = arg.device() {
                if !device.same_as(&self.device) {
                    return Err(self.mismatch(format!(
                        "argument {i} ({}) lives on {}, the kernel runs on {}",
                        arg.type_name(),
                        device.info().name,
                        self.device.info().name
                    )));
                }
            }
        }
        let Some(params) = self.params.as_deref() else {
            return Ok(());
        };
        if params.len() != args.len() {
            return Err(self.mismatch(format!(
                "it takes {} parameter(s) ({}), the launch passed {}",
                params.len(),
                (0..params.len())
                    .map(|i| self.param_name(i))
                    .collect::<Vec<_>>()
                    .join(", "),
                args.len()
            )));
        }
        for (i, (layout, arg)) in params.iter().zip(args).enumerate() {
            let arg_is_pointer = arg.kind == ArgKind::Pointer;
            let param = || self.param_name(i);
            if layout.is_pointer && !arg_is_pointer {
                return Err(self.mismatch(format!(
                    "parameter {i} {} is a pointer; pass a Buffer, not a {}",
                    param(),
                    arg.type_name()
                )));
            }
            if !layout.is_pointer && arg_is_pointer {
                return Err(self.mismatch(format!(
                    "parameter {i} {} is passed by value ({} bytes); got a {}",
                    param(),
                    layout.size,
                    arg.type_name()
                )));
            }
            if layout.size != 0 && layout.size as usize != arg.size {
                return Err(self.mismatch(format!(
                    "parameter {i} {} has {} bytes, the argument ({}) has {}",
                    param(),
                    layout.size,
                    arg.type_name(),
                    arg.size
                )));
            }
            if !layout.is_pointer && layout.align != 0 && layout.align as usize != arg.align {
                return Err(self.mismatch(format!(
                    "parameter {i} {} is aligned to {} bytes, the argument ({}) to {}: give \
                     the Rust type the same alignment (`#[repr(C, align({}))]`, or the vector \
                     types of `rocm_kernels::vector`)",
                    param(),
                    layout.align,
                    arg.type_name(),
                    arg.align,
                    layout.align
                )));
            }
        }
        Ok(())
    }

    pub(crate) fn launch_checked(
        &self,
        config: &LaunchConfig,
        args: &[ArgRef<'_>],
        work: Work,
        stream: &Stream,
    ) -> Result<()> {
        self.device.check_same(stream.device())?;
        if config.grid.count() == 0 || config.block.count() == 0 {
            return Err(RuntimeError::InvalidLaunch {
                kernel: self.name.clone(),
                message: format!(
                    "grid {:?} and block {:?} must have no zero extent",
                    config.grid, config.block
                ),
            });
        }
        self.check_args(args)?;
        // By-value arguments are copied into 16-byte-aligned storage: kernels read a parameter
        // with its type's alignment (a float4 with an aligned vector load on the cpu backend),
        // and the caller's value need not have it. Inline for the usual few arguments: this is
        // every launch's path, and small back-to-back kernels are bound by it.
        let slots_of = |a: &ArgRef<'_>| a.size.div_ceil(16).max(1);
        let slots: usize = args
            .iter()
            .filter(|a| a.kind == ArgKind::Value)
            .map(slots_of)
            .sum();
        let mut storage: SmallVec<[u128; INLINE_ARGS]> = SmallVec::from_elem(0, slots);
        let mut raw: SmallVec<[*mut c_void; INLINE_ARGS]> = SmallVec::with_capacity(args.len());
        let base = storage.as_mut_ptr();
        let mut at = 0;
        for a in args {
            if a.kind == ArgKind::Value {
                // Safety: `at` plus the argument's slots is within `storage` (counted above),
                // which is not resized after this; `a.ptr` points to `a.size` readable bytes
                // (KernelArg's contract), and the slots hold at least that many.
                let slot = unsafe { base.add(at) };
                unsafe { std::ptr::copy_nonoverlapping(a.ptr.cast::<u8>(), slot.cast(), a.size) };
                raw.push(slot.cast());
                at += slots_of(a);
            } else {
                raw.push(a.ptr as *mut c_void);
            }
        }
        let Some(log) = launch_log::log() else {
            // Safety: the arguments were checked against the parameter list where it is known,
            // and the builder borrows every buffer until this returns.
            return unsafe { self.function.launch(config, &raw, stream.inner()) };
        };
        let info = self.device.info();
        if log.first_time(self.library, &self.name, config) {
            let threads = u32::try_from(config.block.count()).unwrap_or(u32::MAX);
            if let Some(resources) = self.function.resources(threads, config.shared_bytes) {
                log.function(self.library, &self.name, info, config, resources);
            }
        }
        let start = log.now_ns();
        // Safety: as above.
        let result = unsafe { self.function.launch(config, &raw, stream.inner()) };
        // A cpu launch returns when the kernel is done; GPU launches only queue it.
        let duration = (info.backend == crate::Backend::Cpu && result.is_ok())
            .then(|| log.now_ns().saturating_sub(start));
        log.launch(
            self.library,
            &self.name,
            info,
            config,
            start,
            duration,
            work,
        );
        result
    }
}

/// A `__constant__` or `__device__` variable of a loaded module ([`Module::global`]).
#[derive(Debug, Clone)]
pub struct Global {
    device: Device,
    name: String,
    ptr: super::backend::DevicePtr,
    bytes: usize,
}

impl Global {
    /// Its size in bytes.
    pub fn size(&self) -> usize {
        self.bytes
    }

    fn check(&self, bytes: usize, what: &str) -> Result<()> {
        if bytes == self.bytes {
            return Ok(());
        }
        Err(RuntimeError::SizeMismatch(format!(
            "{what} {bytes} bytes of variable `{}`, which has {}",
            self.name, self.bytes
        )))
    }

    /// Set it to `data` (exactly its size).
    pub fn write<T: DeviceCopy>(&self, data: &[T]) -> Result<()> {
        self.check(std::mem::size_of_val(data), "cannot write")?;
        let stream = self.device.inner.new_stream()?;
        // Safety: `data` is a live slice of exactly the variable's size.
        unsafe {
            self.device.inner.copy_to_device(
                self.ptr,
                data.as_ptr().cast(),
                self.bytes,
                stream.as_ref(),
            )?;
        }
        stream.synchronize()
    }

    /// Read it into `out` (exactly its size).
    pub fn read<T: DeviceCopy>(&self, out: &mut [T]) -> Result<()> {
        self.check(std::mem::size_of_val(out), "cannot read")?;
        let stream = self.device.inner.new_stream()?;
        // Safety: `out` is a live slice of exactly the variable's size; any bytes are a `T`.
        unsafe {
            self.device.inner.copy_to_host(
                out.as_mut_ptr().cast(),
                self.ptr,
                self.bytes,
                stream.as_ref(),
            )?;
        }
        stream.synchronize()
    }

    /// Set it to one value (a struct, a scalar) of exactly its size.
    pub fn write_value<T: DeviceCopy>(&self, value: &T) -> Result<()> {
        self.write(std::slice::from_ref(value))
    }

    /// Its value as a `T` of exactly its size.
    pub fn read_value<T: DeviceCopy + Default>(&self) -> Result<T> {
        let mut v = T::default();
        self.read(std::slice::from_mut(&mut v))?;
        Ok(v)
    }
}
