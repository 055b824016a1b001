//! The `nvidia` backend's build output: each source as one self-contained text (`cuda-source`),
//! which the nvidia runtime compiles with NVRTC for the device it finds (see
//! `runtime/backend/nvidia/nvrtc.rs`). No CUDA toolkit is needed at build time.
//!
//! NVRTC has no access to the crate's files, so the crate's own headers are inlined here: a
//! `#include "x.h"` (searched beside the including file, then in the include directories) or
//! `#include <x.h>` (include directories only) that resolves to a file is replaced by that file,
//! between `#line` markers so NVRTC's diagnostics name the original files. Includes that do not
//! resolve (`<hip/hip_runtime.h>`, `<cstdint>`) are left for NVRTC. Builder defines become
//! `#define` lines at the top.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::error::BuildError;
use super::source::SourceFile;
use super::{CompileOptions, ObjectOut};
use crate::Backend;

/// Headers nest far less deep than this; the limit stops include cycles without `#pragma once`.
const MAX_DEPTH: usize = 64;

/// Writes `<dir>/<stem>.cu`, the self-contained text of `src`, and describes it as an object.
pub(crate) fn embed_source(
    src: &SourceFile,
    dir: &Path,
    opts: &CompileOptions,
) -> Result<ObjectOut, BuildError> {
    let mut text = String::new();
    for (k, v) in &opts.defines {
        text.push_str(&format!("#define {k} {}\n", v.as_deref().unwrap_or("1")));
    }
    let mut inliner = Inliner {
        includes: &opts.includes,
        once: BTreeSet::new(),
        read: Vec::new(),
    };
    inliner.inline(&src.abs, &mut text, 0)?;
    let out = dir.join(format!("{}.cu", src.output_stem()));
    super::driver::write_if_changed(&out, text.as_bytes())?;
    Ok(ObjectOut {
        backend: Backend::Nvidia,
        source: src.clone(),
        targets: Vec::new(),
        format: "cuda-source",
        manifest_format: None,
        path: out,
        inputs: inliner.read,
        fresh: false,
        warnings: Vec::new(),
        millis: 0,
    })
}

struct Inliner<'a> {
    includes: &'a [PathBuf],
    /// Files with `#pragma once` already inlined.
    once: BTreeSet<PathBuf>,
    /// Every file read, for `rerun-if-changed`.
    read: Vec<PathBuf>,
}

impl Inliner<'_> {
    fn inline(&mut self, file: &Path, out: &mut String, depth: usize) -> Result<(), BuildError> {
        if depth > MAX_DEPTH {
            return Err(BuildError::config(format!(
                "includes nest deeper than {MAX_DEPTH} at `{}` (an include cycle without \
                 `#pragma once` or include guards?)",
                file.display()
            )));
        }
        let text = std::fs::read_to_string(file).map_err(|e| BuildError::SourceUnreadable {
            path: file.to_path_buf(),
            source: e,
        })?;
        if !self.read.iter().any(|p| p == file) {
            self.read.push(file.to_path_buf());
        }
        let quoted = quote(file);
        out.push_str(&format!("#line 1 \"{quoted}\"\n"));
        for (i, line) in text.lines().enumerate() {
            if is_pragma_once(line) {
                self.once.insert(file.to_path_buf());
                out.push('\n');
                continue;
            }
            match include_of(line).and_then(|(name, angled)| self.resolve(file, name, angled)) {
                Some(header) => {
                    if !self.once.contains(&header) {
                        self.inline(&header, out, depth + 1)?;
                    }
                    out.push_str(&format!("#line {} \"{quoted}\"\n", i + 2));
                }
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        Ok(())
    }

    fn resolve(&self, from: &Path, name: &str, angled: bool) -> Option<PathBuf> {
        let beside = (!angled)
            .then(|| from.parent().map(Path::to_path_buf))
            .flatten();
        beside
            .into_iter()
            .chain(self.includes.iter().cloned())
            .map(|d| d.join(name))
            .find(|p| p.is_file())
            // One name per file, so `#pragma once` holds across `../` spellings.
            .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
    }
}

fn quote(p: &Path) -> String {
    p.display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
}

fn is_pragma_once(line: &str) -> bool {
    let t = line.trim_start();
    t.strip_prefix('#')
        .map(str::trim_start)
        .and_then(|t| t.strip_prefix("pragma"))
        .is_some_and(|t| t.trim() == "once")
}

/// `#include "x"` → (`x`, false); `#include <x>` → (`x`, true).
fn include_of(line: &str) -> Option<(&str, bool)> {
    let t = line.trim_start().strip_prefix('#')?.trim_start();
    let t = t.strip_prefix("include")?.trim_start();
    if let Some(rest) = t.strip_prefix('"') {
        return Some((&rest[..rest.find('"')?], false));
    }
    let rest = t.strip_prefix('<')?;
    Some((&rest[..rest.find('>')?], true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crate_headers_are_inlined_once_and_toolkit_headers_left() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("inc/sub")).unwrap();
        std::fs::create_dir_all(root.join("k")).unwrap();
        std::fs::write(root.join("inc/common.h"), "#pragma once\n#define SCALE 2\n").unwrap();
        std::fs::write(
            root.join("inc/sub/more.h"),
            "#include \"../common.h\"\nint more;\n",
        )
        .unwrap();
        std::fs::write(root.join("k/local.h"), "int local;\n").unwrap();
        std::fs::write(
            root.join("k/a.hip"),
            "#include <hip/hip_runtime.h>\n#include \"local.h\"\n#include <common.h>\n#include \"sub/more.h\"\n__global__ void k() {}\n",
        )
        .unwrap();
        let out = root.join("out");
        std::fs::create_dir_all(&out).unwrap();
        let opts = CompileOptions {
            includes: vec![root.join("inc")],
            defines: vec![("N".into(), Some("4".into())), ("FAST".into(), None)],
            flags: vec![],
            opt_level: 3,
        };
        let src = SourceFile::new(root.join("k/a.hip"), root);
        let o = embed_source(&src, &out, &opts).unwrap();
        assert_eq!(o.format, "cuda-source");
        let text = std::fs::read_to_string(&o.path).unwrap();
        assert!(text.starts_with("#define N 4\n#define FAST 1\n"), "{text}");
        assert!(text.contains("#include <hip/hip_runtime.h>"), "{text}");
        assert!(text.contains("int local;"), "{text}");
        assert!(text.contains("int more;"), "{text}");
        assert_eq!(text.matches("#define SCALE 2").count(), 1, "{text}");
        assert!(!text.contains("#include \"local.h\""), "{text}");
        assert!(text.contains(&format!("#line 3 \"{}\"", root.join("k/a.hip").display())));
        assert_eq!(o.inputs.len(), 4, "{:?}", o.inputs);
    }

    #[test]
    fn include_parsing() {
        assert_eq!(
            include_of("  #  include \"a.h\" // x"),
            Some(("a.h", false))
        );
        assert_eq!(
            include_of("#include <hip/hip_runtime.h>"),
            Some(("hip/hip_runtime.h", true))
        );
        assert_eq!(include_of("#define X"), None);
        assert!(is_pragma_once("  # pragma once "));
        assert!(!is_pragma_once("#pragma unroll"));
    }
}
