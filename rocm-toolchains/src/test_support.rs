//! Real parts for tests (feature `test-support`): an HTTP server on 127.0.0.1 serving files
//! from memory, with byte ranges, ETags and injectable faults; and tarballs built on the fly,
//! from a structurally real fake ROCm prefix to deliberately hostile archives.
//!
//! The server is written on `std::net` rather than an HTTP server crate because the tests
//! need what such crates exist to prevent: sending half a body and hanging up, or stalling.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// A fault injected into the next responses for one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Announce the full length, send this many body bytes, then close the connection.
    CutAfter(usize),
    /// Send this many body bytes, then hang (until the client gives up or the server stops).
    StallAfter(usize),
    /// Answer with this status and no body.
    Status(u16),
}

/// One request the server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The path asked for, query dropped and `%2B` decoded to `+`.
    pub path: String,
    /// The `Range` header, as sent.
    pub range: Option<String>,
    /// The `If-Range` header, as sent.
    pub if_range: Option<String>,
    /// The status answered (200, 206, 416, an injected one...).
    pub status: u16,
}

#[derive(Default)]
struct State {
    files: HashMap<String, Vec<u8>>,
    faults: HashMap<String, (Fault, usize)>,
    log: Vec<Request>,
}

/// An HTTP/1.1 server on a free loopback port; stops when dropped.
pub struct TestServer {
    port: u16,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl TestServer {
    /// Bind a free port on 127.0.0.1 and serve from a thread; no files until added.
    pub fn start() -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (state.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if sp.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (st, sp) = (st.clone(), sp.clone());
                std::thread::spawn(move || handle(conn, &st, &sp));
            }
        });
        TestServer { port, state, stop }
    }

    /// `http://127.0.0.1:PORT/` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!(
            "http://127.0.0.1:{}/{}",
            self.port,
            path.trim_start_matches('/')
        )
    }

    /// Serve `body` at `/path`.
    pub fn put(&self, path: &str, body: impl Into<Vec<u8>>) {
        let path = format!("/{}", path.trim_start_matches('/'));
        self.state.lock().unwrap().files.insert(path, body.into());
    }

    /// Apply `fault` to the next `times` requests for `/path`.
    pub fn fault(&self, path: &str, fault: Fault, times: usize) {
        let path = format!("/{}", path.trim_start_matches('/'));
        self.state
            .lock()
            .unwrap()
            .faults
            .insert(path, (fault, times));
    }

    /// Requests answered so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().log.clone()
    }

    /// Requests for one path.
    pub fn requests_for(&self, path: &str) -> Vec<Request> {
        let path = format!("/{}", path.trim_start_matches('/'));
        self.requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port)); // wake the accept loop
    }
}

fn handle(mut conn: TcpStream, state: &Mutex<State>, stop: &AtomicBool) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    let mut headers = HashMap::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let raw_path = first.split_whitespace().nth(1).unwrap_or("/");
    let path = raw_path
        .split('?')
        .next()
        .unwrap_or("/")
        .replace("%2B", "+")
        .replace("%2b", "+");
    let (body, fault) = {
        let mut s = state.lock().unwrap();
        let fault = match s.faults.get_mut(&path) {
            Some((f, n)) if *n > 0 => {
                *n -= 1;
                Some(*f)
            }
            _ => None,
        };
        (s.files.get(&path).cloned(), fault)
    };
    let range = headers.get("range").cloned();
    let if_range = headers.get("if-range").cloned();
    let log = |status: u16| {
        state.lock().unwrap().log.push(Request {
            path: path.clone(),
            range: range.clone(),
            if_range: if_range.clone(),
            status,
        })
    };
    let Some(body) = body else {
        log(404);
        let _ = conn
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    if let Some(Fault::Status(code)) = fault {
        log(code);
        let _ = write!(
            conn,
            "HTTP/1.1 {code} Injected\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        return;
    }
    let etag = format!("\"{}\"", &sha256_hex(&body)[..16]);
    let start = range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.strip_suffix('-'))
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|_| if_range.as_ref().is_none_or(|t| *t == etag));
    let (status, slice, extra) = match start {
        Some(n) if n >= body.len() => {
            log(416);
            let _ = write!(conn, "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", body.len());
            return;
        }
        Some(n) => (
            206,
            &body[n..],
            format!(
                "Content-Range: bytes {n}-{}/{}\r\n",
                body.len() - 1,
                body.len()
            ),
        ),
        None => (200, &body[..], String::new()),
    };
    log(status);
    let reason = if status == 206 {
        "Partial Content"
    } else {
        "OK"
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Length: {}\r\nETag: {etag}\r\nAccept-Ranges: bytes\r\n{extra}Connection: close\r\n\r\n",
        slice.len()
    );
    if conn.write_all(head.as_bytes()).is_err() {
        return;
    }
    match fault {
        Some(Fault::CutAfter(n)) => {
            let _ = conn.write_all(&slice[..n.min(slice.len())]);
            let _ = conn.flush();
            let _ = conn.shutdown(Shutdown::Both);
        }
        Some(Fault::StallAfter(n)) => {
            let _ = conn.write_all(&slice[..n.min(slice.len())]);
            let _ = conn.flush();
            let until = Instant::now() + Duration::from_secs(120);
            while !stop.load(Ordering::SeqCst) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        _ => {
            let _ = conn.write_all(slice);
        }
    }
}

/// Lower-case hex sha256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One archive entry, written as given: nothing is sanitised, so hostile archives can be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A folder at this path.
    Dir(String),
    /// A regular file.
    File {
        /// Its path in the archive.
        path: String,
        /// Its contents.
        data: Vec<u8>,
        /// Unix permission bits (`0o644`, `0o755`).
        mode: u32,
    },
    /// A symbolic link.
    Symlink {
        /// Its path in the archive.
        path: String,
        /// What it points at, as stored.
        target: String,
    },
    /// A hard link.
    HardLink {
        /// Its path in the archive.
        path: String,
        /// The archive path of the file it links to, as stored.
        target: String,
    },
    /// A character device (never belongs in a toolchain).
    CharDevice(String),
}

impl Entry {
    /// A regular file with mode `0o644`.
    pub fn file(path: &str, data: impl Into<Vec<u8>>) -> Entry {
        Entry::File {
            path: path.into(),
            data: data.into(),
            mode: 0o644,
        }
    }
    /// An executable file (mode `0o755`) holding `script`.
    pub fn exe(path: &str, script: &str) -> Entry {
        Entry::File {
            path: path.into(),
            data: script.as_bytes().to_vec(),
            mode: 0o755,
        }
    }
    /// A symbolic link at `path` to `target`.
    pub fn symlink(path: &str, target: &str) -> Entry {
        Entry::Symlink {
            path: path.into(),
            target: target.into(),
        }
    }
}

/// Compression of a built tarball.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// A plain `.tar`.
    None,
    /// gzip (`.tar.gz`).
    Gz,
    /// xz (`.tar.xz`).
    Xz,
    /// Zstandard (`.tar.zst`).
    Zst,
}

/// The entries of a small but structurally real ROCm prefix, as TheRock lays it out:
/// `.info/version`, `bin/hipcc`, `lib/llvm/bin/clang++` (a link to `clang`), device libraries
/// for gfx90a and gfx942 under `amdgcn/bitcode` and `lib/libamdhip64.so`.
pub fn fake_rocm_entries(version: &str) -> Vec<Entry> {
    let script = "#!/bin/sh\necho \"fake ROCm compiler $0\"\n";
    vec![
        Entry::Dir("./".into()),
        Entry::file("./.info/version", format!("{version}\n")),
        Entry::exe("./bin/hipcc", script),
        Entry::exe("./lib/llvm/bin/clang", script),
        Entry::symlink("./lib/llvm/bin/clang++", "clang"),
        Entry::symlink("./lib/llvm/bin/hipcc-link", "../../../bin/hipcc"),
        Entry::file("./amdgcn/bitcode/ocml.bc", b"BC\xc0\xde".to_vec()),
        Entry::file(
            "./amdgcn/bitcode/oclc_isa_version_90a.bc",
            b"BC\xc0\xde".to_vec(),
        ),
        Entry::file(
            "./amdgcn/bitcode/oclc_isa_version_942.bc",
            b"BC\xc0\xde".to_vec(),
        ),
        Entry::file("./lib/libamdhip64.so.7", b"\x7fELF".to_vec()),
        Entry::symlink("./lib/libamdhip64.so", "libamdhip64.so.7"),
    ]
}

/// Write the fake prefix onto disk (for `toolchain link` tests).
pub fn write_fake_prefix(root: &Path, version: &str) {
    let archive = root.with_extension("fake-rocm.tar");
    std::fs::write(
        &archive,
        tarball(&fake_rocm_entries(version), Compression::None),
    )
    .unwrap();
    std::fs::create_dir_all(root).unwrap();
    crate::extract::unpack(&archive, root).unwrap();
    std::fs::remove_file(&archive).unwrap();
}

/// A tarball of `entries`, headers written raw so that `..`, absolute paths and escaping
/// links reach the archive unchanged.
pub fn tarball(entries: &[Entry], compression: Compression) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let (path, kind, data, mode, link): (&str, tar::EntryType, &[u8], u32, Option<&str>) =
            match e {
                Entry::Dir(p) => (p, tar::EntryType::Directory, &[], 0o755, None),
                Entry::File { path, data, mode } => {
                    (path, tar::EntryType::Regular, data, *mode, None)
                }
                Entry::Symlink { path, target } => {
                    (path, tar::EntryType::Symlink, &[], 0o777, Some(target))
                }
                Entry::HardLink { path, target } => {
                    (path, tar::EntryType::Link, &[], 0o644, Some(target))
                }
                Entry::CharDevice(p) => (p, tar::EntryType::Char, &[], 0o644, None),
            };
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_size(data.len() as u64);
        h.set_mode(mode);
        h.set_mtime(1_700_000_000);
        let old = h.as_old_mut();
        assert!(
            path.len() < 100,
            "test entry names must fit the classic header"
        );
        old.name.fill(0);
        old.name[..path.len()].copy_from_slice(path.as_bytes());
        if let Some(l) = link {
            old.linkname.fill(0);
            old.linkname[..l.len()].copy_from_slice(l.as_bytes());
        }
        h.set_cksum();
        b.append(&h, data).unwrap();
    }
    let raw = b.into_inner().unwrap();
    compress(&raw, compression)
}

/// Compress bytes as a tarball would be.
pub fn compress(raw: &[u8], compression: Compression) -> Vec<u8> {
    match compression {
        Compression::None => raw.to_vec(),
        Compression::Gz => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(raw).unwrap();
            e.finish().unwrap()
        }
        Compression::Xz => {
            let mut e = xz2::write::XzEncoder::new(Vec::new(), 1);
            e.write_all(raw).unwrap();
            e.finish().unwrap()
        }
        Compression::Zst => zstd::encode_all(raw, 1).unwrap(),
    }
}

/// An index page listing `names` the way TheRock's pages do: links, plus the JSON listing.
pub fn index_html(names: &[&str]) -> String {
    let links: String = names
        .iter()
        .map(|n| format!("<a href=\"{}\">{n}</a>\n", n.replace('+', "%2B")))
        .collect();
    let json: Vec<String> = names
        .iter()
        .map(|n| format!("{{\"name\":\"{n}\",\"mtime\":1700000000}}"))
        .collect();
    format!(
        "<html><body>\n{links}<script>const files = [{}];</script></body></html>\n",
        json.join(",")
    )
}
