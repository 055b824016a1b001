//! AMDGPU kernel descriptors: the 64-byte record (`<kernel>.kd`) the command processor reads at
//! dispatch (AMDGPUUsage, "Kernel Descriptor"). The metadata note describes a kernel for tools;
//! the descriptor is what the hardware is told, so where the two could differ (the VGPR blocks
//! allocated, which LLVM pads for `amdgpu_waves_per_eu`; wave32; WGP mode before code object v5)
//! the descriptor is the truth.

use std::collections::BTreeMap;

use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::SectionIndex;
use serde::Serialize;

use super::elf::amdgpu_header;
use super::error::CodeObjectError;

/// Size of a kernel descriptor in bytes.
pub const KERNEL_DESCRIPTOR_SIZE: usize = 64;

/// The fields of a kernel descriptor, as stored (code object v3 and later, gfx6–gfx12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KernelDescriptor {
    /// `GROUP_SEGMENT_FIXED_SIZE`: static LDS bytes per work-group.
    pub group_segment_fixed_size: u32,
    /// `PRIVATE_SEGMENT_FIXED_SIZE`: scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// `KERNARG_SIZE`.
    pub kernarg_size: u32,
    /// `COMPUTE_PGM_RSRC3` (gfx90a and later: `ACCUM_OFFSET`, `TG_SPLIT`).
    pub compute_pgm_rsrc3: u32,
    /// `COMPUTE_PGM_RSRC1` (register blocks; `WGP_MODE` on gfx10 and later).
    pub compute_pgm_rsrc1: u32,
    /// `COMPUTE_PGM_RSRC2`.
    pub compute_pgm_rsrc2: u32,
    /// The kernel code properties (`ENABLE_WAVEFRONT_SIZE32` is bit 10).
    pub kernel_code_properties: u16,
}

impl KernelDescriptor {
    /// Decode the 64 bytes of a descriptor (little-endian, as every AMDGPU code object is).
    pub fn from_bytes(b: &[u8; KERNEL_DESCRIPTOR_SIZE]) -> KernelDescriptor {
        let u32_at = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        KernelDescriptor {
            group_segment_fixed_size: u32_at(0),
            private_segment_fixed_size: u32_at(4),
            kernarg_size: u32_at(8),
            compute_pgm_rsrc3: u32_at(44),
            compute_pgm_rsrc1: u32_at(48),
            compute_pgm_rsrc2: u32_at(52),
            kernel_code_properties: u16::from_le_bytes([b[56], b[57]]),
        }
    }

    /// `GRANULATED_WORKITEM_VGPR_COUNT` (RSRC1 bits 5:0): VGPR blocks allocated, minus one. The
    /// block size depends on the target and wave size, so turning it into registers is the
    /// occupancy model's business (`rocm-occupancy`).
    pub fn vgpr_blocks(&self) -> u32 {
        self.compute_pgm_rsrc1 & 0x3f
    }

    /// `WGP_MODE` (RSRC1 bit 29), meaningful on gfx10 and later.
    pub fn wgp_mode(&self) -> bool {
        self.compute_pgm_rsrc1 & (1 << 29) != 0
    }

    /// `ENABLE_WAVEFRONT_SIZE32` (kernel code properties bit 10), meaningful on gfx10 and later.
    pub fn wave32(&self) -> bool {
        self.kernel_code_properties & (1 << 10) != 0
    }

    /// `ACCUM_OFFSET` (gfx90a and later, RSRC3 bits 5:0): the first AGPR of the unified register
    /// file, in registers.
    pub fn accum_offset(&self) -> u32 {
        ((self.compute_pgm_rsrc3 & 0x3f) + 1) * 4
    }
}

/// Every kernel descriptor of an AMDGPU code object, by symbol name (`_Z5saxpyfPKfPfi.kd`),
/// found through the symbol table (`.symtab`, else `.dynsym`). Relocatable and linked objects
/// both work: a linked object's symbol value is an address inside its section.
pub fn kernel_descriptors(
    data: &[u8],
) -> Result<BTreeMap<String, KernelDescriptor>, CodeObjectError> {
    let (header, endian) = amdgpu_header(data)?;
    let elf_err = |e: object::read::Error| CodeObjectError::Elf(e.to_string());
    let sections = header.sections(endian, data).map_err(elf_err)?;
    let mut out = BTreeMap::new();
    for kind in [elf::SHT_SYMTAB, elf::SHT_DYNSYM] {
        let symbols = sections.symbols(endian, data, kind).map_err(elf_err)?;
        for sym in symbols.iter() {
            let name = sym.name(endian, symbols.strings()).map_err(elf_err)?;
            let Some(name) = std::str::from_utf8(name)
                .ok()
                .filter(|n| n.ends_with(".kd") && !out.contains_key(*n))
            else {
                continue;
            };
            let Some(index) = sym.st_shndx(endian).index() else {
                continue;
            };
            let section = sections
                .section(SectionIndex(usize::from(index)))
                .map_err(elf_err)?;
            let bytes = section.data(endian, data).map_err(elf_err)?;
            let value = sym.st_value(endian);
            let base = section.sh_addr(endian);
            let offset = if base != 0 && value >= base {
                value - base
            } else {
                value
            };
            let record = usize::try_from(offset)
                .ok()
                .and_then(|at| bytes.get(at..at.checked_add(KERNEL_DESCRIPTOR_SIZE)?))
                .and_then(|b| <&[u8; KERNEL_DESCRIPTOR_SIZE]>::try_from(b).ok())
                .ok_or_else(|| {
                    CodeObjectError::truncated(
                        "kernel descriptor",
                        offset,
                        KERNEL_DESCRIPTOR_SIZE as u64,
                        bytes.len(),
                    )
                })?;
            out.insert(name.to_owned(), KernelDescriptor::from_bytes(record));
        }
        if !out.is_empty() {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_decode_from_their_documented_offsets() {
        let mut b = [0u8; KERNEL_DESCRIPTOR_SIZE];
        b[0..4].copy_from_slice(&4096u32.to_le_bytes());
        b[4..8].copy_from_slice(&16u32.to_le_bytes());
        b[44..48].copy_from_slice(&0x0001_0003u32.to_le_bytes()); // accum offset (3+1)*4, TG_SPLIT
        b[48..52].copy_from_slice(&((1u32 << 29) | 0x05).to_le_bytes());
        b[56..58].copy_from_slice(&(1u16 << 10).to_le_bytes());
        let d = KernelDescriptor::from_bytes(&b);
        assert_eq!(
            (d.group_segment_fixed_size, d.private_segment_fixed_size),
            (4096, 16)
        );
        assert_eq!((d.vgpr_blocks(), d.wgp_mode(), d.wave32()), (5, true, true));
        assert_eq!(d.accum_offset(), 16);
    }

    #[test]
    fn non_amdgpu_input_is_an_error() {
        assert!(kernel_descriptors(b"\x7fELF").is_err());
        assert!(kernel_descriptors(b"").is_err());
    }
}
