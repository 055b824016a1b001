//! Kernels ([`NvFunction`]): the driver handle per context generation, and launches.

use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use cudarc::driver::result::{self as cu};
use cudarc::driver::sys;

use super::super::{DriverResources, FunctionBackend, ParamLayout, StreamBackend};
use super::module::ModuleInner;
use super::stream::NvStream;
use super::{api, guarded};
use crate::library::Backend;
use crate::runtime::{LaunchConfig, Result, RuntimeError};

#[derive(Debug)]
pub(super) struct NvFunction {
    pub(super) module: Arc<ModuleInner>,
    pub(super) name: Arc<str>,
    /// The driver's handle once looked up, with the context generation it belongs to: a launch
    /// takes it from here instead of searching the loaded modules (a launch's path is what
    /// small back-to-back kernels are bound by).
    pub(super) cached: Mutex<Option<CachedFunction>>,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct CachedFunction {
    pub(super) generation: u64,
    pub(super) function: sys::CUfunction,
}
// Safety: a function handle is a context-bound driver handle usable from any thread.
unsafe impl Send for CachedFunction {}

impl NvFunction {
    /// The driver's handle of this kernel (loading the module again after a reset).
    pub(super) fn handle(&self) -> Result<sys::CUfunction> {
        self.module.ensure_loaded()?;
        let loaded = self.module.loaded.lock().unwrap_or_else(|p| p.into_inner());
        // The generation the modules were loaded in, read under the same lock as the handle.
        let (generation, function) = loaded
            .iter()
            .flat_map(|(generation, l)| l.iter().map(move |m| (*generation, m)))
            .find_map(|(generation, m)| m.functions.get(&*self.name).map(|(_, f)| (generation, *f)))
            .ok_or_else(|| self.not_found())?;
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) = Some(CachedFunction {
            generation,
            function,
        });
        Ok(function)
    }

    /// The cached handle, if it belongs to `generation`.
    pub(super) fn cached(&self, generation: u64) -> Option<sys::CUfunction> {
        let cached = *self.cached.lock().unwrap_or_else(|p| p.into_inner());
        cached
            .filter(|c| c.generation == generation)
            .map(|c| c.function)
    }

    pub(super) fn not_found(&self) -> RuntimeError {
        RuntimeError::KernelNotFound {
            name: self.name.to_string(),
            library: self.module.library.name.to_string(),
            available: String::new(),
        }
    }
}

impl FunctionBackend for NvFunction {
    fn param_layout(&self) -> Option<Vec<ParamLayout>> {
        None
    }

    fn resources(&self, block_threads: u32, dynamic_shared: u32) -> Option<DriverResources> {
        let device = &self.module.device;
        let mut out = DriverResources {
            max_warps_per_sm: Some(device.max_threads_per_sm / device.info.wave_size.max(1)),
            ..DriverResources::default()
        };
        let read = guarded("cuOccupancyMaxActiveBlocksPerMultiprocessor", || {
            let function = self.handle()?;
            let _state = device.enter()?;
            use sys::CUfunction_attribute_enum as F;
            let attribute = |attr| {
                // Safety: a function of the current context and a plain integer attribute.
                unsafe { cu::function::get_function_attribute(function, attr) }
                    .map(|v| v as u32)
                    .map_err(|e| api("cuFuncGetAttribute", e))
            };
            out.registers = Some(attribute(F::CU_FUNC_ATTRIBUTE_NUM_REGS)?);
            out.static_shared_bytes = Some(attribute(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?);
            out.local_bytes = Some(attribute(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?);
            out.max_threads_per_block =
                Some(attribute(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?);
            let mut blocks: std::ffi::c_int = 0;
            // Safety: a function of the current context; `blocks` is written by the driver.
            unsafe {
                sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                    &mut blocks,
                    function,
                    block_threads as std::ffi::c_int,
                    dynamic_shared as usize,
                )
            }
            .result()
            .map_err(|e| api("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
            out.active_blocks_per_sm = Some(blocks.max(0) as u32);
            Ok(())
        });
        if let Err(e) = read {
            out.error = Some(e.to_string());
        }
        Some(out)
    }

    unsafe fn launch(
        &self,
        config: &LaunchConfig,
        args: &[*mut c_void],
        stream: &dyn StreamBackend,
    ) -> Result<()> {
        let stream = stream
            .as_any()
            .downcast_ref::<NvStream>()
            .ok_or_else(|| RuntimeError::WrongDevice("stream of another backend".into()))?;
        let device = &self.module.device;
        // The state lock is held until the launch is queued: no reset (and so no reload of the
        // module) can come between finding the handle and using it.
        let mut attempts = 0;
        let (mut state, function) = loop {
            let state = device.enter()?;
            if let Some(function) = self.cached(state.generation) {
                break (state, function);
            }
            attempts += 1;
            if attempts > 3 {
                return Err(RuntimeError::Api {
                    backend: Backend::Nvidia,
                    call: "cuModuleGetFunction".to_string(),
                    message: format!(
                        "kernel `{}`: its module was reloaded under every launch attempt",
                        self.name
                    ),
                });
            }
            drop(state);
            // Loads the module where needed (first use, or after a reset) and caches the
            // handle for that generation; a reset in between makes the loop look again.
            self.handle()?;
        };
        device.check_generation(&state, stream.generation, "stream")?;
        if config.shared_bytes > 48 * 1024 {
            // Above 48 KiB a kernel must opt in to more dynamic shared memory.
            let _ = sys::cuFuncSetAttribute(
                function,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                config.shared_bytes as i32,
            );
        }
        state.last_launch = Some(self.name.clone());
        // The driver only reads the parameter array (cudarc's wrapper wants it mutable, and a
        // copy of it per launch).
        sys::cuLaunchKernel(
            function,
            config.grid.x,
            config.grid.y,
            config.grid.z,
            config.block.x,
            config.block.y,
            config.block.z,
            config.shared_bytes,
            stream.stream,
            args.as_ptr() as *mut *mut c_void,
            std::ptr::null_mut(),
        )
        .result()
        .map_err(|e| device.fail(&mut state, "cuLaunchKernel", e))
    }
}
