//! Modules: a library's cpu entries, each described by the entry itself (parameter sizes).

use std::ffi::c_void;
use std::sync::Arc;

use super::super::{DevicePtr, FunctionBackend, ModuleBackend, ParamLayout};
use super::device::Shared;
use super::ffi;
use super::launch::CpuFunction;
use crate::library::{Backend, KernelLibrary};
use crate::runtime::{Result, RuntimeError};

#[derive(Debug)]
pub(super) struct CpuModule {
    pub(super) library: &'static KernelLibrary,
    pub(super) shared: Arc<Shared>,
}

/// A cpu accessor's address and size of its variable (`void (void **at, unsigned long long *n)`).
///
/// # Safety
/// `accessor` is an accessor the build generated.
pub(super) unsafe fn call_accessor(accessor: *const ()) -> (DevicePtr, usize) {
    type Accessor = unsafe extern "C" fn(*mut *mut c_void, *mut u64);
    let f: Accessor = std::mem::transmute(accessor);
    let (mut at, mut bytes) = (std::ptr::null_mut(), 0u64);
    f(&mut at, &mut bytes);
    (at as DevicePtr, bytes as usize)
}

impl ModuleBackend for CpuModule {
    fn global(
        &self,
        decl: Option<&'static crate::library::GlobalDecl>,
        _symbol: &str,
    ) -> Result<Option<(DevicePtr, usize)>> {
        // Safety: accessors come from the build.
        Ok(decl
            .and_then(|d| d.cpu)
            .map(|c| unsafe { call_accessor(c.accessor) }))
    }

    fn kernel_names(&self) -> Vec<String> {
        self.library
            .kernels
            .iter()
            .filter(|k| k.cpu.is_some())
            .map(|k| k.name.to_string())
            .collect()
    }

    fn function(&self, name: &str) -> Result<Option<Arc<dyn FunctionBackend>>> {
        let Some(kernel) = self.library.kernel(name) else {
            return Ok(None);
        };
        let Some(cpu) = kernel.cpu else {
            return Ok(None);
        };
        let name = kernel.name;
        // Safety: the build generated `entry` with the `rk_entry_fn` signature.
        let entry: ffi::RkEntry = unsafe { std::mem::transmute(cpu.entry) };
        let (layout, region_form) = describe(entry).map_err(|message| RuntimeError::Api {
            backend: Backend::Cpu,
            call: format!("describe `{name}`"),
            message,
        })?;
        // Source names of the parameters, for reports, where the build recorded them.
        let (param_names, param_types) = if kernel.params.len() == layout.len() {
            (
                kernel.params.iter().map(|p| p.name).collect(),
                kernel.params.iter().map(|p| p.type_name).collect(),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        // Safety: the build generated the race entry with the `rk_entry_fn` signature too.
        let race_entry = cpu
            .race
            .map(|race| unsafe { std::mem::transmute::<*const (), ffi::RkEntry>(race) });
        // The race variant's own region form: the build may have compiled it per thread where
        // the plain entry has one. Asked while no launch is race-checked: its instrumented code
        // would otherwise feed the armed detector from this thread.
        let race_region_form = match race_entry {
            Some(race) => {
                let _armed = super::detector::ARMED
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                describe(race)
                    .map_err(|message| RuntimeError::Api {
                        backend: Backend::Cpu,
                        call: format!("describe the race variant of `{name}`"),
                        message,
                    })?
                    .1
            }
            None => ffi::RK_ENTRY_THREADS,
        };
        // The library's variables, as the plain code and the race variant each have them.
        let globals = self
            .library
            .globals
            .iter()
            .filter_map(|g| Some((g.name, g.cpu?)))
            .filter_map(|(name, c)| Some((name, c.accessor, c.race?)))
            // Safety: accessors come from the build.
            .map(|(name, plain, race)| unsafe { (name, call_accessor(plain), call_accessor(race)) })
            .map(|(name, (plain, bytes), (race, _))| (plain, race, bytes, name))
            .collect();
        Ok(Some(Arc::new(CpuFunction {
            name: name.to_string(),
            entry,
            race_entry,
            race_region_form,
            globals,
            param_types,
            layout,
            region_form,
            param_names,
            shared: self.shared.clone(),
        })))
    }
}

/// Ask a generated entry for its exact parameter layout, and what its region form runs
/// (`rk_block_entry`: `RK_ENTRY_THREADS`, `RK_ENTRY_WAVES` or `RK_ENTRY_WHOLE_BLOCKS`).
pub(super) fn describe(
    entry: ffi::RkEntry,
) -> std::result::Result<(Vec<ParamLayout>, u32), String> {
    let mut info = ffi::RkParamInfo {
        abi_version: 0,
        count: 0,
        size: [0; ffi::RK_MAX_PARAMS],
        is_pointer: [0; ffi::RK_MAX_PARAMS],
        align: [0; ffi::RK_MAX_PARAMS],
        block_entry: ffi::RK_ENTRY_THREADS,
    };
    let call = ffi::RkCall {
        op: ffi::RK_CALL_DESCRIBE,
        begin: 0,
        end: 0,
        args: std::ptr::null(),
        info: &mut info,
    };
    // Safety: DESCRIBE only writes `info`.
    unsafe { entry(&call) };
    if info.abi_version != ffi::RK_ABI_VERSION {
        return Err(format!(
            "the kernel was compiled against cpu runtime ABI {} but this runtime is ABI {}; \
             rebuild the kernel crate with this version of rocm-kernels",
            info.abi_version,
            ffi::RK_ABI_VERSION
        ));
    }
    let count = (info.count as usize).min(ffi::RK_MAX_PARAMS);
    let layout = (0..count)
        .map(|i| ParamLayout {
            size: info.size[i],
            is_pointer: info.is_pointer[i] != 0,
            align: info.align[i],
        })
        .collect();
    Ok((layout, info.block_entry))
}
