#!/usr/bin/env bash
# What results/intel-neo-xe holds: Intel's GPU runtime NEO 26.27 (Debian unstable's
# intel-opencl-icd and libze-intel-gpu1) on its real kernel-driver path over clmulti's
# emulated xe driver (`clmulti emulate --driver xe`: Arc B580s, 12 GiB each):
#   seed-2-gpu.txt             the seed's own program (bench/seed), 2 GPUs, soft nofile 1024
#   seed-2-gpu-counts.txt      the emulated driver's counts at its exit
#   diagnose-N-devices/        clmulti diagnose, N = 2, 4, 8 (4 and 8 without experiments)
#   defer-backing-off/         clmulti diagnose at 2 devices, NEOReadDebugKeys=1 EnableDeferBacking=0
#   level-zero-{xe,i915}.txt   bench/level-zero/peer_resident.c on 2 devices (i915: A770s)
#   sycl-xe.txt                bench/sycl/peer_access.py (dpctl: malloc_device on one, read from the other)
#   level-zero-xe-defer-off.txt  the same with EnableDeferBacking=0; -not-resident.txt: no peer residency
# steps.txt gives the time of each step.
#
#   scripts/neo-xe-results.sh [BIN_DIR] [OUT]
# Needs the unstable root folder with Level Zero (scripts/level-zero-next.sh setup, which
# also builds the probe), and release builds of clmulti and the emulated driver
# (cargo build --release -p clmulti -p clmulti-kmd-emu).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=$(cd "${1:-target/release}" && pwd)
out=${2:-results/intel-neo-xe}
# Each command inside the Level Zero root folder (CLMULTI_LEVEL_ZERO_NEXT_DIR says where).
next=scripts/level-zero-next.sh
mkdir -p "$out" target
: >"$out/steps.txt"
ulimit -Sn 1024
unset POCL_DEVICES LD_PRELOAD OCL_ICD_VENDORS

step() {
    local name=$1 start=$SECONDS
    shift
    "$@" || echo "$name: exit $?" >>"$out/steps.txt"
    echo "$name: $((SECONDS - start)) s" >>"$out/steps.txt"
}

seed=$(mktemp -d -p "$PWD/target")
cp bench/seed/OpenCLMulti.cpp bench/seed/OpenCLKernels.cl "$seed"
(cd "$seed" && gcc -D CL_TARGET_OPENCL_VERSION=220 -O2 -o OpenCLMulti OpenCLMulti.cpp -lOpenCL -lm)
step "seed, 2 GPUs" bash -c "cd '$seed' && '$PWD/$next' run '$bin/clmulti' emulate --driver xe --devices 2 --report '$seed/counts.txt' -- ./OpenCLMulti --gpus 2 2>&1 | tail -n 4 >'$PWD/$out/seed-2-gpu.txt'"
cp "$seed/counts.txt" "$out/seed-2-gpu-counts.txt" || true
step "diagnose, 2 devices" $next run "$bin/clmulti" emulate --driver xe --devices 2 -- \
    "$bin/clmulti" diagnose --count 3000 --out "$out/diagnose-2-devices" >"$out/diagnose-2-devices.txt"
for n in 4 8; do
    step "diagnose, $n devices" $next run "$bin/clmulti" emulate --driver xe --devices "$n" -- \
        "$bin/clmulti" diagnose --count 3000 --no-experiments --out "$out/diagnose-$n-devices" >"$out/diagnose-$n-devices.txt"
done
step "diagnose, 2 devices, EnableDeferBacking=0" env NEOReadDebugKeys=1 EnableDeferBacking=0 \
    $next run "$bin/clmulti" emulate --driver xe --devices 2 -- \
    "$bin/clmulti" diagnose --count 3000 --no-experiments --out "$out/defer-backing-off" >"$out/defer-backing-off.txt"
probe=target/level-zero/peer_resident
for driver in xe i915; do
    step "Level Zero, $driver" bash -c "$next run '$bin/clmulti' emulate --driver $driver --devices 2 -- $probe --count 200 >'$out/level-zero-$driver.txt' 2>&1"
done
step "Level Zero, xe, not made resident" bash -c "$next run '$bin/clmulti' emulate --driver xe --devices 2 -- $probe --count 200 --no-resident >'$out/level-zero-xe-not-resident.txt' 2>&1"
step "Level Zero, xe, EnableDeferBacking=0" bash -c "EnableDeferBacking=0 $next run '$bin/clmulti' emulate --driver xe --devices 2 -- $probe --count 200 >'$out/level-zero-xe-defer-off.txt' 2>&1"
step "SYCL, xe" bash -c "COUNT=50 $next run '$bin/clmulti' emulate --driver xe --devices 2 -- /opt/sycl/bin/python bench/sycl/peer_access.py >'$out/sycl-xe.txt' 2>&1"
rm -rf "$seed"
