//! Downloads cut or stalled midway resume with HTTP Range and end with the right bytes.

use crate::common;

use common::*;
use rocm_toolchains::download::{Downloader, Progress};
use rocm_toolchains::test_support::{sha256_hex, Fault};
use rocm_toolchains::Error;

fn payload() -> Vec<u8> {
    // Incompressible-ish and large enough to span several reads.
    (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect()
}

#[testkit::test]
fn cut_download_resumes_in_the_next_run() {
    let s = setup(0);
    let body = payload();
    s.server.put("big.bin", body.clone());
    s.server.fault("big.bin", Fault::CutAfter(1_000_000), 1);
    let url = s.server.url("big.bin");
    let dir = s.home.downloads_dir();
    let d = Downloader::new(options(0));
    let err = d
        .download(&url, Some(&sha256_hex(&body)), &dir, &mut |_| {})
        .unwrap_err();
    match &err {
        Error::DownloadFailed { received, .. } => assert_eq!(*received, 1_000_000),
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("resume"), "{err}");
    // The next run picks up where the first stopped.
    let mut resumed_from = None;
    let done = d
        .download(&url, Some(&sha256_hex(&body)), &dir, &mut |p| {
            if let Progress::Start {
                resumed_from: r, ..
            } = p
            {
                resumed_from = Some(r);
            }
        })
        .unwrap();
    assert_eq!(resumed_from, Some(1_000_000));
    assert_eq!(std::fs::read(&done.path).unwrap(), body);
    assert!(done.record.sha256_verified);
    let reqs = s.server.requests_for("big.bin");
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].range.as_deref(), Some("bytes=1000000-"));
    assert_eq!(reqs[1].status, 206);
    assert!(reqs[1].if_range.is_some(), "resume is guarded by the ETag");
    // No partial files remain.
    let names: Vec<_> = walk(&dir)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [sha256_hex(&body)]);
}

#[testkit::test]
fn retries_resume_within_one_run() {
    let s = setup(3);
    let body = payload();
    s.server.put("big.bin", body.clone());
    s.server.fault("big.bin", Fault::CutAfter(700_000), 2);
    let d = Downloader::new(options(3));
    let mut retries = 0;
    let done = d
        .download(
            &s.server.url("big.bin"),
            None,
            &s.home.downloads_dir(),
            &mut |p| {
                if matches!(p, Progress::Retry { .. }) {
                    retries += 1;
                }
            },
        )
        .unwrap();
    assert_eq!(retries, 2);
    assert_eq!(done.record.sha256, sha256_hex(&body));
    assert!(!done.record.sha256_verified, "no checksum was known");
    let ranges: Vec<_> = s
        .server
        .requests_for("big.bin")
        .into_iter()
        .map(|r| r.range)
        .collect();
    assert_eq!(
        ranges,
        [
            None,
            Some("bytes=700000-".to_string()),
            Some("bytes=1400000-".to_string())
        ]
    );
}

#[testkit::test]
fn stalled_download_times_out_and_resumes() {
    let s = setup(1);
    let body = payload();
    s.server.put("big.bin", body.clone());
    s.server.fault("big.bin", Fault::StallAfter(500_000), 1);
    let mut o = options(1);
    o.timeout = std::time::Duration::from_millis(500);
    let done = Downloader::new(o)
        .download(
            &s.server.url("big.bin"),
            Some(&sha256_hex(&body)),
            &s.home.downloads_dir(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(std::fs::read(done.path).unwrap(), body);
    let reqs = s.server.requests_for("big.bin");
    assert_eq!(reqs[1].range.as_deref(), Some("bytes=500000-"));
}

#[testkit::test]
fn a_file_changed_on_the_server_restarts_instead_of_splicing() {
    let s = setup(0);
    let old = payload();
    s.server.put("big.bin", old);
    s.server.fault("big.bin", Fault::CutAfter(1_000_000), 1);
    let d = Downloader::new(options(0));
    let url = s.server.url("big.bin");
    d.download(&url, None, &s.home.downloads_dir(), &mut |_| {})
        .unwrap_err();
    let new: Vec<u8> = payload().into_iter().map(|b| b ^ 0x5a).collect();
    s.server.put("big.bin", new.clone());
    let done = d
        .download(&url, None, &s.home.downloads_dir(), &mut |_| {})
        .unwrap();
    assert_eq!(done.record.sha256, sha256_hex(&new));
    assert_eq!(s.server.requests_for("big.bin")[1].status, 200);
}
