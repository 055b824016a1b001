//! `Build` driven by cargo on real crates: AMD code objects for two targets with clang++-19 and
//! with hipcc, the incremental cache, and the error messages people see.

use testkit::needs;

use crate::fixture;

use fixture::Fixture;

const BUILD_RS: &str = r#"
fn main() {
    rocm_kernels_build::Build::new()
        .files(["kernels/**/*.hip"])
        .include("include")
        .compile("kernels");
}
"#;

const COMMON_H: &str = "#pragma once\n#define SCALE 2.0f\n";

const A_K: &str = r#"#include <hip/hip_runtime.h>
#include "common.h"
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i] * SCALE;
}
"#;

const B_K: &str = r#"#include <hip/hip_runtime.h>
extern "C" __global__ void scale(float* y, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= s;
}
"#;

const REDUCE: &str = r#"#include <hip/hip_runtime.h>
extern "C" __global__ void block_sum(const float* x, float* out) {
    __shared__ float tile[256];
    tile[threadIdx.x] = x[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (threadIdx.x < s) tile[threadIdx.x] += tile[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = tile[0];
}
template <typename T> __global__ void fill(T* y, T v) { y[threadIdx.x] = v; }
template __global__ void fill<float>(float*, float);
"#;

fn three_kernel_crate(name: &str) -> Fixture {
    Fixture::new(
        name,
        BUILD_RS,
        &[
            ("include/common.h", COMMON_H),
            ("kernels/a/k.hip", A_K),
            ("kernels/b/k.hip", B_K),
            ("kernels/reduce.hip", REDUCE),
        ],
        "",
    )
}

fn objects(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("object "))
        .map(|l| l.split(' ').map(str::to_string).collect())
        .collect()
}

/// Three sources for two targets: one AMDGPU ELF per source and target, each for its target.
fn assert_two_target_bundles(f: &Fixture, stdout: &str) {
    let objs = objects(stdout);
    assert_eq!(objs.len(), 6, "{stdout}");
    let mut sources: Vec<&str> = objs.iter().map(|o| o[1].as_str()).collect();
    sources.sort();
    sources.dedup();
    assert_eq!(
        sources,
        ["kernels/a/k.hip", "kernels/b/k.hip", "kernels/reduce.hip"]
    );
    for o in &objs {
        assert_eq!(o[0], "amd");
        assert!(o[2] == "gfx90a" || o[2] == "gfx1030", "{o:?}");
        assert_eq!(o[3], "amdgpu-elf");
        assert_eq!(o[5], "magic=true", "{o:?}");
    }
    // Every kernel has its symbol in the object of each target.
    for kernel in ["saxpy", "scale", "block_sum", "fill<float>"] {
        for target in ["gfx90a", "gfx1030"] {
            let prefix = format!("symbol {kernel} {target} ");
            assert!(
                stdout.lines().any(|l| l.starts_with(&prefix)),
                "{prefix}\n{stdout}"
            );
        }
    }
    // The manifest names each object; same-named sources did not collide, and each object is
    // its target's code.
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(f.out_dir().join("rocm-kernels/kernels.manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["name"], "kernels");
    let objects = manifest["objects"].as_array().unwrap();
    let mut paths: Vec<&str> = objects
        .iter()
        .map(|o| o["path"].as_str().unwrap())
        .collect();
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), 6);
    for o in objects {
        let bytes = std::fs::read(o["path"].as_str().unwrap()).unwrap();
        let target = o["target"].as_str().unwrap();
        assert!(
            bytes.windows(target.len()).any(|w| w == target.as_bytes()),
            "{o} lacks {target}"
        );
    }
}

fn env_for(compiler: &'static str) -> [(&'static str, &'static str); 3] {
    [
        ("ROCM_BACKENDS", "amd"),
        ("ROCM_OFFLOAD_ARCH", "gfx90a,gfx1030"),
        ("ROCM_HIP_COMPILER", compiler),
    ]
}

#[testkit::test(needs = [needs::AMD_CLANG_19])]
fn clang_builds_every_target_and_rebuilds_only_what_changed() {
    let f = three_kernel_crate("rk_clang");
    // A wrapper that records every start of the compiler, `--version` included.
    f.write(
        "tools/clang++",
        "#!/bin/sh\necho \"$*\" >> \"$(dirname \"$0\")/calls.log\"\nexec clang++-19 \"$@\"\n",
    );
    let wrapper = f.path().join("tools/clang++");
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let calls = || {
        std::fs::read_to_string(f.path().join("tools/calls.log"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    let wrapper = wrapper.display().to_string();
    let env = [
        ("ROCM_BACKENDS", "amd"),
        ("ROCM_OFFLOAD_ARCH", "gfx90a,gfx1030"),
        ("ROCM_HIP_COMPILER", wrapper.as_str()),
    ];
    let (stdout, _) = f.run_ok(&env);
    assert_two_target_bundles(&f, &stdout);
    // The kernels table comes from the AMDGPU metadata: names (demangled), sizes, kinds.
    for line in [
        "kernel saxpy kernels/a/k.hip a::4:ByValue,x::8:GlobalBuffer,y::8:GlobalBuffer,n::4:ByValue",
        "kernel scale kernels/b/k.hip y::8:GlobalBuffer,s::4:ByValue,n::4:ByValue",
        "kernel block_sum kernels/reduce.hip x::8:GlobalBuffer,out::8:GlobalBuffer",
        "kernel fill<float> kernels/reduce.hip y::8:GlobalBuffer,v::4:ByValue",
    ] {
        assert!(stdout.lines().any(|l| l == line), "{line}\n{stdout}");
    }
    assert_eq!(f.runs("kernels"), 1);
    let first = f.last_run("kernels");
    assert_eq!(
        first
            .iter()
            .filter(|l| l.starts_with("compiled amd"))
            .count(),
        3,
        "{first:?}"
    );
    assert_eq!(
        calls(),
        6,
        "two tool lookups (-print-prog-name) and --version once, then one compile per source"
    );

    // Nothing changed: cargo does not even run the build script.
    let out = f.cargo(&["build"], &env);
    assert!(out.status.success());
    assert_eq!(f.runs("kernels"), 1, "a no-op build reran the build script");

    // A source touched without a content change: the script reruns, the compiler does not.
    f.write("kernels/b/k.hip", B_K);
    let out = f.cargo(&["build"], &env);
    assert!(out.status.success());
    assert_eq!(f.runs("kernels"), 2);
    let run = f.last_run("kernels");
    assert_eq!(
        run.iter().filter(|l| l.starts_with("fresh amd")).count(),
        3,
        "{run:?}"
    );
    assert!(!run.iter().any(|l| l.starts_with("compiled")), "{run:?}");
    assert_eq!(calls(), 6, "a cache hit started the compiler");

    // A header edited: only the file including it is recompiled.
    f.write("include/common.h", "#pragma once\n#define SCALE 3.0f\n");
    let out = f.cargo(&["build"], &env);
    assert!(out.status.success());
    let run = f.last_run("kernels");
    let compiled: Vec<&String> = run.iter().filter(|l| l.starts_with("compiled")).collect();
    assert_eq!(compiled.len(), 1, "{run:?}");
    assert!(
        compiled[0].starts_with("compiled amd kernels/a/k.hip"),
        "{run:?}"
    );
    assert_eq!(calls(), 7);

    // Another target set invalidates every object.
    let out = f.cargo(
        &["build"],
        &[
            ("ROCM_BACKENDS", "amd"),
            ("ROCM_OFFLOAD_ARCH", "gfx1030"),
            ("ROCM_HIP_COMPILER", wrapper.as_str()),
        ],
    );
    assert!(out.status.success());
    let run = f.last_run("kernels");
    assert_eq!(
        run.iter().filter(|l| l.starts_with("compiled")).count(),
        3,
        "{run:?}"
    );
}

#[testkit::test(needs = [needs::AMD_HIPCC])]
fn hipcc_builds_every_target() {
    let f = three_kernel_crate("rk_hipcc");
    let env = env_for("hipcc");
    let (stdout, _) = f.run_ok(&env);
    assert_two_target_bundles(&f, &stdout);
}

#[testkit::test(needs = [needs::AMD_CLANG_19])]
fn syntax_error_shows_file_line_and_command() {
    let f = Fixture::new(
        "rk_syntax",
        BUILD_RS,
        &[
            ("include/common.h", COMMON_H),
            (
                "kernels/bad.hip",
                "#include <hip/hip_runtime.h>\n\nextern \"C\" __global__ void k(float* y) {\n    y[0] = undefined_name;\n}\n",
            ),
        ],
        "",
    );
    let env = env_for("clang++-19");
    let text = f.build_fails(&env);
    assert!(
        text.contains("failed to compile `kernels/bad.hip`"),
        "{text}"
    );
    assert!(
        text.contains("--> kernels/bad.hip:4:12: error: use of undeclared identifier"),
        "{text}"
    );
    assert!(text.contains("command: cd "), "{text}");
    assert!(text.contains("clang++-19"), "{text}");
    assert!(text.contains("--offload-arch=gfx90a"), "{text}");
}

/// Debian's ROCm 5.2 device libraries, which lack gfx942 (a newer ROCm covers it).
const NO_GFX942: testkit::Need = testkit::Need::check(
    "device libraries without gfx942 (Debian's ROCm 5.2)",
    "this machine has a ROCm that covers gfx942",
    testkit::Kind::Machine,
    || {
        let f = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode/oclc_isa_version_942.bc";
        if std::path::Path::new(f).exists() {
            Err(format!("{f} exists"))
        } else {
            Ok(())
        }
    },
);

#[testkit::test(needs = [needs::AMD_CLANG_19, NO_GFX942])]
fn target_missing_from_the_toolchain_is_explained() {
    let f = Fixture::new("rk_gfx942", BUILD_RS, &[("kernels/b/k.hip", B_K)], "");
    let text = f.build_fails(&[
        ("ROCM_BACKENDS", "amd"),
        ("ROCM_OFFLOAD_ARCH", "gfx90a,gfx942"),
        ("ROCM_HIP_COMPILER", "clang++-19"),
    ]);
    assert!(text.contains("target `gfx942` is not supported"), "{text}");
    assert!(text.contains("gfx90a"), "{text}");
    assert!(text.contains("cargo rocm doctor"), "{text}");
    assert!(text.contains("install a newer ROCm toolchain"), "{text}");
}

#[testkit::test(needs = [needs::AMD_CLANG_19])]
fn warnings_become_cargo_warnings() {
    let f = Fixture::new(
        "rk_warn",
        BUILD_RS,
        &[(
            "kernels/w.hip",
            "#warning \"check the block size\"\n#include <hip/hip_runtime.h>\nextern \"C\" __global__ void k(float* y) { y[0] = 1.0f; }\n",
        )],
        "",
    );
    let env = env_for("clang++-19");
    let (_, stderr) = f.run_ok(&env);
    assert!(
        stderr.contains(
            "warning: rk_warn@0.1.0: kernels/w.hip:1:2: warning: \"check the block size\""
        ),
        "{stderr}"
    );
}

#[testkit::test(needs = [needs::AMD_CLANG_19])]
fn metadata_sets_targets_and_no_targets_skips_amd_with_a_warning() {
    let f = Fixture::new(
        "rk_meta",
        BUILD_RS,
        &[("kernels/b/k.hip", B_K)],
        "[package.metadata.rocm]\ntargets = [\"gfx1030\"]\nbackends = [\"amd\"]\n",
    );
    let (stdout, _) = f.run_ok(&[("ROCM_HIP_COMPILER", "clang++-19")]);
    let objs = objects(&stdout);
    assert_eq!(objs.len(), 1, "{stdout}");
    assert_eq!(objs[0][2], "gfx1030");

    // The environment overrides the metadata.
    let (stdout, _) = f.run_ok(&[
        ("ROCM_HIP_COMPILER", "clang++-19"),
        ("ROCM_OFFLOAD_ARCH", "gfx90a"),
    ]);
    assert_eq!(objects(&stdout)[0][2], "gfx90a");

    let g = Fixture::new(
        "rk_notargets",
        BUILD_RS,
        &[("kernels/b/k.hip", B_K)],
        "[package.metadata.rocm]\nbackends = [\"amd\"]\n",
    );
    let (stdout, stderr) = g.run_ok(&[("ROCM_HIP_COMPILER", "clang++-19")]);
    if std::path::Path::new("/sys/class/kfd/kfd/topology/nodes").exists() {
        return; // a machine with an AMD GPU detects targets
    }
    assert!(objects(&stdout).is_empty(), "{stdout}");
    assert!(
        stderr.contains("the amd backend of `kernels` is skipped: no GPU targets"),
        "{stderr}"
    );
    assert!(stderr.contains("ROCM_OFFLOAD_ARCH"), "{stderr}");
}

#[testkit::test(needs = [needs::AMD_CLANG_19])]
fn amd_install_layout_is_used_through_rocm_path() {
    let libs = std::path::Path::new("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode");
    // An install laid out like AMD's /opt/rocm: lib/llvm/bin/clang++, amdgcn/bitcode, include/hip.
    let root = tempfile::tempdir().unwrap();
    let link = |target: &str, at: &str| {
        let at = root.path().join(at);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, at).unwrap();
    };
    link(
        &fixture::which("clang++-19").unwrap().display().to_string(),
        "lib/llvm/bin/clang++",
    );
    link(libs.to_str().unwrap(), "amdgcn/bitcode");
    link("/usr/include/hip", "include/hip");
    let f = Fixture::new("rk_optrocm", BUILD_RS, &[("kernels/b/k.hip", B_K)], "");
    let rocm = root.path().display().to_string();
    let (stdout, _) = f.run_ok(&[
        ("ROCM_BACKENDS", "amd"),
        ("ROCM_OFFLOAD_ARCH", "gfx90a,gfx1030"),
        ("ROCM_PATH", rocm.as_str()),
    ]);
    let objs = objects(&stdout);
    assert_eq!(objs.len(), 2, "one object per target: {stdout}");
    assert!(objs.iter().all(|o| o[5] == "magic=true"), "{stdout}");
    let run = f.last_run("kernels");
    let expected = format!("amd compiler {rocm}/lib/llvm/bin/clang++ ");
    assert!(run.iter().any(|l| l.starts_with(&expected)), "{run:?}");
}

#[testkit::test(needs = [needs::AMD_CLANG_19])]
fn default_backends_are_cpu_and_amd_with_one_kernel_table() {
    let f = Fixture::new(
        "rk_default",
        BUILD_RS,
        &[
            ("include/common.h", COMMON_H),
            ("kernels/a/k.hip", A_K),
            ("kernels/reduce.hip", REDUCE),
        ],
        "",
    );
    let (stdout, _) = f.run_ok(&[("ROCM_OFFLOAD_ARCH", "gfx90a,gfx1030")]);
    assert_eq!(
        objects(&stdout).len(),
        4,
        "two sources, two targets: {stdout}"
    );
    let mut cpu: Vec<&str> = stdout.lines().filter(|l| l.starts_with("cpu ")).collect();
    cpu.sort();
    assert_eq!(
        cpu,
        [
            "cpu block_sum entry_null=false regions",
            "cpu fill<float> entry_null=false regions",
            "cpu saxpy entry_null=false regions"
        ],
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l
            == "kernel saxpy kernels/a/k.hip a:float:4:ByValue,x:const_float*:8:GlobalBuffer,y:float*:8:GlobalBuffer,n:int:4:ByValue"),
        "{stdout}"
    );
    let run = f.last_run("kernels");
    assert!(
        run.iter().any(|l| l.starts_with("built cpu 3 kernels")),
        "{run:?}"
    );
    // One table for both backends, with the cpu build's source types.
    let kernels: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("kernel "))
        .collect();
    assert_eq!(kernels.len(), 3, "{stdout}");
    assert!(
        kernels.contains(
            &"kernel fill<float> kernels/reduce.hip y:float*:8:GlobalBuffer,v:float:4:ByValue"
        ),
        "{stdout}"
    );
}

/// A toolchain folder whose clang is a copy of Debian's clang 19 that finds its libraries and
/// linker but has no `clang-offload-bundler` beside it (what a Debian machine without
/// `clang-tools-19` has), at `clang_dir` under `root`; device libraries and HIP headers linked in.
fn toolchain_with_incomplete_clang(root: &std::path::Path, clang_dir: &str) {
    use std::os::unix::fs::symlink;
    let bin = root.join(clang_dir).join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy("/usr/lib/llvm-19/bin/clang", bin.join("clang")).unwrap();
    symlink("clang", bin.join("clang++")).unwrap();
    symlink("/usr/lib/llvm-19/bin/ld.lld", bin.join("ld.lld")).unwrap();
    symlink("/usr/lib/llvm-19/lib", root.join(clang_dir).join("lib")).unwrap();
    std::fs::create_dir_all(root.join("include")).unwrap();
    symlink("/usr/lib/x86_64-linux-gnu/amdgcn", root.join("amdgcn")).unwrap();
    symlink("/usr/include/hip", root.join("include/hip")).unwrap();
}

#[testkit::test(needs = [needs::AMD_CLANG_19])]
fn a_clang_without_its_offload_bundler_is_passed_over_for_the_next_compiler() {
    use std::os::unix::fs::symlink;
    // ROCm's layout (lib/llvm/bin/clang++, preferred) with an incomplete clang, and a complete
    // distribution clang 19 (lib/llvm-19 with bin/clang++-19) in the same install.
    let root = tempfile::tempdir().unwrap();
    toolchain_with_incomplete_clang(root.path(), "lib/llvm");
    symlink("/usr/lib/llvm-19", root.path().join("lib/llvm-19")).unwrap();
    std::fs::create_dir_all(root.path().join("bin")).unwrap();
    symlink("/usr/bin/clang++-19", root.path().join("bin/clang++-19")).unwrap();

    let f = Fixture::new("rk_nobundler", BUILD_RS, &[("kernels/b/k.hip", B_K)], "");
    let rocm = root.path().display().to_string();
    let (stdout, _) = f.run_ok(&[
        ("ROCM_BACKENDS", "amd"),
        ("ROCM_OFFLOAD_ARCH", "gfx90a,gfx1030"),
        ("ROCM_PATH", rocm.as_str()),
    ]);
    let objs = objects(&stdout);
    assert_eq!(objs.len(), 2, "one object per target: {stdout}");
    assert!(objs.iter().all(|o| o[5] == "magic=true"), "{stdout}");
    let run = f.last_run("kernels");
    let expected = format!("amd compiler {rocm}/bin/clang++-19 ");
    assert!(run.iter().any(|l| l.starts_with(&expected)), "{run:?}");
}

#[testkit::test(needs = [needs::AMD_CLANG_19])]
fn no_complete_compiler_names_the_missing_package_or_skips_amd_when_not_asked_for() {
    use std::os::unix::fs::symlink;
    // Debian's layout with only clang 19, without clang-tools-19.
    let root = tempfile::tempdir().unwrap();
    toolchain_with_incomplete_clang(root.path(), "lib/llvm-19");
    std::fs::create_dir_all(root.path().join("bin")).unwrap();
    symlink(
        "../lib/llvm-19/bin/clang++",
        root.path().join("bin/clang++-19"),
    )
    .unwrap();
    // Pinned, so this install is used whatever else the machine has.
    let f = Fixture::new("rk_incomplete", BUILD_RS, &[("kernels/b/k.hip", B_K)], "");
    f.write(
        "rocm-toolchain.toml",
        &format!(
            "[toolchain]\npath = {:?}\n",
            root.path().display().to_string()
        ),
    );

    // Asked for: the build fails, naming what is missing and the package.
    let text = f.build_fails(&[
        ("ROCM_BACKENDS", "amd"),
        ("ROCM_OFFLOAD_ARCH", "gfx90a,gfx1030"),
    ]);
    assert!(text.contains("has no complete HIP compiler"), "{text}");
    assert!(text.contains("no clang-offload-bundler in"), "{text}");
    assert!(
        text.contains("Fix: sudo apt-get install clang-tools-19"),
        "{text}"
    );

    // Not asked for (the default backends): a warning, and the cpu backend builds.
    let (stdout, stderr) = f.run_ok(&[("ROCM_OFFLOAD_ARCH", "gfx90a,gfx1030")]);
    assert!(objects(&stdout).is_empty(), "{stdout}");
    assert!(
        stderr.contains("the amd backend of `kernels` is skipped"),
        "{stderr}"
    );
    assert!(stderr.contains("clang-tools-19"), "{stderr}");
    assert!(stdout.contains("cpu scale"), "{stdout}");
}

/// A template kernel instantiated in the source gets one name in the library, the same for the
/// cpu build (which reads the source) and the AMD objects (whose symbols are demangled):
/// `k<16>`, never `k<16u>` or `k<(unsigned int)16>`.
#[testkit::test(needs = [needs::AMD_CLANG_19])]
fn a_template_kernel_has_one_name_on_every_backend() {
    let f = Fixture::new(
        "rk_template",
        BUILD_RS,
        &[(
            "kernels/t.hip",
            "#include <hip/hip_runtime.h>\n\
             template <unsigned N> __global__ void k(float* y) { y[threadIdx.x] = N; }\n\
             template __global__ void k<16u>(float*);\n",
        )],
        "",
    );
    let (stdout, _) = f.run_ok(&[
        ("ROCM_BACKENDS", "cpu,amd"),
        ("ROCM_OFFLOAD_ARCH", "gfx90a,gfx1030"),
        ("ROCM_HIP_COMPILER", "clang++-19"),
    ]);
    let kernels: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("kernel "))
        .collect();
    assert_eq!(kernels.len(), 1, "{stdout}");
    assert!(
        kernels[0].starts_with("kernel k<16> kernels/t.hip"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("cpu k<16> entry_null=false")),
        "{stdout}"
    );
    for target in ["gfx90a", "gfx1030"] {
        assert!(
            stdout
                .lines()
                .any(|l| l == format!("symbol k<16> {target} _Z1kILj16EEvPf")),
            "{target}: {stdout}"
        );
    }
}
