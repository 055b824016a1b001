//! Crash isolation, as `cargo nextest` does it: each trial that launches kernels runs in a child
//! process of the harness binary, so a kernel that kills its process (a signal, an abort, a stack
//! overflow the runtime could not catch) fails that trial, named, with the signal and what was
//! running, while every other trial still runs and is counted.
//!
//! The wire part (the variables, the [`Report`] file, the trail beside it) is
//! `rocm_protocol::isolate`; this module starts, watches and reads the child. The child runs
//! only its trial's body and writes a [`Report`]; before each launch it appends what it is about
//! to do to the trail ([`note`]), which is what the parent names when the child dies instead.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use wait_timeout::ChildExt;

/// How a trial body ended, as the child reports it.
pub(crate) use rocm_protocol::isolate::ChildReport as Report;
use rocm_protocol::isolate::{
    trail_path, CHILD_REPORT, CHILD_TRIAL, DEFAULT_TRIAL_TIMEOUT_S, TRIAL_TIMEOUT,
};

/// The harness's own command line, forwarded to children.
static ARGS: OnceLock<Vec<String>> = OnceLock::new();

/// Remember the command line the harness was started with (without the program name).
pub(crate) fn set_args(args: Vec<String>) {
    let _ = ARGS.set(args);
}

/// In a child: the trial it runs and where to report.
pub(crate) fn child() -> Option<(String, PathBuf)> {
    let trial = std::env::var(CHILD_TRIAL).ok()?;
    let report = std::env::var_os(CHILD_REPORT)?;
    Some((trial, PathBuf::from(report)))
}

/// The child's trail, once opened.
static TRAIL: Mutex<Option<std::fs::File>> = Mutex::new(None);

/// Record what the trial is about to do (a kernel launch), so a crash can be named. Does nothing
/// outside a child.
pub(crate) fn note(what: impl FnOnce() -> String) {
    let Some((_, report)) = child() else {
        return;
    };
    let mut trail = TRAIL.lock().unwrap_or_else(|e| e.into_inner());
    if trail.is_none() {
        *trail = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(trail_path(&report))
            .ok();
    }
    if let Some(f) = trail.as_mut() {
        // One write per line, so what a crash leaves is whole lines.
        let _ = f.write_all(format!("{}\n", what()).as_bytes());
    }
}

/// Write the child's outcome.
pub(crate) fn write_report(path: &std::path::Path, report: &Report) -> std::io::Result<()> {
    std::fs::write(path, report.to_bytes())
}

/// Run trial `name` in a child process and return what it reported, or a failure that says how
/// the child died and what it was doing.
pub(crate) fn run_in_child(name: &str) -> Report {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            return Report::Failed {
                message: format!("cannot find the harness binary to isolate the trial: {e}"),
            }
        }
    };
    let dir = match tempfile::Builder::new()
        .prefix("rocm-test-trial-")
        .tempdir()
    {
        Ok(d) => d,
        Err(e) => {
            return Report::Failed {
                message: format!("cannot create a folder for the trial's report: {e}"),
            }
        }
    };
    let report = dir.path().join("report.json");
    let args = ARGS.get().cloned().unwrap_or_default();
    let child = Command::new(&exe)
        .args(&args)
        .env(CHILD_TRIAL, name)
        .env(CHILD_REPORT, &report)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return Report::Failed {
                message: format!("cannot start the trial's process ({}): {e}", exe.display()),
            }
        }
    };
    // Read the pipes on threads so a chatty child cannot block on a full pipe.
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let out_thread = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut b);
        b
    });
    let err_thread = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut err, &mut b);
        b
    });
    let limit = Duration::from_secs(
        std::env::var(TRIAL_TIMEOUT)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(DEFAULT_TRIAL_TIMEOUT_S),
    );
    let status = match child.wait_timeout(limit) {
        Ok(Some(status)) => Ok(status),
        Ok(None) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(format!(
                "did not finish within {} s and was killed ({TRIAL_TIMEOUT} sets the limit)",
                limit.as_secs()
            ))
        }
        Err(e) => Err(format!("waiting for it failed: {e}")),
    };
    let stdout = String::from_utf8_lossy(&out_thread.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_thread.join().unwrap_or_default()).into_owned();
    // What the child printed belongs to this trial: show it, as libtest shows captured output.
    print!("{stdout}");
    let reported = std::fs::read(&report)
        .ok()
        .and_then(|b| Report::from_bytes(&b));
    match (status, reported) {
        (Ok(status), Some(report)) if status.success() => report,
        (status, _) => {
            let how = match status {
                Ok(status) => died(status),
                Err(why) => why,
            };
            let trail = std::fs::read_to_string(trail_path(&report)).unwrap_or_default();
            let doing = trail
                .lines()
                .last()
                .map(|l| format!(" while {l}"))
                .unwrap_or_default();
            let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            Report::Failed {
                message: format!(
                    "the trial's process {how}{doing}; the other trials still run (each has a \
                     process of its own)\n{}",
                    if tail.is_empty() {
                        String::new()
                    } else {
                        format!("  its last output:\n    {}\n", tail.join("\n    "))
                    }
                ),
            }
        }
    }
}

/// How a child that wrote no report ended, in words.
fn died(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return format!(
                "was killed by signal {sig}{}",
                rocm_protocol::signal::signal_suffix(sig)
            );
        }
    }
    format!("exited with {status} without reporting")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_signal_is_named() {
        use std::os::unix::process::ExitStatusExt;
        let status = std::process::ExitStatus::from_raw(11);
        assert_eq!(died(status), "was killed by signal 11 (SIGSEGV)");
    }
}
