//! Reading AMD GPU code objects: clang offload bundles (plain and compressed), raw AMDGPU ELF,
//! and the `.hip_fatbin` section of a host ELF; each entry's target id, and the AMDGPU metadata
//! note per kernel (registers, LDS, scratch, spills, arguments), each kernel's descriptor, and the
//! compiler's resource-usage remarks (`-Rpass-analysis=kernel-resource-usage`) to check them by.
//!
//! ```no_run
//! # fn main() -> Result<(), rocm_code_object::CodeObjectError> {
//! let bytes = std::fs::read("kernels.hipfb").unwrap();
//! let objects = rocm_code_object::parse(&bytes)?;
//! for entry in objects.gpu_entries() {
//!     for k in entry.kernels()? {
//!         println!("{} {}: {} VGPRs, {} SGPRs", entry.target_string(), k.name, k.vgpr_count, k.sgpr_count);
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! Malformed input is a [`CodeObjectError`], never a panic; sizes read from headers are checked
//! against the input before anything is allocated (see the fuzz targets under `fuzz/`).

mod bundle;
mod descriptor;
mod elf;
mod error;
mod mach;
mod metadata;
pub mod nvidia;
pub mod remarks;
pub mod symbols;
mod target;

use std::ops::Range;
use std::sync::Arc;

use serde::Serialize;

pub use bundle::{
    decompress, parse_compressed_header, parse_plain, CompressedHeader, CompressionMethod,
    PlainBundle, RawEntry, COMPRESSED_MAGIC, PLAIN_MAGIC,
};
pub use descriptor::{kernel_descriptors, KernelDescriptor, KERNEL_DESCRIPTOR_SIZE};
pub use elf::{
    hip_fatbin, metadata_note, read_header, AmdgpuElf, FeatureMode, EM_AMDGPU, NT_AMDGPU_METADATA,
};
pub use error::CodeObjectError;
pub use mach::{mach_of, processor_name};
pub use metadata::{parse_metadata, KernelArg, KernelMetadata, Metadata, ParamInfo};
pub use target::{BundleEntryId, TargetFeature, TargetId};

/// What kind of file [`parse`] was given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Container {
    /// An uncompressed `__CLANG_OFFLOAD_BUNDLE__`.
    OffloadBundle,
    /// A compressed `CCOB` bundle.
    CompressedBundle {
        /// The bundle's `CCOB` header: format version, compression, sizes.
        header: CompressedHeader,
    },
    /// A single AMDGPU ELF (`--no-gpu-bundle-output`, `-fgpu-rdc` device link output).
    AmdgpuElf,
    /// A host object, executable or library; entries come from its `.hip_fatbin` section,
    /// which may hold several bundles (one per linked translation unit).
    HostElf {
        /// Offset of `.hip_fatbin` in the input.
        section_offset: usize,
        /// The bundles found in the section, in order.
        bundles: usize,
    },
}

/// Where an entry's bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "in", rename_all = "kebab-case")]
pub enum Location {
    /// `range` of the input given to [`parse`].
    Input {
        /// Byte range of the entry in the input.
        range: Range<usize>,
    },
    /// `range` of the plain bundle decompressed from the `CCOB` bundle at `bundle_offset` of the
    /// input.
    Decompressed {
        /// Offset of the `CCOB` bundle in the input.
        bundle_offset: usize,
        /// Byte range of the entry in the decompressed plain bundle.
        range: Range<usize>,
    },
}

#[derive(Debug, Clone)]
enum Bytes<'a> {
    Borrowed(&'a [u8]),
    Shared(Arc<[u8]>, Range<usize>),
}

/// One code object: a bundle entry, or the whole input when it is a single AMDGPU ELF.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    /// The bundle entry id; `None` for a raw AMDGPU ELF.
    pub bundle_id: Option<BundleEntryId>,
    /// The target id: from the bundle entry id, or from the ELF header for a raw ELF.
    pub target: Option<TargetId>,
    /// Where the entry's bytes are: in the input, or in a decompressed bundle.
    pub location: Location,
    bytes: Bytes<'a>,
}

impl<'a> Entry<'a> {
    /// The entry's bytes (an AMDGPU ELF for GPU entries; empty for the host entry).
    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Borrowed(b) => b,
            Bytes::Shared(buf, range) => &buf[range.clone()],
        }
    }

    /// Whether the entry holds AMDGPU device code.
    pub fn is_amdgpu(&self) -> bool {
        self.bundle_id.as_ref().is_none_or(BundleEntryId::is_amdgpu)
    }

    /// `gfx90a:xnack-`, or the bundle id when it has no target id, or `unknown`.
    pub fn target_string(&self) -> String {
        match (&self.target, &self.bundle_id) {
            (Some(t), _) => t.to_string(),
            (None, Some(id)) => id.raw.clone(),
            (None, None) => "unknown".to_owned(),
        }
    }

    /// The ELF header of the entry's code object.
    pub fn elf(&self) -> Result<AmdgpuElf, CodeObjectError> {
        read_header(self.bytes())
    }

    /// The whole metadata note.
    pub fn metadata(&self) -> Result<Metadata, CodeObjectError> {
        parse_metadata(metadata_note(self.bytes())?)
    }

    /// Per-kernel metadata, in the order the compiler wrote it.
    pub fn kernels(&self) -> Result<Vec<KernelMetadata>, CodeObjectError> {
        Ok(self.metadata()?.kernels)
    }

    /// The kernel descriptors, by symbol (`<kernel>.kd`, as [`KernelMetadata::symbol`] names
    /// them).
    pub fn kernel_descriptors(
        &self,
    ) -> Result<std::collections::BTreeMap<String, KernelDescriptor>, CodeObjectError> {
        kernel_descriptors(self.bytes())
    }
}

/// Everything [`parse`] found.
#[derive(Debug, Clone)]
pub struct CodeObjects<'a> {
    /// The kind of file the entries came from.
    pub container: Container,
    /// All entries, the host entry of a bundle included.
    pub entries: Vec<Entry<'a>>,
}

impl<'a> CodeObjects<'a> {
    /// The entries holding AMDGPU device code.
    pub fn gpu_entries(&self) -> impl Iterator<Item = &Entry<'a>> {
        self.entries.iter().filter(|e| e.is_amdgpu())
    }

    /// The first GPU entry for `processor` (`gfx90a`), whatever its features.
    pub fn entry_for(&self, processor: &str) -> Option<&Entry<'a>> {
        self.gpu_entries()
            .find(|e| e.target.as_ref().is_some_and(|t| t.processor == processor))
    }
}

/// One target's code object of a container, with its kernels: what the build embeds for the
/// runtime (which then needs no bundle reader or decompressor of its own).
#[derive(Debug, Clone)]
pub struct TargetObject {
    /// `gfx90a:xnack-`.
    pub target: String,
    /// The AMDGPU ELF.
    pub elf: Vec<u8>,
    /// Its kernels, in the order the compiler wrote them.
    pub kernels: Vec<KernelMetadata>,
}

/// The AMDGPU code objects of a container (see [`parse`]), one per target, each with the kernels
/// its metadata lists.
pub fn target_objects(data: &[u8]) -> Result<Vec<TargetObject>, CodeObjectError> {
    parse(data)?
        .gpu_entries()
        .map(|entry| {
            Ok(TargetObject {
                target: entry.target_string(),
                elf: entry.bytes().to_vec(),
                kernels: entry.kernels()?,
            })
        })
        .collect()
}

/// Read a code object container: an offload bundle (plain or compressed), a raw AMDGPU ELF, or a
/// host ELF with a `.hip_fatbin` section.
pub fn parse(data: &[u8]) -> Result<CodeObjects<'_>, CodeObjectError> {
    if data.starts_with(PLAIN_MAGIC) {
        let mut entries = Vec::new();
        plain_entries(data, 0, &mut entries)?;
        return Ok(CodeObjects {
            container: Container::OffloadBundle,
            entries,
        });
    }
    if data.starts_with(COMPRESSED_MAGIC) {
        let mut entries = Vec::new();
        let (header, _) = compressed_entries(data, 0, &mut entries)?;
        return Ok(CodeObjects {
            container: Container::CompressedBundle { header },
            entries,
        });
    }
    if elf::is_elf(data) {
        if elf::machine(data)? == EM_AMDGPU {
            let header = read_header(data)?;
            return Ok(CodeObjects {
                container: Container::AmdgpuElf,
                entries: vec![Entry {
                    bundle_id: None,
                    target: header.target_id(),
                    location: Location::Input {
                        range: 0..data.len(),
                    },
                    bytes: Bytes::Borrowed(data),
                }],
            });
        }
        let (section, section_offset) = hip_fatbin(data)?;
        let (entries, bundles) = fatbin_entries(section, section_offset)?;
        return Ok(CodeObjects {
            container: Container::HostElf {
                section_offset,
                bundles,
            },
            entries,
        });
    }
    Err(CodeObjectError::UnknownFormat {
        start: data[..data.len().min(8)].to_vec(),
    })
}

/// Entries of the plain bundle at `data[0]`, which sits at `base` in the input. Returns the
/// bundle's extent.
fn plain_entries<'a>(
    data: &'a [u8],
    base: usize,
    out: &mut Vec<Entry<'a>>,
) -> Result<usize, CodeObjectError> {
    let bundle = parse_plain(data)?;
    out.extend(bundle.entries.into_iter().map(|raw| {
        let id = BundleEntryId::parse(&raw.id);
        Entry {
            target: id.target.clone(),
            bundle_id: Some(id),
            location: Location::Input {
                range: base + raw.range.start..base + raw.range.end,
            },
            bytes: Bytes::Borrowed(&data[raw.range]),
        }
    }));
    Ok(bundle.extent)
}

/// Entries of the compressed bundle at `data[0]`, which sits at `base` in the input. Returns
/// the header and the bundle's extent.
fn compressed_entries<'a>(
    data: &'a [u8],
    base: usize,
    out: &mut Vec<Entry<'a>>,
) -> Result<(CompressedHeader, usize), CodeObjectError> {
    let (header, plain, extent) = decompress(data)?;
    let bundle = parse_plain(&plain)?;
    let shared: Arc<[u8]> = plain.into();
    out.extend(bundle.entries.into_iter().map(|raw| {
        let id = BundleEntryId::parse(&raw.id);
        Entry {
            target: id.target.clone(),
            bundle_id: Some(id),
            location: Location::Decompressed {
                bundle_offset: base,
                range: raw.range.clone(),
            },
            bytes: Bytes::Shared(shared.clone(), raw.range),
        }
    }));
    Ok((header, extent))
}

/// Entries of every bundle in a `.hip_fatbin` section (at `base` in the input). The linker
/// concatenates one bundle per translation unit, padded with zeros to their alignment.
fn fatbin_entries(section: &[u8], base: usize) -> Result<(Vec<Entry<'_>>, usize), CodeObjectError> {
    let mut entries = Vec::new();
    let mut bundles = 0;
    let mut at = 0;
    loop {
        while section.get(at) == Some(&0) {
            at += 1;
        }
        let rest = &section[at..];
        if rest.is_empty() {
            break;
        }
        let extent = if rest.starts_with(PLAIN_MAGIC) {
            plain_entries(rest, base + at, &mut entries)?
        } else if rest.starts_with(COMPRESSED_MAGIC) {
            compressed_entries(rest, base + at, &mut entries)?.1
        } else {
            return Err(CodeObjectError::Bundle(format!(
                "`.hip_fatbin` holds neither a plain nor a compressed bundle at section offset {at}"
            )));
        };
        bundles += 1;
        at += extent.max(1);
    }
    if bundles == 0 {
        return Err(CodeObjectError::Bundle(
            "`.hip_fatbin` section is empty".into(),
        ));
    }
    Ok((entries, bundles))
}

#[cfg(test)]
mod tests {
    use super::bundle::tests::{compressed_bundle, plain_bundle};
    use super::*;

    #[test]
    fn unknown_input_is_an_error_naming_its_first_bytes() {
        let err = parse(b"MZ\x90\x00 not a code object").unwrap_err();
        assert!(
            matches!(err, CodeObjectError::UnknownFormat { ref start } if start == b"MZ\x90\x00 not")
        );
        assert!(parse(b"").is_err());
        assert!(parse(b"\x7fELF").is_err());
    }

    #[test]
    fn bundle_entries_carry_target_and_location() {
        let b = plain_bundle(&[
            ("host-x86_64-unknown-linux--", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", b"abc"),
        ]);
        let objects = parse(&b).unwrap();
        assert_eq!(objects.container, Container::OffloadBundle);
        assert_eq!(objects.entries.len(), 2);
        assert_eq!(objects.gpu_entries().count(), 1);
        let gpu = objects.entry_for("gfx90a").unwrap();
        assert_eq!(gpu.target_string(), "gfx90a:xnack-");
        assert_eq!(gpu.bytes(), b"abc");
        let Location::Input { range } = &gpu.location else {
            panic!()
        };
        assert_eq!(&b[range.clone()], b"abc");
        // Its bytes are no ELF: asking for kernels is an error, not a panic.
        assert!(gpu.kernels().is_err());
    }

    #[test]
    fn compressed_bundle_entries_come_from_the_decompressed_bytes() {
        let plain = plain_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx1030", b"device code")]);
        let c = compressed_bundle(&plain, 2, CompressionMethod::Zlib);
        let objects = parse(&c).unwrap();
        assert!(
            matches!(objects.container, Container::CompressedBundle { ref header } if header.version == 2)
        );
        assert_eq!(objects.entries[0].bytes(), b"device code");
        assert!(matches!(
            objects.entries[0].location,
            Location::Decompressed {
                bundle_offset: 0,
                ..
            }
        ));
    }

    #[test]
    fn fatbin_sections_hold_several_padded_bundles() {
        let a = plain_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", b"one")]);
        let b = compressed_bundle(
            &plain_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx1030", b"two")]),
            3,
            CompressionMethod::Zstd,
        );
        let mut section = a.clone();
        section.resize(4096, 0);
        section.extend(&b);
        section.resize(8192, 0);
        let (entries, bundles) = fatbin_entries(&section, 100).unwrap();
        assert_eq!(bundles, 2);
        assert_eq!(entries[0].bytes(), b"one");
        assert_eq!(entries[1].bytes(), b"two");
        assert!(matches!(
            entries[1].location,
            Location::Decompressed {
                bundle_offset: 4196,
                ..
            }
        ));
        section[4096] = b'X';
        assert!(fatbin_entries(&section, 0).is_err());
    }
}
