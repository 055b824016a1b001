//! Theoretical occupancy of AMD GPU kernels (waves per SIMD, LLVM's "waves per EU") and what
//! limits it, from the resource usage in their code objects, with the rules of LLVM's AMDGPU
//! backend (LLVM 19: the compiler whose `-Rpass-analysis=kernel-resource-usage` remark
//! "Occupancy [waves/SIMD]" the model is checked against, `scripts/occupancy-compare.sh`).
//!
//! ```
//! use rocm_occupancy::{occupancy, KernelResources, Limiter, Target};
//!
//! let gfx90a = Target::new("gfx90a").unwrap();
//! let k = KernelResources { vgpr_count: 128, sgpr_count: 20, ..Default::default() };
//! let occ = occupancy(&gfx90a, &k).unwrap();
//! assert_eq!(occ.waves_per_simd, 4); // 512 / 128
//! assert_eq!(occ.limiter, Limiter::Vgprs);
//! ```
//!
//! The inputs of a real kernel come from its code object: [`kernel_resources`] turns what
//! `rocm-code-object` reads (metadata and kernel descriptor) into [`KernelResources`], and
//! [`code_object_occupancy`] does it for every kernel of a code object. [`corpus`] is the
//! generator and comparison harness that holds the model against clang. The rules, per
//! generation, are in `docs/profile.md`.

#![forbid(unsafe_code)]

pub mod corpus;
mod model;
mod resources;
mod target;

pub use model::{
    occupancy, waves_with_sgprs, waves_with_vgprs, KernelResources, Limiter, Limits, Occupancy,
};
pub use resources::{code_object_occupancy, descriptor_vgprs, kernel_resources, KernelOccupancy};
pub use target::{Generation, Processor, Target, WaveSize, WorkgroupMode, PROCESSORS};

/// Everything that can go wrong; the crate never panics on bad input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The processor name is not in [`PROCESSORS`].
    #[error("unknown AMDGPU processor `{0}`: the occupancy model knows {known}", known = known_processors())]
    UnknownProcessor(String),
    /// A target-id feature other than `xnack±`/`sramecc±`, or one the processor lacks.
    #[error("invalid target feature `{0}`: only xnack and sramecc, where the processor has them")]
    InvalidTargetFeature(String),
    /// Wave32 asked for on a processor before gfx10.
    #[error("{0} has no wave32 mode (wave32 exists from gfx10 on)")]
    Wave32Unsupported(&'static str),
    /// WGP mode asked for on a processor before gfx10.
    #[error("{0} has no WGP mode (work-group processors exist from gfx10 on)")]
    WgpModeUnsupported(&'static str),
    /// A wavefront size other than 32 or 64.
    #[error("invalid wavefront size {0}: AMD GPUs run waves of 32 or 64 lanes")]
    InvalidWavefrontSize(u32),
    /// A workgroup size outside 1..=1024.
    #[error("invalid workgroup size {0}: it must be 1..=1024 work-items")]
    InvalidWorkgroupSize(u32),
    /// The code object could not be read.
    #[error("invalid code object: {0}")]
    InvalidCodeObject(String),
}

fn known_processors() -> String {
    PROCESSORS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occ(t: &str, k: KernelResources) -> Occupancy {
        occupancy(&Target::new(t).unwrap(), &k).unwrap()
    }

    fn k(vgpr: u32, agpr: u32, sgpr: u32, lds: u32, wg: u32) -> KernelResources {
        KernelResources {
            vgpr_count: vgpr,
            agpr_count: agpr,
            sgpr_count: sgpr,
            group_segment_fixed_size: lds,
            max_flat_workgroup_size: wg,
            ..Default::default()
        }
    }

    #[test]
    fn gfx90a_vgprs() {
        // 512 / 128 = 4.
        let o = occ("gfx90a", k(128, 0, 16, 0, 256));
        assert_eq!((o.waves_per_simd, o.limiter), (4, Limiter::Vgprs));
        // 64 VGPRs + 64 AGPRs: .vgpr_count = 64 + 64 = 128 -> 4, the unified file limits.
        let t = Target::new("gfx90a").unwrap();
        assert_eq!(t.total_vgpr_count(64, 64), 128);
        let o = occ("gfx90a", k(128, 64, 16, 0, 256));
        assert_eq!((o.waves_per_simd, o.limiter), (4, Limiter::UnifiedVgprAgpr));
        // AGPRs start at accum_offset, the VGPRs rounded up to 4:
        // 65 VGPRs + 64 AGPRs = 68 + 64 = 132 -> granule 8 -> 136 -> 3 waves.
        assert_eq!(t.total_vgpr_count(65, 64), 132);
        assert_eq!(occ("gfx90a", k(132, 64, 16, 0, 256)).waves_per_simd, 3);
        // Few registers: the hardware's 8 waves.
        let o = occ("gfx942", k(8, 0, 16, 0, 256));
        assert_eq!((o.waves_per_simd, o.limiter), (8, Limiter::HardwareMax));
    }

    #[test]
    fn gfx908_separate_agprs() {
        let t = Target::new("gfx908").unwrap();
        assert_eq!(t.total_vgpr_count(64, 100), 100);
        // 100 -> granule 4 -> 100 -> 256/100 = 2.
        let o = occ("gfx908", k(100, 100, 16, 0, 256));
        assert_eq!((o.waves_per_simd, o.limiter), (2, Limiter::Agprs));
        assert_eq!(occ("gfx908", k(24, 0, 16, 0, 256)).waves_per_simd, 10);
    }

    #[test]
    fn gfx9_sgprs() {
        assert_eq!(occ("gfx900", k(4, 0, 80, 0, 64)).waves_per_simd, 10);
        let o = occ("gfx900", k(4, 0, 81, 0, 64));
        assert_eq!((o.waves_per_simd, o.limiter), (9, Limiter::Sgprs));
        assert_eq!(occ("gfx906", k(4, 0, 100, 0, 64)).waves_per_simd, 8);
        assert_eq!(occ("gfx906", k(4, 0, 102, 0, 64)).waves_per_simd, 7);
        // gfx90a caps at 8 anyway: only > 100 SGPRs matter.
        assert_eq!(occ("gfx90a", k(4, 0, 100, 0, 64)).waves_per_simd, 8);
        assert_eq!(occ("gfx90a", k(4, 0, 101, 0, 64)).waves_per_simd, 7);
        // gfx7 table.
        assert_eq!(occ("gfx700", k(4, 0, 57, 0, 64)).waves_per_simd, 8);
        // gfx10+: SGPRs never limit.
        let o = occ("gfx1030", k(4, 0, 106, 0, 64));
        assert_eq!((o.waves_per_simd, o.limits.sgprs), (16, None));
    }

    #[test]
    fn gfx10_plus_vgpr_files() {
        let w64 = |t: &str| {
            Target::new(t)
                .unwrap()
                .with_wave_size(WaveSize::Wave64)
                .unwrap()
        };
        // gfx1030 wave32: granule 16, 1024 regs -> 100 -> 112 -> 9.
        assert_eq!(occ("gfx1030", k(100, 0, 8, 0, 256)).waves_per_simd, 9);
        // gfx1100 wave32: granule 24, 1536 regs -> 100 -> 120 -> 12.
        assert_eq!(occ("gfx1100", k(100, 0, 8, 0, 256)).waves_per_simd, 12);
        // gfx1102 has the small file.
        assert_eq!(occ("gfx1102", k(100, 0, 8, 0, 256)).waves_per_simd, 9);
        // wave64: granule 8 / 512 (gfx1030), 12 / 768 (gfx1100).
        let kk = k(100, 0, 8, 0, 256);
        assert_eq!(occupancy(&w64("gfx1030"), &kk).unwrap().waves_per_simd, 4);
        assert_eq!(occupancy(&w64("gfx1100"), &kk).unwrap().waves_per_simd, 7);
        // gfx1010: 20 waves, granule 8 (wave32).
        assert_eq!(occ("gfx1010", k(8, 0, 8, 0, 32)).waves_per_simd, 20);
        // two-wave groups: 32 barriers * 2 waves / 4 SIMDs = 16.
        assert_eq!(occ("gfx1010", k(8, 0, 8, 0, 64)).waves_per_simd, 16);
        assert_eq!(occ("gfx1010", k(9, 0, 8, 0, 32)).waves_per_simd, 20);
        assert_eq!(occ("gfx1010", k(64, 0, 8, 0, 32)).waves_per_simd, 16);
    }

    #[test]
    fn workgroup_lds_and_barriers() {
        // gfx1030 wave32, 1024 work-items (32 waves), 64 KiB LDS, WGP mode:
        // 128 KiB / 64 KiB = 2 groups; wave slots 64 / 32 = 2 -> 64 waves / 4 SIMDs = 16.
        let o = occ("gfx1030", k(16, 0, 8, 65536, 1024));
        assert_eq!(o.waves_per_simd, 16);
        assert_eq!(o.workgroups_per_cu, 2);
        // Same in CU mode: 1 group of 32 waves over 2 SIMDs = 16.
        let cu = Target::new("gfx1030")
            .unwrap()
            .with_mode(WorkgroupMode::Cu)
            .unwrap();
        let o = occupancy(&cu, &k(16, 0, 8, 65536, 1024)).unwrap();
        assert_eq!((o.waves_per_simd, o.workgroups_per_cu), (16, 1));
        // gfx90a, 1024 work-items, 12000 B LDS: 5 groups by LDS, 2 by wave slots -> 8.
        assert_eq!(occ("gfx90a", k(2, 0, 10, 12000, 1024)).waves_per_simd, 8);
        // gfx90a, 768 work-items (12 waves): 32 slots / 12 = 2 groups -> 24 / 4 = 6.
        let o = occ("gfx90a", k(2, 0, 10, 0, 768));
        assert_eq!((o.waves_per_simd, o.limiter), (6, Limiter::WorkgroupSize));
        // gfx90a, 128 work-items (2 waves) with 16 KiB LDS: 4 groups -> 8 waves / 4 = 2.
        let o = occ("gfx90a", k(2, 0, 10, 16384, 128));
        assert_eq!((o.waves_per_simd, o.limiter), (2, Limiter::Lds));
        // gfx900, 128 work-items, no LDS: 16 barriers -> 32 waves / 4 = 8 < 10.
        let o = occ("gfx900", k(4, 0, 10, 0, 128));
        assert_eq!((o.waves_per_simd, o.limiter), (8, Limiter::Barriers));
        // ... single-wave workgroups need no barrier.
        assert_eq!(occ("gfx900", k(4, 0, 10, 0, 64)).waves_per_simd, 10);
        // gfx1030 wave32 64 work-items in WGP mode: 32 barriers * 2 waves / 4 = 16.
        assert_eq!(occ("gfx1030", k(4, 0, 10, 0, 64)).waves_per_simd, 16);
        // LDS larger than the CU's: LLVM answers 1.
        assert_eq!(occ("gfx900", k(4, 0, 10, 70000, 64)).waves_per_simd, 1);
    }

    #[test]
    fn dynamic_lds_adds_to_static() {
        let mut kk = k(4, 0, 10, 8192, 256);
        let before = occ("gfx90a", kk).waves_per_simd;
        kk.dynamic_lds_size = 24576;
        let after = occ("gfx90a", kk);
        assert!(after.waves_per_simd < before);
        assert_eq!(after.lds_per_workgroup, 32768);
    }

    #[test]
    fn errors_not_panics() {
        assert!(matches!(
            Target::new("gfx9999"),
            Err(Error::UnknownProcessor(_))
        ));
        assert!(matches!(Target::new(""), Err(Error::UnknownProcessor(_))));
        assert!(Target::new("gfx90a:foo+").is_err());
        assert!(Target::new("gfx1030:xnack+").is_err());
        assert!(Target::new("gfx90a")
            .unwrap()
            .with_wave_size(WaveSize::Wave32)
            .is_err());
        assert!(Target::new("gfx90a")
            .unwrap()
            .with_mode(WorkgroupMode::Wgp)
            .is_err());
        let t = Target::new("gfx90a").unwrap();
        assert!(occupancy(&t, &k(1, 0, 1, 0, 0)).is_err());
        assert!(occupancy(&t, &k(1, 0, 1, 0, 2048)).is_err());
        let mut kk = k(1, 0, 1, 0, 64);
        kk.wavefront_size = 16;
        assert!(occupancy(&t, &kk).is_err());
        // Extremes do not overflow.
        let o = occupancy(&t, &k(u32::MAX, u32::MAX, u32::MAX, u32::MAX, 1024)).unwrap();
        assert_eq!(o.waves_per_simd, 1);
    }

    #[test]
    fn target_ids() {
        let t = Target::new("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-").unwrap();
        assert_eq!(
            (t.name(), t.xnack(), t.sramecc()),
            ("gfx90a", Some(false), Some(true))
        );
        assert_eq!(
            Target::new("GFX1100").unwrap().wave_size(),
            WaveSize::Wave32
        );
        assert_eq!(
            Target::new("gfx950").unwrap().lds_bytes_per_cu(),
            160 * 1024
        );
        assert_eq!(
            Target::new("gfx1030").unwrap().lds_bytes_per_cu(),
            128 * 1024
        );
        assert_eq!(Target::new("gfx600").unwrap().lds_bytes_per_cu(), 32 * 1024);
        assert_eq!(Target::new("gfx90a").unwrap().max_vgprs_for_waves(4), 128);
        assert_eq!(Target::new("gfx1100").unwrap().max_vgprs_for_waves(12), 120);
    }
}
