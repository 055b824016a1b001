//! The cpu build end to end. Its per-kernel fallback: in a crate built by cargo, a kernel whose
//! region form does not compile runs with per-thread fibers, and only it (its neighbour in the same
//! source keeps its region form); the build says so once, and both kernels give the right results
//! in every execution mode at both wave sizes. (Built here rather than in the runtime's corpus,
//! whose normal build must print no warnings.) And what it refuses: inline assembly.

use rocm_kernels_build::{Backend, Build, BuildError};

use crate::fixture::Fixture;

const BUILD_RS: &str = r#"
fn main() {
    rocm_kernels_build::Build::new()
        .file("kernels/fallback.hip")
        .backend(rocm_kernels_build::Backend::Cpu)
        .compile("kernels");
}
"#;

/// `region_form_fails` keeps a variable of a type with a destructor of its own across a barrier:
/// lane slots are never destroyed, so its region form does not compile (a `static_assert` says
/// why). That is a limit of the region form, not a bug it could fix.
const FALLBACK_HIP: &str = r#"#include <hip/hip_runtime.h>

struct Logged {
    float v;
    __device__ ~Logged() { v = 0.0f; }
};

__global__ void region_form_fails(const float* in, float* out, int n) {
    __shared__ float s[256];
    int t = threadIdx.x;
    Logged w{in[(blockIdx.x * blockDim.x + t) % n] * 2.0f};
    s[t] = w.v;
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = s[blockDim.x - 1 - t] + w.v;
}

__global__ void region_form_compiles(const float* in, float* out, int n) {
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = in[(blockIdx.x * blockDim.x + t) % n];
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = s[blockDim.x - 1 - t] * 3.0f;
}
"#;

/// Runs both kernels in every mode and wave size against results computed here; prints how the
/// build runs each, then `checked` once everything matched.
const MAIN_RS: &str = r#"
use rocm_kernels::runtime::{CpuExec, CpuOptions, Device, LaunchConfig};

static KERNELS: &rocm_kernels::KernelLibrary = rocm_kernels::include_kernels!("kernels");

fn main() {
    for k in KERNELS.kernels {
        println!("execution {}: {}", k.name, k.cpu.expect("a cpu entry").execution);
    }
    const N: usize = 1024;
    let (grid, block) = (4usize, 256usize);
    let input: Vec<f32> = (0..N).map(|i| (i % 11) as f32 * 0.5).collect();
    let mirrored = |g: usize| input[(g / block) * block + block - 1 - g % block];
    for wave in [32, 64] {
        for exec in [CpuExec::Regions, CpuExec::Blocks, CpuExec::Fibers] {
            let d = Device::cpu(CpuOptions { wave_size: wave, threads: 2, exec, ..CpuOptions::default() });
            let m = d.load(KERNELS).unwrap();
            for (kernel, want) in [
                ("region_form_fails", &(|g: usize| mirrored(g) * 2.0 + input[g] * 2.0) as &dyn Fn(usize) -> f32),
                ("region_form_compiles", &|g: usize| mirrored(g) * 3.0),
            ] {
                let inb = d.upload(&input).unwrap();
                let mut out = d.alloc::<f32>(N).unwrap();
                m.kernel(kernel)
                    .unwrap()
                    .launch(LaunchConfig::new(grid as u32, block as u32))
                    .arg(&inb)
                    .arg(&mut out)
                    .arg(&(N as i32))
                    .run(&d.stream().unwrap())
                    .unwrap();
                let out = out.to_vec().unwrap();
                for g in 0..N {
                    assert_eq!(out[g], want(g), "{kernel}[{g}] at wave {wave}, {exec:?}");
                }
            }
        }
    }
    println!("checked");
}
"#;

#[testkit::test]
fn a_region_form_that_does_not_compile_costs_only_its_own_kernel() {
    let f = Fixture::new(
        "rk_cpu_fallback",
        BUILD_RS,
        &[
            ("kernels/fallback.hip", FALLBACK_HIP),
            ("src/main.rs", MAIN_RS),
        ],
        "",
    );
    let (stdout, stderr) = f.run_ok(&[]);
    let fails = stdout
        .lines()
        .find_map(|l| l.strip_prefix("execution region_form_fails: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        fails.starts_with("fibers: its region form did not compile: ")
            && fails.contains("trivially destructible"),
        "{fails}"
    );
    assert!(
        stdout.contains("execution region_form_compiles: regions"),
        "{stdout}"
    );
    assert!(stdout.contains("checked"), "{stdout}");
    // The build warned, once, about that kernel alone.
    assert_eq!(
        stderr.matches("runs kernel `region_form_fails`").count(),
        1,
        "{stderr}"
    );
    assert!(!stderr.contains("`region_form_compiles`"), "{stderr}");
}

#[testkit::test]
fn inline_assembly_is_refused_naming_the_kernel_and_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("k.hip");
    std::fs::write(
        &src,
        "#include <hip/hip_runtime.h>\n\
         __device__ unsigned lane_mask() {\n\
             unsigned m;\n\
             asm volatile(\"s_mov_b32 %0, exec_lo\" : \"=s\"(m));\n\
             return m;\n\
         }\n\
         __global__ void portable(int* p) { p[0] = 1; }\n\
         __global__ void uses_gcn(int* p) { p[0] = lane_mask(); }\n\
         #if defined(__HIP_PLATFORM_AMD__)\n\
         __global__ void amd_only(int* p) { asm volatile(\"s_nop 0\"); }\n\
         #endif\n",
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = Build::new()
        .cargo_metadata(false)
        .out_dir(out.path())
        .file(&src)
        .backend(Backend::Cpu)
        .try_compile("k")
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, BuildError::Cpu(_)), "{text}");
    assert!(
        text.contains("kernel `uses_gcn` cannot run on the cpu backend: it uses inline assembly (in `lane_mask`)"),
        "{text}"
    );
    assert!(text.contains("k.hip:4"), "{text}");
    assert!(text.contains("__HIP_PLATFORM_AMD__"), "{text}");
    assert!(!text.contains("please report"), "{text}");
}

/// Two kernel libraries of one crate, as on a GPU two code objects: each defines the same kernel
/// (with a barrier, so it has a region form), template instance, `__device__` helper, inline
/// function and `__constant__` table, differently. Both link, and each library runs its own, in
/// every execution mode, with the race check's instrumented copies too.
const TWO_LIBS_BUILD_RS: &str = r#"
fn main() {
    for lib in ["first", "second"] {
        rocm_kernels_build::Build::new()
            .file(format!("kernels/{lib}/k.hip"))
            .backend(rocm_kernels_build::Backend::Cpu)
            .compile(lib);
    }
}
"#;

fn same_named_kernels(factor: f32, bias: f32, step: i32) -> String {
    format!(
        r#"#include <hip/hip_runtime.h>

__constant__ float factor[1] = {{{factor:?}f}};
__device__ int launches = 0;

inline __device__ float bias() {{ return {bias:?}f; }}
__device__ float helper(float v) {{ return v * factor[0] + bias(); }}

__global__ void matrix_transpose_kernel(float* out, const float* in, unsigned n) {{
    __shared__ float s[64];
    unsigned t = threadIdx.x;
    s[t] = helper(in[t]);
    __syncthreads();
    out[t] = s[n - 1 - t];
    if (t == 0) atomicAdd(&launches, 1);
}}

template <int N> __global__ void add(float* p) {{ p[threadIdx.x] += N * {step}; }}
template __global__ void add<4>(float*);
"#
    )
}

const TWO_LIBS_MAIN_RS: &str = r#"
use rocm_kernels::runtime::{CpuExec, CpuOptions, Device, LaunchConfig};

static FIRST: &rocm_kernels::KernelLibrary = rocm_kernels::include_kernels!("first");
static SECOND: &rocm_kernels::KernelLibrary = rocm_kernels::include_kernels!("second");

fn main() {
    const N: usize = 64;
    let input: Vec<f32> = (0..N).map(|i| i as f32).collect();
    for race_check in [false, true] {
        for exec in [CpuExec::Regions, CpuExec::Fibers] {
            let d = Device::cpu(CpuOptions { race_check, exec, ..CpuOptions::default() });
            for (lib, factor, bias, step) in [(FIRST, 2.0f32, 1.0f32, 1.0f32), (SECOND, 3.0, 5.0, 10.0)] {
                let m = d.load(lib).unwrap();
                let inb = d.upload(&input).unwrap();
                let mut out = d.alloc::<f32>(N).unwrap();
                let s = d.stream().unwrap();
                m.kernel("matrix_transpose_kernel").unwrap()
                    .launch(LaunchConfig::new(1, N as u32))
                    .arg(&mut out).arg(&inb).arg(&(N as u32))
                    .run(&s).unwrap();
                let out = out.to_vec().unwrap();
                for t in 0..N {
                    assert_eq!(out[t], input[N - 1 - t] * factor + bias, "{} [{t}]", lib.name);
                }
                let mut p = d.upload(&input).unwrap();
                m.kernel("add<4>").unwrap().launch(LaunchConfig::new(1, N as u32)).arg(&mut p).run(&s).unwrap();
                let p = p.to_vec().unwrap();
                assert_eq!(p[3], 3.0 + 4.0 * step, "{} add<4>", lib.name);
                let launches: i32 = m.global("launches").unwrap().read_value().unwrap();
                assert!(launches >= 1, "{}: launches {launches}", lib.name);
                let f: f32 = m.global("factor").unwrap().read_value().unwrap();
                assert_eq!(f, factor, "{} factor", lib.name);
            }
        }
    }
    println!("checked");
}
"#;

#[testkit::test]
fn two_libraries_may_define_the_same_kernels_helpers_and_globals() {
    let first = same_named_kernels(2.0, 1.0, 1);
    let second = same_named_kernels(3.0, 5.0, 10);
    let f = Fixture::new(
        "rk_cpu_two_libs",
        TWO_LIBS_BUILD_RS,
        &[
            ("kernels/first/k.hip", &first),
            ("kernels/second/k.hip", &second),
            ("src/main.rs", TWO_LIBS_MAIN_RS),
        ],
        "",
    );
    let (stdout, stderr) = f.run_ok(&[]);
    assert!(stdout.contains("checked"), "{stdout}\n{stderr}");
    assert!(!stderr.contains("objcopy"), "{stderr}");
}
