//! Shards of a test run: `count:K/N` and `hash:K/N`, with cargo-nextest's meaning, for runs
//! without nextest (`cargo rocm test --partition`, `ROCM_TEST_PARTITION`).
//!
//! - `count:K/N`: the trials one harness binary would run (after name filters), sorted by name
//!   as `--list` prints them, go round-robin to shards 1..=N: the i-th (from 0) to shard
//!   `i mod N + 1`. Shards differ in size by at most one trial per binary.
//! - `hash:K/N`: a trial goes to shard `fnv1a64(name) mod N + 1`, where `fnv1a64` is the 64-bit
//!   FNV-1a hash of the trial name's UTF-8 bytes (offset basis `0xcbf29ce484222325`, prime
//!   `0x100000001b3`). It depends on the name only: the same on every machine and every run,
//!   and a new trial never moves the others. (nextest hashes with xxHash64, so its hash shards
//!   hold other trials than ours; each family covers every trial exactly once.)
//! - `duration:K/N:EVENTS`: by the durations an earlier run recorded in the events file EVENTS,
//!   longest first, each trial to the shard with the least recorded time so far (ties: the lower
//!   shard; equal durations: name order); a trial EVENTS lacks weighs the mean of those it has.
//!   Every shard computes the same split from the same file, so they must all be given it.
//!   `docs/benchmarks.md` measures how much closer together shards finish this way.
//!
//! ```
//! use rocm_protocol::partition::Partition;
//! let p: Partition = "count:2/3".parse().unwrap();
//! let names = ["a::cpu/w32", "a::cpu/w64", "b::cpu/w32", "b::cpu/w64"];
//! assert_eq!(p.select(&names), [false, true, false, false]);
//! ```

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// How trials are assigned to shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionKind {
    /// Round-robin over the name-sorted list.
    Count,
    /// FNV-1a 64 of the trial name.
    Hash,
    /// Longest first by recorded durations ([`Partition::history`]).
    Duration,
}

/// Shard `shard` (from 1) of `total`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// How trials are assigned to shards.
    pub kind: PartitionKind,
    /// This shard, from 1 to `total`.
    pub shard: u64,
    /// How many shards the run is split into.
    pub total: u64,
    /// For [`PartitionKind::Duration`]: the events file of an earlier run.
    pub history: Option<PathBuf>,
}

impl FromStr for Partition {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let usage = || {
            format!(
                "`{s}` is not a partition: write count:K/N, hash:K/N or duration:K/N:EVENTS \
                 with 1 <= K <= N (for example count:1/3)"
            )
        };
        let (kind, shards) = s.trim().split_once(':').ok_or_else(usage)?;
        let (kind, shards, history) = match kind {
            "count" => (PartitionKind::Count, shards, None),
            "hash" => (PartitionKind::Hash, shards, None),
            "duration" => match shards.split_once(':') {
                Some((shards, path)) if !path.is_empty() => {
                    (PartitionKind::Duration, shards, Some(PathBuf::from(path)))
                }
                _ => (PartitionKind::Duration, shards, None),
            },
            _ => return Err(usage()),
        };
        let (k, n) = shards.split_once('/').ok_or_else(usage)?;
        let (shard, total): (u64, u64) = (
            k.trim().parse().map_err(|_| usage())?,
            n.trim().parse().map_err(|_| usage())?,
        );
        if shard == 0 || shard > total {
            return Err(usage());
        }
        Ok(Partition {
            kind,
            shard,
            total,
            history,
        })
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            PartitionKind::Count => "count",
            PartitionKind::Hash => "hash",
            PartitionKind::Duration => "duration",
        };
        write!(f, "{kind}:{}/{}", self.shard, self.total)?;
        match &self.history {
            Some(path) => write!(f, ":{}", path.display()),
            None => Ok(()),
        }
    }
}

impl Partition {
    /// Which of `names` (the trials one binary would run, in any order) fall in this shard
    /// (a duration partition without durations: as if all took the same time).
    pub fn select<S: AsRef<str>>(&self, names: &[S]) -> Vec<bool> {
        self.select_timed(names, &HashMap::new())
    }

    /// As [`Partition::select`], with the recorded `durations` (seconds by trial name) that a
    /// duration partition splits by ([`recorded_durations`]).
    pub fn select_timed<S: AsRef<str>>(
        &self,
        names: &[S],
        durations: &HashMap<String, f64>,
    ) -> Vec<bool> {
        match self.kind {
            PartitionKind::Duration => {
                let known: Vec<f64> = names
                    .iter()
                    .filter_map(|n| durations.get(n.as_ref()).copied())
                    .collect();
                let mean = if known.is_empty() {
                    1.0
                } else {
                    known.iter().sum::<f64>() / known.len() as f64
                };
                let weight = |i: usize| durations.get(names[i].as_ref()).copied().unwrap_or(mean);
                let mut order: Vec<usize> = (0..names.len()).collect();
                order.sort_by(|&a, &b| {
                    weight(b)
                        .total_cmp(&weight(a))
                        .then_with(|| names[a].as_ref().cmp(names[b].as_ref()))
                });
                let mut load = vec![0.0f64; self.total as usize];
                let mut selected = vec![false; names.len()];
                for i in order {
                    let shard = (0..load.len())
                        .min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)))
                        .expect("at least one shard");
                    load[shard] += weight(i);
                    selected[i] = shard as u64 == self.shard - 1;
                }
                selected
            }
            PartitionKind::Hash => names
                .iter()
                .map(|n| fnv1a64(n.as_ref().as_bytes()) % self.total == self.shard - 1)
                .collect(),
            PartitionKind::Count => {
                let mut order: Vec<usize> = (0..names.len()).collect();
                order.sort_by(|&a, &b| names[a].as_ref().cmp(names[b].as_ref()));
                let mut selected = vec![false; names.len()];
                for (rank, &i) in order.iter().enumerate() {
                    selected[i] = rank as u64 % self.total == self.shard - 1;
                }
                selected
            }
        }
    }
}

/// The duration of each trial of `binary` that ran (passed or failed) in an events file (or a
/// `cargo rocm test --message-format json` stream: other objects are skipped), by name; the last
/// record of a trial wins.
pub fn recorded_durations(path: &Path, binary: &str) -> Result<HashMap<String, f64>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the events file {}: {e}", path.display()))?;
    let mut durations = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let bad = |e: serde_json::Error| format!("{} line {}: {e}", path.display(), n + 1);
        let value: serde_json::Value = match line.trim() {
            "" => continue,
            l => serde_json::from_str(l).map_err(bad)?,
        };
        if value.get("type").and_then(|t| t.as_str()) != Some("trial") {
            continue;
        }
        let e: crate::TrialEvent = serde_json::from_value(value).map_err(bad)?;
        if e.binary == binary && e.outcome != crate::TrialOutcome::Ignored {
            durations.insert(e.name, e.duration_s);
        }
    }
    Ok(durations)
}

/// 64-bit FNV-1a: stable across machines, runs and Rust versions (unlike `DefaultHasher`).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("check{i:02}::cpu/w64")).collect()
    }

    #[test]
    fn every_trial_is_in_exactly_one_shard() {
        let names = names(17);
        for kind in ["count", "hash"] {
            let mut seen = vec![0; names.len()];
            for k in 1..=3 {
                let p: Partition = format!("{kind}:{k}/3").parse().unwrap();
                for (i, s) in p.select(&names).into_iter().enumerate() {
                    seen[i] += usize::from(s);
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{kind}: {seen:?}");
        }
        // Count shards are as even as they can be, whatever order the names come in.
        let mut reversed = names.clone();
        reversed.reverse();
        for k in 1..=3 {
            let p: Partition = format!("count:{k}/3").parse().unwrap();
            let n = p.select(&reversed).into_iter().filter(|s| *s).count();
            assert!(n == 5 || n == 6, "shard {k}: {n}");
        }
    }

    #[test]
    fn duration_puts_the_longest_first_into_the_least_loaded_shard() {
        let names = ["a", "b", "c", "d", "e", "new"];
        let durations: HashMap<String, f64> =
            [("a", 9.0), ("b", 5.0), ("c", 4.0), ("d", 3.0), ("e", 1.0)]
                .iter()
                .map(|(n, d)| (n.to_string(), *d))
                .collect();
        let shard = |k: u64| -> Vec<&str> {
            let p = Partition {
                kind: PartitionKind::Duration,
                shard: k,
                total: 2,
                history: None,
            };
            let sel = p.select_timed(&names, &durations);
            names
                .iter()
                .zip(sel)
                .filter(|(_, s)| *s)
                .map(|(n, _)| *n)
                .collect()
        };
        // By weight: a 9, b 5, new 4.4 (the mean), c 4, d 3, e 1. Loads (shard 1 | 2):
        // a 9|0, b 9|5, new 9|9.4, c 13|9.4, d 13|12.4, e 13|13.4.
        let (one, two) = (shard(1), shard(2));
        assert_eq!(one.len() + two.len(), names.len());
        let load = |s: &[&str]| -> f64 {
            s.iter()
                .map(|n| durations.get(*n).copied().unwrap_or(4.4))
                .sum()
        };
        assert!((load(&one) - load(&two)).abs() <= 1.0, "{one:?} {two:?}");
        assert_eq!(one, ["a", "c"]);
        assert_eq!(two, ["b", "d", "e", "new"]);
    }

    #[test]
    fn hash_is_fnv1a_of_the_name() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        let p: Partition = "hash:1/1".parse().unwrap();
        assert_eq!(p.select(&["x", "y"]), [true, true]);
    }

    #[test]
    fn parse_and_print() {
        let p: Partition = "hash:2/5".parse().unwrap();
        assert_eq!(
            p,
            Partition {
                kind: PartitionKind::Hash,
                shard: 2,
                total: 5,
                history: None
            }
        );
        assert_eq!(p.to_string(), "hash:2/5");
        let d: Partition = "duration:1/2:/tmp/a:b.jsonl".parse().unwrap();
        assert_eq!(d.kind, PartitionKind::Duration);
        assert_eq!(d.history, Some(PathBuf::from("/tmp/a:b.jsonl")));
        assert_eq!(d.to_string(), "duration:1/2:/tmp/a:b.jsonl");
        assert_eq!("duration:2/2".parse::<Partition>().unwrap().history, None);
        for bad in [
            "count:0/3",
            "count:4/3",
            "slice:1/2",
            "count:1",
            "1/3",
            "count:a/3",
        ] {
            let err = bad.parse::<Partition>().unwrap_err();
            assert!(err.contains("count:K/N"), "{bad}: {err}");
        }
    }
}
