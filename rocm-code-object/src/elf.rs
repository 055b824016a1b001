//! The ELF side: an AMDGPU code object's header (`e_flags` → processor and xnack/sramecc modes,
//! ABI version → code object version), its `NT_AMDGPU_METADATA` note, and a host ELF's
//! `.hip_fatbin` section.

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::Endianness;
use serde::Serialize;

use super::error::CodeObjectError;
use super::mach;
use super::target::{TargetFeature, TargetId};

/// `EM_AMDGPU`.
pub const EM_AMDGPU: u16 = 224;
/// `ELFOSABI_AMDGPU_HSA`.
const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `NT_AMDGPU_METADATA`: the MessagePack metadata note of code object v3 and later.
pub const NT_AMDGPU_METADATA: u32 = 32;

const EF_AMDGPU_MACH: u32 = 0x0ff;
const EF_AMDGPU_FEATURE_XNACK_V4: u32 = 0x300;
const EF_AMDGPU_FEATURE_SRAMECC_V4: u32 = 0xc00;
const EF_AMDGPU_FEATURE_XNACK_V3: u32 = 0x100;
const EF_AMDGPU_FEATURE_SRAMECC_V3: u32 = 0x200;
const EF_AMDGPU_GENERIC_VERSION_OFFSET: u32 = 24;

/// How a code object was built with respect to a target feature (xnack, sramecc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FeatureMode {
    /// The processor does not have the feature.
    Unsupported,
    /// Runs with the feature on or off (not named in the target id).
    Any,
    /// Requires the feature off (`name-`).
    Off,
    /// Requires the feature on (`name+`).
    On,
}

/// What the ELF header of an AMDGPU code object says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AmdgpuElf {
    /// `e_ident[EI_ABIVERSION]` as stored.
    pub abi_version: u8,
    /// Code object version (3–6) derived from the ABI version for the HSA OS ABI.
    pub code_object_version: Option<u32>,
    /// `e_flags & EF_AMDGPU_MACH`.
    pub mach: u32,
    /// The processor name for `mach` (`gfx90a`), `None` for a value this reader does not know.
    pub processor: Option<&'static str>,
    /// XNACK (retry of faulting memory accesses) as the flags set it.
    pub xnack: FeatureMode,
    /// SRAMECC (ECC on on-chip memory) as the flags set it.
    pub sramecc: FeatureMode,
    /// For generic targets (code object v6), `EF_AMDGPU_GENERIC_VERSION`.
    pub generic_version: Option<u8>,
    /// The raw `e_flags`.
    pub e_flags: u32,
}

impl AmdgpuElf {
    /// The target id the header describes (`gfx90a:sramecc+:xnack-`), features in clang's
    /// order (alphabetical); `None` if the processor is unknown.
    pub fn target_id(&self) -> Option<TargetId> {
        let mut features = Vec::new();
        for (name, mode) in [("sramecc", self.sramecc), ("xnack", self.xnack)] {
            match mode {
                FeatureMode::On | FeatureMode::Off => features.push(TargetFeature {
                    name: name.to_owned(),
                    enabled: mode == FeatureMode::On,
                }),
                FeatureMode::Any | FeatureMode::Unsupported => {}
            }
        }
        Some(TargetId {
            processor: self.processor?.to_owned(),
            features,
        })
    }
}

fn elf_err(e: object::read::Error) -> CodeObjectError {
    CodeObjectError::Elf(e.to_string())
}

/// Whether the bytes start like an ELF file.
pub fn is_elf(data: &[u8]) -> bool {
    data.starts_with(&elf::ELFMAG)
}

/// The `e_machine` of a 32- or 64-bit ELF.
pub fn machine(data: &[u8]) -> Result<u16, CodeObjectError> {
    match data.get(4) {
        Some(&c) if c == elf::ELFCLASS64.0 => {
            let h = elf::FileHeader64::<Endianness>::parse(data).map_err(elf_err)?;
            Ok(h.e_machine(h.endian().map_err(elf_err)?).0)
        }
        Some(&c) if c == elf::ELFCLASS32.0 => {
            let h = elf::FileHeader32::<Endianness>::parse(data).map_err(elf_err)?;
            Ok(h.e_machine(h.endian().map_err(elf_err)?).0)
        }
        _ => Err(CodeObjectError::Elf(
            "unknown ELF class (neither 32- nor 64-bit)".into(),
        )),
    }
}

pub(crate) fn amdgpu_header(
    data: &[u8],
) -> Result<(&elf::FileHeader64<Endianness>, Endianness), CodeObjectError> {
    if data.get(4) != Some(&elf::ELFCLASS64.0) {
        return Err(CodeObjectError::Elf(
            "AMDGPU code objects are 64-bit ELF".into(),
        ));
    }
    let header = elf::FileHeader64::<Endianness>::parse(data).map_err(elf_err)?;
    let endian = header.endian().map_err(elf_err)?;
    let machine = header.e_machine(endian).0;
    if machine != EM_AMDGPU {
        return Err(CodeObjectError::NotAmdgpu { machine });
    }
    Ok((header, endian))
}

/// Read an AMDGPU code object's ELF header.
pub fn read_header(data: &[u8]) -> Result<AmdgpuElf, CodeObjectError> {
    let (header, endian) = amdgpu_header(data)?;
    let ident = header.e_ident();
    let flags = header.e_flags(endian).0;
    let abi_version = ident.abi_version;
    // ELFABIVERSION_AMDGPU_HSA_V3 = 1 ... V6 = 4.
    let code_object_version =
        (ident.os_abi.0 == ELFOSABI_AMDGPU_HSA && abi_version <= 4).then(|| abi_version as u32 + 2);
    let mach = flags & EF_AMDGPU_MACH;
    let (xnack, sramecc) = match code_object_version {
        Some(3) => (
            v3_mode(flags & EF_AMDGPU_FEATURE_XNACK_V3 != 0),
            v3_mode(flags & EF_AMDGPU_FEATURE_SRAMECC_V3 != 0),
        ),
        Some(2) | None => (FeatureMode::Any, FeatureMode::Any),
        Some(_) => (
            v4_mode((flags & EF_AMDGPU_FEATURE_XNACK_V4) >> 8),
            v4_mode((flags & EF_AMDGPU_FEATURE_SRAMECC_V4) >> 10),
        ),
    };
    let generic = (flags >> EF_AMDGPU_GENERIC_VERSION_OFFSET) as u8;
    Ok(AmdgpuElf {
        abi_version,
        code_object_version,
        mach,
        processor: mach::processor_name(mach),
        xnack,
        sramecc,
        generic_version: (code_object_version.unwrap_or(0) >= 6 && generic != 0).then_some(generic),
        e_flags: flags,
    })
}

fn v3_mode(on: bool) -> FeatureMode {
    if on {
        FeatureMode::On
    } else {
        FeatureMode::Any
    }
}

fn v4_mode(bits: u32) -> FeatureMode {
    match bits {
        0 => FeatureMode::Unsupported,
        1 => FeatureMode::Any,
        2 => FeatureMode::Off,
        _ => FeatureMode::On,
    }
}

/// The descriptor of the `NT_AMDGPU_METADATA` note (owner `AMDGPU`) of an AMDGPU code object:
/// from note sections, or from `PT_NOTE` segments when section headers were stripped.
pub fn metadata_note(data: &[u8]) -> Result<&[u8], CodeObjectError> {
    let (header, endian) = amdgpu_header(data)?;
    let sections = header.sections(endian, data).map_err(elf_err)?;
    for section in sections.iter() {
        if let Some(mut notes) = section.notes(endian, data).map_err(elf_err)? {
            while let Some(note) = notes.next().map_err(elf_err)? {
                if note.name() == b"AMDGPU" && note.n_type(endian).0 == NT_AMDGPU_METADATA {
                    return Ok(note.desc());
                }
            }
        }
    }
    for segment in header.program_headers(endian, data).map_err(elf_err)? {
        if let Some(mut notes) = segment.notes(endian, data).map_err(elf_err)? {
            while let Some(note) = notes.next().map_err(elf_err)? {
                if note.name() == b"AMDGPU" && note.n_type(endian).0 == NT_AMDGPU_METADATA {
                    return Ok(note.desc());
                }
            }
        }
    }
    Err(CodeObjectError::NoMetadata)
}

/// The `.hip_fatbin` section of a host ELF (object file, executable or shared library) and its
/// offset in `data`.
pub fn hip_fatbin(data: &[u8]) -> Result<(&[u8], usize), CodeObjectError> {
    fn find<H: FileHeader<Endian = Endianness>>(
        data: &[u8],
    ) -> Result<(&[u8], usize), CodeObjectError> {
        let header = H::parse(data).map_err(elf_err)?;
        let endian = header.endian().map_err(elf_err)?;
        let sections = header.sections(endian, data).map_err(elf_err)?;
        let (_, section) = sections
            .section_by_name(endian, b".hip_fatbin")
            .ok_or(CodeObjectError::NoFatbin)?;
        if section.sh_type(endian) == elf::SHT_NOBITS {
            return Err(CodeObjectError::NoFatbin);
        }
        let bytes = section.data(endian, data).map_err(elf_err)?;
        let offset = section
            .file_range(endian)
            .map_or(0, |(offset, _)| offset as usize);
        Ok((bytes, offset))
    }
    match data.get(4) {
        Some(&c) if c == elf::ELFCLASS64.0 => find::<elf::FileHeader64<Endianness>>(data),
        Some(&c) if c == elf::ELFCLASS32.0 => find::<elf::FileHeader32<Endianness>>(data),
        _ => Err(CodeObjectError::Elf(
            "unknown ELF class (neither 32- nor 64-bit)".into(),
        )),
    }
}
