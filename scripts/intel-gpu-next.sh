#!/usr/bin/env bash
# The newest Intel GPU runtime NEO Debian ships (unstable's intel-opencl-icd:
# 26.27.39122.14 when this was written: libigc2, glibc >= 2.38), in its root folder of
# scripts/intel-gpu-versions.sh (which builds it), run in AUB mode with emulated Arc (DG2)
# devices or on its kernel-driver path.
#
#   scripts/intel-gpu-next.sh setup                  # the root folder, once (cached)
#   scripts/intel-gpu-next.sh run clinfo -l          # a command inside: NEO alone, 2 devices
#   CLMULTI_NEO_DEVICES=8 scripts/intel-gpu-next.sh run target/release/clmulti devices
#   scripts/intel-gpu-next.sh run target/release/xtask sweep configs/intel-neo \
#       --bin target/release/clmulti --out results/intel-neo-26.27/sweep
#   scripts/intel-gpu-next.sh run-kernel-path target/release/clmulti emulate -- clinfo -l
#       # NEO's kernel-driver path instead of AUB mode: no AUB keys; the command
#       # preloads clmulti's emulated i915 driver itself (clmulti emulate, or a
#       # scenario's LD_PRELOAD = "{clmulti-kmd-emu}")
#
# Why a root folder: NEO 26 needs glibc 2.38 and clmulti starts children that load it
# too, so everything must use one dynamic loader (scripts/intel-gpu-versions.sh says how
# the folder is made and entered).
#
# The keys NEO 26 needs in AUB mode beyond those of NEO 22.43 (scripts/setup-intel-gpu.sh),
# found 2026-12-01 with gdb and the source at tag 26.27.39122.14:
# - UseAubStream=0: Debian builds NEO without Intel's aub_stream library, so
#   createAubManager() returns null and AubCenter's constructor calls setCCSMode() on it
#   (shared/source/aub/aub_center.cpp): SIGSEGV inside clIcdGetPlatformIDsKHR with
#   SetCommandStreamReceiver 1, 2 or 4, for every product tried (dg2, tgllp, adlp, adls,
#   mtl, arl, lnl, bmg, ptl, pvc, dg1).
# - HardwareInfoOverride=8x4x16 (slices x subslices x EUs: an A770's 512 EUs): without it
#   NEO 26 refuses modes other than hardware ("Missing override for hardware info").
# NEO 26 in this mode accepts kernels (largest work-group 1024, clEnqueueNDRangeKernel
# CL_SUCCESS) but records them and executes none: a kernel that doubles its input leaves
# it unchanged.
#
# Env: CLMULTI_INTEL_GPU_NEXT_DIR  the folder (default: scripts/intel-gpu-versions.sh's
#                                  for sid, <repo>/.neo-roots/neo-sid)
#      CLMULTI_NEO_DEVICES         emulated devices for `run` (default 2)
set -euo pipefail

versions=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/intel-gpu-versions.sh

case "${1:-}" in
setup) exec "$versions" setup sid ;;
run)
  shift
  # AUB mode, NEO alone.
  export NEOReadDebugKeys=1 SetCommandStreamReceiver=1 ProductFamilyOverride=dg2
  export HardwareInfoOverride=8x4x16 UseAubStream=0 AUBDumpCaptureFileName=/dev/null
  export CreateMultipleRootDevices=${CLMULTI_NEO_DEVICES:-2}
  exec "$versions" run sid "$@"
  ;;
run-kernel-path)
  shift
  exec "$versions" run sid "$@"
  ;;
*)
  echo "usage: $0 setup | run COMMAND [ARGS...] | run-kernel-path COMMAND [ARGS...]" >&2
  exit 2
  ;;
esac
