#!/usr/bin/env bash
# Prepares an NVIDIA GPU node for clmulti: registers the NVIDIA OpenCL ICD with the
# loader when the driver is installed but its ICD file is missing (common in
# containers), then checks that the expected number of GPUs is visible.
#
#   scripts/gpu-node-setup.sh [EXPECTED_GPUS] [CLMULTI_BINARY]
#
# Exits non-zero, saying why, when fewer GPUs than expected are visible.
set -euo pipefail

expected=${1:-1}
clmulti=${2:-target/release/clmulti}
vendors=/etc/OpenCL/vendors

lib=""
for candidate in /usr/lib/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 \
                 /usr/lib64/libnvidia-opencl.so.1 /usr/local/nvidia/lib64/libnvidia-opencl.so.1; do
  if [ -e "$candidate" ]; then lib=$candidate; break; fi
done
if [ -z "$lib" ]; then
  lib=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl.so.1/ {print $NF; exit}')
fi
if [ -z "$lib" ]; then
  echo "gpu-node-setup: libnvidia-opencl.so.1 not found: is the NVIDIA driver installed?" >&2
  exit 1
fi
if ! grep -qs libnvidia-opencl "$vendors"/*.icd 2>/dev/null; then
  mkdir -p "$vendors"
  echo "$lib" > "$vendors/nvidia.icd"
  echo "gpu-node-setup: registered $lib in $vendors/nvidia.icd" >&2
fi

if [ ! -x "$clmulti" ]; then
  echo "gpu-node-setup: $clmulti not found; build it with: cargo build --release --features nvml" >&2
  exit 1
fi
# Platform order changes between boots: count GPUs on the platform named NVIDIA.
count=$("$clmulti" devices --format json | python3 -c '
import json, sys
platforms = json.load(sys.stdin)["platforms"]
print(sum(1 for p in platforms if "NVIDIA" in str(p["name"]) for d in p["devices"] if d["kind"] == "gpu"))')
echo "gpu-node-setup: $count NVIDIA GPU(s) visible through OpenCL" >&2
if [ "$count" -lt "$expected" ]; then
  echo "gpu-node-setup: expected $expected; check nvidia-smi and CUDA_VISIBLE_DEVICES" >&2
  exit 1
fi
