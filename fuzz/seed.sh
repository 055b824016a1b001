#!/usr/bin/env bash
# Seed the fuzz corpora with real code objects built by clang++-19:
# a plain bundle, a compressed (CCOB) bundle, a raw AMDGPU ELF, a host object with
# `.hip_fatbin`, and the metadata note alone. Usage: fuzz/seed.sh (from the repository root).
set -euo pipefail
cd "$(dirname "$0")"
CXX=${CXX:-clang++-19}
BITCODE=${ROCM_DEVICE_LIB_PATH:-/usr/lib/x86_64-linux-gnu/amdgcn/bitcode}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/k.hip" <<'HIP'
#include <hip/hip_runtime.h>
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
HIP
common=(-x hip -O2 --rocm-path=/usr "--rocm-device-lib-path=$BITCODE" -fhip-kernel-arg-name)
mkdir -p corpus/bundle corpus/elf corpus/metadata
"$CXX" "${common[@]}" --cuda-device-only --offload-arch=gfx90a --offload-arch=gfx1030 -c "$tmp/k.hip" -o corpus/bundle/plain.hipfb
"$CXX" "${common[@]}" --cuda-device-only --offload-arch=gfx90a --offload-compress -c "$tmp/k.hip" -o corpus/bundle/compressed.hipfb
"$CXX" "${common[@]}" --cuda-device-only --offload-arch=gfx1030 --no-gpu-bundle-output -c "$tmp/k.hip" -o corpus/elf/gfx1030.co
"$CXX" "${common[@]}" --offload-arch=gfx90a -c "$tmp/k.hip" -o corpus/elf/host.o
cp corpus/bundle/compressed.hipfb corpus/elf/
llvm-objcopy-19 --dump-section=.note="$tmp/note" corpus/elf/gfx1030.co "$tmp/ignored.co"
# The note section: 12-byte header, "AMDGPU\0" padded to 8, then the MessagePack descriptor.
tail -c +21 "$tmp/note" > corpus/metadata/gfx1030.msgpack
ls -l corpus/*
