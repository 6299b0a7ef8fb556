#!/usr/bin/env bash
# NEO 26.27's Level Zero driver (Debian unstable's libze-intel-gpu1, the loader libze1,
# its headers libze-dev), a C compiler and SYCL (PyPI's dpctl, intel-sycl-rt,
# intel-cmplr-lib-ur in /opt/sycl), in a copy of scripts/intel-gpu-next.sh's
# root folder, and bench/level-zero/peer_resident.c built there (target/level-zero/).
#
#   scripts/level-zero-next.sh setup      # once: copy, apt-get install, build (minutes)
#   scripts/level-zero-next.sh run CMD... # scripts/intel-gpu-next.sh run-kernel-path there
#
# Env: CLMULTI_INTEL_GPU_NEXT_DIR   the OpenCL root folder to copy (default <repo>/.intel-gpu-next)
#      CLMULTI_LEVEL_ZERO_NEXT_DIR  where the copy goes (default <that>-ze)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
base=${CLMULTI_INTEL_GPU_NEXT_DIR:-$repo/.intel-gpu-next}
dir=${CLMULTI_LEVEL_ZERO_NEXT_DIR:-${base%/}-ze}
packages="libze-intel-gpu1 libze1 libze-dev gcc libc6-dev python3 python3-venv python3-pip"
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi

case "${1:-}" in
setup)
  if [ ! -f "$dir/.installed-ze" ]; then
    [ -f "$base/.installed" ] || CLMULTI_INTEL_GPU_NEXT_DIR=$base "$repo/scripts/intel-gpu-next.sh" setup
    echo "level-zero-next: copying $base to $dir and installing $packages (minutes)" >&2
    $sudo rm -rf "$dir"
    mkdir -p "$dir"
    $sudo cp -a "$base/root" "$dir/root"
    cp "$base/.installed" "$dir/.installed"
    printf '*\n' >"$dir/.gitignore"
    # The unstable suite's Release file may be past its date on an old mirror snapshot.
    $sudo chroot "$dir/root" env DEBIAN_FRONTEND=noninteractive apt-get -qq \
      -o Acquire::Check-Valid-Until=false update
    $sudo chroot "$dir/root" env DEBIAN_FRONTEND=noninteractive apt-get -y -qq \
      -o Acquire::Check-Valid-Until=false install --no-install-recommends $packages >/dev/null
    # SYCL: Intel's runtime and its Level Zero adapter, through dpctl's prebuilt
    # bindings (PyPI has no SYCL compiler), in a venv (/opt/sycl); pip trusts what the
    # host's pip trusts.
    $sudo cp "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$dir/root/opt/host-ca.crt"
    $sudo chroot "$dir/root" python3 -m venv /opt/sycl
    $sudo chroot "$dir/root" env PIP_CERT=/opt/host-ca.crt /opt/sycl/bin/pip install -q dpctl
    $sudo chroot "$dir/root" dpkg-query -W -f='${Package} ${Version}\n' $packages >"$dir/.installed-ze"
  fi
  mkdir -p "$repo/target/level-zero"
  cd "$repo"
  CLMULTI_INTEL_GPU_NEXT_DIR=$dir scripts/intel-gpu-next.sh run-kernel-path \
    gcc -O2 -Wall -o target/level-zero/peer_resident bench/level-zero/peer_resident.c -lze_loader
  echo "level-zero-next: $(tr '\n' ' ' <"$dir/.installed-ze")ready in $dir" >&2
  ;;
run)
  shift
  CLMULTI_INTEL_GPU_NEXT_DIR=$dir exec "$repo/scripts/intel-gpu-next.sh" run-kernel-path "$@"
  ;;
*)
  echo "usage: $0 setup | run COMMAND [ARGS...]" >&2
  exit 2
  ;;
esac
