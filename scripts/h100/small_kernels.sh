#!/usr/bin/env bash
# gpu-small-kernels, the CUDA original against this repository's port, alternated ROUNDS times
# (the 64 kB point is launch-bound and its rate moves by ±10% from run to run on one machine),
# each run cut off after T seconds (the first rows are the launch-bound ones). Run on the GPU
# machine from the repository root, with .carry/h100/bench prepared (`scripts/h100/bench.sh
# --prepare`) and carried. Extra port binaries to compare (gzipped, in .carry/h100/bench/bin/,
# e.g. a build of an older launch path) are named by EXTRA="name1 name2".
#
#   OUT=$OUT ROUNDS=2 T=12 scripts/h100/small_kernels.sh
#
# Writes $OUT/small-<who>-<round>.txt and prints each run's 64 kB row (GB/s by block size
# 32..1024) and the best of them, then each side's median of the bests.
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
CARRY=${CARRY:-$here/.carry/h100/bench}
OUT=${OUT:-$PWD/h100-small}
ROUNDS=${ROUNDS:-2}
T=${T:-12}
mkdir -p "$OUT/bin"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA_HOME=$(dirname "$(dirname "$NVCC")")
( cd "$CARRY/gpu-benches-src/gpu-small-kernels" && "$NVCC" -std=c++17 -O3 -arch=sm_90 -Xcompiler -fopenmp \
    -I"$CUDA_HOME/include" -o "$OUT/bin/original" main.cu -L"$CUDA_HOME/lib64" -lcuda -lnvidia-ml ) \
  > "$OUT/build-original.log" 2>&1 || { echo "the original did not build: $OUT/build-original.log" >&2; exit 1; }
for b in gpu-benches ${EXTRA:-}; do
  gunzip -c "$CARRY/bin/$b.gz" > "$OUT/bin/$b" && chmod +x "$OUT/bin/$b"
done
export ROCM_BENCH_BACKEND=${BACKEND:-nvidia}
for r in $(seq 1 "$ROUNDS"); do
  for who in original gpu-benches ${EXTRA:-}; do
    if [ "$who" = original ]; then
      ( cd "$CARRY/gpu-benches-src/gpu-small-kernels" && timeout "$T" "$OUT/bin/original" ) > "$OUT/small-$who-$r.txt" 2>&1
    else
      timeout "$T" "$OUT/bin/$who" small-kernels > "$OUT/small-$who-$r.txt" 2>&1
    fi
  done
done
rm -rf "$OUT/bin"
python3 - "$here/scripts/h100" "$OUT" "$ROUNDS" original gpu-benches ${EXTRA:-} <<'EOF'
import statistics, sys
sys.path.insert(0, sys.argv[1])
from bench_table import small_kernels_row  # the table's own parser of these rows
out, rounds, names = sys.argv[2], int(sys.argv[3]), sys.argv[4:]
for who in names:
    bests = []
    for r in range(1, rounds + 1):
        try:
            v = small_kernels_row(open(f"{out}/small-{who}-{r}.txt").read())
        except OSError:
            continue
        if v:
            bests.append(max(v))
            print(f"{who:<24} round {r}: 64 kB row {v}  best {max(v):.0f} GB/s")
    if bests:
        print(f"{who:<24} median of the bests: {statistics.median(bests):.1f} GB/s")
EOF
