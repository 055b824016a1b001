//! Offload bundles clang really writes (`clang++ -x hip --cuda-device-only` with several
//! `--offload-arch`s), split into one code object per target as the build embeds them, and the
//! one a device loads.

use crate::amd_common as common;

use common::*;
use rocm_kernels::library::TargetId;

#[testkit::test(needs = [HIP_BUNDLER])]
fn clang_bundles_split_per_target_and_the_device_object_is_chosen() {
    let clang = clang();
    let dir = tempfile::tempdir().unwrap();
    let bytes = hip_bundle(
        &clang,
        KERNELS_HIP,
        &["gfx90a:xnack-", "gfx90a:xnack+", "gfx1030"],
        dir.path(),
    );
    let objects = rocm_code_object::target_objects(&bytes).unwrap();
    let mut targets: Vec<String> = objects.iter().map(|o| o.target.clone()).collect();
    targets.sort();
    assert_eq!(targets, ["gfx1030", "gfx90a:xnack+", "gfx90a:xnack-"]);
    for object in &objects {
        assert!(object.elf.starts_with(b"\x7fELF"), "{}", object.target);
        let mach = if object.target.starts_with("gfx90a") {
            MACH_GFX90A
        } else {
            MACH_GFX1030
        };
        assert_eq!(elf_mach(&object.elf), mach, "{}", object.target);
        assert_eq!(object.kernels.len(), 3, "{}", object.target);
    }

    let ids: Vec<TargetId> = objects
        .iter()
        .map(|o| TargetId::parse(&o.target).unwrap())
        .collect();
    let choose = |device: &str| {
        let device = TargetId::parse(device).unwrap();
        TargetId::best_for(&device, objects.iter().zip(&ids)).map(|o| o.target.clone())
    };
    assert_eq!(
        choose("gfx90a:sramecc+:xnack-").as_deref(),
        Some("gfx90a:xnack-")
    );
    assert_eq!(choose("gfx1030").as_deref(), Some("gfx1030"));
    assert_eq!(choose("gfx1100"), None);
}
