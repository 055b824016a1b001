#!/usr/bin/env bash
# The rocm-examples kernels (issue 14) and the example crate's tuned matmul (issue 17) on an
# NVIDIA GPU machine that has no Rust.
#
#   scripts/h100/examples.sh build [CHECKOUT]   # here (Rust; no GPU or nvcc needed)
#   scripts/h100/examples.sh                    # there (NVIDIA driver, NVRTC 13; no Rust): run
#
# (scripts/h100/public-suite.sh runs every collection of the public suite, through nvcc and
# NVRTC.) `build` writes the crate of scripts/rocm-examples.sh (device code verbatim from a rocm-examples
# CHECKOUT outside this repository, default /work/scratch/rocm-examples or a pinned clone), builds
# its test harnesses in release mode with ROCM_BACKENDS=cpu,nvidia (no nvcc here: each kernel's
# CUDA source is embedded and compiled with NVRTC at load time there), the `public-suite` tool
# (its `table`), and examples/basic's unit tests (`matmul_tuned`, with the variants of
# examples/basic/tune/wisdom.json compiled in), strips and gzips them into .carry/h100/examples/
# (ignored by git; carry it with the tree).
#
# The run, from the repository root, writes to $OUT (default ./h100-examples): per harness its log
# and the trials in events.jsonl, table.md (program x kernel x place: cpu/w32, cpu/w64,
# nvidia/sm_90), and basic-matmul_tuned.log: which matmul configuration `matmul_tuned` ran on this
# GPU (the wisdom entry for it, or the declared default) and the product checked. Exit status 0
# when every trial passed.
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$here/.carry/h100/examples"

# cargo's JSON messages on stdin → "target-name executable" of every test executable
executables() {
  python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], m["executable"])'
}

build() {
  set -e
  local checkout="${1:-/work/scratch/rocm-examples}"
  [ -d "$checkout/HIP-Basic" ] || checkout=""
  rm -rf "$bin"
  mkdir -p "$bin"
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
  local work
  work="$(mktemp -d)"
  local crate
  crate="$(bash "$here/scripts/rocm-examples.sh" ${checkout:+"$checkout"} --work "$work" --prepare-only | tail -n 1)"
  export ROCM_BACKENDS=cpu,nvidia ROCM_NVIDIA_ARCH="${ROCM_NVIDIA_ARCH:-sm_90}"
  cargo test --release --no-run --manifest-path "$crate/Cargo.toml" --message-format json \
    | executables | while read -r name exe; do cp "$exe" "$bin/rex-$name"; done
  cargo test --release --no-run --manifest-path "$here/examples/basic/Cargo.toml" --lib \
    --message-format json | executables | while read -r _ exe; do cp "$exe" "$bin/basic-lib"; done
  cargo build --release --manifest-path "$here/Cargo.toml" -p public-suite
  cp "$CARGO_TARGET_DIR/release/public-suite" "$bin/public-suite"
  strip "$bin"/*
  gzip -9 -f "$bin"/*
  ls -l "$bin"
  du -sh "$bin"
}

run() {
  local out="${OUT:-$PWD/h100-examples}"
  local scratch="${EXAMPLES_SCRATCH:-/tmp/rocm-examples-h100}"
  mkdir -p "$out" "$scratch"
  ls "$bin"/*.gz > /dev/null 2>&1 || { echo "missing $bin: run 'scripts/h100/examples.sh build' on a machine with Rust first" >&2; exit 2; }
  mkdir -p "$scratch/rex"
  for f in "$bin"/*.gz; do
    local b
    b="$(basename "$f" .gz)"
    # The harnesses under their program's name (the table's first column).
    case "$b" in
      rex-public_suite_check | rex-public_suite_all) continue ;;
      rex-*) b="rex/${b#rex-}" ;;
    esac
    gunzip -c "$f" > "$scratch/$b" && chmod +x "$scratch/$b"
  done
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | sed 's/^/gpu: /'
  : > "$out/events.jsonl"
  local status=0
  for exe in "$scratch"/rex/*; do
    local name
    name="$(basename "$exe")"
    # Every trial on both backends; a missing nvidia device fails instead of skipping.
    ROCM_TEST_EVENTS="$out/events.jsonl" ROCM_TEST_BACKEND=cpu,nvidia ROCM_TEST_REQUIRE_BACKEND=nvidia \
      "$exe" --test-threads 1 > "$out/$name.log" 2>&1 || { status=1; tail -n 30 "$out/$name.log"; }
  done
  "$scratch/public-suite" table "$out/events.jsonl" | tee "$out/table.md" || status=1
  echo "==> examples/basic: matmul_tuned on this GPU (tune/wisdom.json)"
  "$scratch/basic-lib" matmul_tuned --nocapture --test-threads 1 > "$out/basic-matmul_tuned.log" 2>&1 || status=1
  grep -E "matmul_tuned on|test result" "$out/basic-matmul_tuned.log"
  return $status
}

case "${1:-run}" in
  build | --prepare) shift; build "$@" ;;
  run) run ;;
  *) echo "usage: $0 [build [CHECKOUT]|run]" >&2; exit 2 ;;
esac
