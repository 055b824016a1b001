#!/usr/bin/env bash
# Check kernels of public HIP collections, their device code verbatim from checkouts outside this
# repository, in one crate made by `cargo rocm new`:
#
#   scripts/public-suite.sh [--collection NAME[,NAME...]] [--checkout NAME=DIR]... [--work DIR]
#                           [--prepare-only] [cargo rocm test options...]
#
# Collections: each folder of scripts/public-suite/collections/ with a programs.txt (the format:
# docs/public-suite.md): rocm-examples, hip-examples, hecbench; all of them by default. A
# collection's checkout is DIR from --checkout, else $TMPDIR/NAME-COMMIT, cloned there (from
# /work/.mirror/OWNER+NAME/repo when that exists, else from its url) at the commit its `source`
# file pins; it must lie outside this repository. The crate is written to DIR/public-suite-check
# (default: a new temporary folder): each program's device code (host code removed, the rest
# verified byte for byte against the original: scripts/public-suite/src/strip.rs) in kernels/,
# one library and harness per program, each collection's checks.rs. Then `cargo rocm test
# --backend cpu --wave-size 32,64` (race check at its default: the first cases of each trial), or
# with the options given, and the table (collection x program x kernel x place). A program that
# does not build for a backend is reported unsupported there, with the build's first error line.
# With --prepare-only it stops once the crate is written and prints its path
# (scripts/h100/public-suite.sh builds it for a GPU machine). Exit status: 0 when every trial
# passed, 1 when one failed, 2 for a usage or setup error.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
collections_dir="$here/scripts/public-suite/collections"
usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

wanted="" work="" test_args=() prepare_only=0
declare -A checkouts=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage ;;
    --collection) wanted="$2"; shift 2 ;;
    --collection=*) wanted="${1#--collection=}"; shift ;;
    --checkout) checkouts["${2%%=*}"]="${2#*=}"; shift 2 ;;
    --checkout=*) v="${1#--checkout=}"; checkouts["${v%%=*}"]="${v#*=}"; shift ;;
    --work) work="$2"; shift 2 ;;
    --work=*) work="${1#--work=}"; shift ;;
    --prepare-only) prepare_only=1; shift ;;
    *) test_args+=("$1"); shift ;;
  esac
done
[ "${#test_args[@]}" -gt 0 ] || test_args=(--backend cpu --wave-size 32,64)

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
echo "==> building cargo-rocm and the public-suite helper" >&2
cargo build -q --manifest-path "$here/Cargo.toml" -p cargo-rocm -p public-suite
bin="$CARGO_TARGET_DIR/debug"

if [ -z "$wanted" ]; then
  wanted="$("$bin/public-suite" collections | paste -sd, -)"
fi
[ -n "$wanted" ] || { echo "error: no collection has a programs.txt in $collections_dir" >&2; exit 2; }

# `source` file field: source_field NAME FIELD
source_field() { awk -v k="$2" '$1 == k { print $2 }' "$collections_dir/$1/source" 2>/dev/null; }

# The checkout of a collection: given, or cloned at its pinned commit.
checkout_of() {
  local name="$1" dir="${checkouts[$1]:-}" url commit marker owner_repo mirror
  url="$(source_field "$name" url)" commit="$(source_field "$name" commit)"
  marker="$(source_field "$name" marker)"
  if [ -z "$dir" ]; then
    dir="${TMPDIR:-/tmp}/$name-$commit"
    if [ ! -e "$dir/$marker" ]; then
      owner_repo="${url#https://github.com/}"
      mirror="/work/.mirror/${owner_repo/\//+}/repo"
      [ -d "$mirror" ] && url="$mirror"
      echo "==> cloning $name ($url) at $commit into $dir" >&2
      local sparse
      sparse="$(source_field "$name" sparse)"
      if [ -n "$sparse" ]; then
        git clone -q --no-checkout --filter=blob:none "$url" "$dir" 2>/dev/null \
          || git clone -q --no-checkout "$url" "$dir"
        git -C "$dir" sparse-checkout set --no-cone $(awk '$1 == "sparse" { print "/" $2 "/" }' "$collections_dir/$name/source")
      else
        git clone -q "$url" "$dir"
      fi
      git -C "$dir" checkout -q "$commit"
    fi
  fi
  [ -z "$marker" ] || [ -e "$dir/$marker" ] || { echo "error: $dir is not a $name checkout (no $marker)" >&2; return 2; }
  dir="$(cd "$dir" && pwd -P)"
  case "$dir/" in
    "$(cd "$here" && pwd -P)"/*) echo "error: the $name checkout must lie outside this repository: $dir" >&2; return 2 ;;
  esac
  echo "$dir"
}

sources=() pins=()
IFS=, read -r -a names <<< "$wanted"
for name in "${names[@]}"; do
  [ -f "$collections_dir/$name/programs.txt" ] || { echo "error: no collection $name (no $collections_dir/$name/programs.txt)" >&2; exit 2; }
  dir="$(checkout_of "$name")" || exit 2
  sources+=("$name=$dir")
  pins+=("$name @ $(git -C "$dir" rev-parse --short HEAD 2>/dev/null || echo "$dir")")
done

work="${work:-$(mktemp -d)}"
crate="$work/public-suite-check"
rm -rf "$crate"
"$bin/cargo-rocm" rocm new "$crate" --path-deps "$here" --name public-suite-check >&2
echo "==> device code of each program (${names[*]})" >&2
"$bin/public-suite" prepare "$crate" "${sources[@]}"
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
echo "$(IFS=';'; echo "${pins[*]}"): ${test_args[*]}"
"$bin/public-suite" table "$events"
