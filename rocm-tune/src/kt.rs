//! Kernel Tuner 1.x cache files: reading, writing (byte-compatible), incremental appending.
//!
//! # Format (as written by `kernel_tuner/util.py` in releases 1.0–1.4)
//!
//! One JSON object:
//!
//! ```text
//! {
//! "device_name": "NVIDIA RTX A4000",
//! "kernel_name": "vector_add",
//! "problem_size": [
//! 4096
//! ],
//! "tune_params_keys": [
//! "block_size_x"
//! ],
//! "tune_params": {
//! "block_size_x": [
//! 128,
//! 256
//! ]
//! },
//! "objective": "time",
//! "cache": {
//! "128": {"block_size_x": 128, "time": 0.0407, "times": [0.0412, 0.0403], "compile_time": 440.9, "verification_time": 0, "benchmark_time": 1.09, "strategy_time": 0, "framework_time": 0.85, "timestamp": "2022-12-23 12:11:26.411558+00:00"},
//! "256": {"block_size_x": 256, "time": "CompilationFailedConfig", ...}}
//! }
//! ```
//!
//! - The header is `json.dumps(header, indent="")` (one token per line, no indentation) with
//!   the final `}\n}` cut off, so the file ends in `"cache": {` while tuning.
//! - Each result is appended as `"\n" + json.dumps({key: entry})[1:-1] + ","`, i.e. one line
//!   per entry with Python's default separators `", "` and `": "`. The key is
//!   `",".join(str(v) for v in config)` in `tune_params_keys` order.
//! - At the end, `close_cache` replaces the trailing `,` by `}\n}`. A file whose stripped text
//!   does not end in `}\n}` or `}}}` is "open" (tuning interrupted or running); Kernel Tuner
//!   reads it by dropping a trailing `,` and appending `}\n}`, and reopens a closed file for
//!   appending by cutting the last 3 characters and adding `,`.
//! - Failed configurations carry a marker string: `"InvalidConfig"`,
//!   `"CompilationFailedConfig"`, `"RuntimeFailedConfig"` (or the generic `"ErrorConfig"`).
//!   Kernel Tuner ≤ 1.3 stores it in the objective field (`"time": "CompilationFailedConfig"`);
//!   1.4 stores it under `"__error__"`. Like Kernel Tuner's `read_cache`, any field holding a
//!   marker makes the entry an error. On export we write the marker as the objective value,
//!   which both versions read as an error.
//! - Per-entry fields: the parameters, `time` (mean of `times`, ms), `times`, `compile_time`,
//!   `verification_time`, `benchmark_time`, `strategy_time`, `framework_time` (ms) and
//!   `timestamp` (`str(datetime.now(timezone.utc))`), plus any user metrics (`"GFLOP/s"`).
//!   1.4 adds `strategy_time`/`framework_time` only after storing, so its lines may lack them.
//! - Released versions write no version field. An unreleased Kernel Tuner branch
//!   (`cache_files`) adds `"schema_version": "1.0.0"` first; it is read and written back.
//!   Any other header field (`"version"`, …) is preserved in [`KtCache::extra`].
//! - Python's `json.dumps` writes `NaN`/`Infinity` for non-finite floats; those are not JSON,
//!   so on reading they become `null` (with a warning).
//!
//! Writing reproduces Python's bytes: `indent=""` header, `", "`/`": "` separators,
//! `repr(float)` number formatting (`1e-05`, `2.0`), `\uXXXX` escapes for non-ASCII.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value as Json};

use crate::cache::{aggregate, Aggregate, CacheRecord};
use crate::eval::{mean, FailureKind, Features};
use crate::space::SearchSpace;
use crate::value::{python_float_repr, Value};

/// Error markers Kernel Tuner writes for failed configurations.
pub const ERROR_MARKERS: [&str; 4] = [
    "ErrorConfig",
    "InvalidConfig",
    "CompilationFailedConfig",
    "RuntimeFailedConfig",
];

/// Errors reading or writing Kernel Tuner caches.
#[derive(Debug, thiserror::Error)]
pub enum KtError {
    /// File I/O failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The text is not a (repairable) cache.
    #[error("not a Kernel Tuner cache: {0}")]
    Parse(String),
    /// A required header field is missing or has the wrong type.
    #[error("Kernel Tuner cache: header field `{0}` missing or malformed")]
    Field(&'static str),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> KtError + '_ {
    move |source| KtError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Things repaired or dropped while reading.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KtWarning {
    /// The file was not closed (interrupted or running tuning session).
    #[error("cache file was not closed (interrupted or still running); read as Kernel Tuner does")]
    WasOpen,
    /// The last entry was cut short and dropped.
    #[error("last cache entry was torn ({0} bytes) and dropped")]
    TornEntry(usize),
    /// `NaN`/`Infinity` tokens were replaced by `null`.
    #[error("{0} non-finite number(s) (NaN/Infinity) replaced by null")]
    NonFinite(usize),
}

/// A Kernel Tuner cache file in memory. Entries keep their order and every field.
#[derive(Debug, Clone, PartialEq)]
pub struct KtCache {
    /// `schema_version` (unreleased cache format branch), if present.
    pub schema_version: Option<String>,
    /// `device_name`.
    pub device_name: String,
    /// `kernel_name`.
    pub kernel_name: String,
    /// `problem_size` (array, number or the string `"callable"`), if present.
    pub problem_size: Option<Json>,
    /// `tune_params_keys`.
    pub tune_params_keys: Vec<String>,
    /// `tune_params`: name → value list.
    pub tune_params: Map<String, Json>,
    /// `objective` (absent in very old files).
    pub objective: Option<String>,
    /// Other header fields, written back before `cache`.
    pub extra: Map<String, Json>,
    /// `cache`: key → entry object.
    pub cache: Map<String, Json>,
}

/// Python `json.dumps` formatting for serde_json (compact or `indent=""`).
struct PyFormatter {
    indent: bool,
    has_value: bool,
}

impl serde_json::ser::Formatter for PyFormatter {
    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, v: f64) -> std::io::Result<()> {
        let s = if v.is_nan() {
            "NaN".to_string()
        } else if v.is_infinite() {
            if v > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
        } else {
            python_float_repr(v)
        };
        w.write_all(s.as_bytes())
    }
    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, v: f32) -> std::io::Result<()> {
        self.write_f64(w, f64::from(v))
    }
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        frag: &str,
    ) -> std::io::Result<()> {
        // ensure_ascii=True: everything outside printable ASCII as \uXXXX (UTF-16 units).
        for c in frag.chars() {
            if (' '..='~').contains(&c) {
                let mut b = [0u8; 4];
                w.write_all(c.encode_utf8(&mut b).as_bytes())?;
            } else {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    write!(w, "\\u{u:04x}")?;
                }
            }
        }
        Ok(())
    }
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.has_value = false;
        w.write_all(b"[")
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        if self.indent && self.has_value {
            w.write_all(b"\n")?;
        }
        w.write_all(b"]")
    }
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        match (self.indent, first) {
            (true, true) => w.write_all(b"\n"),
            (true, false) => w.write_all(b",\n"),
            (false, true) => Ok(()),
            (false, false) => w.write_all(b", "),
        }
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.has_value = false;
        w.write_all(b"{")
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        if self.indent && self.has_value {
            w.write_all(b"\n")?;
        }
        w.write_all(b"}")
    }
    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.begin_array_value(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// Serialises like Python's `json.dumps` (`indent=""` when `indent`).
pub fn python_json<T: Serialize + ?Sized>(value: &T, indent: bool) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(
        &mut out,
        PyFormatter {
            indent,
            has_value: false,
        },
    );
    // Serialising a serde_json::Value or map into memory cannot fail.
    if value.serialize(&mut ser).is_err() {
        return String::new();
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Replaces `NaN`, `Infinity`, `-Infinity` outside strings by `null`; returns the count.
fn sanitize_non_finite(text: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut count = 0;
    let mut in_str = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_str {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if c == '"' {
            in_str = true;
        } else {
            let mut matched = false;
            for tok in ["-Infinity", "Infinity", "NaN"] {
                if let Some(r) = rest.strip_prefix(tok) {
                    out.push_str("null");
                    count += 1;
                    rest = r;
                    matched = true;
                    break;
                }
            }
            if matched {
                continue;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    (out, count)
}

fn is_closed(stripped: &str) -> bool {
    stripped.ends_with("}\n}") || stripped.ends_with("}}}")
}

/// Closes an open cache text as Kernel Tuner's `correct_open_cache` does.
fn close_text(open: &str) -> String {
    let mut t = open.trim_end().to_string();
    if t.ends_with(',') {
        t.pop();
    }
    // A closed, entry-less file reopened by Kernel Tuner ends in `{,`: tolerate it.
    if let Some(stripped) = t.strip_suffix("{,") {
        t = format!("{stripped}{{");
    }
    t.replace("\"cache\": {,\n", "\"cache\": {\n") + "}\n}"
}

impl KtCache {
    /// Parses cache text, repairing open and torn files as described in the module docs.
    pub fn parse(text: &str) -> Result<(KtCache, Vec<KtWarning>), KtError> {
        let mut warnings = Vec::new();
        // Python reads text files with universal newlines.
        let text = text.replace("\r\n", "\n");
        let (text, nonfinite) = sanitize_non_finite(&text);
        if nonfinite > 0 {
            warnings.push(KtWarning::NonFinite(nonfinite));
        }
        let stripped = text.trim();
        if stripped.is_empty() {
            return Err(KtError::Parse("empty file".into()));
        }
        let doc: Json = if is_closed(stripped) {
            serde_json::from_str(stripped).map_err(|e| KtError::Parse(e.to_string()))?
        } else {
            warnings.push(KtWarning::WasOpen);
            match serde_json::from_str(&close_text(stripped)) {
                Ok(v) => v,
                Err(first) => {
                    // Entries are one per line: drop a torn last line and retry once.
                    let cut = stripped
                        .rfind('\n')
                        .ok_or_else(|| KtError::Parse(first.to_string()))?;
                    warnings.push(KtWarning::TornEntry(stripped.len() - cut - 1));
                    serde_json::from_str(&close_text(&stripped[..cut]))
                        .map_err(|_| KtError::Parse(first.to_string()))?
                }
            }
        };
        let Json::Object(mut map) = doc else {
            return Err(KtError::Parse("top level is not an object".into()));
        };
        let take_str = |map: &mut Map<String, Json>, k: &'static str| -> Result<String, KtError> {
            match map.shift_remove(k) {
                Some(Json::String(s)) => Ok(s),
                _ => Err(KtError::Field(k)),
            }
        };
        let schema_version = match map.shift_remove("schema_version") {
            Some(Json::String(s)) => Some(s),
            None => None,
            Some(_) => return Err(KtError::Field("schema_version")),
        };
        let device_name = take_str(&mut map, "device_name")?;
        let kernel_name = take_str(&mut map, "kernel_name")?;
        let problem_size = map.shift_remove("problem_size");
        let tune_params_keys = match map.shift_remove("tune_params_keys") {
            Some(Json::Array(a)) => a
                .into_iter()
                .map(|v| match v {
                    Json::String(s) => Ok(s),
                    _ => Err(KtError::Field("tune_params_keys")),
                })
                .collect::<Result<Vec<_>, _>>()?,
            _ => return Err(KtError::Field("tune_params_keys")),
        };
        let tune_params = match map.shift_remove("tune_params") {
            Some(Json::Object(m)) => m,
            _ => return Err(KtError::Field("tune_params")),
        };
        let objective = match map.shift_remove("objective") {
            Some(Json::String(s)) => Some(s),
            None => None,
            Some(_) => return Err(KtError::Field("objective")),
        };
        let cache = match map.shift_remove("cache") {
            Some(Json::Object(m)) => m,
            _ => return Err(KtError::Field("cache")),
        };
        Ok((
            KtCache {
                schema_version,
                device_name,
                kernel_name,
                problem_size,
                tune_params_keys,
                tune_params,
                objective,
                extra: map,
                cache,
            },
            warnings,
        ))
    }

    /// Reads a cache file.
    pub fn read(path: impl AsRef<Path>) -> Result<(KtCache, Vec<KtWarning>), KtError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(io_err(path))?;
        KtCache::parse(&String::from_utf8_lossy(&bytes))
    }

    fn header_map(&self) -> Map<String, Json> {
        let mut m = Map::new();
        if let Some(v) = &self.schema_version {
            m.insert("schema_version".into(), Json::String(v.clone()));
        }
        m.insert("device_name".into(), Json::String(self.device_name.clone()));
        m.insert("kernel_name".into(), Json::String(self.kernel_name.clone()));
        if let Some(p) = &self.problem_size {
            m.insert("problem_size".into(), p.clone());
        }
        m.insert(
            "tune_params_keys".into(),
            Json::Array(
                self.tune_params_keys
                    .iter()
                    .cloned()
                    .map(Json::String)
                    .collect(),
            ),
        );
        m.insert("tune_params".into(), Json::Object(self.tune_params.clone()));
        if let Some(o) = &self.objective {
            m.insert("objective".into(), Json::String(o.clone()));
        }
        for (k, v) in &self.extra {
            m.insert(k.clone(), v.clone());
        }
        m.insert("cache".into(), Json::Object(Map::new()));
        m
    }

    /// The open header Kernel Tuner writes first (ends with `"cache": {`).
    pub fn open_header(&self) -> String {
        let full = python_json(&self.header_map(), true);
        // json.dumps(...)[:-3]: cut the final "}\n}".
        full[..full.len().saturating_sub(3)].to_string()
    }

    /// One entry line as Kernel Tuner appends it (without the leading newline and trailing
    /// comma).
    pub fn entry_line(key: &str, entry: &Json) -> String {
        format!("{}: {}", python_json(key, false), python_json(entry, false))
    }

    /// The whole file as Kernel Tuner leaves it after a completed, closed run.
    pub fn to_text(&self) -> String {
        let mut s = self.open_header();
        for (k, v) in &self.cache {
            s.push('\n');
            s.push_str(&KtCache::entry_line(k, v));
            s.push(',');
        }
        if s.ends_with(',') {
            s.pop();
        }
        s.push_str("}\n}");
        s
    }

    /// Writes the closed file (via a temporary file and rename, so readers never see half a
    /// file).
    pub fn write(&self, path: impl AsRef<Path>) -> Result<(), KtError> {
        let path = path.as_ref();
        let tmp = path.with_extension(format!("kt-tmp-{}", std::process::id()));
        {
            let mut f = File::create(&tmp).map_err(io_err(&tmp))?;
            f.write_all(self.to_text().as_bytes())
                .map_err(io_err(&tmp))?;
            f.sync_all().map_err(io_err(&tmp))?;
        }
        std::fs::rename(&tmp, path).map_err(io_err(path))
    }

    /// The objective field name (`"time"` unless the header says otherwise).
    pub fn objective_name(&self) -> &str {
        self.objective.as_deref().unwrap_or("time")
    }

    /// Parameter names and value lists; `Err` names a parameter whose values are not scalars.
    pub fn params(&self) -> Result<Vec<(String, Vec<Value>)>, String> {
        self.tune_params_keys
            .iter()
            .map(|k| {
                let arr = self
                    .tune_params
                    .get(k)
                    .and_then(Json::as_array)
                    .ok_or_else(|| format!("no value list for `{k}`"))?;
                let vals = arr
                    .iter()
                    .map(|v| {
                        Value::from_json(v).ok_or_else(|| format!("non-scalar value {v} of `{k}`"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok((k.clone(), vals))
            })
            .collect()
    }

    /// Our records for the entries of this cache that are configurations of `space` (import:
    /// what Kernel Tuner measured answers a later `cargo rocm tune` without running). The
    /// objective is `time` (ms): `times` when present, else `time` as one sample; error
    /// markers become failures. Returns the records and one line per entry left out.
    pub fn to_records(&self, space: &SearchSpace) -> (Vec<CacheRecord>, Vec<String>) {
        let mut records = Vec::new();
        let mut skipped = Vec::new();
        for (key, entry) in &self.cache {
            let Some(entry) = entry.as_object() else {
                skipped.push(format!("entry `{key}` is not an object"));
                continue;
            };
            let mut values = Vec::with_capacity(space.num_params());
            for n in space.names() {
                match entry.get(n).and_then(Value::from_json) {
                    Some(v) => values.push(v),
                    None => break,
                }
            }
            let Some(id) = (values.len() == space.num_params())
                .then(|| space.find_values(&values))
                .flatten()
            else {
                skipped.push(format!(
                    "entry `{key}` is not a configuration of this space"
                ));
                continue;
            };
            let record = if let Some(kind) = entry_failure(entry) {
                CacheRecord::new(
                    space,
                    id,
                    Vec::new(),
                    Some((
                        kind,
                        format!("imported from Kernel Tuner: {}", marker_for(kind)),
                    )),
                    Features::new(),
                )
            } else {
                let times: Vec<f64> = match entry.get("times").and_then(|t| t.as_array()) {
                    Some(a) => a.iter().filter_map(|x| x.as_f64()).collect(),
                    None => entry
                        .get("time")
                        .and_then(|t| t.as_f64())
                        .into_iter()
                        .collect(),
                };
                if times.is_empty() || times.iter().any(|t| !t.is_finite() || *t <= 0.0) {
                    skipped.push(format!("entry `{key}` has no usable time"));
                    continue;
                }
                CacheRecord::new(space, id, times, None, Features::new())
            };
            records.push(record);
        }
        (records, skipped)
    }

    /// Builds a cache from our records (several records of a configuration are pooled, see
    /// [`aggregate`]). Timing overheads we do not track are written as 0.
    pub fn from_records(
        space: &SearchSpace,
        device_name: &str,
        kernel_name: &str,
        problem_size: Option<Json>,
        records: &[CacheRecord],
    ) -> KtCache {
        let tune_params = space
            .names()
            .iter()
            .enumerate()
            .map(|(p, n)| {
                let vals = space.values(p).iter().map(Value::to_json).collect();
                (n.clone(), Json::Array(vals))
            })
            .collect();
        let mut order: Vec<&str> = Vec::new();
        let mut groups: std::collections::HashMap<&str, Vec<&CacheRecord>> = Default::default();
        for r in records {
            let e = groups.entry(r.key.as_str()).or_default();
            if e.is_empty() {
                order.push(&r.key);
            }
            e.push(r);
        }
        let mut cache = Map::new();
        for key in order {
            let recs = &groups[key];
            let Some(agg) = aggregate(recs.iter().copied()) else {
                continue;
            };
            let last = recs[recs.len() - 1];
            let mut e = last.params.clone();
            match agg {
                Aggregate::Ok { times, features } => {
                    e.insert("time".into(), num(mean(&times)));
                    e.insert(
                        "times".into(),
                        Json::Array(times.iter().map(|t| num(*t)).collect()),
                    );
                    for (k, v) in features {
                        e.insert(k, num(v));
                    }
                }
                Aggregate::Failed { kind, .. } => {
                    e.insert("time".into(), Json::String(marker_for(kind).into()));
                }
            }
            for k in [
                "compile_time",
                "verification_time",
                "benchmark_time",
                "strategy_time",
                "framework_time",
            ] {
                e.insert(k.into(), Json::from(0));
            }
            e.insert(
                "timestamp".into(),
                Json::String(python_utc_timestamp(last.unix_time)),
            );
            cache.insert(key.to_string(), Json::Object(e));
        }
        KtCache {
            schema_version: None,
            device_name: device_name.to_string(),
            kernel_name: kernel_name.to_string(),
            problem_size,
            tune_params_keys: space.names().to_vec(),
            tune_params,
            objective: Some("time".into()),
            extra: Map::new(),
            cache,
        }
    }
}

fn num(x: f64) -> Json {
    serde_json::Number::from_f64(x).map_or(Json::Null, Json::Number)
}

/// The failure class of an entry, if any field holds an error marker.
pub fn entry_failure(entry: &Map<String, Json>) -> Option<FailureKind> {
    entry.values().find_map(|v| match v.as_str()? {
        "CompilationFailedConfig" => Some(FailureKind::Compile),
        "RuntimeFailedConfig" => Some(FailureKind::Launch),
        "InvalidConfig" => Some(FailureKind::Invalid),
        "ErrorConfig" => Some(FailureKind::Other),
        _ => None,
    })
}

/// The Kernel Tuner marker for a failure class (Kernel Tuner has no "wrong result" marker; a
/// verification failure is closest to a runtime failure).
pub fn marker_for(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Compile => "CompilationFailedConfig",
        FailureKind::Launch | FailureKind::WrongResult => "RuntimeFailedConfig",
        FailureKind::Invalid => "InvalidConfig",
        FailureKind::BadMeasurement | FailureKind::Other => "ErrorConfig",
    }
}

/// `str(datetime.fromtimestamp(t, timezone.utc))`, e.g. `2022-12-23 12:11:26.411558+00:00`
/// (Python omits the fraction when it is zero).
pub fn python_utc_timestamp(unix: f64) -> String {
    let unix = if unix.is_finite() { unix } else { 0.0 };
    let time =
        chrono::DateTime::from_timestamp_micros((unix * 1e6).round() as i64).unwrap_or_default();
    let us = time.timestamp_subsec_micros();
    let frac = if us == 0 {
        String::new()
    } else {
        format!(".{us:06}")
    };
    format!("{}{frac}+00:00", time.format("%Y-%m-%d %H:%M:%S"))
}

/// Appends entries to a Kernel Tuner cache file the way Kernel Tuner does, so its tools
/// (dashboard, `simulation_mode`) can read our runs while they are going on.
#[derive(Debug)]
pub struct KtAppender {
    path: PathBuf,
    file: File,
}

impl KtAppender {
    /// Creates a new file with `header`'s header (its `cache` is ignored).
    pub fn create(path: impl AsRef<Path>, header: &KtCache) -> Result<KtAppender, KtError> {
        let path = path.as_ref().to_path_buf();
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(io_err(&path))?;
        file.write_all(header.open_header().as_bytes())
            .map_err(io_err(&path))?;
        file.sync_data().map_err(io_err(&path))?;
        Ok(KtAppender { path, file })
    }

    /// Opens an existing file for appending; a closed file is reopened (its `}\n}` removed).
    pub fn reopen(path: impl AsRef<Path>) -> Result<KtAppender, KtError> {
        let path = path.as_ref().to_path_buf();
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io_err(&path))?;
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(io_err(&path))?;
        let trimmed = text.trim_end();
        if is_closed(trimmed) {
            let body = &trimmed[..trimmed.len() - 3];
            file.set_len(body.len() as u64).map_err(io_err(&path))?;
            file.seek(SeekFrom::End(0)).map_err(io_err(&path))?;
            // An entry-less file ends in `{`: no comma (Kernel Tuner writes one and breaks it).
            if body.ends_with('}') {
                file.write_all(b",").map_err(io_err(&path))?;
            }
        } else {
            file.seek(SeekFrom::End(0)).map_err(io_err(&path))?;
        }
        Ok(KtAppender { path, file })
    }

    /// Appends one entry (`"\n" + "key": {...} + ","`), fsync'd.
    pub fn append(&mut self, key: &str, entry: &Json) -> Result<(), KtError> {
        let line = format!("\n{},", KtCache::entry_line(key, entry));
        self.file
            .write_all(line.as_bytes())
            .map_err(io_err(&self.path))?;
        self.file.sync_data().map_err(io_err(&self.path))
    }

    /// Closes the file as `close_cache` does: trailing `,` replaced by `}\n}`.
    pub fn close(mut self) -> Result<(), KtError> {
        let len = self
            .file
            .seek(SeekFrom::End(0))
            .map_err(io_err(&self.path))?;
        let mut last = [0u8; 1];
        if len > 0 {
            self.file
                .seek(SeekFrom::Start(len - 1))
                .map_err(io_err(&self.path))?;
            self.file
                .read_exact(&mut last)
                .map_err(io_err(&self.path))?;
        }
        if last[0] == b',' {
            self.file.set_len(len - 1).map_err(io_err(&self.path))?;
        }
        self.file
            .seek(SeekFrom::End(0))
            .map_err(io_err(&self.path))?;
        self.file.write_all(b"}\n}").map_err(io_err(&self.path))?;
        self.file.sync_all().map_err(io_err(&self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_json_formats() {
        let v: Json =
            serde_json::from_str(r#"{"a": [1, 2.0, 1e-05], "b": {}, "c": [], "d": "é"}"#).unwrap();
        assert_eq!(
            python_json(&v, false),
            r#"{"a": [1, 2.0, 1e-05], "b": {}, "c": [], "d": "\u00e9"}"#
        );
        assert_eq!(
            python_json(&v, true),
            "{\n\"a\": [\n1,\n2.0,\n1e-05\n],\n\"b\": {},\n\"c\": [],\n\"d\": \"\\u00e9\"\n}"
        );
    }

    #[test]
    fn timestamps_match_python() {
        assert_eq!(
            python_utc_timestamp(1671797486.411558),
            "2022-12-23 12:11:26.411558+00:00"
        );
        assert_eq!(python_utc_timestamp(0.0), "1970-01-01 00:00:00+00:00");
        assert_eq!(
            python_utc_timestamp(951782400.5),
            "2000-02-29 00:00:00.500000+00:00"
        );
    }

    #[test]
    fn non_finite_tokens_become_null() {
        let (s, n) = sanitize_non_finite(r#"{"a": NaN, "b": "NaN", "c": [-Infinity, Infinity]}"#);
        assert_eq!(n, 3);
        assert_eq!(s, r#"{"a": null, "b": "NaN", "c": [null, null]}"#);
    }

    #[test]
    fn error_markers() {
        let e: Map<String, Json> =
            serde_json::from_str(r#"{"x": 1, "time": "CompilationFailedConfig"}"#).unwrap();
        assert_eq!(entry_failure(&e), Some(FailureKind::Compile));
        let e: Map<String, Json> =
            serde_json::from_str(r#"{"x": 1, "__error__": "RuntimeFailedConfig"}"#).unwrap();
        assert_eq!(entry_failure(&e), Some(FailureKind::Launch));
        let e: Map<String, Json> = serde_json::from_str(r#"{"x": 1, "time": 0.5}"#).unwrap();
        assert_eq!(entry_failure(&e), None);
    }
}
