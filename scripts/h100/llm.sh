#!/usr/bin/env bash
# Issue 18 on the H100 (or H200) box: the `llm` template's crate (examples/llm, the rendered
# template) on nvidia, one run, results into $OUT (run from the repository root):
#   0. the stream bandwidth of this GPU: gpu-benches' gpu-stream port, the best triad over block
#      sizes (STREAM_GBS=... instead skips it);
#   1. every check on nvidia (`--require-backend nvidia`: a missing GPU fails), f32, f16 and bf16,
#      with the bandwidth checks' GB/s against a device-to-device copy of as many bytes;
#   2. the benches: each kernel's GB/s or TFLOP/s in f32, f16 and bf16, the tiled matmul next to
#      cuBLAS SGEMM at 2048^3 and 4096^3, the f32 FlashAttention kernels next to an unfused cuBLAS
#      attention;
#   3. a table of it all ($OUT/table.txt): the memory-bound kernels' GB/s in each type and their
#      share of the stream triad; the decode path (issue 28): the paged decode attention's GB/s on
#      the K and V it reads against the triad (goal >= 80%), the sampler's time against a
#      torch.topk-based one (scripts/h100/sampler_torch.py, where torch is there; goal <= 2x).
# PARTS=decode runs only the decode path's checks and benches (about 2 minutes), and the table;
# PARTS=rope the RoPE ones (rope, rope_kv_append), PARTS=decode,rope both; PARTS=matmul the tiled matmul's checks and its bench beside
# cuBLAS SGEMM (about a minute). LLM_DECODE_PARTITIONS=auto,
# 256,512 benches the split decode kernel at those partition sizes (default: auto, the size
# decode::split_partition picks for this GPU, and 512).
#
# Build on the dev machine (no GPU needed):
#   scripts/h100/llm.sh build            # release binaries, stripped, into .carry/h100/llm
# On the H100 box (no Rust there):
#   OUT=/some/dir scripts/h100/llm.sh
# cuBLAS comes from the machine's CUDA 13.0 (/usr/local/cuda/lib64/libcublas.so.13): the pinned
# wheel (nvidia-cublas 13.0.2.14) is 421 MB, too large to carry. NVRTC (the kernels' CUDA source
# is compiled at load time: no nvcc on the dev machine) comes from the same place.
# Budget: about 7 minutes, at most 9.5 (each step is cut off by `timeout`: 60 + 200 + 300 + 60 s);
# PARTS=decode: at most 60 + 100 + 150 + 60 s.
# The whole run's limits and bench times: TEST_LIMIT (s, default 200), BENCH_LIMIT (s, default
# 300), BENCH_SAMPLES (20), BENCH_WARMUP_MS (300), BENCH_MEASURE_MS (1500); the attention benches
# run at 1024-8192 (LLM_BENCH_ATTENTION_SEQS picks others).
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
  # The stream bandwidth to compare with: gpu-benches' bench binary (gpu-stream).
  cp "$(exe_of bench -p gpu-benches --bench gpu-benches --no-run)" "$CARRY/gpu-benches"
  strip "$CARRY/kernels-test" "$CARRY/kernels-bench" "$CARRY/gpu-benches"
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

# 0. The stream triad of this GPU (the goal: memory-bound kernels at >= 80% of it).
if [ -z "${STREAM_GBS:-}" ] && [ -x "$CARRY/gpu-benches" ]; then
  log "gpu-stream on nvidia"
  ROCM_BENCH_BACKEND=nvidia timeout 60 "$CARRY/gpu-benches" gpu-stream > "$OUT/stream.txt" 2>&1
  echo "exit $?" >> "$OUT/stream.txt"
fi

PARTS=${PARTS:-all}
# 1. Every check on nvidia; the bandwidth checks at 2^26 elements (256 MiB a buffer of f32).
log "checks on nvidia ($PARTS)"
# PARTS=decode, rope or decode,rope: those checks only (filters paged_decode and sample, rope),
# one events file.
FILTERS=""; BENCH_FILTER=""
case ",$PARTS," in *,decode,*) FILTERS="paged_decode sample"; BENCH_FILTER="paged_decode|sampler";; esac
case ",$PARTS," in *,rope,*) FILTERS="$FILTERS rope"; BENCH_FILTER="${BENCH_FILTER:+$BENCH_FILTER|}rope";; esac
case ",$PARTS," in *,matmul,*) FILTERS="$FILTERS matmul"; BENCH_FILTER="${BENCH_FILTER:+$BENCH_FILTER|}matmul|sgemm_vendor";; esac
if [ -n "$FILTERS" ]; then
  : > "$OUT/test-events.jsonl"; : > "$OUT/test.txt"
  for f in $FILTERS; do
    timeout 50 "$CARRY/kernels-test" --backend nvidia --require-backend nvidia \
      --events "$OUT/test-events-$f.jsonl" "$f" >> "$OUT/test.txt" 2>&1
    echo "exit $? ($f)" >> "$OUT/test.txt"
    cat "$OUT/test-events-$f.jsonl" >> "$OUT/test-events.jsonl" 2>/dev/null
  done
else
  LLM_BANDWIDTH_N=$((1 << 26)) timeout "${TEST_LIMIT:-200}" "$CARRY/kernels-test" --backend nvidia --require-backend nvidia \
    --events "$OUT/test-events.jsonl" > "$OUT/test.txt" 2>&1
  echo "exit $?" >> "$OUT/test.txt"
fi
tail -3 "$OUT/test.txt"

# 2. The benches, recorded as rocm-bench events (samples in ns per launch, work per launch).
log "benches on nvidia ($PARTS)"
if [ -n "$FILTERS" ]; then
  BENCH_LIMIT=150
else
  BENCH_LIMIT=${BENCH_LIMIT:-300}
fi
ROCM_BENCH_BACKEND=nvidia ROCM_BENCH_EVENTS="$OUT/bench-events.jsonl" ROCM_BENCH_SAMPLES=${BENCH_SAMPLES:-20} \
  ROCM_BENCH_WARMUP_MS=${BENCH_WARMUP_MS:-300} ROCM_BENCH_MEASURE_MS=${BENCH_MEASURE_MS:-1500} \
  timeout $BENCH_LIMIT "$CARRY/kernels-bench" --bench $BENCH_FILTER > "$OUT/bench.txt" 2>&1
echo "exit $?" >> "$OUT/bench.txt"
grep -i "vendor\|largest difference\|skipping\|panicked" "$OUT/bench.txt" | tee -a "$OUT/llm.log"

# 2b. The sampler's baseline: a torch.topk-based sampler at the bench's shapes, if torch is here.
log "torch.topk sampler baseline"
timeout 60 python3 scripts/h100/sampler_torch.py > "$OUT/sampler-torch.json" 2> "$OUT/sampler-torch.err" \
  || echo "{\"error\": \"sampler_torch.py failed: $(tail -1 "$OUT/sampler-torch.err" | tr -d '"')\"}" > "$OUT/sampler-torch.json"
cat "$OUT/sampler-torch.json" | tee -a "$OUT/llm.log"

# 3. The table.
python3 - "$OUT" "${STREAM_GBS:-}" <<'EOF' | tee "$OUT/table.txt"
import json, re, statistics, sys, os
out = sys.argv[1]
# The stream triad: given, or the best of gpu-stream's block sizes (its 4th GB/s column).
triad = float(sys.argv[2]) if sys.argv[2] else None
if triad is None:
    try:
        for l in open(os.path.join(out, "stream.txt")):
            if "GB/s:" in l:
                cols = l.split("GB/s:")[1].split()
                if len(cols) >= 4:
                    triad = max(triad or 0.0, float(cols[3]))
    except (FileNotFoundError, ValueError):
        pass
print(f"stream triad: {triad:.0f} GB/s" if triad else "stream triad: not measured (STREAM_GBS=... to give it)")
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
# The memory-bound kernels side by side in each element type, as a share of the stream triad.
types = ["f32", "f16", "bf16"]
by_kernel = {}
for id_, (ns, v, u) in rows.items():
    group, rest = id_.split("/", 1)
    m = re.match(r"(.*?)(_f16|_bf16)?$", group)
    base, t = m.group(1), (m.group(2) or "_f32")[1:]
    shape = rest.split("/")[-1]
    by_kernel.setdefault((base, shape, u), {})[t] = v
share = lambda v: f" ({100 * v / triad:3.0f}%)" if triad else ""
print("\nmemory-bound kernels, GB/s" + (f" (share of the {triad:.0f} GB/s triad)" if triad else "") + ":")
print(f"  {'kernel':<16} {'shape':<14}" + "".join(f"{t:>17}" for t in types))
for (base, shape, u), vs in sorted(by_kernel.items()):
    if u != "GB/s":
        continue
    cells = "".join(f"{(f'{vs[t]:.0f}' + share(vs[t])) if t in vs else '-':>17}" for t in types)
    print(f"  {base:<16} {shape:<14}{cells}")
print("\nattention, TFLOP/s:")
for (base, shape, u), vs in sorted(by_kernel.items()):
    if base == "flash_attention":
        print(f"  {base:<16} {shape:<22}" + "".join(f"{t} {vs[t]:6.2f}  " for t in types if t in vs))
print("\nthe template's kernels against cuBLAS at the same shapes:")
pairs = [("matmul", "sgemm_vendor")] + [(f"flash_attention{t}", f"attention_vendor{t}") for t in ("", "_f16", "_bf16")]
for mine, theirs in pairs:
    for id_, (ns, v, u) in rows.items():
        if f"{mine}/" in id_:
            other = id_.replace(f"{mine}/", f"{theirs}/")
            if other in rows:
                print(f"  {id_:<50} {v:8.2f} {u}  vs {theirs}: {rows[other][1]:8.2f} {u}  ({100*v/rows[other][1]:.0f}%)")
# The decode path (issue 28): the paged decode attention on the K and V bytes it reads, against the
# triad (goal >= 80%), and the sampler against a torch.topk-based one (goal: within 2x).
print("\ndecode path: paged decode attention, GB/s of K and V read" + (f" (share of the {triad:.0f} GB/s triad; goal >= 80%)" if triad else "") + ":")
for id_, (ns, v, u) in sorted(rows.items()):
    if id_.split("/", 1)[0].startswith("paged_decode"):
        print(f"  {id_:<58} {ns/1e3:>10.1f} us {v:>9.0f} GB/s{share(v)}")
torch = {}
try:
    t = json.load(open(os.path.join(out, "sampler-torch.json")))
    if "error" in t:
        print(f"\nsampler: no torch baseline ({t['error']})")
    else:
        print(f"\nsampler vs torch.topk-based sampler (torch {t.get('torch')}, {t.get('device')}; goal: within 2x):")
        for r in t["results"]:
            torch[f"b{r['batch']}_v{r['vocab']}_k{r['top_k']}"] = r["us"]
except (FileNotFoundError, ValueError) as e:
    print(f"\nsampler: no torch baseline ({e})")
for id_, (ns, v, u) in sorted(rows.items()):
    if id_.startswith("sampler/"):
        shape = id_.split("/")[-1]
        mine = ns / 1e3
        if shape in torch:
            print(f"  {id_:<40} {mine:>9.1f} us  torch {torch[shape]:>9.1f} us  ({mine / torch[shape]:.2f}x the torch time)")
        else:
            print(f"  {id_:<40} {mine:>9.1f} us  ({v:.0f} GB/s of logits)")
EOF
log "done: $OUT"
