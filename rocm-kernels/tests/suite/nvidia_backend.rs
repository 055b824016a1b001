//! The nvidia backend on a real GPU: cubin, PTX and NVRTC images, faults and recovery.
//! Ignored (with the reason) where no NVIDIA device, nvcc or NVRTC is available, as on CI.

use rocm_kernels::library::{CodeObject, KernelDecl, KernelLibrary, ObjectFormat, ObjectSymbol};
use rocm_kernels::runtime::{Device, LaunchConfig, RuntimeError};
use rocm_kernels::Backend;
use rocm_toolkit::nvcc::{self, NvccJob};

const SOURCE: &str = r#"
#include <hip/hip_runtime.h>
__global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x;
    if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void wave_sum(const float* x, float* out) {
    float v = x[threadIdx.x];
    for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down(v, o);
    if (__lane_id() == 0) atomicAdd(out, v);
}
extern "C" __global__ void fault(float* p) {
    float* bad = (float*)0x10;
    bad[threadIdx.x] = p[0];
}
"#;

fn nvidia_device() -> Result<Device, String> {
    let devices = Device::probe();
    match devices
        .available
        .into_iter()
        .find(|d| d.backend() == Backend::Nvidia)
    {
        Some(d) => Ok(d),
        None => Err(devices
            .unavailable
            .iter()
            .find(|(b, _)| *b == Backend::Nvidia)
            .map(|(_, r)| r.clone())
            .unwrap_or_default()),
    }
}

fn device() -> Device {
    nvidia_device().expect("the test's needs say there is an NVIDIA device")
}

const NVIDIA_GPU: testkit::Need = testkit::Need::check(
    "an NVIDIA GPU with its driver",
    "run on a machine with an NVIDIA GPU (scripts/gpu-remote-test.sh)",
    testkit::Kind::Machine,
    || nvidia_device().map(|_| ()),
);

pub const NVCC: testkit::Need = testkit::Need::check(
    "nvcc",
    "install the CUDA toolkit matching the driver (`cargo rocm doctor --backend nvidia`)",
    testkit::Kind::Machine,
    || {
        let env = |v: &str| std::env::var_os(v);
        nvcc::find_nvcc(&env).map(|_| ()).map_err(|e| e.to_string())
    },
);

pub const NVRTC: testkit::Need = testkit::Need::check(
    "NVRTC",
    "install NVRTC matching the driver (`cargo rocm doctor --backend nvidia`)",
    testkit::Kind::Machine,
    || {
        rocm_kernels::runtime::rtc::nvidia::check_nvrtc("sm_80")
            .map(|_| ())
            .map_err(|e| e.to_string())
    },
);

/// Compile SOURCE for `arch` (`sm_90` → cubin, `compute_90` → PTX) and leak it as 'static.
fn compiled(arch: &str) -> &'static [u8] {
    let env = |v: &str| std::env::var_os(v);
    let nvcc = nvcc::find_nvcc(&env).expect("the test's needs say nvcc is here");
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("k.hip");
    std::fs::write(&src, SOURCE).unwrap();
    let out = dir.path().join(format!("k.{arch}"));
    let job = NvccJob {
        source: &src,
        arch,
        output: &out,
        include_dirs: &[],
        defines: &[],
        flags: &[],
        opt_level: 3,
        depfile: None,
    };
    nvcc::compile(&nvcc, &job).unwrap();
    Box::leak(std::fs::read(&out).unwrap().into_boxed_slice())
}

/// A library of one NVIDIA object, with its kernels' symbols read as the build reads them.
fn library(
    format: ObjectFormat,
    target: &'static str,
    bytes: &'static [u8],
) -> &'static KernelLibrary {
    let symbols: Vec<String> = match format {
        ObjectFormat::Cubin => rocm_code_object::nvidia::cubin_entries(bytes).unwrap(),
        ObjectFormat::Ptx => rocm_code_object::nvidia::ptx_entries(&String::from_utf8_lossy(bytes)),
        // NVRTC names them at load time.
        _ => Vec::new(),
    };
    let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
    let kernels: Vec<KernelDecl> = if symbols.is_empty() {
        ["saxpy", "wave_sum", "fault"]
            .iter()
            .map(|name| KernelDecl {
                name,
                source: "k.hip",
                params: &[],
                symbols: &[],
                cpu: None,
            })
            .collect()
    } else {
        symbols
            .iter()
            .map(|symbol| KernelDecl {
                name: leak(&rocm_code_object::symbols::kernel_name(symbol)),
                source: "k.hip",
                params: &[],
                symbols: Box::leak(Box::new([ObjectSymbol {
                    object: 0,
                    symbol: leak(symbol),
                }])),
                cpu: None,
            })
            .collect()
    };
    let objects = Box::leak(Box::new([CodeObject {
        backend: Backend::Nvidia,
        format,
        target,
        source: "k.hip",
        bytes,
    }]));
    Box::leak(Box::new(KernelLibrary {
        name: "nvidia-test",
        code_objects: objects,
        kernels: Box::leak(kernels.into_boxed_slice()),
        globals: &[],
    }))
}

fn run_saxpy(device: &Device, lib: &'static KernelLibrary) {
    let module = device.load(lib).unwrap();
    let saxpy = module.kernel("saxpy").unwrap();
    let n = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let xs = device.upload(&x).unwrap();
    let mut ys = device.upload(&vec![1.0f32; n]).unwrap();
    let stream = device.stream().unwrap();
    saxpy
        .launch(LaunchConfig::cover(n, 256))
        .arg(&2.0f32)
        .arg(&xs)
        .arg(&mut ys)
        .arg(&(n as i32))
        .run(&stream)
        .unwrap();
    let y = ys.to_vec().unwrap();
    for i in [0, 1, 12345, n - 1] {
        assert_eq!(y[i], 2.0 * i as f32 + 1.0, "element {i}");
    }
}

#[testkit::test(needs = [NVIDIA_GPU, NVCC])]
fn cubin_and_ptx_images_run_saxpy() {
    let device = device();
    assert_eq!(device.info().wave_size, 32);
    let arch: &'static str = Box::leak(device.info().arch.clone().into_boxed_str());
    run_saxpy(&device, library(ObjectFormat::Cubin, arch, compiled(arch)));
    let compute: &'static str = Box::leak(arch.replace("sm_", "compute_").into_boxed_str());
    run_saxpy(
        &device,
        library(ObjectFormat::Ptx, compute, compiled(compute)),
    );
}

#[testkit::test(needs = [NVIDIA_GPU, NVRTC])]
fn nvrtc_images_run_saxpy() {
    let device = device();
    run_saxpy(
        &device,
        library(ObjectFormat::CudaSource, "", SOURCE.as_bytes()),
    );
}

/// Sources written for hipcc compile with NVRTC as they are (no GPU needed): fixed-width integer
/// types without `<cstdint>` (NVRTC has none; rocm-examples' bit_extract), and cooperative groups,
/// whose CUDA 13 headers include libcu++ from `include/cccl`, with HIP's `__shfl_xor` and
/// `__ballot` still usable after them.
#[testkit::test(needs = [NVRTC])]
fn nvrtc_compiles_hipcc_style_sources() {
    const HIPCC_STYLE: &str = r#"#include <hip/hip_runtime.h>
#include <hip/hip_cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void bits(uint32_t* out, const uint32_t* in, size_t n) {
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = (in[i] & 0xf00u) >> 8;
}
__global__ void tiles(float* p, uint64_t* mask) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);
    float v = __shfl_xor(p[threadIdx.x], 1);
    mask[0] = __ballot(v > 0.0f);
    p[threadIdx.x] = tile.shfl(v, 0) + cg::reduce(tile, v, cg::plus<float>());
}
"#;
    let image = rocm_kernels::runtime::rtc::nvidia::compile_at_run_time(
        "hipcc_style.hip",
        HIPCC_STYLE.as_bytes(),
        "sm_90",
        &["bits", "tiles"],
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(image.symbols.len(), 2, "{:?}", image.symbols);
}

#[testkit::test(needs = [NVIDIA_GPU])]
fn pinned_host_memory_round_trips() {
    let device = device();
    let mut host = device.alloc_host::<f64>(3 << 20).unwrap();
    assert!(host.iter().all(|&x| x == 0.0));
    assert_eq!(host.as_ptr() as usize % 4096, 0);
    for (i, x) in host.iter_mut().enumerate() {
        *x = i as f64;
    }
    let mut buffer = device.upload(&host).unwrap();
    buffer.fill(0.5).unwrap();
    buffer.download(&mut host).unwrap();
    assert!(host.iter().all(|&x| x == 0.5));
    // Allocated and freed again and again: the pinning is undone each time.
    for _ in 0..20 {
        drop(device.alloc_host::<u8>(64 << 20).unwrap());
    }
}

#[testkit::test(needs = [NVIDIA_GPU, NVCC])]
fn warp_collectives_use_a_wave_of_32() {
    let device = device();
    let arch: &'static str = Box::leak(device.info().arch.clone().into_boxed_str());
    let cubin = compiled(arch);
    let module = device
        .load(library(ObjectFormat::Cubin, arch, cubin))
        .unwrap();
    let x = device.upload(&[1.0f32; 256]).unwrap();
    let mut out = device.upload(&[0.0f32]).unwrap();
    let stream = device.stream().unwrap();
    module
        .kernel("wave_sum")
        .unwrap()
        .launch(LaunchConfig::new(1, 256))
        .arg(&x)
        .arg(&mut out)
        .run(&stream)
        .unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![256.0]);
}

/// A fault poisons the CUDA context of the process that made it, so it runs in a process of its
/// own.
#[testkit::test(isolated, needs = [NVIDIA_GPU, NVCC])]
fn a_faulting_kernel_reports_the_cuda_error_and_later_work_is_recovered_or_not_run() {
    let device = device();
    let arch: &'static str = Box::leak(device.info().arch.clone().into_boxed_str());
    let cubin = compiled(arch);
    let lib = library(ObjectFormat::Cubin, arch, cubin);
    let module = device.load(lib).unwrap();
    let p = device.upload(&[1.0f32; 32]).unwrap();
    // Pinned host memory from before the fault stays valid through the reset.
    let mut host = device.alloc_host::<f32>(1 << 20).unwrap();
    host.fill(7.0);
    let stream = device.stream().unwrap();
    let launched = module
        .kernel("fault")
        .unwrap()
        .launch(LaunchConfig::new(1, 32))
        .arg(&p)
        .run(&stream);
    let err = launched
        .and_then(|_| stream.synchronize())
        .and_then(|_| device.synchronize())
        .expect_err("writing to address 0x10 must fault");
    let text = err.to_string();
    assert!(
        matches!(err, RuntimeError::Api { .. }),
        "unexpected error kind: {text}"
    );
    assert!(text.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{text}");
    assert!(text.contains("kernel `fault`"), "{text}");
    assert!(host.iter().all(|&x| x == 7.0));
    // Later work either runs on a reset context, or is refused with the reason (never a hang
    // or a crash).
    match device.load(lib) {
        Ok(_) => {
            run_saxpy(&device, lib);
            let mut fresh = device.alloc::<f32>(1 << 20).unwrap();
            fresh.upload(&host).unwrap();
            host.fill(0.0);
            fresh.download(&mut host).unwrap();
            assert!(host.iter().all(|&x| x == 7.0));
            println!("the device recovered after the fault");
        }
        Err(e) => {
            let text = e.to_string();
            assert!(
                matches!(e, RuntimeError::NoDevice { .. }) && text.contains("not run"),
                "{text}"
            );
            assert!(text.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{text}");
            println!("later work is reported as not run: {text}");
        }
    }
}
