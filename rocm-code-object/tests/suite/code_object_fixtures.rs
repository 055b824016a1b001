//! `code_object` on two small code objects committed as fixtures (built by `fuzz/seed.sh` with
//! clang++-19 from an `axpy` kernel), so these run without any compiler: the expected values,
//! then every truncation and a sweep of byte corruptions, which must be errors, never panics.

use rocm_code_object::{Container, FeatureMode};
use rocm_kernels_core::library::ParamKind;

const ELF: &[u8] = include_bytes!("../fixtures/axpy-gfx1030.co");
const CCOB: &[u8] = include_bytes!("../fixtures/axpy-gfx90a-ccob.hipfb");

#[testkit::test]
fn raw_elf_fixture_reads_as_written() {
    let objects = rocm_code_object::parse(ELF).unwrap();
    assert_eq!(objects.container, Container::AmdgpuElf);
    let entry = &objects.entries[0];
    assert_eq!(entry.target_string(), "gfx1030");
    let header = entry.elf().unwrap();
    assert_eq!(
        (header.mach, header.xnack),
        (0x036, FeatureMode::Unsupported)
    );
    let metadata = entry.metadata().unwrap();
    assert_eq!(
        metadata.target.as_deref(),
        Some("amdgcn-amd-amdhsa--gfx1030")
    );
    let k = &metadata.kernels[0];
    assert_eq!((k.name.as_str(), k.symbol.as_str()), ("axpy", "axpy.kd"));
    assert_eq!(k.wavefront_size, 32);
    let params: Vec<_> = k
        .params()
        .into_iter()
        .map(|p| (p.name, p.size, p.kind))
        .collect();
    assert_eq!(
        params,
        [
            ("a".to_owned(), 4, ParamKind::ByValue),
            ("x".to_owned(), 8, ParamKind::GlobalBuffer),
            ("y".to_owned(), 8, ParamKind::GlobalBuffer),
            ("n".to_owned(), 4, ParamKind::ByValue),
        ]
    );
}

#[testkit::test]
fn compressed_fixture_reads_as_written() {
    let objects = rocm_code_object::parse(CCOB).unwrap();
    let Container::CompressedBundle { header } = &objects.container else {
        panic!()
    };
    assert_eq!(header.version, 2);
    assert_eq!(header.total_size, Some(CCOB.len() as u64));
    let entry = objects.entry_for("gfx90a").unwrap();
    assert_eq!(entry.kernels().unwrap()[0].name, "axpy");
}

/// Parse, and read every entry down to its kernels; only errors may come out.
fn read_everything(bytes: &[u8]) {
    if let Ok(objects) = rocm_code_object::parse(bytes) {
        for entry in &objects.entries {
            let _ = entry.elf();
            let _ = entry.kernels();
        }
    }
}

#[testkit::test]
fn truncations_and_corruptions_are_errors_not_panics() {
    for input in [ELF, CCOB] {
        for len in 0..input.len() {
            read_everything(&input[..len]);
        }
        let mut copy = input.to_vec();
        for at in 0..copy.len() {
            for value in [0x00, 0xff, copy[at] ^ 0x80] {
                let saved = copy[at];
                copy[at] = value;
                read_everything(&copy);
                copy[at] = saved;
            }
        }
    }
}
