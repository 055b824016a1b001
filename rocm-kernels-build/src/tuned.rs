//! [`Build::compile_tuned`]: the variants of a tunable kernel that a wisdom file names
//! (`cargo rocm tune` writes it; see `rocm_kernels_core::wisdom`), each compiled like any other
//! library with its compile-time parameters as definitions, and the table the runtime chooses
//! from (`rocm_kernels::tuning`), written as static data to `$OUT_DIR/<kernel>.tuned.rs`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rocm_kernels_core::wisdom::{ParamValue, Wisdom};

use crate::{Build, BuildError, Compiled};

/// What [`Build::try_compile_tuned`] produced.
#[derive(Debug, Clone)]
pub struct TunedCompiled {
    /// `$OUT_DIR/<kernel>.tuned.rs`.
    pub rust_file: PathBuf,
    /// One library per distinct set of compile-time parameters, in the order of the table.
    pub variants: Vec<Compiled>,
    /// Wisdom entries for the kernel.
    pub entries: usize,
}

impl Build {
    /// Compiles the variants of `kernel` that the wisdom file `wisdom` (relative to the crate
    /// root; a missing file is an empty wisdom) names, and writes `$OUT_DIR/<kernel>.tuned.rs`
    /// for `rocm_kernels::include_tuned!(kernel)`. Each variant is this builder's sources
    /// compiled with the variant's definitions added (and without the cpu race variant: tuned
    /// builds are for running fast, the crate's ordinary build is the one tests race-check).
    /// Panics with the error's text on failure, as a build script should.
    ///
    /// ```no_run
    /// // build.rs
    /// rocm_kernels_build::Build::new()
    ///     .file("kernels/matmul.hip")
    ///     .compile_tuned("matmul", "tune/wisdom.json");
    /// ```
    pub fn compile_tuned(&self, kernel: &str, wisdom: impl AsRef<Path>) {
        if let Err(e) = self.try_compile_tuned(kernel, wisdom) {
            panic!("\n\nrocm-kernels: {e}\n\n");
        }
    }

    /// [`compile_tuned`](Self::compile_tuned), returning errors.
    pub fn try_compile_tuned(
        &self,
        kernel: &str,
        wisdom: impl AsRef<Path>,
    ) -> Result<TunedCompiled, BuildError> {
        let crate_root = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let path = crate_root.join(wisdom.as_ref());
        if self.cargo_metadata {
            // A missing file would make cargo rerun the script on every build: watch the
            // nearest folder that exists instead (creating the file changes it).
            let watched = path
                .ancestors()
                .find(|p| p.exists())
                .unwrap_or(&crate_root)
                .to_path_buf();
            println!("cargo:rerun-if-changed={}", watched.display());
        }
        let loaded = Wisdom::load(&path).map_err(|e| BuildError::config(e.to_string()))?;
        let known = loaded.kernels.get(kernel).cloned().unwrap_or_default();

        // One variant per distinct set of definitions, in a stable order.
        let mut define_sets: Vec<BTreeMap<String, String>> = Vec::new();
        let mut entry_variant = Vec::new();
        for e in &known.entries {
            let defines: BTreeMap<String, String> = known
                .defines
                .iter()
                .map(|d| {
                    let v = e.config.get(d).ok_or_else(|| {
                        BuildError::config(format!(
                            "the wisdom file {} has an entry of `{kernel}` without a value for \
                             its compile-time parameter `{d}`; run `cargo rocm tune` again",
                            path.display()
                        ))
                    })?;
                    Ok((d.clone(), v.define_text()))
                })
                .collect::<Result<_, BuildError>>()?;
            let i = match define_sets.iter().position(|s| *s == defines) {
                Some(i) => i,
                None => {
                    define_sets.push(defines);
                    define_sets.len() - 1
                }
            };
            entry_variant.push(i);
        }
        let mut variants = Vec::new();
        for (i, defines) in define_sets.iter().enumerate() {
            let mut b = self.clone();
            b.cpu_race_variant(false);
            for (name, value) in defines {
                b.define(name, Some(value.as_str()));
            }
            variants.push(b.try_compile(&variant_name(kernel, i))?);
        }

        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or_else(|| BuildError::config("OUT_DIR is not set: call from build.rs"))?,
        };
        let rust_file = out_dir.join(format!("{kernel}.tuned.rs"));
        let files: Vec<PathBuf> = variants.iter().map(|c| c.rust_file.clone()).collect();
        let text = render(
            kernel,
            &known.defines,
            &known.entries,
            &entry_variant,
            &define_sets,
            &files,
        );
        if std::fs::read_to_string(&rust_file).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&rust_file, text)
                .map_err(|e| BuildError::io("cannot write", &rust_file, e))?;
        }
        Ok(TunedCompiled {
            rust_file,
            variants,
            entries: known.entries.len(),
        })
    }
}

fn variant_name(kernel: &str, i: usize) -> String {
    let clean: String = kernel
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{clean}__tuned{i}")
}

const K: &str = "::rocm_kernels::tuning";

fn param(v: &ParamValue) -> String {
    match v {
        ParamValue::Int(i) => format!("{K}::Param::Int({i})"),
        ParamValue::Float(f) => format!("{K}::Param::Float({f:?})"),
        ParamValue::Bool(b) => format!("{K}::Param::Bool({b})"),
        ParamValue::Str(s) => format!("{K}::Param::Str({s:?})"),
    }
}

fn render(
    kernel: &str,
    defines: &[String],
    entries: &[rocm_kernels_core::wisdom::WisdomEntry],
    entry_variant: &[usize],
    define_sets: &[BTreeMap<String, String>],
    files: &[PathBuf],
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// @generated by rocm_kernels_build::Build::compile_tuned({kernel:?}, ..); do not edit.\n\
         // Use it with `rocm_kernels::include_tuned!({kernel:?})`.\n\n\
         /// The tuned configurations of `{kernel}` and the variants they run.\n\
         pub static TUNED: {K}::TunedKernel = {K}::TunedKernel {{\n    kernel: {kernel:?},\n    defines: &{defines:?},\n    entries: &["
    );
    for (e, v) in entries.iter().zip(entry_variant) {
        let problem: Vec<String> = e
            .problem
            .iter()
            .map(|(n, x)| format!("({n:?}, {x})"))
            .collect();
        let config: Vec<String> = e
            .config
            .iter()
            .map(|(n, x)| format!("({n:?}, {})", param(x)))
            .collect();
        let _ = writeln!(
            s,
            "        {K}::TunedEntry {{\n            backend: ::rocm_kernels::Backend::{:?},\n            arch: {:?},\n            device: {:?},\n            wave_size: {},\n            problem: &[{}],\n            config: &[{}],\n            variant: {v},\n            time_ms: {:?},\n            default_time_ms: {:?},\n        }},",
            e.backend,
            e.arch,
            e.device,
            e.wave_size,
            problem.join(", "),
            config.join(", "),
            e.time_ms,
            e.default_time_ms
        );
    }
    s.push_str("    ],\n    variants: &[\n");
    for (i, (d, file)) in define_sets.iter().zip(files).enumerate() {
        let defs: Vec<String> = d.iter().map(|(n, x)| format!("({n:?}, {x:?})")).collect();
        let _ = writeln!(
            s,
            "        {K}::Variant {{\n            defines: &[{}],\n            library: {{\n                mod v{i} {{\n                    include!({:?});\n                }}\n                &v{i}::KERNELS\n            }},\n        }},",
            defs.join(", "),
            file.display().to_string()
        );
    }
    s.push_str("    ],\n};\n");
    s
}
