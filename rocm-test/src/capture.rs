//! What a kernel prints: the process's standard output captured around a launch (file
//! descriptor 1 pointed at a temporary file, C stdio flushed on both sides, since kernels print
//! with `printf` and GPU runtimes flush device prints there), and its lines compared with the
//! expected ones in any order.

use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::sync::Mutex;

/// One capture at a time in a process: descriptor 1 is shared by its threads.
static CAPTURING: Mutex<()> = Mutex::new(());

/// Run `f` with standard output going to a temporary file; returns its result and what was
/// printed meanwhile (by this process: trials run in processes of their own by default, so only
/// this trial's kernel).
pub(crate) fn stdout_of<R>(f: impl FnOnce() -> R) -> std::io::Result<(R, String)> {
    let _one = CAPTURING.lock().unwrap_or_else(|e| e.into_inner());
    let mut file = tempfile::tempfile()?;
    std::io::stdout().flush()?;
    // Safety: plain descriptor calls on descriptors this function owns or that exist (1).
    let saved = unsafe { libc::dup(1) };
    if saved < 0 {
        return Err(std::io::Error::last_os_error());
    }
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::dup2(file.as_raw_fd(), 1);
    }
    let result = f();
    let _ = std::io::stdout().flush();
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::dup2(saved, 1);
        libc::close(saved);
    }
    let mut text = String::new();
    file.rewind()?;
    file.read_to_string(&mut text)?;
    Ok((result, text))
}

/// `None` when `printed` has exactly the `expected` lines (in any order), else a report of the
/// lines missing and the lines not expected (the first few of each).
pub(crate) fn compare_lines(printed: &str, mut expected: Vec<String>) -> Option<String> {
    let mut got: Vec<&str> = printed.lines().collect();
    got.sort_unstable();
    expected.sort_unstable();
    let (mut missing, mut extra) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < got.len() || j < expected.len() {
        match (got.get(i), expected.get(j)) {
            (Some(g), Some(e)) if *g == e.as_str() => {
                i += 1;
                j += 1;
            }
            (Some(g), Some(e)) if *g < e.as_str() => {
                extra.push(*g);
                i += 1;
            }
            (Some(_), Some(e)) | (None, Some(e)) => {
                missing.push(e.as_str());
                j += 1;
            }
            (Some(g), None) => {
                extra.push(*g);
                i += 1;
            }
            (None, None) => break,
        }
    }
    if missing.is_empty() && extra.is_empty() {
        return None;
    }
    let show = |lines: &[&str]| -> String {
        let mut text: String = lines
            .iter()
            .take(5)
            .map(|l| format!("    {l:?}\n"))
            .collect();
        if lines.len() > 5 {
            text.push_str(&format!("    … {} more\n", lines.len() - 5));
        }
        text
    };
    let mut report = format!(
        "  {} line(s) printed, {} expected\n",
        got.len(),
        expected.len()
    );
    if !missing.is_empty() {
        report.push_str(&format!("  expected but not printed:\n{}", show(&missing)));
    }
    if !extra.is_empty() {
        report.push_str(&format!("  printed but not expected:\n{}", show(&extra)));
    }
    Some(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_compare_in_any_order() {
        let want = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(compare_lines("b\na\n", want(&["a", "b"])), None);
        let report = compare_lines("a\nc\n", want(&["a", "b"])).unwrap();
        assert!(
            report.contains("expected but not printed:\n    \"b\""),
            "{report}"
        );
        assert!(
            report.contains("printed but not expected:\n    \"c\""),
            "{report}"
        );
    }

    #[test]
    fn c_stdio_output_is_captured() {
        let ((), text) = stdout_of(|| {
            // What a cpu kernel's printf does: C stdio, buffered.
            unsafe { libc::printf(c"hello %d\n".as_ptr(), 7) };
        })
        .unwrap();
        // Other tests' threads may print meanwhile (descriptor 1 is the process's).
        assert!(text.contains("hello 7\n"), "{text:?}");
    }
}
