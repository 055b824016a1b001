//! Keeping a kernel library's names to itself. On a GPU each kernel library is a code object of its
//! own, so two libraries of one crate (or of two crates in one binary) may both define
//! `matrix_transpose_kernel(float*, const float*, unsigned)`, a `__device__` helper or a
//! `__constant__` table of the same name. On the cpu backend the libraries are static archives
//! linked into one executable, where the same names would collide (`duplicate symbol`) or, for
//! inline functions and template instantiations, be merged silently, one library's copy running
//! for both. So every name a library's objects define is renamed with the library's own suffix
//! (`_Z23matrix_transpose_kernelPfPKfj.rk_kernels_1a2b3c4d`: a `.suffix` keeps the name
//! demangling, as a compiler's clone suffixes do), except the generated entries and accessors,
//! which already carry the library's hash and are what the runtime looks up. One rename map over
//! all of the library's objects keeps their references to each other intact, and COMDAT group
//! signatures follow their symbols, so inline functions are still merged within the library and
//! never across libraries. Undefined names (the runtime's `rk_*`, libc) are left alone.
//!
//! The renaming is `objcopy --redefine-syms` (binutils, which every Linux C++ toolchain links
//! with, or LLVM's), as for the race variant. Without one the library keeps plain names and works
//! as long as no other library defines the same ones; the build says so in a warning only when
//! there is a name to protect.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSymbol};

use super::{io, race, CpuBuildError};

/// Rename in `objects` every defined global or weak name that does not start with one of `keep`
/// to `<name>.<suffix>`; the renamed copies are written to `dir`. Returns the objects to archive
/// and a warning when no objcopy was found.
pub fn privatize(
    objects: &[PathBuf],
    keep: &[String],
    suffix: &str,
    dir: &Path,
) -> Result<(Vec<PathBuf>, Option<String>), CpuBuildError> {
    let defined = defined_names(objects)?;
    let renamed: Vec<&String> = defined
        .iter()
        .filter(|name| !keep.iter().any(|k| name.starts_with(k.as_str())))
        .collect();
    if renamed.is_empty() {
        return Ok((objects.to_vec(), None));
    }
    let Some(objcopy) = race::find_objcopy() else {
        return Ok((
            objects.to_vec(),
            Some(format!(
                "rocm-kernels: no objcopy found (install binutils, or LLVM's llvm-objcopy, or set \
                 OBJCOPY), so the cpu kernel library keeps plain symbol names: another kernel \
                 library in the same binary defining one of the same kernels, device functions \
                 or globals (e.g. `{}`) would fail to link",
                renamed[0]
            )),
        ));
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let map_file = dir.join("private.map");
    let map: String = renamed
        .iter()
        .map(|name| format!("{name} {name}.{suffix}\n"))
        .collect();
    std::fs::write(&map_file, map).map_err(io(&map_file))?;
    let mut out = Vec::with_capacity(objects.len());
    for (k, obj) in objects.iter().enumerate() {
        let target = dir.join(format!("private_{k}.o"));
        let output = Command::new(&objcopy)
            .arg(format!("--redefine-syms={}", map_file.display()))
            .arg(obj)
            .arg(&target)
            .output()
            .map_err(|e| CpuBuildError::Compile {
                message: format!("{}: {e}", objcopy.display()),
            })?;
        if !output.status.success() {
            return Err(CpuBuildError::Compile {
                message: format!(
                    "{} --redefine-syms on {} failed: {}",
                    objcopy.display(),
                    obj.display(),
                    String::from_utf8_lossy(&output.stderr).trim()
                ),
            });
        }
        out.push(target);
    }
    Ok((out, None))
}

/// Every global or weak name the objects define.
fn defined_names(objects: &[PathBuf]) -> Result<BTreeSet<String>, CpuBuildError> {
    let mut defined = BTreeSet::new();
    for path in objects {
        let data = std::fs::read(path).map_err(io(path))?;
        let file = object::File::parse(&*data).map_err(|e| CpuBuildError::Compile {
            message: format!("{}: {e}", path.display()),
        })?;
        for sym in file.symbols() {
            if sym.is_undefined() || !(sym.is_global() || sym.is_weak()) {
                continue;
            }
            if let Ok(name) = sym.name() {
                if !name.is_empty() {
                    defined.insert(name.to_string());
                }
            }
        }
    }
    Ok(defined)
}
