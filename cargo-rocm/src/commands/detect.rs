//! `cargo rocm detect`: the compute devices of this machine, as a table or JSON.

use std::io::Write;

use rocm_kernels_core::Backend;
use rocm_toolkit::detect::{detect, format_bytes, Detection, Device};

use crate::cli::{FormatArgs, GlobalArgs};
use crate::output::Output;

#[derive(Debug, clap::Args)]
pub struct DetectArgs {
    #[command(flatten)]
    pub format: FormatArgs,
}

pub fn run(_global: &GlobalArgs, args: DetectArgs, out: &Output) -> anyhow::Result<u8> {
    let found = detect();
    out.verbose(format_args!(
        "read KFD sysfs, rocminfo/lspci where needed, nvidia-smi or /proc/driver/nvidia, \
         /proc/cpuinfo: {} device(s)",
        found.devices.len()
    ));
    let mut stdout = out.stdout();
    if args.format.json() {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&found)?)?;
    } else {
        write!(stdout, "{}", table(&found))?;
        for note in &found.notes {
            out.note(note);
        }
    }
    Ok(crate::exit::OK)
}

/// The people's view: one row per device, backends in the order amd, nvidia, cpu.
pub fn table(found: &Detection) -> String {
    let header = [
        "BACKEND", "#", "DEVICE", "ARCH", "UNITS", "WAVE", "LDS", "MEMORY", "SOURCE",
    ];
    let mut rows: Vec<[String; 9]> = Vec::new();
    for backend in [Backend::Amd, Backend::Nvidia, Backend::Cpu] {
        for (index, device) in found.devices_of(backend).enumerate() {
            rows.push(row(index, device));
        }
    }
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    let mut line = |cells: &[String]| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                l.push_str(cell);
            } else {
                l.push_str(&format!("{cell:<w$}  "));
            }
        }
        text.push_str(l.trim_end());
        text.push('\n');
    };
    line(&header.map(String::from));
    for row in &rows {
        line(row);
    }
    if found.devices.iter().any(|d| d.guess) {
        text.push_str("(?: guessed from a PCI ID or product name, not reported by a driver)\n");
    }
    text
}

fn row(index: usize, d: &Device) -> [String; 9] {
    let dash = || "-".to_owned();
    let mut arch = d.arch.clone().unwrap_or_else(dash);
    if d.guess {
        arch.push('?');
    }
    let units = d.compute_units.map(|n| {
        let unit = match d.backend {
            Backend::Amd => "CU",
            Backend::Nvidia => "SM",
            Backend::Cpu => "cores",
        };
        format!("{n} {unit}")
    });
    let waves: Vec<String> = d.wave_sizes.iter().map(u32::to_string).collect();
    [
        d.backend.to_string(),
        index.to_string(),
        d.name.clone(),
        arch,
        units.unwrap_or_else(dash),
        if waves.is_empty() {
            dash()
        } else {
            waves.join(",")
        },
        d.lds_bytes.map(format_bytes).unwrap_or_else(dash),
        d.memory_bytes.map(format_bytes).unwrap_or_else(dash),
        d.source.to_string(),
    ]
}
