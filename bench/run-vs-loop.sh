#!/usr/bin/env bash
# Whole-process time of `clmulti run` against the plain C loop (bench/plain_loop.c)
# doing the same allocations, interleaved, each run a fresh process; prints every
# round, the ratio loop time / clmulti time (clmulti's speed as a share of the
# loop's) with its median, 95% interval and spread, and where clmulti's time went,
# phase by phase beside the loop's, clmulti's sampling part by part. With
# `--tracer both`, clmulti runs traced (as `clmulti run` always does) and untraced
# (CLMULTI_TRACE=off) in every round, the order rotating, and the tracer's share of
# the loop's time is given too.
#
#   bench/run-vs-loop.sh [options]
#     --bin DIR        holds clmulti (default target/release)
#     --platform NAME  platform name, as both take it (default portable: PoCL)
#     --devices N      devices (default 2)
#     --context MODE   shared or per-device (default shared)
#     --count N        buffers (default 100000)
#     --size BYTES     buffer size (default 1048576)
#     --strategy S     create or fill (default create)
#     --every N        clmulti's sampling interval (default 1000, the seed's configs)
#     --target R       the share of the loop's speed to meet (default 0.95)
#     --rounds R       rounds (default 15; 6 at least for an interval)
#     --tracer T       on (default: traced, as runs are), off, or both (interleaved)
#     --against DIR    another build's clmulti (and its tracer) as one more arm of
#                      every round, traced: two builds side by side in one run, with
#                      the difference between them in each round as a share of the loop
#
# The target (--target, default 0.95: clmulti's whole process within 5% of the bare
# loop's, its sampling and report included) is met when the interval lies above it,
# NOT met when below, and not resolved when it straddles it. Besides wall-clock time
# each process's CPU time (user + system, its children's included) is shown: on a
# loaded machine it moves less.
# The defaults are the seed's shared case (configs/seed-2gpu-shared.toml) on two PoCL
# devices: OCL_ICD_VENDORS=/etc/OpenCL/vendors/pocl.icd POCL_DEVICES="pthread pthread"
# (PoCL >= 4: "cpu cpu"). Needs cc and the OpenCL headers (ocl-icd-opencl-dev,
# opencl-c-headers). A benchmark that prints figures; it fails only when a run fails.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

bin=$root/target/release platform=portable devices=2 context=shared count=100000
size=1048576 strategy=create every=1000 rounds=15 tracer=on target=0.95 against=
while (($#)); do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --platform) platform=$2; shift 2 ;;
    --devices) devices=$2; shift 2 ;;
    --context) context=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --strategy) strategy=$2; shift 2 ;;
    --every) every=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2
      [[ $rounds =~ ^[0-9]+$ ]] && ((rounds >= 1)) || { echo "run-vs-loop: --rounds takes a positive integer (6 at least for an interval), not '$rounds'" >&2; exit 2; } ;;
    --tracer) tracer=$2; shift 2
      [[ $tracer =~ ^(on|off|both)$ ]] || { echo "run-vs-loop: --tracer takes on, off or both, not '$tracer'" >&2; exit 2; } ;;
    --target) target=$2; shift 2 ;;
    --against) against=$2; shift 2
      [ -x "$against/clmulti" ] || { echo "run-vs-loop: --against $against: no clmulti there" >&2; exit 2; } ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "run-vs-loop: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$bin/clmulti" ] || { echo "run-vs-loop: $bin/clmulti not found (cargo build --release -p clmulti, or --bin DIR)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/plain_loop" "$root/bench/plain_loop.c" -lOpenCL
cat >"$work/scenario.toml" <<EOF
name = "run-vs-loop"
[devices]
platform = "$platform"
type = "all"
count = $devices
[context]
mode = "$context"
[allocation]
size = $size
count = $count
strategy = "$strategy"
placement = "round-robin"
[sampling]
every = $every
EOF

python3 - "$rounds" "$bin/clmulti" "$work" "$platform" "$devices" "$context" "$count" "$size" "$strategy" "$tracer" "$target" "$against" <<'PY'
import json, math, os, resource, statistics, subprocess, sys, time
rounds, clmulti, work, platform, devices, context, count, size, strategy, tracer, target, against = sys.argv[1:]
rounds, target = int(rounds), float(target)
loop = [f"{work}/plain_loop", "--platform", platform, "--devices", devices, "--context", context,
        "--count", count, "--size", size, "--strategy", strategy]
tool = [clmulti, "run", f"{work}/scenario.toml", "--format", "json"]
arms = {"loop": (loop, {})}
if tracer in ("on", "both"):
    arms["traced"] = (tool, {})
if tracer in ("off", "both"):
    arms["untraced"] = (tool, {"CLMULTI_TRACE": "off"})
if against:
    arms["against"] = ([f"{against}/clmulti", *tool[1:]], {})
names = list(arms)
tools = [n for n in names if n != "loop"]

def timed(cmd, env):
    start = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, **env})
    out, err = child.communicate()
    seconds = time.perf_counter() - start
    if child.returncode != 0:
        sys.exit(f"run-vs-loop: {cmd[0]} failed ({child.returncode}): {err.strip()}")
    return seconds, json.loads(out.strip().splitlines()[-1])

def cpu_of(run):
    """What `run` returns, and the CPU (user + system) its child took, grandchildren included."""
    cpu = lambda: (lambda u: u.ru_utime + u.ru_stime)(resource.getrusage(resource.RUSAGE_CHILDREN))
    before = cpu()
    result = run()
    return result, cpu() - before

def interval(sorted_values, confidence=0.95):
    """Order statistics k, n+1-k around the median with coverage >= confidence."""
    n = len(sorted_values)
    below = lambda k: sum(math.comb(n, i) for i in range(k)) / 2 ** n
    best = None
    for k in range(1, (n + 1) // 2 + 1):
        coverage = 1 - 2 * below(k)
        if coverage < confidence:
            break
        best = (sorted_values[k - 1], sorted_values[n - k], coverage)
    return best

def tool_parts(report):
    """setup, allocation loop, release, clmulti's own after release, the rest of the phases."""
    phases = report.get("phases", [])
    seconds = {p["phase"]: p["seconds"] for p in phases}
    order = [p["phase"] for p in phases]
    if "allocation loop (with sampling)" not in seconds:
        return (float("nan"),) * 4
    at = order.index("allocation loop (with sampling)")
    release = next((n for n in order if n.startswith("release every object")), None)
    after = order.index(release) + 1 if release else at + 1
    return (sum(seconds[n] for n in order[:at]), seconds[order[at]],
            seconds.get(release, float("nan")), sum(seconds[n] for n in order[after:]))

# The parts of clmulti's sampling (its report's sampling_cost), as the table's rows.
SAMPLING_PARTS = {"readings_seconds": "    readings at samples (/proc, heap, counts)",
                  "mappings_seconds": "    mapping walks",
                  "observer_seconds": "    progress file (the observer)",
                  "guard_seconds": "    guard readings between samples"}
runs = {n: [] for n in names}
for r in range(rounds):
    # Each arm takes each place in turn.
    order = names[r % len(names):] + names[:r % len(names)]
    for name in order:
        cmd, env = arms[name]
        (seconds, report), cpu = cpu_of(lambda: timed(cmd, env))
        if name != "loop" and report.get("buffers") != int(count):
            sys.exit(f"run-vs-loop: clmulti stopped at {report.get('buffers')} buffers: {report.get('stop')}")
        if name == "loop":
            parts = (report["process_seconds"] - report["loop_seconds"] - report["release_seconds"],
                     report["loop_seconds"], report["release_seconds"], 0.0, 0.0)
        else:
            parts = tool_parts(report) + (report["sampling_seconds"],)
        cost = report.get("sampling_cost") or {}
        sampling = {k: cost.get(k, 0.0) for k in SAMPLING_PARTS}
        runs[name].append({"wall": seconds, "cpu": cpu, "parts": parts, "sampling": sampling})

med = statistics.median
print(f"clmulti run vs the plain C loop: {devices} device(s) of '{platform}', {context} context, "
      f"{count} x {size} B, {strategy}; whole process, wall clock (and CPU), interleaved, {rounds} rounds [measured]")
print("  round  " + "  ".join(f"{n + ' s':>11}" for n in names) + "  " + "  ".join(f"{'ratio ' + n:>14}" for n in tools))
for i in range(rounds):
    walls = [runs[n][i]["wall"] for n in names]
    ratios = [runs["loop"][i]["wall"] / runs[n][i]["wall"] for n in tools]
    print(f"  {i + 1:5d}  " + "  ".join(f"{w:11.3f}" for w in walls) + "  " + "  ".join(f"{q:14.3f}" for q in ratios))

def share_line(label, values, goal=None):
    values = sorted(values)
    ci = interval(values)
    span = f"95% interval {ci[0]:.3f} to {ci[1]:.3f} ({ci[2] * 100:.1f}% coverage)" if ci else "too few rounds for a 95% interval"
    line = f"  {label}: median {med(values):.3f}; {span}; min {values[0]:.3f}, max {values[-1]:.3f}"
    if goal is not None:
        verdict = "not resolved" if not ci else ("met" if ci[0] >= goal else "NOT met" if ci[1] < goal else "not resolved")
        line += f"; target >= {goal}: {verdict}"
    print(line)

for n in tools:
    share_line(f"clmulti ({n})'s speed as a share of the loop's",
               [runs["loop"][i]["wall"] / runs[n][i]["wall"] for i in range(rounds)], target)
    share_line(f"  the same by CPU time",
               [runs["loop"][i]["cpu"] / runs[n][i]["cpu"] for i in range(rounds) if runs[n][i]["cpu"] > 0])
if "against" in runs:
    version = lambda b: subprocess.run([b, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"  traced: {version(clmulti)}; against: {version(arms['against'][0][0])}")
    other = "traced" if "traced" in runs else "untraced"
    share_line(f"the builds' difference ((against - {other}) / loop, same round)",
               [(runs["against"][i]["wall"] - runs[other][i]["wall"]) / runs["loop"][i]["wall"] for i in range(rounds)])
if "traced" in runs and "untraced" in runs:
    share_line("the tracer's share of the loop's whole process ((traced - untraced) / loop, same round)",
               [(runs["traced"][i]["wall"] - runs["untraced"][i]["wall"]) / runs["loop"][i]["wall"] for i in range(rounds)])
    share_line("  the same by CPU time",
               [(runs["traced"][i]["cpu"] - runs["untraced"][i]["cpu"]) / runs["loop"][i]["cpu"] for i in range(rounds)])
print("  where the time went, median ms of each part over the rounds (each round's parts add up to")
print("  its whole, medians of parts need not):")
labels = ["setup: runtime, devices, contexts (+ clmulti's dry loop)", "allocation loop (with sampling)",
          "  of it, clmulti's sampling", *SAMPLING_PARTS.values(), "release", "clmulti's own after release (readings, analysis)",
          "the rest: exec, startup, report, exit", "whole process", "whole process, CPU time"]
def part_values(name, label):
    out = []
    for run in runs[name]:
        setup, loop_s, release, after, sampling = run["parts"]
        rest = run["wall"] - setup - loop_s - release - after
        parts = {labels[0]: setup, labels[1]: loop_s, labels[2]: sampling,
                 "release": release, "clmulti's own after release (readings, analysis)": after,
                 "the rest: exec, startup, report, exit": rest, "whole process": run["wall"],
                 "whole process, CPU time": run["cpu"]}
        parts.update({SAMPLING_PARTS[k]: v for k, v in run.get("sampling", {}).items()})
        out.append(parts.get(label, 0.0))
    return out
print("    " + f"{'':<56}" + "".join(f"{n:>10}" for n in names) + "".join(f"{'+' + n:>12}" for n in tools))
for label in labels:
    loop_m = med(part_values("loop", label)) * 1e3
    cells = [med(part_values(n, label)) * 1e3 for n in names]
    print(f"    {label:<56}" + "".join(f"{c:10.1f}" for c in cells) + "".join(f"{c - loop_m:+12.1f}" for c in cells[1:]))
PY
