#!/usr/bin/env bash
# Issue 15 on the H100 box, one run, results into $OUT (run from the repository root):
#   - the CUDA originals of gpu-benches, built here with nvcc from the carried checkout, and
#     this repository's suite (prebuilt), side by side;
#   - a ~10 µs kernel: Nsight Compute's gpu__time_duration against our event timing, and
#     host-timed synchronous launches of the same kernel.
#
# Prepare on the dev machine (no GPU needed; see scripts/h100/README.md):
#   scripts/h100/bench.sh --prepare CARRY      # builds and copies everything into CARRY (ignored)
# On the H100 box:
#   OUT=/some/dir CARRY=CARRY scripts/h100/bench.sh
# Budget: about 8 minutes of device time (each step is cut off by `timeout`).
set -uo pipefail
CARRY=${CARRY:-h100-carry}
OUT=${OUT:-./h100-out}

if [ "${1:-}" = "--prepare" ]; then
  CARRY=${2:-h100-carry}
  set -e
  mkdir -p "$CARRY/bin"
  # The suite and the fixture's 10 µs kernel, built for sm_90. Without nvcc here the nvidia
  # backend embeds the CUDA source and NVRTC compiles it on the GPU machine (the carried NVRTC
  # wheel, or the machine's CUDA 13.0).
  ROCM_NVIDIA_ARCH=sm_90 cargo bench -p gpu-benches --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import sys,json
for l in sys.stdin:
  m=json.loads(l)
  if m.get("reason")=="compiler-artifact" and m.get("executable") and "bench" in m["target"]["kind"]: print(m["executable"])' \
    | while read -r exe; do cp "$exe" "$CARRY/bin/gpu-benches"; done
  cargo build --release -p gpu-benches --example ten_us
  cp "${CARGO_TARGET_DIR:-target}/release/examples/ten_us" "$CARRY/bin/"
  cargo build --release -p cargo-rocm
  cp "${CARGO_TARGET_DIR:-target}/release/cargo-rocm" "$CARRY/bin/"
  # The originals' sources (fetched outside the repository: git clone of te42kyfo/gpu-benches).
  if [ -n "${GPU_BENCHES_SRC:-}" ]; then cp -r "$GPU_BENCHES_SRC" "$CARRY/gpu-benches-src"; fi
  # NVRTC for the suite, pinned to the driver's CUDA release (13.0 for the 580 driver).
  pip download --no-deps -d "$CARRY/wheels" "nvidia-cuda-nvrtc==13.0.*" "nvidia-cuda-cupti==13.0.*" >/dev/null
  echo "prepared $CARRY"
  exit 0
fi

mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/bench.log"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$OUT/smi.txt"

# NVRTC and CUPTI from the carried wheels, when the machine's CUDA lacks them.
if [ -d "$CARRY/wheels" ]; then
  mkdir -p "$CARRY/site"
  for w in "$CARRY"/wheels/*.whl; do python3 -m zipfile -e "$w" "$CARRY/site" 2>/dev/null; done
  export LD_LIBRARY_PATH="$(find "$CARRY/site" -name 'lib' -type d | tr '\n' ':')${LD_LIBRARY_PATH:-}"
fi

# 1. The originals, built with nvcc for sm_90 (the Makefiles say sm_70/80, which CUDA 13 dropped).
SRC="$CARRY/gpu-benches-src"
NVCC=${NVCC:-nvcc}
CUDA_HOME=$(dirname "$(dirname "$(command -v "$NVCC")")")
build_orig() { # dir
  local d=$1
  ( cd "$SRC/$d" && "$NVCC" -std=c++17 -O3 -arch=sm_90 -Xcompiler -fopenmp \
      -I"$CUDA_HOME/extras/CUPTI/include" -I"$CUDA_HOME/include" -o "cuda-$d" main.cu \
      -L"$CUDA_HOME/lib64" -L"$CUDA_HOME/extras/CUPTI/lib64" -lcuda -lnvidia-ml -lcupti \
      -lnvperf_host -lnvperf_target ) > "$OUT/build-$d.log" 2>&1 || log "build of original $d failed (see build-$d.log)"
}
for d in gpu-stream gpu-cache gpu-l2-cache gpu-latency gpu-small-kernels cuda-memcpy; do
  [ -d "$SRC/$d" ] && build_orig "$d"
done
for d in gpu-stream gpu-cache gpu-l2-cache gpu-latency gpu-small-kernels cuda-memcpy; do
  if [ -x "$SRC/$d/cuda-$d" ]; then
    log "original $d"
    ( cd "$SRC/$d" && timeout 90 "./cuda-$d" ) > "$OUT/orig-$d.txt" 2>&1
  fi
done

# 2. Our suite, same benchmarks, recorded in a history and drawn.
export ROCM_BENCH_BACKEND=nvidia
for b in gpu-stream gpu-cache gpu-l2-cache gpu-latency gpu-small-kernels cuda-memcpy; do
  log "port $b"
  ROCM_BENCH_EVENTS="$OUT/events.jsonl" timeout 90 "$CARRY/bin/gpu-benches" --bench "$b" > "$OUT/port-$b.txt" 2>&1
done

# 3. A ~10 µs kernel: event timing, host timing of synchronous launches, and ncu's duration.
log "ten_us"
timeout 60 "$CARRY/bin/ten_us" > "$OUT/ten_us.txt" 2>&1
if command -v ncu >/dev/null; then
  timeout 120 ncu --metrics gpu__time_duration.sum --launch-count 20 --csv "$CARRY/bin/ten_us" --launches 20 \
    > "$OUT/ten_us-ncu.csv" 2>&1
fi
log "done: $OUT"
