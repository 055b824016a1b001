#!/usr/bin/env bash
# Issue 15 on the H100 box, one run, results into $OUT (run from the repository root):
#   - the CUDA originals of gpu-benches, built there with nvcc from the carried checkout, and
#     this repository's suite (prebuilt), side by side, with the headline table of ratios;
#   - a ~10 µs kernel: our event timings (single launch, back to back, criterion's batches as
#     `cargo rocm bench` records them), host-timed synchronous launches, and Nsight Compute's
#     gpu__time_duration with --clock-control none --cache-control none (the GPU at its own
#     boost clock and the L2 left warm, as for the event timings), plus ncu's defaults for
#     reference (clocks locked to base, caches flushed before each kernel).
#
#   scripts/h100/bench.sh --prepare [CARRY]   # dev machine (Rust; no GPU, no nvcc):
#                                             # CARRY defaults to .carry/h100/bench (ignored)
#   OUT=/some/dir scripts/h100/bench.sh       # GPU machine, from the repository root
#   scripts/h100/bench.sh --table DIR         # re-print the table of a run's outputs (anywhere)
#
# The run keeps to BUDGET seconds of wall time (default 450: one device call of 8 minutes with
# room for the start): each step runs under `timeout`, with its own limit cut to what is left,
# and a step with less than 5 s left is skipped (said in bench.log). Limits per step (seconds):
# originals T_ORIG_<NAME>, ports T_PORT_<NAME> (NAME: stream cache l2 latency small memcpy);
# T_ORIG / T_PORT, when set, replace every original's / port's default. ORIG_BENCHES names the
# originals to build (default: all six); TEN_US_ARGS is passed to the 10 µs example (e.g.
# "--elements 3145728" for about 10 µs on an H200). The steps run in order
# of what the headline table needs most; the gpu-cache port runs while the originals compile
# (its launches are timed by device events, and the compiles only load the CPU).
set -uo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
CARRY=${CARRY:-$here/.carry/h100/bench}

if [ "${1:-}" = "--table" ]; then
  exec python3 "$here/scripts/h100/bench_table.py" "${2:?usage: bench.sh --table DIR}"
fi

if [ "${1:-}" = "--prepare" ]; then
  CARRY=${2:-$CARRY}
  set -e
  rm -rf "$CARRY"
  mkdir -p "$CARRY/bin"
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
  # The suite's bench binary and the 10 µs example, for cpu and nvidia only (no AMD code objects
  # to carry). Without nvcc here the nvidia backend embeds the CUDA source and NVRTC compiles it
  # on the GPU machine (libnvrtc.so.13 of its CUDA 13.0).
  export ROCM_BACKENDS=cpu,nvidia ROCM_NVIDIA_ARCH="${ROCM_NVIDIA_ARCH:-sm_90}"
  exe="$(cargo bench --manifest-path "$here/Cargo.toml" -p gpu-benches --no-run --message-format=json 2>/dev/null \
    | python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "bench" in m["target"]["kind"]:
        print(m["executable"])')"
  [ -n "$exe" ] || { echo "the gpu-benches bench binary did not build: run 'cargo bench -p gpu-benches --no-run' to see why" >&2; exit 1; }
  cp "$exe" "$CARRY/bin/gpu-benches"
  cargo build --manifest-path "$here/Cargo.toml" --release -p gpu-benches --example ten_us
  cp "$CARGO_TARGET_DIR/release/examples/ten_us" "$CARRY/bin/"
  strip "$CARRY"/bin/*
  gzip -9 -f "$CARRY"/bin/*
  # The originals' sources (a checkout of te42kyfo/gpu-benches outside the repository): only
  # what the benchmarks run here need to compile, not the published results and plots.
  src=${GPU_BENCHES_SRC:-/tmp/gpu-benches-src}
  if [ -d "$src" ]; then
    mkdir -p "$CARRY/gpu-benches-src"
    ( cd "$src" && find . -maxdepth 1 -type f \( -name '*.hpp' -o -name '*.h' -o -name '*.cuh' -o -name LICENSE \) -print0 \
        | xargs -0 cp --parents -t "$CARRY/gpu-benches-src"
      for d in gpu-stream gpu-cache gpu-l2-cache gpu-latency gpu-small-kernels cuda-memcpy gpu-metrics; do
        find "$d" -type f \( -name '*.cu' -o -name '*.cuh' -o -name '*.hpp' -o -name '*.h' -o -name Makefile \) -print0 \
          | xargs -0 cp --parents -t "$CARRY/gpu-benches-src"
      done
      if commit=$(git rev-parse HEAD 2>/dev/null); then echo "$commit" > "$CARRY/gpu-benches-src/COMMIT"; fi )
  else
    echo "no checkout of the originals at $src (GPU_BENCHES_SRC): the run will measure the port only" >&2
  fi
  # Wheels only on request: the H100 machine has CUDA 13.0 (NVRTC, CUPTI under /usr/local/cuda).
  if [ -n "${WHEELS:-}" ]; then
    pip download --no-deps -d "$CARRY/wheels" "nvidia-cuda-nvrtc==13.0.*" >/dev/null
  fi
  du -sh "$CARRY"
  echo "prepared $CARRY; carry it with the tree and run 'OUT=... scripts/h100/bench.sh' on the GPU machine" >&2
  exit 0
fi

# ---------------------------------------------------------------------------- the run
OUT=${OUT:-$PWD/h100-bench}
BUDGET=${BUDGET:-450}
mkdir -p "$OUT" "$OUT/bin"
SECONDS=0
log() { echo "== [${SECONDS}s] $*" | tee -a "$OUT/bench.log"; }

for b in gpu-benches ten_us; do
  [ -f "$CARRY/bin/$b.gz" ] || { echo "missing $CARRY/bin/$b.gz: run 'scripts/h100/bench.sh --prepare' on a machine with Rust first" >&2; exit 2; }
  gunzip -c "$CARRY/bin/$b.gz" > "$OUT/bin/$b" && chmod +x "$OUT/bin/$b"
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>&1 | tee "$OUT/smi.txt"

# NVRTC from carried wheels, when the machine's CUDA lacks it.
if [ -d "$CARRY/wheels" ]; then
  mkdir -p "$OUT/site"
  for w in "$CARRY"/wheels/*.whl; do python3 -m zipfile -e "$w" "$OUT/site" 2>/dev/null; done
  LD_LIBRARY_PATH="$(find "$OUT/site" -name lib -type d | tr '\n' ':')${LD_LIBRARY_PATH:-}"
  export LD_LIBRARY_PATH
fi

# The time limit of a step: its default (or the T_* override), cut to what the budget has left
# (keeping 10 s for the table). Prints 0 when the step should be skipped.
limit() { # default override
  local want=${2:-$1} left=$(( BUDGET - 10 - SECONDS ))
  [ "$left" -lt 5 ] && { echo 0; return; }
  [ "$want" -gt "$left" ] && want=$left
  echo "$want"
}
orig_limit() { local v="T_ORIG_$1"; limit "$2" "${!v:-${T_ORIG:-}}"; }
port_limit() { local v="T_PORT_$1"; limit "$2" "${!v:-${T_PORT:-}}"; }

# 1. The originals, built with nvcc for sm_90 (their Makefiles say sm_70/80, which CUDA 13
#    dropped), all at once in the background.
SRC="$CARRY/gpu-benches-src"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA_HOME=$(dirname "$(dirname "$NVCC")")
# ORIG_BENCHES builds fewer (a run that measures only some of them).
BENCHES=${ORIG_BENCHES:-"gpu-stream gpu-cache gpu-l2-cache gpu-latency gpu-small-kernels cuda-memcpy"}
build_orig() { # dir
  local d=$1
  mkdir -p "$OUT/orig-build"
  ( cd "$SRC/$d" && timeout 150 "$NVCC" -std=c++17 -O3 -arch=sm_90 -Xcompiler -fopenmp \
      -I"$CUDA_HOME/extras/CUPTI/include" -I"$CUDA_HOME/include" -o "$OUT/orig-build/cuda-$d" main.cu \
      -L"$CUDA_HOME/lib64" -L"$CUDA_HOME/extras/CUPTI/lib64" -lcuda -lnvidia-ml -lcupti \
      -lnvperf_host -lnvperf_target ) > "$OUT/build-$d.log" 2>&1 \
    || echo "build of original $d failed (see build-$d.log)" >> "$OUT/bench.log"
}
builds=()
if [ -d "$SRC" ] && [ -x "$NVCC" ]; then
  log "building the originals with $NVCC (in the background)"
  for d in $BENCHES; do build_orig "$d" & builds+=($!); done
else
  log "no originals: $SRC or nvcc ($NVCC) missing; port only"
fi

# BACKEND=cpu runs the port's smoke test instead (for checking this script without a GPU).
export ROCM_BENCH_BACKEND=${BACKEND:-nvidia}
run_port() { # bench name-for-limits default
  local b=$1 t
  t=$(port_limit "$2" "$3")
  if [ "$t" -eq 0 ]; then log "port $b skipped: budget spent"; return; fi
  log "port $b (limit ${t}s)"
  ROCM_BENCH_EVENTS="$OUT/events.jsonl" timeout "$t" "$OUT/bin/gpu-benches" "$b" > "$OUT/port-$b.txt" 2>&1
  local rc=$?; [ $rc -eq 124 ] && log "port $b cut off at ${t}s"
}
run_orig() { # bench name-for-limits default
  local b=$1 t exe="$OUT/orig-build/cuda-$1"
  [ -x "$exe" ] || { log "original $b: not built"; return; }
  t=$(orig_limit "$2" "$3")
  if [ "$t" -eq 0 ]; then log "original $b skipped: budget spent"; return; fi
  log "original $b (limit ${t}s)"
  ( cd "$SRC/$b" && timeout "$t" "$exe" ) > "$OUT/orig-$b.txt" 2>&1
  local rc=$?; [ $rc -eq 124 ] && log "original $b cut off at ${t}s"
}

# While the originals compile: the port's gpu-cache (its whole sweep is about 70 s of kernels).
run_port gpu-cache cache 120
[ ${#builds[@]} -gt 0 ] && { log "waiting for the originals' builds"; wait "${builds[@]}"; log "built"; }

# 2. Side by side, the headline figures first.
run_orig gpu-cache cache 100
run_orig gpu-l2-cache l2 60
run_port gpu-l2-cache l2 60
run_orig cuda-memcpy memcpy 20
run_port cuda-memcpy memcpy 25

# 3. The ~10 µs kernel: our timings, then ncu (boost clock, warm L2: comparable with events).
t=$(limit 30)
if [ "$t" -gt 0 ]; then
  log "ten_us (limit ${t}s)"
  # shellcheck disable=SC2086
  timeout "$t" "$OUT/bin/ten_us" ${TEN_US_ARGS:-} > "$OUT/ten_us.txt" 2>&1
else
  log "ten_us skipped: budget spent"
fi
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
if [ -x "$NCU" ]; then
  t=$(limit 40)
  if [ "$t" -gt 0 ]; then
    log "ncu --clock-control none --cache-control none (limit ${t}s)"
    timeout "$t" "$NCU" --clock-control none --cache-control none --metrics gpu__time_duration.sum \
      --launch-count 20 --csv "$OUT/bin/ten_us" ${TEN_US_ARGS:-} --launches 20 > "$OUT/ten_us-ncu.csv" 2>&1
  else
    log "ncu skipped: budget spent"
  fi
else
  log "no ncu ($NCU): the timing check has no reference"
fi

run_orig gpu-stream stream 30
run_port gpu-stream stream 35
run_orig gpu-small-kernels small 20
run_port gpu-small-kernels small 25
run_orig gpu-latency latency 25
run_port gpu-latency latency 25

# ncu's defaults (base clock, caches flushed), for reference, if time is left.
if [ -x "$NCU" ]; then
  t=$(limit 30)
  if [ "$t" -gt 0 ]; then
    log "ncu with its default clock and cache control, for reference (limit ${t}s)"
    # shellcheck disable=SC2086
    timeout "$t" "$NCU" --metrics gpu__time_duration.sum --launch-count 20 --csv "$OUT/bin/ten_us" \
      ${TEN_US_ARGS:-} --launches 20 > "$OUT/ten_us-ncu-base.csv" 2>&1
  else
    log "ncu with its defaults skipped: budget spent"
  fi
fi

# Binaries do not need to come back.
rm -rf "$OUT/orig-build" "$OUT/bin" "$OUT/site"
log "done: $OUT"
echo
python3 "$here/scripts/h100/bench_table.py" "$OUT"
