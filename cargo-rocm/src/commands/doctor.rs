//! `cargo rocm doctor`: check each piece every backend needs, say how to fix what is missing,
//! and exit non-zero when a backend the user asked for cannot work.
//!
//! Each backend gets a list of [`Check`]s. An `error` check means the backend cannot work here:
//! it cannot build kernels, or this machine has its device but not the runtime library to use
//! it. A `warn` check is something missing that does not stop it (typically: no GPU of that
//! kind, so kernels build but their trials are skipped). Exit status: `FAILED`
//! ([`CommandError::BackendsUnusable`]) when a backend named with `--backend` has an error;
//! without `--backend`, only when the `cpu` backend (which every test run uses) has one.

mod amd;
mod cpu;
mod libs;
mod nvidia;

use std::io::Write;
use std::path::PathBuf;

use anstyle::{AnsiColor, Effects, Style};
use clap::ValueEnum;
use rocm_kernels_core::Backend;
use rocm_toolkit::detect::{detect, Detection};
use rocm_toolkit::toolchain::{discover, Discovery};
use serde::Serialize;

use crate::cli::{FormatArgs, GlobalArgs};
use crate::exit::{self, CommandError};
use crate::output::Output;

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Backend that must work (repeatable); exit 1 if one cannot [default: report all, fail only if cpu cannot work]
    #[arg(long, value_enum, value_name = "BACKEND")]
    pub backend: Vec<BackendArg>,

    /// Check the ROCm install at this prefix instead of the best one found
    #[arg(long, value_name = "PATH")]
    pub toolchain_path: Option<PathBuf>,

    #[command(flatten)]
    pub format: FormatArgs,
}

/// `--backend` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// AMD GPUs through ROCm/HIP
    Amd,
    /// NVIDIA GPUs through CUDA
    Nvidia,
    /// The host CPU (always available when a C++ compiler is)
    Cpu,
}

impl From<BackendArg> for Backend {
    fn from(b: BackendArg) -> Backend {
        match b {
            BackendArg::Amd => Backend::Amd,
            BackendArg::Nvidia => Backend::Nvidia,
            BackendArg::Cpu => Backend::Cpu,
        }
    }
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Info,
    Warn,
    Error,
}

/// One thing checked.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub status: Status,
    /// What was found, or what is wrong. May span lines.
    pub detail: String,
    /// The command (or step) that fixes a problem.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    pub fn new(name: &str, status: Status, detail: impl Into<String>) -> Self {
        Check {
            name: name.to_owned(),
            status,
            detail: detail.into(),
            fix: None,
        }
    }

    pub fn ok(name: &str, detail: impl Into<String>) -> Self {
        Self::new(name, Status::Ok, detail)
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// The verdict for one backend.
#[derive(Debug, Clone, Serialize)]
pub struct BackendReport {
    pub backend: Backend,
    /// No `error` check: the backend works as far as this machine allows. A backend required
    /// with `--backend` that is not `ok` makes doctor exit 1.
    pub ok: bool,
    /// Kernels for this backend can be compiled here.
    pub can_build: bool,
    /// And run here: a device and its runtime library are present.
    pub can_run: bool,
    pub summary: String,
    pub checks: Vec<Check>,
}

impl BackendReport {
    pub fn new(
        backend: Backend,
        checks: Vec<Check>,
        can_build: bool,
        can_run: bool,
        summary: String,
    ) -> Self {
        BackendReport {
            backend,
            ok: !checks.iter().any(|c| c.status == Status::Error),
            can_build,
            can_run: can_build && can_run,
            summary,
            checks,
        }
    }
}

/// What `doctor --message-format json` prints.
#[derive(Debug, Serialize)]
struct Report<'a> {
    backends: Vec<BackendReport>,
    /// Backends that were required (`--backend`, or `cpu` by default) and cannot work.
    failed: Vec<Backend>,
    toolchains: &'a Discovery,
    devices: &'a Detection,
}

/// What the checks of every backend read: gathered once.
pub struct Context {
    /// The toolchain every command would use (see `selection`), or why there is none.
    pub selected: Result<rocm_toolkit::toolchain::Toolchain, String>,
    pub discovery: Discovery,
    pub detection: Detection,
    pub toolchain_path: Option<PathBuf>,
}

pub fn run(global: &GlobalArgs, args: DoctorArgs, out: &Output) -> anyhow::Result<u8> {
    out.status(
        "Checking",
        "ROCm toolchains, devices, compilers and runtime libraries",
    );
    let selected = crate::selection::select_toolchain(global, args.toolchain_path.as_deref(), out)
        .map_err(|e| format!("{e:#}"));
    let ctx = Context {
        selected,
        discovery: discover(),
        detection: detect(),
        toolchain_path: args.toolchain_path.clone(),
    };
    let backends = vec![amd::check(&ctx), nvidia::check(&ctx), cpu::check(&ctx)];

    let required: Vec<Backend> = if args.backend.is_empty() {
        vec![Backend::Cpu]
    } else {
        args.backend.iter().map(|&b| b.into()).collect()
    };
    let failed: Vec<Backend> = backends
        .iter()
        .filter(|r| required.contains(&r.backend) && !r.ok)
        .map(|r| r.backend)
        .collect();

    let mut stdout = out.stdout();
    if args.format.json() {
        let report = Report {
            backends,
            failed: failed.clone(),
            toolchains: &ctx.discovery,
            devices: &ctx.detection,
        };
        writeln!(stdout, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        write!(stdout, "{}", render(&backends, out))?;
    }
    if failed.is_empty() {
        Ok(exit::OK)
    } else {
        Err(CommandError::BackendsUnusable {
            backends: failed.iter().map(|b| b.as_str().to_owned()).collect(),
        }
        .into())
    }
}

fn title(backend: Backend) -> &'static str {
    match backend {
        Backend::Amd => "amd backend (ROCm/HIP)",
        Backend::Nvidia => "nvidia backend (CUDA)",
        Backend::Cpu => "cpu backend (host C++ compiler)",
    }
}

/// The people's view: a section per backend, one line per check (continuation lines indented),
/// `fix:` lines under problems, and a verdict.
fn render(backends: &[BackendReport], out: &Output) -> String {
    let paint = |style: Style, text: &str| out.styled(style, text);
    let bold = Style::new().effects(Effects::BOLD);
    let name_width = backends
        .iter()
        .flat_map(|b| &b.checks)
        .map(|c| c.name.len())
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for (i, report) in backends.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push_str(&paint(bold, title(report.backend)));
        text.push('\n');
        for check in &report.checks {
            let (word, color) = match check.status {
                Status::Ok => ("ok", AnsiColor::Green),
                Status::Info => ("info", AnsiColor::Cyan),
                Status::Warn => ("warn", AnsiColor::Yellow),
                Status::Error => ("error", AnsiColor::Red),
            };
            let label = paint(
                color.on_default().effects(Effects::BOLD),
                &format!("{word:<5}"),
            );
            let indent = " ".repeat(2 + 5 + 1 + name_width + 2);
            let mut lines = check.detail.lines();
            text.push_str(&format!(
                "  {label} {:<name_width$}  {}\n",
                check.name,
                lines.next().unwrap_or("")
            ));
            for line in lines {
                text.push_str(&format!("{indent}{line}\n"));
            }
            if let Some(fix) = &check.fix {
                for (j, line) in fix.lines().enumerate() {
                    let prefix = if j == 0 { "fix: " } else { "     " };
                    text.push_str(&format!("{indent}{}{line}\n", paint(bold, prefix)));
                }
            }
        }
        let verdict_color = if report.can_run {
            AnsiColor::Green
        } else if report.can_build {
            AnsiColor::Yellow
        } else {
            AnsiColor::Red
        };
        text.push_str(&format!(
            "  {} {}\n",
            paint(verdict_color.on_default().effects(Effects::BOLD), "=>"),
            report.summary
        ));
    }
    text
}
