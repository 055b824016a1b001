//! The `amd` backend: one clang offload bundle per source file, covering every gfx target,
//! compiled by a ROCm toolchain's clang++ (`-x hip --cuda-device-only`) or `hipcc --genco`, then
//! split into one AMDGPU ELF per target (compressed bundles decompressed), each with its kernels
//! read from the metadata: the runtime loads an ELF and looks its kernels up by symbol, with no
//! bundle reader, decompressor or ELF symbol table of its own.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::cache::{self, Hasher, ProbeCache, Record};
use crate::contract::ParamGen;
use crate::error::{BuildError, CompileFailure};
use crate::settings::processor;
use crate::source::SourceFile;
use crate::toolchain_cache::{CompilerInfo, ToolchainInfo};
use crate::{CompileOptions, ObjectKernel, ObjectOut};
use rocm_cpu_frontend::diagnostics;
use rocm_kernels_core::Backend;
use rocm_kernels_core::ObjectFormat;
use rocm_toolkit::toolchain::CompilerKind;

/// What `hipcc` reads from the environment; part of the cache key when hipcc compiles.
pub(crate) const HIPCC_ENV: [&str; 6] = [
    "HIP_PLATFORM",
    "HIP_CLANG_PATH",
    "HIP_DEVICE_LIB_PATH",
    "HIP_PATH",
    "ROCM_PATH",
    "HIPCC_COMPILE_FLAGS_APPEND",
];

/// Everything needed to compile any source for the `amd` backend.
#[derive(Debug)]
pub(crate) struct AmdCompiler {
    pub compiler: CompilerInfo,
    /// `--version` first line (from the version cache).
    pub version: String,
    pub toolchain: ToolchainInfo,
    pub targets: Vec<String>,
    /// Environment variables that change the compiler's output, with their values.
    pub env: Vec<(String, String)>,
}

/// Fails when a target is not covered by the toolchain's device libraries (e.g. gfx942 on
/// ROCm 5.2), naming what the toolchain does cover.
pub(crate) fn check_targets(
    toolchain: &ToolchainInfo,
    targets: &[String],
) -> Result<(), BuildError> {
    if toolchain.device_lib_targets.is_empty() {
        // Unknown coverage: let the compiler decide (its error is translated below).
        return Ok(());
    }
    for t in targets {
        let p = processor(t);
        if !toolchain.device_lib_targets.iter().any(|c| c == p) {
            return Err(unsupported(toolchain, p));
        }
    }
    Ok(())
}

fn unsupported(toolchain: &ToolchainInfo, target: &str) -> BuildError {
    let name = describe_toolchain(toolchain);
    let covered = if toolchain.device_lib_targets.is_empty() {
        "an unknown set of targets".to_string()
    } else {
        toolchain.device_lib_targets.join(", ")
    };
    BuildError::UnsupportedTarget {
        target: target.to_string(),
        toolchain: name,
        covered,
    }
}

/// Fails when `compiler` lacks a program it runs (`clang-offload-bundler`, `ld.lld`), naming
/// what is missing and the package that provides it.
pub(crate) fn check_complete(
    toolchain: &ToolchainInfo,
    compiler: &CompilerInfo,
) -> Result<(), BuildError> {
    if compiler.missing.is_empty() {
        return Ok(());
    }
    Err(BuildError::IncompleteCompiler {
        toolchain: describe_toolchain(toolchain),
        details: format!(
            "{}: {}",
            compiler.path.display(),
            compiler
                .missing
                .iter()
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        fix: fixes(std::slice::from_ref(compiler)),
    })
}

/// The first complete compiler of `toolchain` (they are in order of preference), or why none is.
pub(crate) fn choose_compiler(toolchain: &ToolchainInfo) -> Result<CompilerInfo, BuildError> {
    if let Some(c) = toolchain.compilers.iter().find(|c| c.missing.is_empty()) {
        return Ok(c.clone());
    }
    if toolchain.compilers.is_empty() {
        return Err(BuildError::ToolchainNotFound {
            searched: format!(
                "the toolchain at {} has no HIP compiler",
                toolchain.root.display()
            ),
        });
    }
    let details: Vec<String> = toolchain
        .compilers
        .iter()
        .map(|c| {
            format!(
                "  {}: {}",
                c.path.display(),
                c.missing
                    .iter()
                    .map(|m| m.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    Err(BuildError::IncompleteCompiler {
        toolchain: describe_toolchain(toolchain),
        details: format!(
            "every HIP compiler lacks a program it runs:\n{}",
            details.join("\n")
        ),
        fix: fixes(&toolchain.compilers),
    })
}

/// One line that installs what the compilers lack: the Debian/Ubuntu packages where known.
fn fixes(compilers: &[CompilerInfo]) -> String {
    let mut packages: Vec<&str> = Vec::new();
    let mut other: Vec<String> = Vec::new();
    for m in compilers.iter().flat_map(|c| &c.missing) {
        match &m.package {
            Some(p) if !packages.contains(&p.as_str()) => packages.push(p),
            Some(_) => {}
            None => other.push(m.fix()),
        }
    }
    let mut parts = Vec::new();
    if !packages.is_empty() {
        parts.push(format!("sudo apt-get install {}", packages.join(" ")));
    }
    parts.extend(other);
    parts.join("; or ")
}

fn describe_toolchain(toolchain: &ToolchainInfo) -> String {
    match &toolchain.version {
        Some(v) => format!(
            "{} (ROCm {v}) at {}",
            toolchain.name,
            toolchain.root.display()
        ),
        None => format!("{} at {}", toolchain.name, toolchain.root.display()),
    }
}

/// Runs `compiler --version` and keeps its first line.
pub(crate) fn query_version(compiler: &Path) -> Result<String, BuildError> {
    let out = Command::new(compiler)
        .arg("--version")
        .output()
        .map_err(|e| BuildError::CompilerSpawn {
            program: compiler.display().to_string(),
            source: e,
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    // hipcc prints `HIP version: ...` first and the clang line second: keep both lines that say
    // "version" so either changing invalidates the cache.
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.to_ascii_lowercase().contains("version"))
        .collect();
    if !out.status.success() || lines.is_empty() {
        return Err(BuildError::CompileFailed(Box::new(CompileFailure {
            backend: Backend::Amd,
            source_file: "(none)".into(),
            targets: String::new(),
            status: out.status.to_string(),
            command: format!("{} --version", compiler.display()),
            output: format!("{text}{}", String::from_utf8_lossy(&out.stderr)),
            diagnostics: Vec::new(),
        })));
    }
    Ok(lines.join(" | "))
}

impl AmdCompiler {
    pub(crate) fn new(
        toolchain: ToolchainInfo,
        compiler: CompilerInfo,
        targets: Vec<String>,
        version_cache: &Path,
        env: Vec<(String, String)>,
    ) -> Result<AmdCompiler, BuildError> {
        let version = ProbeCache::get_or_run(version_cache, &compiler.path, "version", || {
            query_version(&compiler.path).map(|v| (v, Vec::new()))
        })?;
        Ok(AmdCompiler {
            compiler,
            version,
            toolchain,
            targets,
            env,
        })
    }

    /// The compiler arguments except output and depfile paths (those go in [`Self::command`]).
    pub(crate) fn args(&self, source_arg: &str, opts: &CompileOptions) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        match self.compiler.kind() {
            CompilerKind::Clang => {
                a.extend(["-x", "hip", "--cuda-device-only"].map(String::from));
                for t in &self.targets {
                    a.push(format!("--offload-arch={t}"));
                }
                a.push(format!("--rocm-path={}", self.toolchain.root.display()));
                if let Some(d) = &self.toolchain.device_lib_path {
                    a.push(format!("--rocm-device-lib-path={}", d.display()));
                }
            }
            CompilerKind::Hipcc => {
                a.push("--genco".into());
                for t in &self.targets {
                    a.push(format!("--offload-arch={t}"));
                }
            }
        }
        // Parameter names in the AMDGPU metadata, for the kernels table (no effect on code).
        a.push("-fhip-kernel-arg-name".into());
        a.push(format!("-O{}", opts.opt_level));
        for i in &opts.includes {
            a.push(format!("-I{}", i.display()));
        }
        for (k, v) in &opts.defines {
            a.push(match v {
                Some(v) => format!("-D{k}={v}"),
                None => format!("-D{k}"),
            });
        }
        a.extend(opts.flags.iter().cloned());
        a.push(source_arg.to_string());
        a
    }

    /// Compiles one source into `dir` (or reuses the bundle there when nothing it depends on
    /// changed) and splits it into one object per target.
    pub(crate) fn compile(
        &self,
        src: &SourceFile,
        dir: &Path,
        crate_root: &Path,
        opts: &CompileOptions,
        hasher: &Hasher,
    ) -> Result<Vec<ObjectOut>, BuildError> {
        let stem = src.output_stem();
        let out = dir.join(format!("{stem}.hipfb"));
        let depfile = dir.join(format!("{stem}.d"));
        let record_path = dir.join(format!("{stem}.cache.json"));
        // Inside the crate the compiler gets the crate-relative path (run from the crate root),
        // so its diagnostics name files the way the user sees them.
        let source_arg = if src.abs.starts_with(crate_root) {
            src.rel.clone()
        } else {
            src.abs.display().to_string()
        };
        let args = self.args(&source_arg, opts);
        let fingerprint =
            cache::command_fingerprint(&self.compiler.path, &self.version, &args, &self.env);

        if let Some(mut rec) = Record::load(&record_path) {
            if let Some(restat) = rec.freshness(&fingerprint, &out, hasher) {
                if restat {
                    // Keep the new stats so touched-but-unchanged files are not hashed again.
                    let _ = rec.store(&record_path);
                }
                return self.split(src, &out, &rec, true, Vec::new(), 0);
            }
        }
        let _ = std::fs::remove_file(&record_path);

        let mut cmd = Command::new(&self.compiler.path);
        cmd.current_dir(crate_root)
            .args(&args[..args.len() - 1])
            .arg("-MD")
            .arg("-MF")
            .arg(&depfile)
            .arg("-o")
            .arg(&out)
            .arg(&source_arg);
        let command_line = render_command(&cmd);
        let started = Instant::now();
        let output = cmd.output().map_err(|e| BuildError::CompilerSpawn {
            program: self.compiler.path.display().to_string(),
            source: e,
        })?;
        let millis = started.elapsed().as_millis() as u64;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        if !output.status.success() {
            return Err(self.failure(src, &output.status.to_string(), command_line, text));
        }
        let deptext = std::fs::read_to_string(&depfile)
            .map_err(|e| BuildError::io("the compiler wrote no depfile at", &depfile, e))?;
        let mut inputs = cache::parse_depfile(&deptext, crate_root);
        if !inputs.contains(&src.abs) {
            inputs.insert(0, src.abs.clone());
        }
        // The crate's files and its include folders are compared by content; toolchain and
        // system headers by stat (see `cache::Dep`).
        let by_content = |p: &Path| {
            p == src.abs
                || p.starts_with(crate_root)
                || opts.includes.iter().any(|i| p.starts_with(i))
        };
        let rec = Record::after_compile(fingerprint, &inputs, &out, hasher, &by_content)?;
        rec.store(&record_path)?;
        self.split(src, &out, &rec, false, diagnostics::warnings(&text), millis)
    }

    /// The bundle at `bundle` as one AMDGPU ELF per target (`<bundle stem>.<target>.co`, written
    /// only when changed so cargo sees no new files), each with the kernels its metadata lists.
    fn split(
        &self,
        src: &SourceFile,
        bundle: &Path,
        rec: &Record,
        fresh: bool,
        warnings: Vec<String>,
        millis: u64,
    ) -> Result<Vec<ObjectOut>, BuildError> {
        let unreadable = |e: &dyn std::fmt::Display| BuildError::Backend {
            backend: Backend::Amd,
            message: format!(
                "the compiler wrote `{}` for `{}`, but its code object cannot be read: {e}",
                bundle.display(),
                src.rel
            ),
        };
        let bytes = std::fs::read(bundle)
            .map_err(|e| BuildError::io("cannot read code object", bundle, e))?;
        let objects = rocm_code_object::target_objects(&bytes).map_err(|e| unreadable(&e))?;
        let mut out = Vec::new();
        for object in objects {
            let target = object.target;
            let safe: String = target
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            let path = bundle.with_extension(format!("{safe}.co"));
            write_if_changed(&path, &object.elf)?;
            let kernels = object
                .kernels
                .into_iter()
                .map(|k| ObjectKernel {
                    name: rocm_code_object::symbols::kernel_name(&k.name),
                    params: k
                        .params()
                        .into_iter()
                        .map(|p| ParamGen {
                            name: p.name,
                            type_name: p.type_name,
                            size: p.size,
                            kind: p.kind,
                        })
                        .collect(),
                    symbol: k.name,
                })
                .collect();
            out.push(ObjectOut {
                backend: Backend::Amd,
                source: src.clone(),
                target,
                format: ObjectFormat::AmdgpuElf,
                path,
                kernels,
                inputs: rec.deps.iter().map(|d| d.path.clone()).collect(),
                fresh,
                warnings: warnings.clone(),
                millis,
            });
        }
        if out.is_empty() {
            return Err(unreadable(&"it holds no AMDGPU code object"));
        }
        // One compile made them all: report its warnings and time once.
        for o in out.iter_mut().skip(1) {
            o.warnings.clear();
            o.millis = 0;
        }
        Ok(out)
    }

    /// Turns a failed compile into an error; a target the compiler or its device libraries do
    /// not know becomes [`BuildError::UnsupportedTarget`].
    fn failure(&self, src: &SourceFile, status: &str, command: String, text: String) -> BuildError {
        for (marker, end) in [
            ("cannot find ROCm device library for ", ';'),
            ("invalid target ID '", '\''),
            ("Unsupported CUDA gpu architecture: ", '\n'),
            ("unsupported HIP gpu architecture: ", '\n'),
        ] {
            if let Some(pos) = text.find(marker) {
                let rest = &text[pos + marker.len()..];
                let target = rest.split([end, '\n']).next().unwrap_or(rest).trim();
                if !target.is_empty() {
                    return unsupported(&self.toolchain, target);
                }
            }
        }
        BuildError::CompileFailed(Box::new(CompileFailure {
            backend: Backend::Amd,
            source_file: src.rel.clone(),
            targets: self.targets.join(","),
            status: status.to_string(),
            command,
            diagnostics: diagnostics::parse(&text),
            output: text,
        }))
    }
}

/// Writes `bytes` unless the file already holds them (keeping its mtime, so cargo rebuilds
/// nothing that `include_bytes!` it).
pub(crate) fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<(), BuildError> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    cache::write_atomic(path, bytes)
}

/// A command line a person can paste into a shell (from the crate root).
pub(crate) fn render_command(cmd: &Command) -> String {
    let mut parts = Vec::new();
    if let Some(dir) = cmd.get_current_dir() {
        parts.push(format!("cd {} &&", shell_quote(&dir.display().to_string())));
    }
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            parts.push(format!(
                "{}={}",
                k.to_string_lossy(),
                shell_quote(&v.to_string_lossy())
            ));
        }
    }
    parts.push(shell_quote(&cmd.get_program().to_string_lossy()));
    parts.extend(cmd.get_args().map(|a| shell_quote(&a.to_string_lossy())));
    parts.join(" ")
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=./,:+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn debian() -> ToolchainInfo {
        ToolchainInfo {
            name: "system".into(),
            root: "/usr".into(),
            version: Some("5.2.3".into()),
            compilers: vec![],
            device_lib_path: Some("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode".into()),
            device_lib_targets: vec!["gfx1030".into(), "gfx90a".into(), "gfx940".into()],
        }
    }

    #[test]
    fn unknown_target_is_explained() {
        check_targets(&debian(), &["gfx90a:xnack-".into(), "gfx1030".into()]).unwrap();
        let e = check_targets(&debian(), &["gfx90a".into(), "gfx942".into()]).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("`gfx942`"), "{msg}");
        assert!(msg.contains("ROCm 5.2.3"), "{msg}");
        assert!(msg.contains("gfx1030, gfx90a, gfx940"), "{msg}");
        assert!(msg.contains("cargo rocm doctor"), "{msg}");
    }

    #[test]
    fn clang_and_hipcc_command_lines() {
        let opts = CompileOptions {
            includes: vec!["/c/include".into()],
            defines: vec![("N".into(), Some("4".into())), ("FAST".into(), None)],
            flags: vec!["-ffast-math".into()],
            opt_level: 3,
        };
        let mut c = AmdCompiler {
            compiler: CompilerInfo {
                hipcc: false,
                path: "/usr/bin/clang++-19".into(),
                missing: vec![],
            },
            version: "clang 19".into(),
            toolchain: debian(),
            targets: vec!["gfx90a".into(), "gfx1030".into()],
            env: vec![],
        };
        assert_eq!(
            c.args("k.hip", &opts).join(" "),
            "-x hip --cuda-device-only --offload-arch=gfx90a --offload-arch=gfx1030 \
             --rocm-path=/usr --rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode \
             -fhip-kernel-arg-name -O3 -I/c/include -DN=4 -DFAST -ffast-math k.hip"
        );
        c.compiler.hipcc = true;
        assert_eq!(
            c.args("k.hip", &opts).join(" "),
            "--genco --offload-arch=gfx90a --offload-arch=gfx1030 -fhip-kernel-arg-name -O3 \
             -I/c/include -DN=4 -DFAST -ffast-math k.hip"
        );
        let msg = c
            .failure(
                &SourceFile::new("/c/k.hip".into(), Path::new("/c")),
                "exit status: 1",
                "cmd".into(),
                "clang: error: invalid target ID 'gfx942'; format is".into(),
            )
            .to_string();
        assert!(msg.contains("target `gfx942` is not supported"), "{msg}");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("-O3"), "-O3");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
