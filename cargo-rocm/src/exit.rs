//! Exit codes, documented in `docs/exit-codes.md` and in `cargo rocm --help`.

/// Everything asked for worked.
pub const OK: u8 = 0;
/// A check failed: a test trial failed, or `doctor` found a requested backend unusable.
pub const FAILED: u8 = 1;
/// The command line was wrong (unknown flag, bad value).
pub const USAGE: u8 = 2;
/// The environment is missing something: no toolchain, compiler, library or device for what was asked.
pub const ENVIRONMENT: u8 = 3;
/// Building the user's crate (cargo or a kernel compiler) failed.
pub const BUILD: u8 = 4;
/// An input file (manifest, pin file, code object, settings) was unreadable or malformed.
pub const INPUT: u8 = 5;
/// Something went wrong inside cargo-rocm itself (a bug: please report it).
pub const INTERNAL: u8 = 101;

/// The table printed at the end of `--help`.
pub const HELP_TABLE: &str = "\
Exit codes:
  0    success
  1    a check failed (test trial, doctor check for a requested backend)
  2    usage error (bad flag or value)
  3    environment problem (missing toolchain, compiler, library or device)
  4    build failed (cargo or a kernel compiler)
  5    malformed or unreadable input file
  101  internal error (a bug in cargo-rocm)";

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
