//! Exit codes, documented in `docs/exit-codes.md` and in `cargo rocm --help`. The codes are
//! defined once, with the protocol (`rocm_protocol::exit::RocmExitCode`); the short names here
//! are what the commands use, with [`CodedError`] to carry one up to `main`.

use rocm_protocol::exit::RocmExitCode;

/// Everything asked for worked.
pub const OK: u8 = RocmExitCode::OK;
/// A check failed: a test trial failed, or `doctor` found a requested backend unusable.
pub const FAILED: u8 = RocmExitCode::FAILED;
/// The command line was wrong (unknown flag, bad value).
pub const USAGE: u8 = RocmExitCode::USAGE;
/// The environment is missing something: no toolchain, compiler, library or device for what was asked.
pub const ENVIRONMENT: u8 = RocmExitCode::ENVIRONMENT;
/// Building the user's crate (cargo or a kernel compiler) failed.
pub const BUILD: u8 = RocmExitCode::BUILD;
/// An input file (manifest, pin file, code object, settings) was unreadable or malformed.
pub const INPUT: u8 = RocmExitCode::INPUT;
/// Something went wrong inside cargo-rocm itself (a bug: please report it).
pub const INTERNAL: u8 = RocmExitCode::INTERNAL;

/// The table printed at the end of `--help`.
pub const HELP_TABLE: &str = RocmExitCode::HELP_TABLE;

/// An error that carries its exit code. Commands return `anyhow::Error`; wrap the root cause
/// in this to choose a code other than [`INTERNAL`].
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct CodedError {
    pub code: u8,
    pub message: String,
}

pub fn coded(code: u8, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(CodedError {
        code,
        message: message.into(),
    })
}

/// Map an error chain to an exit code: the first [`CodedError`] in the chain wins.
pub fn code_for(err: &anyhow::Error) -> u8 {
    err.chain()
        .find_map(|e| e.downcast_ref::<CodedError>().map(|c| c.code))
        .unwrap_or(INTERNAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coded_errors_keep_their_code_through_context() {
        let err = coded(ENVIRONMENT, "no ROCm").context("while running doctor");
        assert_eq!(code_for(&err), ENVIRONMENT);
        assert_eq!(code_for(&anyhow::anyhow!("plain")), INTERNAL);
    }
}
