//! The MessagePack metadata note, then the parameter table built from it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocm_code_object;

fuzz_target!(|data: &[u8]| {
    if let Ok(metadata) = rocm_code_object::parse_metadata(data) {
        for kernel in &metadata.kernels {
            let _ = kernel.params();
        }
    }
});
