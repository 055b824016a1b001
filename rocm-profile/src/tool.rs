//! Running a profiler (or a bare workload) as a child process: finding it on `PATH`, passing the
//! workload's environment, keeping everything it prints in a file beside its output (shown in
//! errors, never lost), and telling "the workload failed" from "the profiler failed".

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::ProfileError;

/// The workload to profile: a program, its arguments, and variables to set for it.
#[derive(Debug, Clone, Default)]
pub struct Workload {
    /// The program: a path, or a name looked up on `PATH`.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables set for it (and for the profiler that runs it), on top of this process's.
    pub env: Vec<(OsString, OsString)>,
    /// Where it runs (the current directory when `None`).
    pub dir: Option<PathBuf>,
}

impl Workload {
    /// The workload's command line, for messages and the report.
    pub fn command_line(&self) -> Vec<String> {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }
}

/// Where `program` is on `PATH` (or `program` itself when it contains a `/`).
pub(crate) fn which(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The result of one run.
#[derive(Debug, Clone)]
pub struct Ran {
    /// It exited with status 0.
    pub success: bool,
    /// `exit status: 3`, `signal: 11 (SIGSEGV)`.
    pub status: String,
    /// Everything it printed (stdout and stderr, interleaved as written).
    pub output: String,
}

/// Run `cmd` (the workload's variables and directory added), with stdout and stderr going to
/// `log`, which is read back into [`Ran::output`].
pub fn run(mut cmd: Command, workload: &Workload, log: &Path) -> Result<Ran, ProfileError> {
    for (k, v) in &workload.env {
        cmd.env(k, v);
    }
    if let Some(dir) = &workload.dir {
        cmd.current_dir(dir);
    }
    if let Some(parent) = log.parent() {
        std::fs::create_dir_all(parent).map_err(|e| ProfileError::io(parent, e))?;
    }
    let file = std::fs::File::create(log).map_err(|e| ProfileError::io(log, e))?;
    let err = file.try_clone().map_err(|e| ProfileError::io(log, e))?;
    let program = cmd.get_program().to_string_lossy().into_owned();
    let status = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::from(file))
        .stderr(Stdio::from(err))
        .status()
        .map_err(|e| ProfileError::Failed {
            what: format!("`{program}`"),
            status: format!("an error before it started ({e})"),
            output: String::new(),
        })?;
    let output = std::fs::read_to_string(log).unwrap_or_default();
    Ok(Ran {
        success: status.success(),
        status: describe(status),
        output,
    })
}

fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("signal {s}{}", rocm_protocol::signal::signal_suffix(s)),
        _ => status.to_string(),
    }
}
