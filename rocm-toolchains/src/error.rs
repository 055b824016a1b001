//! The one error type of this crate. Every message says what happened and what to do next.

use std::path::PathBuf;

use rocm_toolkit::home::HomeError;

/// What can go wrong while managing toolchains.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the home or resolving a toolchain failed.
    #[error(transparent)]
    Home(#[from] HomeError),

    /// A file or folder could not be read, written, renamed or removed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },

    /// The server answered with a status that retrying will not fix (a 404, a 403...); for an
    /// index page, also a 404.
    #[error("{url}: the server answered HTTP {status}{hint}")]
    HttpStatus {
        /// The URL asked.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// What to check, with its leading space and parentheses (` (not found: …)`), or empty.
        hint: &'static str,
    },

    /// Every attempt at a download failed (network errors, retryable statuses); what was
    /// received is kept for the next run to resume.
    #[error("{url}: download failed after {attempts} attempt(s): {last_error}; run the command again to resume from the {received} byte(s) kept")]
    DownloadFailed {
        /// The URL.
        url: String,
        /// Attempts made, the first one included.
        attempts: u32,
        /// Bytes kept in the `.partial` file.
        received: u64,
        /// The last attempt's error.
        last_error: String,
    },

    /// An archive's sha256 is not the published or given one; the download is deleted.
    #[error("{url}: sha256 mismatch: expected {expected}, got {actual}; the download was deleted. The mirror may be corrupt or the file replaced: retry, or check the checksum you passed")]
    ChecksumMismatch {
        /// The URL, or the path of a local archive.
        url: String,
        /// The sha256 expected, lower-case hex.
        expected: String,
        /// The sha256 of the bytes received, lower-case hex.
        actual: String,
    },

    /// A checksum given by the user is not 64 hex digits.
    #[error("`{value}` is not a sha256 checksum (expected 64 hex digits)")]
    BadChecksum {
        /// The checksum as given.
        value: String,
    },

    /// An archive entry breaks one of [`crate::extract`]'s rules (a path or link leading out of
    /// the destination, a device file...); nothing is installed.
    #[error("refusing to unpack {}: entry `{entry}` {reason}; nothing was installed", archive.display())]
    UnsafeArchive {
        /// The archive.
        archive: PathBuf,
        /// The entry's path as stored.
        entry: String,
        /// What is wrong with it.
        reason: String,
    },

    /// An archive could not be read or decompressed (truncated, not a tarball, unknown
    /// compression).
    #[error("cannot unpack {}: {message}; nothing was installed (is it a complete .tar.gz, .tar.xz or .tar.zst?)", archive.display())]
    BadArchive {
        /// The archive.
        archive: PathBuf,
        /// The reader's error.
        message: String,
    },

    /// An archive unpacked fine but holds no ROCm toolchain at its top or in its single top
    /// folder.
    #[error("{} holds no ROCm toolchain (no HIP compiler or device libraries at its top level or in its single top folder); nothing was installed", archive.display())]
    NotAToolchainArchive {
        /// The archive.
        archive: PathBuf,
    },

    /// A folder to link holds no ROCm toolchain.
    #[error("{} holds no ROCm toolchain (no bin/hipcc, lib/llvm/bin/clang++ or amdgcn/bitcode); point at an install prefix such as /opt/rocm-6.4.1 or /usr", path.display())]
    NotAToolchain {
        /// The folder.
        path: PathBuf,
    },

    /// A toolchain of that name is already in the home, and replacing it was not asked for.
    #[error("toolchain `{name}` is already installed at {}; pass --force to replace it, or uninstall it first", dir.display())]
    AlreadyInstalled {
        /// The toolchain's name.
        name: String,
        /// Its folder, `toolchains/<name>`.
        dir: PathBuf,
    },

    /// A toolchain's folder exists without cargo-rocm's metadata file: not ours to replace or
    /// remove.
    #[error("{} exists but is not a cargo-rocm toolchain (no metadata file); move it away yourself", dir.display())]
    ForeignFolder {
        /// The folder.
        dir: PathBuf,
    },

    /// No toolchain of that name in the home (to uninstall, make default...).
    #[error("toolchain `{name}` is not installed; see `cargo rocm toolchain list`")]
    NotInstalled {
        /// The name asked for.
        name: String,
    },

    /// An index page lists no TheRock tarball.
    #[error("{url}: found no TheRock tarballs in this index; check the URL (it should be the folder listing the `therock-dist-*.tar.gz` files)")]
    EmptyIndex {
        /// The index page.
        url: String,
    },

    /// No build in the indexes matches what a pin or the command line asks for.
    #[error(
        "no TheRock build for {wanted} in {indexes}; see `cargo rocm toolchain list --available`"
    )]
    NoMatchingBuild {
        /// What was asked for, in words (version or channel, family, platform).
        wanted: String,
        /// The index pages read, comma-separated.
        indexes: String,
    },

    /// No TheRock GPU family could be chosen: no AMD GPU detected and none named, or none
    /// covers all the targets asked for.
    #[error("cannot choose a GPU family: {reason}; pass --target (e.g. gfx942) or --family (e.g. gfx94X-dcgpu), or set `targets` in rocm-toolchain.toml")]
    NoFamily {
        /// Why, in words.
        reason: String,
    },

    /// Installing the distribution's ROCm packages cannot go ahead (unknown distribution, no
    /// root or `sudo`, the package manager cannot start).
    #[error("{message}")]
    System {
        /// The whole message, with what to do instead.
        message: String,
    },

    /// The package manager ran and failed.
    #[error("`{command}` failed ({status}); see its output above")]
    CommandFailed {
        /// The command line.
        command: String,
        /// How it exited (`exit status: 100`).
        status: String,
    },

    /// A pinned toolchain is missing and `CARGO_ROCM_NO_AUTO_INSTALL` forbids installing it.
    #[error("{pin} is pinned by {}, but CARGO_ROCM_NO_AUTO_INSTALL is set; run `cargo rocm toolchain install` there", pin_file.display())]
    AutoInstallDisabled {
        /// The `rocm-toolchain.toml`.
        pin_file: PathBuf,
        /// What it pins, in words.
        pin: String,
    },
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
