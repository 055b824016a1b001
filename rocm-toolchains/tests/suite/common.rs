//! Shared set-up: a home in a temp folder, an installer with fast retries, a loopback index.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use rocm_toolchains::download::{DownloadOptions, Downloader};
use rocm_toolchains::test_support::{
    fake_rocm_entries, index_html, sha256_hex, tarball, Compression, TestServer,
};
use rocm_toolchains::Installer;
use rocm_toolkit::home::Home;

pub struct Setup {
    pub tmp: tempfile::TempDir,
    pub home: Home,
    pub installer: Installer,
    pub server: TestServer,
}

pub fn options(retries: u32) -> DownloadOptions {
    DownloadOptions {
        retries,
        backoff: Duration::from_millis(10),
        timeout: Duration::from_secs(2),
    }
}

pub fn setup(retries: u32) -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::at(tmp.path().join("home"));
    let installer = Installer::new(home.clone(), Downloader::new(options(retries)));
    Setup {
        tmp,
        home,
        installer,
        server: TestServer::start(),
    }
}

pub const GZ_NAME: &str = "therock-dist-linux-gfx94X-dcgpu-7.0.0rc20250818.tar.gz";
pub const NIGHTLY_NAME: &str = "therock-dist-linux-gfx90a-7.10.0a20251106.tar.xz";
pub const DEV_NAME: &str = "therock-dist-linux-gfx90a-7.11.0.dev0+6f1c2b3.tar.zst";

impl Setup {
    /// Publish the fake prefix under `name` (compression from its suffix), with a sidecar.
    pub fn publish(&self, name: &str, version: &str) -> Vec<u8> {
        let compression = if name.ends_with(".xz") {
            Compression::Xz
        } else if name.ends_with(".zst") {
            Compression::Zst
        } else {
            Compression::Gz
        };
        let bytes = tarball(&fake_rocm_entries(version), compression);
        self.server.put(&format!("tarball/{name}"), bytes.clone());
        self.server.put(
            &format!("tarball/{name}.sha256"),
            format!("{}  {name}\n", sha256_hex(&bytes)),
        );
        bytes
    }

    /// The index page listing `names`.
    pub fn index(&self, names: &[&str]) -> String {
        self.server.put("tarball/index.html", index_html(names));
        self.server.url("tarball/index.html")
    }

    pub fn project(&self) -> PathBuf {
        let p = self.tmp.path().join("project");
        std::fs::create_dir_all(&p).unwrap();
        p
    }
}

/// Every path under `root` (links not followed).
pub fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

pub fn quiet() -> impl FnMut(rocm_toolchains::Event<'_>) {
    |_| {}
}
