//! hipRTC, the amd backend's run-time compiler (`cargo rocm tune` compiles candidates with it):
//! compiling needs no AMD GPU, only hipRTC (inside Debian's `libamdhip64` 5.2, as in this
//! project's CI, or `libhiprtc` from ROCm 6 on) and the device libraries. Each test runs in a
//! process of its own: hipRTC brings LLVM's signal handlers into the process, which then no
//! longer leaves a guard-page fault to the cpu backend's handler (the suite's out-of-bounds
//! tests crashed the whole test process on CI).

use rocm_kernels::library::ObjectFormat;
use rocm_kernels::runtime::backend::amd;
use rocm_kernels::runtime::RuntimeError;

use crate::amd_common::elf_mach;

const HIPRTC: testkit::Need = testkit::Need::check(
    "hipRTC",
    "install ROCm's HIP runtime (`apt-get install libamdhip64-dev` or `cargo rocm toolchain \
     install`)",
    testkit::Kind::Machine,
    || amd::hiprtc_version().map(|_| ()).map_err(|e| e.to_string()),
);

const SOURCE: &str = r#"#include <hip/hip_runtime.h>
template <typename T> __global__ void scale(T* p, T a) { p[threadIdx.x] *= a * SCALE; }
template __global__ void scale<float>(float*, float);
extern "C" __global__ void plain(int* p) { p[threadIdx.x] = SCALE; }
"#;

#[testkit::test(isolated, needs = [HIPRTC])]
fn hiprtc_compiles_a_code_object_with_the_kernels_symbols() {
    let image = amd::compile_at_run_time(
        "tunable.hip",
        SOURCE.as_bytes(),
        "gfx90a",
        &["scale<float>", "plain"],
        &["-DSCALE=3".to_string()],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(image.format, ObjectFormat::AmdgpuElf);
    assert_eq!(image.target, "gfx90a");
    assert!(image.bytes.starts_with(b"\x7fELF"), "not an ELF");
    // EF_AMDGPU_MACH_AMDGCN_GFX90A
    assert_eq!(elf_mach(&image.bytes), 0x3f);
    // The template's lowered (mangled) name and the plain one.
    let symbols: Vec<(&str, &str)> = image
        .symbols
        .iter()
        .map(|(k, s)| (k.as_str(), s.as_str()))
        .collect();
    assert_eq!(
        symbols,
        [("scale<float>", "_Z5scaleIfEvPT_S0_"), ("plain", "plain")]
    );
}

#[testkit::test(isolated, needs = [HIPRTC])]
fn a_hiprtc_compile_error_carries_the_compilers_log() {
    // Without -DSCALE the source does not compile.
    let err = amd::compile_at_run_time("tunable.hip", SOURCE.as_bytes(), "gfx90a", &["plain"], &[])
        .expect_err("SCALE is undefined");
    let RuntimeError::Api { call, message, .. } = &err else {
        panic!("{err}")
    };
    assert!(
        call.starts_with("hiprtcCompileProgram(tunable.hip, gfx90a)"),
        "{call}"
    );
    assert!(message.starts_with("compilation failed"), "{message}");
    assert!(message.contains("SCALE"), "{message}");
}
