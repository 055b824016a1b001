//! TheRock's published tarballs: reading an index, parsing file names, choosing a build.
//!
//! File names are `therock-dist-<platform>-<family>-<version>.tar.gz`, e.g.
//! `therock-dist-linux-gfx94X-dcgpu-7.0.0rc20250818.tar.gz` (per-family layout) or
//! `therock-dist-linux-gfx1151-7.14.0a20260612.tar.gz` (multi-arch layout, one per target).
//! Indexes come in several shapes: an HTML page with links, an HTML page embedding the listing
//! as JSON (`const files = [{"name": ...}]`), or an S3 bucket listing (`<Key>...</Key>`).
//! Rather than parse each, [`parse_index`] scans the text for anything shaped like a TheRock
//! file name, which covers all three.

use std::collections::BTreeSet;

use rocm_toolkit::home::{Channel, DistInfo, Version};
use serde::Serialize;

/// Overrides every channel's index URL (comma-separated for several); `--index-url` wins.
pub const INDEX_URL_ENV: &str = "CARGO_ROCM_DIST_URL";

const PREFIX: &str = "therock-dist-";

/// The index pages TheRock publishes for a channel.
pub fn default_index_urls(channel: Channel) -> &'static [&'static str] {
    match channel {
        Channel::Release => &["https://repo.amd.com/rocm/tarball/"],
        Channel::Prerelease => &["https://rocm.prereleases.amd.com/tarball/"],
        Channel::Nightly => &[
            "https://rocm.nightlies.amd.com/tarball/",
            "https://rocm.nightlies.amd.com/tarball-multi-arch/",
        ],
    }
}

/// Compression of a tarball, from its file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArchiveFormat {
    /// `.tar.gz`
    TarGz,
    /// `.tar.xz`
    TarXz,
    /// `.tar.zst`
    TarZst,
}

impl ArchiveFormat {
    const SUFFIXES: [(&'static str, ArchiveFormat); 3] = [
        (".tar.gz", ArchiveFormat::TarGz),
        (".tar.xz", ArchiveFormat::TarXz),
        (".tar.zst", ArchiveFormat::TarZst),
    ];
}

/// One TheRock tarball in an index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DistFile {
    /// `therock-dist-<platform>-<family>-<version>.tar.gz`, as the index names it.
    pub file_name: String,
    /// Where to download it.
    pub url: String,
    /// e.g. `linux`, `windows`; compared with [`host_platform`].
    pub platform: String,
    /// e.g. `gfx94X-dcgpu`, `gfx1151`, `gfx120X-all`.
    pub family: String,
    /// The ROCm version in the file name.
    pub version: Version,
    /// The channel the version belongs to ([`Version::channel`]), whichever index listed it.
    pub channel: Channel,
    /// The compression, from the file name's suffix.
    pub format: ArchiveFormat,
}

impl DistFile {
    /// The metadata a toolchain installed from this file records.
    pub fn dist_info(&self) -> DistInfo {
        DistInfo {
            version: self.version.clone(),
            channel: self.channel,
            family: self.family.clone(),
            platform: self.platform.clone(),
        }
    }

    /// The name a toolchain gets by default: `therock-<version>-<family>`.
    pub fn default_toolchain_name(&self) -> String {
        format!("therock-{}-{}", self.version, self.family)
    }

    /// Where a published checksum would be (`<url>.sha256`).
    pub fn sha256_url(&self) -> String {
        format!("{}.sha256", self.url)
    }
}

/// Parse a TheRock file name: (platform, family, version, format).
pub fn parse_file_name(name: &str) -> Option<(String, String, Version, ArchiveFormat)> {
    let body = name.strip_prefix(PREFIX)?;
    let (body, format) = ArchiveFormat::SUFFIXES
        .iter()
        .find_map(|(s, f)| body.strip_suffix(s).map(|b| (b, *f)))?;
    let (platform, rest) = body.split_once('-')?;
    let (family, version) = rest.rsplit_once('-')?;
    if platform.is_empty() || !family.starts_with("gfx") {
        return None;
    }
    let version: Version = version.parse().ok()?;
    Some((platform.to_string(), family.to_string(), version, format))
}

/// Every TheRock tarball named in an index page, newest first. `index_url` locates the files:
/// they are fetched from the index's folder.
pub fn parse_index(body: &str, index_url: &str) -> Vec<DistFile> {
    let base = base_url(index_url);
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(at) = rest.find(PREFIX) {
        let token_len = rest[at..]
            .find(|c: char| {
                !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+' | '%'))
            })
            .unwrap_or(rest.len() - at);
        let token = percent_decode_plus(&rest[at..at + token_len]);
        rest = &rest[at + token_len.max(1)..];
        if !seen.insert(token.clone()) {
            continue;
        }
        if let Some((platform, family, version, format)) = parse_file_name(&token) {
            out.push(DistFile {
                url: format!("{base}{}", token.replace('+', "%2B")),
                file_name: token,
                platform,
                family,
                channel: version.channel(),
                version,
                format,
            });
        }
    }
    out.sort_by(|a, b| {
        b.version
            .cmp(&a.version)
            .then_with(|| a.family.cmp(&b.family))
    });
    out
}

/// The folder an index page lives in, ending with `/`.
fn base_url(index_url: &str) -> String {
    let no_query = index_url.split(['?', '#']).next().unwrap_or(index_url);
    if no_query.ends_with('/') {
        no_query.to_string()
    } else {
        match no_query.rfind('/') {
            // Keep `scheme://host` intact when the URL has no path.
            Some(i) if no_query[..i].ends_with('/') => format!("{no_query}/"),
            Some(i) => no_query[..=i].to_string(),
            None => format!("{no_query}/"),
        }
    }
}

/// Listings escape `+` (in `.dev0+sha` versions) as `%2B`; nothing else in these names needs it.
fn percent_decode_plus(s: &str) -> String {
    s.replace("%2B", "+").replace("%2b", "+")
}

/// Parse a `.sha256` sidecar (`<hex>` or `<hex>  <file>`).
pub fn parse_sha256_sidecar(text: &str) -> Option<String> {
    let first = text.split_whitespace().next()?.to_ascii_lowercase();
    is_sha256_hex(&first).then_some(first)
}

/// 64 hex digits.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What to choose among published builds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    /// `linux` or `windows`.
    pub platform: String,
    /// Acceptable families, preferred first; empty accepts any.
    pub families: Vec<String>,
    /// An exact version.
    pub version: Option<Version>,
    /// Only builds of this channel.
    pub channel: Option<Channel>,
}

impl Selector {
    /// Whether `file` is acceptable.
    pub fn accepts(&self, file: &DistFile) -> bool {
        file.platform == self.platform
            && (self.families.is_empty() || self.families.contains(&file.family))
            && self.version.as_ref().is_none_or(|v| *v == file.version)
            && self.channel.is_none_or(|c| c == file.channel)
    }

    /// The newest acceptable build; among equal versions, the most preferred family.
    pub fn select<'a>(&self, files: &'a [DistFile]) -> Option<&'a DistFile> {
        let rank = |f: &DistFile| {
            self.families
                .iter()
                .position(|x| *x == f.family)
                .unwrap_or(0)
        };
        files.iter().filter(|f| self.accepts(f)).max_by(|a, b| {
            a.version
                .cmp(&b.version)
                .then_with(|| rank(b).cmp(&rank(a)))
        })
    }

    /// For messages: what was asked for.
    pub fn describe(&self) -> String {
        let mut s = match (&self.version, &self.channel) {
            (Some(v), _) => format!("version {v}"),
            (None, Some(c)) => format!("the newest {c} build"),
            (None, None) => "the newest build".to_string(),
        };
        if !self.families.is_empty() {
            s += &format!(" for {}", self.families.join(" or "));
        }
        s + &format!(" on {}", self.platform)
    }
}

/// This machine's platform as TheRock names it.
pub fn host_platform() -> &'static str {
    if cfg!(windows) {
        "windows"
    } else {
        "linux"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_layouts() {
        let (p, f, v, fmt) =
            parse_file_name("therock-dist-linux-gfx94X-dcgpu-7.0.0rc20250818.tar.gz").unwrap();
        assert_eq!(
            (p.as_str(), f.as_str(), v.as_str()),
            ("linux", "gfx94X-dcgpu", "7.0.0rc20250818")
        );
        assert_eq!(fmt, ArchiveFormat::TarGz);
        let (_, f, v, _) =
            parse_file_name("therock-dist-linux-gfx1151-7.14.0a20260612.tar.gz").unwrap();
        assert_eq!((f.as_str(), v.as_str()), ("gfx1151", "7.14.0a20260612"));
        let (p, f, v, fmt) =
            parse_file_name("therock-dist-windows-gfx120X-all-7.0.0.dev0+6f1c2b3.tar.zst").unwrap();
        assert_eq!(
            (p.as_str(), f.as_str(), v.as_str()),
            ("windows", "gfx120X-all", "7.0.0.dev0+6f1c2b3")
        );
        assert_eq!(fmt, ArchiveFormat::TarZst);
        for bad in [
            "therock-dist-linux-7.0.0.tar.gz",
            "therock-dist-linux-gfx90a-notaversion.tar.gz",
            "therock-dist-linux-gfx90a-7.0.0.zip",
            "other-linux-gfx90a-7.0.0.tar.gz",
        ] {
            assert!(parse_file_name(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn reads_html_json_and_s3_listings() {
        let html = r#"<a href="therock-dist-linux-gfx90X-dcgpu-7.0.0.tar.gz">x</a>
            <a href="./therock-dist-linux-gfx90X-dcgpu-7.0.0.tar.gz.sha256">x</a>
            <script>const files = [{"name":"therock-dist-linux-gfx1151-7.10.0a20251106.tar.gz","mtime":1},
            {"name":"therock-dist-linux-gfx90a-7.0.0.dev0%2Babc.tar.gz"}];</script>
            <Key>therock-dist-linux-gfx94X-dcgpu-7.0.0rc20250818.tar.gz</Key>
            <a href="README.txt">not a tarball</a>"#;
        let files = parse_index(html, "http://127.0.0.1:1/tarball/index.html");
        let names: Vec<_> = files.iter().map(|f| f.file_name.as_str()).collect();
        assert_eq!(
            names,
            [
                "therock-dist-linux-gfx1151-7.10.0a20251106.tar.gz",
                "therock-dist-linux-gfx90X-dcgpu-7.0.0.tar.gz",
                "therock-dist-linux-gfx94X-dcgpu-7.0.0rc20250818.tar.gz",
                "therock-dist-linux-gfx90a-7.0.0.dev0+abc.tar.gz",
            ]
        );
        assert_eq!(
            files[0].url,
            "http://127.0.0.1:1/tarball/therock-dist-linux-gfx1151-7.10.0a20251106.tar.gz"
        );
        assert_eq!(
            files[3].url,
            "http://127.0.0.1:1/tarball/therock-dist-linux-gfx90a-7.0.0.dev0%2Babc.tar.gz"
        );
        assert_eq!(files[0].channel, Channel::Nightly);
        assert_eq!(files[1].channel, Channel::Release);
        assert_eq!(files[2].channel, Channel::Prerelease);
    }

    #[test]
    fn base_urls() {
        assert_eq!(base_url("http://h/a/"), "http://h/a/");
        assert_eq!(base_url("http://h/a/index.html?x=1"), "http://h/a/");
        assert_eq!(
            base_url("https://bucket.s3.amazonaws.com"),
            "https://bucket.s3.amazonaws.com/"
        );
    }

    #[test]
    fn selects_newest_matching_build() {
        let body = [
            "therock-dist-linux-gfx90X-dcgpu-7.0.0.tar.gz",
            "therock-dist-linux-gfx90a-7.0.0.tar.gz",
            "therock-dist-linux-gfx90a-7.10.0a20251106.tar.gz",
            "therock-dist-linux-gfx94X-dcgpu-7.11.0a20251201.tar.gz",
            "therock-dist-linux-gfx90X-dcgpu-7.0.0rc20250818.tar.gz",
            "therock-dist-windows-gfx90a-7.12.0a20251210.tar.gz",
        ]
        .join("\n");
        let files = parse_index(&body, "http://h/");
        let fams = rocm_toolkit::home::family::families_for_target("gfx90a");
        let mut sel = Selector {
            platform: "linux".into(),
            families: fams,
            ..Selector::default()
        };
        assert_eq!(
            sel.select(&files).unwrap().version.as_str(),
            "7.10.0a20251106"
        );
        sel.channel = Some(Channel::Release);
        // Same version in both layouts: the target's own tarball is preferred.
        assert_eq!(
            sel.select(&files).unwrap().file_name,
            "therock-dist-linux-gfx90a-7.0.0.tar.gz"
        );
        sel.channel = Some(Channel::Prerelease);
        assert_eq!(sel.select(&files).unwrap().family, "gfx90X-dcgpu");
        sel.channel = None;
        sel.version = Some("7.11.0a20251201".parse().unwrap());
        assert!(sel.select(&files).is_none());
        assert_eq!(
            sel.describe(),
            "version 7.11.0a20251201 for gfx90a or gfx90X-dcgpu on linux"
        );
    }

    #[test]
    fn sidecars() {
        let h = "a".repeat(64);
        assert_eq!(
            parse_sha256_sidecar(&format!("{h}  file.tar.gz\n")),
            Some(h.clone())
        );
        assert_eq!(parse_sha256_sidecar(&h.to_uppercase()), Some(h));
        assert_eq!(parse_sha256_sidecar("nope"), None);
        assert_eq!(parse_sha256_sidecar(""), None);
    }
}
