#!/usr/bin/env bash
# What results/intel-neo-i915 holds: Intel's GPU runtime NEO 22.43 (Debian's
# intel-opencl-icd) on its real kernel-driver path over clmulti's emulated i915 driver
# (`clmulti emulate`), beside NEO 26.27 on the same emulation:
#   seed-*.txt           the seed's own program (bench/seed), 1 and 2 GPUs, soft nofile 1024
#                        (NEO 22.43; seed-2-gpu-neo-26.27.txt: NEO 26.27)
#   diagnose-26.27/      clmulti diagnose on NEO 26.27, 2 devices
#   diagnose-N-devices/  clmulti diagnose on NEO 22.43, N = 2, 4, 8, with 26.27 beside it
#   sweep/               cargo xtask sweep configs/intel-neo-i915
# Each folder has index.html, diagnose.md, diagnose.json and runs.jsonl; steps.txt the
# time of each step.
#
#   scripts/neo-i915-results.sh [BIN_DIR] [OUT]
# Needs scripts/setup-intel-gpu.sh (NEO 22.43) and scripts/intel-gpu-next.sh setup
# (NEO 26.27), and release builds of clmulti, xtask and the emulated driver.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=$(cd "${1:-target/release}" && pwd)
out=${2:-results/intel-neo-i915}
mkdir -p "$out"
: >"$out/steps.txt"
# The seed's setting: a soft descriptor limit of 1024 (the hard one stays).
ulimit -Sn 1024
export OCL_ICD_VENDORS=$PWD/.intel-gpu/vendors
unset POCL_DEVICES LD_PRELOAD

step() {
    local name=$1 start=$SECONDS
    shift
    "$@"
    echo "$name: $((SECONDS - start)) s" >>"$out/steps.txt"
}

# Inside the repository: scripts/intel-gpu-next.sh runs from inside it only.
mkdir -p target
seed=$(mktemp -d -p "$PWD/target")
cp bench/seed/OpenCLMulti.cpp bench/seed/OpenCLKernels.cl "$seed"
(cd "$seed" && gcc -D CL_TARGET_OPENCL_VERSION=220 -O2 -o OpenCLMulti OpenCLMulti.cpp -lOpenCL -lm)
for gpus in 1 2; do
    step "seed, $gpus GPU(s)" bash -c "cd '$seed' && '$bin/clmulti' emulate --devices $gpus -- ./OpenCLMulti --gpus $gpus 2>&1 | tail -n 4 >'$PWD/$out/seed-$gpus-gpu.txt'" || true
done

step "seed, 2 GPUs, NEO 26.27" bash -c "cd '$seed' && '$PWD/scripts/intel-gpu-next.sh' run-kernel-path '$bin/clmulti' emulate --devices 2 -- ./OpenCLMulti --gpus 2 2>&1 | tail -n 4 >'$PWD/$out/seed-2-gpu-neo-26.27.txt'" || true
step "diagnose, NEO 26.27, 2 devices" scripts/intel-gpu-next.sh run-kernel-path \
    "$bin/clmulti" emulate --devices 2 -- "$bin/clmulti" diagnose --count 3000 \
    --out "$out/diagnose-26.27" >"$out/diagnose-26.27.txt"
for n in 2 4 8; do
    step "diagnose, NEO 22.43, $n devices" "$bin/clmulti" emulate --devices "$n" -- \
        "$bin/clmulti" diagnose --count 3000 --compare "$out/diagnose-26.27/diagnose.json" \
        --out "$out/diagnose-$n-devices" >"$out/diagnose-$n-devices.txt"
done
# The sweep lists the machine's devices first: under the emulation, as its runs are
# (each run's [env] sets its own device count).
step "sweep" "$bin/clmulti" emulate --devices 8 -- "$bin/xtask" sweep configs/intel-neo-i915 \
    --bin "$bin/clmulti" --out "$out/sweep" --force
rm -rf "$seed"
