//! Clang offload bundles: the plain `__CLANG_OFFLOAD_BUNDLE__` layout and the compressed `CCOB`
//! wrapper (versions 1–3, zlib or zstd), as documented in clang's `ClangOffloadBundler.rst` and
//! `OffloadBundler.h`. All integers are little-endian.
//!
//! Plain bundle:
//! ```text
//! "__CLANG_OFFLOAD_BUNDLE__"  24 bytes
//! entry count                 u64
//! per entry: offset u64 (from the bundle start), size u64, id length u64, id bytes
//! ```
//! Compressed bundle (`CCOB`): magic, version u16, method u16 (0 zlib, 1 zstd), then
//! v1: uncompressed size u32, hash u64 (data runs to the end of the input);
//! v2: total size u32, uncompressed size u32, hash u64;
//! v3: total size u64, uncompressed size u64, hash u64; then the compressed plain bundle.

use std::io::Read;
use std::ops::Range;

use serde::Serialize;

use super::error::CodeObjectError;

/// Magic of an uncompressed bundle.
pub const PLAIN_MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";
/// Magic of a compressed bundle.
pub const COMPRESSED_MAGIC: &[u8; 4] = b"CCOB";

/// No real code object compresses better than this; a header claiming more is corrupt, and
/// refusing it keeps a few hostile bytes from asking for gigabytes.
const MAX_COMPRESSION_RATIO: u64 = 4096;
/// Upper bound on any single decompressed bundle, whatever the ratio.
const MAX_DECOMPRESSED: u64 = 4 << 30;
/// Memory reserved up front while decompressing; the rest grows only as real data arrives.
const MAX_PREALLOC: u64 = 16 << 20;

/// One entry of a plain bundle: its id and where its bytes are, relative to the bundle start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    /// The bundle entry id as stored (`hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`).
    pub id: String,
    /// Byte range of the entry's code object, from the bundle start.
    pub range: Range<usize>,
}

/// A parsed plain bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainBundle {
    /// The entries in header order, the host entry included.
    pub entries: Vec<RawEntry>,
    /// Bytes from the bundle start to the end of its last entry (or of its header).
    pub extent: usize,
}

/// The compression a `CCOB` bundle uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CompressionMethod {
    /// zlib (deflate), method 0.
    Zlib,
    /// Zstandard, method 1.
    Zstd,
}

/// The fixed header of a compressed bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompressedHeader {
    /// Format version: 1, 2 or 3.
    pub version: u16,
    /// How the plain bundle after the header is compressed.
    pub method: CompressionMethod,
    /// Size of the whole compressed bundle, header included (absent in version 1).
    pub total_size: Option<u64>,
    /// Size of the plain bundle once decompressed.
    pub uncompressed_size: u64,
    /// The truncated hash of the uncompressed bundle clang stores (not verified here: its
    /// algorithm changed between clang versions, and decompression already checks the size).
    pub hash: u64,
    /// Bytes of this header (20, 24 or 32).
    pub header_len: usize,
}

fn read_u16(data: &[u8], at: usize, what: &'static str) -> Result<u16, CodeObjectError> {
    data.get(at..at + 2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or_else(|| CodeObjectError::truncated(what, at as u64, 2, data.len()))
}

fn read_u32(data: &[u8], at: usize, what: &'static str) -> Result<u32, CodeObjectError> {
    data.get(at..at + 4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
        .ok_or_else(|| CodeObjectError::truncated(what, at as u64, 4, data.len()))
}

fn read_u64(data: &[u8], at: usize, what: &'static str) -> Result<u64, CodeObjectError> {
    data.get(at..at.saturating_add(8))
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .ok_or_else(|| CodeObjectError::truncated(what, at as u64, 8, data.len()))
}

/// Parse the plain bundle that starts at `data[0]`. Entries must lie within `data`.
pub fn parse_plain(data: &[u8]) -> Result<PlainBundle, CodeObjectError> {
    if !data.starts_with(PLAIN_MAGIC) {
        return Err(CodeObjectError::Bundle(
            "missing `__CLANG_OFFLOAD_BUNDLE__` magic".into(),
        ));
    }
    let count = read_u64(data, PLAIN_MAGIC.len(), "bundle entry count")?;
    let mut at = PLAIN_MAGIC.len() + 8;
    // Each entry header takes at least 24 bytes: a larger count cannot be honest.
    let max_entries = (data.len() - at.min(data.len())) / 24;
    if count > max_entries as u64 {
        return Err(CodeObjectError::Bundle(format!(
            "header claims {count} entries but {} bytes hold at most {max_entries}",
            data.len()
        )));
    }
    let mut entries = Vec::with_capacity(count as usize);
    let mut extent = 0usize;
    for index in 0..count {
        let offset = read_u64(data, at, "bundle entry offset")?;
        let size = read_u64(data, at + 8, "bundle entry size")?;
        let id_len = read_u64(data, at + 16, "bundle entry id length")?;
        at += 24;
        let id_bytes = usize::try_from(id_len)
            .ok()
            .and_then(|n| data.get(at..at.checked_add(n)?))
            .ok_or_else(|| {
                CodeObjectError::truncated("bundle entry id", at as u64, id_len, data.len())
            })?;
        at += id_bytes.len();
        let id = std::str::from_utf8(id_bytes)
            .map_err(|_| CodeObjectError::Bundle(format!("entry {index}: id is not UTF-8")))?
            .to_owned();
        let end = offset
            .checked_add(size)
            .filter(|&end| end <= data.len() as u64)
            .ok_or_else(|| {
                CodeObjectError::Bundle(format!(
                    "entry {index} (`{id}`) claims bytes {offset}..{} but the bundle has {}",
                    offset.saturating_add(size),
                    data.len()
                ))
            })?;
        let range = offset as usize..end as usize;
        extent = extent.max(range.end);
        entries.push(RawEntry { id, range });
    }
    Ok(PlainBundle {
        entries,
        extent: extent.max(at),
    })
}

/// Parse the header of the compressed bundle that starts at `data[0]`.
pub fn parse_compressed_header(data: &[u8]) -> Result<CompressedHeader, CodeObjectError> {
    if !data.starts_with(COMPRESSED_MAGIC) {
        return Err(CodeObjectError::Compressed("missing `CCOB` magic".into()));
    }
    let version = read_u16(data, 4, "compressed bundle version")?;
    let method = match read_u16(data, 6, "compressed bundle method")? {
        0 => CompressionMethod::Zlib,
        1 => CompressionMethod::Zstd,
        other => {
            return Err(CodeObjectError::Compressed(format!(
                "unknown compression method {other} (expected 0 = zlib or 1 = zstd)"
            )))
        }
    };
    let (total_size, uncompressed_size, hash, header_len) = match version {
        1 => (
            None,
            read_u32(data, 8, "uncompressed size")? as u64,
            read_u64(data, 12, "hash")?,
            20,
        ),
        2 => (
            Some(read_u32(data, 8, "total size")? as u64),
            read_u32(data, 12, "uncompressed size")? as u64,
            read_u64(data, 16, "hash")?,
            24,
        ),
        3 => (
            Some(read_u64(data, 8, "total size")?),
            read_u64(data, 16, "uncompressed size")?,
            read_u64(data, 24, "hash")?,
            32,
        ),
        other => {
            return Err(CodeObjectError::Compressed(format!(
                "unsupported version {other} (this reader knows versions 1, 2 and 3; \
                 a newer clang may have written it)"
            )))
        }
    };
    Ok(CompressedHeader {
        version,
        method,
        total_size,
        uncompressed_size,
        hash,
        header_len,
    })
}

/// Decompress the compressed bundle at `data[0]`. Returns its header, the plain bundle bytes,
/// and the compressed bundle's extent in `data`.
pub fn decompress(data: &[u8]) -> Result<(CompressedHeader, Vec<u8>, usize), CodeObjectError> {
    let header = parse_compressed_header(data)?;
    let extent = match header.total_size {
        None => data.len(),
        Some(total) => {
            if total < header.header_len as u64 || total > data.len() as u64 {
                return Err(CodeObjectError::Compressed(format!(
                    "header claims a total size of {total} bytes, but {} are present \
                     (and the header alone takes {})",
                    data.len(),
                    header.header_len
                )));
            }
            total as usize
        }
    };
    let payload = &data[header.header_len..extent];
    let wanted = header.uncompressed_size;
    let limit = (payload.len() as u64)
        .saturating_mul(MAX_COMPRESSION_RATIO)
        .saturating_add(4096)
        .min(MAX_DECOMPRESSED);
    if wanted > limit {
        return Err(CodeObjectError::Compressed(format!(
            "header claims {wanted} bytes uncompressed from {} compressed, more than this \
             reader accepts ({limit})",
            payload.len()
        )));
    }
    let mut out = Vec::with_capacity(wanted.min(MAX_PREALLOC) as usize);
    // Read one byte past the claimed size so a lying header is caught, not silently trimmed.
    let read = match header.method {
        CompressionMethod::Zlib => flate2::read::ZlibDecoder::new(payload)
            .take(wanted + 1)
            .read_to_end(&mut out),
        CompressionMethod::Zstd => zstd::stream::read::Decoder::with_buffer(payload)
            .and_then(|d| d.take(wanted + 1).read_to_end(&mut out)),
    };
    read.map_err(|e| {
        CodeObjectError::Compressed(format!("{:?} data does not decompress: {e}", header.method))
    })?;
    if out.len() as u64 != wanted {
        return Err(CodeObjectError::Compressed(format!(
            "decompressed to {} bytes but the header says {wanted}",
            out.len()
        )));
    }
    Ok((header, out, extent))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A plain bundle holding `entries` (id, bytes), laid out as clang does (data after headers).
    pub(crate) fn plain_bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let header_len: usize = 32 + entries.iter().map(|(id, _)| 24 + id.len()).sum::<usize>();
        let mut out = PLAIN_MAGIC.to_vec();
        out.extend((entries.len() as u64).to_le_bytes());
        let mut offset = header_len;
        for (id, bytes) in entries {
            out.extend((offset as u64).to_le_bytes());
            out.extend((bytes.len() as u64).to_le_bytes());
            out.extend((id.len() as u64).to_le_bytes());
            out.extend(id.as_bytes());
            offset += bytes.len();
        }
        for (_, bytes) in entries {
            out.extend(*bytes);
        }
        out
    }

    /// Wrap `plain` in a `CCOB` header of `version` with `method`.
    pub(crate) fn compressed_bundle(
        plain: &[u8],
        version: u16,
        method: CompressionMethod,
    ) -> Vec<u8> {
        use std::io::Write;
        let payload = match method {
            CompressionMethod::Zstd => zstd::encode_all(plain, 3).unwrap(),
            CompressionMethod::Zlib => {
                let mut e =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(plain).unwrap();
                e.finish().unwrap()
            }
        };
        let mut out = COMPRESSED_MAGIC.to_vec();
        out.extend(version.to_le_bytes());
        out.extend((method as u16).to_le_bytes());
        let hash = 0x1234_5678_9abc_def0u64;
        match version {
            1 => {
                out.extend((plain.len() as u32).to_le_bytes());
                out.extend(hash.to_le_bytes());
            }
            2 => {
                out.extend(((24 + payload.len()) as u32).to_le_bytes());
                out.extend((plain.len() as u32).to_le_bytes());
                out.extend(hash.to_le_bytes());
            }
            _ => {
                out.extend(((32 + payload.len()) as u64).to_le_bytes());
                out.extend((plain.len() as u64).to_le_bytes());
                out.extend(hash.to_le_bytes());
            }
        }
        out.extend(payload);
        out
    }

    #[test]
    fn plain_bundle_entries_and_extent() {
        let b = plain_bundle(&[
            ("host-x86_64-unknown-linux--", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"ELF!"),
        ]);
        let parsed = parse_plain(&b).unwrap();
        assert_eq!(parsed.entries.len(), 2);
        assert_eq!(parsed.entries[1].id, "hipv4-amdgcn-amd-amdhsa--gfx90a");
        assert_eq!(&b[parsed.entries[1].range.clone()], b"ELF!");
        assert_eq!(parsed.extent, b.len());
    }

    #[test]
    fn plain_bundle_lies_are_errors() {
        let mut b = plain_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", b"ELF!")]);
        // Entry count far beyond what the bytes can hold.
        let mut huge = b.clone();
        huge[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            parse_plain(&huge),
            Err(CodeObjectError::Bundle(_))
        ));
        // Entry size past the end.
        b[40..48].copy_from_slice(&1000u64.to_le_bytes());
        assert!(matches!(parse_plain(&b), Err(CodeObjectError::Bundle(_))));
        // Truncated in the middle of an entry id.
        assert!(matches!(
            parse_plain(&b[..60]),
            Err(CodeObjectError::Truncated { .. })
        ));
    }

    #[test]
    fn every_compressed_version_and_method_round_trips() {
        let plain = plain_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx1030", &[7u8; 5000])]);
        for version in [1, 2, 3] {
            for method in [CompressionMethod::Zlib, CompressionMethod::Zstd] {
                let c = compressed_bundle(&plain, version, method);
                let (header, out, extent) = decompress(&c).unwrap();
                assert_eq!((header.version, header.method), (version, method));
                assert_eq!(out, plain, "v{version} {method:?}");
                assert_eq!(extent, c.len());
            }
        }
    }

    #[test]
    fn compressed_header_lies_are_errors() {
        let plain = plain_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx1030", &[7u8; 64])]);
        let c = compressed_bundle(&plain, 3, CompressionMethod::Zstd);
        // A claimed uncompressed size far beyond any real compression ratio.
        let mut greedy = c.clone();
        greedy[16..24].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(matches!(
            decompress(&greedy),
            Err(CodeObjectError::Compressed(_))
        ));
        // A claimed size that does not match what the stream holds.
        let mut short = c.clone();
        short[16..24].copy_from_slice(&10u64.to_le_bytes());
        assert!(matches!(
            decompress(&short),
            Err(CodeObjectError::Compressed(_))
        ));
        // A total size past the end of the input.
        let mut long = c.clone();
        long[8..16].copy_from_slice(&(c.len() as u64 + 1).to_le_bytes());
        assert!(matches!(
            decompress(&long),
            Err(CodeObjectError::Compressed(_))
        ));
        // Unknown method and version.
        let mut method = c.clone();
        method[6] = 9;
        assert!(decompress(&method).is_err());
        let mut version = c;
        version[4] = 4;
        assert!(decompress(&version).is_err());
    }
}
