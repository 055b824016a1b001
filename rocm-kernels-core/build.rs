//! Tells the build scripts of dependent crates where the kernel-language headers are
//! (`DEP_ROCM_KERNELS_CORE_INCLUDE`): the runtime compiles its C++ cpu runtime against them.
//!
//! The headers are copied into this script's `OUT_DIR` and that copy is what dependents see.
//! Cargo does not rerun a build script when the package's folder moves (a second worktree
//! sharing a target directory, a renamed checkout: artifacts are reused), so an absolute path
//! into the source tree printed here would go stale, or point at another checkout's headers;
//! a path inside the target directory stays right as long as the artifacts do.

use std::path::Path;

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn main() {
    let source = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("include");
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("include");
    // A fresh copy: headers removed from the source tree must not linger.
    let _ = std::fs::remove_dir_all(&out);
    if let Err(e) = copy_dir(&source, &out) {
        panic!(
            "cannot copy the kernel-language headers from {} to {}: {e}",
            source.display(),
            out.display()
        );
    }
    println!("cargo:include={}", out.display());
    println!("cargo:rerun-if-changed=build.rs");
    // A header change reaches every kernel crate: this crate is rebuilt, then the builder, then
    // the build scripts that compile kernels against the headers.
    println!("cargo:rerun-if-changed=include");
}
