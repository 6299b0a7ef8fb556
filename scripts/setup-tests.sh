#!/usr/bin/env bash
# Installs everything the test suite runs against, on Debian/Ubuntu: the OpenCL
# loader and PoCL (setup-opencl.sh), Mesa's rusticl (broken profiling events) and
# oclgrind (hangs through the loader), Intel's OpenCL CPU runtime into .intel-opencl/
# (setup-intel-opencl.sh), Intel's GPU runtime NEO with a vendors folder in .intel-gpu/
# (setup-intel-gpu.sh: its AUB mode emulates Arc GPUs), the oldest and newest NEO Debian
# ships in root folders of their own (intel-gpu-versions.sh: bullseye's 20.44 and
# unstable's 26.27, about 40 s and 0.8 GB from a fresh machine; unstable's is also the
# one intel-gpu-next.sh runs, for the xe emulation's test), Debian's chromium for the
# report's browser test, and for the three-node cluster the Slurm tests start
# (scripts/slurm/local-cluster.sh): Slurm with munge, iproute2 (network namespaces,
# veths, a bridge), util-linux (unshare, nsenter) and procps; strace, the system-call
# observer diagnose watches a failing replicate with.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The runtimes take about 2 GiB here and the test build about 6 more: say so before a
# download fails half-way on a full disk.
free_kib=$(df -Pk "$here/.." | awk 'NR==2 {print $4}')
if [ "${free_kib:-0}" -lt $((8 << 20)) ]; then
  echo "setup-tests: only $((free_kib >> 20)) GiB free under $(cd "$here/.." && pwd); the runtimes and the test build need about 8 GiB" >&2
fi

"$here/setup-opencl.sh"

packages=(g++ strace libdrm-dev mesa-opencl-icd oclgrind chromium fonts-dejavu-core slurmd slurmctld slurm-client munge iproute2 util-linux procps python3-pip)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  echo "setup-tests: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  # Debian starts daemons on install where it can; the tests start their own.
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

"$here/setup-intel-opencl.sh" >&2
"$here/setup-intel-gpu.sh" >&2
# sid's folder is intel-gpu-next.sh's too (NEO 26.27: the xe test runs it).
"$here/intel-gpu-versions.sh" setup bullseye sid >&2
