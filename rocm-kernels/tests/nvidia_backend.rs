//! The nvidia backend on a real GPU: cubin, PTX and NVRTC images, faults and recovery.
//! Skips (with the reason) where no NVIDIA device or no nvcc is available, as on CI.

use rocm_kernels::embedded::{EmbeddedObject, KernelLibrary};
use rocm_kernels::nvcc::{self, NvccJob};
use rocm_kernels::runtime::{Device, LaunchConfig, RuntimeError};
use rocm_kernels::Backend;

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

fn nvidia_device() -> Option<Device> {
    let devices = Device::probe();
    match devices
        .available
        .into_iter()
        .find(|d| d.backend() == Backend::Nvidia)
    {
        Some(d) => Some(d),
        None => {
            let why = devices
                .unavailable
                .iter()
                .find(|(b, _)| *b == Backend::Nvidia)
                .map(|(_, r)| r.clone())
                .unwrap_or_default();
            eprintln!("skipped: no NVIDIA device ({why})");
            None
        }
    }
}

/// Compile SOURCE for `arch` (`sm_90` → cubin, `compute_90` → PTX) and leak it as 'static.
fn compiled(arch: &str) -> Option<&'static [u8]> {
    let env = |v: &str| std::env::var_os(v);
    let Ok(nvcc) = nvcc::find_nvcc(&env) else {
        eprintln!("skipped: nvcc not found");
        return None;
    };
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
    Some(Box::leak(std::fs::read(&out).unwrap().into_boxed_slice()))
}

fn library(
    format: &'static str,
    targets: &'static str,
    bytes: &'static [u8],
) -> &'static KernelLibrary {
    let objects = Box::leak(Box::new([EmbeddedObject {
        backend: Backend::Nvidia,
        targets,
        source: "k.hip",
        format,
        bytes,
    }]));
    Box::leak(Box::new(KernelLibrary {
        name: "nvidia-test",
        code_objects: objects,
        kernels: &[],
        cpu_kernels: &[],
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
        .launch(LaunchConfig::for_elements(n, 256))
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

#[test]
fn cubin_ptx_and_nvrtc_images_run_saxpy() {
    let Some(device) = nvidia_device() else {
        return;
    };
    assert_eq!(device.info().wave_size, 32);
    let arch: &'static str = Box::leak(device.info().arch.clone().into_boxed_str());
    if let Some(cubin) = compiled(arch) {
        run_saxpy(&device, library("cubin", arch, cubin));
    }
    let compute: &'static str = Box::leak(arch.replace("sm_", "compute_").into_boxed_str());
    if let Some(ptx) = compiled(compute) {
        run_saxpy(&device, library("ptx", compute, ptx));
    }
    match device.load(library("cuda-source", "", SOURCE.as_bytes())) {
        Ok(_) => run_saxpy(&device, library("cuda-source", "", SOURCE.as_bytes())),
        Err(e) => eprintln!("NVRTC path not run: {e}"),
    }
}

#[test]
fn warp_collectives_use_a_wave_of_32() {
    let Some(device) = nvidia_device() else {
        return;
    };
    let arch: &'static str = Box::leak(device.info().arch.clone().into_boxed_str());
    let Some(cubin) = compiled(arch) else { return };
    let module = device.load(library("cubin", arch, cubin)).unwrap();
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

/// A fault poisons the CUDA context of the process that made it, so it runs in a child process
/// (this test binary again, running only `faulting_kernel_child`).
#[test]
fn a_faulting_kernel_reports_the_cuda_error_and_later_work_is_recovered_or_not_run() {
    if nvidia_device().is_none() {
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "faulting_kernel_child",
            "--exact",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the child did not run: {text}");
    println!("{text}");
}

const CHILD_ENV: &str = "ROCM_KERNELS_FAULT_CHILD";

#[test]
fn faulting_kernel_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return; // run only as the child of the test above
    }
    let Some(device) = nvidia_device() else {
        return;
    };
    let arch: &'static str = Box::leak(device.info().arch.clone().into_boxed_str());
    let Some(cubin) = compiled(arch) else { return };
    let lib = library("cubin", arch, cubin);
    let module = device.load(lib).unwrap();
    let p = device.upload(&[1.0f32; 32]).unwrap();
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
    // Later work either runs on a reset context, or is refused with the reason (never a hang
    // or a crash).
    match device.load(lib) {
        Ok(_) => {
            run_saxpy(&device, lib);
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
