#!/usr/bin/env bash
# Issue 18 on the H100 box: the `llm` template's crate (examples/llm, the rendered template) on
# nvidia, one run, results into $OUT (run from the repository root):
#   1. every check on nvidia (`--require-backend nvidia`: a missing GPU fails), with the
#      bandwidth checks' GB/s against a device-to-device copy of as many bytes;
#   2. the benches: each kernel's GB/s or TFLOP/s, the tiled matmul next to cuBLAS SGEMM at
#      2048^3 and 4096^3, the FlashAttention kernels next to an unfused cuBLAS attention;
#   3. a table of it all ($OUT/table.txt).
#
# Build on the dev machine (no GPU needed):
#   scripts/h100/llm.sh build            # release binaries, stripped, into .carry/h100/llm
# On the H100 box (no Rust there):
#   OUT=/some/dir scripts/h100/llm.sh
# cuBLAS comes from the machine's CUDA 13.0 (/usr/local/cuda/lib64/libcublas.so.13): the pinned
# wheel (nvidia-cublas 13.0.2.14) is 421 MB, too large to carry. NVRTC (the kernels' CUDA source
# is compiled at load time: no nvcc on the dev machine) comes from the same place.
# Budget: about 5 minutes (each step is cut off by `timeout`).
set -uo pipefail
CARRY=${CARRY:-.carry/h100/llm}

if [ "${1:-}" = "build" ] || [ "${1:-}" = "--prepare" ]; then
  set -e
  mkdir -p "$CARRY"
  exe_of() { # cargo args...: the executables cargo built
    cargo "$@" --message-format=json 2>/dev/null | python3 -c 'import sys,json
for l in sys.stdin:
  m=json.loads(l)
  if m.get("reason")=="compiler-artifact" and m.get("executable"): print(m["executable"])'
  }
  # Kernels for sm_90: with nvcc here, cubins; without, CUDA source for NVRTC on the box.
  # The nvidia backend is built only when asked for (or when nvcc is here); amd is not needed there.
  export ROCM_NVIDIA_ARCH=sm_90 ROCM_BACKENDS=cpu,nvidia
  cp "$(exe_of test --release -p llm-kernels --test kernels --no-run)" "$CARRY/kernels-test"
  cp "$(exe_of bench -p llm-kernels --bench kernels --no-run)" "$CARRY/kernels-bench"
  strip "$CARRY/kernels-test" "$CARRY/kernels-bench"
  du -sh "$CARRY"
  exit 0
fi

OUT=${OUT:-./h100-out}
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/llm.log"; }
for f in kernels-test kernels-bench; do
  [ -x "$CARRY/$f" ] || { echo "no $CARRY/$f: run scripts/h100/llm.sh build on the dev machine" >&2; exit 2; }
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$OUT/smi.txt"
# NVRTC and cuBLAS from the machine's CUDA.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
ls /usr/local/cuda/lib64/libcublas.so* 2>/dev/null | tee "$OUT/cublas.txt"

# 1. Every check on nvidia; the bandwidth checks at 2^26 floats (256 MiB a buffer).
log "checks on nvidia"
LLM_BANDWIDTH_N=$((1 << 26)) timeout 150 "$CARRY/kernels-test" --backend nvidia --require-backend nvidia \
  --events "$OUT/test-events.jsonl" > "$OUT/test.txt" 2>&1
echo "exit $?" >> "$OUT/test.txt"
tail -3 "$OUT/test.txt"

# 2. The benches, recorded as rocm-bench events (samples in ns per launch, work per launch).
log "benches on nvidia"
ROCM_BENCH_BACKEND=nvidia ROCM_BENCH_EVENTS="$OUT/bench-events.jsonl" ROCM_BENCH_SAMPLES=20 \
  ROCM_BENCH_WARMUP_MS=300 ROCM_BENCH_MEASURE_MS=1500 \
  timeout 240 "$CARRY/kernels-bench" --bench > "$OUT/bench.txt" 2>&1
echo "exit $?" >> "$OUT/bench.txt"
grep -i "vendor\|largest difference\|skipping\|panicked" "$OUT/bench.txt" | tee -a "$OUT/llm.log"

# 3. The table.
python3 - "$OUT" <<'EOF' | tee "$OUT/table.txt"
import json, statistics, sys, os
out = sys.argv[1]
print("checks (nvidia):")
bw = []
try:
    for l in open(os.path.join(out, "test-events.jsonl")):
        e = json.loads(l)
        if e.get("type") == "summary":
            continue
        line = f"  {e.get('name','?'):<40} {e.get('outcome','?')}"
        b = e.get("bandwidth")
        if b:
            bw.append((e["name"], b))
        print(line)
except FileNotFoundError:
    print("  no test events")
if bw:
    print("\nbandwidth checks (kernel vs device-to-device copy of as many bytes):")
    for name, b in bw:
        print(f"  {name:<40} {json.dumps(b)}")
print("\nbenches (median of the samples):")
rows = {}
try:
    for l in open(os.path.join(out, "bench-events.jsonl")):
        e = json.loads(l)
        if e.get("kind") != "result":
            continue
        r = e
        ns = statistics.median(r["samples"])
        kind, amount = (r.get("throughput") or [None, 0])
        rate = amount / ns if ns else 0  # per ns = G per s
        unit = "GB/s" if kind == "bytes" else "TFLOP/s"
        value = rate if kind == "bytes" else rate / 1e3
        rows[r["id"]] = (ns, value, unit)
        print(f"  {r['id']:<58} {ns/1e3:>10.1f} us {value:>9.2f} {unit}")
except FileNotFoundError:
    print("  no bench events")
print("\nthe template's kernels against cuBLAS at the same shapes:")
for mine, theirs in [("matmul", "sgemm_vendor"), ("flash_attention", "attention_vendor")]:
    for id_, (ns, v, u) in rows.items():
        if f"{mine}/" in id_:
            other = id_.replace(f"{mine}/", f"{theirs}/")
            if other in rows:
                print(f"  {id_:<50} {v:8.2f} {u}  vs {theirs}: {rows[other][1]:8.2f} {u}  ({100*v/rows[other][1]:.0f}%)")
EOF
log "done: $OUT"
