//! Two installs at once: the home lock serialises them and both end well.

use crate::common;

use std::sync::Arc;

use common::*;
use rocm_toolchains::download::Downloader;
use rocm_toolchains::{Event, InstallOptions, Installer};

#[testkit::test]
fn two_installs_of_the_same_toolchain() {
    let s = setup(1);
    s.publish(GZ_NAME, "7.0.0rc20250818");
    let index = s.index(&[GZ_NAME]);
    let files = Arc::new(s.installer.fetch_index(&[index], &mut quiet()).unwrap());
    let handles: Vec<_> = (0..2)
        .map(|_| {
            // Separate installers, as two processes would have.
            let inst = Installer::new(s.home.clone(), Downloader::new(options(1)));
            let files = files.clone();
            std::thread::spawn(move || {
                let mut waited = false;
                let r = inst
                    .install_dist(&files[0], &InstallOptions::default(), &mut |e| {
                        if matches!(e, Event::WaitingForLock { .. }) {
                            waited = true;
                        }
                    })
                    .unwrap();
                (r.unchanged, waited)
            })
        })
        .collect();
    let mut results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    results.sort();
    // One installed it, the other found it installed.
    assert_eq!(
        results.iter().map(|r| r.0).collect::<Vec<_>>(),
        [false, true]
    );
    assert_eq!(s.home.installed().unwrap().len(), 1);
    // The archive was downloaded once.
    assert_eq!(
        s.server.requests_for(&format!("tarball/{GZ_NAME}")).len(),
        1
    );
}

#[testkit::test]
fn two_installs_of_different_toolchains() {
    let s = setup(1);
    s.publish(GZ_NAME, "7.0.0rc20250818");
    s.publish(NIGHTLY_NAME, "7.10.0a20251106");
    let index = s.index(&[GZ_NAME, NIGHTLY_NAME]);
    let files = Arc::new(s.installer.fetch_index(&[index], &mut quiet()).unwrap());
    let handles: Vec<_> = (0..2)
        .map(|i| {
            let inst = Installer::new(s.home.clone(), Downloader::new(options(1)));
            let files = files.clone();
            std::thread::spawn(move || {
                inst.install_dist(&files[i], &InstallOptions::default(), &mut |_| {})
                    .unwrap()
            })
        })
        .collect();
    for h in handles {
        assert!(!h.join().unwrap().unchanged);
    }
    let names: Vec<_> = s
        .home
        .installed()
        .unwrap()
        .into_iter()
        .map(|i| i.name)
        .collect();
    assert_eq!(
        names,
        [
            "therock-7.0.0rc20250818-gfx94X-dcgpu",
            "therock-7.10.0a20251106-gfx90a"
        ]
    );
    for i in s.home.installed().unwrap() {
        s.home.toolchain(&i).unwrap();
    }
}
