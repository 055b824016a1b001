#!/usr/bin/env bash
# Build here, run there, with cargo-nextest archives: kernel trials checked on a GPU machine that
# has no Rust toolchain (docs/nextest.md explains the flow).
#
#   scripts/nextest-archive.sh build DIR        # here: Rust, cargo-nextest, nvcc (no GPU needed)
#   DIR/nextest-archive.sh run DIR [SHARDS]     # there: NVIDIA driver; no Rust, no cargo
#
# `build` archives (`cargo nextest archive --release`) the example crate (examples/basic) and a
# crate fresh from `cargo rocm new`, built for the cpu and nvidia backends (ROCM_BACKENDS,
# default cpu,nvidia; cubins for ROCM_NVIDIA_ARCH, default sm_90, plus PTX and the source NVRTC
# compiles when neither fits), and puts beside them the cargo-nextest binary, a release
# `cargo-rocm` (its `test merge` prints the table there) and this script.
# `run` runs every archive in SHARDS shards (default 3: `--partition count:K/SHARDS`, as the jobs
# of a CI matrix would), each with JUnit and an events file, then merges them into one
# kernels x targets table (`cargo rocm test merge`) and prints a pass/fail line per shard.
# Results go to DIR/results/. Exit status: 0 when no trial failed.
#
# Environment for `run` (defaults): ROCM_TEST_BACKEND=cpu,nvidia ROCM_TEST_REQUIRE_BACKEND=nvidia
# (an nvidia trial that cannot run fails instead of being skipped; set it empty to skip them),
# ROCM_BANDWIDTH_N=67108864.
set -euo pipefail

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
die() { echo "error: $*" >&2; exit 1; }

build() {
  local dir="$1"
  local here; here="$(cd "$(dirname "$0")/.." && pwd)"
  [ -f "$here/Cargo.toml" ] && [ -d "$here/examples/basic" ] \
    || die "build runs from a checkout of cargo-rocm ($here is not one)"
  command -v cargo-nextest >/dev/null \
    || die "cargo-nextest is not on PATH: cargo install --locked cargo-nextest"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  rm -rf "$dir"/*.tar.zst "$dir/crates.txt" "$dir/bin" "$dir/bin.tar.gz" "$dir/results"
  mkdir -p "$dir/bin"
  export ROCM_BACKENDS="${ROCM_BACKENDS:-cpu,nvidia}"
  export ROCM_NVIDIA_ARCH="${ROCM_NVIDIA_ARCH:-sm_90}"
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target/nextest-archive}"
  # Small archives: no debug info (symbols stay, for backtraces), as a release build.
  export CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=debuginfo
  echo "==> building cargo-rocm (release)" >&2
  cargo build -q --release --locked --manifest-path "$here/Cargo.toml" -p cargo-rocm
  local rocm="$CARGO_TARGET_DIR/release/cargo-rocm"
  "$rocm" rocm doctor --backend nvidia >&2 \
    || echo "warning: doctor reports problems with the nvidia backend here (nvcc builds cubins; without it NVRTC compiles the embedded source there)" >&2
  # Outside any workspace, and gone once archived: the archive must not need it.
  local tmp; tmp="$(mktemp -d)"
  # shellcheck disable=SC2064  # expanded now: $tmp is local
  trap "rm -rf '$tmp'" EXIT
  "$rocm" rocm new "$tmp/fresh" --path-deps "$here" >&2
  cp "$here/Cargo.lock" "$tmp/fresh/Cargo.lock"
  # name | manifest | package | the package's folder relative to its workspace root
  local crates=(
    "basic|$here/Cargo.toml|basic|examples/basic"
    "fresh|$tmp/fresh/Cargo.toml|fresh|."
  )
  local c name manifest package rel
  for c in "${crates[@]}"; do
    IFS='|' read -r name manifest package rel <<<"$c"
    echo "==> archiving $name ($ROCM_BACKENDS, $ROCM_NVIDIA_ARCH)" >&2
    cargo nextest archive --manifest-path "$manifest" -p "$package" --release \
      --archive-file "$dir/$name.tar.zst"
    echo "$name|$rel" >>"$dir/crates.txt"
  done
  cp "$(command -v cargo-nextest)" "$dir/bin/cargo-nextest"
  cp "$rocm" "$dir/bin/cargo-rocm"
  strip "$dir/bin/cargo-nextest" "$dir/bin/cargo-rocm" 2>/dev/null || true
  # The two programs compress to a third; `run` unpacks them (tar and gzip are everywhere).
  tar -czf "$dir/bin.tar.gz" -C "$dir" bin
  rm -rf "$dir/bin"
  cp "$here/scripts/nextest-archive.sh" "$dir/nextest-archive.sh"
  chmod +x "$dir/nextest-archive.sh"
  local kib; kib="$(du -sk "$dir" | cut -f1)"
  echo "built $dir ($((kib / 1024)) MiB): copy it to the GPU machine and run" >&2
  echo "  $dir/nextest-archive.sh run $dir" >&2
  [ "$kib" -le $((40 * 1024)) ] || echo "warning: $dir is larger than 40 MiB" >&2
}

run() {
  local dir="$1" shards="${2:-3}"
  [ -d "$dir" ] || die "$dir is not a folder made by \`nextest-archive.sh build\`"
  dir="$(cd "$dir" && pwd)"
  local nextest="$dir/bin/cargo-nextest" rocm="$dir/bin/cargo-rocm"
  if [ ! -x "$nextest" ] && [ -f "$dir/bin.tar.gz" ]; then
    tar -xzf "$dir/bin.tar.gz" -C "$dir" || die "cannot unpack $dir/bin.tar.gz into $dir (is it writable?)"
  fi
  [ -x "$nextest" ] || die "$nextest is missing: make DIR with \`scripts/nextest-archive.sh build DIR\`"
  [ -f "$dir/crates.txt" ] || die "$dir/crates.txt is missing: make DIR with \`scripts/nextest-archive.sh build DIR\`"
  [[ "$shards" =~ ^[1-9][0-9]*$ ]] || die "SHARDS must be a positive number, not \`$shards\`"
  export ROCM_TEST_BACKEND="${ROCM_TEST_BACKEND:-cpu,nvidia}"
  export ROCM_TEST_REQUIRE_BACKEND="${ROCM_TEST_REQUIRE_BACKEND-nvidia}"
  export ROCM_BANDWIDTH_N="${ROCM_BANDWIDTH_N:-67108864}"
  export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
  local out="$dir/results"
  rm -rf "$out"
  mkdir -p "$out"
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader 2>/dev/null \
    | sed 's/^/gpu: /' || echo "gpu: nvidia-smi not available"
  # JUnit per shard, every failure shown, nothing stopped early.
  cat >"$out/nextest.toml" <<'TOML'
[profile.ci]
fail-fast = false
failure-output = "immediate-final"
[profile.ci.junit]
path = "junit.xml"
TOML
  local status=0 name rel k lines=() crates=()
  while IFS='|' read -r name rel; do
    [ -f "$dir/$name.tar.zst" ] || die "$dir/$name.tar.zst is missing"
    # The workspace as the tests see it (CARGO_MANIFEST_DIR, their working directory): empty
    # folders (the kernels' sources are embedded in the binaries), and a root manifest, which
    # cargo-nextest checks for before it runs anything.
    local ws="$out/workspace/$name"
    mkdir -p "$ws/$rel"
    printf '# Stands for the workspace the archive was built in (cargo-nextest checks it exists).\n[workspace]\n' >"$ws/Cargo.toml"
    for k in $(seq 1 "$shards"); do
      local shard="$out/$name/shard-$k" extract="$out/extract/$name"
      mkdir -p "$shard" "$extract"
      echo "==> $name: shard $k of $shards" >&2
      local rc=0
      ROCM_TEST_EVENTS="$shard/events.jsonl" "$nextest" nextest run \
        --archive-file "$dir/$name.tar.zst" --workspace-remap "$ws" \
        --extract-to "$extract" --extract-overwrite \
        --config-file "$out/nextest.toml" --profile ci \
        --partition "count:$k/$shards" >"$shard/nextest.log" 2>&1 || rc=$?
      tail -n 2 "$shard/nextest.log" >&2
      # nextest writes it under the remapped workspace's target folder.
      if [ -f "$ws/target/nextest/ci/junit.xml" ]; then
        mv "$ws/target/nextest/ci/junit.xml" "$shard/junit.xml"
      else
        echo "warning: cargo-nextest wrote no JUnit file for $name shard $k" >&2
      fi
      case "$rc" in
        0) ;;
        100) status=1 ;;  # a trial failed
        *) status=1; echo "cargo-nextest exited with $rc for $name shard $k (see $shard/nextest.log):" >&2
           tail -n 20 "$shard/nextest.log" >&2 ;;
      esac
      lines+=("$(printf '%-8s %-6s %-5s %s' "$name" "$k/$shards" "$rc" \
        "$(grep -E '^ *Summary' "$shard/nextest.log" | tail -n 1 | sed 's/^ *//')")")
    done
    crates+=("$name")
  done <"$dir/crates.txt"
  echo
  printf '%-8s %-6s %-5s %s\n' crate shard exit "nextest's summary"
  printf '%s\n' "${lines[@]}"
  echo
  # One table per crate: the shards of a crate together are its whole run.
  for name in "${crates[@]}"; do
    local inputs=()
    for k in $(seq 1 "$shards"); do
      [ -f "$out/$name/shard-$k/events.jsonl" ] && inputs+=("$out/$name/shard-$k/events.jsonl")
    done
    if [ "${#inputs[@]}" -eq 0 ]; then
      echo "error: no shard of $name wrote an events file (see $out/$name/shard-*/nextest.log)" >&2
      status=1
      continue
    fi
    echo "==> $name: ${#inputs[@]} shards merged"
    if [ -x "$rocm" ]; then
      "$rocm" rocm test merge --out "$out/merged/$name" "${inputs[@]}" || status=1
    else
      echo "no cargo-rocm in $dir/bin: the events are in $out/$name/shard-*/events.jsonl" >&2
    fi
    grep -h '"bandwidth":{' "${inputs[@]}" 2>/dev/null \
      | sed -E 's/.*"name":"([^"]*)".*"kernel_gbps":([0-9.]+).*"copy_gbps":([0-9.]+).*"ratio":([0-9.]+).*/\1 \2 \3 \4/' \
      | awk '{ printf "bandwidth %s: kernel %.1f GB/s, device-to-device copy %.1f GB/s, ratio %.1f%%\n", $1, $2, $3, 100 * $4 }' \
      || true
    echo
  done
  echo "results: $out (merged/CRATE/{summary.json,junit.xml,events.jsonl}, CRATE/shard-K/{junit.xml,events.jsonl,nextest.log})"
  return "$status"
}

case "${1:-}" in
  build) [ $# -eq 2 ] || usage; build "$2" ;;
  run) [ $# -ge 2 ] && [ $# -le 3 ] || usage; run "$2" "${3:-}" ;;
  *) usage ;;
esac
