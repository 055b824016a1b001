//! The helper of `scripts/rocm-examples.sh`:
//!
//! - `rocm-examples prepare CHECKOUT CRATE`: turns CRATE, a crate `cargo rocm new` wrote, into
//!   the kernel crate of the ROCm/rocm-examples programs of [`EXAMPLES`] read from CHECKOUT: each
//!   program's device code (host code removed by the rule in `strip.rs`, the rest verified
//!   byte for byte against the original) in `kernels/<name>.hip`, the template instances its
//!   host code launched in `kernels/<name>.instances.hip`, one kernel library per program (kernel
//!   names repeat across programs), `checks.rs` (next to this crate) and one harness per program;
//! - `rocm-examples strip FILE`: prints the device code of one program (what `prepare` writes),
//!   and on stderr what was removed and instantiated;
//! - `rocm-examples table EVENTS...`: the trials of `cargo rocm test`'s (or the harnesses')
//!   events files as a Markdown table, program x kernel x place (`cpu/w32`, `nvidia`); exits 1
//!   when a trial failed or none ran.

mod strip;
mod table;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// An example program of the checkout: its harness and library name, its folder, and how its
/// checks are registered (`checks::NAME(s ARGS)`).
struct Example {
    name: &'static str,
    dir: &'static str,
    args: &'static str,
}

/// The rocm-examples programs that need no library beyond HIP (HIP-Basic and Applications).
const EXAMPLES: &[Example] = &[
    ex("saxpy", "HIP-Basic/saxpy"),
    ex("matrix_multiplication", "HIP-Basic/matrix_multiplication"),
    ex("shared_memory", "HIP-Basic/shared_memory"),
    ex("dynamic_shared", "HIP-Basic/dynamic_shared"),
    ex("warp_shuffle", "HIP-Basic/warp_shuffle"),
    ex("moving_average", "HIP-Basic/moving_average"),
    ex("bit_extract", "HIP-Basic/bit_extract"),
    ex("cooperative_groups", "HIP-Basic/cooperative_groups"),
    ex("hello_world", "HIP-Basic/hello_world"),
    ex("prefix_sum", "Applications/prefix_sum"),
    ex("histogram", "Applications/histogram"),
    ex("bitonic_sort", "Applications/bitonic_sort"),
    ex("floyd_warshall", "Applications/floyd_warshall"),
    Example {
        name: "convolution",
        dir: "Applications/convolution",
        // The program's own mask, read from its source by `prepare`.
        args: ", rocm_examples_check::CONVOLUTION_FILTER_5X5",
    },
];

const fn ex(name: &'static str, dir: &'static str) -> Example {
    Example {
        name,
        dir,
        args: "",
    }
}

/// This repository (the helper lives in `scripts/rocm-examples`).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["prepare", checkout, dest] => prepare(Path::new(checkout), Path::new(dest)),
        ["strip", file] => strip_one(Path::new(file)),
        ["table", ref files @ ..] if !files.is_empty() => {
            return match table::print(files) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("rocm-examples: {e}");
                    ExitCode::from(2)
                }
            }
        }
        _ => Err(
            "usage: rocm-examples prepare CHECKOUT CRATE | strip FILE | table EVENTS.jsonl..."
                .to_owned(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rocm-examples: {e}");
            ExitCode::from(2)
        }
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn strip_one(file: &Path) -> Result<(), String> {
    let source = read(file)?;
    let code = strip::device_code(&source).map_err(|e| format!("{}: {e}", file.display()))?;
    strip::verify(&source, &code.text).map_err(|e| format!("{}: {e}", file.display()))?;
    print!("{}", code.text);
    report(&file.display().to_string(), &code);
    Ok(())
}

/// What was removed and instantiated, on stderr.
fn report(what: &str, code: &strip::DeviceCode) {
    for r in &code.removed {
        eprintln!(
            "{what}: removed {} `{}` (lines {}-{})",
            r.what.label(),
            r.name,
            r.lines.0,
            r.lines.1
        );
    }
    for i in &code.instances {
        eprintln!(
            "{what}: instantiates `{}` (launched at line {} as `{}`)",
            i.name, i.line, i.launched_as
        );
    }
}

/// The `name = ...` dependency line `cargo rocm new` wrote into the crate's manifest.
fn dependency_line<'a>(manifest: &'a str, name: &str) -> Result<&'a str, String> {
    manifest
        .lines()
        .find(|l| {
            l.strip_prefix(name)
                .is_some_and(|r| r.trim_start().starts_with('='))
        })
        .ok_or_else(|| format!("the crate's Cargo.toml has no `{name}` dependency: was it made by `cargo rocm new`?"))
}

/// The numbers of a float array's initialiser in a source: `const ... NAME = {1.0f, -2.0f};`.
fn float_array(source: &str, name: &str) -> Result<Vec<f32>, String> {
    let start = source
        .find(&format!("{name} ="))
        .ok_or_else(|| format!("no `{name} =` in the source"))?;
    let open = start + source[start..].find('{').ok_or("no `{` after it")?;
    let close = open + source[open..].find('}').ok_or("no `}` after it")?;
    source[open + 1..close]
        .split(',')
        .map(|v| {
            let v = v.trim().trim_end_matches(['f', 'F']);
            v.parse::<f32>()
                .map_err(|e| format!("`{v}` in `{name}` is not a number: {e}"))
        })
        .collect()
}

fn prepare(checkout: &Path, dest: &Path) -> Result<(), String> {
    let repo = repo()
        .canonicalize()
        .map_err(|e| format!("cannot find this repository: {e}"))?;
    let manifest_path = dest.join("Cargo.toml");
    let old = read(&manifest_path)?;
    let deps = ["rocm-kernels", "rocm-test", "rocm-kernels-build"]
        .iter()
        .map(|d| dependency_line(&old, d))
        .collect::<Result<Vec<_>, _>>()?;
    // What `cargo rocm new` wrote that this crate replaces.
    for old in [
        "kernels/kernels.hip",
        "tests/kernels.rs",
        "benches/kernels.rs",
        "src/lib.rs",
    ] {
        let _ = std::fs::remove_file(dest.join(old));
    }
    let _ = std::fs::remove_dir(dest.join("benches"));

    let mut manifest = format!(
        "# Written by scripts/rocm-examples.sh (from the crate `cargo rocm new` made): the device\n\
         # code of ROCm/rocm-examples programs and their checks, one harness per program.\n\
         [package]\nname = \"rocm-examples-check\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
         publish = false\n\n[workspace]\n\n\
         [package.metadata.rocm]\ntargets = [\"gfx90a\"]\nnvidia-targets = [\"sm_90\"]\n\n\
         [dependencies]\n{}\n{}\n\n[build-dependencies]\n{}\n",
        deps[0], deps[1], deps[2]
    );
    let mut build = String::from(
        "//! One kernel library per rocm-examples program (kernel names repeat across them).\n\n\
         fn main() {\n",
    );
    let mut lib = String::from(
        "//! Written by scripts/rocm-examples.sh: the kernel library of each rocm-examples \
         program,\n//! and the checks of scripts/rocm-examples/checks.rs.\n\n\
         pub mod checks;\n\n",
    );
    for e in EXAMPLES {
        let file = checkout.join(e.dir).join("main.hip");
        let source = read(&file)?;
        let code =
            strip::device_code(&source).map_err(|err| format!("{}: {err}", file.display()))?;
        strip::verify(&source, &code.text).map_err(|err| {
            format!(
                "{}: the device code is not the original's: {err}",
                file.display()
            )
        })?;
        report(e.name, &code);
        let hip = format!("{}.hip", e.name);
        write(&dest.join("kernels").join(&hip), &code.text)?;
        let compiled = match code.instances_file(&hip) {
            Some(text) => {
                let f = format!("{}.instances.hip", e.name);
                write(&dest.join("kernels").join(&f), &text)?;
                f
            }
            None => hip,
        };
        build.push_str(&format!(
            "    rocm_kernels_build::Build::new()\n        .file(\"kernels/{compiled}\")\n        \
             .compile(\"{}\");\n",
            e.name
        ));
        lib.push_str(&format!(
            "/// The kernels of {dir}.\npub static {upper}: &rocm_kernels::KernelLibrary =\n    \
             rocm_kernels::include_kernels!(\"{name}\");\n\n",
            dir = e.dir,
            upper = e.name.to_uppercase(),
            name = e.name
        ));
        if e.name == "convolution" {
            let mask = float_array(&source, "convolution_filter_5x5")
                .map_err(|err| format!("{}: {err}", file.display()))?;
            let values: Vec<String> = mask.iter().map(|v| format!("{v:?}")).collect();
            lib.push_str(&format!(
                "/// `convolution_filter_5x5` of {}/main.hip: the mask its host code copies to \
                 `d_mask`.\npub const CONVOLUTION_FILTER_5X5: [f32; {}] = [{}];\n\n",
                e.dir,
                mask.len(),
                values.join(", ")
            ));
        }
        manifest.push_str(&format!(
            "\n[[test]]\nname = \"{}\"\nharness = false\n",
            e.name
        ));
        write(
            &dest.join("tests").join(format!("{}.rs", e.name)),
            &format!(
                "//! The checks of {dir}.\n\n\
                 fn main() -> std::process::ExitCode {{\n    \
                 rocm_test::main(rocm_examples_check::{upper}, |s| {{\n        \
                 rocm_examples_check::checks::{name}(s{args})\n    }})\n}}\n",
                dir = e.dir,
                upper = e.name.to_uppercase(),
                name = e.name,
                args = e.args,
            ),
        )?;
    }
    build.push_str("}\n");
    write(&manifest_path, &manifest)?;
    write(&dest.join("build.rs"), &build)?;
    write(&dest.join("src/lib.rs"), &lib)?;
    write(
        &dest.join("src/checks.rs"),
        &read(&repo.join("scripts/rocm-examples/checks.rs"))?,
    )?;
    // The repository's lock file: the same dependency versions, and no resolution needed.
    write(&dest.join("Cargo.lock"), &read(&repo.join("Cargo.lock"))?)?;
    Ok(())
}
