//! Checks of a tunable's declaration that need no device (the `::tunable` trial of every
//! harness, and tune mode before it tunes), and where the kernel's source is.

use std::path::PathBuf;

use rocm_kernels::KernelLibrary;
use rocm_tune::{ConfigId, SearchSpace};

use super::Tunable;
use crate::check::Check;
use crate::{Error, Suite};

/// Checks of a tunable's declaration that need no device; `Err` says what to fix.
///
/// The space and the default's place in it (`None` where the space cannot be built here: a
/// harness without the `tune` feature does not evaluate Kernel Tuner expressions, so it checks
/// the default against the parameters' lists only and leaves the space to `cargo rocm tune`).
pub(crate) fn validate(
    tunable: &Tunable,
    suite: &Suite,
) -> Result<Option<(SearchSpace, Option<ConfigId>)>, Error> {
    let mut errors = tunable.errors.clone();
    if tunable.params.is_empty() {
        errors.push("no parameters: add `.define(…)` or `.param(…)`".into());
    }
    if tunable.launch.is_none() {
        errors.push(
            "no launch: add `.launch(|config, inputs| …)`, the launch as a function of the \
             parameters and the problem"
                .into(),
        );
    }
    let check = suite.find_check(&tunable.check);
    match check {
        None => errors.push(format!(
            "no check named `{}` to take the arguments, reference and tolerance from: add \
             `s.check(\"{}\")…` to the harness",
            tunable.check, tunable.check
        )),
        Some(c) => {
            for p in &tunable.problems {
                for (n, _) in p {
                    if !c.sizes.iter().any(|(s, _)| s == n) {
                        errors.push(format!(
                            "problem size `{n}` is not a size of check `{}` (its sizes: {})",
                            c.name,
                            c.sizes
                                .iter()
                                .map(|(s, _)| s.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                }
            }
            // A definition the kernel's source never mentions makes every value the same
            // kernel: surely a typo.
            if let Some((path, text)) = source_text(tunable, c, suite.library()) {
                for d in tunable.defines() {
                    if !mentions(&text, &d) {
                        errors.push(format!(
                            "compile-time parameter `{d}` does not appear in {}: the kernel \
                             never reads it (a typo, or declare it with `.param` if only the \
                             launch uses it)",
                            path.display()
                        ));
                    }
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(Error::Declaration(format!(
            "tunable `{}` is not valid:\n{}",
            tunable.name,
            errors
                .iter()
                .map(|e| format!("  - {e}\n"))
                .collect::<String>()
        )));
    }
    if !cfg!(feature = "tune") && tunable.has_expressions() {
        tunable.default_in_lists()?;
        return Ok(None);
    }
    let space = tunable.space()?;
    let default = match tunable.default_in(&space) {
        None => None,
        Some(Ok(id)) => Some(id),
        Some(Err(e)) => return Err(e),
    };
    Ok(Some((space, default)))
}

/// Whether `word` appears in `text` as a whole identifier.
fn mentions(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The crate root: `CARGO_MANIFEST_DIR` (cargo sets it when it runs a test).
pub(crate) fn crate_root() -> Option<PathBuf> {
    std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from)
}

/// The kernel's source file on disk and its text, when it can be found.
pub(crate) fn source_text(
    tunable: &Tunable,
    check: &Check,
    lib: &KernelLibrary,
) -> Option<(PathBuf, String)> {
    let rel = match &tunable.source {
        Some(p) => p.clone(),
        None => PathBuf::from(lib.kernel(&check.kernel)?.source),
    };
    let path = if rel.is_absolute() {
        rel
    } else {
        crate_root()?.join(rel)
    };
    let text = std::fs::read_to_string(&path).ok()?;
    Some((path, text))
}

#[cfg(test)]
mod tests {
    use rocm_kernels::library::KernelDecl;

    use super::*;
    use crate::Launch;

    static LIB: KernelLibrary = KernelLibrary {
        name: "kernels",
        code_objects: &[],
        kernels: &[KernelDecl {
            name: "saxpy",
            source: "src/kernels.hip",
            params: &[],
            symbols: &[],
            cpu: None,
        }],
        globals: &[],
    };

    fn verdict(default: i64) -> Result<Option<usize>, String> {
        verdict_error(default).map_err(|e| e.to_string())
    }

    fn verdict_error(default: i64) -> Result<Option<usize>, Error> {
        let mut suite = Suite::new(&LIB);
        suite.check("saxpy");
        suite
            .tune("saxpy")
            .param("B", [32, 64])
            .restrict("B > 32")
            .launch(|c, _| Launch::cover(64, c.int("B").unwrap_or(32) as u32))
            .default_config(&[("B", default)]);
        validate(&suite.tunables()[0], &suite).map(|v| v.map(|(space, _)| space.len()))
    }

    #[test]
    fn without_the_engine_expressions_wait_for_tune_mode() {
        // A default outside its parameter's list: an error with or without the engine.
        assert!(verdict(16).unwrap_err().contains("not in its search space"));
        // A default only the expression excludes: found by the engine (tune mode); a normal
        // test binary cannot evaluate the expression and leaves the space to `cargo rocm tune`.
        if cfg!(feature = "tune") {
            assert!(verdict(32).unwrap_err().contains("not in its search space"));
            assert_eq!(verdict(64), Ok(Some(1)));
        } else {
            assert_eq!(verdict(32), Ok(None));
        }
    }
}
