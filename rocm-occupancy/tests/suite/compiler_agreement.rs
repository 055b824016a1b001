//! The model against the compiler: hand-computed occupancies checked three ways (the value
//! worked out by hand, the model fed from the code object, clang's remark), and a small random
//! corpus on the processors `cargo rocm profile` is asked about. The full corpus over every
//! processor is `scripts/occupancy-compare.sh` (docs/benchmarks.md has its table).

use std::path::PathBuf;

use rocm_occupancy::corpus::{
    analyse, clang_version, compile, hip_source, unit_kernels, Config, KernelSpec,
};
use testkit::needs;

const CLANG: &str = "clang++-19";

fn cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("occupancy-corpus")
}

fn spec(name: &str, vgprs: u32, agprs: u32, sgprs: u32, lds: u32, lb: u32) -> KernelSpec {
    KernelSpec {
        name: name.into(),
        vgprs,
        agprs,
        sgprs,
        vcc: sgprs > 0,
        lds,
        launch_bounds: Some(lb),
        barrier: name.starts_with("bar"),
        ..KernelSpec::default()
    }
}

fn kernels() -> Vec<KernelSpec> {
    vec![
        spec("v128_lb256", 128, 0, 0, 0, 256),
        spec("v64_a64_lb256", 64, 64, 0, 0, 256),
        spec("v65_a64_lb256", 65, 64, 0, 0, 256),
        spec("lds64k_lb1024", 16, 0, 0, 65536, 1024),
        spec("lb768", 0, 0, 0, 0, 768),
        spec("lds16k_lb128", 0, 0, 0, 16384, 128),
        spec("lb64", 0, 0, 0, 0, 64),
        spec("bar_lb128", 0, 0, 0, 0, 128),
        spec("s81_vcc_lb64", 0, 0, 81, 0, 64),
        spec("v100_lb256", 100, 0, 0, 0, 256),
    ]
}

/// (offload arch, wave64, cumode, [(kernel, expected waves/SIMD)]).
type Case = (&'static str, bool, bool, &'static [(&'static str, u32)]);

const CASES: &[Case] = &[
    // 512-entry unified VGPR/AGPR file, granule 8, 8 waves at most.
    (
        "gfx90a",
        false,
        false,
        &[
            ("v128_lb256", 4),    // 512 / 128
            ("v64_a64_lb256", 4), // 64 + 64 = 128
            ("v65_a64_lb256", 3), // align4(65) + 64 = 132 -> 136 -> 3
            ("lds64k_lb1024", 4), // 1 group of 16 waves over 4 SIMDs
            ("lb768", 6),         // 32 wave slots / 12 = 2 groups -> 24 / 4
            ("lds16k_lb128", 2),  // 4 groups of 2 waves -> 8 / 4
            ("lb64", 8),
        ],
    ),
    (
        "gfx942",
        false,
        false,
        &[("v128_lb256", 4), ("v65_a64_lb256", 3), ("lb64", 8)],
    ),
    // Separate AGPR file: the larger count decides.
    (
        "gfx908",
        false,
        false,
        &[("v64_a64_lb256", 4), ("v128_lb256", 2), ("lb64", 10)],
    ),
    // 10 waves, the SGPR table, 16 barriers.
    (
        "gfx900",
        false,
        false,
        &[
            ("bar_lb128", 8),    // 16 barriers * 2 waves / 4 SIMDs
            ("lb64", 10),        // single-wave groups need no barrier
            ("s81_vcc_lb64", 9), // 81 + VCC + XNACK = 85 SGPRs -> 9
            ("lds64k_lb1024", 4),
        ],
    ),
    ("gfx900:xnack-", false, false, &[("s81_vcc_lb64", 9)]), // 81 + 2 = 83 -> 9
    // gfx10.3 wave32, WGP mode: 128 KiB LDS per WGP, 32 barriers.
    (
        "gfx1030",
        false,
        false,
        &[("lds64k_lb1024", 16), ("v100_lb256", 9), ("lb64", 16)],
    ),
    (
        "gfx1030",
        false,
        true,
        &[("lds64k_lb1024", 16), ("lb64", 16)],
    ), // CU mode: 1 group / 2 SIMDs
    (
        "gfx1030",
        true,
        false,
        &[("lds64k_lb1024", 8), ("v100_lb256", 4)],
    ), // wave64: 104 -> 512/104
    // gfx11 with the 1.5x VGPR file (and gfx1102 without), gfx12.
    ("gfx1100", false, false, &[("v100_lb256", 12)]), // granule 24: 120 -> 1536 / 120
    ("gfx1100", true, false, &[("v100_lb256", 7)]),   // granule 12: 108 -> 768 / 108
    ("gfx1151", false, false, &[("v100_lb256", 12)]),
    ("gfx1102", false, false, &[("v100_lb256", 9)]),
    ("gfx1200", false, false, &[("v100_lb256", 12)]),
    ("gfx1201", false, false, &[("v100_lb256", 12)]),
];

#[testkit::test(needs = [needs::CLANG_19, needs::LLD_19])]
fn hand_computed_cases_match_model_and_compiler() {
    let version = clang_version(CLANG).expect("clang runs (the test's needs say so)");
    for &(arch, wave64, cumode, expect) in CASES {
        let cfg = Config::new(arch, wave64, cumode).unwrap();
        let ks: Vec<KernelSpec> = kernels()
            .into_iter()
            .filter(|k| k.agprs == 0 || cfg.processor.has_agprs())
            .collect();
        let compiled = compile(CLANG, &version, &hip_source(&ks), &cfg.flags(), &cache())
            .unwrap_or_else(|e| panic!("{e}"));
        let outcomes = analyse(&compiled, &cfg).unwrap();
        for &(kernel, want) in expect {
            let o = outcomes.iter().find(|o| o.kernel == kernel).unwrap();
            let label = format!("{} {kernel}", cfg.label());
            assert!(
                o.inconsistencies.is_empty(),
                "{label}: {:?}",
                o.inconsistencies
            );
            assert_eq!(o.remark.occupancy, Some(want), "{label}: compiler");
            assert_eq!(o.model.as_ref().map(|m| m.0), Ok(want), "{label}: model");
        }
    }
}

/// 24 random kernels plus the hand-picked ones per configuration, on the processors the issue
/// names (in every wave size and mode): every one must agree, and every cross-check hold.
#[testkit::test(needs = [needs::CLANG_19, needs::LLD_19])]
fn random_corpus_agrees_on_the_named_processors() {
    let version = clang_version(CLANG).expect("clang runs (the test's needs say so)");
    let named: Vec<String> = [
        "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1151", "gfx1200", "gfx1201",
    ]
    .map(String::from)
    .to_vec();
    let mut checked = 0;
    for cfg in rocm_occupancy::corpus::configs(19, &named) {
        let ks = unit_kernels(&cfg, 24, 0x5eed_0cc0).unwrap();
        let compiled = compile(CLANG, &version, &hip_source(&ks), &cfg.flags(), &cache())
            .unwrap_or_else(|e| panic!("{e}"));
        for o in analyse(&compiled, &cfg).unwrap() {
            assert!(
                o.agrees() && o.inconsistencies.is_empty(),
                "{} {}: remark {:?}, model {:?}, {:?}",
                cfg.label(),
                o.kernel,
                o.remark.occupancy,
                o.model,
                o.inconsistencies
            );
            checked += 1;
        }
    }
    assert!(checked > 500, "{checked}");
}
