#!/usr/bin/env bash
# The occupancy model (rocm-occupancy) against clang's own remark, "Occupancy [waves/SIMD]"
# (-Rpass-analysis=kernel-resource-usage), on a generated corpus: every processor, wave size and
# CU/WGP mode the installed clang knows. Needs clang-19 and lld-19 (no ROCm, no device libraries).
#   scripts/occupancy-compare.sh [--kernels N] [--jobs N] [--arch gfx90a,gfx1100] [--seed S] [--verbose]
# Compiled units are cached by content hash in $CARGO_TARGET_DIR/occupancy-corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
nice -n 10 cargo build --quiet --release -p rocm-occupancy --example occupancy_compare
exec nice -n 10 "$CARGO_TARGET_DIR/release/examples/occupancy_compare" "$@"
