#!/usr/bin/env bash
# Submits a clmulti sweep to Slurm: a job array of shards, then a merge that runs
# after every shard ended (--dependency=afterany), and prints both job ids.
#
#   scripts/slurm/submit.sh [options] [SCENARIOS...]
#     -n, --shards N     array tasks (default 4)
#     -g, --gpus N       GPUs per task, requested with --gres=gpu:N (default 0: CPU devices)
#     -t, --time T       time limit per task (default 01:00:00)
#     -o, --out DIR      shards go to DIR/1..N, the merge to DIR/merged (default sweep-slurm;
#                        relative paths are the caller's)
#     -m, --mem SIZE     memory per task (sbatch --mem; the sweep's guards respect it)
#     -- ARGS            further sbatch arguments (partition, account, ...)
#   SCENARIOS default to configs. Build first: cargo build --release -p clmulti -p clmulti-layer -p xtask
#   The scenario files are checked first, their trust included (xtask sweep --check):
#   a file the shards would refuse stops it here, exit 2, nothing submitted.
# Prints "array <id>" and "merge <id>" on stdout.
set -euo pipefail
caller=$PWD
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Paths given on the command line are the caller's; the jobs run from the repository.
absolute() { case $1 in /*) echo "$1" ;; *) echo "$caller/$1" ;; esac; }

shards=4 gpus=0 time=01:00:00 out=sweep-slurm mem=""
scenarios=() extra=()
while (($#)); do
  case $1 in
    -n|--shards) shards=$2; shift 2 ;;
    -g|--gpus) gpus=$2; shift 2 ;;
    -t|--time) time=$2; shift 2 ;;
    -o|--out) out=$2; shift 2 ;;
    -m|--mem) mem=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "submit: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) scenarios+=("$1"); shift ;;
  esac
done
if ((${#scenarios[@]})); then
  for i in "${!scenarios[@]}"; do scenarios[i]=$(absolute "${scenarios[i]}"); done
else
  scenarios=("$root/configs")
fi
out=$(absolute "$out")
bin=$(absolute "${CLMULTI_BIN:-$root/target/release/clmulti}")
xtask=$(absolute "${CLMULTI_XTASK:-$root/target/release/xtask}")
cd "$root"
for b in "$bin" "$xtask"; do
  [ -x "$b" ] || { echo "submit: $b is missing: cargo build --release -p clmulti -p clmulti-layer -p xtask" >&2; exit 1; }
done
# A scenario file is code: each shard would refuse one that loads what nothing trusts,
# said only in its log. Check them here, as the shards will, and submit nothing when
# one is refused (its message says how to trust it: `clmulti trust FILE`).
if ! "$xtask" sweep --check --bin "$bin" "${scenarios[@]}"; then
  echo "submit: nothing was submitted: the shards would refuse the scenario files said above" >&2
  exit 2
fi
mkdir -p "$out/logs"

gres=()
((gpus > 0)) && gres=(--gres="gpu:$gpus")
memory=()
[ -n "$mem" ] && memory=(--mem="$mem")
# One path per line: paths may hold spaces.
CLMULTI_SCENARIOS=$(printf '%s\n' "${scenarios[@]}")
export CLMULTI_SCENARIOS CLMULTI_OUT=$out CLMULTI_GPUS=$gpus CLMULTI_BIN=$bin CLMULTI_XTASK=$xtask

array=$(sbatch --parsable --array="1-$shards" --time="$time" "${gres[@]}" "${memory[@]}" \
  --output="$out/logs/shard-%a.log" "${extra[@]}" scripts/slurm/sweep.sbatch)
array=${array%%;*}
shard_dirs=()
for k in $(seq 1 "$shards"); do shard_dirs+=("$out/$k"); done
merge=$(sbatch --parsable --dependency="afterany:$array" --time=00:30:00 --job-name=clmulti-merge \
  --requeue --open-mode=append --output="$out/logs/merge.log" "${extra[@]}" \
  --wrap="$(printf '%q ' "$xtask" merge "${shard_dirs[@]}" --out "$out/merged" --expect "$shards" --force)")
merge=${merge%%;*}
echo "array $array"
echo "merge $merge"
