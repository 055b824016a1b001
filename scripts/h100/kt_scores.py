#!/usr/bin/env python3
"""Scores of Kernel Tuner's runs (kt_side_by_side.py) over a brute-force table of `cargo rocm tune`.

    scripts/h100/kt_scores.py --table cache.jsonl --runs kt-matmul.json [--budgets 20,50,100]

The table is the cache (JSON lines) of `cargo rocm tune --strategy brute_force` on the same GPU,
kernel and problem size. The score is rocm-tune's (rocm-tune/src/score.rs, same formulas):
(b - E_k) / (optimum - E_k), where b is the table's mean time of the configuration the strategy
judged best among its first k evaluations, and E_k the expected best of k configurations drawn at
random without replacement. Also prints Kernel Tuner's overhead per evaluation beyond kernel
time: (wall time of the run - the sum of its timed kernel runs) / evaluations.
"""

import argparse
import json
import statistics
import sys


def load_table(path):
    table, total = {}, 0
    keys = None
    for line in open(path):
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("type") == "meta":
            keys = r["tune_params_keys"]
        elif r.get("type") == "result":
            total += 1
            times = r.get("times") or []
            if times:
                table[tuple(r["params"][k] for k in keys)] = statistics.fmean(times)
    return keys, table, total


def expected_best_random(sorted_values, total, k):
    n = len(sorted_values)
    total = max(total, n)
    k = min(k, total)
    if k == 0:
        return sorted_values[-1]
    m, kf = float(total), float(k)
    e, s = sorted_values[0], 1.0
    for i in range(2, n + 1):
        j = float(i - 2)
        num = m - j - kf
        s = 0.0 if num <= 0 else s * num / (m - j)
        if s == 0.0:
            break
        e += (sorted_values[i - 1] - sorted_values[i - 2]) * s
    return e


def score(best, optimum, expected):
    denom = optimum - expected
    if abs(denom) <= sys.float_info.epsilon * max(abs(expected), 1.0):
        return 1.0 if best <= optimum else 0.0
    return (best - expected) / denom


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--table", required=True)
    p.add_argument("--runs", required=True)
    p.add_argument("--budgets", default="20,50,100")
    a = p.parse_args()
    keys, table, total = load_table(a.table)
    values = sorted(table.values())
    optimum = values[0]
    budgets = [int(b) for b in a.budgets.split(",")]
    runs = json.load(open(a.runs))["runs"]
    print(f"table: {len(table)} valid of {total}, optimum {optimum:.4f} ms")
    rows = {}
    overheads = {}
    for r in runs:
        evals = r["evaluations"]
        for k in budgets:
            first = [e for e in evals[:k] if e["time_ms"] is not None]
            if not first:
                continue
            pick = min(first, key=lambda e: e["time_ms"])
            b = table.get(tuple(pick["config"][key] for key in keys))
            if b is None:
                continue
            s = score(b, optimum, expected_best_random(values, total, k))
            rows.setdefault((r["strategy"], k), []).append((s, b <= optimum * 1.05, len(evals) >= k))
        kernel_s = sum(sum(e["times"]) for e in evals) / 1e3
        n = len(evals)
        if n:
            o = overheads.setdefault(r["strategy"], {"per_eval": [], "compile": [], "verify": [], "framework": []})
            o["per_eval"].append((r["wall_s"] - kernel_s) / n * 1e3)
            o["compile"].append(statistics.fmean(e["compile_ms"] for e in evals))
            o["verify"].append(statistics.fmean(e["verification_ms"] for e in evals))
            o["framework"].append(statistics.fmean(e["framework_ms"] + e["strategy_ms"] for e in evals))
    print("\n| strategy (Kernel Tuner 1.5) | budget | mean score | within 5% | seeds | space evaluated |")
    print("|---|---:|---:|---:|---:|---:|")
    for (strategy, k), v in sorted(rows.items()):
        mean = statistics.fmean(x[0] for x in v)
        within = sum(x[1] for x in v)
        short = sum(not x[2] for x in v)
        note = f" ({short} ran out before {k})" if short else ""
        print(f"| {strategy} | {k} | {mean:.3f} | {within}/{len(v)} | {len(v)}{note} | {100 * k / total:.1f}% |")
    print("\n| strategy | overhead per evaluation beyond kernel time | compile | verification | framework + strategy |")
    print("|---|---:|---:|---:|---:|")
    for strategy, o in overheads.items():
        print(
            f"| {strategy} | {statistics.fmean(o['per_eval']):.0f} ms | {statistics.fmean(o['compile']):.0f} ms "
            f"| {statistics.fmean(o['verify']):.0f} ms | {statistics.fmean(o['framework']):.0f} ms |"
        )


if __name__ == "__main__":
    main()
