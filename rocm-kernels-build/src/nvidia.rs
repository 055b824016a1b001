//! The `nvidia` backend of [`Build`](super::Build): nvcc with the HIP-on-CUDA header compiles each
//! source to a cubin per `sm_XX` target plus PTX for the newest one (so newer GPUs can JIT it).
//! Without nvcc, the source (with its local headers inlined) is embedded for NVRTC to compile at
//! run time. ptxas's per-kernel resource report is kept beside each cubin
//! (`<cubin>.resources.json`) for `cargo rocm build`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::cache::{self, Hasher, Record};
use crate::error::{BuildError, CompileFailure};
use crate::source::SourceFile;
use crate::{CompileOptions, ObjectKernel, ObjectOut};
use rocm_cpu_frontend::diagnostics;
use rocm_kernels_core::Backend;
use rocm_kernels_core::ObjectFormat;
use rocm_toolkit::nvcc::{self, Nvcc, NvccJob};

/// Checks an NVIDIA target: `sm_` + digits, optionally with the arch-specific `a` suffix.
pub(crate) fn validate_target(t: &str) -> Result<(), BuildError> {
    let ok = t
        .strip_prefix("sm_")
        .map(|n| n.strip_suffix('a').unwrap_or(n))
        .is_some_and(|n| n.len() >= 2 && n.chars().all(|c| c.is_ascii_digit()));
    if ok {
        Ok(())
    } else {
        Err(BuildError::config(format!(
            "`{t}` is not an NVIDIA target: expected `sm_` and the compute capability, e.g. sm_90 \
             (H100), sm_80 (A100), sm_89 (L40), sm_90a"
        )))
    }
}

/// `sm_90` → `compute_90` (the PTX virtual architecture of a target).
fn virtual_arch(target: &str) -> String {
    target.replacen("sm_", "compute_", 1)
}

/// The resource report written beside a cubin.
pub fn resources_path(cubin: &Path) -> PathBuf {
    let mut name = cubin.as_os_str().to_owned();
    name.push(".resources.json");
    PathBuf::from(name)
}

#[derive(Debug)]
pub(crate) struct NvidiaCompiler {
    /// `None`: no nvcc here; sources are embedded for NVRTC.
    pub nvcc: Option<Nvcc>,
    pub targets: Vec<String>,
}

impl NvidiaCompiler {
    /// Compile one source: a cubin per target and PTX for the newest target, or the source for
    /// NVRTC when there is no nvcc.
    pub(crate) fn compile(
        &self,
        src: &SourceFile,
        dir: &Path,
        crate_root: &Path,
        opts: &CompileOptions,
        hasher: &Hasher,
    ) -> Result<Vec<ObjectOut>, BuildError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| BuildError::io("cannot create the output folder", dir, e))?;
        let Some(nvcc) = &self.nvcc else {
            return Ok(vec![embed_source(src, dir, opts)?]);
        };
        let mut jobs: Vec<String> = self.targets.clone();
        if let Some(newest) = self.targets.iter().max_by_key(|t| arch_number(t)) {
            jobs.push(virtual_arch(newest.trim_end_matches('a')));
        }
        jobs.iter()
            .map(|arch| self.compile_one(nvcc, src, arch, dir, crate_root, opts, hasher))
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn compile_one(
        &self,
        nvcc: &Nvcc,
        src: &SourceFile,
        arch: &str,
        dir: &Path,
        crate_root: &Path,
        opts: &CompileOptions,
        hasher: &Hasher,
    ) -> Result<ObjectOut, BuildError> {
        let ptx = arch.starts_with("compute_");
        let (format, ext) = if ptx {
            (ObjectFormat::Ptx, "ptx")
        } else {
            (ObjectFormat::Cubin, "cubin")
        };
        let stem = src.output_stem();
        let out = dir.join(format!("{stem}.{arch}.{ext}"));
        let depfile = dir.join(format!("{stem}.{arch}.d"));
        let record_path = dir.join(format!("{stem}.{arch}.cache.json"));
        let job = NvccJob {
            source: &src.abs,
            arch,
            output: &out,
            include_dirs: &opts.includes,
            defines: &opts.defines,
            flags: &opts.flags,
            opt_level: opts.opt_level,
            depfile: Some(&depfile),
        };
        // The fingerprint leaves out the output and depfile paths, like the amd backend's.
        let cmd = nvcc::command(nvcc, &job);
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .filter(|a| *a != out.to_string_lossy() && *a != depfile.to_string_lossy())
            .collect();
        let fingerprint = cache::command_fingerprint(
            &nvcc.path,
            nvcc.version.as_deref().unwrap_or("unknown"),
            &args,
            &[],
        );
        let object = |fresh, inputs, warnings, millis| -> Result<ObjectOut, BuildError> {
            Ok(ObjectOut {
                backend: Backend::Nvidia,
                source: src.clone(),
                target: arch.to_string(),
                format,
                kernels: kernels_of(&out, format)?,
                path: out.clone(),
                inputs,
                fresh,
                warnings,
                millis,
            })
        };
        if let Some(mut rec) = Record::load(&record_path) {
            if let Some(restat) = rec.freshness(&fingerprint, &out, hasher) {
                if restat {
                    let _ = rec.store(&record_path);
                }
                let inputs = rec.deps.iter().map(|d| d.path.clone()).collect();
                return object(true, inputs, Vec::new(), 0);
            }
        }
        let _ = std::fs::remove_file(&record_path);
        let started = Instant::now();
        let result = nvcc::compile(nvcc, &job).map_err(|f| {
            // nvcc says only "At end of source: expected a `}`" of a missing `}`: the front
            // end's check names the bracket left open.
            let unbalanced = rocm_cpu_frontend::unbalanced_bracket(&src.abs, crate_root);
            BuildError::CompileFailed(Box::new(CompileFailure {
                backend: Backend::Nvidia,
                source_file: src.rel.clone(),
                targets: arch.to_string(),
                status: f.status,
                command: f.command,
                // nvcc names the file as it was given (absolute): as the user sees it instead.
                diagnostics: unbalanced
                    .into_iter()
                    .chain(diagnostics::parse(&f.output).into_iter().map(|mut d| {
                        d.file = crate::source::display_name(Path::new(&d.file), crate_root);
                        d
                    }))
                    .collect(),
                output: f.output,
            }))
        })?;
        let millis = started.elapsed().as_millis() as u64;
        if !ptx {
            let report = serde_json::to_string_pretty(&result.resources).expect("serializes");
            cache::write_atomic(&resources_path(&out), report.as_bytes())?;
        }
        let deptext = std::fs::read_to_string(&depfile)
            .map_err(|e| BuildError::io("nvcc wrote no depfile at", &depfile, e))?;
        let mut inputs = cache::parse_depfile(&deptext, crate_root);
        if !inputs.contains(&src.abs) {
            inputs.insert(0, src.abs.clone());
        }
        // The crate's files and include folders by content, CUDA/system headers by stat.
        let by_content = |p: &Path| {
            p == src.abs
                || p.starts_with(crate_root)
                || opts.includes.iter().any(|i| p.starts_with(i))
        };
        let rec = Record::after_compile(fingerprint, &inputs, &out, hasher, &by_content)?;
        rec.store(&record_path)?;
        object(false, inputs, result.warnings, millis)
    }
}

/// The kernels of a cubin (its entry symbols) or of PTX (its `.entry` declarations), named the
/// way every backend names them.
fn kernels_of(path: &Path, format: ObjectFormat) -> Result<Vec<ObjectKernel>, BuildError> {
    let bytes =
        std::fs::read(path).map_err(|e| BuildError::io("cannot read the nvcc output", path, e))?;
    let symbols = match format {
        ObjectFormat::Ptx => {
            rocm_code_object::nvidia::ptx_entries(&String::from_utf8_lossy(&bytes))
        }
        _ => rocm_code_object::nvidia::cubin_entries(&bytes).map_err(|e| BuildError::Backend {
            backend: Backend::Nvidia,
            message: format!(
                "nvcc wrote `{}`, but it cannot be read: {e}",
                path.display()
            ),
        })?,
    };
    Ok(symbols
        .into_iter()
        .map(|symbol| ObjectKernel {
            name: rocm_code_object::symbols::kernel_name(&symbol),
            symbol,
            params: Vec::new(),
        })
        .collect())
}

fn arch_number(target: &str) -> u32 {
    target
        .trim_start_matches("sm_")
        .trim_end_matches('a')
        .parse()
        .unwrap_or(0)
}

/// Without nvcc: the source text with its `#include "..."` files inlined (NVRTC at run time
/// sees no file system of the build machine). `<...>` includes are left to NVRTC's include path
/// (the HIP-on-CUDA header and CUDA's own headers are supplied at run time).
fn embed_source(
    src: &SourceFile,
    dir: &Path,
    opts: &CompileOptions,
) -> Result<ObjectOut, BuildError> {
    let mut inputs = Vec::new();
    let mut text = String::new();
    inline_includes(&src.abs, &opts.includes, &mut inputs, &mut text)?;
    let mut defines = String::new();
    for (name, value) in &opts.defines {
        defines.push_str(&format!(
            "#define {name} {}\n",
            value.as_deref().unwrap_or("1")
        ));
    }
    let out = dir.join(format!("{}.cu", src.output_stem()));
    cache::write_atomic(&out, format!("{defines}{text}").as_bytes())?;
    Ok(ObjectOut {
        backend: Backend::Nvidia,
        source: src.clone(),
        target: String::new(),
        format: ObjectFormat::CudaSource,
        kernels: Vec::new(),
        path: out,
        inputs,
        fresh: false,
        warnings: Vec::new(),
        millis: 0,
    })
}

fn inline_includes(
    file: &Path,
    include_dirs: &[PathBuf],
    seen: &mut Vec<PathBuf>,
    out: &mut String,
) -> Result<(), BuildError> {
    if seen.contains(&file.to_path_buf()) {
        return Ok(()); // included before: headers are include-once in practice
    }
    seen.push(file.to_path_buf());
    let text = std::fs::read_to_string(file)
        .map_err(|e| BuildError::io("cannot read kernel source", file, e))?;
    let here = file.parent().unwrap_or(Path::new("."));
    for line in text.lines() {
        let quoted = line
            .trim_start()
            .strip_prefix("#include")
            .map(str::trim)
            .and_then(|r| r.strip_prefix('"'))
            .and_then(|r| r.split('"').next());
        let found = quoted.and_then(|name| {
            std::iter::once(here.to_path_buf())
                .chain(include_dirs.iter().cloned())
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        });
        match found {
            Some(path) => inline_includes(&path, include_dirs, seen, out)?,
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_targets_are_validated() {
        for ok in ["sm_90", "sm_80", "sm_90a", "sm_100"] {
            validate_target(ok).unwrap();
        }
        for bad in ["gfx90a", "sm_9", "90", "sm_90b", "compute_90"] {
            let e = validate_target(bad).unwrap_err().to_string();
            assert!(e.contains("sm_90 (H100)"), "{e}");
        }
        assert_eq!(virtual_arch("sm_90"), "compute_90");
    }

    #[test]
    fn local_headers_are_inlined_once_for_nvrtc() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("inc")).unwrap();
        std::fs::write(dir.path().join("inc/common.h"), "#define TILE 16\n").unwrap();
        std::fs::write(
            dir.path().join("k.hip"),
            "#include <hip/hip_runtime.h>\n#include \"common.h\"\n#include \"common.h\"\n__global__ void k() {}\n",
        )
        .unwrap();
        let src = SourceFile::new(dir.path().join("k.hip"), dir.path());
        let opts = CompileOptions {
            includes: vec![dir.path().join("inc")],
            defines: vec![("N".into(), Some("4".into()))],
            flags: vec![],
            opt_level: 3,
        };
        let out_dir = dir.path().join("out");
        std::fs::create_dir_all(&out_dir).unwrap();
        let out = embed_source(&src, &out_dir, &opts).unwrap();
        let text = std::fs::read_to_string(&out.path).unwrap();
        assert_eq!(
            text,
            "#define N 4\n#include <hip/hip_runtime.h>\n#define TILE 16\n__global__ void k() {}\n"
        );
        assert_eq!(out.format, ObjectFormat::CudaSource);
        assert_eq!(out.inputs.len(), 2);
    }
}
