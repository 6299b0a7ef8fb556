#!/usr/bin/env bash
# clmulti's split dAxpy beside PyTorch's (scripts/torch-split-axpy.py) on a GPU node:
# the same n, GPUs and repetitions, interleaved (the order alternates every round),
# each run in a fresh process; prints both and their ratio, round by round.
#
#   scripts/gpu-compare.sh [options] N...
#     --bin DIR       holds clmulti (default target/release; build with
#                     cargo build --release -p clmulti --features clmulti/nvml)
#     --gpus K        GPUs to split over (default 2); K = 1 compares one GPU
#     --rounds R      rounds (default 3)
#     --repeat R      timed repetitions in each run, both tools (default 20)
#     --platform P    OpenCL platform name for clmulti's --device (default nvidia)
#     --out DIR       keeps every run's JSON and clmulti's -v log (default a temp dir)
#
# clmulti runs `axpy --split --kernel fast --context both`: its figure is the faster
# layout of the shared context, and the per-device contexts'. Both tools time the
# host clock from the first launch to the last completion seen, best of R; both
# report the same kernel on one GPU and aggregate / (K x one GPU). Registers the
# NVIDIA OpenCL ICD first (scripts/gpu-node-setup.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

bin=target/release gpus=2 rounds=3 repeat=20 platform=nvidia out=""
while (($#)); do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --platform) platform=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "gpu-compare: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
(($#)) || { echo "gpu-compare: name at least one n (e.g. 536870912)" >&2; exit 2; }
clmulti=$bin/clmulti
[ -x "$clmulti" ] || { echo "gpu-compare: $clmulti not found (--bin DIR)" >&2; exit 2; }
out=${out:-$(mktemp -d)}
mkdir -p "$out"

eval "$("$here/gpu-node-setup.sh" --env "$gpus" "$clmulti")"
devices=()
for k in $(seq 0 $((gpus - 1))); do devices+=(--device "$platform:$k"); done

run_clmulti() { # n round
  "$clmulti" -v axpy --split --kernel fast --context both "${devices[@]}" --n "$1" \
    --repeat "$repeat" --format json >"$out/clmulti-n$1-r$2.json" 2>"$out/clmulti-n$1-r$2.log"
}
run_torch() { # n round
  python3 "$here/torch-split-axpy.py" --n "$1" --gpus "$gpus" --repeat "$repeat" \
    --format json >"$out/torch-n$1-r$2.json"
}

for round in $(seq 1 "$rounds"); do
  for n in "$@"; do
    echo "gpu-compare: round $round, n = $n" >&2
    if ((round % 2)); then run_clmulti "$n" "$round"; run_torch "$n" "$round"
    else run_torch "$n" "$round"; run_clmulti "$n" "$round"; fi
  done
done

python3 - "$out" "$rounds" "$gpus" "$@" <<'EOF'
import json, statistics, sys
out, rounds, gpus, sizes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [int(n) for n in sys.argv[4:]]
def load(path):
    with open(path) as f:
        return json.load(f)
print(f"split axpy, clmulti (axpy_fast) vs PyTorch (add_), {gpus} GPU(s), host clock first launch to last completion, best of each run [measured]")
head = ("n", "round", "clmulti shared GB/s", "eff", "per-device GB/s", "eff", "PyTorch GB/s", "eff", "shared/PyTorch", "per-device/PyTorch")
rows, ratios = [head], {}
for n in sizes:
    for r in range(1, rounds + 1):
        c = load(f"{out}/clmulti-n{n}-r{r}.json")["split"]
        t = load(f"{out}/torch-n{n}-r{r}.json")
        fast = [run for run in c["runs"] if run["kernel"] == "fast"]
        shared = max((run for run in fast if run["context"] == "shared"), key=lambda run: run["aggregate_gb_per_s_best"])
        own = next(run for run in fast if run["context"] == "per-device")
        torch_gbs = t["aggregate_gb_per_s_best"]
        a, b = shared["aggregate_gb_per_s_best"] / torch_gbs, own["aggregate_gb_per_s_best"] / torch_gbs
        ratios.setdefault(n, []).append((a, b))
        rows.append((str(n), str(r), f"{shared['aggregate_gb_per_s_best']:.1f}", f"{shared['scaling_efficiency']:.3f}",
                     f"{own['aggregate_gb_per_s_best']:.1f}", f"{own['scaling_efficiency']:.3f}",
                     f"{torch_gbs:.1f}", f"{t['scaling_efficiency']:.3f}", f"{a:.3f}", f"{b:.3f}"))
widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
for row in rows:
    print("  " + "  ".join(cell.rjust(w) for cell, w in zip(row, widths)))
for n, pairs in ratios.items():
    print(f"  n = {n}: clmulti / PyTorch median over {len(pairs)} rounds: shared {statistics.median(p[0] for p in pairs):.3f}, "
          f"per-device {statistics.median(p[1] for p in pairs):.3f}")
print(f"  one GPU alone (the efficiency's base), per round: " + "; ".join(
    f"n={n} r{r}: clmulti {max(run['one_device_gb_per_s'] for run in load(f'{out}/clmulti-n{n}-r{r}.json')['split']['runs']):.1f}, "
    f"PyTorch {load(f'{out}/torch-n{n}-r{r}.json')['one_device_gb_per_s']:.1f}"
    for n in sizes for r in range(1, rounds + 1)))
for n in sizes:
    c = load(f"{out}/clmulti-n{n}-r1.json")["split"]
    t = load(f"{out}/torch-n{n}-r1.json")
    ways = sorted({run["launched_by"]["launcher"] + ", " + run["launched_by"]["completion"] + (", profiling" if run["launched_by"]["profiling"] else "") for run in c["runs"]})
    print(f"  n = {n}, round 1: clmulti launched by {' / '.join(ways)}; PyTorch waited by {t['split_way']}")
print(f"  runs kept in {out}")
EOF
