#!/usr/bin/env python3
"""Summarizes bench/call_gaps.c's lines by program: the median over processes of
each figure, and each bin's share of the calls with its mean time inside the call
and before it (ns), the bins counted from the last pause (0 is the call right after
one). A program whose calls are slower in every bin pays a per-call cost; one whose
early bins are slower pays for its pauses after them.

    python3 bench/call-gaps.py gaps.jsonl
    python3 bench/call-gaps.py --timeline gaps.jsonl

--timeline (lines written with CALL_GAPS_TIMELINE set) follows each loop's process
up its parents while they run the same program (clmulti's run child, its worker and
the watcher the user started), and gives the median ms from the first process's
start to the first call, the calls, and from the last call to the last exit, per
program: what a process chain costs beside the one process of the plain loop. It is
made for `clmulti run` (bench/run-vs-loop.sh); `clmulti bench`'s arms, calibration
runs included, read in the summary mode.
"""
import json
import statistics
import sys

BINS = ["0", "1", "2-3", "4-7", "8-15", "16-63", "64+"]
CALL_KEYS = ["cmd", "calls", "window_ms", "inside_ms", "between_ms", "pause_ms", "pauses",
             "inside_median_ns", "between_median_ns", "bins"]
TIMELINE_KEYS = ["cmd", "pid", "ppid", "calls", "start_ns", "exit_ns", "first_call_ns", "last_call_ns"]


def records(path, timeline):
    """The file's lines of one kind (timeline lines or call summaries), each checked."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        sys.exit(f"call-gaps: cannot read {path}: {e.strerror}")
    kept, bad = [], 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or bool(record.get("timeline")) != timeline:
                continue
            needed = TIMELINE_KEYS if timeline else CALL_KEYS
            if any(key not in record for key in needed):
                raise KeyError(needed)
            kept.append(record)
        except (ValueError, KeyError):
            bad += 1
            print(f"call-gaps: {path}:{number}: not a line call_gaps.so wrote (left out)", file=sys.stderr)
    if not kept:
        kind = "timeline lines (CALL_GAPS_TIMELINE set)" if timeline else "call lines"
        sys.exit(f"call-gaps: {path} holds no {kind}" + (f" ({bad} unreadable)" if bad else ""))
    return kept


def program(cmd):
    words = cmd.split()
    name = words[0].rsplit("/", 1)[-1] if words else "?"
    for arm in ("plain", "engine"):
        if "--arm" in words and arm in words:
            return f"{name} bench arm {arm}"
    return f"{name} {words[1]}" if len(words) > 1 and not words[1].startswith("-") else name


def program_name(cmd):
    words = cmd.split()
    return words[0].rsplit("/", 1)[-1] if words else "?"


def timeline(path):
    procs = {r["pid"]: r for r in records(path, timeline=True)}
    parts = {}
    for loop in (r for r in procs.values() if r["calls"] > 1):
        name = program_name(loop["cmd"])
        chain = [loop]
        while chain[-1]["ppid"] in procs and program_name(procs[chain[-1]["ppid"]]["cmd"]) == name:
            chain.append(procs[chain[-1]["ppid"]])
        first = min(p["start_ns"] for p in chain)
        last = max(p["exit_ns"] for p in chain)
        figures = parts.setdefault(f"{name} ({len(chain)} process(es))", {})
        for key, ns in (("start to first call", loop["first_call_ns"] - first),
                        ("the calls", loop["last_call_ns"] - loop["first_call_ns"]),
                        ("last call to its exit", loop["exit_ns"] - loop["last_call_ns"]),
                        ("its exit to the last exit", last - loop["exit_ns"]),
                        ("start to last exit", last - first)):
            figures.setdefault(key, []).append(ns / 1e6)
    for name, figures in sorted(parts.items()):
        count = len(next(iter(figures.values())))
        print(f"== {name}: {count} run(s), median ms")
        for key, values in figures.items():
            print(f"  {key:26} {statistics.median(values):9.2f}")


def main(path):
    groups = {}
    for record in records(path, timeline=False):
        groups.setdefault(program(record["cmd"]), []).append(record)
    figures = ["calls", "window_ms", "inside_ms", "between_ms", "pause_ms", "pauses",
               "inside_median_ns", "between_median_ns"]
    for name, group in sorted(groups.items()):
        print(f"== {name}: {len(group)} process(es), median of each")
        for key in figures:
            print(f"  {key:18} {statistics.median(r[key] for r in group):12.3f}")
        print(f"  {'bin':6} {'share':>7} {'inside ns':>10} {'before ns':>10}")
        for b, label in enumerate(BINS):
            share = statistics.median(r["bins"][b][0] / max(r["calls"], 1) for r in group)
            inside = statistics.median(r["bins"][b][1] for r in group)
            before = statistics.median(r["bins"][b][2] for r in group)
            print(f"  {label:6} {share:7.4f} {inside:10.1f} {before:10.1f}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--timeline":
        timeline(sys.argv[2])
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit("usage: call-gaps.py [--timeline] FILE")
