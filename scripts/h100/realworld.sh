#!/usr/bin/env bash
# The realworld fixture (tests/fixtures/realworld) on an NVIDIA GPU, recording the outputs its
# differential check compares the cpu backend with in a GPU-less CI.
#
#   scripts/h100/realworld.sh build    # here (Rust, nvcc on PATH): .carry/h100/realworld/
#   scripts/h100/realworld.sh          # there (driver 580; no Rust)
#
# The run executes the harness with `--backend nvidia` and ROCM_TEST_RECORD=1, the snapshots
# going to $OUT/snapshots (copy them to tests/fixtures/realworld/snapshots/ and commit), and
# writes test.txt and events.jsonl to $OUT.
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$here/.carry/h100/realworld"

# shellcheck source=artifact.sh
. "$here/scripts/h100/artifact.sh"

build() {
  set -e
  rm -rf "$bin"
  mkdir -p "$bin"
  local exe
  exe="$(ROCM_BACKENDS=cpu,nvidia ROCM_NVIDIA_ARCH="${ROCM_NVIDIA_ARCH:-sm_90}" \
    CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}" \
    cargo test --release --no-run --manifest-path "$here/tests/fixtures/realworld/Cargo.toml" \
      --test realworld --message-format json | artifact realworld test)"
  cp "$exe" "$bin/realworld-test"
  strip "$bin/realworld-test"
  gzip -9 -f "$bin/realworld-test"
  du -sh "$bin"
}

run() {
  local out="${OUT:-$PWD/h100-realworld}"
  mkdir -p "$out/snapshots"
  gunzip -c "$bin/realworld-test.gz" > /tmp/realworld-test && chmod +x /tmp/realworld-test
  cp "$here"/tests/fixtures/realworld/snapshots/*.json "$out/snapshots/" 2>/dev/null
  ( cd "$here/tests/fixtures/realworld" && ROCM_TEST_RECORD=1 ROCM_TEST_SNAPSHOTS="$out/snapshots" \
      timeout "${T_REALWORLD:-120}" /tmp/realworld-test --backend nvidia --events "$out/events.jsonl" ) \
    > "$out/test.txt" 2>&1
  echo "realworld on nvidia: exit $?" | tee -a "$out/test.txt"
  grep -E "^test |test result" "$out/test.txt" | tail -40
}

case "${1:-run}" in
  build) build ;;
  run) run ;;
  *) echo "usage: $0 [build|run]" >&2; exit 2 ;;
esac
