//! Reading clang offload bundles (what `clang -x hip --cuda-device-only` writes for several
//! `--offload-arch`s) and picking the entry a device can run.
//!
//! Layout (little-endian): the magic `__CLANG_OFFLOAD_BUNDLE__`, a u64 entry count, then per
//! entry a u64 offset (from the start of the bundle), a u64 size, a u64 id length and the id,
//! e.g. `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-` or `host-x86_64-unknown-linux-gnu-`.
//! Compressed bundles (`CCOB` magic) are not decoded here: HIP ≥ 6.2 loads them itself.
//!
//! This reader is deliberately minimal (a dozen lines of format, no dependency); the crate's
//! fuller code-object tooling lives elsewhere and is not needed to choose an entry.

/// Magic of an uncompressed bundle.
pub const BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
/// Magic of a compressed bundle (`clang --offload-compress`).
pub const COMPRESSED_BUNDLE_MAGIC: &[u8] = b"CCOB";

/// One entry of a bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BundleEntry<'a> {
    /// `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`.
    pub id: &'a str,
    /// The code object (an AMDGPU ELF for device entries; empty for the host entry).
    pub bytes: &'a [u8],
}

impl<'a> BundleEntry<'a> {
    /// The AMDGPU target of a device entry (`gfx90a:xnack-`), `None` for host entries.
    pub fn target(&self) -> Option<TargetId> {
        let (_kind, rest) = self.id.split_once('-')?;
        if !rest.starts_with("amdgcn-") {
            return None;
        }
        // The target id follows the triple after one or two dashes (`amdhsa--gfx90a` with a
        // 4-part triple, `amdhsa-gfx906` in clang < 12); its features contain dashes themselves
        // (`xnack-`), so split at the first `-gfx` rather than on every dash.
        let at = rest.find("-gfx")?;
        TargetId::parse(&rest[at + 1..])
    }
}

/// Read the entries of an uncompressed offload bundle. Every offset, size and id is checked
/// against the bundle's length, so a truncated or corrupt bundle is an error, not a panic.
pub fn read_bundle(bytes: &[u8]) -> Result<Vec<BundleEntry<'_>>, String> {
    if !bytes.starts_with(BUNDLE_MAGIC) {
        return Err("not a clang offload bundle (no __CLANG_OFFLOAD_BUNDLE__ magic)".into());
    }
    let mut cursor = Cursor {
        bytes,
        at: BUNDLE_MAGIC.len(),
    };
    let count = cursor.u64("the entry count")?;
    // Each entry header takes at least 24 bytes; a larger count is corruption.
    if count > (bytes.len() as u64) / 24 {
        return Err(format!(
            "bundle claims {count} entries in {} bytes",
            bytes.len()
        ));
    }
    let mut entries = Vec::new();
    for index in 0..count {
        let offset = cursor.u64("an entry offset")?;
        let size = cursor.u64("an entry size")?;
        let id_len = cursor.u64("an id length")?;
        let id = cursor.take(id_len, "an entry id")?;
        let id = std::str::from_utf8(id)
            .map_err(|_| format!("entry {index} has an id that is not UTF-8"))?;
        let data = offset
            .checked_add(size)
            .and_then(|end| bytes.get(usize::try_from(offset).ok()?..usize::try_from(end).ok()?))
            .ok_or_else(|| {
                format!(
                    "entry {index} (`{id}`) spans bytes {offset}..{} of a {}-byte bundle",
                    offset.saturating_add(size),
                    bytes.len()
                )
            })?;
        entries.push(BundleEntry { id, bytes: data });
    }
    Ok(entries)
}

/// Reads little-endian fields front to back, with the position for error messages.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, len: u64, what: &str) -> Result<&'a [u8], String> {
        let field = usize::try_from(len)
            .ok()
            .and_then(|len| self.bytes.get(self.at..self.at.checked_add(len)?))
            .ok_or_else(|| format!("bundle truncated at byte {} (reading {what})", self.at))?;
        self.at += field.len();
        Ok(field)
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let field = self.take(8, what)?;
        Ok(u64::from_le_bytes(
            field.try_into().expect("take returned 8 bytes"),
        ))
    }
}

/// A target id: a processor and its feature settings (`gfx90a:sramecc+:xnack-`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetId {
    /// `gfx90a`.
    pub processor: String,
    /// `("xnack", false)` for `xnack-`; features not mentioned are "any".
    pub features: Vec<(String, bool)>,
}

impl TargetId {
    /// Parse `gfx90a`, `gfx90a:xnack-`, `gfx940:sramecc+:xnack+`. `None` unless it starts with
    /// `gfx` and every feature ends in `+` or `-`.
    pub fn parse(text: &str) -> Option<TargetId> {
        let mut parts = text.trim().split(':');
        let processor = parts.next()?;
        let valid = processor.len() > 3
            && processor.starts_with("gfx")
            && processor[3..].bytes().all(|b| b.is_ascii_alphanumeric());
        if !valid {
            return None;
        }
        let mut features = Vec::new();
        for feature in parts {
            let (name, on) = match feature.as_bytes().last() {
                Some(b'+') => (&feature[..feature.len() - 1], true),
                Some(b'-') => (&feature[..feature.len() - 1], false),
                _ => return None,
            };
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return None;
            }
            features.push((name.to_string(), on));
        }
        Some(TargetId {
            processor: processor.to_string(),
            features,
        })
    }

    /// Whether code compiled for `self` runs on a device whose target id is `device`: same
    /// processor, and every feature `self` fixes is set the same way on the device (a feature
    /// the device does not report is assumed compatible).
    pub fn runs_on(&self, device: &TargetId) -> bool {
        self.processor == device.processor
            && self.features.iter().all(|(name, on)| {
                device
                    .features
                    .iter()
                    .find(|(n, _)| n == name)
                    .is_none_or(|(_, device_on)| device_on == on)
            })
    }
}

impl std::fmt::Display for TargetId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.processor)?;
        for (name, on) in &self.features {
            write!(f, ":{name}{}", if *on { '+' } else { '-' })?;
        }
        Ok(())
    }
}

/// Among `entries`, the one to load on a device with target id `device`: a compatible entry
/// that fixes the most features (a `gfx90a:xnack-` build beats a generic `gfx90a` one on an
/// `xnack-` device, as HIP's own loader chooses). `Err` lists the targets the bundle has.
pub fn select_entry<'a>(
    entries: &[BundleEntry<'a>],
    device: &TargetId,
) -> Result<BundleEntry<'a>, String> {
    entries
        .iter()
        .filter_map(|entry| entry.target().map(|target| (entry, target)))
        .filter(|(_, target)| target.runs_on(device))
        .max_by_key(|(_, target)| target.features.len())
        .map(|(entry, _)| *entry)
        .ok_or_else(|| available_targets(entries))
}

/// `gfx1030, gfx90a:xnack-` for the device entries, or `no device code` when there are none.
pub fn available_targets(entries: &[BundleEntry<'_>]) -> String {
    let targets: Vec<String> = entries
        .iter()
        .filter_map(|e| e.target().map(|t| t.to_string()))
        .collect();
    if targets.is_empty() {
        "no AMDGPU code objects".into()
    } else {
        targets.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bundle in the layout clang writes, entries placed after the header.
    fn bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let header_len: usize =
            BUNDLE_MAGIC.len() + 8 + entries.iter().map(|(id, _)| 24 + id.len()).sum::<usize>();
        let mut out = BUNDLE_MAGIC.to_vec();
        out.extend((entries.len() as u64).to_le_bytes());
        let mut offset = header_len;
        for (id, data) in entries {
            out.extend((offset as u64).to_le_bytes());
            out.extend((data.len() as u64).to_le_bytes());
            out.extend((id.len() as u64).to_le_bytes());
            out.extend(id.as_bytes());
            offset += data.len();
        }
        for (_, data) in entries {
            out.extend(*data);
        }
        out
    }

    fn target(text: &str) -> TargetId {
        TargetId::parse(text).unwrap()
    }

    #[test]
    fn entries_are_read_with_their_ids_and_bytes() {
        let bytes = bundle(&[
            ("host-x86_64-unknown-linux-gnu-", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", b"ELF-A"),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", b"ELF-B"),
        ]);
        let entries = read_bundle(&bytes).unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[1].bytes, b"ELF-A");
        assert_eq!(entries[2].id, "hipv4-amdgcn-amd-amdhsa--gfx1030");
        assert_eq!(entries[0].target(), None);
        assert_eq!(entries[1].target(), Some(target("gfx90a:xnack-")));
        assert_eq!(available_targets(&entries), "gfx90a:xnack-, gfx1030");
    }

    #[test]
    fn old_three_part_triples_are_understood() {
        let entry = BundleEntry {
            id: "hip-amdgcn-amd-amdhsa-gfx906",
            bytes: b"",
        };
        assert_eq!(entry.target(), Some(target("gfx906")));
    }

    #[test]
    fn corrupt_bundles_are_errors_not_panics() {
        let good = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", b"0123456789")]);
        for len in 0..good.len() {
            assert!(read_bundle(&good[..len]).is_err(), "truncated to {len}");
        }
        assert!(read_bundle(b"CCOB....").unwrap_err().contains("magic"));
        // An entry pointing past the end.
        let mut bad = good.clone();
        let offset_at = BUNDLE_MAGIC.len() + 8;
        bad[offset_at..offset_at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(read_bundle(&bad).unwrap_err().contains("spans"));
        // An absurd entry count.
        let mut bad = good;
        bad[BUNDLE_MAGIC.len()..BUNDLE_MAGIC.len() + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(read_bundle(&bad).unwrap_err().contains("claims"));
    }

    #[test]
    fn target_ids_parse_and_print() {
        let t = target("gfx942:sramecc+:xnack-");
        assert_eq!(t.processor, "gfx942");
        assert_eq!(
            t.features,
            vec![("sramecc".to_string(), true), ("xnack".to_string(), false)]
        );
        assert_eq!(t.to_string(), "gfx942:sramecc+:xnack-");
        for bad in ["", "gfx", "sm_90", "gfx90a:xnack", "gfx90a:+", "gfx9-0a"] {
            assert_eq!(TargetId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn features_decide_compatibility() {
        let device = target("gfx90a:sramecc+:xnack-");
        assert!(target("gfx90a").runs_on(&device));
        assert!(target("gfx90a:xnack-").runs_on(&device));
        assert!(!target("gfx90a:xnack+").runs_on(&device));
        assert!(!target("gfx908").runs_on(&device));
        // A device that does not report a feature accepts either setting.
        assert!(target("gfx90a:xnack+").runs_on(&target("gfx90a")));
    }

    #[test]
    fn selection_prefers_the_most_specific_compatible_entry() {
        let bytes = bundle(&[
            ("host-x86_64-unknown-linux-gnu-", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"generic"),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", b"xnack-off"),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", b"xnack-on"),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", b"rdna2"),
        ]);
        let entries = read_bundle(&bytes).unwrap();
        let pick = |device: &str| select_entry(&entries, &target(device)).map(|e| e.bytes);
        assert_eq!(pick("gfx90a:sramecc+:xnack-").unwrap(), b"xnack-off");
        assert_eq!(pick("gfx90a:xnack+").unwrap(), b"xnack-on");
        assert_eq!(pick("gfx1030").unwrap(), b"rdna2");
        let error = pick("gfx942:sramecc+:xnack-").unwrap_err();
        assert_eq!(
            error, "gfx90a, gfx90a:xnack-, gfx90a:xnack+, gfx1030",
            "the error lists what the bundle has"
        );
    }
}
