//! Checks for the `nvidia` backend: nvcc (build time) or NVRTC (run time) to compile, libcuda to
//! load and launch, and NVIDIA GPUs. The CUDA toolkit may come from `PATH`, `CUDA_PATH`/
//! `CUDA_HOME`, `/usr/local/cuda`, or PyPI wheels (`nvidia-cuda-nvcc`, `nvidia-cuda-nvrtc`,
//! which install under `site-packages/nvidia/`).

use rocm_kernels_build::check_nvcc;
use rocm_kernels_core::Backend;
use rocm_toolkit::detect::Device;
use rocm_toolkit::nvcc::{find_nvcc, major_minor, mismatched_wheels, pip_install_line};

use super::libs::load_first;
use super::{BackendReport, Check, Context, Status};
use crate::fix;

/// The CUDA release pip wheels are pinned to when neither the driver nor nvcc says which: the
/// newest the project has been run with (driver 580).
const DEFAULT_RELEASE: &str = "13.0";

pub fn check(ctx: &Context) -> BackendReport {
    let mut checks = Vec::new();
    let gpus: Vec<&Device> = ctx.detection.devices_of(Backend::Nvidia).collect();
    let driver_release = driver_cuda_release();
    // The test compiles target this machine's GPU, else one every CUDA 11-13 nvcc knows.
    let arch = gpus
        .iter()
        .find_map(|g| g.compute_capability.as_deref())
        .map(|cc| format!("sm_{}", cc.replace('.', "")))
        .unwrap_or_else(|| "sm_80".to_owned());

    let nvcc = nvcc_check(&mut checks, &arch, driver_release.as_deref());
    let nvrtc = nvrtc_check(&arch, &mut checks);
    let can_build = nvcc || nvrtc;
    if !can_build {
        checks.push(
            Check::new(
                "CUDA compiler",
                Status::Error,
                "neither nvcc nor NVRTC can compile NVIDIA kernels here",
            )
            .fix(toolkit_fix(driver_release.as_deref())),
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

/// How to install a CUDA toolkit that matches this machine's driver: pip wheels pinned to the
/// driver's CUDA release (every wheel, the runtime's headers included), or the distribution's.
fn toolkit_fix(driver_release: Option<&str>) -> String {
    let pip = match driver_release {
        Some(r) => format!(
            "{}   (CUDA {r}: the release this driver supports)",
            pip_install_line(r)
        ),
        None => format!(
            "{}   (for a 580 driver; use the CUDA release `nvidia-smi` shows for yours)",
            pip_install_line(DEFAULT_RELEASE)
        ),
    };
    match fix::apt_install(&["nvidia-cuda-toolkit"]) {
        Some(apt) => format!("{pip}\nor: {apt}   (Debian: from contrib/non-free)"),
        None => pip,
    }
}

/// The CUDA release the installed driver supports (`13.0`), from `cuDriverGetVersion`.
fn driver_cuda_release() -> Option<String> {
    let loaded = load_first(
        &["libcuda.so.1", "libcuda.so"].map(String::from),
        "cuDriverGetVersion",
    )
    .ok()?;
    type DriverGetVersion = unsafe extern "C" fn(*mut i32) -> i32;
    // SAFETY: cuDriverGetVersion(int*) needs no cuInit and writes one int.
    unsafe {
        let f = loaded
            .library
            .get::<DriverGetVersion>(b"cuDriverGetVersion")
            .ok()?;
        let mut v = 0;
        (f(&mut v) == 0 && v > 0).then(|| format!("{}.{}", v / 1000, (v % 1000) / 10))
    }
}

/// nvcc, found exactly as the build helper finds it (`rocm_toolkit::nvcc::find_nvcc`), so
/// doctor's answer is the build's; then the wheels beside it (one CUDA release), and a test
/// compile exactly as the build compiles.
fn nvcc_check(checks: &mut Vec<Check>, arch: &str, driver_release: Option<&str>) -> bool {
    let nvcc = match find_nvcc(&|var| std::env::var_os(var)) {
        Ok(nvcc) => nvcc,
        Err(_) => {
            // find_nvcc's error lists every folder it tried; the variables say it shorter.
            checks.push(Check::new(
                "nvcc",
                Status::Info,
                "not found (looked at NVCC, CUDA_PATH, CUDA_HOME, PATH, /usr/local/cuda and \
                 pip's nvidia-cuda-nvcc); kernels can still be compiled at run time with NVRTC",
            ));
            return false;
        }
    };
    checks.push(Check::ok(
        "nvcc",
        format!(
            "{} (CUDA {}, found by {})",
            nvcc.path.display(),
            nvcc.version.as_deref().unwrap_or("version unknown"),
            nvcc.found_by
        ),
    ));
    let release = nvcc.version.as_deref().map(major_minor);
    let mismatched = mismatched_wheels(&nvcc);
    if !mismatched.is_empty() {
        let release = release.as_deref().unwrap_or(DEFAULT_RELEASE);
        let list: Vec<String> = mismatched
            .iter()
            .map(|w| format!("{} {}", w.name, w.version))
            .collect();
        let pins: Vec<String> = mismatched
            .iter()
            .map(|w| format!("\"{}=={release}.*\"", w.name))
            .collect();
        checks.push(
            Check::new(
                "CUDA wheels",
                Status::Error,
                format!(
                    "{} beside nvcc {} come from another CUDA release than nvcc ({release}): \
                     their headers and nvcc's ptxas do not work together",
                    list.join(", "),
                    nvcc.version.as_deref().unwrap_or("")
                ),
            )
            .fix(format!("pip install {}", pins.join(" "))),
        );
    }
    if let (Some(nvcc_release), Some(driver)) = (release.as_deref(), driver_release) {
        if version_key(nvcc_release) > version_key(driver) {
            checks.push(
                Check::new(
                    "nvcc and driver",
                    Status::Warn,
                    format!(
                        "nvcc is CUDA {nvcc_release}, newer than the driver's CUDA {driver}: \
                         cubins it builds may not load"
                    ),
                )
                .fix(pip_install_line(driver)),
            );
        }
    }
    match check_nvcc(&nvcc, arch) {
        Ok(()) => {
            checks.push(Check::ok(
                "test compile",
                format!("compiled a kernel with warp intrinsics for {arch} with nvcc"),
            ));
            mismatched.is_empty()
        }
        Err(e) => {
            let fix = match release.as_deref() {
                Some(r) => format!(
                    "{}   (every wheel from CUDA {r}, nvcc's release)",
                    pip_install_line(r)
                ),
                None => toolkit_fix(driver_release),
            };
            checks.push(
                Check::new(
                    "test compile",
                    Status::Error,
                    format!("nvcc cannot compile a one-line kernel for {arch}: {e}"),
                )
                .fix(fix),
            );
            false
        }
    }
}

/// `13.0` → `(13, 0)`, for comparing releases.
fn version_key(release: &str) -> (u32, u32) {
    let mut parts = release.split('.').map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// NVRTC as the runtime finds it (the loader's path, the toolkit folders, pip's wheels), and a
/// test compile as a library built without nvcc is compiled at load time.
fn nvrtc_check(arch: &str, checks: &mut Vec<Check>) -> bool {
    match rocm_kernels::runtime::rtc::nvidia::check_nvrtc(arch) {
        Ok(library) => {
            checks.push(Check::ok(
                "NVRTC",
                format!("{library} compiled a kernel with warp intrinsics for {arch}"),
            ));
            true
        }
        Err(rocm_kernels::runtime::RuntimeError::LibraryLoad { .. }) => {
            checks.push(Check::new(
                "NVRTC",
                Status::Info,
                "libnvrtc not found: kernels can still be compiled ahead of time with nvcc",
            ));
            false
        }
        Err(e) => {
            checks.push(
                Check::new(
                    "NVRTC",
                    Status::Error,
                    format!("NVRTC cannot compile a one-line kernel for {arch}: {e}"),
                )
                .fix(
                    "install the CUDA headers of NVRTC's release (pip: nvidia-cuda-runtime and \
                     nvidia-cuda-cccl pinned to it), or set CUDA_PATH to the toolkit",
                ),
            );
            false
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
