#!/usr/bin/env bash
# NEO 26.27's Level Zero driver (Debian unstable's libze-intel-gpu1, the loader libze1,
# its headers libze-dev), a C compiler and SYCL (PyPI's dpctl, intel-sycl-rt,
# intel-cmplr-lib-ur in /opt/sycl) beside its OpenCL driver, in a Debian unstable root
# folder of its own, and bench/level-zero/peer_resident.c built there
# (target/level-zero/). The folder is a debootstrap (apt and pip run inside it), not one
# of scripts/intel-gpu-versions.sh's unpacked folders, which have neither.
#
#   scripts/level-zero-next.sh setup      # once: debootstrap, install, build (minutes)
#   scripts/level-zero-next.sh run CMD... # scripts/intel-gpu-next.sh run-kernel-path there
#
# Needs root (sudo when not root) and a Debian mirror: $DEBIAN_MIRROR (default
# http://deb.debian.org/debian).
# Env: CLMULTI_LEVEL_ZERO_NEXT_DIR  the folder (default neo-sid-ze beside
#                                   scripts/intel-gpu-versions.sh's folders:
#                                   $CLMULTI_NEO_ROOTS, or <repo>/.neo-roots)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${CLMULTI_LEVEL_ZERO_NEXT_DIR:-${CLMULTI_NEO_ROOTS:-$repo/.neo-roots}/neo-sid-ze}
opencl="ocl-icd-libopencl1 clinfo intel-opencl-icd"
packages="libze-intel-gpu1 libze1 libze-dev gcc libc6-dev python3 python3-venv python3-pip"
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi

die() {
  echo "level-zero-next: $*" >&2
  exit 1
}

# Debian unstable with NEO's OpenCL and Level Zero drivers, and SYCL in /opt/sycl.
build() {
  if ! command -v debootstrap >/dev/null 2>&1; then
    echo "level-zero-next: installing debootstrap" >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
  fi
  echo "level-zero-next: debootstrap of Debian unstable with $opencl $packages into $dir/root (minutes)" >&2
  mkdir -p "$dir"
  [ -f "$dir/.gitignore" ] || printf '*\n' >"$dir/.gitignore"
  $sudo rm -rf "$dir/root" "$dir/.installed"
  $sudo debootstrap --variant=minbase --include="$(tr ' ' ',' <<<"$opencl $packages")" sid \
    "$dir/root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$dir/debootstrap.log" 2>&1 || {
    tail -5 "$dir/debootstrap.log" >&2
    die "debootstrap failed (log: $dir/debootstrap.log)"
  }
  # What scripts/intel-gpu-versions.sh's `run` looks for: NEO's version.
  $sudo chroot "$dir/root" dpkg-query -W -f='${Version}\n' intel-opencl-icd >"$dir/.installed"
  # SYCL: Intel's runtime and its Level Zero adapter, through dpctl's prebuilt
  # bindings (PyPI has no SYCL compiler), in a venv (/opt/sycl); pip trusts what the
  # host's pip trusts.
  $sudo cp "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$dir/root/opt/host-ca.crt"
  $sudo chroot "$dir/root" python3 -m venv /opt/sycl
  $sudo chroot "$dir/root" env PIP_CERT=/opt/host-ca.crt /opt/sycl/bin/pip install -q dpctl
  $sudo chroot "$dir/root" dpkg-query -W -f='${Package} ${Version}\n' $packages >"$dir/.installed-ze"
}

case "${1:-}" in
setup)
  [ -f "$dir/.installed-ze" ] || build
  mkdir -p "$repo/target/level-zero"
  cd "$repo"
  CLMULTI_INTEL_GPU_NEXT_DIR=$dir scripts/intel-gpu-next.sh run-kernel-path \
    gcc -O2 -Wall -o target/level-zero/peer_resident bench/level-zero/peer_resident.c -lze_loader
  echo "level-zero-next: $(tr '\n' ' ' <"$dir/.installed-ze")ready in $dir" >&2
  ;;
run)
  shift
  [ -f "$dir/.installed-ze" ] || die "not set up: run $0 setup"
  CLMULTI_INTEL_GPU_NEXT_DIR=$dir exec "$repo/scripts/intel-gpu-next.sh" run-kernel-path "$@"
  ;;
*)
  echo "usage: $0 setup | run COMMAND [ARGS...]" >&2
  exit 2
  ;;
esac
