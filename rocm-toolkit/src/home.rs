//! The cargo-rocm home (`$CARGO_ROCM_HOME`, default `~/.rocm`) and which toolchain a crate uses.
//!
//! ```text
//! $CARGO_ROCM_HOME/
//!   settings.toml            default toolchain, directory overrides
//!   toolchains/<name>/       one folder per installed or linked toolchain,
//!     .cargo-rocm-toolchain.toml    with its metadata
//!   downloads/<sha256>       verified archives; `*.partial` while downloading
//!   tmp/                     installs in progress (same filesystem: they finish with a rename)
//!   .lock                    held by a process changing the home
//! ```
//!
//! [`resolve_toolchain`] picks the toolchain for a directory, first rule that applies:
//! 1. `CARGO_ROCM_TOOLCHAIN` (`cargo rocm +NAME` sets it): a toolchain name or a path;
//! 2. a directory override in `settings.toml` for the directory or an ancestor;
//! 3. the nearest `rocm-toolchain.toml` in the directory or an ancestor;
//! 4. the default toolchain in `settings.toml`;
//! 5. a ROCm install discovered on the system.
//!
//! This module reads files only (no network, no processes beyond what discovery runs), so a
//! build script can call it. Installing is `rocm-toolchains`' job.

pub mod family;
mod metadata;
mod pin;
mod settings;
pub mod version;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use metadata::{ArchiveRecord, DistInfo, InstallKind, ToolchainMetadata, METADATA_FILE};
pub use pin::{PinFile, ToolchainPin, PIN_FILE_NAME};
pub use settings::Settings;
pub use version::{Channel, PreRelease, Version, VersionError};

use crate::toolchain::{Toolchain, ToolchainSource};

/// Names the home folder.
pub const HOME_ENV: &str = "CARGO_ROCM_HOME";
/// Selects a toolchain by name or path, over every other rule (`cargo rocm +NAME` sets it).
pub const TOOLCHAIN_ENV: &str = "CARGO_ROCM_TOOLCHAIN";
/// Every environment variable resolution reads, for `cargo:rerun-if-env-changed`.
pub const RESOLUTION_ENV_VARS: &[&str] =
    &[HOME_ENV, TOOLCHAIN_ENV, "HOME", "ROCM_PATH", "HIP_PATH"];

/// Why the home could not be read or a toolchain not chosen. Messages say what to do.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    /// Neither `CARGO_ROCM_HOME` nor `HOME` is set, so the home has no place.
    #[error("cannot find the cargo-rocm home: neither {HOME_ENV} nor HOME is set; set {HOME_ENV} to a writable folder")]
    NoHome,
    /// Reading or writing a file or folder of the home failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// `settings.toml` is not valid TOML of [`Settings`]' shape (or could not be written as such).
    #[error("{}: malformed settings: {message}; fix or delete the file", path.display())]
    BadSettings {
        /// The `settings.toml`.
        path: PathBuf,
        /// The TOML parser's message.
        message: String,
    },
    /// A `rocm-toolchain.toml` cannot be read as a [`ToolchainPin`].
    #[error("{}: malformed pin file: {message}", path.display())]
    BadPinFile {
        /// The `rocm-toolchain.toml`.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A toolchain's `.cargo-rocm-toolchain.toml` cannot be read or written.
    #[error("{}: malformed toolchain metadata: {message}; reinstall the toolchain", path.display())]
    BadMetadata {
        /// The metadata file.
        path: PathBuf,
        /// The TOML parser's or writer's message.
        message: String,
    },
    /// A toolchain name that [`validate_name`] refuses.
    #[error("`{name}` is not a valid toolchain name: {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// A toolchain selected by name is neither installed in the home nor discovered on the
    /// system.
    #[error("toolchain `{name}` ({why}) is not installed; install it with `cargo rocm toolchain install`, link an existing install with `cargo rocm toolchain link {name} PATH`, or see `cargo rocm toolchain list`")]
    NotInstalled {
        /// The selected name.
        name: String,
        /// Which rule selected it (`pinned by …/rocm-toolchain.toml`, `CARGO_ROCM_TOOLCHAIN`).
        why: String,
    },
    /// A `rocm-toolchain.toml` asks for a version or channel that no installed toolchain
    /// matches; installers (`rocm-toolchains`' auto-install) catch this one and install it.
    #[error("{} pins {pin}, which is not installed; run `cargo rocm toolchain install` in that directory (cargo-rocm commands install it automatically unless CARGO_ROCM_NO_AUTO_INSTALL is set)", pin_file.display())]
    PinnedNotInstalled {
        /// The `rocm-toolchain.toml`.
        pin_file: PathBuf,
        /// What it asks for.
        pin: Box<ToolchainPin>,
    },
    /// A folder selected as a toolchain (by path, or an installed toolchain's root) holds
    /// neither a HIP compiler nor device libraries.
    #[error("no ROCm toolchain at {} (for {why}): no HIP compiler and no device libraries found there", root.display())]
    NotAToolchain {
        /// The folder.
        root: PathBuf,
        /// Which rule or toolchain pointed at it.
        why: String,
    },
    /// No rule selected a toolchain and discovery found none on the system.
    #[error("no ROCm toolchain: none selected ({TOOLCHAIN_ENV}, directory override, {PIN_FILE_NAME}, default) and none found on this system; install one with `cargo rocm toolchain install` (or `install system` for distribution packages)")]
    NoToolchain,
}

impl HomeError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> HomeError {
        HomeError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Which resolution rule chose a toolchain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum Rule {
    /// `CARGO_ROCM_TOOLCHAIN` or `cargo rocm +NAME`.
    Env,
    /// A directory override in `settings.toml`.
    DirectoryOverride {
        /// The overridden directory (the one resolved, or an ancestor).
        dir: PathBuf,
    },
    /// A `rocm-toolchain.toml`.
    PinFile {
        /// The pin file.
        path: PathBuf,
    },
    /// The default toolchain in `settings.toml`.
    Default,
    /// Nothing was selected; discovery found this install.
    System,
}

/// A chosen toolchain and why it was chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resolved {
    /// The toolchain, inspected: its compiler, device libraries and targets.
    pub toolchain: Toolchain,
    /// For people: which rule picked it, naming the file or variable.
    pub reason: String,
    /// For programs: the same, as data.
    pub rule: Rule,
}

/// A toolchain folder in the home with its metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Installed {
    /// The folder name under `toolchains/`, the name `+NAME` selects it by.
    pub name: String,
    /// `toolchains/<name>`.
    pub dir: PathBuf,
    /// Its `.cargo-rocm-toolchain.toml`: how it was installed, and from what release.
    pub metadata: ToolchainMetadata,
}

impl Installed {
    /// The install prefix: the folder itself, or a linked toolchain's target.
    pub fn root(&self) -> PathBuf {
        match (&self.metadata.kind, &self.metadata.root) {
            (InstallKind::Linked, Some(root)) => root.clone(),
            _ => self.dir.clone(),
        }
    }

    /// Whether a pin's version/channel/family asks for this toolchain.
    pub fn matches_pin(&self, pin: &ToolchainPin) -> bool {
        let Some(dist) = &self.metadata.dist else {
            return false;
        };
        let release_ok = match (&pin.version, &pin.channel) {
            (Some(v), _) => *v == dist.version,
            (None, Some(c)) => *c == dist.channel,
            _ => false,
        };
        release_ok && pin.family_matches(&dist.family)
    }
}

/// Check a toolchain name: it becomes a folder name and a `+NAME` argument.
pub fn validate_name(name: &str) -> Result<(), HomeError> {
    let invalid = |reason| {
        Err(HomeError::InvalidName {
            name: name.to_string(),
            reason,
        })
    };
    if name.is_empty() || name.len() > 128 {
        return invalid("it must have 1 to 128 characters");
    }
    if name.starts_with(['.', '-', '+']) {
        return invalid("it must not start with `.`, `-` or `+`");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
    {
        return invalid("use only ASCII letters, digits, `.`, `_`, `-` and `+`");
    }
    Ok(())
}

/// The cargo-rocm home folder. Cheap to create; nothing is read until asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// `$CARGO_ROCM_HOME`, else `$HOME/.rocm`.
    pub fn from_env() -> Result<Home, HomeError> {
        if let Some(p) = std::env::var_os(HOME_ENV).filter(|p| !p.is_empty()) {
            return Ok(Home::at(p));
        }
        let home = std::env::var_os("HOME")
            .filter(|p| !p.is_empty())
            .ok_or(HomeError::NoHome)?;
        Ok(Home::at(PathBuf::from(home).join(".rocm")))
    }

    /// A home at an explicit folder.
    pub fn at(root: impl Into<PathBuf>) -> Home {
        Home { root: root.into() }
    }

    /// The home folder itself.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// `toolchains/`: one folder per installed or linked toolchain.
    pub fn toolchains_dir(&self) -> PathBuf {
        self.root.join("toolchains")
    }
    /// `downloads/`: verified archives by sha256, `*.partial` while downloading.
    pub fn downloads_dir(&self) -> PathBuf {
        self.root.join("downloads")
    }
    /// `tmp/`: installs in progress, on the same filesystem so they finish with a rename.
    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }
    /// `settings.toml`: the default toolchain and directory overrides.
    pub fn settings_path(&self) -> PathBuf {
        self.root.join("settings.toml")
    }
    /// `.lock`: held by a process changing the home.
    pub fn lock_path(&self) -> PathBuf {
        self.root.join(".lock")
    }

    /// `toolchains/<name>`, after checking the name.
    pub fn toolchain_dir(&self, name: &str) -> Result<PathBuf, HomeError> {
        validate_name(name)?;
        Ok(self.toolchains_dir().join(name))
    }

    /// `settings.toml`, or the default settings when the file does not exist.
    pub fn settings(&self) -> Result<Settings, HomeError> {
        let path = self.settings_path();
        match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text).map_err(|e| HomeError::BadSettings {
                path,
                message: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Settings::default()),
            Err(e) => Err(HomeError::io(&path, e)),
        }
    }

    /// Replace `settings.toml` atomically (write a sibling, then rename). Callers that
    /// read-modify-write should hold the home lock.
    pub fn save_settings(&self, settings: &Settings) -> Result<(), HomeError> {
        let path = self.settings_path();
        std::fs::create_dir_all(&self.root).map_err(|e| HomeError::io(&self.root, e))?;
        let text = toml::to_string(settings).map_err(|e| HomeError::BadSettings {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let tmp = self
            .root
            .join(format!("settings.toml.{}.tmp", std::process::id()));
        std::fs::write(&tmp, text).map_err(|e| HomeError::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| HomeError::io(&path, e))
    }

    /// Every toolchain in the home, by name. Folders without metadata are not ours; skipped.
    pub fn installed(&self) -> Result<Vec<Installed>, HomeError> {
        let dir = self.toolchains_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(HomeError::io(&dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| HomeError::io(&dir, e))?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if validate_name(&name).is_err() || !entry.path().is_dir() {
                continue;
            }
            if let Some(metadata) = ToolchainMetadata::read(&entry.path())? {
                out.push(Installed {
                    name,
                    dir: entry.path(),
                    metadata,
                });
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The installed toolchain called `name`, if any.
    pub fn find_installed(&self, name: &str) -> Result<Option<Installed>, HomeError> {
        let dir = self.toolchain_dir(name)?;
        Ok(ToolchainMetadata::read(&dir)?.map(|metadata| Installed {
            name: name.to_string(),
            dir,
            metadata,
        }))
    }

    /// Inspect an installed toolchain.
    pub fn toolchain(&self, installed: &Installed) -> Result<Toolchain, HomeError> {
        let root = installed.root();
        inspect(
            &root,
            ToolchainSource::Managed {
                name: installed.name.clone(),
            },
        )
        .ok_or_else(|| HomeError::NotAToolchain {
            root,
            why: format!("toolchain `{}`", installed.name),
        })
    }

    /// The toolchain for `start_dir` by the rules in the module docs, with `env_selection`
    /// standing in for `CARGO_ROCM_TOOLCHAIN`.
    pub fn resolve(
        &self,
        start_dir: &Path,
        env_selection: Option<&str>,
    ) -> Result<Resolved, HomeError> {
        let start = std::fs::canonicalize(start_dir).unwrap_or_else(|_| start_dir.to_path_buf());
        if let Some(sel) = env_selection.filter(|s| !s.is_empty()) {
            let why = format!("{TOOLCHAIN_ENV}={sel} (or `cargo rocm +{sel}`)");
            let toolchain = self.by_name_or_path(sel, &why)?;
            return Ok(Resolved {
                toolchain,
                reason: format!("selected by {why}"),
                rule: Rule::Env,
            });
        }
        let settings = self.settings()?;
        if let Some((dir, name)) = settings.override_for(&start) {
            let why = format!(
                "directory override for {} in {}",
                dir.display(),
                self.settings_path().display()
            );
            return Ok(Resolved {
                toolchain: self.by_name(name, &why)?,
                reason: why,
                rule: Rule::DirectoryOverride {
                    dir: dir.to_path_buf(),
                },
            });
        }
        if let Some(pin_file) = PinFile::find(&start)? {
            let toolchain = self.resolve_pin(&pin_file)?;
            return Ok(Resolved {
                toolchain,
                reason: format!("pinned by {}", pin_file.path.display()),
                rule: Rule::PinFile {
                    path: pin_file.path,
                },
            });
        }
        if let Some(name) = &settings.default {
            let why = format!("default in {}", self.settings_path().display());
            return Ok(Resolved {
                toolchain: self.by_name(name, &why)?,
                reason: why,
                rule: Rule::Default,
            });
        }
        let toolchain = discover_best().ok_or(HomeError::NoToolchain)?;
        Ok(Resolved {
            reason: format!(
                "nothing selected; discovered system install at {}",
                toolchain.root.display()
            ),
            toolchain,
            rule: Rule::System,
        })
    }

    /// The toolchain a pin file asks for, among those installed. A missing `version`/`channel`
    /// pin is [`HomeError::PinnedNotInstalled`], which installers act on.
    pub fn resolve_pin(&self, pin_file: &PinFile) -> Result<Toolchain, HomeError> {
        let pin = &pin_file.pin;
        let why = format!("pinned by {}", pin_file.path.display());
        if let Some(path) = &pin.path {
            return inspect(path, ToolchainSource::Path).ok_or_else(|| HomeError::NotAToolchain {
                root: path.clone(),
                why,
            });
        }
        if let Some(name) = &pin.name {
            return self.by_name(name, &why);
        }
        let best = self
            .installed()?
            .into_iter()
            .filter(|i| i.matches_pin(pin))
            .max_by(|a, b| {
                let va = &a.metadata.dist.as_ref().expect("matched").version;
                let vb = &b.metadata.dist.as_ref().expect("matched").version;
                va.cmp(vb).then_with(|| a.name.cmp(&b.name))
            });
        match best {
            Some(installed) => self.toolchain(&installed),
            None => Err(HomeError::PinnedNotInstalled {
                pin_file: pin_file.path.clone(),
                pin: Box::new(pin.clone()),
            }),
        }
    }

    /// An installed toolchain by name; failing that, a discovered system install of that name
    /// (`system`, `rocm-6.2.0`, `pip-6.4.1`: what `cargo rocm detect` lists), so `+system`
    /// works without linking it first.
    fn by_name(&self, name: &str, why: &str) -> Result<Toolchain, HomeError> {
        if let Some(installed) = self.find_installed(name)? {
            return self.toolchain(&installed);
        }
        crate::toolchain::discover()
            .toolchains
            .into_iter()
            .find(|t| t.name == name)
            .ok_or_else(|| HomeError::NotInstalled {
                name: name.to_string(),
                why: why.to_string(),
            })
    }

    fn by_name_or_path(&self, selection: &str, why: &str) -> Result<Toolchain, HomeError> {
        if selection.contains(std::path::MAIN_SEPARATOR) {
            let path = Path::new(selection);
            return inspect(path, ToolchainSource::Path).ok_or_else(|| HomeError::NotAToolchain {
                root: path.to_path_buf(),
                why: why.to_string(),
            });
        }
        self.by_name(selection, why)
    }
}

/// [`Home::resolve`] for the home named by the environment and `CARGO_ROCM_TOOLCHAIN`.
/// `start_dir` is where to look for pin files and overrides: a crate's manifest directory,
/// or the current directory.
///
/// ```no_run
/// let resolved = rocm_toolkit::home::resolve_toolchain(std::path::Path::new(".")).unwrap();
/// println!("ROCM_PATH={} ({})", resolved.toolchain.root.display(), resolved.reason);
/// ```
pub fn resolve_toolchain(start_dir: &Path) -> Result<Resolved, HomeError> {
    let selection = std::env::var(TOOLCHAIN_ENV).ok();
    Home::from_env()?.resolve(start_dir, selection.as_deref())
}

/// Inspect the install prefix `root` as the managed toolchain `name` (what installers check
/// before they commit an install). `None` when there is no ROCm toolchain there.
pub fn inspect_managed(root: &Path, name: &str) -> Option<Toolchain> {
    inspect(
        root,
        ToolchainSource::Managed {
            name: name.to_string(),
        },
    )
}

fn inspect(root: &Path, source: ToolchainSource) -> Option<Toolchain> {
    crate::toolchain::inspect(root, source)
}

/// The install discovery would use when nothing else is said.
fn discover_best() -> Option<Toolchain> {
    crate::toolchain::discover().best().cloned()
}

#[cfg(test)]
mod tests;
