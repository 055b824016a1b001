//! ROCm distribution versions as TheRock spells them, and their order.
//!
//! TheRock versions follow Python's PEP 440 shapes: `7.0.0` (release), `7.0.0rc20250818`
//! (release candidate, dated), `7.10.0a20251106` (nightly alpha, dated), `7.0.0.dev0+6f1c2b3`
//! (development build with a local git hash). Order: development < alpha < beta < release
//! candidate < release, for the same release numbers. The local part (`+hash`) only breaks ties.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The pre-release part of a version; variants are declared in ascending order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PreRelease {
    /// `.devN`
    Dev(u64),
    /// `aN` (TheRock nightlies use a date for N)
    Alpha(u64),
    /// `bN`
    Beta(u64),
    /// `rcN` (TheRock prereleases use a date for N)
    Rc(u64),
}

/// A parsed ROCm version. `Ord` (and equality) is the release order described in the module docs.
#[derive(Debug, Clone)]
pub struct Version {
    /// `7.0.0` → `[7, 0, 0]`. Trailing zeros do not change the order (`7.0` == `7.0.0`).
    pub release: Vec<u64>,
    /// `None` for a final release.
    pub pre: Option<PreRelease>,
    /// What follows `+`, e.g. a git hash.
    pub local: Option<String>,
    text: String,
}

/// Why a version string was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a ROCm version (expected e.g. `7.0.0`, `7.0.0rc20250818`, `7.10.0a20251106` or `7.0.0.dev0+abc123`)")]
pub struct VersionError {
    /// The string that was given.
    pub text: String,
}

impl Version {
    /// The version as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The channel a version is published on: final releases on `release`, release
    /// candidates and betas on `prerelease`, alphas and development builds on `nightly`.
    pub fn channel(&self) -> Channel {
        match self.pre {
            None => Channel::Release,
            Some(PreRelease::Rc(_)) | Some(PreRelease::Beta(_)) => Channel::Prerelease,
            Some(PreRelease::Alpha(_)) | Some(PreRelease::Dev(_)) => Channel::Nightly,
        }
    }

    fn release_cmp(&self, other: &Self) -> Ordering {
        let n = self.release.len().max(other.release.len());
        for i in 0..n {
            let a = self.release.get(i).copied().unwrap_or(0);
            let b = other.release.get(i).copied().unwrap_or(0);
            match a.cmp(&b) {
                Ordering::Equal => {}
                o => return o,
            }
        }
        Ordering::Equal
    }
}

impl FromStr for Version {
    type Err = VersionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = || VersionError {
            text: text.to_string(),
        };
        let (main, local) = match text.split_once('+') {
            Some((m, l))
                if !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') =>
            {
                (m, Some(l.to_string()))
            }
            Some(_) => return Err(err()),
            None => (text, None),
        };
        let (main, dev) = match main.split_once(".dev") {
            Some((m, n)) => (m, Some(n.parse::<u64>().map_err(|_| err())?)),
            None => (main, None),
        };
        // The release numbers end where the first letter starts.
        let split = main
            .find(|c: char| c.is_ascii_alphabetic())
            .unwrap_or(main.len());
        let (numbers, pre_text) = main.split_at(split);
        let release = numbers
            .split('.')
            .map(|p| p.parse::<u64>().map_err(|_| err()))
            .collect::<Result<Vec<_>, _>>()?;
        let pre = if pre_text.is_empty() {
            dev.map(PreRelease::Dev)
        } else {
            if dev.is_some() {
                // `7.0.0rc1.dev0` exists in PEP 440 but not in TheRock's names; refuse rather
                // than order it wrongly.
                return Err(err());
            }
            let digits = pre_text.trim_start_matches(|c: char| c.is_ascii_alphabetic());
            let kind = &pre_text[..pre_text.len() - digits.len()];
            let n = digits.parse::<u64>().map_err(|_| err())?;
            Some(match kind {
                "a" | "alpha" => PreRelease::Alpha(n),
                "b" | "beta" => PreRelease::Beta(n),
                "rc" | "c" => PreRelease::Rc(n),
                _ => return Err(err()),
            })
        };
        Ok(Version {
            release,
            pre,
            local,
            text: text.to_string(),
        })
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        // A final release (`pre == None`) sorts after all its pre-releases.
        let pre_key = |v: &Version| match v.pre {
            None => (1, None),
            Some(p) => (0, Some(p)),
        };
        self.release_cmp(other)
            .then_with(|| pre_key(self).cmp(&pre_key(other)))
            .then_with(|| self.local.cmp(&other.local))
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Version {}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Where TheRock publishes a build: how much testing it had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Channel {
    /// Stable releases.
    Release,
    /// Release candidates.
    Prerelease,
    /// Nightly builds.
    Nightly,
}

impl Channel {
    /// Every channel, most stable first.
    pub const ALL: [Channel; 3] = [Channel::Release, Channel::Prerelease, Channel::Nightly];

    /// The channel's name as pin files and `--channel` spell it (`release`, `prerelease`,
    /// `nightly`).
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Release => "release",
            Channel::Prerelease => "prerelease",
            Channel::Nightly => "nightly",
        }
    }
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Channel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "release" | "stable" => Ok(Channel::Release),
            "prerelease" | "rc" => Ok(Channel::Prerelease),
            "nightly" => Ok(Channel::Nightly),
            _ => Err(format!(
                "unknown channel `{s}` (expected release, prerelease or nightly)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    #[test]
    fn parses_therock_shapes() {
        assert_eq!(v("7.0.0").release, vec![7, 0, 0]);
        assert_eq!(v("7.0.0rc20250818").pre, Some(PreRelease::Rc(20250818)));
        assert_eq!(v("7.10.0a20251106").pre, Some(PreRelease::Alpha(20251106)));
        let dev = v("7.0.0.dev0+6f1c2b3");
        assert_eq!(dev.pre, Some(PreRelease::Dev(0)));
        assert_eq!(dev.local.as_deref(), Some("6f1c2b3"));
        assert_eq!(dev.to_string(), "7.0.0.dev0+6f1c2b3");
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "",
            "x",
            "7..0",
            "7.0.0zz1",
            "7.0.0rc",
            "7.0+",
            "7.0.0rc1.dev0",
            "7.0+a/b",
        ] {
            assert!(bad.parse::<Version>().is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn orders_like_pep440() {
        let mut list = [
            v("7.0.0"),
            v("6.4.1"),
            v("7.0.0rc20250818"),
            v("7.0.0a20250801"),
            v("7.10.0a20251106"),
            v("7.0.0.dev0+abc"),
            v("7.9.0rc20251008"),
            v("7.0.0rc20250701"),
        ];
        list.sort();
        let names: Vec<_> = list.iter().map(|v| v.as_str()).collect();
        assert_eq!(
            names,
            [
                "6.4.1",
                "7.0.0.dev0+abc",
                "7.0.0a20250801",
                "7.0.0rc20250701",
                "7.0.0rc20250818",
                "7.0.0",
                "7.9.0rc20251008",
                "7.10.0a20251106",
            ]
        );
        assert_eq!(v("7.0").cmp(&v("7.0.0")), Ordering::Equal);
    }

    #[test]
    fn channels_follow_pre_release_kind() {
        assert_eq!(v("7.0.0").channel(), Channel::Release);
        assert_eq!(v("7.0.0rc20250818").channel(), Channel::Prerelease);
        assert_eq!(v("7.10.0a20251106").channel(), Channel::Nightly);
        assert_eq!(v("7.0.0.dev0+abc").channel(), Channel::Nightly);
        assert_eq!("stable".parse::<Channel>(), Ok(Channel::Release));
        assert!("beta".parse::<Channel>().is_err());
    }
}
