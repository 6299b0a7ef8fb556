#!/usr/bin/env bash
# Where a whole process's time goes besides the work: every process of one
# `clmulti run` (the command, the worker it forks, the run's child) beside the plain
# C loop (bench/plain_loop.c), from the kernel's own events: exec, fork, exit_group
# and the SIGCHLD a process's end sends its parent, and two uprobes, clmulti's `main`
# and libOpenCL's clGetPlatformIDs (where both programs start loading the runtime).
# Interleaved rounds, each program a fresh process; prints the median of each segment
# in ms, so that the whole-process difference `run-vs-loop.sh` measures splits into
# what comes before the runtime loads, the work, the measuring process's teardown
# and what comes after it. Tracepoints and uprobes cost about a microsecond an event,
# and fire a few dozen times a run.
#
#   bench/process-timeline.sh [options]
#     --bin DIR        holds clmulti built with its symbols (default target/release)
#     --platform NAME  platform name, as both take it (default portable: PoCL)
#     --devices N      devices (default 2)
#     --count N        buffers (default 100000)
#     --size BYTES     buffer size (default 1048576)
#     --every N        clmulti's sampling interval (default 1000)
#     --rounds R       rounds (default 15)
#
# Needs root, perf (Debian's linux-perf) with uprobes, cc and the OpenCL headers. The
# environment selects the runtime as for run-vs-loop.sh (OCL_ICD_VENDORS, POCL_DEVICES).
# A benchmark that prints figures; it removes the probes it added when it ends.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

bin=$root/target/release platform=portable devices=2 count=100000 size=1048576 every=1000 rounds=15
while (($#)); do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --platform) platform=$2; shift 2 ;;
    --devices) devices=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --every) every=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2
      [[ $rounds =~ ^[0-9]+$ ]] && ((rounds >= 1)) || { echo "process-timeline: --rounds takes a positive integer, not '$rounds'" >&2; exit 2; } ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "process-timeline: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$bin/clmulti" ] || { echo "process-timeline: $bin/clmulti not found (cargo build --release -p clmulti -p clmulti-trace, or --bin DIR)" >&2; exit 2; }
command -v perf >/dev/null || { echo "process-timeline: perf not found (apt-get install linux-perf)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "process-timeline: uprobes and system-wide tracepoints need root" >&2; exit 2; }
libopencl=$(ldconfig -p | awk '/libOpenCL\.so\.1 / {print $NF; exit}')
[ -n "$libopencl" ] || { echo "process-timeline: libOpenCL.so.1 not found (apt-get install ocl-icd-libopencl1)" >&2; exit 2; }

work=$(mktemp -d)
cleanup() { perf probe -q -d 'clmulti_timeline:*' 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
cc -O2 -o "$work/plain_loop" "$root/bench/plain_loop.c" -lOpenCL
cat >"$work/scenario.toml" <<EOF
name = "process-timeline"
[devices]
platform = "$platform"
type = "all"
count = $devices
[context]
mode = "shared"
[allocation]
size = $size
count = $count
strategy = "create"
placement = "round-robin"
[sampling]
every = $every
EOF

# A uprobe takes a file offset: the symbol's address less its segment's load address.
main_offset=$(python3 - "$bin/clmulti" <<'PY'
import re, subprocess, sys
binary = sys.argv[1]
symbols = subprocess.run(["nm", "-C", binary], capture_output=True, text=True, check=True).stdout
address = next((int(l.split()[0], 16) for l in symbols.splitlines()
                if re.fullmatch(r"[0-9a-f]+ T clmulti::main(::h[0-9a-f]+)?", l)), None)
if address is None:
    sys.exit(f"process-timeline: {binary} has no symbol clmulti::main (a stripped build?)")
for line in subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True, check=True).stdout.splitlines():
    f = line.split()
    if f and f[0] == "LOAD" and "E" in f[6:-1]:
        offset, vaddr, size = int(f[1], 16), int(f[2], 16), int(f[5], 16)
        if vaddr <= address < vaddr + size:
            print(hex(address - vaddr + offset))
            break
else:
    sys.exit("process-timeline: clmulti::main lies in no executable segment")
PY
)
perf probe -q -d 'clmulti_timeline:*' 2>/dev/null || true
perf probe -q -x "$bin/clmulti" -a "clmulti_timeline:main=$main_offset"
perf probe -q -x "$libopencl" -a "clmulti_timeline:platforms=clGetPlatformIDs"
events=(-e 'clmulti_timeline:*' -e sched:sched_process_exec -e sched:sched_process_fork
        -e syscalls:sys_enter_exit_group -e signal:signal_generate)

for ((r = 0; r < rounds; r++)); do
  for arm in loop clmulti; do
    if [ "$arm" = loop ]; then
      cmd=("$work/plain_loop" --platform "$platform" --devices "$devices" --context shared
           --count "$count" --size "$size" --strategy create)
    else
      cmd=("$bin/clmulti" run "$work/scenario.toml" --format json)
    fi
    perf record -q -a "${events[@]}" -o "$work/round.data" -- "${cmd[@]}" >/dev/null 2>"$work/stderr" ||
      { echo "process-timeline: $arm failed: $(tail -3 "$work/stderr")" >&2; exit 1; }
    { echo "== $arm"; perf script -i "$work/round.data" -F comm,pid,tid,time,event,trace 2>/dev/null; } >>"$work/events.txt"
  done
done

python3 - "$work/events.txt" "$rounds" "$count" <<'PY'
import re, statistics, sys
path, rounds, count = sys.argv[1], int(sys.argv[2]), sys.argv[3]
LINE = re.compile(r"\s*(\S+)\s+(\d+)/(-?\d+)\s+([\d.]+):\s+(\S+?):?\s+(.*)")

def timelines():
    arm, events = None, []
    for line in open(path):
        if line.startswith("== "):
            if arm:
                yield arm, events
            arm, events = line[3:].strip(), []
        elif (m := LINE.match(line)):
            comm, pid, tid, t, event, rest = m.groups()
            events.append((float(t), int(pid), int(tid), event, rest, comm))
    if arm:
        yield arm, events

def first(events, pred):
    return next((e[0] for e in events if pred(e)), None)

segments = {"loop": {}, "clmulti": {}}
def add(arm, name, start, end):
    """Segment `name` of one round, in ms, where both its ends were seen."""
    if start is not None and end is not None:
        segments[arm].setdefault(name, []).append((end - start) * 1e3)

for arm, events in timelines():
    execs = [(t, pid) for t, pid, tid, ev, rest, comm in events if ev.endswith("sched_process_exec") and comm != "perf"]
    if not execs:
        continue
    start, top = execs[0]
    forks = {}
    for t, pid, tid, ev, rest, comm in events:
        if ev.endswith("sched_process_fork") and pid == tid:
            child = int(re.search(r"child_pid=(\d+)", rest).group(1))
            forks.setdefault(child, (t, pid))
    at = lambda kind, who: first(events, lambda e: e[1] == who and e[3].endswith(kind))
    gone = lambda who: first(events, lambda e: e[1] == who and e[3].endswith("signal_generate") and "sig=17 " in e[4])
    if arm == "loop":
        cl, ended = at("platforms", top), at("sys_enter_exit_group", top)
        add(arm, "start: exec to clGetPlatformIDs", start, cl)
        add(arm, "work: clGetPlatformIDs to exit_group", cl, ended)
        add(arm, "teardown of the measuring process", ended, gone(top))
        add(arm, "whole: exec to the last process gone", start, gone(top))
        continue
    child = next((pid for t, pid in execs[1:]), None)
    worker = forks.get(child, (None, None))[1]
    if child is None or worker is None:
        continue
    cl, ended = at("platforms", child), at("sys_enter_exit_group", child)
    forked, child_exec = forks.get(worker, (None,))[0], at("sched_process_exec", child)
    add(arm, "start: exec to clGetPlatformIDs", start, cl)
    add(arm, "  the command: exec to main", start, at("main", top))
    add(arm, "  the command: main to the worker's fork", at("main", top), forked)
    add(arm, "  the worker: fork to the child's exec", forked, child_exec)
    add(arm, "  the child: exec to main", child_exec, at("main", child))
    add(arm, "  the child: main to clGetPlatformIDs", at("main", child), cl)
    add(arm, "work: clGetPlatformIDs to exit_group", cl, ended)
    add(arm, "teardown of the measuring process", ended, gone(child))
    add(arm, "after it: to the last process gone", gone(child), gone(top))
    add(arm, "  the worker: report handed on, exit_group", gone(child), at("sys_enter_exit_group", worker))
    add(arm, "  the worker's teardown", at("sys_enter_exit_group", worker), gone(worker))
    add(arm, "  the command: exit_group and teardown", gone(worker), gone(top))
    add(arm, "whole: exec to the last process gone", start, gone(top))

med = lambda v: statistics.median(v) if v else float("nan")
print(f"process timeline: clmulti run and the plain C loop, {count} buffers, {rounds} rounds; median ms of each "
      "segment, from kernel events and uprobes (each round's segments add up to its whole, medians need not) [measured]")
print(f"  {'':58} {'loop':>8} {'clmulti':>8} {'+clmulti':>9}")
for name in segments["clmulti"]:
    loop, tool = med(segments["loop"].get(name, [])), med(segments["clmulti"][name])
    if name.startswith("  "):
        print(f"  {name:58} {'':>8} {tool:8.2f}")
    else:
        loop = 0.0 if name.startswith("after it") else loop
        print(f"  {name:58} {loop:8.2f} {tool:8.2f} {tool - loop:+9.2f}")
whole = segments["clmulti"].get("whole: exec to the last process gone", [])
if len(whole) < rounds:
    print(f"  ({rounds - len(whole)} of clmulti's rounds left out: an event of theirs was not seen)")
PY
