//! clang's `-Rpass-analysis=kernel-resource-usage` remarks: what the AMDGPU backend says of each
//! function it compiled. Tests hold the code-object reader (and the occupancy model of
//! `rocm-occupancy`) against them, so there is one parser for both.
//!
//! LLVM prints one remark per line and field (`AMDGPUAsmPrinter::emitResourceUsageRemarks`):
//!
//! ```text
//! k.hip:3:1: remark: Function Name: k [-Rpass-analysis=kernel-resource-usage]
//! k.hip:3:1: remark:     SGPRs: 10 [-Rpass-analysis=kernel-resource-usage]
//! k.hip:3:1: remark:     VGPRs: 2 [...]
//! k.hip:3:1: remark:     AGPRs: 0 [...]            (targets with AGPRs only)
//! k.hip:3:1: remark:     ScratchSize [bytes/lane]: 0 [...]
//! k.hip:3:1: remark:     Dynamic Stack: False [...]
//! k.hip:3:1: remark:     Occupancy [waves/SIMD]: 8 [...]
//! k.hip:3:1: remark:     SGPRs Spill: 0 [...]
//! k.hip:3:1: remark:     VGPRs Spill: 0 [...]
//! k.hip:3:1: remark:     LDS Size [bytes/block]: 0 [...]   (kernels only)
//! ```
//!
//! "SGPRs" includes VCC, FLAT_SCRATCH and XNACK_MASK (LLVM 20 calls it "TotalSGPRs"); "VGPRs" is
//! the architected VGPRs only, "AGPRs" the accumulation registers.

/// The fields of one function's remarks; `None` where the compiler printed none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceRemark {
    /// The function (kernel) name, as in the object's symbol table.
    pub function: String,
    /// "SGPRs" / "TotalSGPRs".
    pub sgprs: Option<u32>,
    /// "VGPRs" (architected only).
    pub vgprs: Option<u32>,
    /// "AGPRs".
    pub agprs: Option<u32>,
    /// "ScratchSize [bytes/lane]".
    pub scratch_size: Option<u32>,
    /// "Dynamic Stack".
    pub dynamic_stack: Option<bool>,
    /// "Occupancy [waves/SIMD]".
    pub occupancy: Option<u32>,
    /// "SGPRs Spill".
    pub sgpr_spill: Option<u32>,
    /// "VGPRs Spill".
    pub vgpr_spill: Option<u32>,
    /// "LDS Size [bytes/block]".
    pub lds_size: Option<u32>,
}

/// Every `kernel-resource-usage` remark block in a compiler's stderr, in order. Lines that are
/// not such remarks are skipped; a field before any "Function Name" is ignored.
pub fn parse_resource_usage_remarks(text: &str) -> Vec<ResourceRemark> {
    let mut out: Vec<ResourceRemark> = Vec::new();
    for line in text.lines() {
        if !line.contains("kernel-resource-usage") {
            continue;
        }
        let Some((_, body)) = line.split_once("remark:") else {
            continue;
        };
        let body = body.rfind(" [-Rpass").map_or(body, |i| &body[..i]).trim();
        let Some((key, value)) = body.split_once(": ") else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if key == "Function Name" {
            out.push(ResourceRemark {
                function: value.to_owned(),
                ..ResourceRemark::default()
            });
            continue;
        }
        let Some(current) = out.last_mut() else {
            continue;
        };
        let number = value.parse::<u32>().ok();
        match key {
            "SGPRs" | "TotalSGPRs" => current.sgprs = number,
            "VGPRs" => current.vgprs = number,
            "AGPRs" => current.agprs = number,
            "ScratchSize [bytes/lane]" => current.scratch_size = number,
            "Dynamic Stack" => current.dynamic_stack = Some(value.eq_ignore_ascii_case("true")),
            "Occupancy [waves/SIMD]" => current.occupancy = number,
            "SGPRs Spill" => current.sgpr_spill = number,
            "VGPRs Spill" => current.vgpr_spill = number,
            "LDS Size [bytes/block]" => current.lds_size = number,
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_split_at_function_names() {
        let t = "a.hip:2:1: remark: Function Name: k1 [-Rpass-analysis=kernel-resource-usage]\n\
                 a.hip:2:1: remark:     SGPRs: 65 [-Rpass-analysis=kernel-resource-usage]\n\
                 a.hip:2:1: remark:     VGPRs: 100 [-Rpass-analysis=kernel-resource-usage]\n\
                 a.hip:2:1: remark:     Dynamic Stack: False [-Rpass-analysis=kernel-resource-usage]\n\
                 a.hip:2:1: remark:     Occupancy [waves/SIMD]: 3 [-Rpass-analysis=kernel-resource-usage]\n\
                 noise\n\
                 a.hip:7:1: remark: Function Name: k2 [-Rpass-analysis=kernel-resource-usage]\n\
                 a.hip:7:1: remark:     TotalSGPRs: 12 [-Rpass-analysis=kernel-resource-usage]\n\
                 a.hip:7:1: remark:     LDS Size [bytes/block]: 12000 [-Rpass-analysis=kernel-resource-usage]\n";
        let r = parse_resource_usage_remarks(t);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].function, "k1");
        assert_eq!(
            (r[0].sgprs, r[0].vgprs, r[0].occupancy),
            (Some(65), Some(100), Some(3))
        );
        assert_eq!(r[0].dynamic_stack, Some(false));
        assert_eq!(
            (r[1].function.as_str(), r[1].sgprs, r[1].lds_size),
            ("k2", Some(12), Some(12000))
        );
        assert!(parse_resource_usage_remarks(
            "a.hip:1:1: remark:     VGPRs: 3 [-Rpass-analysis=kernel-resource-usage]"
        )
        .is_empty());
    }
}
