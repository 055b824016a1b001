//! Which kernels a cubin or PTX image holds, and which image fits a device.

use object::elf;
use object::read::elf::{ElfFile64, FileHeader, Sym};
use object::Endianness;

use crate::library::{Backend, EmbeddedObject};

/// Symbols of the kernel entry points in `image` (a cubin, or PTX text).
pub(crate) fn entry_symbols(format: &str, image: &[u8]) -> Result<Vec<String>, String> {
    match format {
        "ptx" => Ok(ptx_entries(&String::from_utf8_lossy(image))),
        _ => cubin_entries(image),
    }
}

/// Entry functions of a cubin: `STT_FUNC` symbols marked `STO_CUDA_ENTRY` (0x10) in `st_other`.
fn cubin_entries(image: &[u8]) -> Result<Vec<String>, String> {
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
fn ptx_entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|line| {
            let rest = line.trim().split(".entry").nth(1)?;
            let name = rest.trim().split(['(', ' ']).next()?.trim();
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect()
}

/// `(major, minor)` from `sm_90`, `sm_90a`, `compute_86`.
pub(crate) fn parse_arch(target: &str) -> Option<(u32, u32)> {
    let digits: String = target
        .trim_start_matches("sm_")
        .trim_start_matches("compute_")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let n: u32 = digits.parse().ok()?;
    Some((n / 10, n % 10))
}

/// How well an embedded object fits a device of compute capability `cc`, or `None` if it
/// cannot run there. Higher is better: exact cubin > same-major cubin > PTX (JIT) > source.
///
/// A cubin runs on its own major version with an equal or newer minor; arch-specific targets
/// (`sm_90a`) only on exactly that chip. PTX is JIT-compiled by the driver for any newer device.
pub(crate) fn fitness(object: &EmbeddedObject, cc: (u32, u32)) -> Option<u32> {
    if object.backend != Backend::Nvidia {
        return None;
    }
    match object.format {
        "cubin" => {
            let arch = parse_arch(object.targets)?;
            let specific = object.targets.ends_with('a');
            if arch == cc {
                Some(400)
            } else if !specific && arch.0 == cc.0 && arch.1 <= cc.1 {
                Some(300 + arch.1)
            } else {
                None
            }
        }
        "ptx" => {
            let arch = parse_arch(object.targets)?;
            (arch <= cc).then_some(200 + arch.0 * 10 + arch.1)
        }
        "cuda-source" => Some(100),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(format: &'static str, targets: &'static str) -> EmbeddedObject {
        EmbeddedObject {
            backend: Backend::Nvidia,
            targets,
            source: "k.hip",
            format,
            bytes: b"",
        }
    }

    #[test]
    fn exact_cubin_beats_compatible_cubin_beats_ptx() {
        let h100 = (9, 0);
        assert_eq!(fitness(&object("cubin", "sm_90"), h100), Some(400));
        assert_eq!(fitness(&object("cubin", "sm_80"), h100), None);
        assert!(fitness(&object("ptx", "compute_80"), h100).unwrap() < 300);
        assert_eq!(fitness(&object("ptx", "compute_100"), h100), None);
        let a10 = (8, 6);
        assert_eq!(fitness(&object("cubin", "sm_80"), a10), Some(300));
        assert_eq!(fitness(&object("cubin", "sm_90a"), (9, 0)), Some(400));
        assert_eq!(fitness(&object("cubin", "sm_90a"), (10, 0)), None);
        assert!(fitness(&object("cuda-source", ""), h100).is_some());
    }

    #[test]
    fn ptx_entries_are_found() {
        let ptx = ".version 9.0\n.target sm_90\n.visible .entry _Z5saxpyfPKfPfi(\n.param .f32 a\n)\n.entry red (\n";
        assert_eq!(ptx_entries(ptx), vec!["_Z5saxpyfPKfPfi", "red"]);
    }

    #[test]
    fn garbage_is_not_a_cubin() {
        assert!(cubin_entries(b"not an elf").is_err());
    }
}
