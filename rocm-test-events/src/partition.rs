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
//!
//! ```
//! use rocm_test_events::partition::Partition;
//! let p: Partition = "count:2/3".parse().unwrap();
//! let names = ["a::cpu/w32", "a::cpu/w64", "b::cpu/w32", "b::cpu/w64"];
//! assert_eq!(p.select(&names), [false, true, false, false]);
//! ```

use std::fmt;
use std::str::FromStr;

/// How trials are assigned to shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionKind {
    /// Round-robin over the name-sorted list.
    Count,
    /// FNV-1a 64 of the trial name.
    Hash,
}

/// Shard `shard` (from 1) of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    pub kind: PartitionKind,
    pub shard: u64,
    pub total: u64,
}

impl FromStr for Partition {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let usage = || {
            format!(
                "`{s}` is not a partition: write count:K/N or hash:K/N with 1 <= K <= N \
                 (for example count:1/3)"
            )
        };
        let (kind, shards) = s.trim().split_once(':').ok_or_else(usage)?;
        let kind = match kind {
            "count" => PartitionKind::Count,
            "hash" => PartitionKind::Hash,
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
        Ok(Partition { kind, shard, total })
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            PartitionKind::Count => "count",
            PartitionKind::Hash => "hash",
        };
        write!(f, "{kind}:{}/{}", self.shard, self.total)
    }
}

impl Partition {
    /// Which of `names` (the trials one binary would run, in any order) fall in this shard.
    pub fn select<S: AsRef<str>>(&self, names: &[S]) -> Vec<bool> {
        match self.kind {
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
                total: 5
            }
        );
        assert_eq!(p.to_string(), "hash:2/5");
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
