//! The report: statistics and stability verdicts on synthetic timing sets (stable, noisy,
//! bimodal), the join with the launch log (declared work, the driver's occupancy), the AMD join
//! with a real code object and the occupancy model, and the published JSON schema.

use std::collections::BTreeSet;

use rocm_kernels_core::Backend;
use rocm_profile::{build, Collected, Dispatch, ReportInput};
use rocm_protocol::launch_log::{
    DriverResources, Function, Launch, LaunchRecord, Origin, LAUNCH_LOG_VERSION,
};
use rocm_stats::Stability;

fn collected(backend: Backend, sets: &[(&str, Vec<f64>)]) -> Collected {
    let mut c = Collected::new("test", "synthetic", backend);
    for (name, times) in sets {
        for t in times {
            let mut d = Dispatch::new(*name, *t);
            d.block = Some([256, 1, 1]);
            d.grid = Some([4096, 1, 1]);
            c.dispatches.push(d);
        }
    }
    c
}

/// Deterministic jitter in [-1, 1].
fn jitter(i: usize) -> f64 {
    ((i * 7919 + 13) % 1000) as f64 / 500.0 - 1.0
}

fn origin(kernel: &str, backend: Backend) -> Origin {
    Origin {
        v: LAUNCH_LOG_VERSION,
        pid: 1,
        library: "kernels".into(),
        kernel: kernel.into(),
        backend,
        device: "NVIDIA H100 80GB HBM3".into(),
        arch: "sm_90".into(),
    }
}

/// What the driver says of `saxpy` at 256 threads on an H100-like device: 16 registers, 8 blocks
/// (64 warps) of 64 per SM.
fn saxpy_function() -> LaunchRecord {
    LaunchRecord::Function(Function {
        origin: origin("saxpy", Backend::Nvidia),
        block_threads: 256,
        shared_bytes: 0,
        warp_size: 32,
        resources: DriverResources {
            registers: Some(16),
            static_shared_bytes: Some(0),
            local_bytes: Some(0),
            max_threads_per_block: Some(1024),
            active_blocks_per_sm: Some(8),
            max_warps_per_sm: Some(64),
            error: None,
        },
    })
}

#[testkit::test]
fn stable_noisy_and_bimodal_sets_get_their_verdicts() {
    let stable: Vec<f64> = (0..200)
        .map(|i| 10_000.0 * (1.0 + 0.002 * jitter(i)))
        .collect();
    let noisy: Vec<f64> = (0..200)
        .map(|i| 10_000.0 * (1.0 + 0.08 * jitter(i)))
        .collect();
    // A clock change half way: 10 µs, then 14 µs.
    let bimodal: Vec<f64> = (0..200)
        .map(|i| if i < 100 { 10_000.0 } else { 14_000.0 } * (1.0 + 0.005 * jitter(i)))
        .collect();
    let r = build(ReportInput {
        collected: collected(
            Backend::Cpu,
            &[
                ("stable", stable),
                ("noisy", noisy),
                ("bimodal", bimodal),
                ("few", vec![1.0, 2.0]),
            ],
        ),
        launches: Vec::new(),
        amd_kernels: Vec::new(),
        command: vec!["bench".into()],
    })
    .unwrap();
    let class = |n: &str| {
        r.kernels
            .iter()
            .find(|k| k.name == n)
            .unwrap()
            .stability
            .clone()
    };
    assert_eq!(class("stable").class, Stability::Stable);
    assert_eq!(class("noisy").class, Stability::Noisy);
    let b = class("bimodal");
    assert_eq!(b.class, Stability::Unstable);
    assert!(b.bimodal);
    let [low, high] = b.modes_ns.unwrap();
    assert!(
        (low - 10_000.0).abs() < 200.0 && (high - 14_000.0).abs() < 200.0,
        "{low} {high}"
    );
    assert_eq!(class("few").class, Stability::TooFewSamples);
    // The most time first, shares add up to one.
    assert_eq!(r.kernels[0].name, "bimodal");
    let shares: f64 = r.kernels.iter().map(|k| k.share).sum();
    assert!((shares - 1.0).abs() < 1e-9);
    let text = rocm_profile::render::render(&r);
    assert!(text.contains("bimodal: 10.0 µs and 14.0 µs"), "{text}");
}

#[testkit::test]
fn declared_work_and_the_drivers_occupancy_join_by_kernel() {
    let launches: Vec<LaunchRecord> = (0..4)
        .map(|_| {
            LaunchRecord::Launch(Launch {
                origin: origin("saxpy", Backend::Nvidia),
                grid: [4096, 1, 1],
                block: [256, 1, 1],
                shared_bytes: 0,
                start_ns: 0,
                duration_ns: None,
                bytes: Some(12_582_912),
                flops: Some(2_097_152),
            })
        })
        .chain(std::iter::once(saxpy_function()))
        .collect();
    let mut c = collected(Backend::Nvidia, &[("saxpy", vec![5_000.0; 10])]);
    for d in &mut c.dispatches {
        d.counters
            .insert("sm__maximum_warps_per_active_cycle_pct".into(), 100.0);
        d.counters
            .insert("launch__occupancy_limit_registers".into(), 16.0);
        d.counters
            .insert("launch__occupancy_limit_warps".into(), 8.0);
    }
    let r = build(ReportInput {
        collected: c,
        launches,
        amd_kernels: Vec::new(),
        command: vec!["bench".into()],
    })
    .unwrap();
    let k = &r.kernels[0];
    let t = k.throughput.as_ref().unwrap();
    assert!((t.gb_per_s.unwrap() - 12_582_912.0 / 5_000.0).abs() < 1e-6);
    assert!((t.gflop_per_s.unwrap() - 2_097_152.0 / 5_000.0).abs() < 1e-6);
    let o = k.occupancy.as_ref().unwrap();
    assert_eq!((o.waves, o.max_waves, o.blocks_per_cu), (64, 64, Some(8)));
    assert_eq!(o.profiler_fraction, Some(1.0));
    assert_eq!(o.limiter.as_deref(), Some("warps"));
    assert_eq!(k.resources.as_ref().unwrap().vgprs, Some(16));
    assert_eq!(r.device.as_deref(), Some("NVIDIA H100 80GB HBM3"));
}

/// A real code object (clang 19, gfx90a and gfx1100), rocpd-style dispatches naming its
/// kernels: resources come from the code object of the device's processor, and the occupancy
/// at the launch's block size is the model's.
#[testkit::test(needs = [testkit::needs::CLANG_19, testkit::needs::LLD_19])]
fn amd_kernels_join_code_objects_and_the_occupancy_model() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("k.hip");
    std::fs::write(
        &src,
        "extern \"C\" __global__ void __attribute__((amdgpu_flat_work_group_size(1, 256))) wide(float* p) {\n\
           asm volatile(\"\" ::: \"v127\");\n  p[__builtin_amdgcn_workitem_id_x()] += 1.0f;\n}\n",
    )
    .unwrap();
    let mut kernels = Vec::new();
    for arch in ["gfx90a", "gfx1100"] {
        let out = dir.path().join(format!("{arch}.o"));
        let status = std::process::Command::new("clang++-19")
            .args([
                "-x",
                "hip",
                "--cuda-device-only",
                "-nogpulib",
                "-O2",
                "--no-gpu-bundle-output",
                "-c",
            ])
            .arg(format!("--offload-arch={arch}"))
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .status()
            .unwrap();
        assert!(status.success());
        kernels.extend(rocm_profile::amd_kernels(&std::fs::read(&out).unwrap()).unwrap());
    }
    let mut c = collected(Backend::Amd, &[("wide", vec![20_000.0; 8])]);
    c.arch = Some("gfx90a".into());
    for d in &mut c.dispatches {
        d.shared_bytes = Some(0);
    }
    let r = build(ReportInput {
        collected: c,
        launches: Vec::new(),
        amd_kernels: kernels,
        command: vec!["app".into()],
    })
    .unwrap();
    let k = &r.kernels[0];
    let res = k.resources.as_ref().unwrap();
    assert_eq!(res.vgprs, Some(128));
    assert!(res.source.contains("gfx90a"), "{}", res.source);
    let o = k.occupancy.as_ref().unwrap();
    // gfx90a: 512 VGPRs per SIMD lane / 128 = 4 of 8 waves, limited by VGPRs.
    assert_eq!(
        (o.waves, o.max_waves, o.limiter.as_deref()),
        (4, 8, Some("vgprs"))
    );
}

/// Every key of a report's JSON is described in `docs/profile-schema.json` (its `properties`,
/// followed through `$ref`s), and every key the schema requires is written.
#[testkit::test]
fn the_json_report_follows_the_published_schema() {
    let schema_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/profile-schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    assert_eq!(
        schema["properties"]["schema_version"]["const"],
        rocm_profile::SCHEMA_VERSION
    );
    let mut c = collected(
        Backend::Nvidia,
        &[("saxpy", (0..20).map(|i| 5_000.0 + i as f64).collect())],
    );
    c.dispatches[0]
        .counters
        .insert("dram__bytes.sum".into(), 1e6);
    c.notes.push("a note".into());
    let r = build(ReportInput {
        collected: c,
        launches: vec![
            LaunchRecord::Launch(Launch {
                origin: origin("saxpy", Backend::Nvidia),
                grid: [1, 1, 1],
                block: [256, 1, 1],
                shared_bytes: 0,
                start_ns: 0,
                duration_ns: None,
                bytes: Some(10),
                flops: Some(10),
            }),
            saxpy_function(),
        ],
        amd_kernels: Vec::new(),
        command: vec!["bench".into()],
    })
    .unwrap();
    let value = serde_json::to_value(&r).unwrap();
    let mut checked = BTreeSet::new();
    conforms(&schema, &schema, &value, "$", &mut checked);
    for object in [
        "report",
        "kernel",
        "time",
        "stability",
        "launch",
        "resources",
        "occupancy",
        "throughput",
    ] {
        assert!(
            checked.contains(object),
            "{object} was not checked: {checked:?}"
        );
    }
}

/// `value` has only keys `node` describes and every key it requires; records which
/// definitions were visited.
fn conforms(
    root: &serde_json::Value,
    node: &serde_json::Value,
    value: &serde_json::Value,
    at: &str,
    checked: &mut BTreeSet<String>,
) {
    let node = match node.get("$ref").and_then(|r| r.as_str()) {
        Some(r) => {
            let name = r.trim_start_matches("#/$defs/");
            checked.insert(name.to_owned());
            &root["$defs"][name]
        }
        None => {
            if node.get("title").is_some() && std::ptr::eq(node, root) {
                checked.insert("report".into());
            }
            node
        }
    };
    if value.is_null() {
        return;
    }
    if let (Some(props), Some(obj)) = (
        node.get("properties").and_then(|p| p.as_object()),
        value.as_object(),
    ) {
        for key in obj.keys() {
            assert!(
                props.contains_key(key),
                "{at}.{key} is not in docs/profile-schema.json"
            );
        }
        for req in node["required"].as_array().into_iter().flatten() {
            let req = req.as_str().unwrap();
            assert!(obj.contains_key(req), "{at} lacks required {req}");
        }
        for (key, sub) in obj {
            conforms(root, &props[key], sub, &format!("{at}.{key}"), checked);
        }
    }
    if let (Some(items), Some(arr)) = (node.get("items"), value.as_array()) {
        for (i, v) in arr.iter().enumerate() {
            conforms(root, items, v, &format!("{at}[{i}]"), checked);
        }
    }
    if let Some(any) = node.get("anyOf").and_then(|a| a.as_array()) {
        if let Some(r) = any.iter().find(|s| s.get("$ref").is_some()) {
            conforms(root, r, value, at, checked);
        }
    }
}
