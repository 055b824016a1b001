//! The helper of `scripts/public-suite.sh`: kernels of public HIP collections, their device code
//! taken verbatim from checkouts outside this repository, checked by `cargo rocm test`.
//!
//! - `public-suite prepare CRATE NAME=CHECKOUT...`: turns CRATE, a crate `cargo rocm new` wrote,
//!   into the kernel crate of the programs of each collection NAME read from CHECKOUT (see
//!   *Collections*): each program's device code (host code removed by the rule in `strip.rs`,
//!   the rest verified byte for byte against the original) under `kernels/NAME/PROGRAM/`, the
//!   template instances its host code launched in `*.instances.hip`, one kernel library and one
//!   harness per program (`NAME__PROGRAM`, `-` of NAME written `_`: kernel names repeat across
//!   programs and program names across collections), and the collection's checks as
//!   `checks::NAME`. A program that does not build for a backend does not stop the build: its
//!   library is built for the backends that take it, and its harness reports the others as
//!   unsupported (with the build's first error line) in the events file;
//! - `public-suite collections`: the collections that have a `programs.txt`, one a line;
//! - `public-suite strip FILE`: prints the device code of one file (what `prepare` writes), and
//!   on stderr what was removed and instantiated;
//! - `public-suite table [LABEL=]EVENTS...`: the trials of `cargo rocm test`'s (or the
//!   harnesses') events files as a Markdown table, collection x program x kernel x place, each
//!   cell pass / false report / unsupported / wrong (`table.rs`); a LABEL names the file's
//!   places (`nvcc=events.jsonl`: `nvidia/sm_90 nvcc`). Exits 1 when a trial failed or none ran.
//!
//! # Collections
//!
//! `collections/NAME/` next to this crate, for each collection NAME (lower case, `-` allowed):
//!
//! - `programs.txt`: one program a line, `PROGRAM<TAB>PATH[,PATH...][<TAB>ARG...]`; blank lines
//!   and lines starting with `#` are ignored. PROGRAM is a Rust identifier, unique in the
//!   collection: the harness's name and the function of `checks.rs` that registers its checks.
//!   Each PATH is a file of the checkout, relative to its root; every file's device code is
//!   taken, a header (`.h`, `.hpp`, `.cuh`, `.inc`) only where another listed file includes it
//!   (`#include "..."`, which is then kept), any other file compiled (as `.hip`). ARGs, space
//!   separated, are extra arguments of the check function: `float-array:IDENT` is the float
//!   array initialiser `IDENT = {...}` of the first file (host data the program uploads, such as
//!   a filter), passed as `[f32; N]`.
//! - `checks.rs`: `pub fn PROGRAM(s: &mut rocm_test::Suite, ARGS...)` for each program,
//!   registering a check for each of its kernels (a Rust reference, or `.differential()` against
//!   snapshots in `snapshots/NAME/`).
//! - `source` (for the script): `url URL`, `commit SHA` and `marker PATH` (a path every checkout
//!   has) lines; `sparse PATTERN` lines ask for a sparse checkout of those paths only.

mod strip;
mod table;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// This repository (the helper lives in `scripts/public-suite`).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `scripts/public-suite/collections`.
fn collections_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("collections")
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["prepare", dest, ref sources @ ..] if !sources.is_empty() => {
            prepare(Path::new(dest), sources)
        }
        ["collections"] => collections().map(|names| {
            for n in names {
                println!("{n}");
            }
        }),
        ["strip", file] => strip_one(Path::new(file)),
        ["table", ref files @ ..] if !files.is_empty() => {
            return match table::print(files) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("public-suite: {e}");
                    ExitCode::from(2)
                }
            }
        }
        _ => Err("usage: public-suite prepare CRATE NAME=CHECKOUT... | collections | strip FILE \
             | table [LABEL=]EVENTS.jsonl..."
            .to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("public-suite: {e}");
            ExitCode::from(2)
        }
    }
}

/// A source file as text: UTF-8, or else Latin-1 (some collections have `©` in that encoding),
/// with whether it was Latin-1 so that [`write_like`] writes it back in the same bytes.
fn read_source(path: &Path) -> Result<(String, bool), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => (text, false),
        Err(e) => (e.into_bytes().iter().map(|&b| b as char).collect(), true),
    })
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    write_bytes(path, text.as_bytes())
}

/// Writes device code in its original's encoding (the removals only add ASCII).
fn write_like(path: &Path, text: &str, latin1: bool) -> Result<(), String> {
    if latin1 {
        let bytes: Vec<u8> = text.chars().map(|c| c as u32 as u8).collect();
        write_bytes(path, &bytes)
    } else {
        write(path, text)
    }
}

fn strip_one(file: &Path) -> Result<(), String> {
    let (source, _) = read_source(file)?;
    let code = strip::device_code(&source).map_err(|e| format!("{}: {e}", file.display()))?;
    strip::verify(&source, &code.text).map_err(|e| format!("{}: {e}", file.display()))?;
    print!("{}", code.text);
    report(&file.display().to_string(), &code);
    Ok(())
}

/// What was removed and instantiated, on stderr.
fn report(what: &str, code: &strip::DeviceCode) {
    for r in &code.removed {
        eprintln!(
            "{what}: removed {} `{}` (lines {}-{})",
            r.what.label(),
            r.name,
            r.lines.0,
            r.lines.1
        );
    }
    for i in &code.instances {
        eprintln!(
            "{what}: instantiates `{}` (launched at line {} as `{}`)",
            i.name, i.line, i.launched_as
        );
    }
}

/// The collections that have a `programs.txt`, sorted.
fn collections() -> Result<Vec<String>, String> {
    let dir = collections_dir();
    let entries =
        std::fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("programs.txt").is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    Ok(names)
}

/// A line of a collection's `programs.txt`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Program {
    name: String,
    paths: Vec<String>,
    args: Vec<Arg>,
}

/// An extra argument of a program's check function.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Arg {
    /// `float-array:IDENT`: a float array initialiser of the first file.
    FloatArray(String),
}

/// Parse a `programs.txt` (format: the module docs).
fn parse_programs(text: &str) -> Result<Vec<Program>, String> {
    let mut programs: Vec<Program> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let at = |e: String| format!("line {}: {e}", n + 1);
        let mut fields = line.split('\t').filter(|f| !f.is_empty());
        let name = fields.next().unwrap_or("").trim();
        let is_ident = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_ident {
            return Err(at(format!(
                "`{name}` is not a program name (a Rust identifier, then a tab)"
            )));
        }
        let paths: Vec<String> = fields
            .next()
            .ok_or_else(|| at(format!("`{name}` has no PATH (a tab, then PATH[,PATH...])")))?
            .split(',')
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty())
            .collect();
        if let Some(p) = paths
            .iter()
            .find(|p| p.starts_with('/') || p.split('/').any(|c| c == ".."))
        {
            return Err(at(format!("`{p}` is not a path inside the checkout")));
        }
        let args = fields
            .flat_map(|f| f.split_whitespace())
            .map(|a| match a.split_once(':') {
                Some(("float-array", ident)) if !ident.is_empty() => {
                    Ok(Arg::FloatArray(ident.to_owned()))
                }
                _ => Err(at(format!("`{a}` is not an argument (`float-array:IDENT`)"))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if programs.iter().any(|p| p.name == name) {
            return Err(at(format!("program `{name}` is listed twice")));
        }
        programs.push(Program {
            name: name.to_owned(),
            paths,
            args,
        });
    }
    Ok(programs)
}

/// Whether a file is only included, never compiled on its own.
fn is_header(path: &str) -> bool {
    [".h", ".hpp", ".cuh", ".inc", ".hxx"]
        .iter()
        .any(|e| path.ends_with(e))
}

/// `a/b/../c.h` → `a/c.h` (no file system access).
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    parts.join("/")
}

/// The file a quoted include of `from` names, relative to the checkout.
fn resolve(from: &str, included: &str) -> String {
    let dir = from.rsplit_once('/').map_or("", |(d, _)| d);
    normalize(&format!("{dir}/{included}"))
}

/// The name a collection's items take in Rust: `hip-examples` → `hip_examples`.
fn ident(collection: &str) -> String {
    collection.replace('-', "_")
}

/// The `name = ...` dependency line `cargo rocm new` wrote into the crate's manifest.
fn dependency_line<'a>(manifest: &'a str, name: &str) -> Result<&'a str, String> {
    manifest
        .lines()
        .find(|l| {
            l.strip_prefix(name)
                .is_some_and(|r| r.trim_start().starts_with('='))
        })
        .ok_or_else(|| format!("the crate's Cargo.toml has no `{name}` dependency: was it made by `cargo rocm new`?"))
}

/// The numbers of a float array's initialiser in a source: `const ... NAME = {1.0f, -2.0f};`.
fn float_array(source: &str, name: &str) -> Result<Vec<f32>, String> {
    let start = source
        .find(&format!("{name} ="))
        .or_else(|| source.find(&format!("{name}[] =")))
        .ok_or_else(|| format!("no `{name} =` in the source"))?;
    let open = start + source[start..].find('{').ok_or("no `{` after it")?;
    let close = open + source[open..].find('}').ok_or("no `}` after it")?;
    source[open + 1..close]
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(|v| {
            let v = v.trim_end_matches(['f', 'F']);
            v.parse::<f32>()
                .map_err(|e| format!("`{v}` in `{name}` is not a number: {e}"))
        })
        .collect()
}

/// What `prepare` writes for one program into the crate's build script, library and harness.
struct Generated {
    /// The library (and harness) name: `hip_examples__vector_add`.
    library: String,
    /// The files the build compiles, relative to the crate.
    compiled: Vec<String>,
    /// Items of `src/lib.rs` (constants read from the sources).
    items: String,
    /// The extra arguments of the check call (`, crate::X`).
    call_args: String,
}

/// Take one program's device code from `checkout` into `dest/kernels/COLLECTION/PROGRAM/`.
fn prepare_program(
    checkout: &Path,
    dest: &Path,
    collection: &str,
    p: &Program,
) -> Result<Generated, String> {
    let library = format!("{}__{}", ident(collection), p.name);
    let kernels = format!("kernels/{collection}/{}", p.name);
    let mut compiled = Vec::new();
    let mut items = String::new();
    let mut call_args = String::new();
    for path in &p.paths {
        let file = checkout.join(path);
        let (source, latin1) = read_source(&file)?;
        let keep = |included: &str| p.paths.contains(&resolve(path, included));
        let code = strip::device_code_keeping(&source, keep)
            .map_err(|err| format!("{}: {err}", file.display()))?;
        strip::verify(&source, &code.text).map_err(|err| {
            format!(
                "{}: the device code is not the original's: {err}",
                file.display()
            )
        })?;
        report(&format!("{collection}/{}: {path}", p.name), &code);
        let written = if is_header(path) {
            path.clone()
        } else {
            // Compiled as HIP whatever the original's extension (`.cpp`, `.cu`).
            match path.rsplit_once('.') {
                Some((stem, ext)) if !ext.contains('/') => format!("{stem}.hip"),
                _ => format!("{path}.hip"),
            }
        };
        write_like(&dest.join(&kernels).join(&written), &code.text, latin1)?;
        if is_header(path) {
            continue;
        }
        let file_name = written.rsplit('/').next().unwrap_or(&written);
        match code.instances_file(file_name) {
            Some(text) => {
                let f = format!("{}.instances.hip", written.trim_end_matches(".hip"));
                write(&dest.join(&kernels).join(&f), &text)?;
                compiled.push(format!("{kernels}/{f}"));
            }
            None => compiled.push(format!("{kernels}/{written}")),
        }
    }
    if compiled.is_empty() {
        return Err(format!(
            "{collection}/{}: no file to compile (only headers are listed)",
            p.name
        ));
    }
    for arg in &p.args {
        match arg {
            Arg::FloatArray(name) => {
                let first = checkout.join(&p.paths[0]);
                let (source, _) = read_source(&first)?;
                let values = float_array(&source, name)
                    .map_err(|err| format!("{}: {err}", first.display()))?;
                let constant = format!("{}_{}", library, name).to_uppercase();
                let values: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
                items.push_str(&format!(
                    "/// `{name}` of {collection}'s {}: host data the program uploads.\n\
                     pub const {constant}: [f32; {}] = [{}];\n\n",
                    p.paths[0],
                    values.len(),
                    values.join(", ")
                ));
                call_args.push_str(&format!(", public_suite_check::{constant}"));
            }
        }
    }
    Ok(Generated {
        library,
        compiled,
        items,
        call_args,
    })
}

/// The generated crate's build script: each library built on its own, a failure recorded
/// instead of failing the build (module docs).
const BUILD_RS: &str = r#"//! Written by scripts/public-suite.sh: one kernel library per program. A program that does not
//! build for every backend is built for those that take it; the others are reported by its
//! harness as unsupported (the first line of the build's error).

use rocm_kernels_build::{Backend, Build};

/// The backends asked for (`ROCM_BACKENDS`), cpu when none is.
fn backends() -> Vec<Backend> {
    let asked = std::env::var("ROCM_BACKENDS").unwrap_or_default();
    let parsed: Vec<Backend> = asked.split(',').filter_map(|b| b.trim().parse().ok()).collect();
    if parsed.is_empty() {
        vec![Backend::Cpu]
    } else {
        parsed
    }
}

/// The first line of a build error that says what went wrong.
fn first_error(e: &str) -> String {
    let lines: Vec<&str> = e.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines
        .iter()
        .find(|l| l.contains("error"))
        .or(lines.first())
        .map_or_else(String::new, |l| l.chars().take(300).collect())
}

fn try_build(name: &str, files: &[&str], backends: &[Backend]) -> Result<(), String> {
    let result = std::panic::catch_unwind(|| {
        Build::new()
            .files(files)
            .backends(backends.iter().copied())
            .try_compile(name)
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
    result.unwrap_or_else(|_| Err("the build panicked".to_owned()))
}

fn program(name: &str, files: &[&str]) {
    println!("cargo::rustc-check-cfg=cfg(unbuilt_{name})");
    let all = backends();
    if try_build(name, files, &all).is_ok() {
        return;
    }
    let mut ok = Vec::new();
    let mut unsupported = Vec::new();
    for b in &all {
        match try_build(name, files, std::slice::from_ref(b)) {
            Ok(()) => ok.push(*b),
            Err(e) => unsupported.push(format!("{b}: {}", first_error(&e))),
        }
    }
    if ok.is_empty() || try_build(name, files, &ok).is_err() {
        println!("cargo::rustc-cfg=unbuilt_{name}");
    }
    let reason = unsupported.join("\u{1f}").replace(['\n', '\r'], " ");
    println!("cargo::rustc-env=PUBLIC_SUITE_UNSUPPORTED_{}={reason}", name.to_uppercase());
    println!("cargo::warning={name} is unsupported on {}", unsupported.join("; "));
}

fn main() {
"#;

/// The generated library's runner, after the per-program items.
const LIB_RS_RUN: &str = r#"
/// A program of the suite: its library (`None` when no backend built it) and the backends that
/// did not build it, `backend: first error line` separated by U+001F.
pub struct Program {
    /// The kernel library, for the backends that built it.
    pub library: Option<&'static rocm_kernels::KernelLibrary>,
    /// The backends that did not build it, with the first line of their error.
    pub unsupported: Option<&'static str>,
    /// Where its collection's snapshots live (`scripts/public-suite/snapshots/NAME`), unless
    /// `PUBLIC_SUITE_SNAPSHOTS` names another folder (then its `NAME` subfolder).
    pub snapshots: &'static str,
    /// Its collection's name.
    pub collection: &'static str,
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The harness's name, as rocm-test writes it in events (the executable's, less cargo's hash).
fn binary_name() -> String {
    let exe = std::env::args().next().unwrap_or_default();
    let stem = std::path::Path::new(&exe)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("harness")
        .to_owned();
    match stem.rsplit_once('-') {
        Some((base, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            base.to_owned()
        }
        _ => stem,
    }
}

/// Report the backends that did not build the program (on stderr, and as ignored trials with
/// an `unsupported:` message in `ROCM_TEST_EVENTS`, for the table), then run its checks on the
/// others.
pub fn run(
    program: &Program,
    register: impl FnOnce(&mut rocm_test::Suite),
) -> std::process::ExitCode {
    let listing = std::env::args().any(|a| a == "--list");
    if let (Some(reasons), false) = (program.unsupported, listing) {
        let binary = binary_name();
        let mut lines = String::new();
        for r in reasons.split('\u{1f}').filter(|r| !r.is_empty()) {
            let (backend, why) = r.split_once(": ").unwrap_or((r, ""));
            eprintln!("{binary}: unsupported on {backend}: {why}");
            lines.push_str(&format!(
                "{{\"type\":\"trial\",\"name\":{},\"check\":\"*\",\"kernel\":\"*\",\
                 \"backend\":{},\"target\":null,\"outcome\":\"ignored\",\"message\":{},\
                 \"duration_s\":0.0,\"cases\":null,\"seed\":null,\"binary\":{}}}\n",
                json_string(&format!("{binary}::unsupported/{backend}")),
                json_string(backend),
                json_string(&format!("unsupported: {why}")),
                json_string(&binary)
            ));
        }
        if let Ok(path) = std::env::var("ROCM_TEST_EVENTS") {
            use std::io::Write as _;
            let file = std::fs::OpenOptions::new().create(true).append(true).open(&path);
            if let Err(e) = file.and_then(|mut f| f.write_all(lines.as_bytes())) {
                eprintln!("cannot append to the events file {path}: {e}");
            }
        }
    }
    let Some(library) = program.library else {
        return std::process::ExitCode::SUCCESS;
    };
    let snapshots = match std::env::var_os("PUBLIC_SUITE_SNAPSHOTS") {
        Some(dir) => std::path::Path::new(&dir).join(program.collection),
        None => std::path::PathBuf::from(program.snapshots),
    };
    rocm_test::main(library, |s| {
        snapshots_at(s, &snapshots);
        register(s)
    })
}
"#;

fn prepare(dest: &Path, sources: &[&str]) -> Result<(), String> {
    let repo = repo()
        .canonicalize()
        .map_err(|e| format!("cannot find this repository: {e}"))?;
    let manifest_path = dest.join("Cargo.toml");
    let old = read(&manifest_path)?;
    let deps = ["rocm-kernels", "rocm-test", "rocm-kernels-build"]
        .iter()
        .map(|d| dependency_line(&old, d))
        .collect::<Result<Vec<_>, _>>()?;
    // What `cargo rocm new` wrote that this crate replaces.
    let _ = std::fs::remove_dir_all(dest.join("kernels"));
    for old in [
        "tests/kernels.rs",
        "benches/kernels.rs",
        "src/lib.rs",
    ] {
        let _ = std::fs::remove_file(dest.join(old));
    }
    let _ = std::fs::remove_dir(dest.join("benches"));

    let mut manifest = format!(
        "# Written by scripts/public-suite.sh (from the crate `cargo rocm new` made): the device\n\
         # code of public HIP collections' programs and their checks, one harness per program.\n\
         [package]\nname = \"public-suite-check\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
         publish = false\n\n[workspace]\n\n\
         [package.metadata.rocm]\ntargets = [\"gfx90a\"]\nnvidia-targets = [\"sm_90\"]\n\n\
         [dependencies]\n{}\n{}\n\n[build-dependencies]\n{}\n",
        deps[0], deps[1], deps[2]
    );
    let mut build = String::from(BUILD_RS);
    let mut lib = String::from(
        "//! Written by scripts/public-suite.sh: the kernel library of each program of the \
         collections,\n//! and their checks (scripts/public-suite/collections/NAME/checks.rs).\n\n\
         #![allow(non_snake_case, clippy::all)]\n\npub mod checks;\n\n",
    );
    let mut checks_mod =
        String::from("//! The checks of each collection (its `checks.rs`, copied).\n\n");
    let mut any_differential = false;
    for source in sources {
        let (collection, checkout) = source
            .split_once('=')
            .ok_or_else(|| format!("`{source}` is not NAME=CHECKOUT"))?;
        let dir = collections_dir().join(collection);
        let programs_file = dir.join("programs.txt");
        let programs = parse_programs(&read(&programs_file)?)
            .map_err(|e| format!("{}: {e}", programs_file.display()))?;
        let checks = read(&dir.join("checks.rs"))?;
        any_differential |= checks.contains(".differential()");
        let id = ident(collection);
        write(&dest.join(format!("src/checks/{id}.rs")), &checks)?;
        checks_mod.push_str(&format!("pub mod {id};\n"));
        let snapshots = repo.join("scripts/public-suite/snapshots").join(collection);
        let checkout = Path::new(checkout);
        for p in &programs {
            let g = prepare_program(checkout, dest, collection, p)?;
            let files: Vec<String> = g.compiled.iter().map(|f| format!("{f:?}")).collect();
            build.push_str(&format!(
                "    program({:?}, &[{}]);\n",
                g.library,
                files.join(", ")
            ));
            let upper = g.library.to_uppercase();
            lib.push_str(&format!(
                "/// {collection}'s {name}: {paths}.\npub static {upper}: Program = Program {{\n    \
                 #[cfg(not(unbuilt_{lib}))]\n    \
                 library: Some(rocm_kernels::include_kernels!({lib:?})),\n    \
                 #[cfg(unbuilt_{lib})]\n    library: None,\n    \
                 unsupported: option_env!(\"PUBLIC_SUITE_UNSUPPORTED_{upper}\"),\n    \
                 snapshots: {snap:?},\n    collection: {collection:?},\n}};\n\n{items}",
                name = p.name,
                paths = p.paths.join(", "),
                lib = g.library,
                snap = snapshots.display().to_string(),
                items = g.items,
            ));
            manifest.push_str(&format!(
                "\n[[test]]\nname = \"{}\"\nharness = false\n",
                g.library
            ));
            write(
                &dest.join("tests").join(format!("{}.rs", g.library)),
                &format!(
                    "//! The checks of {collection}'s {name} ({paths}).\n\n\
                     fn main() -> std::process::ExitCode {{\n    \
                     public_suite_check::run(&public_suite_check::{upper}, |s| {{\n        \
                     public_suite_check::checks::{id}::{name}(s{args})\n    }})\n}}\n",
                    name = p.name,
                    paths = p.paths.join(", "),
                    args = g.call_args,
                ),
            )?;
        }
    }
    build.push_str("}\n");
    lib.push_str(LIB_RS_RUN);
    // Snapshots only where a check asks for them (the API is rocm-test's `Suite::snapshots`).
    lib.push_str(if any_differential {
        "\nfn snapshots_at(s: &mut rocm_test::Suite, dir: &std::path::Path) {\n    \
         s.snapshots(dir);\n}\n"
    } else {
        "\nfn snapshots_at(_: &mut rocm_test::Suite, _: &std::path::Path) {}\n"
    });
    write(&manifest_path, &manifest)?;
    write(&dest.join("build.rs"), &build)?;
    write(&dest.join("src/lib.rs"), &lib)?;
    write(&dest.join("src/checks.rs"), &checks_mod)?;
    // The repository's lock file: the same dependency versions, and no resolution needed.
    write(&dest.join("Cargo.lock"), &read(&repo.join("Cargo.lock"))?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_txt_lines() {
        let text = "# a comment\n\nsaxpy\tHIP-Basic/saxpy/main.hip\n\
                    conv\tA/conv.cpp,A/kernels.h\tfloat-array:filter\n";
        let p = parse_programs(text).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].paths, ["HIP-Basic/saxpy/main.hip"]);
        assert_eq!(p[1].paths, ["A/conv.cpp", "A/kernels.h"]);
        assert_eq!(p[1].args, [Arg::FloatArray("filter".into())]);
        for bad in [
            "1x\ta.cpp",
            "x",
            "x\t/abs.cpp",
            "x\t../up.cpp",
            "x\ta.cpp\tint:3",
            "x\ta\nx\tb",
        ] {
            assert!(parse_programs(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn includes_resolve_against_the_including_file() {
        assert_eq!(resolve("src/a-hip/main.cu", "kernels.h"), "src/a-hip/kernels.h");
        assert_eq!(resolve("src/a-hip/main.cu", "../inc/x.h"), "src/inc/x.h");
        assert_eq!(resolve("main.cu", "./k.h"), "k.h");
        assert!(is_header("a/k.cuh") && !is_header("a/k.cu"));
    }

    #[test]
    fn the_float_array_of_a_source() {
        let src = "const float filter[] = {1.0f, -2.5f, 3,};\nint x;";
        assert_eq!(float_array(src, "filter").unwrap(), [1.0, -2.5, 3.0]);
        assert!(float_array(src, "other").is_err());
    }

    #[test]
    fn latin1_sources_round_trip() {
        let dir = std::env::temp_dir().join(format!("public-suite-{}", std::process::id()));
        let file = dir.join("a.cpp");
        write_bytes(&file, b"// \xa9 AMD\n__global__ void k() {}\n").unwrap();
        let (text, latin1) = read_source(&file).unwrap();
        assert!(latin1);
        write_like(&file, &text, latin1).unwrap();
        assert_eq!(
            std::fs::read(&file).unwrap(),
            b"// \xa9 AMD\n__global__ void k() {}\n"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
