//! hipRTC, the amd backend's run-time compiler (`cargo rocm tune` compiles candidates with it):
//! compiling needs no AMD GPU, only hipRTC (inside Debian's `libamdhip64` 5.2, as in this
//! project's CI, or `libhiprtc` from ROCm 6 on) and the device libraries. Each test runs in a
//! process of its own: hipRTC brings LLVM's signal handlers into the process, which took
//! guard-page faults from the cpu backend's handler (the suite's out-of-bounds tests crashed the
//! whole test process on CI); the runtime now puts its handlers back in front after each hipRTC
//! load and compile (`a_cpu_kernel_fault_after_hiprtc_is_still_reported`), and the isolation
//! stays as a second line.

use rocm_kernels::library::ObjectFormat;
use rocm_kernels::runtime::rtc::amd;
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

/// Issue 26: hipRTC in the process keeps the cpu backend's fault reports. hipRTC brings LLVM's
/// signal handlers, installed in front of the cpu backend's; a guard-page fault in a kernel then
/// reached LLVM's handler first and crashed the process (seen on CI, not on every machine: here a
/// stand-in that exits is installed as LLVM's would be, after the cpu backend's). The cpu runtime
/// puts its handlers back in front after every hipRTC load and compile
/// (`rk_signal_handlers_first`). Isolated: a crash fails this test only.
#[testkit::test(isolated, needs = [HIPRTC])]
fn a_cpu_kernel_fault_after_hiprtc_is_still_reported() {
    use rocm_kernels::runtime::{CpuOptions, Device, LaunchConfig};
    let d = Device::cpu(CpuOptions {
        threads: 2,
        ..CpuOptions::default()
    });
    let m = d.load(rocm_kernels_corpus::BUGS).unwrap();
    let fault = || {
        // 4096 bytes, a multiple of 256: no slack, so the write past the end faults on the guard
        // page (the fault handlers are what this tests).
        let n = 1024usize;
        let mut out = d.alloc::<f32>(n).unwrap();
        let err = m
            .kernel("oob_write")
            .unwrap()
            .launch(LaunchConfig::cover(n + 24, 256))
            .arg(&mut out)
            .arg(&(n as i32))
            .run(&d.stream().unwrap())
            .unwrap_err();
        assert!(
            matches!(err, RuntimeError::OutOfBounds { .. }),
            "expected the out-of-bounds write reported, got {err}"
        );
    };
    // The cpu backend's handlers first (its pool starts at the first launch), then another
    // library's in front of them.
    fault();
    extern "C" fn foreign(_: libc::c_int) {
        // Safety: async-signal-safe.
        unsafe { libc::_exit(3) }
    }
    // Safety: a plain handler for SIGSEGV, as a library's initialiser would install.
    unsafe {
        let handler: extern "C" fn(libc::c_int) = foreign;
        libc::signal(libc::SIGSEGV, handler as libc::sighandler_t);
    }
    amd::compile_at_run_time(
        "tunable.hip",
        SOURCE.as_bytes(),
        "gfx90a",
        &["plain"],
        &["-DSCALE=3".to_string()],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    fault();
    fault();
}
