#!/usr/bin/env bash
# The public suite (scripts/public-suite.sh, docs/public-suite.md) on an NVIDIA GPU machine that
# has no Rust, through both of the nvidia backend's compile paths.
#
#   scripts/h100/public-suite.sh build [public-suite.sh options]   # here (Rust, pip nvcc; no GPU)
#   scripts/h100/public-suite.sh                                   # there (driver, NVRTC 13): run
#
# `build` writes the suite's crate (public-suite.sh --prepare-only with the options given: by
# default every collection, checkouts cloned at their pins) and builds, in release mode with
# ROCM_BACKENDS=cpu,nvidia and ROCM_NVIDIA_ARCH=sm_90, its harness of every program
# (`public_suite_all`, which picks the program by the name it runs under), one per collection,
# twice:
#   COLLECTION-nvcc    with nvcc ($NVCC_BIN, default the pip wheel's, on PATH): cubins embedded;
#   COLLECTION-nvrtc   with no nvcc where the build looks (PATH without it, python3 without the
#                      nvidia wheels): each kernel's CUDA source, compiled by NVRTC at load;
# and the `public-suite` tool (its `table`), stripped and gzipped into .carry/h100/public-suite/
# (ignored by git; carry it with the tree), with COLLECTION.programs (the harness names).
#
# The run, from the repository root, writes to $OUT (default ./h100-public-suite): per path and
# program its log (logs/nvcc/PROGRAM.log, logs/nvrtc/...), events-nvcc.jsonl and
# events-nvrtc.jsonl (every trial on the GPU, `--backend nvidia`; differential checks compare
# with the cpu backend in the same process), snapshots/COLLECTION/*.json (what the nvcc run's
# differential checks recorded, ROCM_TEST_RECORD=1: copy them to scripts/public-suite/snapshots/
# and commit), and table.md (`public-suite table nvcc=... nvrtc=...`; add the cpu columns here
# with `public-suite table CPU-EVENTS nvcc=$OUT/events-nvcc.jsonl nvrtc=$OUT/events-nvrtc.jsonl`).
# CPU=1 also runs the cpu trials there (waves 32 and 64, against the snapshots just recorded)
# into events-cpu.jsonl. ONLY=nvcc or ONLY=nvrtc runs one path; each program is cut at
# PROGRAM_TIMEOUT seconds (120). Exit status 0 when every trial passed.
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$here/.carry/h100/public-suite"

# shellcheck source=artifact.sh
. "$here/scripts/h100/artifact.sh"

build() {
  set -e
  rm -rf "$bin"
  mkdir -p "$bin"
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
  local work crate exe collection
  work="$(mktemp -d)"
  bash "$here/scripts/public-suite.sh" "$@" --work "$work" --prepare-only > "$work/crates"
  export ROCM_BACKENDS=cpu,nvidia ROCM_NVIDIA_ARCH="${ROCM_NVIDIA_ARCH:-sm_90}"
  local nvcc_bin="${NVCC_BIN:-/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/cu13/bin}"
  [ -x "$nvcc_bin/nvcc" ] || { echo "error: no nvcc in $nvcc_bin (set NVCC_BIN)" >&2; exit 2; }
  # Neither PATH, CUDA_PATH/CUDA_HOME, NVCC nor python3 (pyenv's has the nvidia wheels) finds
  # nvcc for the NVRTC build; it says `no nvcc found ... compiled at run time with NVRTC`.
  local plain_path
  plain_path="$(dirname "$(command -v cargo)"):/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  while read -r crate; do
    collection="$(basename "$(dirname "$crate")")"
    grep -h '^name = "' "$crate/Cargo.toml" | sed 's/^name = "\(.*\)"/\1/' \
      | grep -v -e '^public-suite-' -e '^public_suite_check$' -e '^public_suite_all$' > "$bin/$collection.programs"
    echo "==> $collection with nvcc ($nvcc_bin/nvcc): cubins" >&2
    exe="$(PATH="$nvcc_bin:$PATH" cargo test --release --no-run --manifest-path "$crate/Cargo.toml" \
      --test public_suite_all --message-format json | artifact public_suite_all test)"
    cp "$exe" "$bin/$collection-nvcc"
    echo "==> $collection without nvcc: CUDA sources for NVRTC" >&2
    exe="$(env -u CUDA_PATH -u CUDA_HOME -u NVCC -u VIRTUAL_ENV PATH="$plain_path" \
      cargo test --release --no-run --manifest-path "$crate/Cargo.toml" \
      --test public_suite_all --message-format json | artifact public_suite_all test)"
    cp "$exe" "$bin/$collection-nvrtc"
    if cmp -s "$bin/$collection-nvcc" "$bin/$collection-nvrtc"; then
      echo "error: $collection's two builds are the same binary" >&2
      exit 2
    fi
  done < "$work/crates"
  cargo build --release --manifest-path "$here/Cargo.toml" -p public-suite
  cp "$CARGO_TARGET_DIR/release/public-suite" "$bin/public-suite"
  strip "$bin"/*-nvcc "$bin"/*-nvrtc "$bin/public-suite"
  gzip -9 -f "$bin"/*-nvcc "$bin"/*-nvrtc "$bin/public-suite"
  cat "$bin"/*.programs | wc -l | sed 's/$/ programs/'
  ls -l "$bin"
  du -sh "$bin"
}

run() {
  local out="${OUT:-$PWD/h100-public-suite}" scratch="${PUBLIC_SUITE_SCRATCH:-/tmp/public-suite-h100}"
  ls "$bin"/*-nvcc.gz > /dev/null 2>&1 || { echo "missing $bin: run 'scripts/h100/public-suite.sh build' on a machine with Rust first" >&2; exit 2; }
  mkdir -p "$out" "$scratch"
  gunzip -c "$bin/public-suite.gz" > "$scratch/public-suite" && chmod +x "$scratch/public-suite"
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | sed 's/^/gpu: /'
  local status=0 path program exe list collection record
  for path in ${ONLY:-nvcc nvrtc}; do
    mkdir -p "$out/logs/$path"
    : > "$out/events-$path.jsonl"
    record=""
    [ "$path" = nvcc ] && record=1
    for list in "$bin"/*.programs; do
      collection="$(basename "$list" .programs)"
      rm -rf "${scratch:?}/$path/$collection"
      mkdir -p "$scratch/$path/$collection"
      gunzip -c "$bin/$collection-$path.gz" > "$scratch/$path/$collection/public_suite_all"
      chmod +x "$scratch/$path/$collection/public_suite_all"
      echo "==> $path: $collection ($(wc -l < "$list") programs)"
      while read -r program; do
        # The harness picks its program by the name it runs under (a hard link keeps that
        # name for the child processes trials run in).
        exe="$scratch/$path/$collection/$program"
        ln -f "$scratch/$path/$collection/public_suite_all" "$exe"
        ROCM_TEST_EVENTS="$out/events-$path.jsonl" ROCM_TEST_BACKEND=nvidia \
          ROCM_TEST_REQUIRE_BACKEND=nvidia ROCM_TEST_RECORD="$record" \
          PUBLIC_SUITE_SNAPSHOTS="$out/snapshots" \
          timeout "${PROGRAM_TIMEOUT:-120}" "$exe" --test-threads 4 > "$out/logs/$path/$program.log" 2>&1 \
          || { status=1; echo "$path $program: failed ($(grep -c 'FAILED' "$out/logs/$path/$program.log") lines say FAILED)"; }
      done < "$list"
    done
  done
  if [ "${CPU:-0}" = 1 ]; then
    echo "==> cpu (waves 32 and 64) against the snapshots just recorded"
    mkdir -p "$out/logs/cpu"
    : > "$out/events-cpu.jsonl"
    for list in "$bin"/*.programs; do
      collection="$(basename "$list" .programs)"
      while read -r program; do
        ROCM_TEST_EVENTS="$out/events-cpu.jsonl" ROCM_TEST_BACKEND=cpu ROCM_TEST_WAVE_SIZE=32,64 \
          PUBLIC_SUITE_SNAPSHOTS="$out/snapshots" \
          timeout "${PROGRAM_TIMEOUT:-120}" "$scratch/nvcc/$collection/$program" \
          > "$out/logs/cpu/$program.log" 2>&1 || status=1
      done < "$list"
    done
  fi
  local files=()
  [ -s "$out/events-cpu.jsonl" ] && files+=("$out/events-cpu.jsonl")
  for path in ${ONLY:-nvcc nvrtc}; do files+=("$path=$out/events-$path.jsonl"); done
  "$scratch/public-suite" table "${files[@]}" | tee "$out/table.md" || status=1
  return $status
}

case "${1:-run}" in
  build) shift; build "$@" ;;
  run) run ;;
  *) echo "usage: $0 [build [public-suite.sh options]|run]" >&2; exit 2 ;;
esac
