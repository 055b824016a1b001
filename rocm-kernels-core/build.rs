//! Tells the build scripts of dependent crates where the kernel-language headers are
//! (`DEP_ROCM_KERNELS_CORE_INCLUDE`): the runtime compiles its C++ cpu runtime against them.

fn main() {
    let dir = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("include");
    println!("cargo:include={}", dir.display());
    println!("cargo:rerun-if-changed=build.rs");
    // A header change reaches every kernel crate: this crate is rebuilt, then the builder, then
    // the build scripts that compile kernels against the headers.
    println!("cargo:rerun-if-changed=include");
}
