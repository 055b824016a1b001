//! Resolution order, on real folders.

use super::*;

/// A structurally real ROCm prefix: what `inspect` looks for.
fn fake_prefix(root: &Path, version: &str) {
    for d in ["bin", "lib/llvm/bin", "amdgcn/bitcode", ".info"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join(".info/version"), format!("{version}\n")).unwrap();
    std::fs::write(root.join("bin/hipcc"), "#!/bin/sh\n").unwrap();
    std::fs::write(root.join("lib/llvm/bin/clang++"), "#!/bin/sh\n").unwrap();
    std::fs::write(root.join("amdgcn/bitcode/oclc_isa_version_90a.bc"), "").unwrap();
}

fn install(home: &Home, name: &str, version: &str, family: &str) {
    let dir = home.toolchain_dir(name).unwrap();
    fake_prefix(&dir, version);
    let v: Version = version.parse().unwrap();
    ToolchainMetadata {
        name: name.into(),
        kind: InstallKind::Archive,
        root: None,
        installed_at: 0,
        dist: Some(DistInfo {
            channel: v.channel(),
            version: v,
            family: family.into(),
            platform: "linux".into(),
        }),
        archive: None,
    }
    .write(&dir)
    .unwrap();
}

struct Fixture {
    _tmp: tempfile::TempDir,
    home: Home,
    project: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::at(tmp.path().join("home"));
    let project = tmp.path().join("ws/crate/src");
    std::fs::create_dir_all(&project).unwrap();
    let project = project.canonicalize().unwrap();
    install(&home, "a", "7.0.0", "gfx94X-dcgpu");
    install(&home, "n1", "7.10.0a20251106", "gfx90a");
    install(&home, "n2", "7.10.0a20251120", "gfx90a");
    install(&home, "n3", "7.11.0a20251201", "gfx94X-dcgpu");
    Fixture {
        _tmp: tmp,
        home,
        project,
    }
}

fn pin(dir: &Path, text: &str) {
    std::fs::write(dir.join(PIN_FILE_NAME), text).unwrap();
}

#[test]
fn each_rule_in_order() {
    let f = fixture();
    let ws = f.project.parent().unwrap().parent().unwrap();
    // Nothing selected: falls through to discovery (a system install, or none on this machine).
    match f.home.resolve(&f.project, None) {
        Ok(r) => assert_eq!(r.rule, Rule::System),
        Err(e) => assert!(matches!(e, HomeError::NoToolchain), "{e}"),
    }
    // 4. default
    let mut s = Settings {
        default: Some("a".into()),
        ..Settings::default()
    };
    f.home.save_settings(&s).unwrap();
    let r = f.home.resolve(&f.project, None).unwrap();
    assert_eq!((r.toolchain.name.as_str(), &r.rule), ("a", &Rule::Default));
    // 3. nearest pin file (the inner one, not the workspace's)
    pin(ws, "[toolchain]\nname = \"a\"\n");
    pin(
        f.project.parent().unwrap(),
        "[toolchain]\nchannel = \"nightly\"\ntargets = [\"gfx90a\"]\n",
    );
    let r = f.home.resolve(&f.project, None).unwrap();
    assert_eq!(r.toolchain.name, "n2", "newest nightly covering gfx90a");
    assert_eq!(r.toolchain.version.as_deref(), Some("7.10.0a20251120"));
    assert!(
        r.reason.contains("crate/rocm-toolchain.toml"),
        "{}",
        r.reason
    );
    assert_eq!(r.toolchain.device_lib_targets, ["gfx90a"]);
    // 2. directory override beats the pin
    s.overrides.insert(ws.to_path_buf(), "n3".into());
    f.home.save_settings(&s).unwrap();
    let r = f.home.resolve(&f.project, None).unwrap();
    assert_eq!(r.toolchain.name, "n3");
    assert_eq!(
        r.rule,
        Rule::DirectoryOverride {
            dir: ws.to_path_buf()
        }
    );
    // 1. the environment beats everything, by name or by path
    let r = f.home.resolve(&f.project, Some("n1")).unwrap();
    assert_eq!((r.toolchain.name.as_str(), &r.rule), ("n1", &Rule::Env));
    let path = f.home.toolchains_dir().join("a");
    let r = f.home.resolve(&f.project, path.to_str()).unwrap();
    assert_eq!(r.toolchain.root, path);
}

#[test]
fn missing_selections_say_what_to_do() {
    let f = fixture();
    let err = f.home.resolve(&f.project, Some("nope")).unwrap_err();
    assert!(matches!(err, HomeError::NotInstalled { .. }));
    assert!(
        err.to_string().contains("cargo rocm toolchain install"),
        "{err}"
    );

    pin(
        &f.project,
        "[toolchain]\nversion = \"7.0.0\"\nfamily = \"gfx90a\"\n",
    );
    let err = f.home.resolve(&f.project, None).unwrap_err();
    match &err {
        HomeError::PinnedNotInstalled { pin, .. } => {
            assert_eq!(pin.family.as_deref(), Some("gfx90a"))
        }
        other => panic!("{other}"),
    }
    pin(
        &f.project,
        "[toolchain]\nversion = \"7.0.0\"\nfamily = \"gfx94X-dcgpu\"\n",
    );
    assert_eq!(
        f.home.resolve(&f.project, None).unwrap().toolchain.name,
        "a"
    );

    pin(&f.project, "[toolchain]\npath = \"not-there\"\n");
    assert!(matches!(
        f.home.resolve(&f.project, None).unwrap_err(),
        HomeError::NotAToolchain { .. }
    ));
    pin(&f.project, "[toolchain\n");
    assert!(matches!(
        f.home.resolve(&f.project, None).unwrap_err(),
        HomeError::BadPinFile { .. }
    ));
}

#[test]
fn linked_toolchains_point_elsewhere() {
    let f = fixture();
    let elsewhere = f.project.join("rocm-6.4");
    fake_prefix(&elsewhere, "6.4.1");
    let dir = f.home.toolchain_dir("six").unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    ToolchainMetadata {
        name: "six".into(),
        kind: InstallKind::Linked,
        root: Some(elsewhere.clone()),
        installed_at: 0,
        dist: None,
        archive: None,
    }
    .write(&dir)
    .unwrap();
    let r = f.home.resolve(&f.project, Some("six")).unwrap();
    assert_eq!(r.toolchain.root, elsewhere);
    assert_eq!(r.toolchain.version.as_deref(), Some("6.4.1"));
    assert_eq!(
        r.toolchain.source,
        ToolchainSource::Managed { name: "six".into() }
    );
}

#[test]
fn discovered_installs_are_selectable_by_name() {
    let f = fixture();
    // Whatever this machine has (CI: Debian's ROCm in /usr, named `system`).
    let found = crate::toolchain::discover();
    let Some(first) = found.toolchains.first() else {
        eprintln!("skipped: no ROCm install on this machine");
        return;
    };
    if f.home.find_installed(&first.name).ok().flatten().is_some() {
        return; // an installed toolchain of that name would win, as it should
    }
    let r = f.home.resolve(&f.project, Some(&first.name)).unwrap();
    assert_eq!(r.toolchain.root, first.root);
    assert_eq!(r.rule, Rule::Env);
}

#[test]
fn names_are_checked() {
    for ok in ["a", "therock-7.0.0.dev0+abc-gfx94X-dcgpu", "my_rocm"] {
        validate_name(ok).unwrap();
    }
    for bad in ["", ".hidden", "-x", "+x", "a/b", "..", "a b", "ä"] {
        assert!(validate_name(bad).is_err(), "{bad}");
    }
    assert!(Home::at("/h").toolchain_dir("../x").is_err());
}

#[test]
fn folders_without_metadata_are_not_toolchains() {
    let f = fixture();
    std::fs::create_dir_all(f.home.toolchains_dir().join("stray")).unwrap();
    let names: Vec<_> = f
        .home
        .installed()
        .unwrap()
        .into_iter()
        .map(|i| i.name)
        .collect();
    assert_eq!(names, ["a", "n1", "n2", "n3"]);
}
