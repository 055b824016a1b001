//! [`Module`] and [`Kernel`]: the kernels of one library, loaded on one device.

use std::ffi::c_void;
use std::sync::Arc;

use super::backend::{FunctionBackend, ModuleBackend, ParamLayout};
use super::launch::{ArgKind, ArgRef};
use super::launch_log::{self, Work};
use super::{Device, LaunchBuilder, LaunchConfig, Result, RuntimeError, Stream};
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

    pub fn device(&self) -> &Device {
        &self.device
    }

    pub fn library(&self) -> &'static KernelLibrary {
        self.library
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
            Some(function) => Ok(Kernel {
                name: name.to_string(),
                library: self.library.name,
                device: self.device.clone(),
                decl: self.library.kernel(name),
                function,
            }),
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
    function: Arc<dyn FunctionBackend>,
}

impl Kernel {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The declaration the build recorded (parameter names and source types), if any.
    pub fn decl(&self) -> Option<&'static KernelDecl> {
        self.decl
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

    /// The parameters to check against: the compiled code's layout when the backend knows it,
    /// else the build's declarations (sizes of 0 there mean "unknown").
    fn expected_params(&self) -> Option<Vec<(String, ParamLayout)>> {
        let names = |i: usize| {
            self.decl
                .and_then(|d| d.params.get(i))
                .map(|p| format!("`{} {}`", p.type_name, p.name))
                .unwrap_or_else(|| format!("#{i}"))
        };
        if let Some(layout) = self.function.param_layout() {
            return Some(
                layout
                    .into_iter()
                    .enumerate()
                    .map(|(i, l)| (names(i), l))
                    .collect(),
            );
        }
        let decl = self.decl?;
        if decl.params.is_empty() {
            return None;
        }
        Some(
            decl.params
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    (
                        names(i),
                        ParamLayout {
                            size: p.size,
                            is_pointer: p.kind == ParamKind::GlobalBuffer,
                        },
                    )
                })
                .collect(),
        )
    }

    fn check_args(&self, args: &[ArgRef]) -> Result<()> {
        for (i, arg) in args.iter().enumerate() {
            if let Some(device) = &arg.device {
                if !device.same_as(&self.device) {
                    return Err(self.mismatch(format!(
                        "argument {i} ({}) lives on {}, the kernel runs on {}",
                        arg.type_name,
                        device.info().name,
                        self.device.info().name
                    )));
                }
            }
        }
        let Some(params) = self.expected_params() else {
            return Ok(());
        };
        if params.len() != args.len() {
            return Err(self.mismatch(format!(
                "it takes {} parameter(s) ({}), the launch passed {}",
                params.len(),
                params
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                args.len()
            )));
        }
        for (i, ((param, layout), arg)) in params.iter().zip(args).enumerate() {
            let arg_is_pointer = arg.kind == ArgKind::Pointer;
            if layout.is_pointer && !arg_is_pointer {
                return Err(self.mismatch(format!(
                    "parameter {i} {param} is a pointer; pass a Buffer, not a {}",
                    arg.type_name
                )));
            }
            if !layout.is_pointer && arg_is_pointer {
                return Err(self.mismatch(format!(
                    "parameter {i} {param} is passed by value ({} bytes); got a {}",
                    layout.size, arg.type_name
                )));
            }
            if layout.size != 0 && layout.size as usize != arg.size {
                return Err(self.mismatch(format!(
                    "parameter {i} {param} has {} bytes, the argument ({}) has {}",
                    layout.size, arg.type_name, arg.size
                )));
            }
        }
        Ok(())
    }

    pub(crate) fn launch_checked(
        &self,
        config: &LaunchConfig,
        args: &[ArgRef],
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
        let raw: Vec<*mut c_void> = args.iter().map(|a| a.ptr as *mut c_void).collect();
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
