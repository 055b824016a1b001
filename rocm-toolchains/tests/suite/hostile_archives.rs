//! Every malicious or broken archive is refused with a clear error, leaves no toolchain, and
//! writes nothing outside the home.

use crate::common;

use common::*;
use rocm_toolchains::test_support::{
    compress, fake_rocm_entries, sha256_hex, tarball, Compression, Entry, Fault,
};
use rocm_toolchains::{ArchiveSource, Error, InstallOptions};

/// The fake prefix plus `extra`, as .tar.gz.
fn with(extra: Vec<Entry>) -> Vec<u8> {
    let mut entries = fake_rocm_entries("7.0.0");
    entries.extend(extra);
    tarball(&entries, Compression::Gz)
}

/// Install `bytes` served over HTTP; return the error's message after checking the aftermath.
fn refused(bytes: Vec<u8>, expect: &str) -> String {
    let s = setup(0);
    let outside_before = walk(s.tmp.path());
    s.server.put("evil.tar.gz", bytes);
    let err = s
        .installer
        .install_archive(
            &ArchiveSource::Url(s.server.url("evil.tar.gz")),
            &InstallOptions {
                name: Some("evil".into()),
                ..InstallOptions::default()
            },
            &mut quiet(),
        )
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains(expect), "expected `{expect}` in: {msg}");
    // No toolchain, no staging debris.
    assert!(s.home.installed().unwrap().is_empty());
    assert!(!s.home.toolchains_dir().join("evil").exists());
    assert_eq!(
        walk(&s.home.tmp_dir()),
        Vec::<std::path::PathBuf>::new(),
        "tmp/ left behind"
    );
    // Nothing new outside the home.
    let outside_after: Vec<_> = walk(s.tmp.path())
        .into_iter()
        .filter(|p| !p.starts_with(s.home.root()))
        .collect();
    let outside_before: Vec<_> = outside_before
        .into_iter()
        .filter(|p| !p.starts_with(s.home.root()))
        .collect();
    assert_eq!(outside_after, outside_before, "{msg}");
    msg
}

#[testkit::test]
fn parent_dir_entries() {
    let m = refused(
        with(vec![Entry::file("../../../../escaped", "x")]),
        "leaves the toolchain folder",
    );
    assert!(
        m.contains("../../../../escaped") && m.contains("nothing was installed"),
        "{m}"
    );
    refused(with(vec![Entry::file("./lib/../../escaped", "x")]), "`..`");
}

#[testkit::test]
fn absolute_paths() {
    let target = std::env::temp_dir().join(format!("cargo-rocm-abs-{}", std::process::id()));
    refused(
        with(vec![Entry::file(target.to_str().unwrap(), "x")]),
        "is an absolute path",
    );
    assert!(!target.exists());
}

#[testkit::test]
fn escaping_symlinks() {
    refused(
        with(vec![Entry::symlink("./lib/up", "../../../../../..")]),
        "outside the toolchain folder",
    );
    refused(
        with(vec![Entry::symlink("./etc", "/etc")]),
        "absolute path /etc",
    );
    // A link that stays inside, then a write through it: refused too.
    refused(
        with(vec![
            Entry::symlink("./here", "."),
            Entry::file("./here/x", "x"),
        ]),
        "written through a symbolic link",
    );
    // The `d -> .` trick that lexical checks miss.
    refused(
        with(vec![
            Entry::symlink("./d", "."),
            Entry::symlink("./e", "d/d/../../.."),
        ]),
        "outside the toolchain folder",
    );
}

#[testkit::test]
fn hard_links_and_devices() {
    refused(
        with(vec![Entry::HardLink {
            path: "./passwd".into(),
            target: "../../../../../etc/passwd".into(),
        }]),
        "hard link",
    );
    refused(
        with(vec![Entry::HardLink {
            path: "./x".into(),
            target: "/etc/passwd".into(),
        }]),
        "absolute path",
    );
    refused(
        with(vec![Entry::CharDevice("./null".into())]),
        "unsupported type",
    );
}

#[testkit::test]
fn truncated_and_garbage_archives() {
    let good = tarball(&fake_rocm_entries("7.0.0"), Compression::Gz);
    refused(good[..good.len() / 2].to_vec(), "cannot unpack");
    let xz = tarball(&fake_rocm_entries("7.0.0"), Compression::Xz);
    refused(xz[..xz.len() - 40].to_vec(), "cannot unpack");
    refused(b"<html>not found</html>".repeat(30), "cannot unpack");
    // A valid archive that is not a ROCm toolchain.
    refused(
        tarball(&[Entry::file("README", "hello")], Compression::Zst),
        "holds no ROCm toolchain",
    );
    refused(compress(b"", Compression::Gz), "holds no ROCm toolchain");
}

#[testkit::test]
fn corrupted_download_fails_its_checksum_and_is_deleted() {
    let s = setup(0);
    let good = tarball(&fake_rocm_entries("7.0.0"), Compression::Gz);
    let mut bad = good.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0xff;
    s.server.put(&format!("tarball/{GZ_NAME}"), bad);
    s.server
        .put(&format!("tarball/{GZ_NAME}.sha256"), sha256_hex(&good));
    let index = s.index(&[GZ_NAME]);
    let files = s.installer.fetch_index(&[index], &mut quiet()).unwrap();
    let err = s
        .installer
        .install_dist(&files[0], &InstallOptions::default(), &mut quiet())
        .unwrap_err();
    assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err}");
    assert!(err.to_string().contains(&sha256_hex(&good)), "{err}");
    assert!(s.home.installed().unwrap().is_empty());
    assert_eq!(
        walk(&s.home.downloads_dir()),
        Vec::<std::path::PathBuf>::new()
    );
}

#[testkit::test]
fn server_errors_are_reported() {
    let s = setup(1);
    let err = s
        .installer
        .install_archive(
            &ArchiveSource::Url(s.server.url("missing.tar.gz")),
            &InstallOptions::default(),
            &mut quiet(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("HTTP 404"), "{err}");
    s.server.put(
        "flaky.tar.gz",
        tarball(&fake_rocm_entries("7.0.0"), Compression::Gz),
    );
    s.server.fault("flaky.tar.gz", Fault::Status(503), 5);
    let err = s
        .installer
        .install_archive(
            &ArchiveSource::Url(s.server.url("flaky.tar.gz")),
            &InstallOptions::default(),
            &mut quiet(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("after 2 attempt(s)"), "{err}");
    assert_eq!(s.server.requests_for("flaky.tar.gz").len(), 2);
}
