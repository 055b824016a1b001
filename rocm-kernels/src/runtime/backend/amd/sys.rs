//! Raw declarations of the part of the HIP runtime API (`libamdhip64`) the amd backend uses:
//! handle and error types, the numeric values of the enums it passes, and the layout facts it
//! relies on. Function types live with the loader
//! ([`HipLibrary`](super::library::HipLibrary)), which resolves them by name at run time.
//!
//! Everything here is ABI-stable across ROCm 5.x and 6.x: the values were checked against the
//! ROCm 5.2 headers in `/usr/include/hip` (a test compiles a C program against them when present)
//! and against ROCm 6's `hip_runtime_api.h`/`hip_deprecated.h`.

#![allow(non_camel_case_types)]

use std::ffi::{c_int, c_void};

/// `hipError_t`: 0 is success, anything else an error code.
pub type hipError_t = c_int;
/// `hipSuccess`.
pub const HIP_SUCCESS: hipError_t = 0;
/// `hipErrorNotFound`: `hipModuleGetFunction` on a name the module lacks.
pub const HIP_ERROR_NOT_FOUND: hipError_t = 500;

/// Opaque handles (`ihipStream_t*`, ...); HIP's null stream is a null `hipStream_t`.
pub type hipStream_t = *mut c_void;
/// `hipEvent_t`.
pub type hipEvent_t = *mut c_void;
/// `hipModule_t`: a loaded code object.
pub type hipModule_t = *mut c_void;
/// `hipFunction_t`: a kernel of a loaded module.
pub type hipFunction_t = *mut c_void;
/// A device address as the API takes it.
pub type hipDeviceptr_t = *mut c_void;

/// `hipDeviceAttribute_t` values (the CUDA-compatible range, unchanged from ROCm 5.0 to 6.x).
pub type hipDeviceAttribute_t = c_int;
/// `hipDeviceAttributeMultiprocessorCount`: compute units.
pub const ATTR_MULTIPROCESSOR_COUNT: hipDeviceAttribute_t = 63;
/// `hipDeviceAttributePciBusId`.
pub const ATTR_PCI_BUS_ID: hipDeviceAttribute_t = 67;
/// `hipDeviceAttributePciDeviceId`.
pub const ATTR_PCI_DEVICE_ID: hipDeviceAttribute_t = 68;
/// `hipDeviceAttributePciDomainID`.
pub const ATTR_PCI_DOMAIN_ID: hipDeviceAttribute_t = 69;
/// `hipDeviceAttributeWarpSize`: threads per wavefront (32 or 64).
pub const ATTR_WARP_SIZE: hipDeviceAttribute_t = 87;

/// The legacy `hipDeviceProp_t` layout (`hipDeviceProp_tR0000`), which the plain
/// `hipGetDeviceProperties` symbol fills on ROCm 4.2 through 6.x (ROCm 6 headers map the name
/// to `hipGetDevicePropertiesR0600` with a different struct, but the exported plain symbol
/// keeps the old layout for binaries built against ROCm 5). Only two fields are read, at fixed
/// offsets, from a zeroed buffer far larger than the struct, so a layout we do not expect can
/// at worst produce text that fails validation, never a write past the buffer.
pub mod props_r0000 {
    /// `char name[256]` at the start.
    pub const NAME_OFFSET: usize = 0;
    /// `int warpSize`.
    pub const WARP_SIZE_OFFSET: usize = 276;
    /// `char gcnArchName[256]`, e.g. `gfx90a:sramecc+:xnack-`.
    pub const GCN_ARCH_NAME_OFFSET: usize = 396;
    /// Length of each `char[256]` string field, its terminating NUL included.
    pub const STRING_LEN: usize = 256;
    /// `sizeof(hipDeviceProp_tR0000)` is 792 on x86_64; the buffer handed to HIP is 8 KiB.
    pub const STRUCT_SIZE: usize = 792;
    /// The zeroed buffer handed to `hipGetDeviceProperties`, in bytes.
    pub const BUFFER_SIZE: usize = 8192;
    // Room for the struct to have grown several times over.
    const _: () = assert!(BUFFER_SIZE >= 4 * STRUCT_SIZE);
}
