//! Running the small probe programs that discovery and detection ask (`hipconfig`, `clang++
//! --version`, `rocminfo`, `nvidia-smi`, `lspci`, `python3`): capture their output, and never
//! wait forever on one that hangs (a wedged GPU driver can make `rocminfo` block).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use wait_timeout::ChildExt;

/// How long a probe may run before it is killed. Probes print a few lines; ten seconds is
/// generous even for `rocminfo` on a machine with many GPUs.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a probe gave no usable output, in words fit for a note to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeError {
    /// The program is not on `PATH` or not executable.
    NotFound,
    /// It ran but exited unsuccessfully.
    Failed {
        /// How it exited (`exit status: 1`).
        status: String,
        /// The first line of its stderr (else stdout); empty if it printed nothing.
        stderr: String,
    },
    /// It ran past [`PROBE_TIMEOUT`] and was killed.
    TimedOut,
    /// Spawning or reading failed for another reason.
    Io(String),
}

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProbeError::NotFound => write!(f, "not found"),
            ProbeError::Failed { status, stderr } if stderr.is_empty() => write!(f, "{status}"),
            ProbeError::Failed { status, stderr } => write!(f, "{status}: {stderr}"),
            ProbeError::TimedOut => write!(f, "timed out after {}s", PROBE_TIMEOUT.as_secs()),
            ProbeError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Run `program args...` and return its stdout when it exits successfully.
pub fn probe(program: impl AsRef<Path>, args: &[&str]) -> Result<String, ProbeError> {
    let mut child = match spawn(program.as_ref(), args) {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ProbeError::NotFound),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Err(ProbeError::NotFound)
        }
        Err(e) => return Err(ProbeError::Io(e.to_string())),
    };
    // Read both pipes on threads so a chatty program cannot fill one and block forever.
    let mut stdout = child.stdout.take().expect("stdout was piped");
    let mut stderr = child.stderr.take().expect("stderr was piped");
    let out_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        buf
    });
    let err_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let status = match child.wait_timeout(PROBE_TIMEOUT) {
        Ok(Some(status)) => status,
        Ok(None) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ProbeError::TimedOut);
        }
        Err(e) => return Err(ProbeError::Io(e.to_string())),
    };
    let out = out_thread.join().unwrap_or_default();
    let err = err_thread.join().unwrap_or_default();
    if status.success() {
        Ok(String::from_utf8_lossy(&out).into_owned())
    } else {
        // Some tools (nvidia-smi) print their complaint on stdout.
        let first = |bytes: &[u8]| {
            String::from_utf8_lossy(bytes)
                .lines()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.trim().to_owned())
        };
        let stderr = first(&err).or_else(|| first(&out)).unwrap_or_default();
        Err(ProbeError::Failed {
            status: status.to_string(),
            stderr,
        })
    }
}

/// Spawn with piped output. A script written a moment ago can fail with ETXTBSY while a
/// concurrently forked child still holds its write handle (a known race in multi-threaded
/// programs such as test harnesses); that clears within milliseconds, so retry a few times.
fn spawn(program: &Path, args: &[&str]) -> std::io::Result<std::process::Child> {
    const ETXTBSY: i32 = 26;
    let mut attempt = 0;
    loop {
        let result = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        match result {
            Err(e) if e.raw_os_error() == Some(ETXTBSY) && attempt < 20 => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// The first non-empty line of a program's `--version` output.
pub fn version_line(program: &Path) -> Option<String> {
    probe(program, &["--version"])
        .ok()?
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}

/// The existing folders on a Python's `sys.path` (where pip installs packages). A missing
/// Python is an empty list, not an error: there is nothing pip-installed to find then.
pub fn python_sys_path(python: &Path) -> Result<Vec<std::path::PathBuf>, ProbeError> {
    const SCRIPT: &str = "import sys\nfor p in sys.path:\n    print(p)";
    match probe(python, &["-c", SCRIPT]) {
        Ok(out) => Ok(out
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_dir())
            .collect()),
        Err(ProbeError::NotFound) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Find `name` on `PATH` (the way a shell would), returning the full path.
pub fn which(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// A regular file with an execute bit (on Unix) that we could run.
pub fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_program_is_not_found() {
        assert_eq!(
            probe("/nonexistent/definitely-not-here", &[]),
            Err(ProbeError::NotFound)
        );
    }

    #[test]
    fn output_and_failure_are_captured() {
        assert_eq!(probe("sh", &["-c", "echo hi"]).unwrap(), "hi\n");
        let err = probe("sh", &["-c", "echo oops >&2; exit 3"]).unwrap_err();
        assert!(err.to_string().contains("oops"), "{err}");
    }
}
