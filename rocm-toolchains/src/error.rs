//! The one error type of this crate. Every message says what happened and what to do next.

use std::path::PathBuf;

use rocm_toolkit::home::HomeError;

/// What can go wrong while managing toolchains.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Home(#[from] HomeError),

    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{url}: the server answered HTTP {status}{hint}")]
    HttpStatus {
        url: String,
        status: u16,
        hint: &'static str,
    },

    #[error("{url}: download failed after {attempts} attempt(s): {last_error}; run the command again to resume from the {received} byte(s) kept")]
    DownloadFailed {
        url: String,
        attempts: u32,
        received: u64,
        last_error: String,
    },

    #[error("{url}: sha256 mismatch: expected {expected}, got {actual}; the download was deleted. The mirror may be corrupt or the file replaced: retry, or check the checksum you passed")]
    ChecksumMismatch {
        url: String,
        expected: String,
        actual: String,
    },

    #[error("`{value}` is not a sha256 checksum (expected 64 hex digits)")]
    BadChecksum { value: String },

    #[error("refusing to unpack {}: entry `{entry}` {reason}; nothing was installed", archive.display())]
    UnsafeArchive {
        archive: PathBuf,
        entry: String,
        reason: String,
    },

    #[error("cannot unpack {}: {message}; nothing was installed (is it a complete .tar.gz, .tar.xz or .tar.zst?)", archive.display())]
    BadArchive { archive: PathBuf, message: String },

    #[error("{} holds no ROCm toolchain (no HIP compiler or device libraries at its top level or in its single top folder); nothing was installed", archive.display())]
    NotAToolchainArchive { archive: PathBuf },

    #[error("{} holds no ROCm toolchain (no bin/hipcc, lib/llvm/bin/clang++ or amdgcn/bitcode); point at an install prefix such as /opt/rocm-6.4.1 or /usr", path.display())]
    NotAToolchain { path: PathBuf },

    #[error("toolchain `{name}` is already installed at {}; pass --force to replace it, or uninstall it first", dir.display())]
    AlreadyInstalled { name: String, dir: PathBuf },

    #[error("{} exists but is not a cargo-rocm toolchain (no metadata file); move it away yourself", dir.display())]
    ForeignFolder { dir: PathBuf },

    #[error("toolchain `{name}` is not installed; see `cargo rocm toolchain list`")]
    NotInstalled { name: String },

    #[error("{url}: found no TheRock tarballs in this index; check the URL (it should be the folder listing the `therock-dist-*.tar.gz` files)")]
    EmptyIndex { url: String },

    #[error(
        "no TheRock build for {wanted} in {indexes}; see `cargo rocm toolchain list --available`"
    )]
    NoMatchingBuild { wanted: String, indexes: String },

    #[error("cannot choose a GPU family: {reason}; pass --target (e.g. gfx942) or --family (e.g. gfx94X-dcgpu), or set `targets` in rocm-toolchain.toml")]
    NoFamily { reason: String },

    #[error("{message}")]
    System { message: String },

    #[error("`{command}` failed ({status}); see its output above")]
    CommandFailed { command: String, status: String },

    #[error("{pin} is pinned by {}, but CARGO_ROCM_NO_AUTO_INSTALL is set; run `cargo rocm toolchain install` there", pin_file.display())]
    AutoInstallDisabled { pin_file: PathBuf, pin: String },
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// This crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
