//! Checks for the `amd` backend: a ROCm toolchain, its HIP compiler (and lld), device libraries
//! and the targets they cover, a test compile, libamdhip64, and AMD GPUs.

use rocm_kernels_core::Backend;
use rocm_toolkit::detect::{Device, DeviceSource};
use rocm_toolkit::toolchain::{HipCompiler, Toolchain, ToolchainSource, NOTABLE_TARGETS};

use super::libs::load_first;
use super::{BackendReport, Check, Context, Status};
use crate::fix;
use crate::selection::{SEARCHED, TOOLCHAIN_VAR};

pub fn check(ctx: &Context) -> BackendReport {
    let mut checks = Vec::new();
    let gpus: Vec<&Device> = ctx.detection.devices_of(Backend::Amd).collect();
    let explicit = ctx.toolchain_path.is_some() || std::env::var_os(TOOLCHAIN_VAR).is_some();

    let toolchain = match &ctx.selected {
        Ok(tc) => Some(tc.clone()),
        Err(e) if explicit => {
            checks.push(Check::new("ROCm toolchain", Status::Error, e.clone()));
            None
        }
        Err(_) => {
            checks.push(
                Check::new(
                    "ROCm toolchain",
                    Status::Error,
                    format!("no ROCm toolchain found ({SEARCHED})"),
                )
                .fix(fix::rocm_install()),
            );
            None
        }
    };
    for note in &ctx.discovery.notes {
        checks.push(Check::new("discovery", Status::Info, note.clone()));
    }

    let mut can_build = false;
    if let Some(tc) = &toolchain {
        checks.push(toolchain_check(tc, ctx));
        let compiler_ok = compiler_checks(tc, &mut checks);
        let libs_ok = device_lib_checks(tc, &gpus, &mut checks);
        can_build = compiler_ok && libs_ok && smoke_compile(tc, &gpus, &mut checks);
    }
    let runtime_ok = runtime_check(toolchain.as_ref(), !gpus.is_empty(), &mut checks);
    device_check(&gpus, &mut checks);

    let targets = toolchain.as_ref().map_or(0, |t| t.device_lib_targets.len());
    let can_run = can_build && runtime_ok && !gpus.is_empty();
    let summary = if can_run {
        format!(
            "amd: ready: builds for {targets} gfx targets and runs on {} GPU{}",
            gpus.len(),
            if gpus.len() == 1 { "" } else { "s" }
        )
    } else if can_build {
        let why = if gpus.is_empty() {
            "no AMD GPU in this machine"
        } else {
            "libamdhip64 cannot be loaded"
        };
        format!("amd: builds kernels for {targets} gfx targets; cannot run them here ({why})")
    } else {
        "amd: cannot build kernels: fix the errors above".to_owned()
    };
    BackendReport::new(Backend::Amd, checks, can_build, can_run, summary)
}

fn source_words(source: &ToolchainSource) -> String {
    match source {
        ToolchainSource::EnvVar { var } => format!("named by {var}"),
        ToolchainSource::Opt => "installed under /opt".to_owned(),
        ToolchainSource::Distro => "distribution packages".to_owned(),
        ToolchainSource::Pip => "pip-installed ROCm SDK".to_owned(),
        ToolchainSource::Managed { .. } => "managed by cargo rocm".to_owned(),
        ToolchainSource::Path => "--toolchain-path".to_owned(),
    }
}

fn toolchain_check(tc: &Toolchain, ctx: &Context) -> Check {
    let mut detail = format!(
        "{} (ROCm {}) at {}, {}",
        tc.name,
        tc.version.as_deref().unwrap_or("version unknown"),
        tc.root.display(),
        source_words(&tc.source)
    );
    let others: Vec<String> = ctx
        .discovery
        .toolchains
        .iter()
        .filter(|t| t.root != tc.root)
        .map(|t| format!("{} ({})", t.name, t.root.display()))
        .collect();
    if !others.is_empty() {
        detail.push_str(&format!("\nalso found: {}", others.join(", ")));
    }
    for note in &tc.notes {
        detail.push_str(&format!("\n{note}"));
    }
    Check::ok("ROCm toolchain", detail)
}

fn describe(c: &HipCompiler) -> String {
    match &c.version {
        Some(v) => format!("{} ({v})", c.path.display()),
        None => c.path.display().to_string(),
    }
}

/// The HIP compiler: the first complete one, and every compiler that lacks a program it runs
/// (`clang-offload-bundler`, `ld.lld`) with the package that provides it, since the build skips
/// those.
fn compiler_checks(tc: &Toolchain, checks: &mut Vec<Check>) -> bool {
    if tc.compilers.is_empty() {
        checks.push(
            Check::new(
                "HIP compiler",
                Status::Error,
                format!("no HIP compiler in {}", tc.root.display()),
            )
            .fix(fix::install_or(
                &["hipcc"],
                "install ROCm's `rocm-llvm` package or an upstream clang with the AMDGPU backend",
            )),
        );
        return false;
    }
    let chosen = tc.compiler();
    for c in tc.compilers.iter().filter(|c| !c.is_complete()) {
        let packages: Vec<&str> = c
            .missing
            .iter()
            .filter_map(|m| m.package.as_deref())
            .collect();
        let fix = if packages.len() == c.missing.len() {
            fix::install_or(&packages, &c.missing[0].fix())
        } else {
            c.missing
                .iter()
                .map(|m| m.fix())
                .collect::<Vec<_>>()
                .join("; ")
        };
        let missing: Vec<String> = c.missing.iter().map(|m| m.to_string()).collect();
        let status = if chosen.is_some() {
            Status::Warn
        } else {
            Status::Error
        };
        let consequence = match chosen {
            Some(other) => format!("the build uses {} instead", other.path.display()),
            None => "no other compiler of this toolchain can build kernels".to_owned(),
        };
        checks.push(
            Check::new(
                "HIP compiler",
                status,
                format!(
                    "{} cannot build offload bundles: {}; {consequence}",
                    describe(c),
                    missing.join(", ")
                ),
            )
            .fix(fix),
        );
    }
    let Some(compiler) = chosen else {
        return false;
    };
    let mut detail = describe(compiler);
    let others: Vec<String> = tc
        .compilers
        .iter()
        .filter(|c| c.path != compiler.path && c.is_complete())
        .map(|c| c.path.display().to_string())
        .collect();
    if !others.is_empty() {
        detail.push_str(&format!("\nalso: {}", others.join(", ")));
    }
    checks.push(Check::ok("HIP compiler", detail));
    true
}

/// Device libraries, the notable targets they cover and lack, and this machine's GPUs' targets.
fn device_lib_checks(tc: &Toolchain, gpus: &[&Device], checks: &mut Vec<Check>) -> bool {
    let Some(dir) = &tc.device_lib_path else {
        checks.push(
            Check::new(
                "device libraries",
                Status::Error,
                format!("no oclc_isa_version_*.bc under {}", tc.root.display()),
            )
            .fix(fix::install_or(
                &["rocm-device-libs"],
                "install ROCm's rocm-device-libs",
            )),
        );
        return false;
    };
    let (can, cannot): (Vec<&str>, Vec<&str>) =
        NOTABLE_TARGETS.iter().partition(|t| tc.supports_target(t));
    let mut detail = format!(
        "{} gfx targets in {}\nbuilds for: {}",
        tc.device_lib_targets.len(),
        dir.display(),
        if can.is_empty() {
            "none of the notable targets".to_owned()
        } else {
            can.join(" ")
        }
    );
    if !cannot.is_empty() {
        detail.push_str(&format!("\ncannot build for: {}", cannot.join(" ")));
    }
    detail.push_str(&format!("\nall: {}", tc.device_lib_targets.join(" ")));
    checks.push(Check::ok("device libraries", detail));

    if !cannot.is_empty() {
        checks.push(
            Check::new(
                "newer targets",
                Status::Warn,
                format!(
                    "this ROCm's device libraries lack {} (e.g. no {}); kernels for those \
                     targets will not compile with it",
                    cannot.join(", "),
                    rocm_toolkit::toolchain::device_lib_file(cannot[0]).unwrap_or_default()
                ),
            )
            .fix(format!(
                "install ROCm 6.2 or newer for gfx942/gfx1100-class GPUs ({})",
                fix::ROCM_INSTALL_DOCS
            )),
        );
    }
    // A GPU whose target is not covered is an error (its kernels cannot be built), though
    // building for the covered targets still works.
    for gpu in gpus {
        if let Some(arch) = &gpu.arch {
            if !tc.supports_target(arch) {
                checks.push(
                    Check::new(
                        "this machine's GPU",
                        Status::Error,
                        format!(
                            "{} is {arch}, which this toolchain's device libraries do not cover",
                            gpu.name
                        ),
                    )
                    .fix(format!(
                        "install a ROCm release that supports {arch} ({})",
                        fix::ROCM_INSTALL_DOCS
                    )),
                );
            }
        }
    }
    true
}

/// Compile a one-line kernel exactly as the build does (an offload bundle of two covered
/// targets where there are two), proving the compiler, its bundler and linker, and the device
/// libraries work together (a clang too old for the bitcode fails here, for instance).
fn smoke_compile(tc: &Toolchain, gpus: &[&Device], checks: &mut Vec<Check>) -> bool {
    let Some(compiler) = tc.compiler() else {
        return false;
    };
    let mut targets: Vec<String> = Vec::new();
    for t in gpus
        .iter()
        .filter_map(|g| g.arch.as_deref())
        .chain(["gfx90a", "gfx1030", "gfx942", "gfx1100"])
        .chain(tc.device_lib_targets.iter().map(String::as_str))
    {
        if tc.supports_target(t) && !targets.iter().any(|x| x == t) && targets.len() < 2 {
            targets.push(t.to_owned());
        }
    }
    if targets.is_empty() {
        return false;
    }
    let list = targets.join(", ");
    match rocm_kernels_build::check_amd_compiler(tc, compiler, &targets) {
        Ok(()) => {
            checks.push(Check::ok(
                "test compile",
                format!(
                    "compiled a kernel for {list} with {}",
                    compiler.path.display()
                ),
            ));
            true
        }
        Err(e) => {
            checks.push(
                Check::new(
                    "test compile",
                    Status::Error,
                    format!("compiling a one-line kernel for {list} failed: {e}"),
                )
                .fix(
                    "check that the compiler and device libraries come from matching releases; \
                     another install can be chosen with --toolchain-path",
                ),
            );
            false
        }
    }
}

/// libamdhip64 loadable: the toolchain's own copy first, then the loader's search path.
fn runtime_check(tc: Option<&Toolchain>, have_gpu: bool, checks: &mut Vec<Check>) -> bool {
    let mut candidates: Vec<String> = tc
        .and_then(|t| t.hip_runtime_lib.as_ref())
        .map(|p| p.display().to_string())
        .into_iter()
        .collect();
    for soname in [
        "libamdhip64.so",
        "libamdhip64.so.7",
        "libamdhip64.so.6",
        "libamdhip64.so.5",
    ] {
        candidates.push(soname.to_owned());
    }
    match load_first(&candidates, "hipModuleLoadData") {
        Ok(loaded) => {
            checks.push(Check::ok("HIP runtime", format!("loaded {}", loaded.name)));
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
                    "HIP runtime",
                    status,
                    format!("libamdhip64 cannot be loaded ({why}); AMD kernels cannot run"),
                )
                .fix(fix::install_or(
                    &["libamdhip64-dev"],
                    "install ROCm's hip-runtime-amd package",
                )),
            );
            false
        }
    }
}

fn device_check(gpus: &[&Device], checks: &mut Vec<Check>) {
    if gpus.is_empty() {
        checks.push(Check::new(
            "AMD GPU",
            Status::Warn,
            "none in this machine: kernels still build, and `amd` test trials are skipped",
        ));
        return;
    }
    // The driver lists GPUs in sysfs for everyone, but the runtime needs read-write access to
    // /dev/kfd: the usual "GPU detected, no device found at run time" on a fresh install.
    if gpus.iter().any(|g| g.source != DeviceSource::Lspci) {
        if let Err(e) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/kfd")
        {
            checks.push(
                Check::new(
                    "GPU access",
                    Status::Error,
                    format!("cannot open /dev/kfd for reading and writing ({e}): the HIP runtime will see no GPU"),
                )
                .fix("sudo usermod -aG render,video $USER   (then log out and in again)"),
            );
        }
    }
    for gpu in gpus {
        let arch = gpu.arch.as_deref().unwrap_or("unknown target");
        let guess = if gpu.guess {
            " (guessed from its PCI ID: no driver)"
        } else {
            ""
        };
        let status = if gpu.guess { Status::Warn } else { Status::Ok };
        let mut check = Check::new("AMD GPU", status, format!("{} {arch}{guess}", gpu.name));
        if gpu.guess {
            check =
                check.fix("sudo modprobe amdgpu, and add yourself to the render and video groups");
        }
        checks.push(check);
    }
}
