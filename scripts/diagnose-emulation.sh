#!/usr/bin/env bash
# `clmulti diagnose` under each candidate cause the emulation layer models, with the
# limit that makes it bite, on the platform's first two devices: what results/*/
# diagnose-emulation holds. Each case is one folder (index.html, diagnose.md,
# diagnose.json, runs.jsonl) and one line in OUT/steps.txt with its time.
#
#   scripts/diagnose-emulation.sh [BIN_DIR] [OUT] [DEVICE...]
#     BIN_DIR  holds clmulti and libclmulti_layer.so (default target/release)
#     OUT      results folder (default diagnose-emulation)
#     DEVICE   --device selectors (default: clmulti's own choice)
#
# The cases: fd-per-peer under a soft nofile of 1024 (a confirmed cause); a counter
# that also holds a descriptor per buffer, under a soft nofile just above its
# failure (descriptors at their limit, refuted by raising it); fail-after (a count
# no reading shows: its shape); byte-budget (a byte budget no reading shows);
# host-mirror and eager (kernel-accounted and device memory); leak (memory release
# never frees). The soft nofile needs a hard limit above it (root has one).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bin=${1:-target/release}
out=${2:-diagnose-emulation}
shift 2 2>/dev/null || shift $#
devices=()
for d in "$@"; do devices+=(--device "$d"); done
layer=$(cd "$bin" && pwd)/libclmulti_layer.so
[ -e "$layer" ] || { echo "diagnose-emulation: $layer missing: cargo build --release -p clmulti-layer" >&2; exit 1; }
mkdir -p "$out"
: >"$out/steps.txt"

# case NAME NOFILE COUNT KEY=VALUE...: one diagnose under the layer.
case_() {
  local name=$1 nofile=$2 count=$3; shift 3
  local t0=$SECONDS
  echo "== $name" >&2
  (
    ulimit -S -n "$nofile"
    env OPENCL_LAYERS="$layer" "$@" \
      timeout --kill-after=10 600 "$bin/clmulti" -q diagnose "${devices[@]}" --count "$count" --out "$out/$name" \
      >"$out/$name.txt" 2>&1
  )
  local rc=$?
  printf '%-20s rc=%-3s %4s s  nofile=%s count=%s %s\n' "$name" "$rc" "$((SECONDS - t0))" "$nofile" "$count" "$*" >>"$out/steps.txt"
}

case_ fd-per-peer 1024 2000 CLMULTI_LAYER_POLICY=fd-per-peer
case_ counter-with-fds 1015 2000 CLMULTI_LAYER_POLICY=fail-after,fd-per-peer CLMULTI_LAYER_FAIL_AFTER=1000
case_ fail-after 4096 2000 CLMULTI_LAYER_POLICY=fail-after CLMULTI_LAYER_FAIL_AFTER=1000
case_ byte-budget 4096 2000 CLMULTI_LAYER_POLICY=byte-budget CLMULTI_LAYER_BYTE_BUDGET=512MiB
case_ host-mirror 4096 1000 CLMULTI_LAYER_POLICY=host-mirror CLMULTI_LAYER_MIRROR_LIMIT=256MiB
case_ eager 4096 1000 CLMULTI_LAYER_POLICY=eager CLMULTI_LAYER_DEVICE_MEMORY=128MiB
case_ leak 4096 500 CLMULTI_LAYER_POLICY=leak
cat "$out/steps.txt"
