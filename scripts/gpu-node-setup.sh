#!/usr/bin/env bash
# Prepares a GPU node for clmulti: registers the vendor's OpenCL ICD with the loader
# when the driver is installed but its ICD file is missing (common in containers and
# on cluster nodes), then checks that the expected number of devices is visible.
#
#   scripts/gpu-node-setup.sh [options] [EXPECTED_DEVICES] [CLMULTI_BINARY]
#     --env            print `export OCL_ICD_VENDORS=...` on stdout (for eval) when the
#                      ICD had to go into a folder this job owns; all else goes to stderr
#     --user           never write /etc/OpenCL/vendors, even when it is writable
#     --icd LIB        the ICD library (default: the NVIDIA driver's libnvidia-opencl.so.1)
#     --platform NAME  count devices on platforms whose name contains NAME (default NVIDIA)
#
# Without root (a Slurm job), /etc/OpenCL/vendors is read-only: the system's .icd files
# and the new one are copied into $CLMULTI_ICD_DIR (default
# ${TMPDIR:-/tmp}/clmulti-icd-$USER-${SLURM_JOB_ID:-$$}) and OCL_ICD_VENDORS points there,
# so the platforms already registered stay visible. Typical uses:
#   scripts/gpu-node-setup.sh 2                                  # root: writes /etc
#   eval "$(scripts/gpu-node-setup.sh --env 2)"                  # in a job script
# Exits non-zero, saying why, when fewer devices than expected are visible.
set -euo pipefail

env_mode=0 user_mode=0 lib="" platform=NVIDIA
while (($#)); do
  case $1 in
    --env) env_mode=1; shift ;;
    --user) user_mode=1; shift ;;
    --icd) lib=$2; shift 2 ;;
    --platform) platform=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "gpu-node-setup: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
expected=${1:-1}
clmulti=${2:-target/release/clmulti}
vendors=${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}
say() { echo "gpu-node-setup: $*" >&2; }

if [ -z "$lib" ]; then
  for candidate in /usr/lib/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 \
                   /usr/lib64/libnvidia-opencl.so.1 /usr/local/nvidia/lib64/libnvidia-opencl.so.1; do
    if [ -e "$candidate" ]; then lib=$candidate; break; fi
  done
  [ -n "$lib" ] || lib=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl.so.1/ {print $NF; exit}')
  [ -n "$lib" ] || { say "libnvidia-opencl.so.1 not found: is the NVIDIA driver installed? (--icd LIB names another)"; exit 1; }
fi
# A bare name is for the loader's dlopen to find; a path must exist.
[[ $lib != */* || -e $lib ]] || { say "$lib does not exist"; exit 1; }
if [ ! -x "$clmulti" ]; then
  say "$clmulti not found; build it with: cargo build --release -p clmulti"
  exit 1
fi

icd_name=$(basename "$lib" | sed 's/\.so.*//').icd
if grep -qsF "$lib" "$vendors"/*.icd 2>/dev/null; then
  say "$lib is already registered in $vendors"
elif ((!user_mode)) && [ "$vendors" = /etc/OpenCL/vendors ] && mkdir -p "$vendors" 2>/dev/null && [ -w "$vendors" ]; then
  echo "$lib" > "$vendors/$icd_name"
  say "registered $lib in $vendors/$icd_name"
else
  own=${CLMULTI_ICD_DIR:-${TMPDIR:-/tmp}/clmulti-icd-${USER:-$(id -un)}-${SLURM_JOB_ID:-$$}}
  mkdir -p "$own"
  # OCL_ICD_VENDORS replaces the system folder: keep the platforms it already lists.
  for icd in "$vendors"/*.icd; do
    [ -e "$icd" ] && [ "$(dirname "$icd")" != "$own" ] && cp "$icd" "$own/"
  done
  echo "$lib" > "$own/$icd_name"
  export OCL_ICD_VENDORS=$own
  say "registered $lib in $own/$icd_name (OCL_ICD_VENDORS=$own)"
  if ((env_mode)); then
    printf 'export OCL_ICD_VENDORS=%q\n' "$own"
  else
    say "for later commands: export OCL_ICD_VENDORS=$own"
  fi
fi

loader=$(ldd "$clmulti" 2>/dev/null | awk '/libOpenCL.so.1/ {print $3}')
if [ -n "$loader" ] && ! grep -qa OPENCL_LAYERS "$loader"; then
  say "note: $clmulti loads $loader, which does not read OPENCL_LAYERS: configs/emulation needs ocl-icd first (LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libOpenCL.so.1)"
fi

# Platform order changes between boots: count devices on the platform by name.
count=$("$clmulti" devices --format json | python3 -c '
import json, sys
name = sys.argv[1].lower()
platforms = json.load(sys.stdin)["platforms"]
print(sum(len(p["devices"]) for p in platforms if name in str(p["name"]).lower()))' "$platform")
say "$count device(s) visible on platforms named like '$platform'"
if [ "$count" -lt "$expected" ]; then
  say "expected $expected; check the driver (nvidia-smi), CUDA_VISIBLE_DEVICES and the job's --gres"
  exit 1
fi
