//! Install from a loopback TheRock index → pin → resolve → uninstall.

use crate::common;

use common::*;
use rocm_toolchains::auto::{index_urls, resolve_or_install};
use rocm_toolchains::dist::Selector;
use rocm_toolchains::test_support::sha256_hex;
use rocm_toolchains::{ArchiveSource, InstallOptions};
use rocm_toolkit::home::{Channel, InstallKind, Rule, PIN_FILE_NAME};

#[testkit::test]
fn install_pin_resolve_uninstall() {
    let s = setup(2);
    let gz = s.publish(GZ_NAME, "7.0.0rc20250818");
    s.publish(NIGHTLY_NAME, "7.10.0a20251106");
    let index = s.index(&[
        GZ_NAME,
        NIGHTLY_NAME,
        "therock-dist-linux-gfx94X-dcgpu-7.0.0rc20250818.tar.gz.sha256",
    ]);

    let files = s.installer.fetch_index(&[index], &mut quiet()).unwrap();
    assert_eq!(files.len(), 2);
    let sel = Selector {
        platform: "linux".into(),
        families: vec!["gfx94X-dcgpu".into()],
        channel: Some(Channel::Prerelease),
        ..Selector::default()
    };
    let file = sel.select(&files).unwrap();
    let report = s
        .installer
        .install_dist(file, &InstallOptions::default(), &mut quiet())
        .unwrap();
    assert!(!report.unchanged);
    assert_eq!(
        report.installed.name,
        "therock-7.0.0rc20250818-gfx94X-dcgpu"
    );
    assert_eq!(report.toolchain.version.as_deref(), Some("7.0.0rc20250818"));
    assert_eq!(report.toolchain.device_lib_targets, ["gfx90a", "gfx942"]);
    assert!(!report.toolchain.compilers.is_empty());
    let rec = report.installed.metadata.archive.as_ref().unwrap();
    assert_eq!(rec.sha256, sha256_hex(&gz));
    assert!(rec.sha256_verified, "the published sidecar was checked");
    assert_eq!(rec.size, gz.len() as u64);
    assert!(rec.etag.is_some());
    assert!(rec.url.ends_with(GZ_NAME));
    // The archive is kept under its checksum; tmp/ holds nothing.
    assert!(s.home.downloads_dir().join(&rec.sha256).is_file());
    assert_eq!(walk(&s.home.tmp_dir()), Vec::<std::path::PathBuf>::new());
    // The clang++ link survived unpacking.
    let clangxx = report.installed.dir.join("lib/llvm/bin/clang++");
    assert_eq!(
        std::fs::read_link(&clangxx).unwrap(),
        std::path::Path::new("clang")
    );

    // Installing again changes nothing.
    let again = s
        .installer
        .install_dist(file, &InstallOptions::default(), &mut quiet())
        .unwrap();
    assert!(again.unchanged);

    // Pin it in a crate: resolution finds it.
    let project = s.project();
    std::fs::write(
        project.join(PIN_FILE_NAME),
        "[toolchain]\nversion = \"7.0.0rc20250818\"\ntargets = [\"gfx942\"]\n",
    )
    .unwrap();
    let resolved = s.home.resolve(&project.join("."), None).unwrap();
    assert_eq!(resolved.toolchain.root, report.installed.dir);
    assert!(matches!(resolved.rule, Rule::PinFile { .. }));

    // Uninstall removes exactly its folder.
    let before: Vec<_> = walk(s.tmp.path())
        .into_iter()
        .filter(|p| !p.starts_with(&report.installed.dir))
        .collect();
    let un = s
        .installer
        .uninstall(&report.installed.name, &mut quiet())
        .unwrap();
    assert_eq!(un.removed, report.installed.dir);
    assert!(!report.installed.dir.exists());
    assert_eq!(walk(s.tmp.path()), before);
    assert!(s.home.resolve(&project, None).is_err());
}

#[testkit::test]
fn missing_pinned_toolchain_is_installed_automatically() {
    let s = setup(2);
    s.publish(NIGHTLY_NAME, "7.10.0a20251106");
    s.publish(DEV_NAME, "7.11.0.dev0+6f1c2b3");
    let index = s.index(&[NIGHTLY_NAME, DEV_NAME]);
    let project = s.project();
    std::fs::write(
        project.join(PIN_FILE_NAME),
        "[toolchain]\nchannel = \"nightly\"\nfamily = \"gfx90a\"\n",
    )
    .unwrap();
    let (resolved, report) =
        resolve_or_install(&s.installer, &project, None, Some(&index), &mut quiet()).unwrap();
    let report = report.expect("it was installed");
    // The newest nightly: the .dev build, from a .tar.zst.
    assert_eq!(report.installed.name, "therock-7.11.0.dev0+6f1c2b3-gfx90a");
    assert_eq!(resolved.toolchain.name, report.installed.name);
    let (again, none) =
        resolve_or_install(&s.installer, &project, None, Some(&index), &mut quiet()).unwrap();
    assert!(none.is_none());
    assert_eq!(again.toolchain, resolved.toolchain);
    assert_eq!(index_urls(None, Some(&index)), [index]);
}

#[testkit::test]
fn archives_from_a_url_or_a_file_and_links() {
    let s = setup(1);
    let bytes = s.publish(NIGHTLY_NAME, "7.10.0a20251106");
    // From a URL, with a checksum given on the command line.
    let r = s
        .installer
        .install_archive(
            &ArchiveSource::Url(s.server.url(&format!("tarball/{NIGHTLY_NAME}"))),
            &InstallOptions {
                sha256: Some(sha256_hex(&bytes).to_uppercase()),
                ..InstallOptions::default()
            },
            &mut quiet(),
        )
        .unwrap();
    assert_eq!(r.installed.name, "therock-7.10.0a20251106-gfx90a");
    assert_eq!(
        r.installed.metadata.dist.as_ref().unwrap().channel,
        Channel::Nightly
    );
    // From a local file wrapped in a top folder, under a chosen name.
    let wrapped: Vec<_> = rocm_toolchains::test_support::fake_rocm_entries("6.4.1")
        .into_iter()
        .map(|e| match e {
            rocm_toolchains::test_support::Entry::Dir(p) => {
                rocm_toolchains::test_support::Entry::Dir(p.replace("./", "rocm-6.4.1/"))
            }
            rocm_toolchains::test_support::Entry::File { path, data, mode } => {
                rocm_toolchains::test_support::Entry::File {
                    path: path.replace("./", "rocm-6.4.1/"),
                    data,
                    mode,
                }
            }
            rocm_toolchains::test_support::Entry::Symlink { path, target } => {
                rocm_toolchains::test_support::Entry::Symlink {
                    path: path.replace("./", "rocm-6.4.1/"),
                    target,
                }
            }
            other => other,
        })
        .collect();
    let file = s.tmp.path().join("rocm-6.4.1.tar.gz");
    std::fs::write(
        &file,
        rocm_toolchains::test_support::tarball(
            &wrapped,
            rocm_toolchains::test_support::Compression::Gz,
        ),
    )
    .unwrap();
    let r = s
        .installer
        .install_archive(
            &ArchiveSource::File(file.clone()),
            &InstallOptions::default(),
            &mut quiet(),
        )
        .unwrap();
    assert_eq!(r.installed.name, "rocm-6.4.1");
    assert_eq!(r.toolchain.version.as_deref(), Some("6.4.1"));
    assert!(r.installed.dir.join("bin/hipcc").is_file());
    assert!(
        !r.installed
            .metadata
            .archive
            .as_ref()
            .unwrap()
            .sha256_verified
    );
    // Same name again without --force: refused; with --force: replaced.
    let err = s
        .installer
        .install_archive(
            &ArchiveSource::File(file.clone()),
            &InstallOptions::default(),
            &mut quiet(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("--force"), "{err}");
    s.installer
        .install_archive(
            &ArchiveSource::File(file),
            &InstallOptions {
                force: true,
                ..InstallOptions::default()
            },
            &mut quiet(),
        )
        .unwrap();

    // Link an install elsewhere; uninstalling the link leaves it alone.
    let elsewhere = s.tmp.path().join("opt-rocm");
    rocm_toolchains::test_support::write_fake_prefix(&elsewhere, "6.3.0");
    let r = s
        .installer
        .link("six", &elsewhere, false, &mut quiet())
        .unwrap();
    assert_eq!(r.installed.metadata.kind, InstallKind::Linked);
    assert_eq!(r.toolchain.root, elsewhere.canonicalize().unwrap());
    s.installer.set_default(Some("six"), &mut quiet()).unwrap();
    let un = s.installer.uninstall("six", &mut quiet()).unwrap();
    assert!(un.was_default);
    assert!(elsewhere.join("bin/hipcc").is_file());
    assert_eq!(s.home.settings().unwrap().default, None);
    // Linking something that is not ROCm is refused.
    let err = s
        .installer
        .link("bad", s.tmp.path(), false, &mut quiet())
        .unwrap_err();
    assert!(err.to_string().contains("holds no ROCm toolchain"), "{err}");
}

#[testkit::test]
fn an_unreadable_index_is_skipped_when_another_answers() {
    let s = setup(0);
    s.publish(GZ_NAME, "7.0.0rc20250818");
    let good = s.index(&[GZ_NAME]);
    let missing = s.server.url("nowhere/");
    let mut skipped = Vec::new();
    let files = s
        .installer
        .fetch_index(&[missing.clone(), good], &mut |e| {
            if let rocm_toolchains::Event::IndexSkipped { url, .. } = e {
                skipped.push(url.to_string());
            }
        })
        .unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0], missing);
    let err = s
        .installer
        .fetch_index(&[missing], &mut quiet())
        .unwrap_err();
    assert!(err.to_string().contains("HTTP 404"), "{err}");
    s.server.put("empty/", "<html>nothing here</html>");
    let err = s
        .installer
        .fetch_index(&[s.server.url("empty/")], &mut quiet())
        .unwrap_err();
    assert!(
        err.to_string().contains("found no TheRock tarballs"),
        "{err}"
    );
}

#[testkit::test]
fn reinstalling_with_the_right_checksum_is_a_no_op() {
    let s = setup(0);
    let bytes = s.publish(GZ_NAME, "7.0.0rc20250818");
    let index = s.index(&[GZ_NAME]);
    let files = s.installer.fetch_index(&[index], &mut quiet()).unwrap();
    let opts = InstallOptions {
        sha256: Some(sha256_hex(&bytes)),
        ..InstallOptions::default()
    };
    assert!(
        !s.installer
            .install_dist(&files[0], &opts, &mut quiet())
            .unwrap()
            .unchanged
    );
    assert!(
        s.installer
            .install_dist(&files[0], &opts, &mut quiet())
            .unwrap()
            .unchanged
    );
    let wrong = InstallOptions {
        sha256: Some("0".repeat(64)),
        ..InstallOptions::default()
    };
    let err = s
        .installer
        .install_dist(&files[0], &wrong, &mut quiet())
        .unwrap_err();
    assert!(err.to_string().contains("--force"), "{err}");
    let err = s
        .installer
        .install_dist(
            &files[0],
            &InstallOptions {
                sha256: Some("xyz".into()),
                ..InstallOptions::default()
            },
            &mut quiet(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("not a sha256"), "{err}");
}
