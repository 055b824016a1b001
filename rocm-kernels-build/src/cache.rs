//! The incremental cache: an object is reused when the compile command (compiler, its version,
//! flags, targets) is the same and every file the compiler read last time (source and headers,
//! from its depfile) still has the same content.
//!
//! Content is hashed with sha256; to keep no-op runs cheap a file is re-hashed only when its
//! size or modification time differ from what the record saw. The compiler's `--version` is
//! cached the same way, by path, size and mtime, so a cache hit never starts the compiler.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::BuildError;
use crate::source::hex;

/// Bump when the record format or the meaning of a key changes.
const CACHE_VERSION: &str = "rocm-kernels-cache-v1";

/// Size and modification time of a file, the cheap part of its identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stat {
    pub size: u64,
    pub mtime_ns: u64,
}

impl Stat {
    pub(crate) fn of(path: &Path) -> std::io::Result<Stat> {
        let m = std::fs::metadata(path)?;
        let mtime_ns = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Ok(Stat {
            size: m.len(),
            mtime_ns,
        })
    }
}

/// A file the compiler read, as it was when the object was built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Dep {
    pub path: PathBuf,
    #[serde(flatten)]
    pub stat: Stat,
    /// Empty for files compared by stat only (toolchain and system headers: they change only
    /// with a package update, which changes their mtime; hashing the ~4 MB a HIP compile reads
    /// from them would slow every cold build for nothing).
    pub sha256: String,
}

/// What is stored beside each object: the command it was built with and what it read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    pub version: String,
    /// sha256 of the command fingerprint (see [`command_fingerprint`]).
    pub command: String,
    pub deps: Vec<Dep>,
    pub output_size: u64,
}

/// Hashes file contents, reusing earlier hashes when size and mtime are unchanged; shared by the
/// parallel compile jobs so a header included by every source is hashed once per run.
#[derive(Debug, Default)]
pub(crate) struct Hasher {
    memo: Mutex<HashMap<PathBuf, (Stat, String)>>,
}

impl Hasher {
    /// The content hash of `path`; `known` is an earlier (stat, hash) to trust if the stat matches.
    pub(crate) fn hash(
        &self,
        path: &Path,
        known: Option<(Stat, &str)>,
    ) -> std::io::Result<(Stat, String)> {
        let stat = Stat::of(path)?;
        if let Some((s, h)) = known {
            if s == stat {
                return Ok((stat, h.to_string()));
            }
        }
        if let Some((s, h)) = self.lock().get(path) {
            if *s == stat {
                return Ok((stat, h.clone()));
            }
        }
        let bytes = std::fs::read(path)?;
        let h = hex(&Sha256::digest(&bytes));
        self.lock().insert(path.to_path_buf(), (stat, h.clone()));
        Ok((stat, h))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, (Stat, String)>> {
        self.memo.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The sha256 of everything about a compile except the files it reads: compiler path and
/// version, arguments (with output paths left out), and the environment that changes its output.
pub(crate) fn command_fingerprint(
    compiler: &Path,
    compiler_version: &str,
    args: &[String],
    env: &[(String, String)],
) -> String {
    let mut h = Sha256::new();
    let mut field = |s: &str| {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    field(CACHE_VERSION);
    field(&compiler.to_string_lossy());
    field(compiler_version);
    for a in args {
        field(a);
    }
    for (k, v) in env {
        field(k);
        field(v);
    }
    hex(&h.finalize())
}

impl Record {
    pub(crate) fn load(path: &Path) -> Option<Record> {
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str::<Record>(&text)
            .ok()
            .filter(|r| r.version == CACHE_VERSION)
    }

    pub(crate) fn store(&self, path: &Path) -> Result<(), BuildError> {
        let text = serde_json::to_string_pretty(self).expect("records serialize");
        write_atomic(path, text.as_bytes())
    }

    /// Whether `output` can be reused for a compile with fingerprint `command`: same command,
    /// output present, and every recorded input has the same content. `None` when stale;
    /// `Some(true)` when fresh but some file's stat changed (touched, same content): the record
    /// was updated and should be stored so that file is not hashed again next time.
    pub(crate) fn freshness(
        &mut self,
        command: &str,
        output: &Path,
        hasher: &Hasher,
    ) -> Option<bool> {
        if self.command != command {
            return None;
        }
        match Stat::of(output) {
            Ok(s) if s.size == self.output_size => {}
            _ => return None,
        }
        let mut restat = false;
        for dep in &mut self.deps {
            if dep.sha256.is_empty() {
                if Stat::of(&dep.path).ok() != Some(dep.stat) {
                    return None;
                }
                continue;
            }
            match hasher.hash(&dep.path, Some((dep.stat, &dep.sha256))) {
                Ok((stat, sha)) if sha == dep.sha256 => {
                    restat |= stat != dep.stat;
                    dep.stat = stat;
                }
                _ => return None,
            }
        }
        Some(restat)
    }

    /// Builds the record of a finished compile from its depfile's list of inputs; inputs for
    /// which `by_content` is false are recorded by stat only.
    pub(crate) fn after_compile(
        command: String,
        inputs: &[PathBuf],
        output: &Path,
        hasher: &Hasher,
        by_content: &dyn Fn(&Path) -> bool,
    ) -> Result<Record, BuildError> {
        let mut deps = Vec::with_capacity(inputs.len());
        for p in inputs {
            let read_error = |e| BuildError::io("cannot read compiler input", p, e);
            let (stat, sha256) = if by_content(p) {
                hasher.hash(p, None).map_err(read_error)?
            } else {
                (Stat::of(p).map_err(read_error)?, String::new())
            };
            deps.push(Dep {
                path: p.clone(),
                stat,
                sha256,
            });
        }
        let output_size = Stat::of(output)
            .map_err(|e| BuildError::io("compiler wrote no output at", output, e))?
            .size;
        Ok(Record {
            version: CACHE_VERSION.to_string(),
            command,
            deps,
            output_size,
        })
    }
}

/// Parses a make-style depfile (`out: in1 in2 \` ...) into its inputs, resolving relative
/// paths against `cwd` (the directory the compiler ran in). Handles `\ ` escaped spaces, `$$`,
/// line continuations, and several rules in one file.
pub(crate) fn parse_depfile(text: &str, cwd: &Path) -> Vec<PathBuf> {
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some(' ') | Some('#') => cur.push(chars.next().unwrap_or(' ')),
                Some('\n') => {
                    chars.next();
                    push_word(&mut words, &mut cur);
                }
                Some('\r') => {
                    chars.next();
                    if chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    push_word(&mut words, &mut cur);
                }
                _ => cur.push('\\'),
            },
            '$' if chars.peek() == Some(&'$') => {
                chars.next();
                cur.push('$');
            }
            ' ' | '\t' | '\n' | '\r' => {
                push_word(&mut words, &mut cur);
                if c == '\n' {
                    words.push("\n".to_string());
                }
            }
            _ => cur.push(c),
        }
    }
    push_word(&mut words, &mut cur);

    // A word ending in ':' (unescaped) ends a rule's targets; everything after, up to the next
    // newline, is an input.
    let mut out: Vec<PathBuf> = Vec::new();
    let mut in_inputs = false;
    for w in words {
        if w == "\n" {
            in_inputs = false;
            continue;
        }
        if !in_inputs {
            if w.ends_with(':') {
                in_inputs = true;
            }
            continue;
        }
        let p = cwd.join(&w);
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

fn push_word(words: &mut Vec<String>, cur: &mut String) {
    if !cur.is_empty() {
        words.push(std::mem::take(cur));
    }
}

/// Writes a file through a temporary name so a crash never leaves a half-written one.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), BuildError> {
    let tmp = path.with_extension(format!(
        "{}.tmp{}",
        path.extension()
            .map(|e| e.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    std::fs::write(&tmp, bytes).map_err(|e| BuildError::io("cannot write", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| BuildError::io("cannot write", path, e))
}

/// What a compiler answered (`--version`, the programs it lacks), cached in a JSON file under
/// OUT_DIR by the compiler's path and (size, mtime), and by the stats of any other paths the
/// answer depends on (the folder where a missing program would be installed): a build script that
/// reruns with nothing to compile starts no compiler.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct ProbeCache {
    entries: Vec<ProbeEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ProbeEntry {
    path: PathBuf,
    question: String,
    #[serde(flatten)]
    stat: Stat,
    #[serde(default)]
    watched: Vec<(PathBuf, Option<Stat>)>,
    answer: String,
}

impl ProbeCache {
    /// The answer to `question` for `compiler`, from the cache file when the compiler binary and
    /// the paths the stored answer depends on are unchanged, else by calling `run` (which starts
    /// the compiler and returns its answer and the paths it depends on) and storing the answer.
    pub(crate) fn get_or_run(
        file: &Path,
        compiler: &Path,
        question: &str,
        run: impl FnOnce() -> Result<(String, Vec<PathBuf>), BuildError>,
    ) -> Result<String, BuildError> {
        let stat = Stat::of(compiler).map_err(|e| BuildError::CompilerSpawn {
            program: compiler.display().to_string(),
            source: e,
        })?;
        let mut cache: ProbeCache = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        if let Some(e) = cache.entries.iter().find(|e| {
            e.path == compiler
                && e.question == question
                && e.stat == stat
                && e.watched.iter().all(|(p, st)| Stat::of(p).ok() == *st)
        }) {
            return Ok(e.answer.clone());
        }
        let (answer, watch) = run()?;
        let watched: Vec<(PathBuf, Option<Stat>)> = watch
            .into_iter()
            .map(|p| {
                let st = Stat::of(&p).ok();
                (p, st)
            })
            .collect();
        cache
            .entries
            .retain(|e| !(e.path == compiler && e.question == question));
        cache.entries.push(ProbeEntry {
            path: compiler.to_path_buf(),
            question: question.to_owned(),
            stat,
            watched,
            answer: answer.clone(),
        });
        let text = serde_json::to_string_pretty(&cache).expect("probe cache serializes");
        write_atomic(file, text.as_bytes())?;
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depfile_parsing() {
        let text = "out/k.hipfb: k.hip \\\n  /usr/include/hip/hip_runtime.h inc/my\\ header.h \\\n  a$$b.h\nother.o: x.h\n";
        let deps = parse_depfile(text, Path::new("/crate"));
        assert_eq!(
            deps,
            [
                PathBuf::from("/crate/k.hip"),
                PathBuf::from("/usr/include/hip/hip_runtime.h"),
                PathBuf::from("/crate/inc/my header.h"),
                PathBuf::from("/crate/a$b.h"),
                PathBuf::from("/crate/x.h"),
            ]
        );
    }

    #[test]
    fn record_freshness_follows_content_not_mtime() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("k.hip");
        let hdr = dir.path().join("h.h");
        let out = dir.path().join("k.o");
        std::fs::write(&src, "kernel").unwrap();
        std::fs::write(&hdr, "#define A 1").unwrap();
        std::fs::write(&out, "object").unwrap();
        let hasher = Hasher::default();
        let system = dir.path().join("system.h");
        std::fs::write(&system, "#define S 1").unwrap();
        let mut rec = Record::after_compile(
            "cmd".into(),
            &[src.clone(), hdr.clone(), system.clone()],
            &out,
            &hasher,
            &|p: &Path| p != system,
        )
        .unwrap();
        assert!(rec.deps[2].sha256.is_empty());
        let path = dir.path().join("k.rec.json");
        rec.store(&path).unwrap();
        assert_eq!(Record::load(&path).unwrap(), rec);

        assert_eq!(rec.freshness("cmd", &out, &Hasher::default()), Some(false));
        assert_eq!(rec.freshness("other cmd", &out, &Hasher::default()), None);
        // Same content, new mtime: still fresh, and the new stat is recorded.
        std::thread::sleep(std::time::Duration::from_millis(5));
        std::fs::write(&hdr, "#define A 1").unwrap();
        assert_eq!(rec.freshness("cmd", &out, &Hasher::default()), Some(true));
        assert_eq!(rec.freshness("cmd", &out, &Hasher::default()), Some(false));
        // New content: stale.
        std::fs::write(&hdr, "#define A 2").unwrap();
        assert_eq!(rec.freshness("cmd", &out, &Hasher::default()), None);
        // A stat-only file with a new mtime: stale, even with the same content.
        std::fs::write(&hdr, "#define A 1").unwrap();
        let mut rec = Record::after_compile(
            "cmd".into(),
            &[src.clone(), hdr.clone(), system.clone()],
            &out,
            &hasher,
            &|p: &Path| p != system,
        )
        .unwrap();
        assert_eq!(rec.freshness("cmd", &out, &Hasher::default()), Some(false));
        std::thread::sleep(std::time::Duration::from_millis(5));
        std::fs::write(&system, "#define S 1").unwrap();
        assert_eq!(rec.freshness("cmd", &out, &Hasher::default()), None);
        // Missing output: stale.
        std::fs::remove_file(&out).unwrap();
        assert_eq!(rec.freshness("cmd", &out, &Hasher::default()), None);
    }

    #[test]
    fn answers_are_cached_by_compiler_stat_and_the_paths_they_depend_on() {
        let dir = tempfile::tempdir().unwrap();
        let compiler = dir.path().join("clang++");
        std::fs::write(&compiler, "binary v1").unwrap();
        let file = dir.path().join("probes.json");
        let ask = |answer: &'static str| {
            move || -> Result<(String, Vec<PathBuf>), BuildError> { Ok((answer.into(), vec![])) }
        };
        let v = ProbeCache::get_or_run(&file, &compiler, "version", ask("clang 19")).unwrap();
        assert_eq!(v, "clang 19");
        let v =
            ProbeCache::get_or_run(&file, &compiler, "version", || panic!("must not run")).unwrap();
        assert_eq!(v, "clang 19");
        // Another question about the same compiler is asked, and kept beside the first.
        let tools = dir.path().join("bin");
        std::fs::create_dir(&tools).unwrap();
        let watched = tools.clone();
        let v = ProbeCache::get_or_run(&file, &compiler, "missing", move || {
            Ok(("bundler".into(), vec![watched]))
        })
        .unwrap();
        assert_eq!(v, "bundler");
        let v =
            ProbeCache::get_or_run(&file, &compiler, "version", || panic!("must not run")).unwrap();
        assert_eq!(v, "clang 19");
        // A path the answer depends on changes: asked again.
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(tools.join("clang-offload-bundler"), "").unwrap();
        let v = ProbeCache::get_or_run(&file, &compiler, "missing", ask("")).unwrap();
        assert_eq!(v, "");
        // A new compiler binary: asked again.
        std::fs::write(&compiler, "binary v2 (longer)").unwrap();
        let v = ProbeCache::get_or_run(&file, &compiler, "version", ask("clang 20")).unwrap();
        assert_eq!(v, "clang 20");
    }

    #[test]
    fn fingerprint_changes_with_every_part() {
        let base = command_fingerprint(Path::new("/c"), "v1", &["-O3".into()], &[]);
        assert_ne!(
            base,
            command_fingerprint(Path::new("/d"), "v1", &["-O3".into()], &[])
        );
        assert_ne!(
            base,
            command_fingerprint(Path::new("/c"), "v2", &["-O3".into()], &[])
        );
        assert_ne!(
            base,
            command_fingerprint(Path::new("/c"), "v1", &["-O2".into()], &[])
        );
        assert_ne!(
            base,
            command_fingerprint(
                Path::new("/c"),
                "v1",
                &["-O3".into()],
                &[("A".into(), "1".into())]
            )
        );
    }
}
