//! Source files given to the builder: glob expansion, crate-relative names, and collision-free
//! output names.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::BuildError;

/// One kernel source file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourceFile {
    /// Absolute path.
    pub abs: PathBuf,
    /// Relative to the crate root when inside it (`kernels/saxpy.hip`), else the absolute path;
    /// always with `/` separators. This is what diagnostics, the manifest and `KernelDecl::source`
    /// show.
    pub rel: String,
}

impl SourceFile {
    /// The source at `path`, named relative to `crate_root`. Both are resolved first (`..`,
    /// `.` and symlinks), so every spelling of one file is one `SourceFile` — to every backend,
    /// and in the check that no kernel is defined by two sources.
    pub(crate) fn new(path: PathBuf, crate_root: &Path) -> SourceFile {
        let abs = std::fs::canonicalize(&path).unwrap_or(path);
        let rel = display_name(&abs, crate_root);
        SourceFile { abs, rel }
    }

    /// A file name for this source's outputs that no other source maps to: the file stem plus a
    /// hash of the crate-relative path, so `a/k.hip` and `b/k.hip` do not collide.
    pub(crate) fn output_stem(&self) -> String {
        let stem: String = self
            .abs
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let digest = Sha256::digest(self.rel.as_bytes());
        format!("{stem}-{}", &hex(&digest)[..12])
    }
}

/// How a source file is named to users (crate-relative, `/`-separated): the one definition, shared
/// with the cpu front end's diagnostics.
pub(crate) use rocm_cpu_frontend::diagnostics::display_name;

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Whether a path string is a glob pattern rather than a plain path.
pub(crate) fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Expands one entry of `Build::file`/`files`: a plain path (must exist) or a glob (must match).
/// Relative entries are taken relative to `crate_root`.
pub(crate) fn expand(entry: &Path, crate_root: &Path) -> Result<Vec<PathBuf>, BuildError> {
    let joined = if entry.is_absolute() {
        entry.to_path_buf()
    } else {
        crate_root.join(entry)
    };
    let text = joined.to_string_lossy();
    if !is_glob(&entry.to_string_lossy()) {
        return match std::fs::metadata(&joined) {
            Ok(m) if m.is_file() => Ok(vec![joined]),
            Ok(_) => Err(BuildError::SourceUnreadable {
                path: joined,
                source: std::io::Error::other("not a regular file"),
            }),
            Err(source) => Err(BuildError::SourceUnreadable {
                path: joined,
                source,
            }),
        };
    }
    let paths = glob::glob(&text)
        .map_err(|e| BuildError::config(format!("bad glob `{}`: {e}", entry.display())))?;
    let mut out = Vec::new();
    for p in paths {
        let p = p.map_err(|e| {
            let path = e.path().to_path_buf();
            BuildError::SourceUnreadable {
                path,
                source: e.into(),
            }
        })?;
        if p.is_file() {
            out.push(p);
        }
    }
    if out.is_empty() {
        return Err(BuildError::NoSources {
            message: format!(
                "the kernel source pattern `{}` matched no file (relative to {})",
                entry.display(),
                crate_root.display()
            ),
        });
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_name_in_different_folders_gets_different_stems() {
        let root = Path::new("/c");
        let a = SourceFile::new(root.join("a/k.hip"), root);
        let b = SourceFile::new(root.join("b/k.hip"), root);
        assert_eq!(a.rel, "a/k.hip");
        assert_ne!(a.output_stem(), b.output_stem());
        assert!(a.output_stem().starts_with("k-"));
        let outside = SourceFile::new(PathBuf::from("/elsewhere/x y.hip"), root);
        assert_eq!(outside.rel, "/elsewhere/x y.hip");
        assert!(outside.output_stem().starts_with("x_y-"));
    }

    #[test]
    fn globs_expand_sorted_and_must_match() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("k/sub")).unwrap();
        for f in ["k/b.hip", "k/a.hip", "k/sub/c.hip", "k/notes.txt"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        let got = expand(Path::new("k/**/*.hip"), dir.path()).unwrap();
        let rel: Vec<_> = got
            .iter()
            .map(|p| p.strip_prefix(dir.path()).unwrap().to_path_buf())
            .collect();
        assert_eq!(
            rel,
            [
                PathBuf::from("k/a.hip"),
                PathBuf::from("k/b.hip"),
                PathBuf::from("k/sub/c.hip")
            ]
        );
        assert!(matches!(
            expand(Path::new("k/*.cu"), dir.path()),
            Err(BuildError::NoSources { .. })
        ));
        assert!(matches!(
            expand(Path::new("k/missing.hip"), dir.path()),
            Err(BuildError::SourceUnreadable { .. })
        ));
    }
}
