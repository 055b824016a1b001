//! Reading clang-style diagnostics (`file:line:col: severity: message`) out of compiler output.

use crate::error::Diagnostic;

const SEVERITIES: [&str; 5] = ["fatal error", "error", "warning", "note", "remark"];

/// Every `file:line[:col]: severity: message` line of `output`, duplicates removed (clang repeats
/// a diagnostic once per `--offload-arch`).
pub(crate) fn parse(output: &str) -> Vec<Diagnostic> {
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

fn parse_line(line: &str) -> Option<Diagnostic> {
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
pub(crate) fn warnings(output: &str) -> Vec<String> {
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
    fn warnings_include_driver_warnings() {
        let w = warnings(OUTPUT);
        assert_eq!(w.len(), 2, "{w:#?}");
        assert!(w[0].starts_with("inc/h.h:3:9: warning: unused variable"));
        assert!(w[1].starts_with("clang++-19: warning: argument unused"));
    }
}
