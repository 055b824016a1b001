//! Loading shared libraries the way the runtime will (dlopen by name, then by known paths), to
//! tell the user whether a backend's library is loadable here and from where.

use std::path::Path;

use libloading::Library;

/// A library that loaded, with the file that satisfied the load.
pub struct Loaded {
    pub library: Library,
    /// The name or path that was passed to dlopen.
    pub name: String,
}

/// Try each candidate (a soname such as `libcuda.so.1`, or a full path) in order; the first
/// that loads and exports `symbol` wins. The error lists what was tried and why it failed.
pub fn load_first(candidates: &[String], symbol: &str) -> Result<Loaded, String> {
    let mut failures = Vec::new();
    for candidate in candidates {
        if candidate.contains('/') && !Path::new(candidate).exists() {
            continue;
        }
        // SAFETY: loading runs the library's initialisers. These are the vendor runtime
        // libraries cargo-rocm loads anyway to run kernels; loading them has no other effect.
        match unsafe { Library::new(candidate) } {
            Ok(library) => {
                // SAFETY: only the symbol's presence is checked; it is not called.
                let has = unsafe { library.get::<*const ()>(symbol.as_bytes()) }.is_ok();
                if has {
                    return Ok(Loaded {
                        library,
                        name: candidate.clone(),
                    });
                }
                failures.push(format!("{candidate}: no symbol {symbol}"));
            }
            Err(e) => {
                // libloading puts dlerror()'s text in the error's source.
                let text = match std::error::Error::source(&e) {
                    Some(source) => format!("{e}: {source}"),
                    None => e.to_string(),
                };
                failures.push(short_dl_error(candidate, &text));
            }
        }
    }
    if failures.is_empty() {
        failures.push(format!("none of {} exists", candidates.join(", ")));
    }
    Err(failures.join("; "))
}

/// dlopen's "cannot open shared object file" for a name is the common, expected case: say
/// "not found" instead of repeating the name three times.
fn short_dl_error(candidate: &str, error: &str) -> String {
    if error.contains("No such file or directory") || error.contains("cannot open shared object") {
        format!("{candidate}: not found")
    } else {
        format!("{candidate}: {error}")
    }
}
