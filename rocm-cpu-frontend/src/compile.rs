//! Compiling the generated units into the kernel library, and what happens when a region form
//! does not compile (a C++ construct the rewrite mishandles): only the kernels of that form fall
//! back to per-thread fibers, each with the compiler's first error as the reason, and a warning
//! per kernel says so (the build shows it with its other warnings). Finding them costs compiler runs only on that failure path: each unit that
//! fails is checked (`-fsyntax-only`) without its forms, then with each form alone.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::generated::GeneratedUnit;
use super::{base_build, io, private, race, CpuBuildError, CpuBuildRequest, CpuKernelGen};

/// The objects of the race variant, built from the units once their plain compile has dropped
/// the region forms that do not compile (see [`compile`]).
pub type ExtraObjects<'e> =
    dyn FnMut(&[GeneratedUnit], &mut [CpuKernelGen]) -> Result<Vec<PathBuf>, CpuBuildError> + 'e;

/// Compile the units into `lib<lib_name>.a` with `extra` objects (the race variant's, built by
/// `extra` after the plain compile, from the region forms that compiled), dropping the region
/// forms that do not compile, with every name but the entries (`<stem>_…`) made the library's
/// own ([`private`]). Returns a warning for each kernel that lost its region form.
pub fn compile(
    req: &CpuBuildRequest,
    lib_name: &str,
    stem: &str,
    units: &mut [GeneratedUnit],
    kernels: &mut [CpuKernelGen],
    extra: &mut ExtraObjects,
) -> Result<Vec<String>, CpuBuildError> {
    let objects = |units: &[GeneratedUnit], quiet: bool| {
        let mut build = base_build(req);
        for u in units {
            build.file(&u.file);
            if let Some(dir) = u.source.parent() {
                build.include(dir);
            }
        }
        if quiet {
            build.cargo_warnings(false).cargo_output(false);
        }
        build.try_compile_intermediates()
    };
    let loud = |units: &[GeneratedUnit]| match objects(units, true) {
        Ok(objects) => Ok(objects),
        // The user's errors at their lines, once; else (an error in generated code) everything
        // the compiler said.
        Err(_) => match source_errors(req, units)? {
            Some(e) => Err(e),
            None => objects(units, false).map_err(|e| CpuBuildError::Compile {
                message: e.to_string(),
            }),
        },
    };
    let mut warnings = Vec::new();
    let mut compiled = None;
    if units.iter().any(GeneratedUnit::uses_forms) {
        compiled = objects(units, true).ok();
        if compiled.is_none() {
            for u in units.iter_mut().filter(|u| u.uses_forms()) {
                drop_failing_forms(req, u, kernels, &mut warnings)?;
            }
        }
    }
    let compiled = match compiled {
        Some(objs) => objs,
        None => loud(units)?,
    };
    let mut objects = compiled;
    objects.extend(extra(units, kernels)?);
    let keep = [format!("{stem}_"), format!("{}{stem}_", race::PREFIX)];
    let (objects, warning) =
        private::privatize(&objects, &keep, stem, &req.out_dir.join("private"))?;
    warnings.extend(warning);
    // One archive of both variants; cc prints the link lines.
    let mut archive = base_build(req);
    archive.objects(objects);
    archive
        .try_compile(lib_name)
        .map_err(|e| CpuBuildError::Compile {
            message: e.to_string(),
        })?;
    Ok(warnings)
}

/// Take out of `u` the region forms that do not compile, and say so for each of their kernels.
/// Nothing changes when the unit compiles, or when it does not even without region forms (the
/// final compile then reports that error).
fn drop_failing_forms(
    req: &CpuBuildRequest,
    u: &mut GeneratedUnit,
    kernels: &mut [CpuKernelGen],
    warnings: &mut Vec<String>,
) -> Result<(), CpuBuildError> {
    if syntax_check(req, &u.file, &u.source).is_ok() {
        return Ok(());
    }
    let probe = u.file.with_extension("probe.cpp");
    let source = u.source.clone();
    let check = |text: String| -> Result<Result<(), String>, CpuBuildError> {
        std::fs::write(&probe, text).map_err(io(&probe))?;
        Ok(syntax_check(req, &probe, &source))
    };
    if check(u.text_with(|_| false))?.is_err() {
        std::fs::remove_file(&probe).map_err(io(&probe))?;
        return Ok(());
    }
    let mut failed: Vec<(usize, String)> = Vec::new();
    for f in (0..u.forms.len()).filter(|&f| u.forms[f].in_use) {
        if let Err(first_error) = check(u.text_with(|g| g == f))? {
            failed.push((f, first_error));
        }
    }
    for (f, _) in &failed {
        u.forms[*f].in_use = false;
    }
    // Forms that compile alone but not together: none of them is used.
    if let Err(first_error) = check(u.text())? {
        for (f, form) in u.forms.iter_mut().enumerate().filter(|(_, f)| f.in_use) {
            form.in_use = false;
            failed.push((
                f,
                format!("{first_error} (with the unit's other region forms)"),
            ));
        }
    }
    std::fs::remove_file(&probe).map_err(io(&probe))?;
    for (f, first_error) in &failed {
        for k in 0..u.kernels.len() {
            if u.form_of(k) != Some(*f) {
                continue;
            }
            let kernel = &mut kernels[u.kernels.start + k];
            kernel.region_form = Err(format!("its region form did not compile: {first_error}"));
            warnings.push(format!(
                "rocm-kernels: the cpu backend runs kernel `{}` of {} with per-thread fibers \
                 (slower): its barrier-region form did not compile ({first_error}); please report \
                 this",
                kernel.name,
                u.source.display()
            ));
        }
    }
    std::fs::write(&u.file, u.text()).map_err(io(&u.file))
}

/// The errors of the user's sources, if they have any: each unit without its region forms (the
/// user's code and the entry points) checked with `-fsyntax-only`, the diagnostics at the user's
/// files (named relative to the crate) kept, and those at generated lines dropped when there are
/// others (an entry point naming a kernel that failed to compile adds nothing). The compiler's
/// whole output is written beside the units. `None` when every unit compiles.
pub fn source_errors(
    req: &CpuBuildRequest,
    units: &[GeneratedUnit],
) -> Result<Option<CpuBuildError>, CpuBuildError> {
    let mut diagnostics: Vec<crate::Diagnostic> = Vec::new();
    let mut whole = String::new();
    for u in units {
        let probe = u.file.with_extension("check.cpp");
        std::fs::write(&probe, u.text_with(|_| false)).map_err(io(&probe))?;
        let result = syntax_check_output(req, &probe, &u.source);
        std::fs::remove_file(&probe).map_err(io(&probe))?;
        let Err(output) = result else { continue };
        whole.push_str(&output);
        let generated = |file: &str| {
            Path::new(file) == probe || Path::new(file) == u.file || file.ends_with(".cpu.cpp")
        };
        let found = crate::diagnostics::parse(&output);
        let users: Vec<_> = found
            .iter()
            .filter(|d| d.is_error() && !generated(&d.file))
            .cloned()
            .collect();
        let kept = if users.is_empty() {
            found.into_iter().filter(|d| d.is_error()).collect()
        } else {
            users
        };
        diagnostics.extend(kept.into_iter().map(|mut d| {
            d.file = crate::diagnostics::display_name(Path::new(&d.file), &req.crate_root);
            d
        }));
    }
    if whole.is_empty() {
        return Ok(None);
    }
    if diagnostics.is_empty() {
        // Output without a located error (a crashed compiler): not the user's source.
        return Ok(None);
    }
    let full = req.out_dir.join("compiler-errors.txt");
    std::fs::write(&full, &whole).map_err(io(&full))?;
    Ok(Some(CpuBuildError::Source {
        diagnostics,
        full_output: Some(full),
    }))
}

/// `-fsyntax-only` on a unit: Err(first error line) when it does not compile.
fn syntax_check(req: &CpuBuildRequest, file: &Path, source: &Path) -> Result<(), String> {
    syntax_check_output(req, file, source).map_err(|stderr| {
        stderr
            .lines()
            .find(|l| l.contains("error"))
            .unwrap_or("unknown error")
            .trim()
            .to_string()
    })
}

/// `-fsyntax-only` on a unit: Err(the compiler's output) when it does not compile.
fn syntax_check_output(req: &CpuBuildRequest, file: &Path, source: &Path) -> Result<(), String> {
    let mut build = base_build(req);
    build.cargo_metadata(false).warnings(false);
    let compiler = build.try_get_compiler().map_err(|e| e.to_string())?;
    let mut cmd: Command = compiler.to_command();
    if let Some(dir) = source.parent() {
        cmd.arg("-I").arg(dir);
    }
    cmd.arg("-fsyntax-only").arg("-x").arg("c++").arg(file);
    let output = cmd.output().map_err(|e| e.to_string())?;
    if output.status.success() {
        return Ok(());
    }
    Err(String::from_utf8_lossy(&output.stderr).into_owned())
}
