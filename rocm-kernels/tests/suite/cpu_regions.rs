//! The cpu backend's region form against its per-thread fibers: every kernel of
//! tests/corpus/kernels/shapes.hip (shapes the rewrite in `rocm-cpu-frontend/src/region.rs`
//! has to handle) runs in region form (waves, and whole blocks) and with fibers at both wave
//! sizes, and the results must be identical bit for bit. (That a region form which does not
//! compile costs only its own kernel its region form is tested where the build is:
//! rocm-kernels-build's tests/suite/cpu_fallback.rs.)

use rocm_kernels::runtime::{CpuExec, CpuOptions, Device, Dim3, LaunchConfig, Module};
use rocm_kernels::KernelLibrary;
use rocm_kernels_corpus::{SHAPES, SHAPES_EXECUTION};

fn module(wave_size: u32, exec: CpuExec) -> Module {
    module_of(SHAPES, wave_size, exec)
}

fn module_of(library: &'static KernelLibrary, wave_size: u32, exec: CpuExec) -> Module {
    Device::cpu(CpuOptions {
        wave_size,
        threads: 2,
        exec,
        ..CpuOptions::default()
    })
    .load(library)
    .expect("load a corpus library")
}

const N: usize = 4096;

fn run(m: &Module, kernel: &str, grid: u32, block: Dim3, shared: u32) -> Vec<u32> {
    let d = m.device();
    let input: Vec<f32> = (0..N).map(|i| (i % 11) as f32 * 0.5).collect();
    let inb = d.upload(&input).unwrap();
    let mut out = d.upload(&vec![-7.0f32; N]).unwrap();
    let mut config = LaunchConfig::new(grid, block);
    config.shared_bytes = shared;
    m.kernel(kernel)
        .unwrap()
        .launch(config)
        .arg(&inb)
        .arg(&mut out)
        .arg(&(N as i32))
        .run(&d.stream().unwrap())
        .unwrap_or_else(|e| panic!("{kernel}: {e}"));
    out.to_vec().unwrap().iter().map(|v| v.to_bits()).collect()
}

#[testkit::test]
fn every_shape_has_a_region_form() {
    for (kernel, how) in SHAPES_EXECUTION {
        assert_eq!(*how, "regions", "{kernel}");
    }
}

#[testkit::test]
fn region_form_matches_fibers_on_every_shape() {
    let cases: &[(&str, u32, Dim3, u32)] = &[
        ("shape_locals", 4, Dim3::new(256, 1, 1), 0),
        ("shape_loops", 5, Dim3::new(256, 1, 1), 0),
        ("shape_branches", 4, Dim3::new(256, 1, 1), 0),
        ("shape_params_3d", 3, Dim3::new(8, 4, 2), 0),
        ("shape_dynamic", 3, Dim3::new(64, 1, 1), 64 * 4),
        ("shape_template<float, 128>", 3, Dim3::new(128, 1, 1), 0),
        ("shape_template_helper", 4, Dim3::new(256, 1, 1), 0),
    ];
    for wave in [32, 64] {
        let fibers = module(wave, CpuExec::Fibers);
        for exec in [CpuExec::Regions, CpuExec::Blocks] {
            let regions = module(wave, exec);
            for &(kernel, grid, block, shared) in cases {
                let a = run(&regions, kernel, grid, block, shared);
                let b = run(&fibers, kernel, grid, block, shared);
                let written = a.iter().filter(|&&v| v != (-7.0f32).to_bits()).count();
                assert!(written > 0, "{kernel} wrote nothing");
                if let Some(i) = (0..N).find(|&i| a[i] != b[i]) {
                    panic!(
                        "{kernel} at wave {wave}: element {i} is {} with {exec:?}, {} with fibers",
                        f32::from_bits(a[i]),
                        f32::from_bits(b[i])
                    );
                }
            }
        }
    }
}

/// A local reached through a pointer (`reinterpret_cast<float2 *>(&v)`) after the lane loop that
/// declared it keeps its per-lane slot (the region form left it a local of that loop, which the
/// pointer then outlived): `shape_type_pun` copies, in region form as with fibers. And a value
/// written through a pointer of another type is seen through the first (the cpu build turns the
/// host compiler's strict-aliasing rule off): `shape_half_pun` copies.
#[testkit::test]
fn type_punned_writes_are_kept() {
    for (kernel, exec) in [
        ("shape_type_pun", CpuExec::Fibers),
        ("shape_type_pun", CpuExec::Regions),
        ("shape_half_pun", CpuExec::Fibers),
        ("shape_half_pun", CpuExec::Regions),
    ] {
        let m = module(32, exec);
        let got = run(&m, kernel, 4, Dim3::new(256, 1, 1), 0);
        let want: Vec<u32> = (0..N).map(|i| ((i % 11) as f32 * 0.5).to_bits()).collect();
        let bad = (0..N).filter(|&i| got[i] != want[i]).count();
        assert_eq!(
            bad,
            0,
            "{kernel} {exec:?}: {bad} differ, first {:?}",
            (0..N).find(|&i| got[i] != want[i]).map(|i| (
                i,
                f32::from_bits(got[i]),
                f32::from_bits(want[i])
            ))
        );
    }
}
