#!/usr/bin/env bash
# The rocm-examples collection of scripts/public-suite.sh (kept for its old command line):
#
#   scripts/rocm-examples.sh [CHECKOUT] [--work DIR] [--prepare-only] [cargo rocm test options...]
#
# is `scripts/public-suite.sh --collection rocm-examples [--checkout rocm-examples=CHECKOUT] ...`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
args=(--collection rocm-examples)
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  args+=(--checkout "rocm-examples=$1")
  shift
fi
exec bash "$here/public-suite.sh" "${args[@]}" "$@"
