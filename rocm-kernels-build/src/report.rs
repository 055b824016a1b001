//! What a run tells the outside: `cargo:` lines for cargo, and a log under OUT_DIR for people
//! and tests.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The `cargo:` lines of one run: warnings at once, watched files deduplicated at the end.
pub(crate) struct Output {
    enabled: bool,
    watched: Vec<PathBuf>,
    pub(crate) warnings: Vec<String>,
}

impl Output {
    pub(crate) fn new(enabled: bool) -> Output {
        Output {
            enabled,
            watched: Vec::new(),
            warnings: Vec::new(),
        }
    }

    pub(crate) fn line(&self, l: &str) {
        if self.enabled {
            println!("{l}");
        }
    }

    pub(crate) fn warn(&mut self, w: &str) {
        for l in w.lines() {
            self.line(&format!("cargo:warning={l}"));
        }
        self.warnings.push(w.to_string());
    }

    pub(crate) fn watch(&mut self, p: &Path) {
        self.watched.push(p.to_path_buf());
    }

    pub(crate) fn flush_watches(&mut self) {
        let mut seen = std::collections::HashSet::new();
        for p in std::mem::take(&mut self.watched) {
            if seen.insert(p.clone()) {
                self.line(&format!("cargo:rerun-if-changed={}", p.display()));
            }
        }
    }
}

/// `$OUT_DIR/rocm-kernels/<name>.log`: one block per run, so tests and people can see what was
/// compiled and what was reused.
pub(crate) struct Log {
    path: PathBuf,
    lines: Vec<String>,
}

impl Log {
    pub(crate) fn open(path: &Path) -> Log {
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        Log {
            path: path.to_path_buf(),
            lines: vec![format!("run unix_ms={unix_ms}")],
        }
    }

    pub(crate) fn line(&mut self, l: &str) {
        self.lines.push(l.to_string());
    }
}

impl Drop for Log {
    /// Written on every exit path, so a failed run is logged too.
    fn drop(&mut self) {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
        {
            let _ = f.write_all(format!("{}\n", self.lines.join("\n")).as_bytes());
        }
        self.lines.clear();
    }
}
