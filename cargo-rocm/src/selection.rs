//! Which ROCm toolchain a command uses: `--toolchain-path`, else `cargo rocm +NAME`
//! (`CARGO_ROCM_TOOLCHAIN`), else the best one discovered. One place, so every command agrees.

use std::path::Path;

use rocm_kernels::toolchain::{inspect, Discovery, Toolchain, ToolchainSource};

use crate::exit;
use crate::fix;

/// The variable `cargo rocm +NAME` sets (see `cli::normalize_args`).
pub const TOOLCHAIN_VAR: &str = "CARGO_ROCM_TOOLCHAIN";

/// Choose the toolchain. Errors carry [`exit::ENVIRONMENT`] and say what to do.
pub fn select_toolchain(path: Option<&Path>, found: &Discovery) -> anyhow::Result<Toolchain> {
    if let Some(path) = path {
        return inspect(path, ToolchainSource::Path).ok_or_else(|| {
            exit::coded(
                exit::ENVIRONMENT,
                format!(
                    "{} is not a ROCm install: no HIP compiler, device libraries, libamdhip64 \
                     or version file under it. Point --toolchain-path at the install prefix \
                     (the folder holding bin/ and lib/, e.g. /opt/rocm-6.2.0)",
                    path.display()
                ),
            )
        });
    }
    if let Some(name) = std::env::var(TOOLCHAIN_VAR).ok().filter(|n| !n.is_empty()) {
        return found
            .toolchains
            .iter()
            .find(|t| t.name == name)
            .cloned()
            .ok_or_else(|| {
                let names: Vec<&str> = found.toolchains.iter().map(|t| t.name.as_str()).collect();
                exit::coded(
                    exit::ENVIRONMENT,
                    format!(
                        "no ROCm toolchain named `{name}` (from `+{name}` or {TOOLCHAIN_VAR}); \
                         found: {}",
                        if names.is_empty() {
                            "none".to_owned()
                        } else {
                            names.join(", ")
                        }
                    ),
                )
            });
    }
    found
        .best()
        .cloned()
        .ok_or_else(|| no_toolchain_error(found))
}

/// What discovery searched, for messages saying nothing was found.
pub const SEARCHED: &str =
    "looked at ROCM_PATH, HIP_PATH, /opt/rocm, /opt/rocm-*, /usr and pip-installed ROCm SDKs";

fn no_toolchain_error(found: &Discovery) -> anyhow::Error {
    let mut message = format!("no ROCm toolchain found ({SEARCHED})");
    for note in &found.notes {
        message.push_str("\n  note: ");
        message.push_str(note);
    }
    message.push_str("\n  fix: ");
    message.push_str(&fix::rocm_install());
    exit::coded(exit::ENVIRONMENT, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_found_is_an_environment_error_that_says_what_to_do() {
        let found = Discovery {
            toolchains: vec![],
            notes: vec!["ROCM_PATH=/x is not a folder".into()],
        };
        // Only meaningful when the test process has no +NAME selection.
        if std::env::var_os(TOOLCHAIN_VAR).is_some() {
            return;
        }
        let err = select_toolchain(None, &found).unwrap_err();
        assert_eq!(exit::code_for(&err), exit::ENVIRONMENT);
        let text = err.to_string();
        assert!(text.contains("no ROCm toolchain found"), "{text}");
        assert!(
            text.contains("note: ROCM_PATH=/x is not a folder"),
            "{text}"
        );
        assert!(text.contains("fix: "), "{text}");
    }

    #[test]
    fn a_path_that_is_not_rocm_is_an_environment_error() {
        let tmp = tempfile::tempdir().unwrap();
        let err = select_toolchain(Some(tmp.path()), &Discovery::default()).unwrap_err();
        assert_eq!(exit::code_for(&err), exit::ENVIRONMENT);
        assert!(err.to_string().contains("is not a ROCm install"));
    }
}
