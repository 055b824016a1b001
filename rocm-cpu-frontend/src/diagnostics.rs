//! Compiler diagnostics: reading them out of compiler output — clang's and GCC's
//! `file:line:col: severity: message`, nvcc's and NVRTC's `file(line): severity: message` — and
//! writing the short summary a failed build shows. The cpu build reads the host compiler's output
//! with it; `rocm-kernels-build` reads its amd and nvidia compilers' output with it too, so a
//! diagnostic is one type on every backend.

use std::path::Path;

/// One diagnostic the compiler printed (`file:line:col: severity: message`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file as the compiler names it (crate-relative for the crate's own files).
    pub file: String,
    /// The line, 1-based.
    pub line: u32,
    /// The column, 1-based, when the compiler gave one (nvcc does not).
    pub column: Option<u32>,
    /// `error`, `warning`, `note`, `remark` or `fatal error`.
    pub severity: String,
    /// What the compiler said, after the severity.
    pub message: String,
}

impl Diagnostic {
    /// Whether this diagnostic makes the compile fail.
    pub fn is_error(&self) -> bool {
        self.severity.contains("error")
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.column {
            Some(c) => write!(
                f,
                "{}:{}:{}: {}: {}",
                self.file, self.line, c, self.severity, self.message
            ),
            None => write!(
                f,
                "{}:{}: {}: {}",
                self.file, self.line, self.severity, self.message
            ),
        }
    }
}

const SEVERITIES: [&str; 5] = ["fatal error", "error", "warning", "note", "remark"];

/// Every `file:line[:col]: severity: message` line of `output`, duplicates removed (clang repeats
/// a diagnostic once per `--offload-arch`).
pub fn parse(output: &str) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    for line in output.lines() {
        if let Some(d) = parse_line(line) {
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

/// How many errors a summary lists; the rest are counted.
const SHOWN: usize = 5;

/// The first errors of `diagnostics`, one per line (the first line is the first error), and how
/// many more there are: what a failed build says, in at most `SHOWN + 1` lines.
pub fn summary(diagnostics: &[Diagnostic]) -> String {
    let errors: Vec<&Diagnostic> = diagnostics.iter().filter(|d| d.is_error()).collect();
    let shown: &[&Diagnostic] = if errors.is_empty() {
        &[]
    } else {
        &errors[..errors.len().min(SHOWN)]
    };
    let mut lines: Vec<String> = shown.iter().map(|d| d.to_string()).collect();
    if errors.len() > SHOWN {
        lines.push(format!("({} more errors)", errors.len() - SHOWN));
    }
    lines.join("\n")
}

fn parse_line(line: &str) -> Option<Diagnostic> {
    parse_clang(line).or_else(|| parse_nvcc(line))
}

/// nvcc's and NVRTC's `file(line): error: message` (EDG's format).
fn parse_nvcc(line: &str) -> Option<Diagnostic> {
    for sev in SEVERITIES {
        let marker = format!("): {sev}");
        let Some(pos) = line.find(&marker) else {
            continue;
        };
        let rest = &line[pos + marker.len()..];
        // `error: ...` or `warning #177-D: ...`.
        let message = match rest.strip_prefix(": ") {
            Some(m) => m,
            None => rest.strip_prefix(' ')?.split_once(": ")?.1,
        };
        let (file, line_no) = line[..pos].rsplit_once('(')?;
        let line_no = line_no.parse().ok()?;
        if file.is_empty() {
            return None;
        }
        return Some(Diagnostic {
            file: file.to_string(),
            line: line_no,
            column: None,
            severity: sev.to_string(),
            message: message.to_string(),
        });
    }
    None
}

fn parse_clang(line: &str) -> Option<Diagnostic> {
    for sev in SEVERITIES {
        let marker = format!(": {sev}: ");
        let Some(pos) = line.find(&marker) else {
            continue;
        };
        let location = &line[..pos];
        let message = line[pos + marker.len()..].to_string();
        let mut parts = location.rsplitn(3, ':');
        let last = parts.next()?;
        let middle = parts.next()?;
        let (file, line_no, column) = match (last.parse::<u32>(), middle.parse::<u32>()) {
            (Ok(col), Ok(l)) => (parts.next()?.to_string(), l, Some(col)),
            (Ok(l), Err(_)) => {
                let file = location.rsplit_once(':')?.0.to_string();
                (file, l, None)
            }
            _ => return None,
        };
        if file.is_empty() {
            return None;
        }
        return Some(Diagnostic {
            file,
            line: line_no,
            column,
            severity: sev.to_string(),
            message,
        });
    }
    None
}

/// Warnings to show through `cargo:warning`: located warnings, and the driver's own
/// `clang: warning: ...` lines, each once.
pub fn warnings(output: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in output.lines() {
        let text = if let Some(d) = parse_line(line) {
            (d.severity == "warning").then(|| d.to_string())
        } else {
            // Driver warnings have no location: `clang++-19: warning: argument unused ...`.
            line.split_once(": warning: ")
                .filter(|(prog, _)| !prog.contains(' '))
                .map(|_| line.trim().to_string())
        };
        if let Some(t) = text {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

/// How a file at `abs` (resolved) is named to users: relative to the crate root when inside it
/// (`kernels/saxpy.hip`), else its absolute path; always with `/` separators. The crate root is
/// resolved too, so a crate reached through a symlink names its files the same way.
pub fn display_name(abs: &Path, crate_root: &Path) -> String {
    let root = std::fs::canonicalize(crate_root).unwrap_or_else(|_| crate_root.to_path_buf());
    match abs.strip_prefix(&root) {
        Ok(inside) => inside
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => abs.to_string_lossy().replace('\\', "/"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "\
In file included from kernels/a.hip:2:
inc/h.h:3:9: warning: unused variable 'x' [-Wunused-variable]
    3 |     int x;
kernels/a.hip:7:5: error: use of undeclared identifier 'foo'
kernels/a.hip:7:5: error: use of undeclared identifier 'foo'
kernels/a.hip:9: error: something without column
clang++-19: warning: argument unused during compilation: '-fno-foo' [-Wunused-command-line-argument]
2 errors generated when compiling for gfx90a.
";

    #[test]
    fn parses_located_diagnostics_once() {
        let d = parse(OUTPUT);
        assert_eq!(d.len(), 3, "{d:#?}");
        assert_eq!(d[0].file, "inc/h.h");
        assert_eq!((d[0].line, d[0].column), (3, Some(9)));
        assert_eq!(d[0].severity, "warning");
        assert!(d[1].is_error());
        assert_eq!(
            d[1].to_string(),
            "kernels/a.hip:7:5: error: use of undeclared identifier 'foo'"
        );
        assert_eq!((d[2].line, d[2].column), (9, None));
    }

    #[test]
    fn parses_nvcc_diagnostics() {
        let d = parse(
            "/c/k.hip(5): error: identifier \"y\" is undefined\n\
             /c/k.hip(7): warning #177-D: variable \"t\" was declared but never referenced\n\
             1 error detected in the compilation of \"/c/k.hip\".\n",
        );
        assert_eq!(d.len(), 2, "{d:#?}");
        assert_eq!(
            d[0].to_string(),
            "/c/k.hip:5: error: identifier \"y\" is undefined"
        );
        assert_eq!(d[1].severity, "warning");
        assert_eq!(
            d[1].message,
            "variable \"t\" was declared but never referenced"
        );
    }

    #[test]
    fn a_summary_is_the_first_errors_and_a_count() {
        let mut d = parse(OUTPUT);
        assert_eq!(summary(&d).lines().count(), 2);
        for n in 0..9 {
            d.push(Diagnostic {
                file: "k.hip".into(),
                line: n,
                column: None,
                severity: "error".into(),
                message: "x".into(),
            });
        }
        let s = summary(&d);
        assert!(
            s.starts_with("kernels/a.hip:7:5: error: use of undeclared"),
            "{s}"
        );
        assert_eq!(s.lines().count(), SHOWN + 1, "{s}");
        assert!(s.ends_with("(6 more errors)"), "{s}");
    }

    #[test]
    fn warnings_include_driver_warnings() {
        let w = warnings(OUTPUT);
        assert_eq!(w.len(), 2, "{w:#?}");
        assert!(w[0].starts_with("inc/h.h:3:9: warning: unused variable"));
        assert!(w[1].starts_with("clang++-19: warning: argument unused"));
    }
}
