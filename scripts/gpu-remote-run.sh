#!/usr/bin/env bash
# Runs the staged test binaries (see gpu-remote-test.sh) on this GPU machine and prints a table
# of checks × backend/target with pass/fail/ignored. Exit status: 0 when nothing failed.
#   run.sh [OUTDIR]    events (JSON lines) and logs go to OUTDIR (default: ./gpu-results)
set -uo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$PWD/gpu-results}"
mkdir -p "$out"
: > "$out/events.jsonl"
export ROCM_TEST_EVENTS="$out/events.jsonl"
export ROCM_TEST_BACKEND="${ROCM_TEST_BACKEND:-cpu,nvidia}"
export ROCM_TEST_REQUIRE_BACKEND="${ROCM_TEST_REQUIRE_BACKEND:-nvidia}"
# The example's bandwidth check: 64M floats (0.75 GiB moved per saxpy; an H100 moves that in 0.3 ms,
# enough to measure). The cpu trials run it too: at 256M they took ~340 s, more than one device call.
export ROCM_BANDWIDTH_N="${ROCM_BANDWIDTH_N:-67108864}"
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader 2>/dev/null \
  | sed 's/^/gpu: /' || echo "gpu: nvidia-smi not available"
status=0
# A binary with a file in filters/ runs once per filter line (libtest takes one filter a run).
for bin in "$dir"/bin/*; do
  name="$(basename "$bin")"
  filters=("")
  [ -f "$dir/filters/$name" ] && mapfile -t filters < "$dir/filters/$name"
  for filter in "${filters[@]}"; do
    log="$out/$name${filter:+-${filter%::}}.log"
    echo "==> $name${filter:+ $filter}"
    # shellcheck disable=SC2086
    if ! "$bin" --test-threads 1 $filter >"$log" 2>&1; then
      status=1
      tail -n 40 "$log"
    else
      grep -E "^test result" "$log" || tail -n 3 "$log"
    fi
  done
done
python3 - "$out/events.jsonl" <<'PY'
import json, sys, collections
rows = collections.OrderedDict()
cols = set()
for line in open(sys.argv[1]):
    if not line.strip(): continue
    e = json.loads(line)
    col = "/".join(x for x in (e.get("backend"), e.get("target")) if x) or "library"
    cols.add(col)
    rows.setdefault((e["binary"], e["check"]), {})[col] = e["outcome"]
cols = sorted(cols)
w = max([len(f"{b}::{c}") for b, c in rows] + [5])
print("\n" + "check".ljust(w) + "  " + "  ".join(c.ljust(10) for c in cols))
totals = collections.Counter()
for (b, c), res in rows.items():
    print(f"{b}::{c}".ljust(w) + "  " + "  ".join(res.get(col, "-").ljust(10) for col in cols))
    totals.update(res.values())
print("\n%d passed, %d failed, %d ignored" % (totals["passed"], totals["failed"], totals["ignored"]))
for line in open(sys.argv[1]):
    if not line.strip(): continue
    e = json.loads(line)
    bw = e.get("bandwidth")
    if bw:
        print("bandwidth %s %s: kernel %.1f GB/s, device-to-device copy %.1f GB/s, ratio %.1f%% (%.2f GiB moved, %.3f ms)" % (
            e["binary"], e["name"], bw["kernel_gbps"], bw["copy_gbps"], 100 * bw["ratio"],
            bw["bytes"] / 2**30, bw["kernel_ms"]))
PY
exit $status
