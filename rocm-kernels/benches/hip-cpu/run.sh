#!/usr/bin/env bash
# Build and run the benchmark kernels against ROCm's HIP-CPU, for comparison with
# `cargo bench -p rocm-kernels --bench cpu_backend`.
#
#   rocm-kernels/benches/hip-cpu/run.sh /path/to/HIP-CPU
#
# HIP-CPU is not part of this project: clone it yourself (https://github.com/ROCm/HIP-CPU) and
# pass its path. Needs g++ (C++17) and libtbb-dev.
set -euo pipefail
if [ $# -ne 1 ] || [ ! -f "$1/include/hip/hip_runtime.h" ]; then
  echo "usage: $0 <path to a HIP-CPU checkout> (it must contain include/hip/hip_runtime.h)" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"${CXX:-g++}" -std=c++17 -O3 -DNDEBUG -I "$1/include" "$here/driver.cpp" -o "$out/bench-hip-cpu" -ltbb -pthread
"$out/bench-hip-cpu"
