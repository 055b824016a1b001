#!/usr/bin/env bash
# Several GPUs of one host (issue 27): `cargo rocm test` trials on each device, a bench with one
# id per device, and a tuning run on every GPU against the same run on one.
#
#   scripts/h100/multi.sh build     # here (Rust + nvcc, no GPU): stripped, gzipped release binaries
#   scripts/h100/multi.sh           # there (2+ NVIDIA GPUs, driver 580, NVRTC 13; no Rust): run
#
# `build` writes to .carry/h100/multi/ (ignored by git; carry it with the tree):
#   cargo-rocm      the command (`tune --harness` runs a prebuilt harness)
#   kernels-test    examples/basic's test harness, built with ROCM_BACKENDS=cpu,nvidia (cubins for
#                   sm_90 from nvcc; tuning candidates compile with NVRTC there, from the carried
#                   examples/basic/kernels)
#   kernels-bench   examples/basic's benchmarks (criterion)
# The run writes to $OUT (default ./h100-multi): gpus.txt, test.txt and test-events.jsonl (the
# harness with `--backend nvidia`: trials named per device, run at the same time), bench.txt
# (criterion ids per device), and table.txt: a brute force of the matmul at n=$MATMUL_N on the
# first GPU, then on every GPU at once, each with a cold compile cache (WARM=1: both again with
# it warm): wall times, where they went, their ratio and the best configurations (the reports
# stay in $MULTI_SCRATCH). ONLY=tune skips the test and the bench.
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$here/.carry/h100/multi"

# shellcheck source=artifact.sh
. "$here/scripts/h100/artifact.sh"

build() {
  set -e
  rm -rf "$bin"
  mkdir -p "$bin"
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
  cargo build --release --manifest-path "$here/Cargo.toml" -p cargo-rocm
  cp "$CARGO_TARGET_DIR/release/cargo-rocm" "$bin/cargo-rocm"
  export ROCM_BACKENDS=cpu,nvidia ROCM_NVIDIA_ARCH="${ROCM_NVIDIA_ARCH:-sm_90}"
  local exe
  # With tune mode (rocm-test's `tune` feature): this harness is also `tune --harness`'s.
  exe="$(cargo test --release --no-run --manifest-path "$here/examples/basic/Cargo.toml" \
    --test kernels --features rocm-test/tune --message-format json | artifact kernels test)"
  cp "$exe" "$bin/kernels-test"
  exe="$(cargo bench --no-run --manifest-path "$here/examples/basic/Cargo.toml" \
    --bench kernels --message-format json | artifact kernels bench)"
  cp "$exe" "$bin/kernels-bench"
  strip "$bin"/*
  gzip -9 -f "$bin"/*
  du -sh "$bin"
}

run() {
  local out="${OUT:-$PWD/h100-multi}" scratch="${MULTI_SCRATCH:-/tmp/rocm-multi}"
  mkdir -p "$out" "$scratch/bin"
  for b in cargo-rocm kernels-test kernels-bench; do
    [ -f "$bin/$b.gz" ] || { echo "missing $bin/$b.gz: run '$0 build' first" >&2; exit 2; }
    gunzip -c "$bin/$b.gz" > "$scratch/bin/$b" && chmod +x "$scratch/bin/$b"
  done
  local exe="$scratch/bin"
  nvidia-smi --query-gpu=index,name,compute_cap,driver_version --format=csv,noheader | tee "$out/gpus.txt"
  export CARGO_MANIFEST_DIR="$here/examples/basic"
  local start=$SECONDS

  if [ "${ONLY:-}" != tune ]; then
  echo "==> [$((SECONDS - start))s] test: every GPU, trials per device" >&2
  rm -f "$out/test-events.jsonl"
  ( cd "$here/examples/basic" && timeout "${T_TEST:-150}" "$exe/kernels-test" --backend nvidia \
      --events "$out/test-events.jsonl" ) > "$out/test.txt" 2>&1
  echo "test: exit $?" | tee -a "$out/test.txt"
  grep -E "^test |test result" "$out/test.txt" | tail -40
  python3 - "$out/test-events.jsonl" <<'PY' | tee "$out/test-table.txt"
import collections, json, sys
rows = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("target") is None:
        continue
    rows[e["check"]]["%s/%s" % (e["backend"], e["target"])] = e["outcome"]
places = sorted({p for r in rows.values() for p in r})
print("%-16s %s" % ("check", "  ".join("%-16s" % p for p in places)))
for check in sorted(rows):
    print("%-16s %s" % (check, "  ".join("%-16s" % rows[check].get(p, "-") for p in places)))
PY

  echo "==> [$((SECONDS - start))s] bench: one id per device" >&2
  ( cd "$here/examples/basic" && ROCM_BENCH_BACKEND=nvidia timeout "${T_BENCH:-120}" \
      "$exe/kernels-bench" --bench --warm-up-time 0.3 --measurement-time 1 --sample-size 10 ) \
      > "$out/bench.txt" 2>&1
  echo "bench: exit $?" | tee -a "$out/bench.txt"
  grep -E "^[a-z_0-9]+/nvidia" "$out/bench.txt" | head -40
  fi

  local n="${MATMUL_N:-1024}" limit="${T_TUNE:-200}"
  # Cold: each run with an empty compile cache. WARM=1: both again, their candidates already
  # compiled (--fresh sets the tuning caches aside, not the compile cache).
  local rounds="cold"; [ -n "${WARM:-}" ] && rounds="cold warm"
  for round in $rounds; do
    for sel in 1 all; do
      echo "==> [$((SECONDS - start))s] tune ($round): matmul n=$n brute force, --devices $sel" >&2
      local t0=$SECONDS
      timeout "$limit" "$exe/cargo-rocm" rocm tune --harness "$exe/kernels-test" --backend nvidia \
          --devices "$sel" --strategy brute_force --budget 100000 --problem "n=$n" \
          --iterations "${ITERATIONS:-5}" --target-dir "$scratch/target-$sel" --fresh \
          --wisdom "$scratch/wisdom-$sel.json" --message-format json -- matmul \
          > "$scratch/tune-$round-$sel.json" 2> "$scratch/tune-$round-$sel.err"
      echo "tune ($round) --devices $sel: exit $? in $((SECONDS - t0)) s" >&2
    done
  done
  python3 - "$scratch" $rounds <<'PY' | tee "$out/table.txt"
import json, os, sys
scratch, rounds = sys.argv[1], sys.argv[2:]
for rnd in rounds:
    rows = {}
    for sel in ("1", "all"):
        try:
            r = json.load(open(os.path.join(scratch, "tune-%s-%s.json" % (rnd, sel))))
        except Exception as e:
            print("%s --devices %s: no report (%s)" % (rnd, sel, e)); continue
        for run in r.get("runs", []):
            o = run["overhead"]
            rows[sel] = run
            m = max(o["measured"], 1)
            print("%s --devices %-4s devices=%s evaluations=%d/%d wall=%.1f s kernel=%.1f s "
                  "compile wait=%.1f s verify=%.1f s best=%s %.4f ms" % (
                rnd, sel, run.get("devices") or [run["device"]["name"]], run["evaluations"],
                run["space"], o["total_s"], o["kernel_s"], o["compile_s"], o["verify_s"],
                json.dumps(run["best"]["config"], sort_keys=True), run["best"]["time_ms"]))
    if len(rows) == 2:
        a, b = rows["1"], rows["all"]
        print("%s: wall-time ratio (one GPU / every GPU): %.2f" % (
            rnd, a["overhead"]["total_s"] / b["overhead"]["total_s"]))
        same = a["best"]["config"] == b["best"]["config"]
        print("%s: same best configuration: %s" % (rnd, same))
        if not same:
            print("  times of the two bests: %.4f vs %.4f ms" % (a["best"]["time_ms"], b["best"]["time_ms"]))
PY
  echo "==> [$((SECONDS - start))s] done" >&2
}

case "${1:-run}" in
  build) build ;;
  run) run ;;
  *) echo "usage: $0 [build|run]" >&2; exit 2 ;;
esac
