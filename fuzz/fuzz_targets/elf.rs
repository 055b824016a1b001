//! AMDGPU and host ELF: header, metadata note, `.hip_fatbin`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocm_code_object;

fuzz_target!(|data: &[u8]| {
    if let Ok(header) = rocm_code_object::read_header(data) {
        let _ = header.target_id();
    }
    if let Ok(note) = rocm_code_object::metadata_note(data) {
        let _ = rocm_code_object::parse_metadata(note);
    }
    if let Ok((section, _)) = rocm_code_object::hip_fatbin(data) {
        let _ = rocm_code_object::parse(section);
    }
    let _ = rocm_code_object::parse(data);
});
