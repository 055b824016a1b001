//! Loading a library's AMD code objects on a device (`hipModuleLoadData`) and launching its
//! kernels (`hipModuleLaunchKernel`). The build split every offload bundle into one AMDGPU ELF per
//! target and recorded each kernel's symbol in each: this picks, per source, the object whose
//! target the device runs (the most specific one) and looks kernels up by those symbols.

use std::ffi::{c_void, CString};
use std::sync::Arc;

use super::device::{amd_stream_of, AmdDevice, Handle};
use super::library::HipLibrary;
use crate::library::{Backend, CodeObject, KernelLibrary, TargetId};
use crate::runtime::backend::{
    DevicePtr, FunctionBackend, ModuleBackend, ParamLayout, StreamBackend,
};
use crate::runtime::{LaunchConfig, Result, RuntimeError};

/// Per source of the library, the index of the object a device with target `device` loads, or
/// (as the error) what the library has for the sources it cannot run and whether some target
/// has the device's processor with other feature settings.
pub(crate) fn objects_for(
    library: &'static KernelLibrary,
    device: &TargetId,
) -> std::result::Result<Vec<usize>, (String, bool)> {
    let amd: Vec<(usize, &'static CodeObject, TargetId)> = library
        .objects_of(Backend::Amd)
        .filter_map(|(i, o)| Some((i, o, o.amd_target()?)))
        .collect();
    let mut sources: Vec<&str> = amd.iter().map(|(_, o, _)| o.source).collect();
    sources.dedup();
    let mut chosen = Vec::new();
    let mut missing = Vec::new();
    let mut same_processor = false;
    for source in sources {
        let of_source = || amd.iter().filter(move |(_, o, _)| o.source == source);
        match TargetId::best_for(device, of_source().map(|(i, _, t)| (*i, t))) {
            Some(index) => chosen.push(index),
            None => {
                same_processor |= of_source().any(|(_, _, t)| t.processor == device.processor);
                let has: Vec<&str> = of_source().map(|(_, o, _)| o.target).collect();
                missing.push(format!("{source}: {}", has.join(", ")));
            }
        }
    }
    if missing.is_empty() {
        Ok(chosen)
    } else {
        Err((missing.join("; "), same_processor))
    }
}

/// One code object loaded with `hipModuleLoadData`; unloaded when the last kernel taken from it
/// and the module are gone.
#[derive(Debug)]
struct LoadedObject {
    hip: &'static HipLibrary,
    ordinal: i32,
    raw: Handle,
    /// Its index in the library's code objects (the kernels' symbols name it).
    index: usize,
    /// The image HIP was given, kept alive (and 8-byte aligned) for as long as the module.
    _image: Vec<u64>,
}

impl Drop for LoadedObject {
    fn drop(&mut self) {
        // Safety: loaded once, unloaded once; every function holds an Arc to this.
        if self.hip.set_device(self.ordinal).is_ok() {
            let _ = unsafe { self.hip.module_unload(self.raw.0) };
        }
    }
}

/// A kernel library loaded on one AMD device: one HIP module per embedded code object.
#[derive(Debug)]
pub(crate) struct AmdModule {
    library: &'static KernelLibrary,
    objects: Vec<Arc<LoadedObject>>,
}

impl AmdModule {
    pub(crate) fn load(device: &AmdDevice, library: &'static KernelLibrary) -> Result<AmdModule> {
        if library.objects_of(Backend::Amd).next().is_none() {
            return Err(RuntimeError::LibraryMissing {
                library: library.name.to_string(),
                backend: Backend::Amd,
                hint: format!(
                    "it was built without the amd backend; enable it in the build script's \
                     `rocm_kernels_build::Build` with the target `{}`",
                    device.target.processor
                ),
            });
        }
        // Choose every object before loading any, so a missing target is reported up front.
        let chosen =
            objects_for(library, &device.target).map_err(|(available, same_processor)| {
                RuntimeError::NoMatchingCodeObject {
                    library: library.name.to_string(),
                    // The plain processor (`gfx90a`) is the target to add, unless the library has it
                    // with feature settings this device does not run (`gfx90a:xnack+`).
                    arch: if same_processor {
                        device.target.to_string()
                    } else {
                        device.target.processor.clone()
                    },
                    available,
                }
            })?;
        let mut objects = Vec::new();
        for index in chosen {
            let object = &library.code_objects[index];
            let aligned = aligned_copy(object.bytes);
            // Safety: a complete code object, kept alive in `LoadedObject`.
            let raw = unsafe { device.hip.module_load_data(aligned.as_ptr().cast()) }.map_err(
                |error| match error {
                    RuntimeError::Api { message, .. } => RuntimeError::Api {
                        backend: Backend::Amd,
                        call: format!(
                            "hipModuleLoadData({} for {}, built for {})",
                            object.source, device.target, object.target
                        ),
                        message,
                    },
                    other => other,
                },
            )?;
            objects.push(Arc::new(LoadedObject {
                hip: device.hip,
                ordinal: device.ordinal,
                raw: Handle(raw),
                index,
                _image: aligned,
            }));
        }
        Ok(AmdModule { library, objects })
    }
}

/// `bytes` copied into 8-byte aligned storage (embedded bytes have alignment 1; HIP reads the
/// ELF's 8-byte fields in place).
fn aligned_copy(bytes: &[u8]) -> Vec<u64> {
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    // Safety: `words` has at least `bytes.len()` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), words.as_mut_ptr().cast(), bytes.len())
    };
    words
}

impl ModuleBackend for AmdModule {
    fn global(
        &self,
        _decl: Option<&'static crate::library::GlobalDecl>,
        symbol: &str,
    ) -> Result<Option<(DevicePtr, usize)>> {
        let Ok(c_symbol) = CString::new(symbol) else {
            return Ok(None);
        };
        for object in &self.objects {
            object.hip.set_device(object.ordinal)?;
            if let Some((ptr, bytes)) = object.hip.module_get_global(object.raw.0, &c_symbol)? {
                return Ok(Some((ptr as DevicePtr, bytes)));
            }
        }
        Ok(None)
    }

    fn kernel_names(&self) -> Vec<String> {
        self.library
            .kernels
            .iter()
            .filter(|k| self.objects.iter().any(|o| k.symbol_in(o.index).is_some()))
            .map(|k| k.name.to_string())
            .collect()
    }

    fn function(&self, name: &str) -> Result<Option<Arc<dyn FunctionBackend>>> {
        let Some(kernel) = self.library.kernel(name) else {
            return Ok(None);
        };
        for object in &self.objects {
            let Some(symbol) = kernel.symbol_in(object.index) else {
                continue;
            };
            let c_symbol = CString::new(symbol).map_err(|_| RuntimeError::Api {
                backend: Backend::Amd,
                call: "hipModuleGetFunction".into(),
                message: format!("the symbol of `{}` contains a NUL byte", kernel.name),
            })?;
            object.hip.set_device(object.ordinal)?;
            if let Some(raw) = object.hip.module_get_function(object.raw.0, &c_symbol)? {
                return Ok(Some(Arc::new(AmdFunction {
                    name: kernel.name.to_string(),
                    raw: Handle(raw),
                    object: object.clone(),
                })));
            }
        }
        Ok(None)
    }
}

/// One kernel of a loaded code object.
#[derive(Debug)]
struct AmdFunction {
    name: String,
    raw: Handle,
    /// Keeps the module loaded while the kernel can be launched.
    object: Arc<LoadedObject>,
}

impl FunctionBackend for AmdFunction {
    /// Unknown here: the launch is checked against the build's declarations instead.
    fn param_layout(&self) -> Option<Vec<ParamLayout>> {
        None
    }

    unsafe fn launch(
        &self,
        config: &LaunchConfig,
        args: &[*mut c_void],
        stream: &dyn StreamBackend,
    ) -> Result<()> {
        let hip = self.object.hip;
        let stream = amd_stream_of(stream, hip, self.object.ordinal)?;
        hip.set_device(self.object.ordinal)?;
        hip.module_launch_kernel(
            &self.name,
            self.raw.0,
            [config.grid.x, config.grid.y, config.grid.z],
            [config.block.x, config.block.y, config.block.z],
            config.shared_bytes,
            stream.raw.0,
            args,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::library::{KernelDecl, ObjectFormat};

    fn object(target: &'static str, source: &'static str) -> CodeObject {
        CodeObject {
            backend: Backend::Amd,
            format: ObjectFormat::AmdgpuElf,
            target,
            source,
            bytes: b"",
        }
    }

    #[test]
    fn each_source_loads_its_most_specific_compatible_object() {
        static OBJECTS: [CodeObject; 5] = [
            CodeObject {
                backend: Backend::Amd,
                format: ObjectFormat::AmdgpuElf,
                target: "gfx1030",
                source: "a.hip",
                bytes: b"",
            },
            CodeObject {
                backend: Backend::Amd,
                format: ObjectFormat::AmdgpuElf,
                target: "gfx90a",
                source: "a.hip",
                bytes: b"",
            },
            CodeObject {
                backend: Backend::Amd,
                format: ObjectFormat::AmdgpuElf,
                target: "gfx90a:xnack-",
                source: "a.hip",
                bytes: b"",
            },
            CodeObject {
                backend: Backend::Nvidia,
                format: ObjectFormat::Cubin,
                target: "sm_90",
                source: "a.hip",
                bytes: b"",
            },
            CodeObject {
                backend: Backend::Amd,
                format: ObjectFormat::AmdgpuElf,
                target: "gfx90a:xnack+",
                source: "b.hip",
                bytes: b"",
            },
        ];
        static LIB: KernelLibrary = KernelLibrary {
            name: "t",
            code_objects: &OBJECTS,
            kernels: &[] as &[KernelDecl],
            globals: &[],
        };
        let xnack_off = TargetId::parse("gfx90a:sramecc+:xnack-").unwrap();
        // b.hip has only an xnack+ build: the device's full target id is what to add.
        let (available, same_processor) = objects_for(&LIB, &xnack_off).unwrap_err();
        assert_eq!(available, "b.hip: gfx90a:xnack+");
        assert!(same_processor);
        let xnack_on = TargetId::parse("gfx90a:xnack+").unwrap();
        assert_eq!(objects_for(&LIB, &xnack_on), Ok(vec![1, 4]));
        let other = TargetId::parse("gfx942").unwrap();
        let (available, same_processor) = objects_for(&LIB, &other).unwrap_err();
        assert!(available.starts_with("a.hip: gfx1030, gfx90a, gfx90a:xnack-"));
        assert!(!same_processor);
        let _ = object("gfx90a", "c.hip");
    }
}
