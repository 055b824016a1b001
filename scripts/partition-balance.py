#!/usr/bin/env python3
"""How evenly N shards would finish: count, hash, and duration (longest first) partitions.

    scripts/partition-balance.py TRAIN.jsonl EVAL.jsonl [N]

TRAIN and EVAL are events of two full runs of the same trials (`cargo rocm test
--message-format json > run.jsonl`, or ROCM_TEST_EVENTS). Each partition assigns the trials of
each harness binary to N shards:
  count     the name-sorted trials round-robin (as `--partition count:K/N`)
  hash      FNV-1a 64 of the trial name mod N (as `--partition hash:K/N`)
  duration  longest first into the least loaded shard, by TRAIN's durations (trials TRAIN lacks
            weigh its mean): what a `duration:K/N` partition would do from an earlier run
and every shard's load is the sum of EVAL's durations of its trials (one trial at a time, as
`--test-threads 1` or one GPU would run them). Printed: the shards' loads, the slowest over the
mean (1.00 = all finish together) and the slowest shard's share of the total.
Only the trials that ran (passed or failed) count; skipped ones take no time.
"""
import json
import sys
from collections import defaultdict


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def durations(path):
    """(binary, name) -> seconds of the trials that ran."""
    out = {}
    for line in open(path):
        if '"type":"trial"' not in line.replace(" ", ""):
            continue
        e = json.loads(line)
        if e["outcome"] in ("passed", "failed"):
            out[(e["binary"], e["name"])] = e["duration_s"]
    return out


def shards(kind, trials, train, n):
    """trial -> shard index, per binary."""
    by_binary = defaultdict(list)
    for t in trials:
        by_binary[t[0]].append(t)
    assigned = {}
    for binary, ts in by_binary.items():
        if kind == "count":
            for i, t in enumerate(sorted(ts, key=lambda t: t[1])):
                assigned[t] = i % n
        elif kind == "hash":
            for t in ts:
                assigned[t] = fnv1a64(t[1]) % n
        else:
            known = [train[t] for t in ts if t in train]
            mean = sum(known) / len(known) if known else 1.0
            load = [0.0] * n
            for t in sorted(ts, key=lambda t: (-train.get(t, mean), t[1])):
                k = min(range(n), key=lambda k: (load[k], k))
                load[k] += train.get(t, mean)
                assigned[t] = k
    return assigned


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    train, evaluate = durations(sys.argv[1]), durations(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) == 4 else 3
    trials = sorted(evaluate)
    total = sum(evaluate.values())
    print(f"{len(trials)} trials, {total:.1f} s in all (EVAL), {n} shards")
    print(f"{'partition':<10} " + " ".join(f"{'shard ' + str(k + 1):>9}" for k in range(n))
          + f" {'max/mean':>9} {'max share':>10}")
    for kind in ("count", "hash", "duration"):
        a = shards(kind, trials, train, n)
        load = [0.0] * n
        for t in trials:
            load[a[t]] += evaluate[t]
        mean = total / n
        print(f"{kind:<10} " + " ".join(f"{x:8.1f}s" for x in load)
              + f" {max(load) / mean:9.2f} {100 * max(load) / total:9.0f}%")


if __name__ == "__main__":
    main()
