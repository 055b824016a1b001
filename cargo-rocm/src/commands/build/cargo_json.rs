//! Reading `cargo build --message-format json-render-diagnostics` from its stdout: which build
//! scripts ran (or were fresh) and where their `OUT_DIR` is, and which executables were built.

use std::io::BufRead;
use std::path::PathBuf;

use cargo_metadata::Message;

/// A build script's run, as cargo reports it (`reason: build-script-executed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildScriptRun {
    /// Cargo's package id (`path+file:///…/foo#0.1.0` or `foo 0.1.0 (path+file:///…)`).
    pub package_id: String,
    pub out_dir: PathBuf,
}

/// An executable cargo built (`reason: compiler-artifact` with an `executable`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Executable {
    /// The target's name (`kernels` for `benches/kernels.rs`).
    pub target: String,
    /// The target's kinds (`bin`, `test`, `bench`, `example`).
    pub kinds: Vec<String>,
    pub path: PathBuf,
}

/// What a finished `cargo build` reported.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CargoReport {
    pub build_scripts: Vec<BuildScriptRun>,
    pub executables: Vec<Executable>,
    /// `build-finished.success`; `None` when cargo stopped before saying.
    pub success: Option<bool>,
}

/// Read cargo's JSON lines (through [`cargo_metadata::Message`]). Lines that are not cargo's
/// messages (a build script printing to stdout under `-vv`) are passed to `other`.
pub fn read_messages(
    reader: impl BufRead,
    mut other: impl FnMut(&str),
) -> std::io::Result<CargoReport> {
    let mut report = CargoReport::default();
    for message in Message::parse_stream(reader) {
        match message? {
            Message::TextLine(line) => other(&line),
            Message::BuildScriptExecuted(script) => report.build_scripts.push(BuildScriptRun {
                package_id: script.package_id.repr,
                out_dir: script.out_dir.into_std_path_buf(),
            }),
            Message::CompilerArtifact(artifact) => {
                if let Some(path) = artifact.executable {
                    report.executables.push(Executable {
                        target: artifact.target.name,
                        kinds: artifact.target.kind.iter().map(|k| k.to_string()).collect(),
                        path: path.into_std_path_buf(),
                    });
                }
            }
            Message::BuildFinished(finished) => report.success = Some(finished.success),
            _ => {}
        }
    }
    Ok(report)
}

/// The package name in a cargo package id, both the current spec form
/// (`path+file:///x/foo#bar@0.1.0`, `registry+…#foo@1.0`, `path+file:///x/foo#0.1.0`) and the
/// older `foo 0.1.0 (path+file:///x/foo)`.
pub fn package_name(id: &str) -> String {
    if let Some((url, fragment)) = id.split_once('#') {
        if let Some((name, _version)) = fragment.split_once('@') {
            return name.to_owned();
        }
        // No name in the fragment: it is the last path segment of the URL.
        return url
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(url)
            .to_owned();
    }
    id.split_whitespace().next().unwrap_or(id).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_scripts_and_result_are_collected() {
        // As cargo 1.9x writes them (one line each).
        let stdout = concat!(
            r#"{"reason":"compiler-artifact","package_id":"path+file:///w/a#0.1.0","manifest_path":"/w/a/Cargo.toml","target":{"kind":["custom-build"],"crate_types":["bin"],"name":"build-script-build","src_path":"/w/a/build.rs","edition":"2021","doc":false,"doctest":false,"test":false},"profile":{"opt_level":"0","debuginfo":0,"debug_assertions":true,"overflow_checks":true,"test":false},"features":[],"filenames":["/t/debug/build/a-2/build-script-build"],"executable":null,"fresh":true}"#,
            "\n",
            r#"{"reason":"build-script-executed","package_id":"path+file:///w/a#0.1.0","linked_libs":[],"linked_paths":[],"cfgs":[],"env":[],"out_dir":"/t/debug/build/a-1/out"}"#,
            "\nbuild script chatter\n",
            r#"{"reason":"compiler-artifact","package_id":"path+file:///w/a#0.1.0","manifest_path":"/w/a/Cargo.toml","target":{"kind":["bench"],"crate_types":["bin"],"name":"kernels","src_path":"/w/a/benches/kernels.rs","edition":"2021","doc":false,"doctest":false,"test":false},"profile":{"opt_level":"3","debuginfo":0,"debug_assertions":false,"overflow_checks":false,"test":true},"features":[],"filenames":["/t/release/deps/kernels-1"],"executable":"/t/release/deps/kernels-1","fresh":false}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
            "\n"
        );
        let mut chatter = Vec::new();
        let r = read_messages(stdout.as_bytes(), |l| chatter.push(l.to_owned())).unwrap();
        assert_eq!(r.success, Some(true));
        assert_eq!(r.build_scripts.len(), 1);
        assert_eq!(
            r.build_scripts[0].out_dir,
            PathBuf::from("/t/debug/build/a-1/out")
        );
        assert_eq!(chatter, ["build script chatter"]);
        assert_eq!(
            r.executables,
            [Executable {
                target: "kernels".into(),
                kinds: vec!["bench".into()],
                path: "/t/release/deps/kernels-1".into()
            }]
        );
    }

    #[test]
    fn package_names_from_every_id_form() {
        assert_eq!(package_name("path+file:///w/kernels#0.1.0"), "kernels");
        assert_eq!(
            package_name("path+file:///w/dir#my-kernels@0.1.0"),
            "my-kernels"
        );
        assert_eq!(
            package_name("registry+https://github.com/rust-lang/crates.io-index#serde@1.0.0"),
            "serde"
        );
        assert_eq!(package_name("demo 0.1.0 (path+file:///w/demo)"), "demo");
    }
}
