//! Changing the home: install, link, uninstall, default, overrides.
//!
//! Every change holds the home lock. An install unpacks into `tmp/<name>.<pid>`, checks that
//! the result is a ROCm toolchain, writes its metadata and only then renames the folder into
//! `toolchains/` — one atomic step, so a toolchain folder is either complete or absent.
//! Whatever a killed process left in `tmp/` is removed by the next process to take the lock.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rocm_toolkit::home::{
    self, ArchiveRecord, DistInfo, Home, InstallKind, Installed, ToolchainMetadata,
};
use rocm_toolkit::toolchain::Toolchain;
use serde::Serialize;

use crate::dist::{self, DistFile};
use crate::download::{hash_file, Downloader, Progress};
use crate::error::{Error, Result};
use crate::extract;
use crate::lock::HomeLock;

/// What an installer is doing, for people watching.
#[derive(Debug)]
pub enum Event<'a> {
    /// Another process holds the home lock; this one waits.
    WaitingForLock {
        /// The lock file, `.lock` in the home.
        lock: &'a Path,
    },
    /// Fetching a checksum or an index page.
    Fetching {
        /// The URL.
        url: &'a str,
    },
    /// An index page could not be read; the others are used.
    IndexSkipped {
        /// The index page.
        url: &'a str,
        /// Why it could not be read.
        error: &'a str,
    },
    /// Downloading an archive.
    Download(Progress<'a>),
    /// Unpacking an archive.
    Unpacking {
        /// The archive, downloaded or local.
        archive: &'a Path,
    },
}

/// Options shared by the install operations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstallOptions {
    /// The toolchain's name; derived from the archive when absent.
    pub name: Option<String>,
    /// The archive's expected sha256 (overrides a published `.sha256`).
    pub sha256: Option<String>,
    /// Replace a toolchain of the same name.
    pub force: bool,
}

/// An archive to install from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchiveSource {
    /// `http://` or `https://`.
    Url(String),
    /// A local file.
    File(PathBuf),
}

/// The outcome of an install or link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstallReport {
    /// The toolchain's folder in the home and its metadata.
    pub installed: Installed,
    /// The toolchain as inspected: compilers, device libraries, targets.
    pub toolchain: Toolchain,
    /// It was there already (same build); nothing changed.
    pub unchanged: bool,
}

/// The outcome of an uninstall.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UninstallReport {
    /// The toolchain's name.
    pub name: String,
    /// The folder removed (for linked toolchains, only the link's folder: never its target).
    pub removed: PathBuf,
    /// It was the default toolchain; the default is now unset.
    pub was_default: bool,
    /// Directory overrides that named it, now removed.
    pub removed_overrides: Vec<PathBuf>,
}

/// Installs into, and removes from, one home.
#[derive(Debug, Clone)]
pub struct Installer {
    home: Home,
    downloader: Downloader,
}

/// A folder under `tmp/` removed on drop unless it was renamed away.
struct Staging(PathBuf);

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Installer {
    /// An installer for `home`, fetching with `downloader`. Nothing is touched until an
    /// operation runs.
    pub fn new(home: Home, downloader: Downloader) -> Self {
        Installer { home, downloader }
    }

    /// The home it changes.
    pub fn home(&self) -> &Home {
        &self.home
    }

    /// Take the home lock and clear what interrupted processes left in `tmp/`.
    pub fn lock(&self, events: &mut dyn FnMut(Event<'_>)) -> Result<HomeLock> {
        let lock_path = self.home.lock_path();
        let lock = HomeLock::acquire(&self.home, &mut || {
            events(Event::WaitingForLock { lock: &lock_path })
        })?;
        let tmp = self.home.tmp_dir();
        // Holding the lock, nothing in tmp/ is in use: it is debris of a killed process.
        if let Ok(entries) = std::fs::read_dir(&tmp) {
            for e in entries.flatten() {
                let p = e.path();
                let _ = if p.is_dir() && !p.is_symlink() {
                    std::fs::remove_dir_all(&p)
                } else {
                    std::fs::remove_file(&p)
                };
            }
        }
        std::fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
        Ok(lock)
    }

    /// Every TheRock tarball listed by `index_urls`, newest first. An index that cannot be
    /// read is skipped (reported as [`Event::IndexSkipped`]) as long as another one can; when
    /// none can, the first error is returned.
    pub fn fetch_index(
        &self,
        index_urls: &[String],
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<Vec<DistFile>> {
        let mut files = Vec::new();
        let mut first_error = None;
        for url in index_urls {
            events(Event::Fetching { url });
            match self.read_index(url) {
                Ok(found) => files.extend(found),
                Err(e) => {
                    events(Event::IndexSkipped {
                        url,
                        error: &e.to_string(),
                    });
                    first_error.get_or_insert(e);
                }
            }
        }
        if let (true, Some(e)) = (files.is_empty(), first_error) {
            return Err(e);
        }
        files.sort_by(|a, b| {
            b.version
                .cmp(&a.version)
                .then_with(|| a.family.cmp(&b.family))
        });
        files.dedup_by(|a, b| a.file_name == b.file_name);
        Ok(files)
    }

    fn read_index(&self, url: &str) -> Result<Vec<DistFile>> {
        let body = self
            .downloader
            .get_text(url)?
            .ok_or_else(|| Error::HttpStatus {
                url: url.to_string(),
                status: 404,
                hint: " (no index there: check --index-url or CARGO_ROCM_DIST_URL)",
            })?;
        let found = dist::parse_index(&body, url);
        if found.is_empty() {
            return Err(Error::EmptyIndex {
                url: url.to_string(),
            });
        }
        Ok(found)
    }

    /// Install a published TheRock build. Its `.sha256` sidecar is checked when published.
    pub fn install_dist(
        &self,
        file: &DistFile,
        options: &InstallOptions,
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<InstallReport> {
        let name = options
            .name
            .clone()
            .unwrap_or_else(|| file.default_toolchain_name());
        let given = options.sha256.as_deref().map(checked_sha256).transpose()?;
        let _lock = self.lock(events)?;
        if let Some(report) =
            self.unchanged(&name, Some(&file.dist_info()), given.as_deref(), options)?
        {
            return Ok(report);
        }
        let expected = match given {
            Some(s) => Some(s),
            None => {
                let url = file.sha256_url();
                events(Event::Fetching { url: &url });
                self.downloader
                    .get_text(&url)?
                    .and_then(|t| dist::parse_sha256_sidecar(&t))
            }
        };
        let downloaded = self.downloader.download(
            &file.url,
            expected.as_deref(),
            &self.home.downloads_dir(),
            &mut |p| events(Event::Download(p)),
        )?;
        self.install_unpacked(
            &name,
            &downloaded.path,
            downloaded.record,
            Some(file.dist_info()),
            options.force,
            events,
        )
    }

    /// Install from an archive URL or file. A TheRock file name gives the toolchain its
    /// version and family (so pins match it); other names need `options.name` or use the
    /// file name without its extension.
    pub fn install_archive(
        &self,
        source: &ArchiveSource,
        options: &InstallOptions,
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<InstallReport> {
        let file_name = match source {
            ArchiveSource::Url(u) => u
                .split(['?', '#'])
                .next()
                .unwrap_or(u)
                .rsplit('/')
                .next()
                .unwrap_or(u)
                .replace("%2B", "+"),
            ArchiveSource::File(p) => p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        let parsed = dist::parse_file_name(&file_name);
        let dist_info = parsed
            .as_ref()
            .map(|(platform, family, version, _)| DistInfo {
                version: version.clone(),
                channel: version.channel(),
                family: family.clone(),
                platform: platform.clone(),
            });
        let name = match (&options.name, &dist_info) {
            (Some(n), _) => n.clone(),
            (None, Some(d)) => format!("therock-{}-{}", d.version, d.family),
            (None, None) => strip_archive_suffix(&file_name).to_string(),
        };
        home::validate_name(&name)?;
        let expected = options.sha256.as_deref().map(checked_sha256).transpose()?;
        let _lock = self.lock(events)?;
        if let Some(report) =
            self.unchanged(&name, dist_info.as_ref(), expected.as_deref(), options)?
        {
            return Ok(report);
        }
        let (archive, record) = match source {
            ArchiveSource::Url(url) => {
                let d = self.downloader.download(
                    url,
                    expected.as_deref(),
                    &self.home.downloads_dir(),
                    &mut |p| events(Event::Download(p)),
                )?;
                (d.path, d.record)
            }
            ArchiveSource::File(path) => {
                let (size, sha256) = hash_file(path)?;
                if let Some(expected) = &expected {
                    if *expected != sha256 {
                        return Err(Error::ChecksumMismatch {
                            url: path.display().to_string(),
                            expected: expected.clone(),
                            actual: sha256,
                        });
                    }
                }
                let abs = std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?;
                let record = ArchiveRecord {
                    url: format!("file://{}", abs.display()),
                    size,
                    sha256,
                    sha256_verified: expected.is_some(),
                    etag: None,
                };
                (abs, record)
            }
        };
        self.install_unpacked(&name, &archive, record, dist_info, options.force, events)
    }

    /// With the lock held: an existing toolchain of that name is either the same build
    /// (report it unchanged), replaced (`force`), or an error.
    fn unchanged(
        &self,
        name: &str,
        dist: Option<&DistInfo>,
        sha256: Option<&str>,
        options: &InstallOptions,
    ) -> Result<Option<InstallReport>> {
        let dir = self.home.toolchain_dir(name)?;
        let Some(existing) = self.home.find_installed(name)? else {
            if dir.exists() {
                return Err(Error::ForeignFolder { dir });
            }
            return Ok(None);
        };
        if options.force {
            return Ok(None);
        }
        let same_dist = dist.is_some() && existing.metadata.dist.as_ref() == dist;
        let same_bytes = sha256.is_some()
            && existing
                .metadata
                .archive
                .as_ref()
                .map(|a| a.sha256.as_str())
                == sha256;
        if (same_dist && options.sha256.is_none()) || same_bytes {
            let toolchain = self.home.toolchain(&existing)?;
            return Ok(Some(InstallReport {
                installed: existing,
                toolchain,
                unchanged: true,
            }));
        }
        Err(Error::AlreadyInstalled {
            name: name.to_string(),
            dir,
        })
    }

    /// With the lock held: unpack, check, record, rename into place.
    fn install_unpacked(
        &self,
        name: &str,
        archive: &Path,
        record: ArchiveRecord,
        dist: Option<DistInfo>,
        force: bool,
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<InstallReport> {
        let staging = Staging(
            self.home
                .tmp_dir()
                .join(format!("{name}.{}", std::process::id())),
        );
        std::fs::create_dir_all(&staging.0).map_err(|e| Error::io(&staging.0, e))?;
        events(Event::Unpacking { archive });
        extract::unpack(archive, &staging.0)?;
        let root = toolchain_root(&staging.0, name).ok_or_else(|| Error::NotAToolchainArchive {
            archive: archive.to_path_buf(),
        })?;
        let metadata = ToolchainMetadata {
            name: name.to_string(),
            kind: InstallKind::Archive,
            root: None,
            installed_at: now(),
            dist,
            archive: Some(record),
        };
        metadata.write(&root)?;
        self.commit(name, &root, force)?;
        drop(staging);
        self.report(name)
    }

    /// Link an existing install (`/opt/rocm-6.4.1`, a pip ROCm SDK, `/usr`) under `name`.
    /// The home records only where it is; uninstalling the link never touches it.
    pub fn link(
        &self,
        name: &str,
        path: &Path,
        force: bool,
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<InstallReport> {
        home::validate_name(name)?;
        let root = std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?;
        if home::inspect_managed(&root, name).is_none() {
            return Err(Error::NotAToolchain { path: root });
        }
        let _lock = self.lock(events)?;
        let dir = self.home.toolchain_dir(name)?;
        if let Some(existing) = self.home.find_installed(name)? {
            let same = existing.metadata.kind == InstallKind::Linked
                && existing.metadata.root.as_deref() == Some(&root);
            if same {
                return Ok(InstallReport {
                    toolchain: self.home.toolchain(&existing)?,
                    installed: existing,
                    unchanged: true,
                });
            }
            if !force {
                return Err(Error::AlreadyInstalled {
                    name: name.to_string(),
                    dir,
                });
            }
        } else if dir.exists() {
            return Err(Error::ForeignFolder { dir });
        }
        let staging = Staging(
            self.home
                .tmp_dir()
                .join(format!("{name}.{}", std::process::id())),
        );
        std::fs::create_dir_all(&staging.0).map_err(|e| Error::io(&staging.0, e))?;
        ToolchainMetadata {
            name: name.to_string(),
            kind: InstallKind::Linked,
            root: Some(root),
            installed_at: now(),
            dist: None,
            archive: None,
        }
        .write(&staging.0)?;
        self.commit(name, &staging.0, force)?;
        drop(staging);
        self.report(name)
    }

    /// Remove `name`'s folder (only that folder) and every setting naming it.
    pub fn uninstall(
        &self,
        name: &str,
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<UninstallReport> {
        let dir = self.home.toolchain_dir(name)?;
        let _lock = self.lock(events)?;
        if self.home.find_installed(name)?.is_none() {
            return Err(if dir.exists() {
                Error::ForeignFolder { dir }
            } else {
                Error::NotInstalled {
                    name: name.to_string(),
                }
            });
        }
        // Move it out of toolchains/ first, so an interrupted removal leaves no half toolchain.
        let doomed = self
            .home
            .tmp_dir()
            .join(format!("{name}.{}.removing", std::process::id()));
        std::fs::rename(&dir, &doomed).map_err(|e| Error::io(&dir, e))?;
        // remove_dir_all does not follow symbolic links: a link's target is never touched.
        std::fs::remove_dir_all(&doomed).map_err(|e| Error::io(&doomed, e))?;
        let mut settings = self.home.settings()?;
        let was_default = settings.default.as_deref() == Some(name);
        if was_default {
            settings.default = None;
        }
        let removed_overrides: Vec<PathBuf> = settings
            .overrides
            .iter()
            .filter(|(_, v)| *v == name)
            .map(|(k, _)| k.clone())
            .collect();
        for k in &removed_overrides {
            settings.overrides.remove(k);
        }
        if was_default || !removed_overrides.is_empty() {
            self.home.save_settings(&settings)?;
        }
        Ok(UninstallReport {
            name: name.to_string(),
            removed: dir,
            was_default,
            removed_overrides,
        })
    }

    /// Set (or with `None`, clear) the default toolchain. It must be installed.
    pub fn set_default(&self, name: Option<&str>, events: &mut dyn FnMut(Event<'_>)) -> Result<()> {
        let _lock = self.lock(events)?;
        if let Some(n) = name {
            self.require_installed(n)?;
        }
        let mut settings = self.home.settings()?;
        settings.default = name.map(str::to_string);
        Ok(self.home.save_settings(&settings)?)
    }

    /// Set (or with `None`, clear) the override for `dir` and below. Returns the canonical dir.
    pub fn set_override(
        &self,
        dir: &Path,
        name: Option<&str>,
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<PathBuf> {
        let dir = std::fs::canonicalize(dir).map_err(|e| Error::io(dir, e))?;
        let _lock = self.lock(events)?;
        let mut settings = self.home.settings()?;
        match name {
            Some(n) => {
                self.require_installed(n)?;
                settings.overrides.insert(dir.clone(), n.to_string());
            }
            None => {
                settings.overrides.remove(&dir);
            }
        }
        self.home.save_settings(&settings)?;
        Ok(dir)
    }

    fn require_installed(&self, name: &str) -> Result<()> {
        match self.home.find_installed(name)? {
            Some(_) => Ok(()),
            None => Err(Error::NotInstalled {
                name: name.to_string(),
            }),
        }
    }

    /// Rename a complete folder into `toolchains/<name>`, replacing an old one when `force`.
    fn commit(&self, name: &str, ready: &Path, force: bool) -> Result<()> {
        let toolchains = self.home.toolchains_dir();
        std::fs::create_dir_all(&toolchains).map_err(|e| Error::io(&toolchains, e))?;
        let dir = self.home.toolchain_dir(name)?;
        if force && dir.exists() {
            let old = self
                .home
                .tmp_dir()
                .join(format!("{name}.{}.old", std::process::id()));
            std::fs::rename(&dir, &old).map_err(|e| Error::io(&dir, e))?;
            std::fs::rename(ready, &dir).map_err(|e| Error::io(&dir, e))?;
            std::fs::remove_dir_all(&old).map_err(|e| Error::io(&old, e))?;
        } else {
            std::fs::rename(ready, &dir).map_err(|e| Error::io(&dir, e))?;
        }
        Ok(())
    }

    fn report(&self, name: &str) -> Result<InstallReport> {
        let installed = self
            .home
            .find_installed(name)?
            .ok_or_else(|| Error::NotInstalled {
                name: name.to_string(),
            })?;
        Ok(InstallReport {
            toolchain: self.home.toolchain(&installed)?,
            installed,
            unchanged: false,
        })
    }
}

/// Where the toolchain is in an unpacked archive: its top level (TheRock tarballs are flat),
/// or its single top folder (`rocm-6.4.1/...`).
fn toolchain_root(unpacked: &Path, name: &str) -> Option<PathBuf> {
    if home::inspect_managed(unpacked, name).is_some() {
        return Some(unpacked.to_path_buf());
    }
    let entries: Vec<_> = std::fs::read_dir(unpacked).ok()?.flatten().collect();
    match entries.as_slice() {
        [only] if only.file_type().ok()?.is_dir() => {
            let inner = only.path();
            home::inspect_managed(&inner, name).map(|_| inner)
        }
        _ => None,
    }
}

fn strip_archive_suffix(name: &str) -> &str {
    [
        ".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.zst", ".tzst", ".tar",
    ]
    .iter()
    .find_map(|s| name.strip_suffix(s))
    .unwrap_or(name)
}

/// Lower-cased, or an error naming the bad value.
pub fn checked_sha256(s: &str) -> Result<String> {
    let lower = s.trim().to_ascii_lowercase();
    if dist::is_sha256_hex(&lower) {
        Ok(lower)
    } else {
        Err(Error::BadChecksum {
            value: s.to_string(),
        })
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_suffixes() {
        assert_eq!(strip_archive_suffix("rocm-6.4.1.tar.gz"), "rocm-6.4.1");
        assert_eq!(strip_archive_suffix("x.tar.zst"), "x");
        assert_eq!(strip_archive_suffix("plain"), "plain");
        assert!(checked_sha256("zz").is_err());
        assert_eq!(checked_sha256(&"AB".repeat(32)).unwrap(), "ab".repeat(32));
    }
}
