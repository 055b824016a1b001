//! Modules: a library's code object for the device (cubin, PTX, or NVRTC's output) loaded into
//! the current context generation, reloaded after a reset.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Arc, Mutex};

use cudarc::driver::result::{self as cu};
use cudarc::driver::sys;

use super::super::{DevicePtr, FunctionBackend, ModuleBackend};
use super::device::{Context, Core};
use super::launch::NvFunction;
use super::{error_text, image, nvrtc};
use crate::library::{Backend, CodeObject, KernelLibrary, ObjectFormat};
use crate::runtime::{Result, RuntimeError};

/// One loaded image (a source file's cubin, PTX or NVRTC output) and its kernels.
#[derive(Debug)]
pub(super) struct Loaded {
    pub(super) module: sys::CUmodule,
    /// user-facing name → (symbol, function handle)
    pub(super) functions: HashMap<String, (String, sys::CUfunction)>,
}

/// A loaded module; functions share its inner state, so reloading happens once for all.
#[derive(Debug)]
pub(super) struct NvModule {
    pub(super) inner: Arc<ModuleInner>,
}

#[derive(Debug)]
pub(super) struct ModuleInner {
    pub(super) device: Arc<Core>,
    pub(super) library: &'static KernelLibrary,
    /// The images chosen for this device, one per source file.
    pub(super) images: Vec<Image>,
    pub(super) loaded: Mutex<Option<(u64, Vec<Loaded>)>>,
}
// Safety: module and function handles are context-bound driver handles usable from any thread.
unsafe impl Send for ModuleInner {}
unsafe impl Sync for ModuleInner {}

/// The code object of one source chosen for the device.
#[derive(Debug, Clone)]
pub(super) struct Image {
    /// Its index in the library's code objects (the kernels' symbols name it).
    pub(super) index: usize,
    pub(super) object: &'static CodeObject,
}

impl ModuleInner {
    pub(super) fn new(device: Arc<Core>, library: &'static KernelLibrary) -> Result<Self> {
        let ours: Vec<(usize, &'static CodeObject)> = library.objects_of(Backend::Nvidia).collect();
        if ours.is_empty() {
            return Err(RuntimeError::LibraryMissing {
                library: library.name.to_string(),
                backend: Backend::Nvidia,
                hint: "build it with the nvidia backend enabled (nvcc on PATH or CUDA_PATH, or \
                       `pip install nvidia-cuda-nvcc`; targets from ROCM_NVIDIA_ARCH or \
                       [package.metadata.rocm] nvidia-targets)"
                    .to_string(),
            });
        }
        let cc = device.compute_capability;
        let mut sources: Vec<&str> = ours.iter().map(|(_, o)| o.source).collect();
        sources.dedup();
        let mut images = Vec::new();
        for source in sources {
            let best = ours
                .iter()
                .filter(|(_, o)| o.source == source)
                .filter_map(|&(index, o)| image::fitness(o, cc).map(|f| (f, index, o)))
                .max_by_key(|(f, _, _)| *f);
            match best {
                Some((_, index, object)) => images.push(Image { index, object }),
                None => {
                    let available: Vec<String> = ours
                        .iter()
                        .filter(|(_, o)| o.source == source)
                        .map(|(_, o)| format!("{} {}", o.format, o.target))
                        .collect();
                    return Err(RuntimeError::NoMatchingCodeObject {
                        library: library.name.to_string(),
                        arch: device.info.arch.clone(),
                        available: available.join(", "),
                    });
                }
            }
        }
        Ok(ModuleInner {
            device,
            library,
            images,
            loaded: Mutex::new(None),
        })
    }

    /// Load (or, after a context reset, reload) every image; returns the current generation.
    pub(super) fn ensure_loaded(&self) -> Result<u64> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let mut state = self.device.enter()?;
        if let Some((generation, _)) = loaded.as_ref() {
            if *generation == state.generation {
                return Ok(*generation);
            }
        }
        let mut modules = Vec::new();
        for image in &self.images {
            modules.push(self.load_image(&mut state, image)?);
        }
        let generation = state.generation;
        *loaded = Some((generation, modules));
        Ok(generation)
    }

    pub(super) fn load_image(&self, state: &mut Context, image: &Image) -> Result<Loaded> {
        let object = image.object;
        // The kernels of this object and their symbols: from the build's table, or, for CUDA
        // source, from NVRTC, which lowers each kernel's name as it compiles.
        let kernels: Vec<&'static str> = self
            .library
            .kernels
            .iter()
            .filter(|k| k.source == object.source)
            .map(|k| k.name)
            .collect();
        let (bytes, ptx, symbols): (Vec<u8>, bool, Vec<(&'static str, String)>) = match object
            .format
        {
            ObjectFormat::CudaSource => {
                let arch = &self.device.info.arch;
                let (ptx, lowered) = nvrtc::compile(object.source, object.bytes, arch, &kernels)?;
                (ptx.into_bytes(), true, lowered)
            }
            format => {
                let symbols = self
                    .library
                    .kernels
                    .iter()
                    .filter_map(|k| Some((k.name, k.symbol_in(image.index)?.to_owned())))
                    .collect();
                (object.bytes.to_vec(), format == ObjectFormat::Ptx, symbols)
            }
        };
        // PTX must be NUL-terminated text for cuModuleLoadData.
        let data = if ptx {
            CString::new(bytes)
                .map_err(|_| RuntimeError::Api {
                    backend: Backend::Nvidia,
                    call: "cuModuleLoadData".into(),
                    message: "PTX contains a NUL byte".into(),
                })?
                .into_bytes_with_nul()
        } else {
            bytes
        };
        // Safety: the context is current and `data` is a complete cubin or PTX image.
        let module = match unsafe { cu::module::load_data(data.as_ptr().cast()) } {
            Ok(m) => m,
            Err(e) => {
                let mut err = self.device.fail(state, "cuModuleLoadData", e);
                if e.0 == sys::cudaError_enum::CUDA_ERROR_UNSUPPORTED_PTX_VERSION {
                    err = RuntimeError::Api {
                        backend: Backend::Nvidia,
                        call: "cuModuleLoadData".into(),
                        message: format!(
                            "{} for {}: the PTX was made by a CUDA newer than this driver \
                             supports; build with an nvcc that matches the driver (so a \
                             {} cubin is embedded), or upgrade the driver",
                            error_text(&e),
                            object.source,
                            self.device.info.arch
                        ),
                    };
                }
                return Err(err);
            }
        };
        let mut functions = HashMap::new();
        for (name, symbol) in symbols {
            let c = CString::new(symbol.clone()).unwrap_or_default();
            // Safety: a module just loaded in the current context.
            let f = unsafe { cu::module::get_function(module, c) }
                .map_err(|e| self.device.fail(state, "cuModuleGetFunction", e))?;
            functions.insert(name.to_string(), (symbol, f));
        }
        Ok(Loaded { module, functions })
    }
}

impl ModuleBackend for NvModule {
    fn global(
        &self,
        _decl: Option<&'static crate::library::GlobalDecl>,
        symbol: &str,
    ) -> Result<Option<(DevicePtr, usize)>> {
        self.inner.ensure_loaded()?;
        let loaded = self.inner.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let Ok(c) = CString::new(symbol) else {
            return Ok(None);
        };
        let _state = self.inner.device.enter()?;
        for m in loaded.iter().flat_map(|(_, l)| l.iter()) {
            // Safety: a module of the current context, loaded above.
            match unsafe { cu::module::get_global(m.module, c.clone()) } {
                Ok((ptr, bytes)) => return Ok(Some((ptr as DevicePtr, bytes))),
                Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_NOT_FOUND => continue,
                Err(e) => {
                    return Err(RuntimeError::Api {
                        backend: Backend::Nvidia,
                        call: format!("cuModuleGetGlobal(`{symbol}`)"),
                        message: error_text(&e),
                    })
                }
            }
        }
        Ok(None)
    }

    fn kernel_names(&self) -> Vec<String> {
        let loaded = self.inner.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let mut names: Vec<String> = loaded
            .iter()
            .flat_map(|(_, l)| l.iter().flat_map(|m| m.functions.keys().cloned()))
            .collect();
        names.sort();
        names
    }

    fn function(&self, name: &str) -> Result<Option<Arc<dyn FunctionBackend>>> {
        // The table's spelling of the name (`k<16>` for `k<16u>`).
        let Some(kernel) = self.inner.library.kernel(name) else {
            return Ok(None);
        };
        let name = kernel.name;
        self.inner.ensure_loaded()?;
        let loaded = self.inner.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let found = loaded
            .iter()
            .flat_map(|(_, l)| l.iter())
            .any(|m| m.functions.contains_key(name));
        Ok(found.then(|| {
            Arc::new(NvFunction {
                module: self.inner.clone(),
                name: name.into(),
                cached: Mutex::new(None),
            }) as Arc<dyn FunctionBackend>
        }))
    }
}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        let loaded = self
            .loaded
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some((generation, modules)) = loaded {
            if let Ok(state) = self.device.enter() {
                if state.generation == generation {
                    for m in modules {
                        // Safety: a module of the live context, unloaded once.
                        unsafe {
                            let _ = cu::module::unload(m.module);
                        }
                    }
                }
            }
        }
    }
}
