//! Offload bundles, plain and compressed, and whatever `parse` makes of arbitrary bytes;
//! every entry found is then read down to its kernels.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocm_code_object;

fuzz_target!(|data: &[u8]| {
    let _ = rocm_code_object::parse_plain(data);
    let _ = rocm_code_object::decompress(data);
    if let Ok(objects) = rocm_code_object::parse(data) {
        for entry in &objects.entries {
            let _ = entry.kernels();
            let _ = entry.elf();
        }
    }
});
