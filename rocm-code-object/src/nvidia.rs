//! The kernels of NVIDIA images: entry symbols of a cubin (an ELF) and of PTX text, read at build
//! time so the runtime gets each kernel's exact symbol.

use object::elf;
use object::read::elf::{ElfFile64, FileHeader, Sym};
use object::Endianness;

/// Entry functions of a cubin: `STT_FUNC` symbols marked `STO_CUDA_ENTRY` (0x10) in `st_other`.
pub fn cubin_entries(image: &[u8]) -> Result<Vec<String>, String> {
    const STO_CUDA_ENTRY: u8 = 0x10;
    let file = ElfFile64::<Endianness>::parse(image).map_err(|e| format!("not a cubin: {e}"))?;
    let endian = file.endian();
    let symbols = file
        .elf_header()
        .sections(endian, image)
        .and_then(|s| s.symbols(endian, image, elf::SHT_SYMTAB))
        .map_err(|e| format!("cubin symbol table: {e}"))?;
    let mut names = Vec::new();
    for sym in symbols.iter() {
        if sym.st_type() == elf::STT_FUNC && sym.st_other().0 & STO_CUDA_ENTRY != 0 {
            let name = sym
                .name(endian, symbols.strings())
                .map_err(|e| format!("cubin symbol name: {e}"))?;
            names.push(String::from_utf8_lossy(name).into_owned());
        }
    }
    Ok(names)
}

/// `.entry NAME(` declarations of PTX text.
pub fn ptx_entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|line| {
            let rest = line.trim().split(".entry").nth(1)?;
            let name = rest.trim().split(['(', ' ']).next()?.trim();
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ptx_entries_are_the_entry_declarations() {
        let ptx =
            ".version 8.0\n.visible .entry _Z5saxpyfPKfPfi(\n .param .f32 a\n)\n.func helper()\n\
                   .entry saxpy_c (\n";
        assert_eq!(super::ptx_entries(ptx), ["_Z5saxpyfPKfPfi", "saxpy_c"]);
        assert!(super::cubin_entries(b"not an elf").is_err());
    }
}
