//! Real-world HIP shapes through the check builder (tests/fixtures/realworld): templates and their
//! instantiations, by-value structs and vector types, __constant__ and __device__ variables,
//! wave-size-aware references, a check limited to wave 32, printf output, lengths from two sizes,
//! zero-initialised accumulators and cooperative groups all pass in every cpu mode at waves 32
//! and 64.

use crate::harness_common;

use harness_common::*;

#[testkit::test(needs = [CXX])]
fn real_world_shapes_pass_in_every_mode() {
    let fixture = repo().join("tests/fixtures/realworld");
    copy_lock(&fixture);
    let manifest = fixture.join("Cargo.toml");
    for mode in [
        &[][..],
        &["--race-check=all"],
        &["--no-race-check", "--cpu-exec", "fibers"],
        &["--no-race-check", "--cpu-exec", "blocks"],
    ] {
        let mut args = vec![
            "test",
            "--manifest-path",
            manifest.to_str().unwrap(),
            "--backend",
            "cpu",
        ];
        args.extend_from_slice(mode);
        let out = cargo_rocm(&args, &fixture);
        let (stdout, stderr) = text(&out);
        let all = format!("{stdout}{stderr}");
        assert_eq!(out.status.code(), Some(0), "{mode:?}\n{all}");
        assert!(
            all.contains("32 trials: 31 passed, 0 failed, 1 skipped"),
            "{mode:?}\n{all}"
        );
        // The one skip says why.
        assert!(
            all.contains("check `warp32_sums` is for waves of 32 lanes; cpu/w64 runs waves of 64"),
            "{all}"
        );
    }
}
