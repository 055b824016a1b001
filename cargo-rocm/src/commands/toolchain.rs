//! `cargo rocm toolchain`: install, list, link, pin and remove ROCm toolchains.
//!
//! The work is in `rocm-toolchains` (changing the home) and `rocm_toolkit::home` (reading it,
//! resolution); this module parses arguments, shows progress and prints results.

mod progress;
mod show;

use std::path::{Path, PathBuf};

use anyhow::Context;
use rocm_toolchains::auto::{self, families_for, index_urls};
use rocm_toolchains::dist::{self, Selector};
use rocm_toolchains::download::{DownloadOptions, Downloader};
use rocm_toolchains::system::SystemPlan;
use rocm_toolchains::{gpu, ArchiveSource, InstallOptions, InstallReport, Installer};
use rocm_toolkit::home::{self, Channel, Home, PinFile, Resolved, Version};

use crate::cli::{FormatArgs, GlobalArgs};
use crate::exit::{self, CommandError};
use crate::output::Output;

#[derive(Debug, clap::Args)]
#[command(after_help = concat!(
    "Toolchains live in $CARGO_ROCM_HOME (default ~/.rocm). Which one a crate uses, first match wins:\n",
    "  cargo rocm +NAME ... | CARGO_ROCM_TOOLCHAIN | directory override | rocm-toolchain.toml | default | system install\n\n",
    "Environment: CARGO_ROCM_DIST_URL (index URL override), CARGO_ROCM_NO_AUTO_INSTALL=1 (never install a\n",
    "missing pinned toolchain), CARGO_ROCM_HTTP_RETRIES, CARGO_ROCM_HTTP_TIMEOUT (s), CARGO_ROCM_HTTP_BACKOFF_MS."
))]
pub struct ToolchainArgs {
    #[command(subcommand)]
    command: ToolchainCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ToolchainCommand {
    /// Install a TheRock build (by version or channel), an archive (file or URL), or `system` packages
    Install(InstallArgs),
    /// List installed toolchains, or with --available the published TheRock builds
    List(ListArgs),
    /// Remove toolchains (for a linked one, only the link: never what it points at)
    #[command(alias = "remove")]
    Uninstall(UninstallArgs),
    /// Register an existing ROCm install under a name (/opt/rocm-6.4.1, a pip ROCm SDK, /usr)
    Link(LinkArgs),
    /// Show or set the default toolchain
    Default(DefaultArgs),
    /// Show which toolchain applies in this directory, and why (installs a missing pinned one)
    Which(WhichArgs),
    /// Set, remove or list directory overrides
    Override(OverrideArgs),
}

/// Where TheRock builds are listed, and which to pick.
#[derive(Debug, Clone, Default, clap::Args)]
struct PickArgs {
    /// TheRock GPU family, e.g. gfx94X-dcgpu, gfx90a, gfx120X-all [default: from --target or the detected GPU]
    #[arg(long, value_name = "FAMILY")]
    family: Option<String>,
    /// gfx target(s) the toolchain must support, e.g. gfx942 (repeatable)
    #[arg(long = "target", value_name = "GFX")]
    targets: Vec<String>,
    /// Only builds of this channel: release, prerelease or nightly
    #[arg(long, value_name = "CHANNEL", value_parser = parse_channel)]
    channel: Option<Channel>,
    /// Index page(s) listing the tarballs (a mirror), comma-separated [env: CARGO_ROCM_DIST_URL]
    #[arg(long, value_name = "URL")]
    index_url: Option<String>,
}

#[derive(Debug, clap::Args)]
struct InstallArgs {
    /// A version (7.0.0rc20250818), a channel (release, prerelease, nightly), `system`, or an
    /// archive path or URL. Default: what rocm-toolchain.toml pins, else the newest release
    #[arg(value_name = "WHAT")]
    what: Option<String>,
    #[command(flatten)]
    pick: PickArgs,
    /// Name of the new toolchain [default: therock-<version>-<family>, or from the file name]
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Expected sha256 of the archive (a published .sha256 is checked anyway)
    #[arg(long, value_name = "HEX")]
    sha256: Option<String>,
    /// Replace a toolchain of the same name
    #[arg(long)]
    force: bool,
    /// Say what would be done (the download, or the package manager command) and do nothing
    #[arg(long)]
    dry_run: bool,
    /// With `system`: let the package manager proceed without asking
    #[arg(long, short = 'y')]
    yes: bool,
    /// Also make it the default toolchain
    #[arg(long)]
    default: bool,
    #[command(flatten)]
    format: FormatArgs,
}

#[derive(Debug, clap::Args)]
struct ListArgs {
    /// List published TheRock builds instead of installed toolchains
    #[arg(long)]
    available: bool,
    #[command(flatten)]
    pick: PickArgs,
    #[command(flatten)]
    format: FormatArgs,
}

#[derive(Debug, clap::Args)]
struct UninstallArgs {
    /// Toolchain names
    #[arg(required = true, value_name = "NAME")]
    names: Vec<String>,
}

#[derive(Debug, clap::Args)]
struct LinkArgs {
    /// Name for the toolchain
    name: String,
    /// Its install prefix (what ROCM_PATH would be)
    path: PathBuf,
    /// Replace a toolchain of the same name
    #[arg(long)]
    force: bool,
}

#[derive(Debug, clap::Args)]
struct DefaultArgs {
    /// Toolchain to make the default; without it, print the current default
    name: Option<String>,
    /// Remove the default
    #[arg(long, conflicts_with = "name")]
    unset: bool,
}

#[derive(Debug, clap::Args)]
struct WhichArgs {
    /// Index page(s) to install a missing pinned toolchain from [env: CARGO_ROCM_DIST_URL]
    #[arg(long, value_name = "URL")]
    index_url: Option<String>,
    #[command(flatten)]
    format: FormatArgs,
}

#[derive(Debug, clap::Args)]
struct OverrideArgs {
    #[command(subcommand)]
    command: OverrideCommand,
}

#[derive(Debug, clap::Subcommand)]
enum OverrideCommand {
    /// Use NAME in a directory and below
    Set {
        name: String,
        /// The directory [default: the current one]
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
    },
    /// Remove a directory's override
    Unset {
        /// The directory [default: the current one]
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
    },
    /// List overrides
    List,
}

fn parse_channel(s: &str) -> Result<Channel, String> {
    s.parse()
}

pub fn run(global: &GlobalArgs, args: ToolchainArgs, out: &Output) -> anyhow::Result<u8> {
    let home = Home::from_env().map_err(home_err)?;
    let installer = Installer::new(home, Downloader::new(DownloadOptions::from_env()));
    match args.command {
        ToolchainCommand::Install(a) => install(global, &installer, a, out),
        ToolchainCommand::List(a) if a.available => {
            show::available(&installer, a.pick, a.format, out)
        }
        ToolchainCommand::List(a) => show::installed(&installer, a.format, out),
        ToolchainCommand::Uninstall(a) => {
            for name in &a.names {
                let r = installer
                    .uninstall(name, &mut progress::events(out))
                    .map_err(tc_err)?;
                out.status("Removed", format!("{name} ({})", r.removed.display()));
                if r.was_default {
                    out.warn(format!(
                        "`{name}` was the default toolchain; there is no default now"
                    ));
                }
                for d in &r.removed_overrides {
                    out.warn(format!(
                        "removed the override for {} that named `{name}`",
                        d.display()
                    ));
                }
            }
            Ok(exit::OK)
        }
        ToolchainCommand::Link(a) => {
            let r = installer
                .link(&a.name, &a.path, a.force, &mut progress::events(out))
                .map_err(tc_err)?;
            let word = if r.unchanged { "Unchanged" } else { "Linked" };
            out.status(word, describe_install(&r));
            Ok(exit::OK)
        }
        ToolchainCommand::Default(a) => {
            if a.unset {
                installer
                    .set_default(None, &mut progress::events(out))
                    .map_err(tc_err)?;
                out.status("Default", "unset");
            } else if let Some(name) = a.name {
                installer
                    .set_default(Some(&name), &mut progress::events(out))
                    .map_err(tc_err)?;
                out.status("Default", format!("toolchain is now `{name}`"));
            } else {
                let settings = installer.home().settings().map_err(home_err)?;
                match settings.default {
                    Some(d) => show::line(out, &d),
                    None => return Err(CommandError::NoDefaultToolchain.into()),
                }
            }
            Ok(exit::OK)
        }
        ToolchainCommand::Which(a) => {
            let resolved = resolve_installing(global, &installer, a.index_url.as_deref(), out)?;
            show::which(&resolved, a.format, out)
        }
        ToolchainCommand::Override(a) => override_cmd(&installer, a.command, out),
    }
}

/// The toolchain for the current crate (the `--manifest-path` directory, else the current
/// directory), installing a missing pinned one unless CARGO_ROCM_NO_AUTO_INSTALL is set.
/// Other commands (`env`, `doctor`, `build`) call this to agree with `toolchain which`.
#[allow(dead_code)] // until `env`, `doctor` and `build` are wired to it
pub fn resolve(global: &GlobalArgs, out: &Output) -> anyhow::Result<Resolved> {
    let home = Home::from_env().map_err(home_err)?;
    let installer = Installer::new(home, Downloader::new(DownloadOptions::from_env()));
    resolve_installing(global, &installer, None, out)
}

fn resolve_installing(
    global: &GlobalArgs,
    installer: &Installer,
    index_url: Option<&str>,
    out: &Output,
) -> anyhow::Result<Resolved> {
    let start = start_dir(global)?;
    let selection = std::env::var(home::TOOLCHAIN_ENV).ok();
    let (resolved, report) = auto::resolve_or_install(
        installer,
        &start,
        selection.as_deref(),
        index_url,
        &mut progress::events(out),
    )
    .map_err(tc_err)?;
    if let Some(r) = report {
        out.status(
            "Installed",
            format!("{} (pinned, was missing)", describe_install(&r)),
        );
    }
    Ok(resolved)
}

fn install(
    global: &GlobalArgs,
    installer: &Installer,
    a: InstallArgs,
    out: &Output,
) -> anyhow::Result<u8> {
    let options = InstallOptions {
        name: a.name.clone(),
        sha256: a.sha256.clone(),
        force: a.force,
    };
    let what = a.what.as_deref().unwrap_or("");
    let report = if what == "system" {
        return install_system(installer, &a, out);
    } else if what.starts_with("http://")
        || what.starts_with("https://")
        || what.starts_with("file://")
    {
        let source = match what.strip_prefix("file://") {
            Some(p) => ArchiveSource::File(PathBuf::from(p)),
            None => ArchiveSource::Url(what.to_string()),
        };
        if a.dry_run {
            return dry_run(out, &a.format, what, a.name.as_deref());
        }
        installer
            .install_archive(&source, &options, &mut progress::events(out))
            .map_err(tc_err)?
    } else if !what.is_empty() && (Path::new(what).is_file() || looks_like_archive(what)) {
        let path = PathBuf::from(what);
        if !path.is_file() {
            return Err(CommandError::NoSuchArchive {
                what: what.to_string(),
            }
            .into());
        }
        if a.dry_run {
            return dry_run(out, &a.format, what, a.name.as_deref());
        }
        installer
            .install_archive(
                &ArchiveSource::File(path),
                &options,
                &mut progress::events(out),
            )
            .map_err(tc_err)?
    } else {
        let mut pick = a.pick.clone();
        let mut version: Option<Version> = None;
        if what.is_empty() {
            // No argument: what the pin file here asks for, else the newest release.
            let start = start_dir(global)?;
            if let Some(pin_file) = PinFile::find(&start).map_err(home_err)? {
                let pin = &pin_file.pin;
                if pin.path.is_some() || pin.name.is_some() {
                    out.status(
                        "Pinned",
                        format!("{pin} by {}: nothing to download", pin_file.path.display()),
                    );
                    return Ok(exit::OK);
                }
                version = pin.version.clone();
                pick.channel = pick.channel.or(pin.channel);
                pick.family = pick.family.or(pin.family.clone());
                if pick.targets.is_empty() {
                    pick.targets = pin.targets.clone();
                }
            } else {
                pick.channel = pick.channel.or(Some(Channel::Release));
            }
        } else if let Ok(channel) = what.parse::<Channel>() {
            pick.channel = Some(channel);
        } else {
            match what.parse::<Version>() {
                Ok(v) => version = Some(v),
                Err(_) => {
                    return Err(CommandError::NotAVersion {
                        what: what.to_string(),
                    }
                    .into())
                }
            }
        }
        let channel = version.as_ref().map(|v| v.channel()).or(pick.channel);
        let urls = index_urls(channel, pick.index_url.as_deref());
        let families = families_for(
            pick.family.as_deref(),
            &pick.targets,
            Path::new(gpu::KFD_NODES),
        )
        .map_err(tc_err)?;
        let files = installer
            .fetch_index(&urls, &mut progress::events(out))
            .map_err(tc_err)?;
        let selector = Selector {
            platform: dist::host_platform().to_string(),
            families,
            version,
            channel: pick.channel,
        };
        let file = selector.select(&files).ok_or_else(|| {
            tc_err(rocm_toolchains::Error::NoMatchingBuild {
                wanted: selector.describe(),
                indexes: urls.join(", "),
            })
        })?;
        if a.dry_run {
            let name = a
                .name
                .clone()
                .unwrap_or_else(|| file.default_toolchain_name());
            return dry_run(out, &a.format, &file.url, Some(&name));
        }
        installer
            .install_dist(file, &options, &mut progress::events(out))
            .map_err(tc_err)?
    };
    finish_install(installer, &report, &a, out)
}

fn finish_install(
    installer: &Installer,
    report: &InstallReport,
    a: &InstallArgs,
    out: &Output,
) -> anyhow::Result<u8> {
    let word = if report.unchanged {
        "Unchanged"
    } else {
        "Installed"
    };
    out.status(word, describe_install(report));
    if a.default {
        installer
            .set_default(Some(&report.installed.name), &mut progress::events(out))
            .map_err(tc_err)?;
        out.status(
            "Default",
            format!("toolchain is now `{}`", report.installed.name),
        );
    }
    if a.format.json() {
        show::json(out, report)?;
    }
    Ok(exit::OK)
}

fn install_system(installer: &Installer, a: &InstallArgs, out: &Output) -> anyhow::Result<u8> {
    let plan = SystemPlan::detect(a.yes).map_err(tc_err)?;
    let name = a.name.clone().unwrap_or_else(|| "system".to_string());
    if a.dry_run {
        if a.format.json() {
            show::json(out, &plan)?;
        } else {
            show::line(out, &plan.command_line());
            out.status(
                "Would link",
                format!(
                    "`{name}` to {} after the packages are installed",
                    plan.prefix.display()
                ),
            );
        }
        if plan.privilege == rocm_toolchains::system::Privilege::None {
            out.warn("this process is not root and has no sudo: run the command as root");
        }
        return Ok(exit::OK);
    }
    out.status("Running", plan.command_line());
    plan.run().map_err(tc_err)?;
    let report = installer
        .link(&name, &plan.prefix, a.force, &mut progress::events(out))
        .map_err(tc_err)?;
    finish_install(installer, &report, a, out)
}

fn dry_run(out: &Output, format: &FormatArgs, url: &str, name: Option<&str>) -> anyhow::Result<u8> {
    if format.json() {
        show::json(out, &serde_json::json!({ "download": url, "name": name }))?;
    } else {
        show::line(out, url);
        out.status("Would install", name.unwrap_or("(name from the archive)"));
    }
    Ok(exit::OK)
}

fn override_cmd(installer: &Installer, cmd: OverrideCommand, out: &Output) -> anyhow::Result<u8> {
    let cwd = || std::env::current_dir().context("cannot read the current directory");
    match cmd {
        OverrideCommand::Set { name, path } => {
            let dir = path.map_or_else(cwd, Ok)?;
            let dir = installer
                .set_override(&dir, Some(&name), &mut progress::events(out))
                .map_err(tc_err)?;
            out.status("Override", format!("{} uses `{name}`", dir.display()));
        }
        OverrideCommand::Unset { path } => {
            let dir = path.map_or_else(cwd, Ok)?;
            let dir = installer
                .set_override(&dir, None, &mut progress::events(out))
                .map_err(tc_err)?;
            out.status("Override", format!("removed for {}", dir.display()));
        }
        OverrideCommand::List => {
            let settings = installer.home().settings().map_err(home_err)?;
            for (dir, name) in &settings.overrides {
                show::line(out, &format!("{}\t{name}", dir.display()));
            }
        }
    }
    Ok(exit::OK)
}

/// Where resolution starts: the `--manifest-path` crate's directory, else the current one.
fn start_dir(global: &GlobalArgs) -> anyhow::Result<PathBuf> {
    match &global.manifest_path {
        Some(m) => Ok(m
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf()),
        None => std::env::current_dir().context("cannot read the current directory"),
    }
}

fn looks_like_archive(s: &str) -> bool {
    [".tar.gz", ".tgz", ".tar.xz", ".tar.zst", ".tar"]
        .iter()
        .any(|x| s.ends_with(x))
}

fn describe_install(r: &InstallReport) -> String {
    let mut s = r.installed.name.clone();
    if let Some(v) = &r.toolchain.version {
        s += &format!(" (ROCm {v})");
    }
    s + &format!(" at {}", r.toolchain.root.display())
}

/// A library error; its kind decides the exit code ([`CommandError::process_exit_code`]).
fn tc_err(e: rocm_toolchains::Error) -> anyhow::Error {
    CommandError::Toolchain(e).into()
}

fn home_err(e: home::HomeError) -> anyhow::Error {
    CommandError::Home(e).into()
}
