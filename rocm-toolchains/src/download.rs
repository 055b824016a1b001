//! Downloads that can be trusted and resumed.
//!
//! A download streams into `downloads/<key>.partial` (key: hash of the URL) while its sha256
//! is computed; when complete and matching the expected checksum (if one is known) it is renamed
//! to `downloads/<sha256>`. A broken connection is retried with exponential backoff, resuming
//! with an HTTP `Range` request (guarded by `If-Range` with the ETag, so a file changed on the
//! server restarts from zero instead of being spliced). A killed process leaves the `.partial`,
//! which the next run resumes.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rocm_toolkit::home::ArchiveRecord;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// Environment variables that tune downloads (defaults in [`DownloadOptions::default`]).
pub const RETRIES_ENV: &str = "CARGO_ROCM_HTTP_RETRIES";
/// Seconds without a byte before a read gives up (then retried).
pub const TIMEOUT_ENV: &str = "CARGO_ROCM_HTTP_TIMEOUT";
/// First retry delay in milliseconds; doubles each retry.
pub const BACKOFF_ENV: &str = "CARGO_ROCM_HTTP_BACKOFF_MS";

/// Retry and timeout policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadOptions {
    /// Retries after the first attempt.
    pub retries: u32,
    /// First wait between attempts; doubled each time, capped at 30 s.
    pub backoff: Duration,
    /// Longest wait for the next bytes (connect, headers, or body) before the attempt fails.
    pub timeout: Duration,
}

impl Default for DownloadOptions {
    fn default() -> Self {
        DownloadOptions {
            retries: 5,
            backoff: Duration::from_secs(1),
            timeout: Duration::from_secs(60),
        }
    }
}

impl DownloadOptions {
    /// Defaults, overridden by [`RETRIES_ENV`], [`TIMEOUT_ENV`] and [`BACKOFF_ENV`] when set.
    pub fn from_env() -> Self {
        let mut o = DownloadOptions::default();
        let num = |k: &str| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        if let Some(n) = num(RETRIES_ENV) {
            o.retries = n.min(100) as u32;
        }
        if let Some(n) = num(TIMEOUT_ENV) {
            o.timeout = Duration::from_secs(n.max(1));
        }
        if let Some(n) = num(BACKOFF_ENV) {
            o.backoff = Duration::from_millis(n);
        }
        o
    }

    fn delay(&self, attempt: u32) -> Duration {
        (self.backoff * 2u32.saturating_pow(attempt.min(16))).min(Duration::from_secs(30))
    }
}

/// What a download is doing, for progress displays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress<'a> {
    /// An attempt started; `total` when the server said; `resumed_from` bytes were kept.
    Start {
        /// The URL.
        url: &'a str,
        /// The whole file's size in bytes, kept bytes included.
        total: Option<u64>,
        /// Bytes kept from an earlier attempt or run (0 when starting over).
        resumed_from: u64,
    },
    /// `done` bytes of the file are on disk.
    Advance {
        /// Bytes on disk so far, kept bytes included.
        done: u64,
    },
    /// An attempt failed; the next starts after `wait`.
    Retry {
        /// The attempt about to be made after the wait, counting from 1 (so at least 2).
        attempt: u32,
        /// Attempts allowed in all.
        of: u32,
        /// Why the last attempt failed.
        error: &'a str,
        /// The backoff before the next attempt.
        wait: Duration,
    },
    /// Complete and verified.
    Done,
}

/// A finished download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    /// `downloads/<sha256>`.
    pub path: PathBuf,
    /// Where it came from, its size and sha256: what the toolchain's metadata records.
    pub record: ArchiveRecord,
}

/// An HTTP client with the download policy.
#[derive(Debug, Clone)]
pub struct Downloader {
    agent: ureq::Agent,
    options: DownloadOptions,
}

/// Why one attempt failed, and whether another could help.
struct AttemptError {
    message: String,
    retry: bool,
    fatal: Option<Error>,
}

impl AttemptError {
    fn retry(message: impl Into<String>) -> Self {
        AttemptError {
            message: message.into(),
            retry: true,
            fatal: None,
        }
    }
    fn fatal(e: Error) -> Self {
        AttemptError {
            message: e.to_string(),
            retry: false,
            fatal: Some(e),
        }
    }
}

impl Downloader {
    /// A client with `options`' timeouts (connect, response, each read) and retry policy.
    pub fn new(options: DownloadOptions) -> Self {
        let config = ureq::Agent::config_builder()
            .timeout_connect(Some(options.timeout))
            .timeout_recv_response(Some(options.timeout))
            .timeout_per_read(Some(options.timeout))
            .user_agent(concat!("cargo-rocm/", env!("CARGO_PKG_VERSION")))
            .build();
        Downloader {
            agent: ureq::Agent::new_with_config(config),
            options,
        }
    }

    /// A small text document (an index page, a checksum), with retries. `Ok(None)` on 404.
    pub fn get_text(&self, url: &str) -> Result<Option<String>> {
        let attempts = self.options.retries + 1;
        let mut last = String::new();
        for attempt in 0..attempts {
            if attempt > 0 {
                std::thread::sleep(self.options.delay(attempt - 1));
            }
            match self.agent.get(url).call() {
                Ok(mut resp) => {
                    match resp
                        .body_mut()
                        .with_config()
                        .limit(64 << 20)
                        .read_to_string()
                    {
                        Ok(text) => return Ok(Some(text)),
                        Err(e) => last = e.to_string(),
                    }
                }
                Err(ureq::Error::StatusCode(404)) => return Ok(None),
                Err(ureq::Error::StatusCode(s)) if !retryable_status(s) => {
                    return Err(status_error(url, s));
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(Error::DownloadFailed {
            url: url.to_string(),
            attempts,
            received: 0,
            last_error: last,
        })
    }

    /// Download `url` into `dir` (the home's `downloads/`), verifying `expected_sha256` if given.
    pub fn download(
        &self,
        url: &str,
        expected_sha256: Option<&str>,
        dir: &Path,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<Downloaded> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let expected = expected_sha256.map(str::to_ascii_lowercase);
        if let Some(sha) = &expected {
            // A verified copy from an earlier install: no need to fetch it again.
            let cached = dir.join(sha);
            if let Ok(meta) = std::fs::metadata(&cached) {
                progress(Progress::Done);
                return Ok(Downloaded {
                    path: cached,
                    record: ArchiveRecord {
                        url: url.to_string(),
                        size: meta.len(),
                        sha256: sha.clone(),
                        sha256_verified: true,
                        etag: None,
                    },
                });
            }
        }
        let key = &hex(&Sha256::digest(url.as_bytes()))[..32];
        let partial = dir.join(format!("{key}.partial"));
        let etag_file = dir.join(format!("{key}.partial.etag"));

        let attempts = self.options.retries + 1;
        let mut last_error = String::new();
        for attempt in 0..attempts {
            match self.attempt(url, &partial, &etag_file, progress) {
                Ok((etag, size, actual)) => {
                    if let Some(expected) = &expected {
                        if *expected != actual {
                            let _ = std::fs::remove_file(&partial);
                            let _ = std::fs::remove_file(&etag_file);
                            return Err(Error::ChecksumMismatch {
                                url: url.to_string(),
                                expected: expected.clone(),
                                actual,
                            });
                        }
                    }
                    let path = dir.join(&actual);
                    std::fs::rename(&partial, &path).map_err(|e| Error::io(&path, e))?;
                    let _ = std::fs::remove_file(&etag_file);
                    progress(Progress::Done);
                    return Ok(Downloaded {
                        path,
                        record: ArchiveRecord {
                            url: url.to_string(),
                            size,
                            sha256: actual,
                            sha256_verified: expected.is_some(),
                            etag,
                        },
                    });
                }
                Err(AttemptError { fatal: Some(e), .. }) => return Err(e),
                Err(AttemptError { message, retry, .. }) => {
                    last_error = message;
                    if !retry || attempt + 1 == attempts {
                        break;
                    }
                    let wait = self.options.delay(attempt);
                    progress(Progress::Retry {
                        attempt: attempt + 1,
                        of: attempts,
                        error: &last_error,
                        wait,
                    });
                    std::thread::sleep(wait);
                }
            }
        }
        Err(Error::DownloadFailed {
            url: url.to_string(),
            attempts,
            received: file_len(&partial),
            last_error,
        })
    }

    /// One request: append to `partial` from where it ends, hashing as bytes arrive (a resumed
    /// download first hashes the bytes it kept). Returns (ETag, size, sha256) on success.
    fn attempt(
        &self,
        url: &str,
        partial: &Path,
        etag_file: &Path,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> std::result::Result<(Option<String>, u64, String), AttemptError> {
        let have = file_len(partial);
        let saved_etag = std::fs::read_to_string(etag_file).ok();
        // Byte ranges must address the file's bytes, not a re-encoded body.
        let mut req = self.agent.get(url).header("Accept-Encoding", "identity");
        if have > 0 {
            req = req.header("Range", &format!("bytes={have}-"));
            if let Some(etag) = &saved_etag {
                req = req.header("If-Range", etag.trim());
            }
        }
        let resp = match req.call() {
            Ok(r) => r,
            Err(ureq::Error::StatusCode(416)) if have > 0 => {
                // Our partial is not a prefix of what the server has now: start over.
                let _ = std::fs::remove_file(partial);
                return Err(AttemptError::retry(
                    "server refused the resume range; restarting",
                ));
            }
            Err(ureq::Error::StatusCode(s)) if retryable_status(s) => {
                return Err(AttemptError::retry(format!("HTTP {s}")))
            }
            Err(ureq::Error::StatusCode(s)) => {
                return Err(AttemptError::fatal(status_error(url, s)))
            }
            Err(e) => return Err(AttemptError::retry(e.to_string())),
        };
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let etag = header("etag");
        let length = header("content-length").and_then(|v| v.parse::<u64>().ok());
        let resumed = status == 206
            && header("content-range")
                .as_deref()
                .and_then(content_range_start)
                == Some(have);
        let start = if resumed { have } else { 0 };
        let mut file = OpenOptions::new()
            .create(true)
            .write(true)
            .append(resumed)
            .truncate(!resumed)
            .open(partial)
            .map_err(|e| AttemptError::fatal(Error::io(partial, e)))?;
        match &etag {
            Some(e) => std::fs::write(etag_file, e)
                .map_err(|e| AttemptError::fatal(Error::io(etag_file, e)))?,
            None => {
                let _ = std::fs::remove_file(etag_file);
            }
        }
        let total = length.map(|l| start + l);
        progress(Progress::Start {
            url,
            total,
            resumed_from: start,
        });
        let mut hasher = Sha256::new();
        if resumed {
            hash_prefix(partial, have, &mut hasher).map_err(AttemptError::fatal)?;
        }
        let mut reader = resp.into_body().into_reader();
        let mut done = start;
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = file.flush();
                    return Err(AttemptError::retry(format!(
                        "connection broke after {done} bytes: {e}"
                    )));
                }
            };
            file.write_all(&buf[..n])
                .map_err(|e| AttemptError::fatal(Error::io(partial, e)))?;
            hasher.update(&buf[..n]);
            done += n as u64;
            progress(Progress::Advance { done });
        }
        if let Some(total) = total {
            if done < total {
                return Err(AttemptError::retry(format!(
                    "connection closed after {done} of {total} bytes"
                )));
            }
        }
        file.sync_all()
            .map_err(|e| AttemptError::fatal(Error::io(partial, e)))?;
        Ok((etag, done, hex(&hasher.finalize())))
    }
}

fn retryable_status(s: u16) -> bool {
    s == 408 || s == 429 || s >= 500
}

fn status_error(url: &str, status: u16) -> Error {
    Error::HttpStatus {
        url: url.to_string(),
        status,
        hint: match status {
            404 => " (not found: check the version, family and --index-url)",
            401 | 403 => " (access denied: check the URL or mirror)",
            _ => "",
        },
    }
}

/// `bytes 100-199/200` → 100.
fn content_range_start(v: &str) -> Option<u64> {
    v.strip_prefix("bytes ")?
        .split('-')
        .next()?
        .trim()
        .parse()
        .ok()
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Feed the first `len` bytes of `path` to `hasher`.
fn hash_prefix(path: &Path, len: u64, hasher: &mut Sha256) -> Result<()> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let copied = std::io::copy(&mut file.take(len), hasher).map_err(|e| Error::io(path, e))?;
    if copied != len {
        return Err(Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "partial download shrank"),
        ));
    }
    Ok(())
}

/// (size, sha256 hex) of a file.
pub fn hash_file(path: &Path) -> Result<(u64, String)> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    Ok((size, hex(&hasher.finalize())))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let o = DownloadOptions {
            backoff: Duration::from_millis(100),
            ..DownloadOptions::default()
        };
        assert_eq!(o.delay(0), Duration::from_millis(100));
        assert_eq!(o.delay(3), Duration::from_millis(800));
        assert_eq!(o.delay(40), Duration::from_secs(30));
    }

    #[test]
    fn content_ranges() {
        assert_eq!(content_range_start("bytes 100-199/200"), Some(100));
        assert_eq!(content_range_start("bytes */200"), None);
    }
}
