//! `EF_AMDGPU_MACH_*` values of the ELF header's `e_flags`, from LLVM's
//! `llvm/BinaryFormat/ELF.h` (LLVM 19) and the AMDGPU ABI docs (AMDGPUUsage, "ELF Header").

/// `(mach, processor)` for every AMDGCN processor LLVM 19 knows.
const MACHS: &[(u32, &str)] = &[
    (0x020, "gfx600"),
    (0x021, "gfx601"),
    (0x022, "gfx700"),
    (0x023, "gfx701"),
    (0x024, "gfx702"),
    (0x025, "gfx703"),
    (0x026, "gfx704"),
    (0x028, "gfx801"),
    (0x029, "gfx802"),
    (0x02a, "gfx803"),
    (0x02b, "gfx810"),
    (0x02c, "gfx900"),
    (0x02d, "gfx902"),
    (0x02e, "gfx904"),
    (0x02f, "gfx906"),
    (0x030, "gfx908"),
    (0x031, "gfx909"),
    (0x032, "gfx90c"),
    (0x033, "gfx1010"),
    (0x034, "gfx1011"),
    (0x035, "gfx1012"),
    (0x036, "gfx1030"),
    (0x037, "gfx1031"),
    (0x038, "gfx1032"),
    (0x039, "gfx1033"),
    (0x03a, "gfx602"),
    (0x03b, "gfx705"),
    (0x03c, "gfx805"),
    (0x03d, "gfx1035"),
    (0x03e, "gfx1034"),
    (0x03f, "gfx90a"),
    (0x040, "gfx940"),
    (0x041, "gfx1100"),
    (0x042, "gfx1013"),
    (0x043, "gfx1150"),
    (0x044, "gfx1103"),
    (0x045, "gfx1036"),
    (0x046, "gfx1101"),
    (0x047, "gfx1102"),
    (0x048, "gfx1200"),
    (0x04a, "gfx1151"),
    (0x04b, "gfx941"),
    (0x04c, "gfx942"),
    (0x04e, "gfx1201"),
    (0x051, "gfx9-generic"),
    (0x052, "gfx10-1-generic"),
    (0x053, "gfx10-3-generic"),
    (0x054, "gfx11-generic"),
    (0x055, "gfx1152"),
    (0x059, "gfx12-generic"),
];

/// The processor name of an `EF_AMDGPU_MACH_*` value, `None` when unknown to this table.
pub fn processor_name(mach: u32) -> Option<&'static str> {
    MACHS
        .iter()
        .find(|(m, _)| *m == mach)
        .map(|(_, name)| *name)
}

/// The `EF_AMDGPU_MACH_*` value of a processor name.
pub fn mach_of(processor: &str) -> Option<u32> {
    MACHS
        .iter()
        .find(|(_, name)| *name == processor)
        .map(|(m, _)| *m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_targets_map_both_ways() {
        assert_eq!(processor_name(0x03f), Some("gfx90a"));
        assert_eq!(processor_name(0x036), Some("gfx1030"));
        assert_eq!(processor_name(0x04c), Some("gfx942"));
        assert_eq!(processor_name(0x0ff), None);
        for (mach, name) in MACHS {
            assert_eq!(mach_of(name), Some(*mach));
        }
    }
}
