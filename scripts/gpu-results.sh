#!/usr/bin/env bash
# Reproduces results/<machine>/ on a GPU node: devices, the seed's diagnosis, dAxpy on
# each GPU and split over them (and beside PyTorch), the allocation benchmark three
# times, and sweeps of configs/,
# configs/scaling and configs/emulation.
#
#   scripts/gpu-results.sh [BIN_DIR] [OUT] [GPUS]
#     BIN_DIR  holds clmulti, xtask and libclmulti_layer.so (default target/release;
#              build: cargo build --release -p clmulti -p clmulti-layer -p xtask --features clmulti/nvml)
#     OUT      results folder (default results/<hostname>)
#     GPUS     GPUs expected (default 2)
#
# Each step has a time limit and its exit code goes to OUT/steps.txt; a failed step
# does not stop the others. Uses the NVIDIA platform (scripts/gpu-node-setup.sh).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bin=${1:-target/release}
out=${2:-results/$(hostname -s)}
gpus=${3:-2}
clmulti=$bin/clmulti
xtask=$bin/xtask
mkdir -p "$out"
: >"$out/steps.txt"

step() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  echo "== $name" >&2
  timeout --kill-after=10 "$limit" "$@"
  local rc=$?
  printf '%-24s rc=%-3s %4s s  %s\n' "$name" "$rc" "$((SECONDS - t0))" "$*" >>"$out/steps.txt"
  return 0
}

scripts/gpu-node-setup.sh "$gpus" "$clmulti" || exit 1
nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true
step devices 60 bash -c "'$clmulti' devices >'$out/devices.txt' && '$clmulti' devices --format json >'$out/devices.json'"
devices=()
for k in $(seq 0 $((gpus - 1))); do devices+=(--device "nvidia:$k"); done
step diagnose 240 "$clmulti" diagnose "${devices[@]}" --out "$out/diagnose"
step axpy 150 bash -c "'$clmulti' axpy ${devices[*]} --n 268435456 --repeat 20 >'$out/axpy.txt' 2>&1"
mkdir -p "$out/bench"
for i in 1 2 3; do
  step "bench-$i" 120 bash -c "'$clmulti' bench --device nvidia:0 >'$out/bench/bench-$i.txt' 2>&1"
done
step axpy-split 150 bash -c "'$clmulti' axpy --split ${devices[*]} --n 536870912 --repeat 20 --format json >'$out/axpy-split.json'"
step axpy-split-text 150 bash -c "'$clmulti' axpy --split ${devices[*]} --n 536870912 --repeat 20 >'$out/axpy-split.txt' 2>&1"
# Beside PyTorch (scripts/torch-split-axpy.py), interleaved, three rounds each.
mkdir -p "$out/split-vs-pytorch"
step split-vs-pytorch 420 bash -c "scripts/gpu-compare.sh --bin '$bin' --gpus $gpus --out '$out/split-vs-pytorch/g$gpus' 536870912 1073741824 >'$out/split-vs-pytorch/g$gpus.txt'"
step split-vs-pytorch-1 120 bash -c "scripts/gpu-compare.sh --bin '$bin' --gpus 1 --out '$out/split-vs-pytorch/g1' 268435456 >'$out/split-vs-pytorch/g1.txt'"
step sweep 120 "$xtask" sweep configs --bin "$clmulti" --out "$out/sweep" --force
step sweep-scaling 90 "$xtask" sweep configs/scaling --bin "$clmulti" --out "$out/scaling" --force
# The emulation layer needs a loader with layer support; CUDA's libOpenCL.so.1 has
# none, and clmulti reports such runs as unsupported. ocl-icd, when installed, is put first.
ocl_icd=/usr/lib/x86_64-linux-gnu/libOpenCL.so.1
preload=()
if [ -e "$ocl_icd" ] && [ "$(ldd "$clmulti" | awk '/libOpenCL.so.1/ {print $3}')" != "$ocl_icd" ]; then
  preload=(env "LD_PRELOAD=$ocl_icd")
fi
step sweep-emulation 90 "${preload[@]}" "$xtask" sweep configs/emulation --bin "$clmulti" --out "$out/emulation" --force
cat "$out/steps.txt" >&2
