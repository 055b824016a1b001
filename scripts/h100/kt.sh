#!/usr/bin/env bash
# Kernel Tuner 1.5 beside `cargo rocm tune` on the NVIDIA GPU machine (issue 17).
#
#   scripts/h100/kt.sh wheels      # here (pip, internet): .carry/h100/kt/*.whl
#   scripts/h100/kt.sh             # there (CuPy, NumPy, SciPy, pandas, scikit-learn present)
#
# `wheels` downloads Kernel Tuner 1.5.0 and what it needs that the GPU machine's Python 3.12
# lacks (jsonschema, pymoo, python-constraint2, xmltodict and their own needs), pinned, for
# CPython 3.12 on x86_64 (about 16 MB). The run installs them into a scratch folder and runs
# kt_side_by_side.py: Kernel Tuner's strategies (KT_STRATEGIES, default simulated_annealing and
# bayes_opt) on examples/basic's matmul (KT_MATMUL_SEEDS, default 5) and conv2d (KT_CONV_SEEDS,
# default 3) at n = 2048, budget 100, 5 iterations per configuration, within KT_TIME seconds
# (default 420). It writes $OUT/kt.json; score it here against the brute-force tables of
# `cargo rocm tune` on the same GPU with scripts/h100/kt_scores.py.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
wheels="$here/.carry/h100/kt"

download() {
  mkdir -p "$wheels"
  local pins=(kernel_tuner==1.5.0 jsonschema==4.26.0 jsonschema-specifications==2025.9.1
              referencing==0.37.0 rpds-py==2026.9.1 pymoo==0.6.2 moocore==0.3.2 autograd==1.9.1
              cma==4.5.0 alive_progress==3.3.0 about-time==4.2.1 graphemeu==0.7.2
              Deprecated==3.0.1 python-constraint2==2.9.0 xmltodict==1.0.4 cffi==2.1.1
              pycparser==3.12 platformdirs==4.14.7)
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$wheels" "${pins[@]}"
  du -sh "$wheels"
}

run() {
  local out="${OUT:-$PWD/h100-kt}"
  mkdir -p "$out"
  ls "$wheels"/*.whl > /dev/null 2>&1 || { echo "no wheels in $wheels: run '$0 wheels' where pip reaches PyPI" >&2; exit 2; }
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/kt-site "$wheels"/*.whl
  export PYTHONPATH=/tmp/kt-site PYTHONUNBUFFERED=1
  python3 -c 'import kernel_tuner, cupy; print("kernel_tuner", kernel_tuner.__version__, "cupy", cupy.__version__)'
  local strategies=()
  for s in ${KT_STRATEGIES:-simulated_annealing bayes_opt}; do strategies+=(--strategy "$s"); done
  local limit="${KT_TIME:-420}"
  local t0=$SECONDS
  python3 "$here/scripts/h100/kt_side_by_side.py" --kernel matmul "${strategies[@]}" \
    --seeds "${KT_MATMUL_SEEDS:-5}" --time-limit "$((limit * 7 / 10))" --out "$out/kt-matmul.json"
  local left=$((limit - (SECONDS - t0)))
  [ "$left" -gt 30 ] && python3 "$here/scripts/h100/kt_side_by_side.py" --kernel conv2d \
    --strategy simulated_annealing --seeds "${KT_CONV_SEEDS:-3}" --time-limit "$((left - 30))" \
    --out "$out/kt-conv2d.json"
  echo "kernel tuner runs: $out/kt-*.json"
}

case "${1:-run}" in
  wheels) download ;;
  run) run ;;
  *) echo "usage: $0 [wheels|run]" >&2; exit 2 ;;
esac
