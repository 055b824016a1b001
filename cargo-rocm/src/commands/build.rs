//! `cargo rocm build`: `cargo build`, then a per-kernel, per-target table of register, LDS and
//! scratch use read from the code objects each build script compiled (the manifests it wrote at
//! `$OUT_DIR/rocm-kernels/<name>.manifest.json`), with warnings for spills and scratch.

pub(crate) mod report;

use std::io::Write;
use std::process::Command;

use rocm_kernels_core::manifest::BuildManifest;

use crate::cargo_flags::{CargoFlags, Packages};
use crate::cli::{FormatArgs, GlobalArgs};
use crate::exit::{self, CommandError};
use crate::harness;
use crate::output::Output;

#[derive(Debug, clap::Args)]
#[command(after_help = "Arguments after `--` are passed to `cargo build` unchanged.")]
pub struct BuildArgs {
    #[command(flatten)]
    pub cargo: CargoFlags,

    #[command(flatten)]
    pub format: FormatArgs,

    /// Extra arguments for `cargo build`
    #[arg(last = true, value_name = "CARGO_ARGS")]
    pub cargo_args: Vec<String>,
}

/// The `cargo build` command line for these arguments.
fn cargo_command(global: &GlobalArgs, args: &BuildArgs) -> Command {
    let mut cmd = Command::new(harness::cargo());
    cmd.args(["build", "--message-format", "json-render-diagnostics"])
        .args(args.cargo.cargo_args(global, Packages::AsGiven))
        .args(&args.cargo_args);
    cmd
}

pub fn run(global: &GlobalArgs, args: BuildArgs, out: &Output) -> anyhow::Result<u8> {
    let mut cmd = cargo_command(global, &args);
    // The selected toolchain's environment (ROCM_PATH, HIP_PATH, PATH, ...), so build scripts
    // compile with it. No toolchain is not an error here: the cpu backend needs none.
    match crate::selection::select_toolchain(global, None, out) {
        Ok(toolchain) => {
            out.verbose(format_args!(
                "toolchain {} at {}",
                toolchain.name,
                toolchain.root.display()
            ));
            toolchain.env_vars().apply(&mut cmd);
        }
        Err(e) => out.verbose(format_args!("no ROCm toolchain for this build: {e:#}")),
    }
    let cargo_report = harness::build_executables(cmd, "`cargo build`", out)?;

    let mut libraries = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for script in &cargo_report.build_scripts {
        if !seen.insert(script.out_dir.clone()) {
            continue;
        }
        let manifests = BuildManifest::find_in(&script.out_dir)
            .map_err(|e| CommandError::BadInput(e.to_string()))?;
        let package = harness::cargo_json::package_name(&script.package_id);
        for (path, manifest) in manifests {
            let lib = report::library_report(&package, &path, &manifest)
                .map_err(|e| CommandError::BadInput(e.to_string()))?;
            libraries.push(lib);
        }
    }

    let warnings: Vec<String> = libraries
        .iter()
        .flat_map(|l| {
            let amd = l.kernels.iter().filter_map(report::KernelRow::warning);
            amd.chain(
                l.nvidia_kernels
                    .iter()
                    .filter_map(report::NvidiaRow::warning),
            )
        })
        .collect();
    let mut stdout = out.stdout();
    if args.format.json() {
        let doc = serde_json::json!({ "libraries": libraries, "warnings": warnings });
        writeln!(stdout, "{doc}")?;
    } else if libraries.is_empty() {
        out.status(
            "Finished",
            "no kernel libraries in this build (no build script wrote $OUT_DIR/rocm-kernels/*.manifest.json)",
        );
    } else {
        for lib in &libraries {
            write!(stdout, "{}", report::render(lib))?;
        }
    }
    for w in &warnings {
        out.warn(w);
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        global: GlobalArgs,
        #[command(flatten)]
        args: BuildArgs,
    }

    #[test]
    fn forwards_cargo_options_and_trailing_args() {
        let w = Wrapper::parse_from([
            "x",
            "-p",
            "demo",
            "--release",
            "--features",
            "a,b",
            "--target-dir",
            "/t",
            "--manifest-path",
            "/w/Cargo.toml",
            "--",
            "--locked",
        ]);
        let cmd = cargo_command(&w.global, &w.args);
        let args: Vec<_> = cmd.get_args().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(
            args,
            [
                "build",
                "--message-format",
                "json-render-diagnostics",
                "--manifest-path",
                "/w/Cargo.toml",
                "--package",
                "demo",
                "--features",
                "a,b",
                "--release",
                "--target-dir",
                "/t",
                "--locked",
            ]
        );
    }
}
