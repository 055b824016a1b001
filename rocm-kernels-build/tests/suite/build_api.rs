//! `Build::try_compile` called directly (no cargo): configuration errors, and the cache seen
//! through the returned `Compiled`.

use testkit::needs;

use rocm_kernels_build::BuildError;
use rocm_kernels_build::{Backend, Build};

fn quiet() -> Build {
    let mut b = Build::new();
    b.cargo_metadata(false);
    b
}

#[testkit::test]
fn configuration_errors_are_values_that_say_what_to_do() {
    let out = tempfile::tempdir().unwrap();
    let e = quiet().out_dir(out.path()).try_compile("k").unwrap_err();
    assert!(matches!(e, BuildError::NoSources { .. }), "{e}");
    assert!(e.to_string().contains("Build::file"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("k.hip");
    std::fs::write(&src, "").unwrap();
    let e = quiet()
        .out_dir(out.path())
        .file(&src)
        .try_compile("bad name")
        .unwrap_err();
    assert!(e.to_string().contains("library name `bad name`"), "{e}");

    let e = quiet()
        .out_dir(out.path())
        .file(dir.path().join("*.cu"))
        .try_compile("k")
        .unwrap_err();
    assert!(e.to_string().contains("matched no file"), "{e}");

    let e = quiet()
        .out_dir(out.path())
        .file(&src)
        .backend(Backend::Amd)
        .offload_arch("sm_90")
        .try_compile("k")
        .unwrap_err();
    assert!(matches!(e, BuildError::InvalidTarget { .. }), "{e}");
    assert!(e.to_string().contains("ROCM_OFFLOAD_ARCH"), "{e}");
}

#[testkit::test(needs = [needs::AMD_CLANG_19])]
fn second_compile_reuses_every_object() {
    let out = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in [("a", "y[0] = 1.0f;"), ("b", "y[0] = 2.0f;")] {
        std::fs::write(
            dir.path().join(format!("{name}.hip")),
            format!("#include <hip/hip_runtime.h>\nextern \"C\" __global__ void {name}(float* y) {{ {body} }}\n"),
        )
        .unwrap();
    }
    let mut b = quiet();
    b.out_dir(out.path())
        .files([dir.path().join("*.hip")])
        .backends([Backend::Amd])
        .targets(["gfx1030"])
        .compiler("clang++-19")
        .opt_level(2);
    let first = b.try_compile("lib").unwrap();
    assert_eq!(first.backends, [Backend::Amd]);
    assert_eq!(first.targets, ["gfx1030"]);
    assert_eq!(first.objects.len(), 2);
    assert!(first.objects.iter().all(|o| !o.reused));
    assert!(first.rust_file.ends_with("lib.rs"));
    let generated = std::fs::read_to_string(&first.rust_file).unwrap();
    assert!(generated.contains("pub static KERNELS: ::rocm_kernels::KernelLibrary"));

    let second = b.try_compile("lib").unwrap();
    assert!(second.objects.iter().all(|o| o.reused), "{second:?}");
    assert_eq!(
        first.objects.iter().map(|o| &o.path).collect::<Vec<_>>(),
        second.objects.iter().map(|o| &o.path).collect::<Vec<_>>()
    );

    // Another optimisation level is another command: everything is rebuilt.
    let third = b.opt_level(1).try_compile("lib").unwrap();
    assert!(third.objects.iter().all(|o| !o.reused));
}

const NVCC: testkit::Need = testkit::Need::check(
    "nvcc",
    "install the CUDA toolkit, or `pip install nvidia-cuda-nvcc` (`cargo rocm doctor --backend \
     nvidia`)",
    testkit::Kind::Machine,
    || {
        let env = |v: &str| std::env::var_os(v);
        rocm_toolkit::nvcc::find_nvcc(&env)
            .map(|_| ())
            .map_err(|e| e.to_string())
    },
);

/// Issue 26: one source outside the crate, named relative (`../shared/kernels.hip`), absolute,
/// through a symlink inside the crate and with a detour (`kernels/../../shared/...`), is one file
/// to the cpu and the nvidia (nvcc) backends: built once per backend, its kernels from one source,
/// named the same way by both. Before, nvcc's objects said `../shared/kernels.hip` and the cpu
/// build the absolute path, and the build refused the kernel as defined twice. Isolated: it sets
/// `CARGO_MANIFEST_DIR`, the crate root the builder reads.
#[testkit::test(isolated, needs = [NVCC])]
fn one_source_under_four_spellings_is_one_file_to_every_backend() {
    let top = tempfile::tempdir().unwrap();
    let shared = top.path().join("shared");
    let krate = top.path().join("crate");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::create_dir_all(krate.join("kernels")).unwrap();
    std::fs::write(
        shared.join("kernels.hip"),
        "#include <hip/hip_runtime.h>\n__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("../../shared/kernels.hip", krate.join("kernels/link.hip")).unwrap();
    // Safety (set_var): this test runs alone in its own process.
    std::env::set_var("CARGO_MANIFEST_DIR", &krate);
    let out = tempfile::tempdir().unwrap();
    let compiled = quiet()
        .out_dir(out.path())
        .file("../shared/kernels.hip")
        .file(shared.join("kernels.hip"))
        .file("kernels/link.hip")
        .file("kernels/../../shared/kernels.hip")
        .backends([Backend::Cpu, Backend::Nvidia])
        .nvidia_arch("sm_90")
        .try_compile("lib")
        .unwrap_or_else(|e| panic!("{e}"));
    let canonical = std::fs::canonicalize(shared.join("kernels.hip")).unwrap();
    let name = canonical.display().to_string();
    // One source: a cubin for sm_90 and PTX, nothing twice.
    let nvidia: Vec<_> = compiled
        .objects
        .iter()
        .filter(|o| o.backend == Backend::Nvidia)
        .collect();
    assert_eq!(nvidia.len(), 2, "{nvidia:?}");
    assert!(nvidia
        .iter()
        .all(|o| o.source.abs == canonical && o.source.rel == name));
    let manifest = std::fs::read_to_string(&compiled.manifest_file).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let kernels = manifest["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 1, "{manifest:#}");
    assert_eq!(kernels[0]["source"], name.as_str(), "{manifest:#}");
    assert!(!kernels[0]["cpu"].is_null(), "the cpu backend built it too");
}

/// The basic template's kernels (what `cargo rocm new` writes), with one mistake planted by
/// replacing `from` with `to`; the line the error must name.
const TEMPLATE_KERNELS: &str = include_str!("../../../examples/basic/kernels/kernels.hip");

struct Mistake {
    what: &'static str,
    from: &'static str,
    to: &'static str,
    /// Lines of kernels.hip an error may name (compilers differ on a missing `;`).
    lines: &'static [u32],
}

const MISTAKES: [Mistake; 4] = [
    // Issue 26's case: the `}` of the `if` in block_sum's loop (line 27) left out.
    Mistake {
        what: "a missing `}`",
        from: "            tile[t] += tile[t + stride];\n        }\n",
        to: "            tile[t] += tile[t + stride];\n",
        lines: &[25],
    },
    Mistake {
        what: "an undeclared identifier",
        from: "y[i] = a * x[i] + y[i];",
        to: "y[i] = a * xs[i] + y[i];",
        lines: &[9],
    },
    Mistake {
        what: "a missing `;`",
        from: "int i = blockIdx.x * blockDim.x + threadIdx.x;",
        to: "int i = blockIdx.x * blockDim.x + threadIdx.x",
        lines: &[7, 8],
    },
    Mistake {
        what: "an argument of the wrong type",
        from: "        partial[blockIdx.x] = tile[0];",
        to: "        partial[blockIdx.x] = twice(tile[0]);",
        lines: &[31],
    },
];

/// Builds the template's kernels with `mistake` planted for `backend`; the error's text.
fn build_with_mistake(mistake: &Mistake, backend: Backend) -> String {
    assert!(TEMPLATE_KERNELS.contains(mistake.from), "{}", mistake.what);
    // A helper taking a pointer, for the wrong-type case (declared before the kernels, so every
    // line below it moves by one: the helper goes on the include's line).
    let source = TEMPLATE_KERNELS
        .replace(mistake.from, mistake.to)
        .replace(
            "#include <hip/hip_runtime.h>\n",
            "#include <hip/hip_runtime.h>\n__device__ float twice(const float* p) { return 2.0f * *p; }\n",
        );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kernels.hip"), source).unwrap();
    let out = tempfile::tempdir().unwrap();
    let e = quiet()
        .out_dir(out.path())
        .file(dir.path().join("kernels.hip"))
        .backends([backend])
        .nvidia_arch("sm_90")
        .try_compile("kernels")
        .expect_err(mistake.what);
    // What a build script prints (Build::compile panics with it).
    format!("rocm-kernels: {e}")
}

/// Issue 26: each mistake is reported in at most 10 lines that name kernels.hip and the line
/// of the mistake (one more than in the template: the helper's line), quoting the first error
/// first, once (not again for the race variant, nor at generated files' lines).
fn assert_short_and_located(backend: Backend) {
    for mistake in &MISTAKES {
        let text = build_with_mistake(mistake, backend);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines.len() <= 10,
            "{} on {backend}: {} lines:\n{text}",
            mistake.what,
            lines.len()
        );
        let at_line = |l: &str| {
            mistake
                .lines
                .iter()
                .any(|n| l.contains(&format!("kernels.hip:{}:", n + 1)) && l.contains("error"))
        };
        assert!(
            lines.iter().take(3).any(|l| at_line(l)),
            "{} on {backend}: no error at kernels.hip:{:?} in the first lines:\n{text}",
            mistake.what,
            mistake.lines.iter().map(|n| n + 1).collect::<Vec<_>>()
        );
        assert!(
            !text.contains(".cpu.cpp"),
            "{} on {backend}:\n{text}",
            mistake.what
        );
        assert!(
            !text.contains("rkrace"),
            "{} on {backend}:\n{text}",
            mistake.what
        );
    }
}

#[testkit::test]
fn a_kernel_mistake_is_one_short_error_at_its_line_on_the_cpu_backend() {
    assert_short_and_located(Backend::Cpu);
}

#[testkit::test(needs = [NVCC])]
fn a_kernel_mistake_is_one_short_error_at_its_line_on_the_nvidia_backend() {
    assert_short_and_located(Backend::Nvidia);
}
