#!/usr/bin/env bash
# Every Intel GPU runtime NEO (intel-opencl-icd) that Debian ships, each in a root folder
# of its own, so that one machine runs them side by side on clmulti's emulated i915
# driver (NEO's real kernel-driver path: `clmulti emulate`).
#
#   scripts/intel-gpu-versions.sh list              # the NEO each suite ships (apt's lists, today)
#   scripts/intel-gpu-versions.sh setup SUITE...    # SUITE's root folder, once (cached)
#   scripts/intel-gpu-versions.sh run SUITE CMD...  # CMD inside it, NEO alone
#   scripts/intel-gpu-versions.sh run bullseye target/release/clmulti emulate \
#       --model adl-s -- clinfo -l                  # NEO 20.44 predates the A770 (DG2)
#
# A root folder is the suite's intel-opencl-icd, its ICD loader and clinfo with every
# library they need (apt resolves them from the suite, with an empty package database),
# unpacked (dpkg-deb, no maintainer scripts) over a merged-/usr tree: no debootstrap, no
# shell or package manager inside, ~100-600 MB. The C and C++ runtime (libc6, libstdc++6,
# libgcc-s1) comes from Debian unstable for every suite: binaries built on the host (clmulti,
# the seed's program, the emulated driver) then run in all of them, and NEO 26 gets the
# glibc >= 2.38 it needs. NEO's own code, its compiler (IGC) and memory library (GMM) are
# the suite's. What changes with the C runtime is malloc's and the loader's own
# bookkeeping, not what NEO asks of the kernel driver.
#
# `run` enters the folder in a private mount namespace (unshare -m: nothing stays mounted
# afterwards) with /proc, /dev, /sys and this repository bind-mounted at their own paths,
# in the current folder (which must be inside the repository). Inside,
# /etc/OpenCL/vendors holds NEO alone; the command is looked up inside the folder (a
# path into the repository runs the host's build with the folder's libraries).
#
# Suites: Debian's oldoldstable (bullseye) to unstable and experimental, and the
# backports; bullseye-backports has left deb.debian.org (archive.debian.org keeps it).
# Needs root (sudo -E when not root) for `setup`'s unpacking and `run`'s namespace, and
# a Debian mirror: $DEBIAN_MIRROR (default http://deb.debian.org/debian).
# Env: CLMULTI_NEO_ROOTS           the folder holding one folder per suite and the
#                                  package cache (default <repo>/.neo-roots)
#      CLMULTI_INTEL_GPU_NEXT_DIR  sid's folder instead of $CLMULTI_NEO_ROOTS/neo-sid
#                                  (scripts/intel-gpu-next.sh's; a debootstrap root works)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
roots=${CLMULTI_NEO_ROOTS:-$repo/.neo-roots}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suites=(bullseye bookworm bookworm-backports trixie trixie-backports forky sid experimental)
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo -E"; fi
me=intel-gpu-versions

die() {
  echo "$me: $*" >&2
  exit 1
}

# SUITE's folder (its root/ is the tree).
folder() {
  if [ "$1" = sid ] && [ -n "${CLMULTI_INTEL_GPU_NEXT_DIR:-}" ]; then
    echo "$CLMULTI_INTEL_GPU_NEXT_DIR"
  else
    echo "$roots/neo-$1"
  fi
}

known_suite() {
  local s
  for s in "${suites[@]}"; do [ "$s" = "$1" ] && return 0; done
  echo "$me: unknown suite '$1' (one of: ${suites[*]})" >&2
  exit 2
}

# apt with a private state in $roots/.apt: every suite's lists, an empty package
# database (so a resolution lists every package a folder needs), the .debs shared.
apt_private() {
  local tool=$1 state=$roots/.apt
  shift
  "$tool" -o Dir::Etc::SourceList="$state/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null \
    -o Dir::State::Lists="$state/lists" -o Dir::State::Status="$state/status" \
    -o Dir::Cache="$state/cache" -o Dir::Cache::Archives="$roots/.debs" \
    -o APT::Architecture=amd64 -o APT::Sandbox::User=root -o Acquire::Languages=none -o Debug::NoLocking=1 "$@"
}

# The lists, fetched when missing or when `list` asks (`fresh`).
apt_lists() {
  local state=$roots/.apt s
  mkdir -p "$state/lists/partial" "$state/cache" "$roots/.debs/partial"
  [ -f "$roots/.gitignore" ] || printf '*\n' >"$roots/.gitignore"
  : >"$state/status"
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -f $keyring ] || die "$keyring missing (package debian-archive-keyring)"
  for s in "${suites[@]}"; do
    echo "deb [signed-by=$keyring] $mirror $s main"
  done >"$state/sources.list"
  if [ "${1:-}" = fresh ] || ! compgen -G "$state/lists/*_sid_*Packages*" >/dev/null; then
    echo "$me: apt-get update of ${suites[*]} (private lists in $state)" >&2
    apt_private apt-get update -qq 2>&1 | grep -v '^$' >&2 || true
  fi
}

# SUITE's intel-opencl-icd version, empty when it ships none.
neo_in() {
  apt_private apt-cache madison intel-opencl-icd |
    awk -F' *[|] *' -v s="$1" '$3 ~ (" " s "/main ") {print $2; exit}'
}

list() {
  apt_lists fresh
  printf '%-20s %s\n' suite intel-opencl-icd
  local s
  for s in "${suites[@]}"; do printf '%-20s %s\n' "$s" "$(neo_in "$s")"; done
}

# name=version of every package SUITE's folder unpacks (apt's simulated install): the
# libraries from the suite a user of it has (backports' and experimental's base).
resolve() {
  local suite=$1 base=${1%-backports}
  [ "$suite" = experimental ] && base=sid
  apt_private apt-get install -s -qq --no-install-recommends -t "$base" \
    "intel-opencl-icd/$suite" ocl-icd-libopencl1 clinfo libc6/sid libstdc++6/sid libgcc-s1/sid |
    sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) .*/\1=\2/p'
}

# Unpacks SUITE's packages into a fresh tree beside the folder, then moves it in.
build() {
  local suite=$1 dir packages tree p deb
  dir=$(folder "$suite")
  [ -n "$(neo_in "$suite")" ] || die "Debian $suite ships no intel-opencl-icd ($me list)"
  mapfile -t packages < <(resolve "$suite")
  ((${#packages[@]} > 0)) || die "apt resolved no packages for $suite"
  echo "$me: $suite: ${#packages[@]} packages into $dir/root" >&2
  if ! (cd "$roots/.debs" && apt_private apt-get download -qq "${packages[@]}" >&2); then
    # Lists older than the mirror name versions it no longer has: fetch them again.
    apt_lists fresh
    mapfile -t packages < <(resolve "$suite")
    (cd "$roots/.debs" && apt_private apt-get download -qq "${packages[@]}" >&2) ||
      die "downloading $suite's packages failed"
  fi
  mkdir -p "$dir"
  [ -f "$dir/.gitignore" ] || printf '*\n' >"$dir/.gitignore"
  tree=$dir/root.new
  rm -rf "$tree"
  mkdir -p "$tree"/usr/{bin,sbin,lib,lib64} "$tree"/{etc,proc,dev,sys,run,tmp}
  chmod 1777 "$tree/tmp"
  # Merged /usr, as unstable has it; older suites' /lib files land in /usr/lib.
  for p in bin sbin lib lib64; do ln -s "usr/$p" "$tree/$p"; done
  for p in "${packages[@]}"; do
    deb=$(ls "$roots/.debs/${p%%=*}_$(sed 's/:/%3a/' <<<"${p#*=}")"_*.deb 2>/dev/null | head -1)
    [ -n "$deb" ] || die "no .deb for $p in $roots/.debs"
    dpkg-deb --fsys-tarfile "$deb" | tar -x --keep-directory-symlink -C "$tree"
  done
  printf '%s\n' "${packages[@]}" >"$dir/packages.txt"
  rm -rf "$dir/root"
  mv "$tree" "$dir/root"
  # Unpacked, the archives are only disk: a rebuild downloads them again.
  rm -f "$roots/.debs"/*.deb
  grep '^intel-opencl-icd=' "$dir/packages.txt" | cut -d= -f2 >"$dir/.installed"
}

setup() {
  [ $# -gt 0 ] || { echo "usage: $0 setup SUITE..." >&2; exit 2; }
  local suite dir lib out
  for suite in "$@"; do
    known_suite "$suite"
    dir=$(folder "$suite")
    lib=$dir/root/usr/lib/x86_64-linux-gnu/intel-opencl/libigdrcl.so
    if [ ! -f "$dir/.installed" ] || [ ! -f "$lib" ]; then
      apt_lists
      $sudo "$0" __build "$suite"
    fi
    # NEO finds no GPU without the emulation: the loader alone, clinfo's platform count.
    out=$(cd "$repo" && "$0" run "$suite" clinfo -l 2>&1) || {
      printf '%s\n' "$out" >&2
      die "clinfo failed inside $dir/root"
    }
    echo "$me: $suite: NEO $(cat "$dir/.installed") ready in $dir/root" >&2
  done
}

case "${1:-}" in
list) list ;;
setup)
  shift
  setup "$@"
  ;;
__build)
  build "$2"
  ;;
run)
  [ $# -gt 2 ] || { echo "usage: $0 run SUITE COMMAND [ARGS...]" >&2; exit 2; }
  known_suite "$2"
  [ -f "$(folder "$2")/.installed" ] || die "$2 not set up: run $0 setup $2"
  case "$PWD/" in "$repo"/*) ;; *) echo "$me: run it from inside $repo" >&2; exit 2 ;; esac
  exec $sudo unshare -m "$0" __enter "$PWD" "${@:2}"
  ;;
__enter) # in the private mount namespace: __enter CWD SUITE COMMAND...
  cwd=$2
  root=$(folder "$3")/root
  shift 3
  mount --make-rprivate /
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --rbind /sys "$root/sys"
  mkdir -p "$root$repo"
  mount --bind "$repo" "$root$repo"
  unset OCL_ICD_VENDORS OCL_ICD_FILENAMES LD_LIBRARY_PATH
  exec unshare --root="$root" --wd="$cwd" "$@"
  ;;
*)
  echo "usage: $0 list | setup SUITE... | run SUITE COMMAND [ARGS...]" >&2
  exit 2
  ;;
esac
