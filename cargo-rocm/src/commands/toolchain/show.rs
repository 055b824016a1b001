//! Printing toolchains: tables for people, JSON for programs (`--message-format json`).

use std::io::Write;

use rocm_toolchains::auto::{families_for, index_urls};
use rocm_toolchains::dist::{self, Selector};
use rocm_toolchains::{gpu, Installer};
use rocm_toolkit::home::{InstallKind, Resolved};
use serde::Serialize;

use super::{home_err, progress, tc_err, PickArgs};
use crate::cli::FormatArgs;
use crate::exit;
use crate::output::Output;

/// One line of data on stdout.
pub fn line(out: &Output, text: &str) {
    let _ = writeln!(out.stdout(), "{text}");
}

/// A JSON document on stdout.
pub fn json(out: &Output, value: &impl Serialize) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    line(out, &text);
    Ok(())
}

#[derive(Serialize)]
struct InstalledRow {
    name: String,
    kind: InstallKind,
    default: bool,
    root: std::path::PathBuf,
    version: Option<String>,
    family: Option<String>,
    channel: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    archive: Option<rocm_toolkit::home::ArchiveRecord>,
    /// Why the toolchain cannot be used, if it cannot (its link target vanished, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
}

/// `toolchain list`.
pub fn installed(installer: &Installer, format: FormatArgs, out: &Output) -> anyhow::Result<u8> {
    let home = installer.home();
    let default = home.settings().map_err(home_err)?.default;
    let rows: Vec<InstalledRow> = home
        .installed()
        .map_err(home_err)?
        .into_iter()
        .map(|i| {
            let inspected = home.toolchain(&i);
            let dist = i.metadata.dist.as_ref();
            InstalledRow {
                default: default.as_deref() == Some(i.name.as_str()),
                kind: i.metadata.kind,
                root: i.root(),
                version: inspected
                    .as_ref()
                    .ok()
                    .and_then(|t| t.version.clone())
                    .or_else(|| dist.map(|d| d.version.to_string())),
                family: dist.map(|d| d.family.clone()),
                channel: dist.map(|d| d.channel.to_string()),
                archive: i.metadata.archive.clone(),
                problem: inspected.err().map(|e| e.to_string()),
                name: i.name,
            }
        })
        .collect();
    if format.json() {
        json(out, &rows)?;
        return Ok(exit::OK);
    }
    if rows.is_empty() {
        out.status(
            "Empty",
            format!(
                "no toolchains in {}; install one with `cargo rocm toolchain install`",
                home.root().display()
            ),
        );
        return Ok(exit::OK);
    }
    for r in rows {
        let mut text = r.name.clone();
        if r.default {
            text += " (default)";
        }
        let detail = [r.version.clone(), r.family.clone()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ");
        text += &format!("\t{detail}\t{}", r.root.display());
        if let Some(p) = &r.problem {
            text += &format!("\t[broken: {p}]");
        }
        line(out, &text);
    }
    Ok(exit::OK)
}

#[derive(Serialize)]
struct AvailableRow<'a> {
    #[serde(flatten)]
    file: &'a dist::DistFile,
    installed: bool,
}

/// `toolchain list --available`.
pub fn available(
    installer: &Installer,
    pick: PickArgs,
    format: FormatArgs,
    out: &Output,
) -> anyhow::Result<u8> {
    let urls = index_urls(pick.channel, pick.index_url.as_deref());
    let files = installer
        .fetch_index(&urls, &mut progress::events(out))
        .map_err(tc_err)?;
    let families = if pick.family.is_some() || !pick.targets.is_empty() {
        families_for(
            pick.family.as_deref(),
            &pick.targets,
            std::path::Path::new(gpu::KFD_NODES),
        )
        .map_err(tc_err)?
    } else {
        Vec::new() // list every family unless asked to narrow
    };
    let selector = Selector {
        platform: dist::host_platform().to_string(),
        families,
        version: None,
        channel: pick.channel,
    };
    let installed: Vec<_> = installer
        .home()
        .installed()
        .map_err(home_err)?
        .into_iter()
        .filter_map(|i| i.metadata.dist)
        .collect();
    let rows: Vec<AvailableRow> = files
        .iter()
        .filter(|f| selector.accepts(f))
        .map(|f| AvailableRow {
            installed: installed.contains(&f.dist_info()),
            file: f,
        })
        .collect();
    if format.json() {
        json(out, &rows)?;
    } else {
        for r in &rows {
            line(
                out,
                &format!(
                    "{}\t{}\t{}\t{}{}",
                    r.file.version,
                    r.file.channel,
                    r.file.family,
                    r.file.file_name,
                    if r.installed { "\t(installed)" } else { "" }
                ),
            );
        }
        if rows.is_empty() {
            out.warn(format!(
                "no builds for {} in {}",
                selector.describe(),
                urls.join(", ")
            ));
        }
    }
    Ok(exit::OK)
}

/// `toolchain which`.
pub fn which(resolved: &Resolved, format: FormatArgs, out: &Output) -> anyhow::Result<u8> {
    if format.json() {
        json(out, resolved)?;
    } else {
        let t = &resolved.toolchain;
        line(out, &format!("{}\t{}", t.name, t.root.display()));
        out.status("Toolchain", format!("{} ({})", t.name, resolved.reason));
    }
    Ok(exit::OK)
}
