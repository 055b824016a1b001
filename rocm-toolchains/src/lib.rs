//! `rocm-toolchains`: installing, linking and removing ROCm toolchains in the cargo-rocm home.
//!
//! Reading the home and choosing a toolchain is [`rocm_toolkit::home`] (light enough for build
//! scripts); this crate changes it:
//! * [`dist`]: TheRock's published tarballs (index pages, file names, choosing a build);
//! * [`download`]: checksummed, resumable, retried downloads;
//! * [`extract`]: unpacking archives that might be hostile;
//! * [`install`]: the [`Installer`] (install, link, uninstall, default, overrides) under a
//!   [`lock::HomeLock`];
//! * [`auto`]: picking builds for pins and installing missing pinned toolchains;
//! * [`system`]: the distribution's ROCm packages; [`gpu`]: this machine's gfx targets.

pub mod auto;
pub mod dist;
pub mod download;
mod error;
pub mod extract;
pub mod gpu;
pub mod install;
pub mod lock;
pub mod system;
#[cfg(feature = "test-support")]
pub mod test_support;

pub use error::{Error, Result};
pub use install::{
    ArchiveSource, Event, InstallOptions, InstallReport, Installer, UninstallReport,
};
