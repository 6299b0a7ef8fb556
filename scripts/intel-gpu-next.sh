#!/usr/bin/env bash
# A newer Intel GPU runtime NEO than the host's: Debian unstable's intel-opencl-icd
# (26.27.39122.14 when this was written: libigc2, glibc >= 2.43) in a minimal Debian
# unstable root folder, run in AUB mode with emulated Arc (DG2) devices.
#
#   scripts/intel-gpu-next.sh setup                  # debootstrap, once (~900 MB, minutes)
#   scripts/intel-gpu-next.sh run clinfo -l          # a command inside: NEO alone, 2 devices
#   CLMULTI_NEO_DEVICES=8 scripts/intel-gpu-next.sh run target/release/clmulti devices
#   scripts/intel-gpu-next.sh run target/release/xtask sweep configs/intel-neo \
#       --bin target/release/clmulti --out results/intel-neo-26.27/sweep
#   scripts/intel-gpu-next.sh run-kernel-path target/release/clmulti emulate -- clinfo -l
#       # NEO's kernel-driver path instead of AUB mode: no AUB keys; the command
#       # preloads clmulti's emulated i915 driver itself (clmulti emulate, or a
#       # scenario's LD_PRELOAD = "{clmulti-kmd-emu}")
#
# Why a root folder: NEO 26 needs glibc 2.43 and clmulti starts children that load it
# too, so everything must use one dynamic loader. `run` enters the folder in a private
# mount namespace (unshare -m: nothing stays mounted afterwards) with /proc, /dev, /sys
# and this repository bind-mounted at their own paths, in the current folder (which must
# be inside the repository); binaries built on the host run there (glibc is backward
# compatible). Inside, /etc/OpenCL/vendors holds NEO only.
#
# The keys NEO 26 needs beyond those of NEO 22.43 (scripts/setup-intel-gpu.sh), found
# 2026-12-01 with gdb and the source at tag 26.27.39122.14:
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
# Needs root (sudo when not root): debootstrap, chroot, unshare. A Debian mirror:
# $DEBIAN_MIRROR (default http://deb.debian.org/debian).
# Env: CLMULTI_INTEL_GPU_NEXT_DIR  the folder (default <repo>/.intel-gpu-next)
#      CLMULTI_NEO_DEVICES         emulated devices for `run` (default 2)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${CLMULTI_INTEL_GPU_NEXT_DIR:-$repo/.intel-gpu-next}
root=$dir/root
lib=$root/usr/lib/x86_64-linux-gnu/intel-opencl/libigdrcl.so
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi

# Inside the root folder, before the command: AUB mode, NEO alone.
neo_env='export NEOReadDebugKeys=1 SetCommandStreamReceiver=1 ProductFamilyOverride=dg2
export HardwareInfoOverride=8x4x16 UseAubStream=0 AUBDumpCaptureFileName=/dev/null
export CreateMultipleRootDevices=${CLMULTI_NEO_DEVICES:-2}
unset OCL_ICD_VENDORS OCL_ICD_FILENAMES'

setup() {
  mkdir -p "$dir"
  [ -f "$dir/.gitignore" ] || printf '*\n' >"$dir/.gitignore"
  if [ ! -f "$dir/.installed" ] || [ ! -f "$lib" ]; then
    if ! command -v debootstrap >/dev/null 2>&1; then
      echo "intel-gpu-next: installing debootstrap" >&2
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
    fi
    local packages=ocl-icd-libopencl1,clinfo,intel-opencl-icd
    echo "intel-gpu-next: debootstrap of Debian unstable with $packages into $root (minutes)" >&2
    $sudo rm -rf "$root" "$dir/.installed"
    $sudo debootstrap --variant=minbase --include="$packages" sid "$root" \
      "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$dir/debootstrap.log" 2>&1 || {
      tail -5 "$dir/debootstrap.log" >&2
      echo "intel-gpu-next: debootstrap failed (log: $dir/debootstrap.log)" >&2
      exit 1
    }
    [ -f "$lib" ] || { echo "intel-gpu-next: $lib missing after debootstrap" >&2; exit 1; }
    $sudo chroot "$root" dpkg-query -W -f='${Version}\n' intel-opencl-icd >"$dir/.installed"
  fi
  local out
  out=$(cd "$repo" && CLMULTI_NEO_DEVICES=2 "$0" run clinfo -l 2>&1) || {
    printf '%s\n' "$out" >&2
    echo "intel-gpu-next: clinfo failed inside $root" >&2
    exit 1
  }
  if [ "$(grep -c 'Device #' <<<"$out")" != 2 ]; then
    printf '%s\n' "$out" >&2
    echo "intel-gpu-next: NEO $(cat "$dir/.installed") did not list two emulated devices" >&2
    exit 1
  fi
  echo "intel-gpu-next: NEO $(cat "$dir/.installed") ready. Use:  scripts/intel-gpu-next.sh run clinfo -l" >&2
}

case "${1:-}" in
setup) setup ;;
run | run-kernel-path)
  [ "$1" = run-kernel-path ] && export CLMULTI_NEO_KERNEL_PATH=1
  shift
  [ $# -gt 0 ] || { echo "usage: $0 run COMMAND [ARGS...]" >&2; exit 2; }
  [ -f "$lib" ] || { echo "intel-gpu-next: not set up: run $0 setup" >&2; exit 1; }
  case "$PWD/" in "$repo"/*) ;; *) echo "intel-gpu-next: run it from inside $repo" >&2; exit 2 ;; esac
  exec $sudo unshare -m "$0" __enter "$PWD" "$@"
  ;;
__enter) # in the private mount namespace
  shift
  cwd=$1
  shift
  mount --make-rprivate /
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --rbind /sys "$root/sys"
  mkdir -p "$root$repo"
  mount --bind "$repo" "$root$repo"
  setting=$neo_env
  [ "${CLMULTI_NEO_KERNEL_PATH:-}" = 1 ] && setting='unset OCL_ICD_VENDORS OCL_ICD_FILENAMES'
  exec chroot "$root" /bin/bash -c "$setting"'
cd "$1" && shift && exec "$@"' run "$cwd" "$@"
  ;;
*)
  echo "usage: $0 setup | run COMMAND [ARGS...] | run-kernel-path COMMAND [ARGS...]" >&2
  exit 2
  ;;
esac
