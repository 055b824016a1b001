//! Checks for the `nvidia` backend: nvcc (build time) or NVRTC (run time) to compile, libcuda to
//! load and launch, and NVIDIA GPUs. The CUDA toolkit may come from `PATH`, `CUDA_PATH`/
//! `CUDA_HOME`, `/usr/local/cuda`, or PyPI wheels (`nvidia-cuda-nvcc`, `nvidia-cuda-nvrtc`,
//! which install under `site-packages/nvidia/`).

use std::path::{Path, PathBuf};

use rocm_kernels::detect::Device;
use rocm_kernels::nvcc::find_nvcc;
use rocm_kernels::process::python_sys_path;
use rocm_kernels::Backend;

use super::libs::{in_dirs, load_first};
use super::{BackendReport, Check, Context, Status};
use crate::fix;

const TOOLKIT_FIX: &str =
    "pip install nvidia-cuda-nvcc nvidia-cuda-nvrtc nvidia-cuda-crt nvidia-cuda-cccl nvidia-nvvm";

pub fn check(ctx: &Context) -> BackendReport {
    let mut checks = Vec::new();
    let gpus: Vec<&Device> = ctx.detection.devices_of(Backend::Nvidia).collect();
    let toolkit_dirs = toolkit_dirs();
    let site_dirs = python_sys_path(Path::new("python3")).unwrap_or_default();

    let nvcc = nvcc_check(&mut checks);
    let nvrtc = nvrtc_check(&toolkit_dirs, &site_dirs, &mut checks);
    let can_build = nvcc || nvrtc;
    if !can_build {
        checks.push(
            Check::new(
                "CUDA compiler",
                Status::Error,
                "neither nvcc nor NVRTC is available: NVIDIA kernels cannot be compiled",
            )
            .fix(toolkit_fix()),
        );
    }
    let driver = libcuda_check(!gpus.is_empty(), &mut checks);
    device_check(&gpus, &mut checks);

    let can_run = can_build && driver && !gpus.is_empty();
    let summary = if can_run {
        format!(
            "nvidia: ready: runs on {} GPU{}",
            gpus.len(),
            if gpus.len() == 1 { "" } else { "s" }
        )
    } else if can_build {
        let why = if gpus.is_empty() {
            "no NVIDIA GPU in this machine"
        } else {
            "libcuda cannot be loaded"
        };
        format!("nvidia: builds kernels; cannot run them here ({why})")
    } else {
        "nvidia: cannot build kernels: no nvcc or NVRTC".to_owned()
    };
    BackendReport::new(Backend::Nvidia, checks, can_build, can_run, summary)
}

fn toolkit_fix() -> String {
    match fix::apt_install(&["nvidia-cuda-toolkit"]) {
        Some(apt) => format!("{TOOLKIT_FIX}\nor: {apt}   (Debian: from contrib/non-free)"),
        None => TOOLKIT_FIX.to_owned(),
    }
}

/// CUDA toolkit roots named by the environment or in the usual place.
fn toolkit_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"]
        .iter()
        .filter_map(|v| {
            std::env::var_os(v)
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
        })
        .collect();
    dirs.push(PathBuf::from("/usr/local/cuda"));
    dirs.push(PathBuf::from("/opt/cuda"));
    dirs.dedup();
    dirs
}

/// nvcc, found exactly as the build helper finds it (`rocm_kernels::nvcc::find_nvcc`), so
/// doctor's answer is the build's.
fn nvcc_check(checks: &mut Vec<Check>) -> bool {
    match find_nvcc(&|var| std::env::var_os(var)) {
        Ok(nvcc) => {
            checks.push(Check::ok(
                "nvcc",
                format!(
                    "{} (CUDA {}, found by {})",
                    nvcc.path.display(),
                    nvcc.version.as_deref().unwrap_or("version unknown"),
                    nvcc.found_by
                ),
            ));
            true
        }
        Err(_) => {
            // find_nvcc's error lists every folder it tried; the variables say it shorter.
            checks.push(Check::new(
                "nvcc",
                Status::Info,
                "not found (looked at NVCC, CUDA_PATH, CUDA_HOME, PATH, /usr/local/cuda and \
                 pip's nvidia-cuda-nvcc); kernels can still be compiled at run time with NVRTC",
            ));
            false
        }
    }
}

fn nvrtc_check(toolkits: &[PathBuf], site_dirs: &[PathBuf], checks: &mut Vec<Check>) -> bool {
    const NAMES: [&str; 4] = [
        "libnvrtc.so",
        "libnvrtc.so.13",
        "libnvrtc.so.12",
        "libnvrtc.so.11.2",
    ];
    // The loader's own search path first: that is where the runtime will find it.
    if let Ok(loaded) = load_first(&NAMES.map(String::from), "nvrtcVersion") {
        let version = nvrtc_version(&loaded.library);
        checks.push(Check::ok(
            "NVRTC",
            format!("loaded {} ({version})", loaded.name),
        ));
        return true;
    }
    let mut dirs: Vec<PathBuf> = toolkits.iter().map(|d| d.join("lib64")).collect();
    // CUDA 12 wheels: nvidia/cuda_nvrtc/lib; CUDA 13 wheels: nvidia/cu13/lib.
    for sub in ["nvidia/cuda_nvrtc/lib", "nvidia/cu13/lib"] {
        dirs.extend(site_dirs.iter().map(|d| d.join(sub)));
    }
    match load_first(&in_dirs(&dirs, &NAMES), "nvrtcVersion") {
        Ok(loaded) => {
            let dir = Path::new(&loaded.name)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default();
            checks.push(
                Check::new(
                    "NVRTC",
                    Status::Warn,
                    format!(
                        "{} ({}) is not on the loader's search path, so the runtime will not find it",
                        loaded.name,
                        nvrtc_version(&loaded.library)
                    ),
                )
                .fix(format!("export LD_LIBRARY_PATH={}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}", dir.display())),
            );
            false
        }
        Err(_) => {
            checks.push(Check::new(
                "NVRTC",
                Status::Info,
                "libnvrtc not found: kernels can still be compiled ahead of time with nvcc",
            ));
            false
        }
    }
}

fn nvrtc_version(lib: &libloading::Library) -> String {
    type NvrtcVersion = unsafe extern "C" fn(*mut i32, *mut i32) -> i32;
    // SAFETY: nvrtcVersion(int* major, int* minor) writes two ints and returns a status; it
    // needs no initialisation.
    unsafe {
        let Ok(f) = lib.get::<NvrtcVersion>(b"nvrtcVersion") else {
            return "version unknown".to_owned();
        };
        let (mut major, mut minor) = (0, 0);
        if f(&mut major, &mut minor) == 0 {
            format!("CUDA {major}.{minor}")
        } else {
            "version unknown".to_owned()
        }
    }
}

fn libcuda_check(have_gpu: bool, checks: &mut Vec<Check>) -> bool {
    let names = ["libcuda.so.1", "libcuda.so"].map(String::from);
    match load_first(&names, "cuDriverGetVersion") {
        Ok(loaded) => {
            type DriverGetVersion = unsafe extern "C" fn(*mut i32) -> i32;
            // SAFETY: cuDriverGetVersion(int*) needs no cuInit and writes one int.
            let version = unsafe {
                loaded
                    .library
                    .get::<DriverGetVersion>(b"cuDriverGetVersion")
                    .ok()
                    .and_then(|f| {
                        let mut v = 0;
                        (f(&mut v) == 0)
                            .then(|| format!("supports CUDA {}.{}", v / 1000, (v % 1000) / 10))
                    })
                    .unwrap_or_else(|| "version unknown".to_owned())
            };
            checks.push(Check::ok(
                "libcuda",
                format!("loaded {} ({version})", loaded.name),
            ));
            true
        }
        Err(why) => {
            let status = if have_gpu {
                Status::Error
            } else {
                Status::Warn
            };
            checks.push(
                Check::new(
                    "libcuda",
                    status,
                    format!("the CUDA driver library cannot be loaded ({why}); NVIDIA kernels cannot run"),
                )
                .fix("install the NVIDIA driver (Debian: `sudo apt-get install nvidia-driver` from non-free; Ubuntu: `sudo ubuntu-drivers install`)"),
            );
            false
        }
    }
}

fn device_check(gpus: &[&Device], checks: &mut Vec<Check>) {
    if gpus.is_empty() {
        checks.push(Check::new(
            "NVIDIA GPU",
            Status::Warn,
            "none in this machine: `nvidia` test trials are skipped",
        ));
    }
    for gpu in gpus {
        let cc = gpu
            .compute_capability
            .as_deref()
            .map(|c| {
                format!(
                    ", compute capability {c}{}",
                    if gpu.guess {
                        " (guessed from the name)"
                    } else {
                        ""
                    }
                )
            })
            .unwrap_or_default();
        checks.push(Check::ok("NVIDIA GPU", format!("{}{cc}", gpu.name)));
    }
}
