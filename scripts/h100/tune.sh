#!/usr/bin/env bash
# `cargo rocm tune` on an NVIDIA GPU: the example crate's tiled matmul (1361 valid configurations)
# and 7x7 convolution (726), each brute-forced for the optimum, our strategies scored at budgets
# 20/50/100 over several seeds, the overhead per evaluation beyond kernel time, and the wisdom file.
#
#   scripts/h100/tune.sh build      # here (Rust, no GPU, no nvcc needed): build the binaries
#   scripts/h100/tune.sh            # there (NVIDIA driver 580, NVRTC 13; no Rust): run
#
# `build` writes stripped, gzipped release binaries (NAME.gz, about 9 MB in all) to
# .carry/h100/tune/ (ignored by git; carry it with the tree; the run unpacks them into $OUT/bin):
#   cargo-rocm      the `cargo-rocm` command (`tune --harness` runs a prebuilt harness)
#   kernels-test    examples/basic's test harness (tests/kernels.rs: the matmul and conv2d
#                   checks and their tunables), built with ROCM_BACKENDS=cpu,nvidia; candidates
#                   are compiled at run time with NVRTC (libnvrtc.so.13 from /usr/local/cuda/lib64,
#                   CUDA_PATH or CUDA_HOME) from examples/basic/kernels/*.hip in the carried tree
#   score           rocm-tune's `score` example: every strategy replayed over the brute-force
#                   table (budgets × seeds), scored against random sampling
# The run, from the repository root, writes to $OUT (default ./h100-tune), per kernel in
# $OUT/<kernel>/:
#   1. overhead.json/.txt: one fresh regression-and-prune run (budget 100, empty compile cache):
#      the overhead per measured evaluation beyond kernel time (compile wait, verification, the
#      harness)
#   2. brute.json/.txt: brute force over the whole space (the optimum, the table the scores
#      replay; the 100 of step 1 come from the cache), cache.jsonl and the Kernel Tuner export
#      (*.kt.json)
#   3. scores.txt/.json: score = (best found − expected best of random sampling at the same
#      budget) / (optimum − that expectation), per strategy and budget, mean over SEEDS seeds,
#      with "within 5%" counts and the share of the space evaluated
# and $OUT/wisdom.json: the best configurations for this device and problem sizes (copy it to
# examples/basic/tune/wisdom.json to have `matmul_tuned` use it), $OUT/report.html.
# Environment: OVERHEAD_STRATEGY (the strategy of step 1, default regression_prune), OVERHEAD_WARM (set: step 1 once more with the compile cache warm; T_*_BRUTE=0 stops
# after step 1), TUNE_KERNELS (default "matmul conv2d"), MATMUL_N (default 2048), CONV_N (default 4096), SEEDS (default 10), BUDGETS
# (default 20,50,100), ITERATIONS (timed runs per configuration, default 5). Every step has a
# time limit (at most 340 s in all); a brute force cut off says so.
#
# Kernel Tuner 1.5 on the same kernels and spaces: scripts/h100/kt.sh (its scores are computed
# over this script's brute-force tables by scripts/h100/kt_scores.py).
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$here/.carry/h100/tune"

# shellcheck source=artifact.sh
. "$here/scripts/h100/artifact.sh"

build() {
  set -e
  rm -rf "$bin"
  mkdir -p "$bin"
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
  cargo build --release --manifest-path "$here/Cargo.toml" -p cargo-rocm
  cp "$CARGO_TARGET_DIR/release/cargo-rocm" "$bin/cargo-rocm"
  local exe
  exe="$(cargo build --release --manifest-path "$here/Cargo.toml" -p rocm-tune --example score \
    --message-format json | artifact score example)"
  cp "$exe" "$bin/score"
  exe="$(ROCM_BACKENDS=cpu,nvidia ROCM_NVIDIA_ARCH="${ROCM_NVIDIA_ARCH:-sm_90}" \
    cargo test --release --no-run --manifest-path "$here/examples/basic/Cargo.toml" \
      --test kernels --features rocm-test/tune --message-format json | artifact kernels test)"
  cp "$exe" "$bin/kernels-test"
  strip "$bin"/*
  # Compressed: the carried tree has a size limit (gunzipped into $OUT/bin by the run).
  gzip -9 -f "$bin"/*
  ls -l "$bin"
  du -sh "$bin"
  echo "built; carry .carry/h100/tune/ with the tree and run scripts/h100/tune.sh on the GPU machine" >&2
}

# Print the summary of a `cargo rocm tune --message-format json` report: per run, the best
# configuration, its time, evaluations, and the overhead per evaluation beyond kernel time.
summarize() {
  python3 - "$1" <<'PY'
import json, sys
try:
    report = json.load(open(sys.argv[1]))
except ValueError:
    print("no report in %s (the run was cut off before it wrote one; its cache still counts)" % sys.argv[1])
    sys.exit(0)
for e in report.get("errors", []):
    print("error: %s%s" % (e["kernel"] + ": " if e.get("kernel") else "", e.get("message")))
for r in report.get("runs", []):
    best = r.get("best") or {}
    o = r.get("overhead") or {}
    measured = max(1, o.get("measured") or 0)
    print("%-8s %-17s space %5s  evals %5s (measured %5s, failed %s)  best %s = %s ms  speed-up %s" % (
        r.get("kernel"), r.get("strategy"), r.get("space"), r.get("evaluations"), o.get("measured"),
        sum((r.get("failures") or {}).values()), json.dumps(best.get("config")), best.get("time_ms"),
        r.get("speedup")))
    print("         wall %.1f s, kernel %.1f s; per measured evaluation beyond kernel time: %.1f ms "
          "(compile wait %.1f ms, verification %.1f ms)" % (
        o.get("total_s", 0), o.get("kernel_s", 0), o.get("per_eval_ms", 0),
        1e3 * o.get("compile_s", 0) / measured, 1e3 * o.get("verify_s", 0) / measured))
PY
}

# Tune one kernel: a fresh regression-and-prune run (overhead), brute force (the optimum and the
# table), the scores replayed over it. $1 kernel, $2 problem, $3/$4 time limits of the two runs.
tune_kernel() {
  local k="$1" problem="$2" t_over="$3" t_brute="$4"
  local o="$out/$k"
  mkdir -p "$o"
  local common=(tune --harness "$exe/kernels-test" --backend nvidia --problem "$problem"
                --iterations "${ITERATIONS:-5}" --target-dir "$t" --message-format json)
  local strategy="${OVERHEAD_STRATEGY:-regression_prune}"
  echo "==> $k ($problem): 1. overhead: a fresh $strategy run, budget 100" >&2
  timeout "$t_over" "$exe/cargo-rocm" "${common[@]}" --strategy "$strategy" --budget 100 \
      --seed 1 --fresh --no-wisdom -- "$k" > "$o/overhead.json" 2> "$o/overhead.err"
  echo "$k overhead run: exit $? (124: cut off at $t_over s)" >&2
  summarize "$o/overhead.json" | tee "$o/overhead.txt"
  if [ -n "${OVERHEAD_WARM:-}" ]; then
    # The same run again: its candidates are now in the compile cache, so this is the overhead
    # beyond compiling (verification, the harness).
    echo "==> $k ($problem): 1b. the same run with the compile cache warm" >&2
    timeout "$t_over" "$exe/cargo-rocm" "${common[@]}" --strategy "$strategy" --budget 100 \
        --seed 1 --fresh --no-wisdom -- "$k" > "$o/overhead-warm.json" 2> "$o/overhead-warm.err"
    summarize "$o/overhead-warm.json" | tee "$o/overhead-warm.txt"
  fi
  # T_*_BRUTE=0: the overhead runs only.
  [ "$t_brute" -gt 0 ] || return 0
  echo "==> $k ($problem): 2. brute force (the optimum; the table the scores replay)" >&2
  # The run's own time budget ends it 15 s before `timeout` would, so that a brute force that
  # does not finish still writes its report and the wisdom entry of the best it measured.
  timeout "$t_brute" "$exe/cargo-rocm" "${common[@]}" --strategy brute_force --budget 100000 \
      --time "$((t_brute > 30 ? t_brute - 15 : t_brute))s" \
      --export-kt --wisdom "$out/wisdom.json" -- "$k" > "$o/brute.json" 2> "$o/brute.err"
  local status=$?
  echo "$k brute force: exit $status" >&2
  [ $status -eq 124 ] && echo "WARNING: $k brute force cut off at $t_brute s: the optimum and scores below are over the part measured" | tee "$o/warning.txt"
  summarize "$o/brute.json" | tee "$o/brute.txt"
  echo "==> $k: 3. scores per strategy and budget ($seeds seeds), replayed over the brute-force table" >&2
  local cache
  cache="$(find "$t/rocm/tune/$k" -name '*.jsonl' | head -n 1)"
  if [ -n "$cache" ]; then
    cp "$cache" "$o/cache.jsonl"
    find "$t/rocm/tune/$k" -name '*.kt.json' -exec cp {} "$o/" \;
    "$exe/score" --jsonl "$cache" --seeds "$seeds" --budgets "$budgets" | tee "$o/scores.txt"
    "$exe/score" --jsonl "$cache" --seeds "$seeds" --budgets "$budgets" --json > "$o/scores.json"
  else
    echo "no cache under $t/rocm/tune/$k: see $o/brute.err" | tee "$o/scores.txt"
  fi
}

run() {
  out="${OUT:-$PWD/h100-tune}"
  seeds="${SEEDS:-10}" budgets="${BUDGETS:-20,50,100}"
  # Binaries and the tuning target directory (compile cache, thousands of files) outside $OUT,
  # which comes back to the dev machine and is limited in file count.
  scratch="${TUNE_SCRATCH:-/tmp/rocm-tune-h100}"
  mkdir -p "$out" "$scratch"
  for b in cargo-rocm kernels-test score; do
    [ -f "$bin/$b.gz" ] || { echo "missing $bin/$b.gz: run 'scripts/h100/tune.sh build' on a machine with Rust first" >&2; exit 2; }
    mkdir -p "$scratch/bin" && gunzip -c "$bin/$b.gz" > "$scratch/bin/$b" && chmod +x "$scratch/bin/$b"
  done
  local exe="$scratch/bin"
  nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv,noheader \
    | tee "$out/gpu.txt" | sed 's/^/gpu: /'
  # The harness finds the kernels' sources (and their local headers) in the carried tree.
  export CARGO_MANIFEST_DIR="$here/examples/basic"
  t="$scratch/target"
  # The wisdom file grows: entries already in the example's file are kept (the run merges).
  [ -f "$here/examples/basic/tune/wisdom.json" ] && [ ! -f "$out/wisdom.json" ] \
    && cp "$here/examples/basic/tune/wisdom.json" "$out/wisdom.json"
  for k in ${TUNE_KERNELS:-matmul conv2d}; do
    case "$k" in
      matmul) tune_kernel matmul "n=${MATMUL_N:-2048}" "${T_MATMUL_OVER:-60}" "${T_MATMUL_BRUTE:-150}" ;;
      conv2d) tune_kernel conv2d "n=${CONV_N:-4096}" "${T_CONV_OVER:-40}" "${T_CONV_BRUTE:-90}" ;;
      *) echo "unknown kernel in TUNE_KERNELS: $k (matmul, conv2d)" >&2; exit 2 ;;
    esac
  done
  cp "$t/rocm/tune/report.html" "$out/report.html" 2>/dev/null || true
  [ -f "$out/wisdom.json" ] && echo "wisdom: $out/wisdom.json (copy to examples/basic/tune/wisdom.json)"
}

case "${1:-run}" in
  build | --prepare) build ;;
  run) run ;;
  *) echo "usage: $0 [build|run]" >&2; exit 2 ;;
esac
