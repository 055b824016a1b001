//! `code_object` against real compiler output: what the parser reads from the AMDGPU metadata
//! note must equal what clang itself reports with `-Rpass-analysis=kernel-resource-usage`, per
//! kernel and per target; and every container clang writes (plain bundle, compressed bundle,
//! raw ELF, host object with `.hip_fatbin`) must parse to the same code objects.
//!
//! Needs `clang++-19` (or `$ROCM_KERNELS_TEST_CLANG`); without it the tests print why and pass.

use testkit::needs;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use rocm_code_object::remarks::{parse_resource_usage_remarks, ResourceRemark};
use rocm_code_object::{Container, FeatureMode, KernelMetadata};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/resource_usage.hip"
);
const KERNELS: [&str; 5] = [
    "axpy",
    "_Z9block_sumPKfPf",
    "_Z8pressurePKfPf",
    "_Z6spillsPKfPfi",
    "uses_agprs",
];

/// The HIP-capable clang to test with: `ROCM_KERNELS_TEST_CLANG`, else the first of clang++-19
/// and ROCm's clang that runs.
fn find_clang() -> Result<PathBuf, String> {
    let candidates: Vec<PathBuf> = match std::env::var_os("ROCM_KERNELS_TEST_CLANG") {
        Some(c) => vec![c.into()],
        None => [
            "clang++-19",
            "/opt/rocm/lib/llvm/bin/clang++",
            "/opt/rocm/llvm/bin/clang++",
        ]
        .iter()
        .map(PathBuf::from)
        .collect(),
    };
    candidates
        .iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .cloned()
        .ok_or_else(|| format!("none of {candidates:?} runs (or set ROCM_KERNELS_TEST_CLANG)"))
}

fn clang() -> PathBuf {
    find_clang().expect("the test's needs say a clang runs")
}

/// A clang that compiles HIP device code into offload bundles.
const HIP_CLANG: testkit::Need = testkit::Need::all(
    "a HIP-capable clang with its offload bundler",
    "apt-get install clang-19 clang-tools-19",
    &[
        testkit::Need::check(
            "a HIP-capable clang",
            "apt-get install clang-19",
            testkit::Kind::Tool,
            || find_clang().map(|_| ()),
        ),
        needs::CLANG_TOOLS_19,
    ],
);

/// Compile `source` for the device; `extra` adds flags (targets, output kind). Returns the
/// output bytes and the compiler's stderr.
fn compile(clang: &Path, source: &Path, extra: &[&str], out: &Path) -> (Vec<u8>, String) {
    let output = Command::new(clang)
        .args([
            "-x",
            "hip",
            "-nogpuinc",
            "-nogpulib",
            "--cuda-device-only",
            "-O3",
            "-c",
        ])
        .args([
            "-fhip-kernel-arg-name",
            "-Rpass-analysis=kernel-resource-usage",
        ])
        .args(extra)
        .arg(source)
        .arg("-o")
        .arg(out)
        .output()
        .expect("run clang");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "clang failed:\n{stderr}");
    (std::fs::read(out).unwrap(), stderr)
}

/// The compiler's remarks by function name.
fn parse_remarks(stderr: &str) -> BTreeMap<String, ResourceRemark> {
    parse_resource_usage_remarks(stderr)
        .into_iter()
        .map(|r| (r.function.clone(), r))
        .collect()
}

/// `.vgpr_count` as the AMDGPU backend computes it from arch VGPRs and AGPRs: on targets with a
/// unified register file (gfx90a, gfx94x) AGPRs follow the arch VGPRs rounded up to 4;
/// elsewhere the two files are separate and the larger counts.
fn total_vgprs(processor: &str, arch: u32, agprs: u32) -> u32 {
    let unified = processor == "gfx90a" || processor.starts_with("gfx94");
    if unified && agprs > 0 {
        arch.div_ceil(4) * 4 + agprs
    } else {
        arch.max(agprs)
    }
}

fn assert_matches(target: &str, k: &KernelMetadata, r: &ResourceRemark) {
    let ctx = format!("{target} {}", k.name);
    assert_eq!(Some(k.sgpr_count), r.sgprs, "{ctx}: SGPRs");
    let agprs = r.agprs.unwrap_or(0);
    assert_eq!(
        k.vgpr_count,
        total_vgprs(target, r.vgprs.unwrap(), agprs),
        "{ctx}: VGPRs"
    );
    assert_eq!(k.agpr_count.unwrap_or(0), agprs, "{ctx}: AGPRs");
    assert_eq!(
        Some(k.private_segment_fixed_size),
        r.scratch_size,
        "{ctx}: scratch"
    );
    assert_eq!(Some(k.group_segment_fixed_size), r.lds_size, "{ctx}: LDS");
    assert_eq!(k.sgpr_spill_count, r.sgpr_spill, "{ctx}: SGPR spills");
    assert_eq!(k.vgpr_spill_count, r.vgpr_spill, "{ctx}: VGPR spills");
}

/// `hipcc` (ROCm's driver; on Debian ROCm 5.2 it runs that release's clang and writes code
/// object v4): `ROCM_KERNELS_TEST_HIPCC`, else `hipcc`.
fn hipcc() -> PathBuf {
    std::env::var_os("ROCM_KERNELS_TEST_HIPCC")
        .map_or_else(|| PathBuf::from("hipcc"), PathBuf::from)
}

/// Compile the fixture for one target with `hipcc --genco`.
fn compile_hipcc(hipcc: &Path, target: &str, out: &Path) -> (Vec<u8>, String) {
    let output = Command::new(hipcc)
        .args([
            "--genco",
            "-O3",
            "-fhip-kernel-arg-name",
            "-Rpass-analysis=kernel-resource-usage",
        ])
        .arg(format!("--offload-arch={target}"))
        .arg(FIXTURE)
        .arg("-o")
        .arg(out)
        .output()
        .expect("run hipcc");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "hipcc failed:\n{stderr}");
    (std::fs::read(out).unwrap(), stderr)
}

/// The fixture's bundle for one `target` and the compiler's remarks for it: every kernel's
/// metadata must equal the remarks, and the kernels must differ the way they were written to.
fn check_metadata_against_remarks(compiler: &str, target: &str, bundle: &[u8], stderr: &str) {
    let remarks = parse_remarks(stderr);
    let objects = rocm_code_object::parse(bundle).unwrap();
    let entry = objects.entry_for(target).unwrap();
    assert!(matches!(
        entry.elf().unwrap().code_object_version,
        Some(4..=6)
    ));
    let kernels = entry.kernels().unwrap();

    let mut names: Vec<_> = kernels.iter().map(|k| k.name.as_str()).collect();
    names.sort_unstable();
    let mut expected = KERNELS.to_vec();
    expected.sort_unstable();
    assert_eq!(
        names, expected,
        "{compiler} {target}: kernels in the metadata"
    );
    assert_eq!(
        remarks.len(),
        KERNELS.len(),
        "{compiler} {target}: remarks\n{stderr}"
    );

    for k in &kernels {
        assert_matches(target, k, &remarks[&k.name]);
    }

    // Every kernel has a descriptor, and it tells the hardware what the metadata tells tools.
    let descriptors = entry.kernel_descriptors().unwrap();
    assert_eq!(descriptors.len(), kernels.len(), "{compiler} {target}");
    for k in &kernels {
        let d = &descriptors[&k.symbol];
        let ctx = format!("{compiler} {target} {}", k.name);
        assert_eq!(
            d.group_segment_fixed_size, k.group_segment_fixed_size,
            "{ctx}"
        );
        assert_eq!(
            d.private_segment_fixed_size, k.private_segment_fixed_size,
            "{ctx}"
        );
        assert_eq!(d.wave32(), k.wavefront_size == 32, "{ctx}");
        if let Some(wgp) = k.workgroup_processor_mode {
            assert_eq!(d.wgp_mode(), wgp, "{ctx}");
        }
    }

    // The kernels really differ in what is compared (else the equality above is weak).
    let by_name = |n: &str| kernels.iter().find(|k| k.name == n).unwrap();
    assert_eq!(by_name("_Z9block_sumPKfPf").group_segment_fixed_size, 4096);
    assert!(
        by_name("_Z8pressurePKfPf").vgpr_count > 32,
        "{target}: pressure"
    );
    assert!(
        by_name("_Z6spillsPKfPfi").private_segment_fixed_size > 0,
        "{target}: scratch"
    );
    assert_eq!(by_name("_Z8pressurePKfPf").max_flat_workgroup_size, 64);
    let wave = if target == "gfx1030" { 32 } else { 64 };
    assert!(
        kernels.iter().all(|k| k.wavefront_size == wave),
        "{target}: wave size"
    );
    if target == "gfx90a" {
        assert_eq!(by_name("uses_agprs").agpr_count, Some(8));
    } else {
        assert!(by_name("_Z6spillsPKfPfi").vgpr_spill_count.unwrap() > 0);
        assert_eq!(by_name("uses_agprs").agpr_count, None);
    }

    // Parameters, with names from -fhip-kernel-arg-name and hidden args left out.
    let params = by_name("axpy").params();
    let summary: Vec<_> = params
        .iter()
        .map(|p| (p.name.as_str(), p.size, p.offset))
        .collect();
    assert_eq!(
        summary,
        [("a", 4, 0), ("x", 8, 8), ("y", 8, 16), ("n", 4, 24)]
    );
}

#[testkit::test(needs = [HIP_CLANG])]
fn clang_metadata_equals_compiler_resource_usage_remarks() {
    let clang = clang();
    let dir = tempfile::tempdir().unwrap();
    for target in ["gfx90a", "gfx1030"] {
        // One target per compile: the remarks do not say which target they are for.
        let out = dir.path().join(format!("{target}.hipfb"));
        let (bundle, stderr) = compile(
            &clang,
            FIXTURE.as_ref(),
            &[&format!("--offload-arch={target}")],
            &out,
        );
        check_metadata_against_remarks("clang", target, &bundle, &stderr);
    }
}

#[testkit::test(needs = [needs::AMD_HIPCC])]
fn hipcc_metadata_equals_compiler_resource_usage_remarks() {
    let hipcc = hipcc();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gfx90a.hipfb");
    let (bundle, stderr) = compile_hipcc(&hipcc, "gfx90a", &out);
    check_metadata_against_remarks("hipcc", "gfx90a", &bundle, &stderr);
}

#[testkit::test(needs = [HIP_CLANG])]
fn every_container_clang_writes_parses_to_the_same_code_objects() {
    let clang = clang();
    let dir = tempfile::tempdir().unwrap();
    // Small kernels: this test is about containers, and compiles four times.
    let source = dir.path().join("small.hip");
    std::fs::write(
        &source,
        "#define __global__ __attribute__((global))\n\
         extern \"C\" __global__ void scale(float* p, float s) { p[__builtin_amdgcn_workitem_id_x()] *= s; }\n\
         __global__ void fill(int* p, int v) { p[__builtin_amdgcn_workitem_id_x()] = v; }\n",
    )
    .unwrap();
    let arches = ["--offload-arch=gfx90a:xnack-", "--offload-arch=gfx1030"];

    let plain_path = dir.path().join("plain.hipfb");
    let (plain, _) = compile(&clang, &source, &arches, &plain_path);
    let plain = rocm_code_object::parse(&plain).unwrap();
    assert_eq!(plain.container, Container::OffloadBundle);
    let mut targets: Vec<_> = plain.gpu_entries().map(|e| e.target_string()).collect();
    targets.sort();
    assert_eq!(targets, ["gfx1030", "gfx90a:xnack-"]);
    assert_eq!(plain.entries.len(), 3, "host entry + 2 targets");

    // The ELF header agrees with the bundle id.
    let gfx90a = plain.entry_for("gfx90a").unwrap();
    let header = gfx90a.elf().unwrap();
    assert_eq!(header.processor, Some("gfx90a"));
    assert_eq!(header.xnack, FeatureMode::Off);
    assert_eq!(header.sramecc, FeatureMode::Any);
    assert_eq!(header.target_id(), gfx90a.target);
    assert!(matches!(header.code_object_version, Some(4..=6)));
    let reference = gfx90a.kernels().unwrap();
    let names: Vec<_> = reference.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["scale", "_Z4fillPii"]);

    // Compressed: the same code objects once decompressed (not byte-identical: the options
    // differ, and with them the `__hip_cuid_*` symbol).
    let (compressed, _) = compile(
        &clang,
        &source,
        &[arches[0], arches[1], "--offload-compress"],
        &dir.path().join("compressed.hipfb"),
    );
    let compressed = rocm_code_object::parse(&compressed).unwrap();
    let Container::CompressedBundle { header } = &compressed.container else {
        panic!("expected a CCOB bundle, got {:?}", compressed.container)
    };
    assert!(header.version >= 2, "clang 19 writes CCOB v2 or later");
    for entry in plain.gpu_entries() {
        let twin = compressed
            .entry_for(&entry.target.as_ref().unwrap().processor)
            .unwrap();
        assert_eq!(twin.elf().unwrap(), entry.elf().unwrap());
        assert_eq!(twin.kernels().unwrap(), entry.kernels().unwrap());
        let (a, b) = (twin.bytes().len(), entry.bytes().len());
        assert!(a.abs_diff(b) < 64, "decompressed {a} bytes vs plain {b}");
    }

    // Raw ELF: one entry, target from e_flags.
    let (raw, _) = compile(
        &clang,
        &source,
        &[arches[0], "--no-gpu-bundle-output"],
        &dir.path().join("gfx90a.co"),
    );
    let raw = rocm_code_object::parse(&raw).unwrap();
    assert_eq!(raw.container, Container::AmdgpuElf);
    assert_eq!(raw.entries[0].target_string(), "gfx90a:xnack-");
    assert_eq!(raw.entries[0].kernels().unwrap(), reference);
}

#[testkit::test(needs = [HIP_CLANG, needs::LLD_19])]
fn host_objects_carry_bundles_in_hip_fatbin() {
    let clang = clang();
    let dir = tempfile::tempdir().unwrap();
    // The host side of a HIP compile declares the launch API: a minimal stand-in for the HIP
    // headers keeps this test independent of them.
    let source = |name: &str, kernel: &str| {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            format!(
                "#define __global__ __attribute__((global))\n\
                 struct dim3 {{ unsigned x, y, z; }};\n\
                 typedef struct ihipStream_t* hipStream_t;\n\
                 extern \"C\" int hipLaunchKernel(const void*, dim3, dim3, void**, unsigned long, hipStream_t);\n\
                 extern \"C\" __global__ void {kernel}(float* p) {{ *p = 1.0f; }}\n"
            ),
        )
        .unwrap();
        path
    };
    let mut objects = Vec::new();
    for (name, kernel, compress) in [("a.hip", "first", false), ("b.hip", "second", true)] {
        let obj = dir.path().join(format!("{name}.o"));
        let mut cmd = Command::new(&clang);
        cmd.args([
            "-x",
            "hip",
            "-nogpuinc",
            "-nogpulib",
            "--offload-arch=gfx1030",
            "-O2",
            "-c",
        ])
        .arg(source(name, kernel))
        .arg("-o")
        .arg(&obj);
        if compress {
            cmd.arg("--offload-compress");
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        objects.push(obj);
    }

    let one = std::fs::read(&objects[0]).unwrap();
    let parsed = rocm_code_object::parse(&one).unwrap();
    assert!(matches!(
        parsed.container,
        Container::HostElf { bundles: 1, .. }
    ));
    let kernels = parsed.entry_for("gfx1030").unwrap().kernels().unwrap();
    assert_eq!(kernels[0].name, "first");

    // A relocatable link concatenates the sections: two bundles, one of them compressed.
    let linked = dir.path().join("ab.o");
    let out = Command::new("ld.lld-19")
        .arg("-r")
        .args(&objects)
        .arg("-o")
        .arg(&linked)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let both = std::fs::read(&linked).unwrap();
    let parsed = rocm_code_object::parse(&both).unwrap();
    assert!(
        matches!(parsed.container, Container::HostElf { bundles: 2, .. }),
        "{:?}",
        parsed.container
    );
    let names: Vec<String> = parsed
        .gpu_entries()
        .flat_map(|e| e.kernels().unwrap())
        .map(|k| k.name)
        .collect();
    assert_eq!(names, ["first", "second"]);
}
