//! Loading a library's AMD code objects on a device (`hipModuleLoadData`), finding kernels by the
//! names people use (`saxpy`, `scale<float>`), and launching them (`hipModuleLaunchKernel`).

use std::collections::BTreeMap;
use std::ffi::{c_void, CString};
use std::sync::Arc;

use super::bundle::{self, COMPRESSED_BUNDLE_MAGIC};
use super::device::{amd_stream_of, AmdDevice, Handle};
use super::library::HipLibrary;
use super::TargetId;
use crate::library::{Backend, EmbeddedObject, KernelLibrary};
use crate::runtime::backend::{FunctionBackend, ModuleBackend, ParamLayout, StreamBackend};
use crate::runtime::{LaunchConfig, Result, RuntimeError};

const ELF_MAGIC: &[u8] = b"\x7fELF";

/// The image of one embedded object to hand to HIP for a device.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Image<'a> {
    /// An AMDGPU ELF code object (a bundle's matching entry, or a bare ELF).
    Elf(&'a [u8]),
    /// A compressed bundle: only HIP (≥ 6.2) can open it and pick the entry.
    Compressed(&'a [u8]),
}

/// Why an object has nothing a device can load.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NoImage {
    /// What the object has, for people: `gfx942, gfx90a:xnack+`.
    pub has: String,
    /// Some target has the device's processor but other feature settings (`xnack+` for an
    /// `xnack-` device): then the full target id is what the build must add.
    pub same_processor: bool,
}

/// What a device can load from `object`, or what the object has instead.
pub(crate) fn image_for<'a>(
    object: &'a EmbeddedObject,
    device: &TargetId,
) -> std::result::Result<Image<'a>, NoImage> {
    let bytes = object.bytes;
    let no_image = |targets: &[TargetId], has: String| NoImage {
        has,
        same_processor: targets.iter().any(|t| t.processor == device.processor),
    };
    if bytes.starts_with(bundle::BUNDLE_MAGIC) {
        let entries = bundle::read_bundle(bytes)
            .map_err(|e| no_image(&[], format!("{} (unreadable bundle: {e})", object.targets)))?;
        return bundle::select_entry(&entries, device)
            .map(|entry| Image::Elf(entry.bytes))
            .map_err(|has| {
                let targets: Vec<TargetId> = entries.iter().filter_map(|e| e.target()).collect();
                no_image(&targets, has)
            });
    }
    if bytes.starts_with(COMPRESSED_BUNDLE_MAGIC) {
        return Ok(Image::Compressed(bytes));
    }
    if bytes.starts_with(ELF_MAGIC) {
        // A bare code object is for the targets the build recorded.
        let targets: Vec<TargetId> = object
            .targets
            .split(',')
            .filter_map(TargetId::parse)
            .collect();
        if targets.is_empty() || targets.iter().any(|t| t.runs_on(device)) {
            return Ok(Image::Elf(bytes));
        }
        return Err(no_image(&targets, object.targets.to_string()));
    }
    Err(no_image(
        &[],
        format!(
            "{} (format `{}` is neither an offload bundle nor an ELF code object)",
            object.targets, object.format
        ),
    ))
}

/// Kernel symbols of an AMDGPU code object by the name people use: the demangled name without
/// parameters (`saxpy`, `scale<float>`) → the symbol (`_Z5scaleIfEvPT_S0_`). A kernel is a
/// symbol with a `<name>.kd` kernel descriptor beside it.
pub(crate) fn kernel_symbols(
    elf: &[u8],
) -> std::result::Result<BTreeMap<String, Vec<String>>, String> {
    use object::{Object, ObjectSymbol};
    let file = object::File::parse(elf).map_err(|e| format!("not a readable ELF: {e}"))?;
    let mut kernels: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for symbol in file.symbols() {
        let Some(kernel) = symbol.name().ok().and_then(|n| n.strip_suffix(".kd")) else {
            continue;
        };
        kernels
            .entry(short_name(kernel))
            .or_default()
            .push(kernel.to_string());
    }
    Ok(kernels)
}

/// `scale<float>` for `_Z5scaleIfEvPT_S0_`; unmangled (`extern "C"`) names stay as they are.
/// Shared with the nvidia backend so every backend names kernels alike.
pub(crate) fn short_name(symbol: &str) -> String {
    rocm_code_object::symbols::kernel_name(symbol)
}

/// One code object loaded with `hipModuleLoadData`; unloaded when the last kernel taken from it
/// and the module are gone.
#[derive(Debug)]
struct LoadedObject {
    hip: &'static HipLibrary,
    ordinal: i32,
    raw: Handle,
    source: &'static str,
    /// Kernels by short name, when the code object could be read (not for compressed bundles).
    kernels: Option<BTreeMap<String, Vec<String>>>,
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
        let amd: Vec<&EmbeddedObject> = library
            .code_objects
            .iter()
            .filter(|o| o.backend == Backend::Amd)
            .collect();
        if amd.is_empty() {
            return Err(RuntimeError::LibraryMissing {
                library: library.name.to_string(),
                backend: Backend::Amd,
                hint: format!(
                    "it was built without the amd backend; enable it in the build script's \
                     `rocm_kernels::Build` with the target `{}`",
                    device.target.processor
                ),
            });
        }
        // Choose every image before loading any, so a missing target is reported up front.
        let mut images = Vec::new();
        let mut missing = Vec::new();
        let mut same_processor = false;
        for object in &amd {
            match image_for(object, &device.target) {
                Ok(image) => images.push((*object, image)),
                Err(no) => {
                    same_processor |= no.same_processor;
                    missing.push(format!("{}: {}", object.source, no.has));
                }
            }
        }
        if !missing.is_empty() {
            return Err(RuntimeError::NoMatchingCodeObject {
                library: library.name.to_string(),
                // The plain processor (`gfx90a`) is the target to add, unless the library has it
                // with feature settings this device does not run (`gfx90a:xnack+`).
                arch: if same_processor {
                    device.target.to_string()
                } else {
                    device.target.processor.clone()
                },
                available: missing.join("; "),
            });
        }
        let mut objects = Vec::new();
        for (object, image) in images {
            let compressed = matches!(image, Image::Compressed(_));
            let (bytes, kernels) = match image {
                Image::Elf(elf) => (elf, kernel_symbols(elf).ok()),
                Image::Compressed(bytes) => (bytes, None),
            };
            let aligned = aligned_copy(bytes);
            // Safety: a complete code object (or bundle), kept alive in `LoadedObject`.
            let raw = unsafe { device.hip.module_load_data(aligned.as_ptr().cast()) }.map_err(
                |error| match error {
                    RuntimeError::Api { message, .. } => RuntimeError::Api {
                        backend: Backend::Amd,
                        call: format!("hipModuleLoadData({} for {})", object.source, device.target),
                        message: if compressed {
                            format!(
                                "{message}; this is a compressed offload bundle, which needs \
                                 ROCm 6.2 or newer (or build without --offload-compress)"
                            )
                        } else {
                            message
                        },
                    },
                    other => other,
                },
            )?;
            objects.push(Arc::new(LoadedObject {
                hip: device.hip,
                ordinal: device.ordinal,
                raw: Handle(raw),
                source: object.source,
                kernels,
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
    fn kernel_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for object in &self.objects {
            match &object.kernels {
                Some(kernels) => names.extend(kernels.keys().cloned()),
                // Unreadable code object: trust the build's list for that source.
                None => names.extend(
                    self.library
                        .kernels
                        .iter()
                        .filter(|k| k.source == object.source)
                        .map(|k| k.name.to_string()),
                ),
            }
        }
        names.sort();
        names.dedup();
        names
    }

    fn function(&self, name: &str) -> Result<Option<Arc<dyn FunctionBackend>>> {
        // (object, symbol) pairs that the name could mean.
        let mut candidates: Vec<(&Arc<LoadedObject>, String)> = Vec::new();
        for object in &self.objects {
            match &object.kernels {
                Some(kernels) => {
                    if let Some(symbols) = kernels.get(name) {
                        candidates.extend(symbols.iter().map(|s| (object, s.clone())));
                    } else if kernels.values().flatten().any(|s| s == name) {
                        // A mangled name given directly.
                        candidates.push((object, name.to_string()));
                    }
                }
                None => candidates.push((object, name.to_string())),
            }
        }
        let symbols: Vec<&str> = {
            let mut s: Vec<&str> = candidates.iter().map(|(_, s)| s.as_str()).collect();
            s.sort();
            s.dedup();
            s
        };
        let readable = self.objects.iter().all(|o| o.kernels.is_some());
        if readable && symbols.len() > 1 {
            return Err(RuntimeError::Api {
                backend: Backend::Amd,
                call: format!("hipModuleGetFunction(`{name}`)"),
                message: format!(
                    "`{name}` names {} kernels ({}); pass the symbol of the one you mean",
                    symbols.len(),
                    symbols.join(", ")
                ),
            });
        }
        for (object, symbol) in candidates {
            let c_symbol = CString::new(symbol.as_str()).map_err(|_| RuntimeError::Api {
                backend: Backend::Amd,
                call: "hipModuleGetFunction".into(),
                message: format!("kernel name `{name}` contains a NUL byte"),
            })?;
            object.hip.set_device(object.ordinal)?;
            if let Some(raw) = object.hip.module_get_function(object.raw.0, &c_symbol)? {
                return Ok(Some(Arc::new(AmdFunction {
                    name: name.to_string(),
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
            config.shared_mem_bytes,
            stream.raw.0,
            args,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_are_named_as_in_the_source() {
        assert_eq!(short_name("saxpy"), "saxpy");
        assert_eq!(short_name("_Z5plainPi"), "plain");
        assert_eq!(short_name("_Z5scaleIfEvPT_S0_"), "scale<float>");
        assert_eq!(
            short_name("_ZN2ns6reduceILi256EEEvPKfPfi"),
            "ns::reduce<256>"
        );
    }

    #[test]
    fn unreadable_objects_are_refused_with_what_they_are() {
        let object = EmbeddedObject {
            backend: Backend::Amd,
            targets: "gfx90a",
            source: "k.hip",
            format: "mystery",
            bytes: b"garbage",
        };
        let device = TargetId::parse("gfx90a").unwrap();
        let error = image_for(&object, &device).unwrap_err();
        assert!(error.has.contains("neither an offload bundle"), "{error:?}");
        let compressed = EmbeddedObject {
            bytes: b"CCOB\x01\x00",
            ..object
        };
        assert_eq!(
            image_for(&compressed, &device),
            Ok(Image::Compressed(b"CCOB\x01\x00"))
        );
        assert!(kernel_symbols(b"\x7fELF broken").is_err());
    }
}
