#!/usr/bin/env bash
# Installs what clmulti needs to build and run on Debian/Ubuntu: the ICD loader
# (cl-sys links -lOpenCL at build time), its headers, clinfo and PoCL (CPU devices).
# Idempotent: returns at once when everything is present. Uses sudo only when not root.
set -euo pipefail

packages=(ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-headers clinfo pocl-opencl-icd build-essential pkg-config)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
echo "setup-opencl: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
