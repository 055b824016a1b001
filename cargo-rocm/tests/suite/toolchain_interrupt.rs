//! Real processes: an install killed midway resumes in the next run; two installs at once;
//! a hostile archive refused at the command line.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rocm_toolchains::test_support::{
    fake_rocm_entries, index_html, sha256_hex, tarball, Compression, Entry, Fault, TestServer,
};

const NAME: &str = "therock-dist-linux-gfx90a-7.10.0a20251106.tar.gz";

fn cmd(home: &Path, server: &TestServer) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cargo-rocm"));
    c.env("CARGO_ROCM_HOME", home)
        .env("CARGO_ROCM_DIST_URL", server.url("dist/"))
        .env("CARGO_ROCM_HTTP_BACKOFF_MS", "10")
        .env_remove("CARGO_ROCM_TOOLCHAIN")
        .env("CARGO_TERM_COLOR", "never")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// The fake prefix plus 3 MB of incompressible bytes, so a download takes many reads.
fn big_tarball() -> Vec<u8> {
    let mut entries = fake_rocm_entries("7.10.0a20251106");
    // xorshift64: bytes gzip cannot shrink.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<u8> = (0..3_000_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    entries.push(Entry::file("./lib/librocblas.so", noise));
    let t = tarball(&entries, Compression::Gz);
    assert!(
        t.len() > 2_500_000,
        "the tarball must be larger than the cut"
    );
    t
}

fn partial_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "partial"))
        .collect()
}

#[testkit::test]
fn killed_install_resumes() {
    let server = TestServer::start();
    let bytes = big_tarball();
    server.put(&format!("dist/{NAME}"), bytes.clone());
    server.put(&format!("dist/{NAME}.sha256"), sha256_hex(&bytes));
    server.put("dist/", index_html(&[NAME]));
    server.fault(&format!("dist/{NAME}"), Fault::StallAfter(1_000_000), 1);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");

    let mut child = cmd(&home, &server)
        .args(["toolchain", "install", "nightly", "--family", "gfx90a"])
        .spawn()
        .unwrap();
    // Wait until the first megabyte is on disk, then kill the process mid-download.
    let downloads = home.join("downloads");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = partial_files(&downloads)
            .first()
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len());
        if got >= 1_000_000 {
            break;
        }
        assert!(Instant::now() < deadline, "the download never reached 1 MB");
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "install ended early: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Killed: no toolchain, only the partial download.
    assert!(!home
        .join("toolchains")
        .join("therock-7.10.0a20251106-gfx90a")
        .exists());
    assert_eq!(partial_files(&downloads).len(), 1);

    let out = cmd(&home, &server)
        .args(["toolchain", "install", "nightly", "--family", "gfx90a"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("Resuming"), "{stderr}");
    let reqs = server.requests_for(&format!("dist/{NAME}"));
    assert_eq!(
        reqs.last().unwrap().range.as_deref(),
        Some("bytes=1000000-")
    );
    assert_eq!(reqs.last().unwrap().status, 206);
    let dir = home.join("toolchains/therock-7.10.0a20251106-gfx90a");
    assert!(dir.join("lib/librocblas.so").is_file());
    assert!(partial_files(&downloads).is_empty());
    assert!(downloads.join(sha256_hex(&bytes)).is_file());
    // Whatever the killed process had left in tmp/ is gone.
    assert_eq!(std::fs::read_dir(home.join("tmp")).unwrap().count(), 0);
}

#[testkit::test]
fn two_processes_install_at_once() {
    let server = TestServer::start();
    let bytes = big_tarball();
    server.put(&format!("dist/{NAME}"), bytes.clone());
    server.put("dist/", index_html(&[NAME]));
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let children: Vec<_> = (0..2)
        .map(|_| {
            cmd(&home, &server)
                .args(["toolchain", "install", "nightly", "--family", "gfx90a"])
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let mut words = Vec::new();
    for o in &outputs {
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{stderr}");
        words.push(if stderr.contains("Unchanged") {
            "unchanged"
        } else {
            "installed"
        });
    }
    words.sort();
    assert_eq!(words, ["installed", "unchanged"]);
    assert_eq!(
        server.requests_for(&format!("dist/{NAME}")).len(),
        1,
        "downloaded once"
    );
    let dir = home.join("toolchains/therock-7.10.0a20251106-gfx90a");
    assert!(dir.join("bin/hipcc").is_file());
}

#[testkit::test]
fn hostile_archive_is_refused_with_exit_code_5() {
    let server = TestServer::start();
    let mut entries = fake_rocm_entries("7.0.0");
    entries.push(Entry::symlink("./lib/escape", "../../../../../../tmp"));
    server.put("evil.tar.gz", tarball(&entries, Compression::Gz));
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let out = cmd(&home, &server)
        .args(["toolchain", "install"])
        .arg(server.url("evil.tar.gz"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("refusing to unpack") && stderr.contains("lib/escape"),
        "{stderr}"
    );
    assert!(std::fs::read_dir(home.join("toolchains")).map_or(true, |mut d| d.next().is_none()));
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        1,
        "only the home was written"
    );
}
