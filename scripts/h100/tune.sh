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
#
# TUNE_CRATE=llm: the llm template's matmul (examples/llm/kernels/matmul.hip, 240 valid
# configurations of its tile shapes) instead, against cuBLAS SGEMM:
#
#   TUNE_CRATE=llm scripts/h100/tune.sh build   # here: .carry/h100/tune-llm/ (TUNE_BIN= elsewhere)
#   TUNE_CRATE=llm scripts/h100/tune.sh         # there
#
# `build` writes cargo-rocm, examples/llm's harness (kernels-test, with the tune feature, its own
# kernels as nvcc sm_90 cubins where nvcc is here, else CUDA source) and its bench (kernels-bench:
# the matmul and cuBLAS SGEMM rows of benches/kernels.rs). The run, per size in LLM_TUNE_N
# (default "4096 2048"): brute force over the space (each candidate compiled by NVRTC from
# examples/llm/kernels/matmul.hip in the carried tree, checked against the Rust reference of the
# `matmul_square` check at that size, timed with device events, ITERATIONS runs, default 7), into
# $OUT/wisdom.json (copy it to examples/llm/tune/wisdom.json: `MatmulPlan::select` and the bench
# then launch it); then the bench, filtered to `matmul|sgemm_vendor`: the kernel the bench binary
# has built in (the default, or the tuned one if it was built with a wisdom file) and cuBLAS SGEMM
# (libcublas.so.13 from /usr/local/cuda/lib64) at 2048^3 and 4096^3 with criterion, device
# events around back-to-back launches. The wisdom is built in at compile time and there is no
# Rust there, so a bench binary built before the tuning cannot run the configuration just found:
# $OUT/table.txt sets the tuned configuration's time from the tune run beside cuBLAS's from the
# bench, and the default configuration measured both ways (tune run and bench) shows how far the
# two methods agree. Once the wisdom is committed, `scripts/h100/llm.sh build` and
# `PARTS=matmul scripts/h100/llm.sh` time the built-in tuned kernel (the bench's `matmul` row, with
# `matmul_default` beside it) against cuBLAS directly, as docs/benchmarks.md's second call did.
# Time limits: T_LLM_4096 (default 110 s), T_LLM_2048 (60), T_LLM_BENCH (80); the bench is cut off
# after its matmul rows (the other groups of the binary set up their data even when filtered out).
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
crate="${TUNE_CRATE:-basic}"
case "$crate" in
  basic) bin="${TUNE_BIN:-$here/.carry/h100/tune}" ;;
  llm) bin="${TUNE_BIN:-$here/.carry/h100/tune-llm}" ;;
  *) echo "TUNE_CRATE=$crate: basic or llm" >&2; exit 2 ;;
esac

# shellcheck source=artifact.sh
. "$here/scripts/h100/artifact.sh"

# The binaries a run needs, stripped and gzipped into $bin: cargo-rocm, then per crate the test
# harness with tune mode (basic: examples/basic's, and rocm-tune's `score` example; llm:
# examples/llm's, and its bench for the cuBLAS rows).
build() {
  set -e
  rm -rf "$bin"
  mkdir -p "$bin"
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
  cargo build --release --manifest-path "$here/Cargo.toml" -p cargo-rocm
  cp "$CARGO_TARGET_DIR/release/cargo-rocm" "$bin/cargo-rocm"
  export ROCM_BACKENDS=cpu,nvidia ROCM_NVIDIA_ARCH="${ROCM_NVIDIA_ARCH:-sm_90}"
  local exe run_hint
  case "$crate" in
    basic)
      exe="$(cargo build --release --manifest-path "$here/Cargo.toml" -p rocm-tune --example score \
        --message-format json | artifact score example)"
      cp "$exe" "$bin/score"
      exe="$(cargo test --release --no-run --manifest-path "$here/examples/basic/Cargo.toml" \
        --test kernels --features rocm-test/tune --message-format json | artifact kernels test)"
      cp "$exe" "$bin/kernels-test"
      run_hint="scripts/h100/tune.sh"
      ;;
    llm)
      exe="$(cargo test --release --no-run --manifest-path "$here/Cargo.toml" -p llm-kernels \
        --test kernels --features rocm-test/tune --message-format json | artifact kernels test)"
      cp "$exe" "$bin/kernels-test"
      exe="$(cargo bench --no-run --manifest-path "$here/Cargo.toml" -p llm-kernels --bench kernels \
        --message-format json | artifact kernels bench)"
      cp "$exe" "$bin/kernels-bench"
      run_hint="TUNE_CRATE=llm scripts/h100/tune.sh"
      ;;
  esac
  strip "$bin"/*
  # Compressed: the carried tree has a size limit (gunzipped into $OUT/bin by the run).
  gzip -9 -f "$bin"/*
  ls -l "$bin"
  du -sh "$bin"
  echo "built; carry $bin with the tree and run $run_hint on the GPU machine" >&2
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

run_llm() {
  out="${OUT:-$PWD/h100-tune-llm}"
  scratch="${TUNE_SCRATCH:-/tmp/rocm-tune-h100-llm}"
  mkdir -p "$out" "$scratch/bin"
  for b in cargo-rocm kernels-test kernels-bench; do
    [ -f "$bin/$b.gz" ] || { echo "missing $bin/$b.gz: run 'TUNE_CRATE=llm scripts/h100/tune.sh build' on a machine with Rust first" >&2; exit 2; }
    gunzip -c "$bin/$b.gz" > "$scratch/bin/$b" && chmod +x "$scratch/bin/$b"
  done
  local exe="$scratch/bin"
  nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv,noheader \
    | tee "$out/gpu.txt" | sed 's/^/gpu: /'
  # cuBLAS for the bench (NVRTC is found there by the runtime itself).
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
  done
  # The harness compiles the candidates from the kernels' sources in the carried tree.
  export CARGO_MANIFEST_DIR="$here/examples/llm"
  t="$scratch/target"
  [ -f "$here/examples/llm/tune/wisdom.json" ] && [ ! -f "$out/wisdom.json" ] \
    && cp "$here/examples/llm/tune/wisdom.json" "$out/wisdom.json"
  for n in ${LLM_TUNE_N:-4096 2048}; do
    local limit_var="T_LLM_$n"
    local limit="${!limit_var:-$([ "$n" -ge 4096 ] && echo 110 || echo 60)}"
    echo "==> matmul n=$n: brute force (at most $limit s)" >&2
    # The run's own time budget ends it 15 s before `timeout` would, so that a brute force cut
    # off still writes its report and the wisdom entry of the best it measured.
    timeout "$limit" "$exe/cargo-rocm" tune --harness "$exe/kernels-test" --backend "${TUNE_BACKEND:-nvidia}" \
        --problem "n=$n" --iterations "${ITERATIONS:-7}" --target-dir "$t" --message-format json \
        --strategy brute_force --budget 100000 --time "$((limit > 30 ? limit - 15 : limit))s" \
        --wisdom "$out/wisdom.json" -- matmul > "$out/brute-$n.json" 2> "$out/brute-$n.err"
    local status=$?
    echo "matmul n=$n brute force: exit $status" >&2
    [ $status -eq 124 ] && echo "WARNING: n=$n cut off at $limit s: the best is of the part measured" | tee -a "$out/warning.txt"
    summarize "$out/brute-$n.json" | tee "$out/brute-$n.txt"
    find "$t/rocm/tune/matmul" -name "*n=$n*.jsonl" -exec cp {} "$out/cache-$n.jsonl" \; 2>/dev/null
    [ -f "$out/cache-$n.jsonl" ] || find "$t/rocm/tune/matmul" -name '*.jsonl' -newer "$out/brute-$n.err" \
      -exec cp {} "$out/cache-$n.jsonl" \; 2>/dev/null
  done
  cp "$t/rocm/tune/report.html" "$out/report.html" 2>/dev/null || true
  echo "==> the bench's matmul and cuBLAS SGEMM rows" >&2
  ROCM_BENCH_BACKEND="${TUNE_BACKEND:-nvidia}" ROCM_BENCH_EVENTS="$out/bench-events.jsonl" \
    ROCM_BENCH_SAMPLES="${BENCH_SAMPLES:-10}" ROCM_BENCH_WARMUP_MS="${BENCH_WARMUP_MS:-300}" \
    ROCM_BENCH_MEASURE_MS="${BENCH_MEASURE_MS:-1000}" \
    timeout "${T_LLM_BENCH:-80}" "$exe/kernels-bench" --bench 'matmul|sgemm_vendor' > "$out/bench.txt" 2>&1
  echo "bench: exit $?" | tee -a "$out/bench.txt" >&2
  grep -i "vendor\|largest difference\|tuned\|default runs\|panicked" "$out/bench.txt" >&2
  llm_table "$out" | tee "$out/table.txt"
  [ -f "$out/wisdom.json" ] && echo "wisdom: $out/wisdom.json (copy to examples/llm/tune/wisdom.json)"
}

# The tuned matmul against cuBLAS: per size, the best configuration and the default as the tune
# run timed them (median of ITERATIONS launches, each between two events), the bench's rows
# (criterion, events around back-to-back launches), and the shares.
llm_table() {
  python3 - "$1" <<'PY'
import glob, json, os, re, statistics, sys
out = sys.argv[1]
bench = {}
try:
    for l in open(os.path.join(out, "bench-events.jsonl")):
        e = json.loads(l)
        if e.get("type") == "summary" or not e.get("samples"):
            continue
        bench[e["id"]] = statistics.median(e["samples"]) / 1e6  # ms per launch
except FileNotFoundError:
    pass
def bench_ms(group, n):
    for id_, ms in bench.items():
        if id_.startswith(group + "/") and id_.endswith(f"/{n}^3"):
            return ms
tf = lambda n, ms: 2 * n ** 3 / (ms * 1e-3) / 1e12 if ms else None
fmt = lambda v, unit="": f"{v:.2f}{unit}" if v else "-"
for path in sorted(glob.glob(os.path.join(out, "brute-*.json")), key=lambda p: -int(re.findall(r"\d+", p)[-1])):
    n = int(re.findall(r"\d+", path)[-1])
    try:
        report = json.load(open(path))
    except ValueError:
        print(f"n={n}: no tune report"); continue
    for r in report.get("runs", []):
        best = r.get("best") or {}
        t_best = best.get("time_ms")
        t_def = (r.get("default") or {}).get("time_ms")
        cublas = bench_ms("sgemm_vendor", n)
        b_mm, b_def = bench_ms("matmul", n), bench_ms("matmul_default", n)
        print(f"n={n}: {r.get('evaluations')} of {r.get('space')} configurations measured, "
              f"{sum((r.get('failures') or {}).values())} failed")
        print(f"  best    {json.dumps(best.get('config'))}")
        print(f"  tune run  best {fmt(t_best, ' ms')} = {fmt(tf(n, t_best), ' TFLOP/s')}; "
              f"default {fmt(t_def, ' ms')} = {fmt(tf(n, t_def), ' TFLOP/s')}")
        print(f"  bench     matmul {fmt(b_mm, ' ms')} = {fmt(tf(n, b_mm), ' TFLOP/s')}"
              + (f"; matmul_default {fmt(b_def, ' ms')}" if b_def else "")
              + f"; cuBLAS SGEMM {fmt(cublas, ' ms')} = {fmt(tf(n, cublas), ' TFLOP/s')}")
        if cublas and t_best:
            print(f"  share of cuBLAS: tuned (tune-run time) {100 * cublas / t_best:.0f}%"
                  + (f", default (tune-run time) {100 * cublas / t_def:.0f}%" if t_def else "")
                  + (f", the bench's matmul {100 * cublas / b_mm:.0f}%" if b_mm else ""))
        if t_def and b_mm and not b_def:
            print(f"  the default both ways: bench / tune run = {b_mm / t_def:.3f}")
        # The ten fastest configurations measured (the run's trace).
        best_of = {}
        for e in r.get("trace", []):
            if e.get("outcome") == "ok" and e.get("time_ms"):
                key = json.dumps(e["config"], sort_keys=True)
                best_of[key] = min(best_of.get(key, float("inf")), e["time_ms"])
        print("  fastest measured:")
        for key, t in sorted(best_of.items(), key=lambda x: x[1])[:10]:
            print(f"    {t:8.4f} ms {tf(n, t):6.2f} TFLOP/s  {key}")
PY
}

case "$crate:${1:-run}" in
  *:build | *:--prepare) build ;;
  basic:run) run ;;
  llm:run) run_llm ;;
  *) echo "usage: [TUNE_CRATE=basic|llm] $0 [build|run]" >&2; exit 2 ;;
esac
