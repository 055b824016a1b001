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
