//! Unpacking archives without trusting them.
//!
//! Every entry is checked before anything is written for it: no absolute paths, no `..`,
//! no symbolic link whose target leaves the destination (absolute targets included), no hard
//! link to outside, no entry written through a link created by an earlier entry, and only
//! files, folders and links (no devices). The caller unpacks into a fresh folder under the
//! home's `tmp/`, so a rejected archive leaves nothing behind once that folder is removed.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Component, Path, PathBuf};

use tar::EntryType;

use crate::error::{Error, Result};

/// What an unpack wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnpackStats {
    /// Regular files written.
    pub files: u64,
    /// Folders created.
    pub dirs: u64,
    /// Symbolic and hard links created.
    pub links: u64,
    /// Bytes of file contents written.
    pub bytes: u64,
}

/// Unpack `archive` (`.tar`, `.tar.gz`, `.tar.xz` or `.tar.zst`, told apart by their first
/// bytes) into `dest`, which must exist and be empty.
pub fn unpack(archive: &Path, dest: &Path) -> Result<UnpackStats> {
    let reader = open_decompressed(archive)?;
    let mut tar = tar::Archive::new(reader);
    let bad = |message: String| Error::BadArchive {
        archive: archive.to_path_buf(),
        message,
    };
    let unsafe_entry = |entry: &str, reason: &str| Error::UnsafeArchive {
        archive: archive.to_path_buf(),
        entry: entry.to_string(),
        reason: reason.to_string(),
    };
    let mut stats = UnpackStats::default();
    let entries = tar.entries().map_err(|e| bad(e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(e.to_string()))?;
        let raw = entry.path().map_err(|e| bad(e.to_string()))?.into_owned();
        let shown = raw.display().to_string();
        let kind = entry.header().entry_type();
        if matches!(kind, EntryType::XGlobalHeader | EntryType::XHeader) {
            continue;
        }
        let rel = relative_inside(&raw).map_err(|r| unsafe_entry(&shown, r))?;
        if rel.as_os_str().is_empty() {
            continue; // `./` itself
        }
        let target = dest.join(&rel);
        ensure_no_link_on_the_way(dest, &rel).map_err(|r| unsafe_entry(&shown, r))?;
        if let Ok(meta) = std::fs::symlink_metadata(&target) {
            // A later entry with the same name: replace files, never follow or merge links.
            if meta.file_type().is_symlink() || (meta.is_file() && kind != EntryType::Directory) {
                std::fs::remove_file(&target).map_err(|e| Error::io(&target, e))?;
            } else if meta.is_dir() != (kind == EntryType::Directory) {
                return Err(unsafe_entry(
                    &shown,
                    "replaces a folder with a file (or the reverse)",
                ));
            }
        }
        let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
        match kind {
            EntryType::Directory => {
                std::fs::create_dir_all(&target).map_err(|e| Error::io(&target, e))?;
                stats.dirs += 1;
            }
            EntryType::Regular | EntryType::Continuous | EntryType::GNUSparse => {
                make_parent(&target)?;
                let mut out = File::create(&target).map_err(|e| Error::io(&target, e))?;
                let n = std::io::copy(&mut entry, &mut out).map_err(|e| bad(format!("{shown}: {e}")))?;
                set_mode(&target, mode)?;
                stats.files += 1;
                stats.bytes += n;
            }
            EntryType::Symlink => {
                let link = entry
                    .link_name()
                    .map_err(|e| bad(e.to_string()))?
                    .ok_or_else(|| bad(format!("{shown}: symbolic link without a target")))?
                    .into_owned();
                if link.is_absolute() {
                    return Err(unsafe_entry(
                        &shown,
                        &format!("is a symbolic link to the absolute path {}", link.display()),
                    ));
                }
                let from = rel.parent().unwrap_or(Path::new(""));
                if !link_stays_inside(from, &link) {
                    return Err(unsafe_entry(
                        &shown,
                        &format!("is a symbolic link to {}, outside the toolchain folder", link.display()),
                    ));
                }
                make_parent(&target)?;
                symlink(&link, &target)?;
                stats.links += 1;
            }
            EntryType::Link => {
                let link = entry
                    .link_name()
                    .map_err(|e| bad(e.to_string()))?
                    .ok_or_else(|| bad(format!("{shown}: hard link without a target")))?
                    .into_owned();
                let link_rel = relative_inside(&link).map_err(|r| {
                    unsafe_entry(&shown, &format!("is a hard link to {} which {r}", link.display()))
                })?;
                ensure_no_link_on_the_way(dest, &link_rel).map_err(|r| unsafe_entry(&shown, r))?;
                let source = dest.join(&link_rel);
                if !std::fs::symlink_metadata(&source).is_ok_and(|m| m.is_file()) {
                    return Err(unsafe_entry(&shown, "is a hard link to a file not unpacked before it"));
                }
                make_parent(&target)?;
                std::fs::hard_link(&source, &target).map_err(|e| Error::io(&target, e))?;
                stats.links += 1;
            }
            other => {
                return Err(unsafe_entry(
                    &shown,
                    &format!("has an unsupported type ({other:?}); toolchains hold only files, folders and links"),
                ))
            }
        }
    }
    Ok(stats)
}

/// An entry's name as a relative path inside the destination, or why not. `..` is refused
/// outright (as GNU tar does), even where it would stay inside.
fn relative_inside(path: &Path) -> std::result::Result<PathBuf, &'static str> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => return Err("leaves the toolchain folder (`..`)"),
            Component::RootDir | Component::Prefix(_) => return Err("is an absolute path"),
        }
    }
    Ok(out)
}

/// Whether a relative symlink target, seen from the folder `from` (inside the destination,
/// reached through real folders only), stays inside. `..` may only lead the target: after the
/// first name, a `..` could climb back out through another link (`d -> .`, `e -> d/d/../..`),
/// which lexical checks cannot see.
fn link_stays_inside(from: &Path, target: &Path) -> bool {
    let mut depth = from.components().count();
    let mut descended = false;
    for c in target.components() {
        match c {
            Component::ParentDir if !descended => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            Component::ParentDir => return false,
            Component::Normal(_) => descended = true,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

/// Refuse to write through a link an earlier entry made (`lib` → `/etc`, then `lib/passwd`).
fn ensure_no_link_on_the_way(dest: &Path, rel: &Path) -> std::result::Result<(), &'static str> {
    let mut at = dest.to_path_buf();
    let mut parts = rel.components().peekable();
    while let Some(c) = parts.next() {
        if parts.peek().is_none() {
            break; // the entry itself is handled by the caller
        }
        at.push(c);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err("would be written through a symbolic link");
        }
    }
    Ok(())
}

fn make_parent(path: &Path) -> Result<()> {
    match path.parent() {
        Some(p) => std::fs::create_dir_all(p).map_err(|e| Error::io(p, e)),
        None => Ok(()),
    }
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // Keep owner read/write so the toolchain can be removed; no set-id bits.
    let mode = (mode | 0o600) & 0o777;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| Error::io(path, e))
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> Result<()> {
    Ok(())
}

#[cfg(unix)]
fn symlink(link: &Path, at: &Path) -> Result<()> {
    std::os::unix::fs::symlink(link, at).map_err(|e| Error::io(at, e))
}

#[cfg(windows)]
fn symlink(link: &Path, at: &Path) -> Result<()> {
    std::os::windows::fs::symlink_file(link, at).map_err(|e| Error::io(at, e))
}

/// A reader of the tar stream inside `archive`, whatever its compression.
fn open_decompressed(archive: &Path) -> Result<Box<dyn Read>> {
    let mut file = File::open(archive).map_err(|e| Error::io(archive, e))?;
    let mut magic = [0u8; 6];
    let n = read_up_to(&mut file, &mut magic).map_err(|e| Error::io(archive, e))?;
    let file = File::open(archive).map_err(|e| Error::io(archive, e))?;
    let buffered = BufReader::with_capacity(256 * 1024, file);
    let magic = &magic[..n];
    Ok(if magic.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::MultiGzDecoder::new(buffered))
    } else if magic.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
        Box::new(xz2::read::XzDecoder::new_multi_decoder(buffered))
    } else if magic.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Box::new(
            zstd::stream::read::Decoder::with_buffer(buffered)
                .map_err(|e| Error::io(archive, e))?,
        )
    } else {
        Box::new(buffered)
    })
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_stay_inside() {
        assert_eq!(
            relative_inside(Path::new("./a/b")).unwrap(),
            Path::new("a/b")
        );
        assert!(relative_inside(Path::new("a/../b")).is_err());
        assert!(relative_inside(Path::new("../x")).is_err());
        assert!(relative_inside(Path::new("a/../../x")).is_err());
        assert!(relative_inside(Path::new("/etc/passwd")).is_err());
    }

    #[test]
    fn link_targets_must_stay_inside() {
        let bin = Path::new("lib/llvm/bin");
        assert!(link_stays_inside(bin, Path::new("clang")));
        assert!(link_stays_inside(bin, Path::new("../../../bin/hipcc")));
        assert!(!link_stays_inside(bin, Path::new("../../../../etc")));
        assert!(!link_stays_inside(Path::new(""), Path::new("..")));
        assert!(!link_stays_inside(
            Path::new("a"),
            Path::new("d/d/../../..")
        ));
        assert!(!link_stays_inside(Path::new("a"), Path::new("/etc")));
    }
}
