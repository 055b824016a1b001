#!/usr/bin/env bash
# The cpu backend against ROCm's HIP-CPU on the four benchmark kernels, run alternately so that
# both see the same machine, and summarised as medians (a shared machine's speed drifts by tens
# of percent between minutes; alternating and taking medians keeps the comparison fair).
#
#   rocm-kernels/benches/hip-cpu/compare.sh /path/to/HIP-CPU [ROUNDS] [THREADS]
#
# ROUNDS (default 5) rounds of: the cpu backend in region form (CpuExec::Regions, the default),
# unchecked and checked (guard pages, exact fault reports: what `cargo rocm test` runs), in
# CpuExec::Blocks, then HIP-CPU; each run is itself best of 5 (see cpu_backend.rs and
# driver.cpp). THREADS (default 1) limits both sides' worker threads (BENCH_THREADS).
# With THREADS=1 every run is pinned to one CPU (PIN, default 0; PIN=none to leave placement to
# the scheduler): on the 2-vCPU VM this was measured on, a worker thread placed on the other vCPU
# than the launching thread ran memory-bound kernels up to 2x slower in some processes and not in
# others, while the Rust loop (on the launching thread) was unaffected.
# Prints, per kernel, median wall and CPU milliseconds and HIP-CPU's CPU time over ours.
set -euo pipefail
if [ $# -lt 1 ] || [ ! -f "$1/include/hip/hip_runtime.h" ]; then
  echo "usage: $0 <path to a HIP-CPU checkout> [rounds] [threads]" >&2
  exit 2
fi
hipcpu="$1"
rounds="${2:-5}"
export BENCH_THREADS="${3:-1}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

echo "building the cpu backend bench and the HIP-CPU driver..." >&2
bench="$(cd "$root" && cargo bench -p rocm-kernels --bench cpu_backend --no-run --message-format json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    try: m = json.loads(l)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "cpu_backend": print(m["executable"])' | tail -1)"
"${CXX:-g++}" -std=c++17 -O3 -DNDEBUG -I "$hipcpu/include" "$here/driver.cpp" -o "$out/hip-cpu" -ltbb -pthread

pin=()
if [ "$BENCH_THREADS" = 1 ] && [ "${PIN:-0}" != none ] && command -v taskset >/dev/null; then
  pin=(taskset -c "${PIN:-0}")
  echo "pinned to CPU ${PIN:-0} (PIN=none to unpin)" >&2
fi

# One line per kernel and run: side kernel wall cpu
for r in $(seq "$rounds"); do
  echo "round $r of $rounds" >&2
  # Kernel lines end: wall cpu checked-wall checked-cpu ratio.
  ROCM_CPU_EXEC=regions "${pin[@]}" "$bench" --bench | awk '/^\((a|b|c|d)\)/ {k = substr($1,2,1); print "regions", k, $(NF-4), $(NF-3); print "checked", k, $(NF-2), $(NF-1)} /plain Rust loop/ {print "rust", "a", $(NF-1), $NF}' >> "$out/runs"
  ROCM_CPU_EXEC=blocks "${pin[@]}" "$bench" --bench | awk '/^\((a|b|c|d)\)/ {print "blocks", substr($1,2,1), $(NF-4), $(NF-3)}' >> "$out/runs"
  "${pin[@]}" "$out/hip-cpu" | awk '/^\((a|b|c|d)\)/ {print "hip-cpu", substr($1,2,1), $(NF-1), $NF}' >> "$out/runs"
done

median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
names=("(a) saxpy, 16M floats" "(b) block reduction, 16M floats, 256/block" "(c) warp-shuffle reduction, 16M floats" "(d) tiled transpose 4096x4096")
echo
echo "BENCH_THREADS=$BENCH_THREADS${pin[*]:+, ${pin[*]}}, median of $rounds rounds (each best of 5), ms"
printf '%-44s %10s %10s %10s %10s %10s %10s %10s %10s %9s %9s %9s\n' kernel "regions" "cpu" "checked" "cpu" "blocks" "cpu" "HIP-CPU" "cpu" "chk/reg" "x checked" "x blocks"
i=0
for k in a b c d; do
  m() { awk -v s="$1" -v k="$k" -v c="$2" '$1==s && $2==k {print $c}' "$out/runs" | median; }
  rw=$(m regions 3); rc=$(m regions 4); cw=$(m checked 3); cc=$(m checked 4)
  bw=$(m blocks 3); bc=$(m blocks 4); hw=$(m hip-cpu 3); hc=$(m hip-cpu 4)
  printf '%-44s %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %8.2fx %8.1fx %8.1fx\n' "${names[$i]}" "$rw" "$rc" "$cw" "$cc" "$bw" "$bc" "$hw" "$hc" \
    "$(awk -v a="$cc" -v b="$rc" 'BEGIN {print a / b}')" "$(awk -v a="$hc" -v b="$cc" 'BEGIN {print a / b}')" "$(awk -v a="$hc" -v b="$bc" 'BEGIN {print a / b}')"
  i=$((i + 1))
done
printf '%-44s %10.2f %10.2f\n' "    plain Rust loop, 1 thread (saxpy)" "$(awk '$1=="rust" {print $3}' "$out/runs" | median)" "$(awk '$1=="rust" {print $4}' "$out/runs" | median)"
