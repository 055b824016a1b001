//! Our own append-only results cache: JSON Lines, one line per evaluated configuration.
//!
//! Why this format and not Kernel Tuner's: a Kernel Tuner cache is one JSON document that is
//! kept "open" while tuning (see [`crate::kt`]), so a kill mid-write leaves a file that needs
//! repair heuristics and two writers corrupt it. Here every line is a complete JSON object:
//!
//! - each line is written with a **single `write` call on a file opened with `O_APPEND`**,
//!   followed by `fsync` (`File::sync_data`). With `O_APPEND` the kernel positions and writes
//!   each call atomically with respect to other appenders on a local filesystem, so two
//!   processes appending to one cache never interleave inside a line, and no lock is needed;
//!   the `fsync` means a measured line survives a crash or a kill of the tuner right after;
//! - a **torn last line** (the process or machine died during the write) is detected on read
//!   (no trailing newline and not valid JSON), reported as a [`CacheWarning`] and ignored.
//!   Before appending to such a file, a newline is written first so that the fragment stays a
//!   separate (ignored) line instead of corrupting the next record. Two writers racing to
//!   repair it can only produce an empty line, which readers skip;
//! - a corrupt line in the middle is skipped with a warning, never a panic;
//! - conflicting measurements of one configuration (two runs, two machines) are all kept;
//!   consumers pool them (see [`aggregate`]).
//!
//! Line types (field `"type"`):
//!
//! ```json
//! {"type":"meta","format":"rocm-tune-jsonl","version":1,"kernel":"matmul","device":"gfx942","tune_params_keys":["BM","BN"],"tune_params":{"BM":[64,128],"BN":[64,128]}}
//! {"type":"result","key":"64,128","params":{"BM":64,"BN":128},"times":[0.51,0.50,0.52],"features":{"vgprs":96.0},"unix_time":1767225600.25,"pid":4242}
//! {"type":"result","key":"128,128","params":{"BM":128,"BN":128},"times":[],"failure":"compile","message":"LDS exceeds 64 KiB","unix_time":1767225601.0}
//! ```
//!
//! Unknown fields are ignored and unknown line types are skipped with a warning, so the format
//! can grow without breaking old readers.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::eval::{FailureKind, Features};
use crate::space::{ConfigId, SearchSpace};
use crate::value::Value;

/// Value of the meta line's `format` field.
pub const FORMAT: &str = "rocm-tune-jsonl";
/// Current format version.
pub const VERSION: u32 = 1;

/// Errors of the cache (I/O, or a cache that belongs to another search space).
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Reading or writing failed.
    #[error("cache {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The cache was written for other tunable parameters.
    #[error("cache {path} was written for parameters [{found}], not [{expected}]")]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// The parameters asked for.
        expected: String,
        /// The parameters in the file.
        found: String,
    },
    /// A record could not be serialised (should not happen; kept for a typed error path).
    #[error("cache {path}: cannot serialise record: {message}")]
    Serialize {
        /// The file.
        path: PathBuf,
        /// serde_json's message.
        message: String,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> CacheError + '_ {
    move |source| CacheError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Problems found while reading that were worked around.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CacheWarning {
    /// The last line was cut short (the writer was killed mid-line); it was ignored.
    #[error("{path}: line {line} is a torn write ({bytes} bytes without newline); ignored")]
    TornTail {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// Length of the fragment.
        bytes: usize,
    },
    /// A line is not valid JSON or not a valid record; it was skipped.
    #[error("{path}: line {line} is corrupt ({message}); skipped")]
    CorruptLine {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A line of a type this version does not know; skipped.
    #[error("{path}: line {line} has unknown type `{kind}`; skipped")]
    UnknownType {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// The type.
        kind: String,
    },
    /// A record that does not belong to the search space in use; skipped.
    #[error("record `{key}` does not match the search space ({reason}); skipped")]
    NotInSpace {
        /// The record key.
        key: String,
        /// Why.
        reason: String,
    },
}

/// The meta line: what the cache is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheMeta {
    /// Always [`FORMAT`].
    pub format: String,
    /// Format version.
    pub version: u32,
    /// Kernel name, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Device name (e.g. `"gfx942"`), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Parameter names in order (as Kernel Tuner's `tune_params_keys`).
    pub tune_params_keys: Vec<String>,
    /// Each parameter's value list, so that a cache alone describes its space.
    #[serde(default)]
    pub tune_params: serde_json::Map<String, serde_json::Value>,
}

impl CacheMeta {
    /// Meta for a search space.
    pub fn for_space(space: &SearchSpace, kernel: Option<&str>, device: Option<&str>) -> Self {
        let tune_params = space
            .names()
            .iter()
            .enumerate()
            .map(|(p, n)| {
                let vals = space.values(p).iter().map(Value::to_json).collect();
                (n.clone(), serde_json::Value::Array(vals))
            })
            .collect();
        CacheMeta {
            format: FORMAT.to_string(),
            version: VERSION,
            kernel: kernel.map(str::to_string),
            device: device.map(str::to_string),
            tune_params_keys: space.names().to_vec(),
            tune_params,
        }
    }

    /// Parameter names and value lists as a [`SearchSpace::from_configs`] input.
    pub fn params(&self) -> Vec<(String, Vec<Value>)> {
        self.tune_params_keys
            .iter()
            .map(|k| {
                let vals = self
                    .tune_params
                    .get(k)
                    .and_then(|v| v.as_array())
                    .map(|a| a.iter().filter_map(Value::from_json).collect())
                    .unwrap_or_default();
                (k.clone(), vals)
            })
            .collect()
    }
}

/// One evaluated configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheRecord {
    /// Kernel Tuner style key (`","`-joined Python `str` of the values).
    pub key: String,
    /// Parameter values by name (authoritative; the key is for humans and Kernel Tuner).
    pub params: serde_json::Map<String, serde_json::Value>,
    /// Time samples (empty for a failure).
    #[serde(default)]
    pub times: Vec<f64>,
    /// Set when the evaluation failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureKind>,
    /// Failure message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Static features of the code object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub features: Features,
    /// When it was measured (seconds since the Unix epoch).
    #[serde(default)]
    pub unix_time: f64,
    /// Writing process, to tell concurrent writers apart when merging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

impl CacheRecord {
    /// A record for configuration `id` of `space`, stamped with the current time and pid.
    pub fn new(
        space: &SearchSpace,
        id: ConfigId,
        times: Vec<f64>,
        failure: Option<(FailureKind, String)>,
        features: Features,
    ) -> Self {
        let (failure, message) = match failure {
            Some((k, m)) => (Some(k), Some(m)),
            None => (None, None),
        };
        CacheRecord {
            key: space.key(id),
            params: space.config(id).to_json_map(),
            times,
            failure,
            message,
            features,
            unix_time: now_unix(),
            pid: Some(std::process::id()),
        }
    }

    /// True for a successful measurement.
    pub fn is_ok(&self) -> bool {
        self.failure.is_none()
    }

    /// The configuration's id in `space`, or why it does not fit.
    pub fn locate(&self, space: &SearchSpace) -> Result<ConfigId, String> {
        let mut vals = Vec::with_capacity(space.num_params());
        for n in space.names() {
            let v = self
                .params
                .get(n)
                .ok_or_else(|| format!("no value for `{n}`"))?;
            vals.push(Value::from_json(v).ok_or_else(|| format!("bad value for `{n}`"))?);
        }
        space
            .find_values(&vals)
            .ok_or_else(|| "not a valid configuration of the space".to_string())
    }

    fn check(&self) -> Result<(), String> {
        if self.is_ok() {
            if self.times.is_empty() {
                return Err("successful record without times".into());
            }
            if self.times.iter().any(|t| !t.is_finite() || *t <= 0.0) {
                return Err("non-positive or non-finite time".into());
            }
        }
        Ok(())
    }
}

/// Seconds since the Unix epoch.
pub fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line {
    Meta(CacheMeta),
    Result(CacheRecord),
}

/// Everything read from a cache file.
#[derive(Debug, Clone, Default)]
pub struct CacheContents {
    /// The first meta line, if any.
    pub meta: Option<CacheMeta>,
    /// Any further meta lines (concurrent creators each write one).
    pub extra_meta: Vec<CacheMeta>,
    /// Records in file order.
    pub records: Vec<CacheRecord>,
    /// Problems worked around.
    pub warnings: Vec<CacheWarning>,
}

/// Parses cache text; never fails, problems become warnings.
pub fn parse(text: &str, path_label: &str) -> CacheContents {
    let mut out = CacheContents::default();
    let ends_with_newline = text.ends_with('\n');
    let lines: Vec<&str> = text.split('\n').collect();
    let last = lines.len() - 1; // split always yields at least one piece
    for (i, line) in lines.iter().enumerate() {
        let lineno = i + 1;
        let torn_candidate = i == last && !ends_with_newline;
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                out.warnings.push(if torn_candidate {
                    CacheWarning::TornTail {
                        path: path_label.to_string(),
                        line: lineno,
                        bytes: line.len(),
                    }
                } else {
                    CacheWarning::CorruptLine {
                        path: path_label.to_string(),
                        line: lineno,
                        message: e.to_string(),
                    }
                });
                continue;
            }
        };
        let kind = value
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or("")
            .to_string();
        if kind != "meta" && kind != "result" {
            out.warnings.push(CacheWarning::UnknownType {
                path: path_label.to_string(),
                line: lineno,
                kind,
            });
            continue;
        }
        match serde_json::from_value::<Line>(value) {
            Ok(Line::Meta(m)) => {
                if out.meta.is_none() {
                    out.meta = Some(m);
                } else {
                    out.extra_meta.push(m);
                }
            }
            Ok(Line::Result(r)) => match r.check() {
                Ok(()) => out.records.push(r),
                Err(message) => out.warnings.push(CacheWarning::CorruptLine {
                    path: path_label.to_string(),
                    line: lineno,
                    message,
                }),
            },
            Err(e) => out.warnings.push(CacheWarning::CorruptLine {
                path: path_label.to_string(),
                line: lineno,
                message: e.to_string(),
            }),
        }
    }
    out
}

/// Reads a cache file without opening it for writing.
pub fn read(path: &Path) -> Result<CacheContents, CacheError> {
    let bytes = std::fs::read(path).map_err(io_err(path))?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(parse(&text, &path.display().to_string()))
}

fn check_meta(path: &Path, expected: &[String], metas: &[&CacheMeta]) -> Result<(), CacheError> {
    for m in metas {
        if m.tune_params_keys != expected {
            return Err(CacheError::Mismatch {
                path: path.to_path_buf(),
                expected: expected.join(", "),
                found: m.tune_params_keys.join(", "),
            });
        }
    }
    Ok(())
}

/// An open cache: the records read at open time plus everything appended since.
#[derive(Debug)]
pub struct JsonlCache {
    path: PathBuf,
    file: File,
    contents: CacheContents,
}

impl JsonlCache {
    /// Opens (creating if needed) a cache for the parameters in `meta`. Existing records are
    /// read; a torn last line is repaired by terminating it; a cache for other parameters is
    /// an error.
    pub fn open(path: impl AsRef<Path>, meta: CacheMeta) -> Result<JsonlCache, CacheError> {
        let path = path.as_ref().to_path_buf();
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(io_err(&path))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io_err(&path))?;
        let text = String::from_utf8_lossy(&bytes);
        let contents = parse(&text, &path.display().to_string());
        let metas: Vec<&CacheMeta> = contents.meta.iter().chain(&contents.extra_meta).collect();
        check_meta(&path, &meta.tune_params_keys, &metas)?;
        let mut cache = JsonlCache {
            path,
            file,
            contents,
        };
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            // Terminate the torn fragment so the next record starts on its own line.
            cache.write_line(b"\n")?;
        }
        if cache.contents.meta.is_none() {
            let line = serialize_line(&cache.path, &Line::Meta(meta.clone()))?;
            cache.write_line(line.as_bytes())?;
            cache.contents.meta = Some(meta);
        }
        Ok(cache)
    }

    fn write_line(&mut self, line: &[u8]) -> Result<(), CacheError> {
        // One write call per line: with O_APPEND this is what keeps concurrent writers from
        // interleaving. `write_all` only loops on a short write, which regular files do not
        // produce short of a full disk (and then the torn line is detected on read).
        self.file.write_all(line).map_err(io_err(&self.path))?;
        self.file.sync_data().map_err(io_err(&self.path))
    }

    /// Appends one record (one line, fsync'd before returning).
    pub fn append(&mut self, record: CacheRecord) -> Result<(), CacheError> {
        let line = serialize_line(&self.path, &Line::Result(record.clone()))?;
        self.write_line(line.as_bytes())?;
        self.contents.records.push(record);
        Ok(())
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The meta line in effect.
    pub fn meta(&self) -> Option<&CacheMeta> {
        self.contents.meta.as_ref()
    }

    /// All records (read at open time, then appended).
    pub fn records(&self) -> &[CacheRecord] {
        &self.contents.records
    }

    /// Problems found when reading the file.
    pub fn warnings(&self) -> &[CacheWarning] {
        &self.contents.warnings
    }
}

fn serialize_line(path: &Path, line: &Line) -> Result<String, CacheError> {
    let mut s = serde_json::to_string(line).map_err(|e| CacheError::Serialize {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    s.push('\n');
    Ok(s)
}

/// What several records of one configuration amount to.
#[derive(Debug, Clone, PartialEq)]
pub enum Aggregate {
    /// At least one successful measurement: all successful samples pooled, features of the
    /// latest successful record.
    Ok {
        /// Pooled samples.
        times: Vec<f64>,
        /// Features.
        features: Features,
    },
    /// Only failures: the first failure.
    Failed {
        /// Its class.
        kind: FailureKind,
        /// Its message.
        message: String,
    },
}

/// Pools the records of one configuration. A success anywhere wins over failures because a
/// failure can be transient (a launch failure under memory pressure) while a measured time
/// proves the configuration runs; conflicting times are pooled rather than one overwriting
/// the other, so the spread shows in the coefficient of variation.
pub fn aggregate<'a>(records: impl IntoIterator<Item = &'a CacheRecord>) -> Option<Aggregate> {
    let mut times = Vec::new();
    let mut features = None;
    let mut first_failure = None;
    for r in records {
        if r.is_ok() {
            times.extend_from_slice(&r.times);
            features = Some(r.features.clone());
        } else if first_failure.is_none() {
            first_failure = Some((
                r.failure.unwrap_or(FailureKind::Other),
                r.message.clone().unwrap_or_default(),
            ));
        }
    }
    if let Some(features) = features {
        Some(Aggregate::Ok { times, features })
    } else {
        first_failure.map(|(kind, message)| Aggregate::Failed { kind, message })
    }
}

/// Groups records by configuration of `space`; records that do not fit become warnings.
pub fn index_records<'a>(
    space: &SearchSpace,
    records: &'a [CacheRecord],
    warnings: &mut Vec<CacheWarning>,
) -> HashMap<ConfigId, Vec<&'a CacheRecord>> {
    let mut map: HashMap<ConfigId, Vec<&CacheRecord>> = HashMap::new();
    for r in records {
        match r.locate(space) {
            Ok(id) => map.entry(id).or_default().push(r),
            Err(reason) => warnings.push(CacheWarning::NotInSpace {
                key: r.key.clone(),
                reason,
            }),
        }
    }
    map
}

/// Summary of a [`merge`].
#[derive(Debug, Clone, Default)]
pub struct MergeReport {
    /// Records read from all inputs.
    pub records_read: usize,
    /// Records written.
    pub records_written: usize,
    /// Byte-identical duplicates dropped (the same line seen in two inputs).
    pub duplicates_dropped: usize,
    /// Keys with two or more different records (all kept).
    pub conflicting_keys: usize,
    /// Problems found in the inputs.
    pub warnings: Vec<CacheWarning>,
}

/// Merges caches into `output` (written to a temporary file, fsync'd, then renamed, so a
/// crash never leaves a half-written output; `output` may be one of the inputs). Records are
/// kept in input order; exact duplicates are dropped; different records for the same
/// configuration are all kept.
pub fn merge(inputs: &[&Path], output: &Path) -> Result<MergeReport, CacheError> {
    let mut report = MergeReport::default();
    let mut meta: Option<CacheMeta> = None;
    let mut seen = HashSet::new();
    let mut per_key: HashMap<String, usize> = HashMap::new();
    let mut lines = Vec::new();
    for input in inputs {
        let c = read(input)?;
        report.warnings.extend(c.warnings);
        for m in c.meta.into_iter().chain(c.extra_meta) {
            match &meta {
                None => meta = Some(m),
                Some(first) => check_meta(input, &first.tune_params_keys, &[&m])?,
            }
        }
        for r in c.records {
            report.records_read += 1;
            let line = serialize_line(output, &Line::Result(r.clone()))?;
            if !seen.insert(line.clone()) {
                report.duplicates_dropped += 1;
                continue;
            }
            *per_key.entry(r.key.clone()).or_default() += 1;
            lines.push(line);
        }
    }
    report.records_written = lines.len();
    report.conflicting_keys = per_key.values().filter(|&&n| n > 1).count();

    let tmp = output.with_extension(format!("merge-tmp-{}", std::process::id()));
    {
        let mut f = File::create(&tmp).map_err(io_err(&tmp))?;
        let mut buf = String::new();
        if let Some(m) = &meta {
            buf.push_str(&serialize_line(output, &Line::Meta(m.clone()))?);
        }
        for l in &lines {
            buf.push_str(l);
        }
        f.write_all(buf.as_bytes()).map_err(io_err(&tmp))?;
        f.sync_all().map_err(io_err(&tmp))?;
    }
    std::fs::rename(&tmp, output).map_err(io_err(output))?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> SearchSpace {
        SearchSpace::builder()
            .param("a", [1, 2, 4])
            .param("b", ["x", "y"])
            .build()
            .unwrap()
    }

    fn temp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("rocm-tune-unit-{}-{}", std::process::id(), name));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("cache.jsonl")
    }

    #[test]
    fn append_and_reopen() {
        let s = space();
        let path = temp("reopen");
        let meta = CacheMeta::for_space(&s, Some("k"), None);
        {
            let mut c = JsonlCache::open(&path, meta.clone()).unwrap();
            for id in s.ids().take(3) {
                c.append(CacheRecord::new(
                    &s,
                    id,
                    vec![1.0, 1.1],
                    None,
                    Features::new(),
                ))
                .unwrap();
            }
        }
        let c = JsonlCache::open(&path, meta).unwrap();
        assert_eq!(c.records().len(), 3);
        assert!(c.warnings().is_empty());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 4, "{text}");
        assert_eq!(c.records()[1].locate(&s), Ok(s.id(1).unwrap()));
    }

    #[test]
    fn mismatched_parameters_are_refused() {
        let s = space();
        let path = temp("mismatch");
        JsonlCache::open(&path, CacheMeta::for_space(&s, None, None)).unwrap();
        let other = SearchSpace::builder().param("z", [1]).build().unwrap();
        let err = JsonlCache::open(&path, CacheMeta::for_space(&other, None, None)).unwrap_err();
        assert!(matches!(err, CacheError::Mismatch { .. }), "{err}");
    }

    #[test]
    fn corrupt_and_unknown_lines_are_skipped() {
        let text = "{\"type\":\"future\",\"x\":1}\nnot json\n{\"type\":\"result\",\"key\":\"1\",\"params\":{\"a\":1},\"times\":[]}\n{\"type\":\"result\",\"key\":\"1\",\"params\":{\"a\":1},\"times\":[2.0]}\n{\"type\":\"res";
        let c = parse(text, "t");
        assert_eq!(c.records.len(), 1);
        assert_eq!(c.warnings.len(), 4, "{:?}", c.warnings);
        assert!(matches!(
            c.warnings[0],
            CacheWarning::UnknownType { line: 1, .. }
        ));
        assert!(matches!(
            c.warnings[1],
            CacheWarning::CorruptLine { line: 2, .. }
        ));
        assert!(matches!(
            c.warnings[2],
            CacheWarning::CorruptLine { line: 3, .. }
        ));
        assert!(matches!(
            c.warnings[3],
            CacheWarning::TornTail { line: 5, .. }
        ));
    }

    #[test]
    fn aggregate_pools_and_prefers_success() {
        let s = space();
        let id = s.id(0).unwrap();
        let ok1 = CacheRecord::new(&s, id, vec![1.0], None, Features::new());
        let ok2 = CacheRecord::new(&s, id, vec![3.0], None, Features::new());
        let bad = CacheRecord::new(
            &s,
            id,
            vec![],
            Some((FailureKind::Launch, "oops".into())),
            Features::new(),
        );
        assert_eq!(
            aggregate([&bad, &ok1, &ok2]),
            Some(Aggregate::Ok {
                times: vec![1.0, 3.0],
                features: Features::new()
            })
        );
        assert!(matches!(
            aggregate([&bad]),
            Some(Aggregate::Failed {
                kind: FailureKind::Launch,
                ..
            })
        ));
        assert_eq!(aggregate([]), None);
    }
}
