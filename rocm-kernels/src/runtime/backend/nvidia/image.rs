//! Which of a library's NVIDIA images fits a device (the kernels each holds are in the library's
//! table, read by the build).

use crate::library::{Backend, CodeObject, ObjectFormat};

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
pub(crate) fn fitness(object: &CodeObject, cc: (u32, u32)) -> Option<u32> {
    if object.backend != Backend::Nvidia {
        return None;
    }
    match object.format {
        ObjectFormat::Cubin => {
            let arch = parse_arch(object.target)?;
            let specific = object.target.ends_with('a');
            if arch == cc {
                Some(400)
            } else if !specific && arch.0 == cc.0 && arch.1 <= cc.1 {
                Some(300 + arch.1)
            } else {
                None
            }
        }
        ObjectFormat::Ptx => {
            let arch = parse_arch(object.target)?;
            (arch <= cc).then_some(200 + arch.0 * 10 + arch.1)
        }
        ObjectFormat::CudaSource => Some(100),
        ObjectFormat::AmdgpuElf => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(format: &'static str, target: &'static str) -> CodeObject {
        CodeObject {
            backend: Backend::Nvidia,
            format: match format {
                "cubin" => ObjectFormat::Cubin,
                "ptx" => ObjectFormat::Ptx,
                _ => ObjectFormat::CudaSource,
            },
            target,
            source: "k.hip",
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
}
