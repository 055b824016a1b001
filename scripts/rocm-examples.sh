#!/usr/bin/env bash
# Check the rocm-examples kernels that need no library (HIP-Basic and Applications), verbatim from
# a checkout outside this repository, in a crate made by `cargo rocm new`:
#
#   scripts/rocm-examples.sh [CHECKOUT] [--work DIR] [--prepare-only] [cargo rocm test options...]
#
# CHECKOUT: a ROCm/rocm-examples checkout (default: cloned into $TMPDIR, pinned to 7dfb7d4); it
# must lie outside this repository. The crate is written to DIR (default: a new temporary folder):
# each program's device code (host code removed, the rest verified byte for byte against the
# original: scripts/rocm-examples/src/strip.rs) in kernels/, the template instances its host code
# launched in kernels/NAME.instances.hip, and the checks of scripts/rocm-examples/checks.rs.
# Then `cargo rocm test --backend cpu --wave-size 32,64` (race check at its default: the first
# cases of each trial), or with the options given, and a table program x kernel x place.
# With --prepare-only it stops once the crate is written (scripts/h100/examples.sh builds it for a
# GPU machine). Exit status: 0 when every trial passed, 1 when one failed, 2 for a usage or setup
# error.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
PINNED=7dfb7d4
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

checkout="" work="" test_args=() prepare_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage ;;
    --work) work="$2"; shift 2 ;;
    --work=*) work="${1#--work=}"; shift ;;
    --prepare-only) prepare_only=1; shift ;;
    -*) test_args+=("$1"); shift ;;
    *) if [ -z "$checkout" ] && [ "${#test_args[@]}" -eq 0 ]; then checkout="$1"; else test_args+=("$1"); fi; shift ;;
  esac
done
[ "${#test_args[@]}" -gt 0 ] || test_args=(--backend cpu --wave-size 32,64)

if [ -z "$checkout" ]; then
  checkout="${TMPDIR:-/tmp}/rocm-examples-$PINNED"
  if [ ! -d "$checkout/HIP-Basic" ]; then
    echo "==> cloning ROCm/rocm-examples at $PINNED into $checkout" >&2
    git clone -q https://github.com/ROCm/rocm-examples "$checkout"
    git -C "$checkout" checkout -q "$PINNED"
  fi
fi
[ -d "$checkout/HIP-Basic" ] || { echo "error: $checkout is not a rocm-examples checkout (no HIP-Basic/)" >&2; exit 2; }
checkout="$(cd "$checkout" && pwd -P)"
case "$checkout/" in
  "$(cd "$here" && pwd -P)"/*) echo "error: the checkout must lie outside this repository: $checkout" >&2; exit 2 ;;
esac

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
echo "==> building cargo-rocm and the rocm-examples helper" >&2
cargo build -q --manifest-path "$here/Cargo.toml" -p cargo-rocm -p rocm-examples
bin="$CARGO_TARGET_DIR/debug"

work="${work:-$(mktemp -d)}"
crate="$work/rocm-examples-check"
rm -rf "$crate"
"$bin/cargo-rocm" rocm new "$crate" --path-deps "$here" --name rocm-examples-check >&2
echo "==> device code of each program, from $checkout" >&2
"$bin/rocm-examples" prepare "$checkout" "$crate"
if [ "$prepare_only" = 1 ]; then
  echo "$crate"
  exit 0
fi

echo "==> cargo rocm test ${test_args[*]} in $crate" >&2
status=0
(cd "$crate" && "$bin/cargo-rocm" rocm test "${test_args[@]}") >&2 || status=$?
events="$CARGO_TARGET_DIR/rocm/test/events.jsonl"
if [ "$status" -gt 1 ] || [ ! -f "$events" ]; then
  echo "error: cargo rocm test exited $status before running the checks" >&2
  exit 2
fi
echo
echo "rocm-examples @ $(git -C "$checkout" rev-parse --short HEAD 2>/dev/null || echo "$checkout"): ${test_args[*]}"
"$bin/rocm-examples" table "$events"
