#!/usr/bin/env bash
# Where a whole process's time goes besides the work: every process of one
# `clmulti run` (the command, the worker it forks, the run's child) beside the plain
# C loop (bench/plain_loop.c), from the kernel's own events: exec, fork, exit_group
# and the SIGCHLD a process's end sends its parent, and two uprobes, clmulti's `main`
# and libOpenCL's clGetPlatformIDs (where both programs start loading the runtime).
# Interleaved rounds, each program a fresh process; prints the median of each segment
# in ms, so that the whole-process difference `run-vs-loop.sh` measures splits into
# what comes before the runtime loads, the runtime's loading and the work, the
# measuring process's teardown, and what comes after it. Only the program's own
# process tree counts (other programs starting meanwhile are left out). Tracepoints
# and uprobes cost about a microsecond an event, and fire a few dozen times a run.
#
#   bench/process-timeline.sh [options]
#     --bin DIR        holds clmulti built with its symbols and libclmulti_trace.so
#                      beside it (default target/release)
#     --platform NAME  platform name, as both take it (default portable: PoCL)
#     --devices N      devices (default 2)
#     --count N        buffers (default 100000)
#     --size BYTES     buffer size (default 1048576)
#     --every N        clmulti's sampling interval (default 1000)
#     --rounds R       rounds, 1 to 1000 (default 15)
#
# Needs root, perf (Debian's linux-perf) with uprobes, python3, binutils (nm,
# readelf), cc and the OpenCL headers. The environment selects the runtime as for
# run-vs-loop.sh (OCL_ICD_VENDORS, POCL_DEVICES). A benchmark that prints figures; it
# removes the probes it added when it ends (after a SIGKILL: `perf probe -d
# 'clmulti_timeline_*'`).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fail() { echo "process-timeline: $*" >&2; exit 2; }

bin=$root/target/release platform=portable devices=2 count=100000 size=1048576 every=1000 rounds=15
while (($#)); do
  case $1 in
    -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --bin|--platform|--devices|--count|--size|--every|--rounds)
      (($# >= 2)) || fail "$1 takes a value (see --help)"
      declare "${1#--}=$2"; shift 2 ;;
    *) fail "unknown option $1 (see --help)" ;;
  esac
done
for name in devices count size every rounds; do
  value=${!name}
  [[ $value =~ ^[0-9]+$ ]] && ((10#$value >= 1)) || fail "--$name takes a positive integer, not '$value'"
  declare "$name=$((10#$value))"
done
((rounds <= 1000)) || fail "--rounds takes 1 to 1000, not $rounds"
[[ $platform =~ ^[A-Za-z0-9\ ._:+-]+$ ]] || fail "--platform takes letters, digits, spaces and ._:+-, not '$platform'"
[ -f "$bin/clmulti" ] && [ -x "$bin/clmulti" ] || fail "$bin/clmulti is not there or not executable (cargo build --release -p clmulti -p clmulti-trace, or --bin DIR)"
bin=$(cd "$bin" && pwd)
[ -f "$bin/libclmulti_trace.so" ] || fail "$bin has no libclmulti_trace.so beside clmulti: its runs would go untraced, unlike a release build's (cargo build --release -p clmulti-trace)"
command -v perf >/dev/null || fail "perf not found (apt-get install linux-perf)"
[ "$(id -u)" = 0 ] || fail "uprobes and system-wide tracepoints need root"
# awk reads to the end: an early exit would end ldconfig by SIGPIPE (pipefail).
libopencl=$(ldconfig -p | awk '/libOpenCL\.so\.1 / && !path {path = $NF} END {print path}')
[ -n "$libopencl" ] || fail "libOpenCL.so.1 not found (apt-get install ocl-icd-libopencl1)"

# Probes of this invocation's own (-f: beside another's at the same place): another
# invocation running beside it keeps its own.
group=clmulti_timeline_$$
work=$(mktemp -d)
cleanup() { perf probe -q -d "$group:*" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
trap 'echo "process-timeline: interrupted" >&2; exit 130' INT
trap 'echo "process-timeline: terminated" >&2; exit 143' TERM
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
"$bin/clmulti" check -q "$work/scenario.toml" >"$work/check.txt" 2>&1 ||
  fail "clmulti refuses the scenario these options make: $(grep -m1 error "$work/check.txt")"

# A uprobe takes a file offset: the symbol's address less its segment's load address.
main_offset=$(python3 - "$bin/clmulti" <<'PY'
import re, subprocess, sys
binary = sys.argv[1]
def tool(*args):
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"process-timeline: {args[0]} cannot read {binary}: {out.stderr.strip()} (not an ELF binary?)")
    return out.stdout
address = next((int(l.split()[0], 16) for l in tool("nm", "-C", binary).splitlines()
                if re.fullmatch(r"[0-9a-f]+ T clmulti::main(::h[0-9a-f]+)?", l)), None)
if address is None:
    sys.exit(f"process-timeline: {binary} has no symbol clmulti::main (a stripped build?)")
for line in tool("readelf", "-lW", binary).splitlines():
    f = line.split()
    if f and f[0] == "LOAD" and "E" in f[6:-1]:
        offset, vaddr, size = int(f[1], 16), int(f[2], 16), int(f[5], 16)
        if vaddr <= address < vaddr + size:
            print(hex(address - vaddr + offset))
            break
else:
    sys.exit("process-timeline: clmulti::main lies in no executable segment")
PY
) || exit 2
perf probe -q -f -x "$bin/clmulti" -a "$group:main=$main_offset" || fail "perf cannot place a uprobe in $bin/clmulti"
perf probe -q -f -x "$libopencl" -a "$group:platforms=clGetPlatformIDs" || fail "perf cannot place a uprobe on clGetPlatformIDs in $libopencl"
events=(-e "$group:*" -e sched:sched_process_exec -e sched:sched_process_fork
        -e syscalls:sys_enter_exit_group -e signal:signal_generate)

for ((r = 1; r <= rounds; r++)); do
  echo "process-timeline: round $r of $rounds" >&2
  for arm in loop clmulti; do
    if [ "$arm" = loop ]; then
      cmd=("$work/plain_loop" --platform "$platform" --devices "$devices" --context shared
           --count "$count" --size "$size" --strategy create)
    else
      cmd=("$bin/clmulti" run "$work/scenario.toml" --format json)
    fi
    perf record -q -a "${events[@]}" -o "$work/round.data" -- "${cmd[@]}" >/dev/null 2>"$work/stderr" ||
      fail "$arm failed: $(grep -v '^run: ' "$work/stderr" | tail -3)"
    echo "== $arm ${cmd[0]}" >>"$work/events.txt"
    perf script -i "$work/round.data" -F comm,pid,tid,time,event,trace >>"$work/events.txt" 2>"$work/stderr" ||
      fail "perf script failed: $(tail -3 "$work/stderr")"
  done
done

python3 - "$work/events.txt" "$rounds" "$count" <<'PY'
import re, statistics, sys
path, rounds, count = sys.argv[1], int(sys.argv[2]), sys.argv[3]
LINE = re.compile(r"\s*(\S+)\s+(\d+)/(-?\d+)\s+([\d.]+):\s+(\S+?):?\s+(.*)")

def timelines():
    """Each round's program and its events: (time, pid, tid, event, fields)."""
    arm, program, events = None, None, []
    for line in open(path):
        if line.startswith("== "):
            if arm:
                yield arm, program, events
            arm, program = line[3:].split(maxsplit=1)
            program, events = program.strip(), []
        elif (m := LINE.match(line)):
            comm, pid, tid, t, event, rest = m.groups()
            group, _, name = event.rpartition(":")
            if group.startswith("clmulti_timeline_"):
                # A probe placed where another invocation's is gets a suffix: main_1.
                name = re.sub(r"_\d+$", "", name)
            events.append((float(t), int(pid), int(tid), name, rest))
    if arm:
        yield arm, program, events

def own_tree(program, events):
    """The program's own processes (the first exec of it and what that forks), and
    only their events: the recording is system-wide, other programs start too."""
    top = next((pid for t, pid, tid, ev, rest in events
                if ev == "sched_process_exec" and f"filename={program} " in rest + " "), None)
    tree = {top} if top else set()
    for t, pid, tid, ev, rest in events:
        if ev == "sched_process_fork" and pid == tid and pid in tree:
            child = int(re.search(r"child_pid=(\d+)", rest).group(1))
            tree.add(child)
    return top, [e for e in events if e[1] in tree]

ROWS = ["start: exec to clGetPlatformIDs",
        "  the command: exec to main",
        "  the command: main to the worker's fork",
        "  the worker: fork to the child's exec",
        "  the child: exec to main",
        "  the child: main to clGetPlatformIDs",
        "runtime loading and work: clGetPlatformIDs to exit_group",
        "teardown of the measuring process",
        "after it: to the last process gone",
        "  the worker: report handed on, exit_group",
        "  the worker's teardown",
        "  the command: exit_group and teardown",
        "whole: exec to the last process gone"]
segments = {"loop": {}, "clmulti": {}}
def add(arm, name, start, end):
    """Segment `name` of one round, in ms, where both its ends were seen."""
    assert name in ROWS, name
    if start is not None and end is not None:
        segments[arm].setdefault(name, []).append((end - start) * 1e3)

for arm, program, events in timelines():
    top, events = own_tree(program, events)
    if top is None:
        continue
    def at(kind, who):
        return next((e[0] for e in events if e[1] == who and e[3] == kind), None)
    def gone(who):
        return next((e[0] for e in events if e[1] == who and e[3] == "signal_generate" and "sig=17 " in e[4]), None)
    start = at("sched_process_exec", top)
    if arm == "loop":
        cl, ended = at("platforms", top), at("sys_enter_exit_group", top)
        add(arm, ROWS[0], start, cl)
        add(arm, ROWS[6], cl, ended)
        add(arm, ROWS[7], ended, gone(top))
        add(arm, ROWS[12], start, gone(top))
        continue
    child = next((pid for t, pid, tid, ev, rest in events if ev == "sched_process_exec" and pid != top), None)
    forks = {int(re.search(r"child_pid=(\d+)", rest).group(1)): (t, pid)
             for t, pid, tid, ev, rest in events if ev == "sched_process_fork" and pid == tid}
    if child not in forks:
        continue
    worker = forks[child][1]
    forked = forks.get(worker, (None,))[0]
    cl, ended, child_exec = at("platforms", child), at("sys_enter_exit_group", child), at("sched_process_exec", child)
    add(arm, ROWS[0], start, cl)
    add(arm, ROWS[1], start, at("main", top))
    add(arm, ROWS[2], at("main", top), forked)
    add(arm, ROWS[3], forked, child_exec)
    add(arm, ROWS[4], child_exec, at("main", child))
    add(arm, ROWS[5], at("main", child), cl)
    add(arm, ROWS[6], cl, ended)
    add(arm, ROWS[7], ended, gone(child))
    add(arm, ROWS[8], gone(child), gone(top))
    add(arm, ROWS[9], gone(child), at("sys_enter_exit_group", worker))
    add(arm, ROWS[10], at("sys_enter_exit_group", worker), gone(worker))
    add(arm, ROWS[11], gone(worker), gone(top))
    add(arm, ROWS[12], start, gone(top))

med = lambda v: statistics.median(v) if v else None
cell = lambda v: f"{v:8.2f}" if v is not None else f"{'-':>8}"
print(f"process timeline: clmulti run and the plain C loop, {count} buffers, {rounds} rounds; median ms of each "
      "segment, from kernel events and uprobes (each round's segments add up to its whole, medians need not) [measured]")
print(f"  {'':58} {'loop':>8} {'clmulti':>8} {'+clmulti':>9}")
for name in ROWS:
    loop, tool = med(segments["loop"].get(name, [])), med(segments["clmulti"].get(name, []))
    if name.startswith("  "):
        print(f"  {name:58} {'':>8} {cell(tool)}")
    else:
        # The loop has no process after its own: nothing comes after it.
        base = 0.0 if name.startswith("after it") else loop
        more = f"{tool - base:+9.2f}" if None not in (tool, base) else f"{'-':>9}"
        print(f"  {name:58} {cell(loop)} {cell(tool)} {more}")
for arm in ("loop", "clmulti"):
    whole = len(segments[arm].get(ROWS[12], []))
    if whole < rounds:
        print(f"  ({rounds - whole} of the {arm}'s {rounds} rounds left out: an event of theirs was not seen)")
PY
