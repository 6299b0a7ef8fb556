#!/usr/bin/env bash
# What results/intel-neo-versions holds: every Intel GPU runtime NEO Debian ships
# (scripts/intel-gpu-versions.sh list), each in its root folder, on its kernel-driver
# path over clmulti's emulated i915 driver (`clmulti emulate`), with the seed's Arc A770
# and with an integrated Alder Lake-S (the newest GPU NEO 20.44 lists; every version
# after it lists it too, so that row compares versions on one device). Per version and
# device, a folder NEO-MODEL/ with:
#   devices.txt          what NEO lists (clinfo -l), or its message when it lists none
#   seed-N-gpu.txt       the seed's own program (bench/seed), N = 1, 2, soft nofile 1024
#   diagnose/, .txt      clmulti diagnose, 2 devices, soft nofile 1024, compared with the
#                        next newer version on the same device (--compare)
#   counts.jsonl         configs/intel-neo-versions/counts.toml: per 1 MiB buffer at 2, 4
#                        and 8 devices, shared and one context per device, create and fill
#   host-copy-N.txt      bench/host_copy.c at N = 2, 4, 8 devices: the process's memory
#                        after create, fill on device 0, fill on device 1 (data moving)
#   cgroup.txt           host_copy at 2 devices in a memory cgroup of $CGROUP_LIMIT (1 GiB)
#                        while each device declares 16 GiB: where the shared context stops
# then `xtask neo-versions` writes versions.md and versions.json from them; steps.txt has
# the time of each step.
#
#   scripts/neo-versions-results.sh [BIN_DIR] [OUT]
# Needs release builds of clmulti, xtask and the emulated driver, root (namespaces, a
# memory cgroup), and the root folders (built here when missing: CLMULTI_NEO_ROOTS).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=$(cd "${1:-target/release}" && pwd)
out=${2:-results/intel-neo-versions}
versions=$PWD/scripts/intel-gpu-versions.sh
limit=${CGROUP_LIMIT:-1073741824}
mkdir -p "$out"
out=$(cd "$out" && pwd)
: >"$out/steps.txt"
{
  echo "host $(hostname)"
  echo "$(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
  echo "$(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) RAM, no GPU"
  echo "$(date -u '+%Y-%m-%d %H:%M UTC')"
  "$bin/clmulti" --version
} >"$out/machine.txt"
unset POCL_DEVICES LD_PRELOAD OCL_ICD_VENDORS
start=$SECONDS

step() {
  local name=$1 began=$SECONDS
  shift
  "$@" || echo "$name: exit $?" >>"$out/steps.txt"
  echo "$name: $((SECONDS - began)) s" >>"$out/steps.txt"
}

# The programs, built on the host inside the repository (bound into every root folder).
mkdir -p target
work=$(mktemp -d -p "$PWD/target")
trap 'rm -rf "$work"' EXIT
cp bench/seed/OpenCLMulti.cpp bench/seed/OpenCLKernels.cl "$work"
(cd "$work" && gcc -D CL_TARGET_OPENCL_VERSION=220 -O2 -o OpenCLMulti OpenCLMulti.cpp -lOpenCL -lm)
gcc -O2 -o "$work/host_copy" bench/host_copy.c -lOpenCL

# Each NEO once, from the last suite that ships it (unstable's folder serves testing's).
declare -A suite_of
order=()
while read -r suite neo; do
  [ -n "$neo" ] || continue
  [ -n "${suite_of[$neo]:-}" ] || order+=("$neo")
  suite_of[$neo]=$suite
done < <("$versions" list | tail -n +2)
"$versions" setup "${suite_of[@]}"

# `emulate SUITE MODEL DEVICES NOFILE CMD...` in folder $work: CMD on NEO's kernel path.
emulate() {
  local suite=$1 model=$2 devices=$3 nofile=$4
  shift 4
  (cd "${here:-$work}" && ulimit -Sn "$nofile" && "$versions" run "$suite" \
    "$bin/clmulti" emulate --model "$model" --devices "$devices" -- "$@")
}

# A memory cgroup for one command (v2 memory.max, else v1 memory.limit_in_bytes), its
# OOM kills said after the command's own output.
in_memory_cgroup() {
  local cg own
  if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    own=$(sed -n 's/^0:://p' /proc/self/cgroup)
    cg=/sys/fs/cgroup$own/clmulti-neo-$$
    mkdir "$cg" && echo "$limit" >"$cg/memory.max"
  else
    own=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
    cg=/sys/fs/cgroup/memory$own/clmulti-neo-$$
    mkdir "$cg" && echo "$limit" >"$cg/memory.limit_in_bytes"
  fi
  local status=0
  (echo "$BASHPID" >"$cg/cgroup.procs" && "$@") || status=$?
  echo "exit=$status limit=$limit"
  grep -h 'oom_kill ' "$cg/memory.events" "$cg/memory.oom_control" 2>/dev/null || true
  rmdir "$cg"
}

# The steps of one row, each writing its file in $row.
# The seed's last lines (clmulti's own note left out); a silent exit says its status.
seed() {
  local status=0 said
  said=$(emulate "$suite" "$model" "$1" 1024 ./OpenCLMulti --gpus "$1" 2>&1) || status=$?
  said=$(grep -v '^clmulti emulate: ' <<<"$said" | tail -n 4)
  printf '%s\n' "${said:-(no output; exit status $status)}" >"$row/seed-$1-gpu.txt"
}
# From the repository, with paths relative to it: the page names what it compares with.
diagnose() {
  here=$PWD emulate "$suite" "$model" 2 1024 "$bin/clmulti" diagnose --count 3000 "$@" \
    --out "${row#"$PWD"/}/diagnose" >"$row/diagnose.txt"
}
counts() {
  emulate "$suite" "$model" 8 4096 "$bin/clmulti" run "$PWD/configs/intel-neo-versions/counts.toml" \
    --format json -q >"$row/counts.jsonl"
}
host_copy() { emulate "$suite" "$model" "$1" 4096 ./host_copy "$1" 800 1048576 >"$row/host-copy-$1.txt" 2>/dev/null; }
bounded() {
  in_memory_cgroup emulate "$suite" "$model" 2 8192 ./host_copy 2 3000 1048576 >"$row/cgroup.txt" 2>"$row/cgroup.err"
  grep progress= "$row/cgroup.err" | tail -n 1 >>"$row/cgroup.txt"
  rm -f "$row/cgroup.err"
}

measure() {
  neo=$1 model=$2 suite=${suite_of[$1]} row=$out/$1-$2
  local newer=$3
  mkdir -p "$row"
  printf 'suite=%s\npackage=%s\nmodel=%s\n' "$suite" "$neo" "$model" >"$row/meta.txt"
  # What NEO lists, and why not when it lists nothing (its own debug message).
  NEOReadDebugKeys=1 PrintDebugMessages=1 emulate "$suite" "$model" 2 1024 clinfo -l 2>&1 |
    grep -E 'Platform #|Device #|Unknown device' >"$row/devices.txt" || true
  step "$neo $model: seed, 1 GPU" seed 1
  step "$neo $model: seed, 2 GPUs" seed 2
  grep -q 'Device #1' "$row/devices.txt" || return 0
  local compare=()
  [ -n "$newer" ] && compare=(--compare "${newer#"$PWD"/}/diagnose/diagnose.json")
  step "$neo $model: diagnose, 2 devices" diagnose "${compare[@]}"
  step "$neo $model: counts" counts
  for n in 2 4 8; do step "$neo $model: host copy, $n devices" host_copy "$n"; done
  step "$neo $model: host copy in a memory cgroup of $limit bytes" bounded
}

# Newest first: each version's diagnose is compared with the next newer one on the same
# device (--compare), which measures the upgrade a fix names.
for model in adl-s a770; do
  newer=""
  for ((i = ${#order[@]} - 1; i >= 0; i--)); do
    neo=${order[$i]}
    measure "$neo" "$model" "$newer"
    grep -q 'Device #1' "$out/$neo-$model/devices.txt" && newer=$out/$neo-$model
  done
done
step "table" "$bin/xtask" neo-versions "$out"
echo "all: $((SECONDS - start)) s" >>"$out/steps.txt"
