#!/usr/bin/env bash
# What results/nvidia-h200 holds, on a node with one NVIDIA H200 (the `device` tool's
# nvidia-h200), in one call: the devices, the seed's diagnosis on the one GPU, the
# configs' sweep (runs asking for two GPUs are skipped and say so), clmulti's own cost
# against the plain C loop (bench/run-vs-loop.sh, traced and untraced, three
# invocations), `clmulti bench --rounds 61` three times, and dAxpy beside PyTorch on the GPU.
#
#   scripts/h200-one-gpu.sh BIN_DIR OUT
#     BIN_DIR  holds clmulti, xtask and clmulti's libraries (release builds, built
#              elsewhere: the node has no cargo)
#     OUT      results folder; each step's exit code and time go to OUT/steps.txt
#
# A failed step does not stop the others. PoCL ("cpu cpu", PoCL >= 4) serves the loop
# comparison, as on the 2-core machine.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"/{run-vs-loop,bench,axpy-vs-pytorch}
: >"$out/steps.txt"
commit=$("$bin/clmulti" --version | sed -n 's/.*commit \([0-9a-f]*\).*/\1/p' | cut -c1-7)

step() {
  local name=$1 limit=$2 t0=$SECONDS
  shift 2
  echo "== $name" >&2
  timeout --kill-after=10 "$limit" "$@"
  printf '%-22s rc=%-3s %4s s\n' "$name" "$?" "$((SECONDS - t0))" >>"$out/steps.txt"
}

scripts/gpu-node-setup.sh 1 "$bin/clmulti" || exit 1
step devices 30 bash -c "'$bin/clmulti' devices >'$out/devices.txt' 2>&1"
step diagnose 150 bash -c "'$bin/clmulti' diagnose --device nvidia:0 --out '$out/diagnose' >'$out/diagnose.txt' 2>&1"
step sweep 90 "$bin/xtask" sweep configs --bin "$bin/clmulti" --out "$out/sweep" --force
for i in 1 2 3; do
  step "run-vs-loop-$i" 90 env OCL_ICD_VENDORS=/etc/OpenCL/vendors/pocl.icd POCL_DEVICES="cpu cpu" \
    bash -c "bench/run-vs-loop.sh --bin '$bin' --rounds 15 --tracer both >'$out/run-vs-loop/$commit-traced-untraced-$i.txt' 2>&1"
done
for i in 1 2 3; do
  step "bench-$i" 100 bash -c "'$bin/clmulti' bench --device nvidia:0 --rounds 61 >'$out/bench/$commit-bench-nvidia-$i.txt' 2>&1"
done
step axpy-vs-pytorch 100 bash -c "scripts/gpu-compare.sh --bin '$bin' --gpus 1 --rounds 3 268435456 >'$out/axpy-vs-pytorch/$commit-axpy-1gpu-vs-torch.txt' 2>&1"
cat "$out/steps.txt"
