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
# wheels of scripts/h100/kt.sh carried (.carry/h100/kt, or KT_WHEELS), Kernel Tuner's random sampling runs on the same kernel
# (budget 100, 1 seed) and its per-evaluation times are printed the same way.
# RUNS (default "before threads processes warm") picks among those four. Further steps, when set:
#   BRUTE=SECONDS  brute force with this tree's harness over the whole space (time-limited; the
#                  compile cache of `processes` is reused), then the strategies replayed over its
#                  table by the carried `score` (this tree's rocm-tune) and `score-before` (the
#                  earlier one), SEEDS seeds (default 10) at 20/50/100: search quality before/after
#   TUNED_N=4096   `cargo rocm tune` with the default strategy at n = TUNED_N (budget 100): the
#                  best configuration's TFLOP/s, and cuBLAS SGEMM (torch.mm, TF32 off) at that
#                  size in the same run, where torch is on the machine
# Writes $OUT (default ./h100-overhead): *.json reports, table.txt, and with BRUTE scores-*.txt
# and brute.jsonl (the table).
set -uo pipefail
# OVERHEAD_ROOT: the checkout whose examples/basic and scripts are used (default: this script's);
# OVERHEAD_BIN: the binaries (default .carry/h100/overhead there).
here="${OVERHEAD_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}"
bin="${OVERHEAD_BIN:-$here/.carry/h100/overhead}"

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
  # The score replay of this tree, and of the earlier one where SCORE_BEFORE names its binary.
  exe="$(cargo build --release --manifest-path "$here/Cargo.toml" -p rocm-tune --example score \
    --message-format json | artifact score example)"
  cp "$exe" "$bin/score"
  if [ -n "${SCORE_BEFORE:-}" ]; then cp "$SCORE_BEFORE" "$bin/score-before"; fi
  strip "$bin"/score*
  gzip -9 -f "$bin"/score "$bin"/score-before 2>/dev/null || true
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
  for b in score score-before; do
    [ -f "$bin/$b.gz" ] && gunzip -c "$bin/$b.gz" > "$scratch/bin/$b" && chmod +x "$scratch/bin/$b"
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
  local runs=" ${RUNS:-before threads processes warm} " labels=""
  case "$runs" in *" before "*) one before kernels-test-before "$scratch/t-before"; labels="$labels before" ;; esac
  case "$runs" in *" threads "*) one threads kernels-test "$scratch/t-threads" ROCM_TEST_RTC_IN_PROCESS=1; labels="$labels threads" ;; esac
  case "$runs" in *" processes "*) one processes kernels-test "$scratch/t-processes"; labels="$labels processes" ;; esac
  case "$runs" in *" warm "*) one warm kernels-test "$scratch/t-processes"; labels="$labels warm" ;; esac
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
  if [ -n "${TUNED_N:-}" ]; then
    # The default strategy at a larger size, and cuBLAS there (issue 28 item 1).
    env timeout "${T_TUNED:-120}" "$exe/cargo-rocm" tune --harness "$exe/kernels-test" \
      --backend nvidia --problem "n=$TUNED_N" --iterations 5 --budget 100 --seed 1 \
      --target-dir "$scratch/t-processes" --wisdom "$out/wisdom.json" --message-format json \
      -- matmul > "$out/tuned-$TUNED_N.json" 2> "$out/tuned-$TUNED_N.err"
    echo "tuned n=$TUNED_N: exit $?" >&2
    summarize "tuned-$TUNED_N" "$out/tuned-$TUNED_N.json" | tee -a "$out/table.txt"
    timeout 60 python3 - "$TUNED_N" "$out/tuned-$TUNED_N.json" <<'PY' 2>&1 | tee -a "$out/table.txt"
import json, sys
n = int(sys.argv[1])
try:
    r = json.load(open(sys.argv[2]))["runs"][0]
    best, default = r["best"], r["default"]
    print("basic matmul n=%d: best %s %.3f ms = %.1f TFLOP/s; default %.3f ms = %.1f TFLOP/s" % (
        n, json.dumps(best["config"]), best["time_ms"], 2 * n**3 / best["time_ms"] / 1e9,
        default["time_ms"], 2 * n**3 / default["time_ms"] / 1e9))
except Exception as e:
    print("no tuned result: %r" % (e,))
try:
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    a = torch.randn(n, n, device="cuda"); b = torch.randn(n, n, device="cuda")
    for _ in range(3): torch.mm(a, b)
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); torch.mm(a, b); e.record(); torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    ms = times[len(times) // 2]
    print("cuBLAS SGEMM (torch %s, TF32 off) n=%d: median %.3f ms = %.1f TFLOP/s" % (
        torch.__version__, n, ms, 2 * n**3 / ms / 1e9))
except Exception as e:
    print("no cuBLAS figure: %r" % (e,))
PY
  fi
  if [ -n "${BRUTE:-}" ]; then
    # The whole space with this tree's harness (the compile cache of `processes` reused), and
    # the strategies of both trees replayed over it.
    env timeout "$BRUTE" "$exe/cargo-rocm" tune --harness "$exe/kernels-test" --backend nvidia \
      --problem "n=$n" --iterations 5 --strategy brute_force --budget 100000 \
      --time "$((BRUTE > 30 ? BRUTE - 15 : BRUTE))s" --no-wisdom --target-dir "$scratch/t-processes" \
      --message-format json -- matmul > "$out/brute.json" 2> "$out/brute.err"
    echo "brute force: exit $?" >&2
    summarize brute "$out/brute.json" | tee -a "$out/table.txt"
    local cache
    cache="$(find "$scratch/t-processes/rocm/tune/matmul" -name "n=$n.jsonl" | head -n 1)"
    if [ -n "$cache" ]; then
      cp "$cache" "$out/brute.jsonl"
      for sc in score score-before; do
        [ -x "$exe/$sc" ] && timeout 60 "$exe/$sc" --jsonl "$cache" --seeds "${SEEDS:-10}" \
          --budgets 20,50,100 > "$out/scores-$sc.txt" 2>&1
        grep -E "space:|regression_prune" "$out/scores-$sc.txt" | sed "s/^/$sc /" | tee -a "$out/table.txt"
      done
    fi
  fi
  local kt="${KT_WHEELS:-$here/.carry/h100/kt}"
  if ls "$kt/"*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/kt-site "$kt/"*.whl
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
