#!/usr/bin/env bash
# `cargo rocm profile` on an NVIDIA GPU, checked against Nsight Compute and the driver.
#
#   scripts/h100/profile.sh build      # here (Rust, no GPU, no nvcc needed): build the binaries
#   scripts/h100/profile.sh            # there (NVIDIA driver, ncu, python3; no Rust): run, check
#
# `build` writes two stripped, gzipped release binaries (NAME.gz) to .carry/h100/profile/
# (ignored by git; carry it with the tree; the run unpacks them into $OUT/bin):
#   cargo-rocm     the `cargo-rocm` command
#   kernels-bench  examples/basic's criterion benchmarks (rocm-bench device groups: saxpy,
#                  block_sum), built with ROCM_BACKENDS=cpu,nvidia: without nvcc the kernels are
#                  embedded as CUDA source and NVRTC (libnvrtc.so.13 from /usr/local/cuda/lib64,
#                  CUDA_PATH or CUDA_HOME) compiles them for the GPU at load time.
# The run, from the repository root, writes to $OUT (default ./h100-profile):
#   1. `cargo-rocm profile --backend nvidia` on the benchmarks (ncu times every launch; the
#      runtime's launch log gives the driver's registers and occupancy):
#      profile.txt, profile/profile.json, profile/profile.html, profile/raw/
#   2. ncu run directly on the same benchmarks, in another process: ncu-direct.csv
#   3. check.txt: per kernel, mean and median time of (1) against (2) (pass: within 5%), and the
#      occupancy of (1) (the driver's cuOccupancyMaxActiveBlocksPerMultiprocessor) against ncu's
#      own theoretical occupancy and block limits (pass: equal).
# Exit status 0 when every check passes. About a minute of GPU time.
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$here/.carry/h100/profile"

# shellcheck source=artifact.sh
. "$here/scripts/h100/artifact.sh"

build() {
  set -e
  rm -rf "$bin"
  mkdir -p "$bin"
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
  cargo build --release --manifest-path "$here/Cargo.toml" -p cargo-rocm
  cp "$CARGO_TARGET_DIR/release/cargo-rocm" "$bin/cargo-rocm"
  local exe
  exe="$(ROCM_BACKENDS=cpu,nvidia ROCM_NVIDIA_ARCH="${ROCM_NVIDIA_ARCH:-sm_90}" \
    cargo build --release --manifest-path "$here/examples/basic/Cargo.toml" --bench kernels \
      --message-format json | artifact kernels bench)"
  cp "$exe" "$bin/kernels-bench"
  strip "$bin"/*
  # Compressed: the carried tree has a size limit (gunzipped into $OUT/bin by the run).
  gzip -9 -f "$bin"/*
  ls -l "$bin"
  echo "built; carry .carry/h100/profile/ with the tree and run scripts/h100/profile.sh on the GPU machine" >&2
}

run() {
  local out="${OUT:-$PWD/h100-profile}"
  mkdir -p "$out"
  for b in cargo-rocm kernels-bench; do
    [ -f "$bin/$b.gz" ] || { echo "missing $bin/$b.gz: run 'scripts/h100/profile.sh build' on a machine with Rust first" >&2; exit 2; }
    mkdir -p "$out/bin" && gunzip -c "$bin/$b.gz" > "$out/bin/$b" && chmod +x "$out/bin/$b"
  done
  local exe="$out/bin"
  command -v ncu >/dev/null || { echo "ncu is not on PATH (it comes with the CUDA toolkit: /usr/local/cuda/bin)" >&2; exit 3; }
  nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv,noheader \
    | tee "$out/gpu.txt" | sed 's/^/gpu: /'
  ncu --version | tail -n 1 | tee -a "$out/gpu.txt"
  # Short criterion runs: under ncu every launch is profiled, so few launches are enough.
  # rocm-bench's groups take their settings from the environment (they override criterion's
  # flags), and the direct ncu run must bench the GPU only, as `profile --backend nvidia` asks.
  local bench_args=(--bench)
  export ROCM_BENCH_SAMPLES=10 ROCM_BENCH_WARMUP_MS=100 ROCM_BENCH_MEASURE_MS=500
  export ROCM_BENCH_BACKEND=nvidia

  echo "==> cargo rocm profile --backend nvidia" >&2
  "$exe/cargo-rocm" profile --backend nvidia --output-dir "$out/profile" \
      -- "$exe/kernels-bench" "${bench_args[@]}" > "$out/profile.txt" 2> "$out/profile.err"
  local status=$?
  cat "$out/profile.txt"
  if [ $status -ne 0 ]; then tail -n 40 "$out/profile.err"; exit 1; fi

  echo "==> ncu directly on the same benchmarks" >&2
  ncu --csv --print-units base --print-kernel-base function \
      --metrics gpu__time_duration.sum,sm__maximum_warps_per_active_cycle_pct,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps,launch__occupancy_limit_blocks \
      --log-file "$out/ncu-direct.csv" "$exe/kernels-bench" "${bench_args[@]}" > "$out/ncu-direct.out" 2>&1 \
    || { tail -n 40 "$out/ncu-direct.out"; exit 1; }

  python3 - "$out/profile/profile.json" "$out/ncu-direct.csv" <<'PY' | tee "$out/check.txt"
import csv, io, json, statistics, sys
report = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read().splitlines()
start = next(i for i, l in enumerate(text) if l.startswith('"ID"'))
rows = list(csv.DictReader(io.StringIO("\n".join(l for l in text[start:] if not l.startswith("==")))))
launches = {}
for r in rows:
    d = launches.setdefault(r["ID"], {"kernel": r["Kernel Name"]})
    try: d[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    except ValueError: pass
by_kernel = {}
for d in launches.values():
    by_kernel.setdefault(d["kernel"], []).append(d)
failed = 0
print("device: %s (%s), %d dispatches profiled by cargo rocm profile, %d by ncu directly" % (
    report["device"], report["arch"], report["dispatches"], len(launches)))
for k in report["kernels"]:
    name = k["name"]
    direct = by_kernel.get(name, [])
    times = [d["gpu__time_duration.sum"] for d in direct if "gpu__time_duration.sum" in d]
    if not times:
        print("FAIL %s: ncu's direct run has no launch of it" % name); failed += 1; continue
    for stat, ours, theirs in (("mean", k["time"]["mean_ns"], statistics.mean(times)),
                               ("median", k["time"]["median_ns"], statistics.median(times))):
        diff = ours / theirs - 1
        ok = abs(diff) <= 0.05
        failed += not ok
        print("%s %s %s: cargo rocm profile %.3f us (%d launches), ncu %.3f us (%d launches), %+.2f%%" % (
            "ok  " if ok else "FAIL", name, stat, ours / 1e3, k["calls"], theirs / 1e3, len(times), 100 * diff))
    occ = k.get("occupancy")
    if not occ:
        print("FAIL %s: no occupancy in the profile (launch log missing?)" % name); failed += 1; continue
    ncu_pct = statistics.mean(d["sm__maximum_warps_per_active_cycle_pct"] for d in direct)
    limits = [min(d[m] for m in d if m.startswith("launch__occupancy_limit_")) for d in direct]
    ok = abs(100 * occ["fraction"] - ncu_pct) < 0.5 and occ["blocks_per_cu"] == min(limits)
    failed += not ok
    print("%s %s occupancy from the %s: %d/%d warps per SM = %.1f%%, %s blocks per SM; ncu theoretical %.1f%%, block limit %d; registers driver %s, ncu %s" % (
        "ok  " if ok else "FAIL", name, occ["source"], occ["waves"], occ["max_waves"], 100 * occ["fraction"],
        occ["blocks_per_cu"], ncu_pct, min(limits), (k.get("resources") or {}).get("vgprs"),
        direct[0].get("launch__registers_per_thread")))
print("%d check(s) failed" % failed if failed else "all checks passed")
sys.exit(1 if failed else 0)
PY
}

case "${1:-run}" in
  build) build ;;
  run) run ;;
  *) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
