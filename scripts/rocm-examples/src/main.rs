//! The helper of `scripts/rocm-examples.sh`:
//!
//! - `rocm-examples prepare CHECKOUT CRATE`: writes a kernel crate at CRATE with the device code
//!   of each example of `EXAMPLES` (read from the ROCm/rocm-examples checkout CHECKOUT, host
//!   code removed by the rule in `strip.rs`), the `Common/` headers they include, a build script
//!   compiling one kernel library per example, `checks.rs` (next to this crate) as its library,
//!   and one harness test per example;
//! - `rocm-examples strip FILE`: prints the device code of one program (what `prepare` writes),
//!   and on stderr what was removed and instantiated.

mod strip;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// An example program of the checkout: the test and library name, and its folder.
struct Example {
    name: &'static str,
    dir: &'static str,
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
    ex("convolution", "Applications/convolution"),
];

const fn ex(name: &'static str, dir: &'static str) -> Example {
    Example { name, dir }
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
        _ => Err("usage: rocm-examples prepare CHECKOUT CRATE | strip FILE".to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rocm-examples: {e}");
            ExitCode::FAILURE
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
    let code = strip::device_code(&read(file)?).map_err(|e| format!("{}: {e}", file.display()))?;
    print!("{}", code.text);
    report(&file.display().to_string(), &code);
    Ok(())
}

/// What was removed and instantiated, on stderr.
fn report(what: &str, code: &strip::DeviceCode) {
    let removed: Vec<String> = code
        .removed
        .iter()
        .map(|r| format!("{} ({}-{})", r.name, r.lines.0, r.lines.1))
        .collect();
    eprintln!("{what}: removed host functions {}", removed.join(", "));
    for i in &code.instances {
        eprintln!(
            "{what}: instantiated `{}` (launched at line {} as `{}`)",
            i.name, i.line, i.launched_as
        );
    }
}

/// The quoted includes of a source (`#include "example_utils.hpp"`).
fn quoted_includes(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest.strip_prefix("include")?.trim_start().strip_prefix('"')?;
            Some(rest[..rest.find('"')?].to_owned())
        })
        .collect()
}

fn prepare(checkout: &Path, dest: &Path) -> Result<(), String> {
    let repo = repo()
        .canonicalize()
        .map_err(|e| format!("cannot find this repository: {e}"))?;
    let kernels = dest.join("kernels");
    let mut headers: Vec<String> = Vec::new();
    for e in EXAMPLES {
        let file = checkout.join(e.dir).join("main.hip");
        let source = read(&file)?;
        let code =
            strip::device_code(&source).map_err(|err| format!("{}: {err}", file.display()))?;
        report(e.name, &code);
        write(&kernels.join(e.dir).join("main.hip"), &code.text)?;
        for h in quoted_includes(&source) {
            if !headers.contains(&h) {
                headers.push(h);
            }
        }
    }
    // The headers of the checkout's Common/ the programs include, unchanged.
    for h in &headers {
        let from = checkout.join("Common").join(h);
        if from.is_file() {
            write(&kernels.join("Common").join(h), &read(&from)?)?;
        }
    }

    let dep = |krate: &str| format!("{krate} = {{ path = \"{}/{krate}\" }}", repo.display());
    let mut manifest = format!(
        "# Written by scripts/rocm-examples.sh: the device code of ROCm/rocm-examples programs and\n\
         # their checks. A workspace of its own.\n\
         [package]\nname = \"rocm-examples-kernels\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
         publish = false\n\n[workspace]\n\n\
         [package.metadata.rocm]\ntargets = [\"gfx90a\"]\nnvidia-targets = [\"sm_90\"]\n\n\
         [dependencies]\n{}\n{}\n\n[build-dependencies]\n{}\n",
        dep("rocm-kernels"),
        dep("rocm-test"),
        dep("rocm-kernels-build"),
    );
    let mut build = String::from(
        "//! One kernel library per example (kernel names repeat across examples).\n\n\
         fn main() {\n",
    );
    for e in EXAMPLES {
        manifest.push_str(&format!(
            "\n[[test]]\nname = \"{}\"\nharness = false\n",
            e.name
        ));
        build.push_str(&format!(
            "    rocm_kernels_build::Build::new()\n        .file(\"kernels/{}/main.hip\")\n        \
             .include(\"kernels/Common\")\n        .compile(\"{}\");\n",
            e.dir, e.name
        ));
        write(
            &dest.join("tests").join(format!("{}.rs", e.name)),
            &format!(
                "//! The checks of {dir} (rocm_examples_kernels::{name}, from \
                 scripts/rocm-examples/checks.rs).\n\n\
                 static KERNELS: &rocm_kernels::KernelLibrary = \
                 rocm_kernels::include_kernels!(\"{name}\");\n\n\
                 fn main() -> std::process::ExitCode {{\n    \
                 rocm_test::main(KERNELS, rocm_examples_kernels::{name})\n}}\n",
                dir = e.dir,
                name = e.name
            ),
        )?;
    }
    build.push_str("}\n");
    write(&dest.join("Cargo.toml"), &manifest)?;
    write(&dest.join("build.rs"), &build)?;
    write(
        &dest.join("src/lib.rs"),
        &read(&repo.join("scripts/rocm-examples/checks.rs"))?,
    )?;
    // The repository's lock file: the same dependency versions, and no resolution needed.
    write(&dest.join("Cargo.lock"), &read(&repo.join("Cargo.lock"))?)?;
    Ok(())
}
