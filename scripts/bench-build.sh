#!/usr/bin/env bash
# Benchmark of rocm_kernels_build::Build on a generated crate of 20 HIP kernels built for 2 targets.
#
# Prints a table of:
#   * cold build: the build script with an empty cache, against `make -j$JOBS` running the very
#     same compiler commands (the builder's own time, from its log, and cargo's wall time);
#   * no-op rebuild: `cargo build` with nothing changed (cargo does not run the script), and the
#     build script rerun with every object cached (a source touched, content unchanged);
#   * header edit: one header included by 5 of the 20 kernels changed; how many were recompiled.
#
# Usage: scripts/bench-build.sh [--compiler clang++-19|hipcc|PATH] [--runs N] [--jobs N]
# (BENCH_KEEP=1 keeps the generated crate; BENCH_TARGET_DIR sets its cargo target dir.)
# Needs: cargo, make, and a ROCm HIP compiler (Debian: clang-19 + rocm-device-libs, or hipcc).
set -euo pipefail

COMPILER=clang++-19
RUNS=3
JOBS=$(nproc)
TARGETS=gfx90a,gfx1030
KERNELS=20
while [ $# -gt 0 ]; do
  case "$1" in
    --compiler) COMPILER=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

REPO=$(cd "$(dirname "$0")/.." && pwd)
command -v "$COMPILER" >/dev/null || { echo "bench-build: $COMPILER not found" >&2; exit 1; }
COMPILER_PATH=$(command -v "$COMPILER")
command -v make >/dev/null || { echo "bench-build: make not found" >&2; exit 1; }

WORK=$(mktemp -d /tmp/rk-bench-XXXXXX)
[ -n "${BENCH_KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT
CRATE=$WORK/bench_kernels
export CARGO_TARGET_DIR=${BENCH_TARGET_DIR:-$REPO/target/bench-build}
export ROCM_BACKENDS=amd ROCM_OFFLOAD_ARCH=$TARGETS ROCM_HIP_COMPILER=$COMPILER_PATH
export CARGO_TERM_COLOR=never
unset ROCM_HIPFLAGS ROCM_PATH HIP_PATH

# --- the crate -------------------------------------------------------------------------------
mkdir -p "$CRATE/src" "$CRATE/kernels" "$CRATE/include"
cat > "$CRATE/Cargo.toml" <<EOF
[package]
name = "bench_kernels"
version = "0.1.0"
edition = "2021"

[dependencies]
rocm-kernels = { path = "$REPO/rocm-kernels" }

[build-dependencies]
rocm-kernels = { path = "$REPO/rocm-kernels" }

[workspace]
EOF
cp "$REPO/Cargo.lock" "$CRATE/Cargo.lock"
cat > "$CRATE/build.rs" <<'EOF'
fn main() {
    rocm_kernels_build::Build::new()
        .files(["kernels/*.hip"])
        .include("include")
        .compile("kernels");
}
EOF
cat > "$CRATE/src/main.rs" <<'EOF'
static KERNELS: &rocm_kernels::KernelLibrary = rocm_kernels::include_kernels!("kernels");
fn main() {
    println!("{} code objects", KERNELS.code_objects.len());
}
EOF
cat > "$CRATE/include/common.h" <<'EOF'
#pragma once
#include <hip/hip_runtime.h>
__device__ inline float fma_chain(float a, float b, int n) {
    for (int i = 0; i < n; ++i) a = a * b + 1.0f;
    return a;
}
EOF
echo '#pragma once
#define SPECIAL_SCALE 2.0f' > "$CRATE/include/special.h"
for i in $(seq -w 0 $((KERNELS - 1))); do
  {
    echo '#include "common.h"'
    # Every fourth kernel includes special.h: editing it must rebuild exactly those.
    if [ $((10#$i % 4)) -eq 0 ]; then echo '#include "special.h"'; else echo '#define SPECIAL_SCALE 1.0f'; fi
    cat <<EOF
extern "C" __global__ void kernel_$i(const float* x, float* y, int n) {
    __shared__ float tile[256];
    int t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
    tile[t] = g < n ? x[g] : 0.0f;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) { if (t < s) tile[t] += tile[t + s]; __syncthreads(); }
    if (t == 0) y[blockIdx.x] = fma_chain(tile[0], SPECIAL_SCALE, $((10#$i + 4)));
}
EOF
  } > "$CRATE/kernels/k$i.hip"
done

cd "$CRATE"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "bench-build: first build (dependencies of the fixture; not timed)..." >&2
cargo build -q --offline 2>/dev/null || cargo build --offline
OUT_DIR=$(ls -dt "$CARGO_TARGET_DIR"/debug/build/bench_kernels-*/out | head -1)
LOG=$OUT_DIR/rocm-kernels/kernels.log
last_run() { awk '/^run unix_ms=/{buf=""} {buf=buf $0 "\n"} END {printf "%s", buf}' "$LOG"; }
builder_ms() { last_run | sed -n 's/.*elapsed_ms=\([0-9]*\).*/\1/p'; }
compiled_count() { last_run | grep -c '^compiled' || true; }

# --- cold build: cargo + Build vs make, interleaved so both see the same machine load --------
# The same compiler commands, from a Makefile.
MK=$WORK/make
mkdir -p "$MK"
ARCHS=$(echo "$TARGETS" | tr ',' '\n' | sed 's/^/--offload-arch=/' | tr '\n' ' ')
case "$(basename "$COMPILER_PATH")" in
  hipcc*) FLAGS="--genco $ARCHS -fhip-kernel-arg-name" ;;
  *) FLAGS="-x hip --cuda-device-only $ARCHS --rocm-path=/usr --rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode -fhip-kernel-arg-name" ;;
esac
{
  echo "all: $(for f in kernels/*.hip; do b=$(basename "$f" .hip); printf '%s ' "$MK/$b.hipfb"; done)"
  for f in kernels/*.hip; do
    b=$(basename "$f" .hip)
    printf '%s: %s\n\t%s %s -O3 -I%s -MD -MF %s -o %s %s\n' "$MK/$b.hipfb" "$f" "$COMPILER_PATH" "$FLAGS" "$CRATE/include" "$MK/$b.d" "$MK/$b.hipfb" "$f"
  done
} > "$MK/Makefile"
cold_wall=(); cold_builder=(); make_wall=()
for _ in $(seq "$RUNS"); do
  rm -rf "$OUT_DIR/rocm-kernels/kernels"
  touch kernels/k00.hip                       # makes cargo rerun the build script
  t0=$(now); cargo build -q --offline; cold_wall+=("$(elapsed "$t0")")
  [ "$(compiled_count)" -eq "$KERNELS" ] || { echo "cold run compiled $(compiled_count)" >&2; exit 1; }
  cold_builder+=("$(echo "$(builder_ms) / 1000" | bc -l)")
  rm -f "$MK"/*.hipfb "$MK"/*.d
  t0=$(now); make -s -j"$JOBS" -f "$MK/Makefile" -C "$CRATE"; make_wall+=("$(elapsed "$t0")")
done

# --- no-op rebuilds --------------------------------------------------------------------------
noop_wall=(); touch_wall=(); touch_builder=()
for _ in $(seq "$RUNS"); do
  t0=$(now); cargo build -q --offline; noop_wall+=("$(elapsed "$t0")")
  touch kernels/k05.hip
  t0=$(now); cargo build -q --offline; touch_wall+=("$(elapsed "$t0")")
  [ "$(compiled_count)" -eq 0 ] || { echo "cached run compiled $(compiled_count)" >&2; exit 1; }
  touch_builder+=("$(echo "$(builder_ms) / 1000" | bc -l)")
done

# --- header edit -----------------------------------------------------------------------------
hdr_wall=(); hdr_builder=(); hdr_count=()
for r in $(seq "$RUNS"); do
  echo "// edit $r $(now)" >> include/special.h
  t0=$(now); cargo build -q --offline; hdr_wall+=("$(elapsed "$t0")")
  hdr_builder+=("$(echo "$(builder_ms) / 1000" | bc -l)")
  hdr_count+=("$(compiled_count)")
done

med() { printf '%s\n' "$@" | median; }
fmt() { printf '%.3f' "$1"; }
all() { for v in "$@"; do printf '%.2f ' "$v"; done; }
CV=$("$COMPILER_PATH" --version 2>/dev/null | grep -i version | head -1)
echo
echo "rocm_kernels_build::Build benchmark: $KERNELS kernels x ${TARGETS//,/ + } with $COMPILER ($CV)"
echo "machine: $(nproc) cores, load average before: $LOAD_BEFORE, runs: $RUNS (median shown), jobs: $JOBS"
echo
printf '| %-58s | %9s | %s\n' "measurement" "seconds" "notes"
printf '|%s|%s|%s\n' "------------------------------------------------------------" "-----------" "------"
printf '| %-58s | %9s | %s\n' "cold: Build inside the build script (its log)" "$(fmt "$(med "${cold_builder[@]}")")" "runs: $(all "${cold_builder[@]}")"
printf '| %-58s | %9s | %s\n' "cold: cargo build (script + crate), wall" "$(fmt "$(med "${cold_wall[@]}")")" "runs: $(all "${cold_wall[@]}")"
printf '| %-58s | %9s | %s\n' "cold: make -j$JOBS of the same compiler commands, wall" "$(fmt "$(med "${make_wall[@]}")")" "runs: $(all "${make_wall[@]}")"
ratio=$(echo "$(med "${cold_builder[@]}") / $(med "${make_wall[@]}")" | bc -l)
pairs=$(for i in "${!cold_builder[@]}"; do printf '%.2fx ' "$(echo "${cold_builder[$i]} / ${make_wall[$i]}" | bc -l)"; done)
printf '| %-58s | %9s | %s\n' "cold: Build / make (medians)" "$(printf '%.2fx' "$ratio")" "goal: within 1.10x; per interleaved pair: $pairs"
printf '| %-58s | %9s | %s\n' "no-op: cargo build, nothing changed, wall" "$(fmt "$(med "${noop_wall[@]}")")" "build script not run"
printf '| %-58s | %9s | %s\n' "no-op: build script rerun, all cached (its log)" "$(fmt "$(med "${touch_builder[@]}")")" "goal: < 0.2 s; 0 compiler starts"
printf '| %-58s | %9s | %s\n' "no-op: cargo build after touching a source, wall" "$(fmt "$(med "${touch_wall[@]}")")" "script + crate relinked"
printf '| %-58s | %9s | %s\n' "header edit: Build (its log)" "$(fmt "$(med "${hdr_builder[@]}")")" "recompiled: ${hdr_count[*]} of $KERNELS (expected 5)"
printf '| %-58s | %9s | %s\n' "header edit: cargo build, wall" "$(fmt "$(med "${hdr_wall[@]}")")" ""
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
