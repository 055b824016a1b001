//! Which ROCm toolchain a command uses: `--toolchain-path`, else `cargo rocm +NAME`
//! (`CARGO_ROCM_TOOLCHAIN`), else the best one discovered. One place, so every command agrees.

use std::path::Path;

use rocm_toolkit::toolchain::{inspect, Toolchain, ToolchainSource};

use crate::cli::GlobalArgs;
use crate::output::Output;

use crate::exit::CommandError;

/// The variable `cargo rocm +NAME` sets (see `cli::normalize_args`).
pub const TOOLCHAIN_VAR: &str = "CARGO_ROCM_TOOLCHAIN";

/// Choose the toolchain: `--toolchain-path`, else the resolver of `cargo rocm toolchain`
/// (`+NAME`/`CARGO_ROCM_TOOLCHAIN`, directory override, `rocm-toolchain.toml`, default, then the
/// best discovered install), installing a pinned toolchain that is missing unless
/// `CARGO_ROCM_NO_AUTO_INSTALL` is set. Errors carry exit codes and say what to do.
pub fn select_toolchain(
    global: &GlobalArgs,
    path: Option<&Path>,
    out: &Output,
) -> anyhow::Result<Toolchain> {
    if let Some(path) = path {
        return inspect(path, ToolchainSource::Path).ok_or_else(|| {
            CommandError::NotAToolchain {
                path: path.to_owned(),
            }
            .into()
        });
    }
    let resolved = crate::commands::toolchain::resolve(global, out)?;
    out.verbose(format_args!(
        "toolchain {} at {} ({})",
        resolved.toolchain.name,
        resolved.toolchain.root.display(),
        resolved.reason
    ));
    Ok(resolved.toolchain)
}

/// What discovery searched, for messages saying nothing was found.
pub const SEARCHED: &str =
    "looked at ROCM_PATH, HIP_PATH, /opt/rocm, /opt/rocm-*, /usr and pip-installed ROCm SDKs";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit;
    use rocm_protocol::exit::RocmExitCode;

    #[test]
    fn a_path_that_is_not_rocm_is_an_environment_error() {
        let tmp = tempfile::tempdir().unwrap();
        let global = GlobalArgs {
            verbose: 0,
            quiet: true,
            color: None,
            manifest_path: None,
        };
        let out = Output::new(&global);
        let err = select_toolchain(&global, Some(tmp.path()), &out).unwrap_err();
        assert_eq!(exit::code_for(&err), RocmExitCode::ENVIRONMENT);
        assert!(err.to_string().contains("is not a ROCm install"));
    }
}
