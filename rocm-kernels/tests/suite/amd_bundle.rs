//! The offload-bundle reader on bundles clang really writes (`clang++ -x hip --cuda-device-only`
//! with several `--offload-arch`s).

use crate::amd_common as common;

use common::*;
use rocm_kernels::runtime::backend::amd::{read_bundle, select_entry, TargetId};

#[testkit::test(needs = [HIP_BUNDLER])]
fn clang_bundles_are_read_and_the_device_entry_chosen() {
    let clang = clang();
    let dir = tempfile::tempdir().unwrap();
    let bytes = hip_bundle(
        &clang,
        KERNELS_HIP,
        &["gfx90a:xnack-", "gfx90a:xnack+", "gfx1030"],
        dir.path(),
    );
    let entries = read_bundle(&bytes).unwrap();
    let ids: Vec<&str> = entries.iter().map(|e| e.id).collect();
    assert!(ids.iter().any(|id| id.starts_with("host-")), "{ids:?}");
    let mut targets: Vec<String> = entries
        .iter()
        .filter_map(|e| e.target().map(|t| t.to_string()))
        .collect();
    targets.sort();
    assert_eq!(targets, ["gfx1030", "gfx90a:xnack+", "gfx90a:xnack-"]);
    for entry in &entries {
        if let Some(target) = entry.target() {
            assert!(entry.bytes.starts_with(b"\x7fELF"), "{}", entry.id);
            let mach = if target.processor == "gfx90a" {
                MACH_GFX90A
            } else {
                MACH_GFX1030
            };
            assert_eq!(elf_mach(entry.bytes), mach, "{}", entry.id);
        }
    }

    let device = TargetId::parse("gfx90a:sramecc+:xnack-").unwrap();
    let chosen = select_entry(&entries, &device).unwrap();
    assert_eq!(chosen.target().unwrap().to_string(), "gfx90a:xnack-");
    let chosen = select_entry(&entries, &TargetId::parse("gfx1030").unwrap()).unwrap();
    assert_eq!(elf_mach(chosen.bytes), MACH_GFX1030);
    let missing = select_entry(&entries, &TargetId::parse("gfx1100").unwrap()).unwrap_err();
    assert!(
        missing.contains("gfx1030") && missing.contains("gfx90a:xnack-"),
        "{missing}"
    );
}
