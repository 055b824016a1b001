//! `inspect` and `discover_with` over fixture ROCm installs that the tests create: the
//! `/opt/rocm-X.Y.Z` layout, Debian's `/usr` layout, a pip SDK, and things that are not ROCm.

use std::fs;
use std::path::Path;

use rocm_toolkit::toolchain::{
    discover_with, inspect, CompilerKind, DiscoverOptions, ToolchainSource,
};

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A shell script standing in for a compiler: prints `version` for `--version`, when `amdgpu`
/// an `amdgcn` line for `--print-targets`, and for `-print-prog-name=TOOL` the tool beside its
/// real path when it is there (as clang does). `clang-offload-bundler`, `llvm-objcopy` and
/// `ld.lld` stubs are put beside it.
fn fake_compiler(path: &Path, version: &str, amdgpu: bool) {
    fake_compiler_lacking(path, version, amdgpu, &[]);
}

/// [`fake_compiler`] without the tools named in `lacking` beside it.
fn fake_compiler_lacking(path: &Path, version: &str, amdgpu: bool, lacking: &[&str]) {
    let targets = if amdgpu {
        "    amdgcn     - AMD GCN GPUs\n    x86-64     - 64-bit X86"
    } else {
        "    x86-64     - 64-bit X86"
    };
    write(
        path,
        &format!(
            "#!/bin/sh\ncase \"$1\" in\n  --version) echo '{version}'; echo 'Target: x86_64';;\n  \
             --print-targets) echo '  Registered Targets:'; echo '{targets}';;\n  \
             -print-prog-name=*) n=\"${{1#-print-prog-name=}}\"; d=$(dirname \"$(readlink -f \"$0\")\"); \
             if [ -x \"$d/$n\" ]; then echo \"$d/$n\"; else echo \"$n\"; fi;;\nesac\n"
        ),
    );
    make_executable(path);
    for tool in ["clang-offload-bundler", "llvm-objcopy", "ld.lld"] {
        let stub = path.with_file_name(tool);
        if lacking.contains(&tool) {
            let _ = fs::remove_file(&stub);
        } else {
            write(&stub, "#!/bin/sh\n");
            make_executable(&stub);
        }
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

fn bitcode(dir: &Path, suffixes: &[&str]) {
    write(&dir.join("ocml.bc"), "BC");
    for s in suffixes {
        write(&dir.join(format!("oclc_isa_version_{s}.bc")), "BC");
    }
}

/// `/opt/rocm-6.2.0`: `.info/version`, `lib/llvm/bin/clang++`, `amdgcn/bitcode`, hipcc, libamdhip64.
fn opt_install(root: &Path, version: &str) {
    write(&root.join(".info/version"), &format!("{version}-66\n"));
    fake_compiler(
        &root.join("lib/llvm/bin/clang++"),
        "AMD clang version 18.0.0git",
        true,
    );
    fake_compiler(&root.join("bin/hipcc"), "HIP version: 6.2.41133", true);
    bitcode(
        &root.join("amdgcn/bitcode"),
        &["908", "90a", "940", "941", "942", "1030", "1100", "1101"],
    );
    write(&root.join("lib/libamdhip64.so.6.2.60200"), "ELF");
    write(&root.join("lib/libamdhip64.so"), "ELF");
}

/// Debian 12's layout: hipcc, `share/hip/version`, device libraries under the multiarch
/// folder, and two distro LLVMs of which one lacks AMDGPU.
fn debian_install(usr: &Path) {
    write(
        &usr.join("share/hip/version"),
        "HIP_VERSION_MAJOR=5\nHIP_VERSION_MINOR=2\nHIP_VERSION_PATCH=21153\nHIP_VERSION_GITHASH=\n",
    );
    fake_compiler(&usr.join("bin/hipcc"), "HIP version: 5.2.21153-0", true);
    fake_compiler(
        &usr.join("lib/llvm-19/bin/clang++"),
        "Debian clang version 19.1.7",
        true,
    );
    fake_compiler(
        &usr.join("bin/clang++-19"),
        "Debian clang version 19.1.7",
        true,
    );
    fake_compiler(
        &usr.join("lib/llvm-15/bin/clang++"),
        "Debian clang version 15.0.6",
        true,
    );
    fake_compiler(
        &usr.join("lib/llvm-14/bin/clang++"),
        "Debian clang version 14.0.6",
        false,
    );
    bitcode(
        &usr.join("lib/x86_64-linux-gnu/amdgcn/bitcode"),
        &["900", "906", "908", "90a", "90c", "940", "1030", "1031"],
    );
    write(
        &usr.join("lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153"),
        "ELF",
    );
    write(&usr.join("lib/x86_64-linux-gnu/libamdhip64.so.5"), "ELF");
}

#[testkit::test]
fn opt_layout_is_fully_described() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("rocm-6.2.0");
    opt_install(&root, "6.2.0");
    let tc = inspect(&root, ToolchainSource::Opt).expect("an install");
    assert_eq!(tc.name, "rocm-6.2.0");
    assert_eq!(tc.version.as_deref(), Some("6.2.0-66"));
    assert_eq!(tc.compilers.len(), 2);
    assert_eq!(tc.compilers[0].kind, CompilerKind::Clang);
    assert_eq!(tc.compilers[0].path, root.join("lib/llvm/bin/clang++"));
    assert_eq!(
        tc.compilers[0].version.as_deref(),
        Some("AMD clang version 18.0.0git")
    );
    assert_eq!(tc.compilers[1].kind, CompilerKind::Hipcc);
    assert_eq!(tc.device_lib_path, Some(root.join("amdgcn/bitcode")));
    assert_eq!(
        tc.device_lib_targets,
        ["gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx1030", "gfx1100", "gfx1101"]
    );
    assert_eq!(tc.hip_runtime_lib, Some(root.join("lib/libamdhip64.so")));
    assert!(tc.can_compile());
    assert!(tc.supports_target("gfx942"));
    assert!(tc.supports_target("gfx90a:xnack+"));
    assert!(!tc.supports_target("gfx1151"));
    assert_eq!(
        tc.device_lib_file_for("gfx942"),
        Some(root.join("amdgcn/bitcode/oclc_isa_version_942.bc"))
    );
    assert_eq!(
        tc.missing_targets(&["gfx90a", "gfx1151", "gfx950"]),
        ["gfx1151", "gfx950"]
    );
}

#[testkit::test]
fn older_opt_layout_with_llvm_folder_and_hip_version_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("rocm-5.4.3");
    fake_compiler(&root.join("llvm/bin/clang++"), "clang version 15.0.0", true);
    write(
        &root.join("share/hip/version"),
        "HIP_VERSION_MAJOR=5\nHIP_VERSION_MINOR=4\nHIP_VERSION_PATCH=22804\nHIP_VERSION_GITHASH=474e8620\n",
    );
    bitcode(
        &root.join("llvm/lib/clang/15.0.0/lib/amdgcn/bitcode"),
        &["90a"],
    );
    let tc = inspect(&root, ToolchainSource::Opt).unwrap();
    assert_eq!(tc.version.as_deref(), Some("5.4.22804-474e8620"));
    assert_eq!(tc.compilers[0].path, root.join("llvm/bin/clang++"));
    assert_eq!(tc.device_lib_targets, ["gfx90a"]);
    assert_eq!(tc.hip_runtime_lib, None);
}

#[testkit::test]
fn a_clang_without_its_offload_bundler_is_passed_over_and_named_with_its_package() {
    let tmp = tempfile::tempdir().unwrap();
    let usr = tmp.path().join("usr");
    debian_install(&usr);
    // clang 19 without clang-tools-19: no clang-offload-bundler beside it; `bin/clang++-19` is a
    // link to it, as Debian installs it.
    fs::remove_file(usr.join("bin/clang++-19")).unwrap();
    std::os::unix::fs::symlink("../lib/llvm-19/bin/clang++", usr.join("bin/clang++-19")).unwrap();
    fake_compiler_lacking(
        &usr.join("lib/llvm-19/bin/clang++"),
        "Debian clang version 19.1.7",
        true,
        &["clang-offload-bundler"],
    );
    let tc = inspect(&usr, ToolchainSource::Distro).unwrap();
    let clang19 = &tc.compilers[0];
    assert_eq!(clang19.path, usr.join("bin/clang++-19"));
    assert!(!clang19.is_complete());
    assert_eq!(clang19.missing.len(), 1, "{:?}", clang19.missing);
    assert_eq!(clang19.missing[0].tool, "clang-offload-bundler");
    assert_eq!(
        clang19.missing[0].package.as_deref(),
        Some("clang-tools-19")
    );
    assert_eq!(
        clang19.missing[0].to_string(),
        format!(
            "no clang-offload-bundler in {} (package clang-tools-19)",
            usr.join("lib/llvm-19/bin")
                .canonicalize()
                .unwrap()
                .display()
        )
    );
    // The next compiler in order of preference is chosen.
    assert_eq!(
        tc.compiler().unwrap().path,
        usr.join("lib/llvm-15/bin/clang++")
    );
    assert!(tc.can_compile());

    // With every clang incomplete, hipcc is left.
    fake_compiler_lacking(
        &usr.join("lib/llvm-15/bin/clang++"),
        "clang 15",
        true,
        &["ld.lld"],
    );
    let tc = inspect(&usr, ToolchainSource::Distro).unwrap();
    assert_eq!(tc.compiler().unwrap().path, usr.join("bin/hipcc"));
    assert_eq!(
        tc.compilers[1].missing[0].package.as_deref(),
        Some("lld-15")
    );
    // And without hipcc, nothing can compile.
    fs::remove_file(usr.join("bin/hipcc")).unwrap();
    let tc = inspect(&usr, ToolchainSource::Distro).unwrap();
    assert!(tc.compiler().is_none());
    assert!(!tc.can_compile());
}

/// Isolated: it empties `PATH`, where the bundler also looks for `llvm-objcopy`.
#[testkit::test(isolated)]
fn a_bundler_without_llvm_objcopy_makes_its_clang_incomplete() {
    let tmp = tempfile::tempdir().unwrap();
    let usr = tmp.path().join("usr");
    debian_install(&usr);
    fs::remove_file(usr.join("bin/clang++-19")).unwrap();
    std::os::unix::fs::symlink("../lib/llvm-19/bin/clang++", usr.join("bin/clang++-19")).unwrap();
    fake_compiler_lacking(
        &usr.join("lib/llvm-19/bin/clang++"),
        "Debian clang version 19.1.7",
        true,
        &["llvm-objcopy"],
    );
    // A PATH with only what the fake compilers run.
    let bin = tmp.path().join("path");
    fs::create_dir(&bin).unwrap();
    for tool in ["dirname", "readlink"] {
        let real = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(tool))
            .find(|p| p.exists())
            .unwrap();
        std::os::unix::fs::symlink(real, bin.join(tool)).unwrap();
    }
    std::env::set_var("PATH", &bin);
    let tc = inspect(&usr, ToolchainSource::Distro).unwrap();
    let clang19 = &tc.compilers[0];
    assert_eq!(clang19.missing.len(), 1, "{:?}", clang19.missing);
    assert_eq!(clang19.missing[0].tool, "llvm-objcopy");
    assert_eq!(clang19.missing[0].package.as_deref(), Some("llvm-19"));
    assert_eq!(
        tc.compiler().unwrap().path,
        usr.join("lib/llvm-15/bin/clang++")
    );
}

#[testkit::test]
fn debian_layout_prefers_newest_amdgpu_clang_and_finds_multiarch_bitcode() {
    let tmp = tempfile::tempdir().unwrap();
    let usr = tmp.path().join("usr");
    debian_install(&usr);
    let tc = inspect(&usr, ToolchainSource::Distro).unwrap();
    assert_eq!(tc.name, "system");
    assert_eq!(tc.version.as_deref(), Some("5.2.21153"));
    let paths: Vec<&Path> = tc.compilers.iter().map(|c| c.path.as_path()).collect();
    // clang++-19 through its bin/ link, llvm-15 without one, llvm-14 skipped (no AMDGPU), hipcc.
    assert_eq!(
        paths,
        [
            usr.join("bin/clang++-19"),
            usr.join("lib/llvm-15/bin/clang++"),
            usr.join("bin/hipcc")
        ]
    );
    assert!(
        tc.notes
            .iter()
            .any(|n| n.contains("llvm-14") && n.contains("AMDGPU")),
        "{:?}",
        tc.notes
    );
    assert_eq!(
        tc.device_lib_path,
        Some(usr.join("lib/x86_64-linux-gnu/amdgcn/bitcode"))
    );
    assert!(tc.supports_target("gfx90a") && tc.supports_target("gfx940"));
    assert!(tc.supports_target("gfx1030"));
    assert!(!tc.supports_target("gfx942") && !tc.supports_target("gfx1100"));
    assert_eq!(
        tc.hip_runtime_lib,
        Some(usr.join("lib/x86_64-linux-gnu/libamdhip64.so.5"))
    );

    let env = tc.env_vars();
    let get = |name: &str| {
        env.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(get("ROCM_PATH"), Some(usr.clone()));
    assert_eq!(get("HIP_PATH"), Some(usr.clone()));
    assert_eq!(get("HIP_CLANG_PATH"), Some(usr.join("bin")));
    assert_eq!(
        get("HIP_DEVICE_LIB_PATH"),
        Some(usr.join("lib/x86_64-linux-gnu/amdgcn/bitcode"))
    );
    assert_eq!(get("DEVICE_LIB_PATH"), get("HIP_DEVICE_LIB_PATH"));
    assert_eq!(env.path_prepend, [usr.join("bin")]);
}

#[testkit::test]
fn ubuntu_device_libs_under_llvm_clang_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let usr = tmp.path().join("usr");
    fake_compiler(
        &usr.join("lib/llvm-17/bin/clang++"),
        "Ubuntu clang 17",
        true,
    );
    bitcode(
        &usr.join("lib/llvm-17/lib/clang/17/amdgcn/bitcode"),
        &["90a", "942", "1100"],
    );
    let tc = inspect(&usr, ToolchainSource::Distro).unwrap();
    assert_eq!(tc.compilers[0].path, usr.join("lib/llvm-17/bin/clang++"));
    assert_eq!(tc.device_lib_targets, ["gfx90a", "gfx942", "gfx1100"]);
    assert_eq!(
        tc.env_vars().path_prepend,
        [usr.join("lib/llvm-17/bin")],
        "the llvm bin folder goes on PATH"
    );
}

#[testkit::test]
fn a_bare_clang_or_empty_folder_is_not_a_rocm_install() {
    let tmp = tempfile::tempdir().unwrap();
    let usr = tmp.path().join("usr");
    fake_compiler(&usr.join("lib/llvm-19/bin/clang++"), "clang 19", true);
    assert_eq!(inspect(&usr, ToolchainSource::Distro), None);
    assert_eq!(
        inspect(&tmp.path().join("missing"), ToolchainSource::Opt),
        None
    );
    fs::create_dir_all(tmp.path().join("empty")).unwrap();
    assert_eq!(
        inspect(&tmp.path().join("empty"), ToolchainSource::Opt),
        None
    );
}

#[testkit::test]
fn install_without_compiler_is_listed_with_a_note() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("runtime-only");
    write(&root.join("lib/libamdhip64.so.6"), "ELF");
    let tc = inspect(&root, ToolchainSource::Opt).unwrap();
    assert!(!tc.can_compile());
    assert!(tc.notes.iter().any(|n| n.contains("no HIP compiler")));
    assert!(tc.notes.iter().any(|n| n.contains("no device libraries")));
}

fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

#[testkit::test]
fn discover_searches_env_opt_distro_and_pip_and_deduplicates() {
    let tmp = tempfile::tempdir().unwrap();
    let opt = tmp.path().join("opt");
    opt_install(&opt.join("rocm-6.2.0"), "6.2.0");
    opt_install(&opt.join("rocm-6.10.1"), "6.10.1");
    fs::create_dir_all(opt.join("rocm-broken")).unwrap(); // not an install: ignored
    symlink(&opt.join("rocm-6.2.0"), &opt.join("rocm"));
    let usr = tmp.path().join("usr");
    debian_install(&usr);
    let site = tmp.path().join("site-packages");
    let pip_root = site.join("_rocm_sdk_core");
    fake_compiler(&pip_root.join("lib/llvm/bin/clang++"), "AMD clang 20", true);
    bitcode(
        &pip_root.join("lib/llvm/amdgcn/bitcode"),
        &["942", "950", "1201"],
    );
    fs::create_dir_all(site.join("rocm_sdk_core-7.0.0rc1.dist-info")).unwrap();

    let options = DiscoverOptions {
        rocm_path: Some(opt.join("rocm")),
        opt_dir: Some(opt.clone()),
        system_prefix: Some(usr.clone()),
        site_dirs: vec![site.clone()],
        ..DiscoverOptions::none()
    };
    let found = discover_with(&options);
    let roots: Vec<&Path> = found.toolchains.iter().map(|t| t.root.as_path()).collect();
    let real_620 = fs::canonicalize(opt.join("rocm-6.2.0")).unwrap();
    assert_eq!(
        roots,
        [
            real_620.clone(),
            fs::canonicalize(opt.join("rocm-6.10.1")).unwrap(),
            fs::canonicalize(&usr).unwrap(),
            fs::canonicalize(&pip_root).unwrap(),
        ]
    );
    assert_eq!(
        found.toolchains[0].source,
        ToolchainSource::EnvVar {
            var: "ROCM_PATH".into()
        }
    );
    assert_eq!(found.toolchains[3].source, ToolchainSource::Pip);
    assert_eq!(found.toolchains[3].name, "pip-7.0.0rc1");
    assert_eq!(found.toolchains[3].version.as_deref(), Some("7.0.0rc1"));
    // /opt/rocm-6.2.0 was reached again through the /opt listing: noted, not listed twice.
    assert!(
        found.notes.iter().any(|n| n.contains("same install")),
        "{:?}",
        found.notes
    );
    // ROCM_PATH wins even though 6.10.1 is newer.
    assert_eq!(found.best().unwrap().root, real_620);

    let without_env = discover_with(&DiscoverOptions {
        rocm_path: None,
        ..options
    });
    // Without ROCM_PATH the newest usable version wins: the pip SDK's 7.0.0rc1.
    assert_eq!(without_env.best().unwrap().name, "pip-7.0.0rc1");
    assert_eq!(without_env.toolchains[0].source, ToolchainSource::Opt);
}

#[testkit::test]
fn best_prefers_newest_usable_toolchain() {
    let tmp = tempfile::tempdir().unwrap();
    let opt = tmp.path().join("opt");
    opt_install(&opt.join("rocm-6.2.0"), "6.2.0");
    opt_install(&opt.join("rocm-6.10.1"), "6.10.1");
    write(&opt.join("rocm-7.0.0/lib/libamdhip64.so"), "ELF"); // newer but cannot compile
    let found = discover_with(&DiscoverOptions {
        opt_dir: Some(opt),
        ..DiscoverOptions::none()
    });
    assert_eq!(found.toolchains.len(), 3);
    assert_eq!(found.toolchains[0].name, "rocm-7.0.0");
    assert_eq!(found.best().unwrap().name, "rocm-6.10.1");
}

#[testkit::test]
fn bad_env_paths_give_notes_not_toolchains() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir_all(tmp.path().join("not-rocm")).unwrap();
    let found = discover_with(&DiscoverOptions {
        rocm_path: Some(tmp.path().join("not-rocm")),
        hip_path: Some(tmp.path().join("missing")),
        ..DiscoverOptions::none()
    });
    assert!(found.toolchains.is_empty());
    assert!(found.best().is_none());
    assert_eq!(found.notes.len(), 2, "{:?}", found.notes);
    assert!(found.notes[0].contains("ROCM_PATH") && found.notes[0].contains("does not look like"));
    assert!(found.notes[1].contains("HIP_PATH") && found.notes[1].contains("not a folder"));
}

#[testkit::test]
fn hip_path_pointing_at_hip_subfolder_uses_the_install_root() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("rocm-5.1.0");
    opt_install(&root, "5.1.0");
    fs::create_dir_all(root.join("hip/bin")).unwrap();
    let found = discover_with(&DiscoverOptions {
        hip_path: Some(root.join("hip")),
        ..DiscoverOptions::none()
    });
    assert_eq!(found.toolchains.len(), 1);
    assert_eq!(found.toolchains[0].root, fs::canonicalize(&root).unwrap());
}

#[testkit::test]
fn python_sys_path_is_scanned_for_pip_sdks() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    let sdk = site.join("_rocm_sdk_core");
    fake_compiler(&sdk.join("lib/llvm/bin/clang++"), "AMD clang", true);
    bitcode(&sdk.join("lib/llvm/amdgcn/bitcode"), &["942"]);
    // A stand-in Python that prints one folder per line, as `sys.path` would.
    let python = tmp.path().join("python3");
    write(
        &python,
        &format!("#!/bin/sh\necho ''\necho '{}'\n", site.display()),
    );
    make_executable(&python);
    let found = discover_with(&DiscoverOptions {
        python: Some(python),
        ..DiscoverOptions::none()
    });
    assert_eq!(found.toolchains.len(), 1, "{found:?}");
    assert_eq!(found.toolchains[0].source, ToolchainSource::Pip);
    assert!(found.toolchains[0].supports_target("gfx942"));
}
