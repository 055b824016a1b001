#!/usr/bin/env bash
# Tuning overhead per evaluation (issue 28 item 3), before and after, in one call on an NVIDIA
# GPU, beside Kernel Tuner on the same kernel: examples/basic's tiled matmul at n = $MATMUL_N
# (default 2048), budget 100, an empty compile cache each run.
#
#   scripts/h100/overhead.sh build [BEFORE_DIR]   # here: .carry/h100/overhead/ (gzipped binaries)
#   scripts/h100/overhead.sh                      # there (driver 580, NVRTC 13, CuPy; no Rust)
#
# `build` copies cargo-rocm and the example's test harness (tune feature) of an earlier build
# from BEFORE_DIR (default .carry/h100/multi, gzipped as `scripts/h100/multi.sh build` leaves
# them) as `*-before`, and builds the harness of this tree (release, ROCM_BACKENDS=cpu,nvidia,
# cubins from nvcc when it is on PATH). The run, for each of
#   before     the earlier harness
#   threads    this tree's harness with ROCM_TEST_RTC_IN_PROCESS=1 (candidates compiled by NVRTC
#              on threads of the tuning process, as before)
#   processes  this tree's harness (candidates compiled in worker processes)
# runs `cargo rocm tune --strategy $STRATEGY --budget 100 --fresh` from an empty compile cache,
# then `processes` once more with the cache warm, and prints per measured evaluation: wall,
# kernel, compile wait, verification and the rest (the harness), beyond kernel time. With the
# wheels of scripts/h100/kt.sh carried, Kernel Tuner's random sampling runs on the same kernel
# (budget 100, 1 seed) and its per-evaluation times are printed the same way.
# Writes $OUT (default ./h100-overhead): *.json reports, table.txt.
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$here/.carry/h100/overhead"

# shellcheck source=artifact.sh
. "$here/scripts/h100/artifact.sh"

build() {
  set -e
  local before="${1:-$here/.carry/h100/multi}"
  rm -rf "$bin"
  mkdir -p "$bin"
  cp "$before/cargo-rocm.gz" "$bin/cargo-rocm.gz"
  cp "$before/kernels-test.gz" "$bin/kernels-test-before.gz"
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
  local exe
  exe="$(ROCM_BACKENDS=cpu,nvidia ROCM_NVIDIA_ARCH="${ROCM_NVIDIA_ARCH:-sm_90}" \
    cargo test --release --no-run --manifest-path "$here/examples/basic/Cargo.toml" \
      --test kernels --features rocm-test/tune --message-format json | artifact kernels test)"
  cp "$exe" "$bin/kernels-test"
  strip "$bin/kernels-test"
  gzip -9 -f "$bin/kernels-test"
  du -sh "$bin"
}

summarize() {
  python3 - "$@" <<'PY'
import json, sys
label, path = sys.argv[1], sys.argv[2]
try:
    report = json.load(open(path))
except (ValueError, OSError):
    print("%-10s no report (%s)" % (label, path)); sys.exit(0)
for r in report.get("runs", []):
    o = r.get("overhead") or {}
    m = max(1, o.get("measured") or 0)
    per = o.get("per_eval_ms", 0)
    c, v = 1e3 * o.get("compile_s", 0) / m, 1e3 * o.get("verify_s", 0) / m
    print("%-10s %-16s evals %4s  wall %6.1f s  kernel %5.2f s  beyond kernel %6.1f ms/eval = compile wait %6.1f + verify %5.1f + harness %5.1f  best %s ms" % (
        label, r.get("strategy"), o.get("measured"), o.get("total_s", 0), o.get("kernel_s", 0),
        per, c, v, per - c - v, (r.get("best") or {}).get("time_ms")))
for e in report.get("errors", []):
    print("%-10s error: %s" % (label, e.get("message")))
PY
}

run() {
  local out="${OUT:-$PWD/h100-overhead}" scratch="${OVERHEAD_SCRATCH:-/tmp/rocm-overhead}"
  mkdir -p "$out" "$scratch/bin"
  for b in cargo-rocm kernels-test-before kernels-test; do
    [ -f "$bin/$b.gz" ] || { echo "missing $bin/$b.gz: run '$0 build' first" >&2; exit 2; }
    gunzip -c "$bin/$b.gz" > "$scratch/bin/$b" && chmod +x "$scratch/bin/$b"
  done
  local exe="$scratch/bin" n="${MATMUL_N:-2048}" strategy="${STRATEGY:-random}"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
  nproc | sed 's/^/host cores: /' | tee -a "$out/gpu.txt"
  export CARGO_MANIFEST_DIR="$here/examples/basic"
  one() { # label harness target-dir [env...]
    local label="$1" harness="$2" t="$3"; shift 3
    env "$@" timeout "${T_RUN:-120}" "$exe/cargo-rocm" tune --harness "$exe/$harness" \
      --backend nvidia --problem "n=$n" --iterations 5 --strategy "$strategy" --budget 100 \
      --seed 1 --fresh --no-wisdom --target-dir "$t" --message-format json -- matmul \
      > "$out/$label.json" 2> "$out/$label.err"
    echo "$label: exit $?" >&2
  }
  rm -rf "$scratch/t-"*
  one before kernels-test-before "$scratch/t-before"
  one threads kernels-test "$scratch/t-threads" ROCM_TEST_RTC_IN_PROCESS=1
  one processes kernels-test "$scratch/t-processes"
  one warm kernels-test "$scratch/t-processes"
  local labels="before threads processes warm"
  if [ -n "${ALSO_STRATEGY:-}" ]; then
    strategy="$ALSO_STRATEGY" one "before-$ALSO_STRATEGY" kernels-test-before "$scratch/t-before2"
    strategy="$ALSO_STRATEGY" one "after-$ALSO_STRATEGY" kernels-test "$scratch/t-after2"
    labels="$labels before-$ALSO_STRATEGY after-$ALSO_STRATEGY"
  fi
  {
    echo "examples/basic matmul, n=$n, $strategy, budget 100, 5 iterations, empty compile cache (warm: the processes run again)"
    for l in $labels; do summarize "$l" "$out/$l.json"; done
    # How long one candidate's compile took (each cache entry records it).
    python3 - "$scratch" <<'PY'
import glob, json, statistics, sys
for label in ("before", "threads", "processes"):
    s = []
    for m in glob.glob("%s/t-%s/**/meta.json" % (sys.argv[1], label), recursive=True):
        try: s.append(json.load(open(m))["seconds"])
        except (ValueError, KeyError, OSError): pass
    if s:
        s.sort()
        print("%-10s compiles %3d: median %.3f s, p90 %.3f s, max %.3f s, sum %.1f s" % (
            label, len(s), statistics.median(s), s[int(0.9 * (len(s) - 1))], s[-1], sum(s)))
PY
  } | tee "$out/table.txt"
  if ls "$here/.carry/h100/kt/"*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/kt-site "$here/.carry/h100/kt/"*.whl
    PYTHONPATH=/tmp/kt-site timeout "${T_KT:-150}" python3 "$here/scripts/h100/kt_side_by_side.py" \
      --kernel matmul --n "$n" --strategy random_sample --seeds 1 --budget 100 \
      --out "$out/kt.json" > "$out/kt.txt" 2>&1
    echo "kernel tuner: exit $?" >&2
    python3 - "$out/kt.json" <<'PY' | tee -a "$out/table.txt"
import json, sys
try:
    runs = json.load(open(sys.argv[1]))["runs"]
except (ValueError, OSError, KeyError):
    print("kernel tuner: no result"); sys.exit(0)
for r in runs:
    ev = r["evaluations"]
    k = sum(sum(e["times"]) for e in ev) / 1e3
    per = 1e3 * (r["wall_s"] - k) / max(1, len(ev))
    c = sum(e["compile_ms"] for e in ev) / max(1, len(ev))
    v = sum(e["verification_ms"] for e in ev) / max(1, len(ev))
    print("%-10s %-16s evals %4d  wall %6.1f s  kernel %5.2f s  beyond kernel %6.1f ms/eval = compile %6.1f + verify %5.1f + rest %5.1f" % (
        "kt 1.5", r["strategy"], len(ev), r["wall_s"], k, per, c, v, per - c - v))
PY
  fi
}

case "${1:-run}" in
  build) shift; build "$@" ;;
  run) run ;;
  *) echo "usage: $0 [build [BEFORE_DIR]|run]" >&2; exit 2 ;;
esac
