#!/usr/bin/env python3
"""Repeats `clmulti diagnose` over each fault class of the test fault layer
(crates/cli/tests/hostile/layer/faults.c) and clmulti's emulation layer, on PoCL, and
counts the diagnoses whose claims settle on each fault's truth and contradict it
nowhere (every claim, wherever said, read from the JSON). The generated fault space
(bench/rigor/fault-space.sh) is the broader test; these are the named classes.

    bench/rigor/run.py [--runs 20] [--clmulti target/release/clmulti] [--only NAME]

Prints one line per fault class: how many diagnoses settled on the truth, left it
open among named alternatives, or contradicted it; the median seconds per diagnose;
the first open topic and the first wrong claim. Needs gcc (builds the fault layer) and
PoCL with two CPU devices."""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_fault_layer(out):
    lib = os.path.join(out, "faults.so")
    src = os.path.join(ROOT, "crates/cli/tests/hostile/layer/faults.c")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", lib, src], check=True)
    return lib


def pocl_env():
    env = dict(os.environ)
    env["OCL_ICD_VENDORS"] = "/etc/OpenCL/vendors/pocl.icd"
    version = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", "pocl-opencl-icd"],
        capture_output=True, text=True).stdout
    word = "pthread" if version.startswith("3") else "cpu"
    env["POCL_DEVICES"] = f"{word} {word}"
    env["POCL_MEMORY_LIMIT"] = "4"
    env.pop("OPENCL_LAYERS", None)
    return env


def limits(nofile):
    def apply():
        os.closerange(3, 65536)
        if nofile:
            soft, hard_too = nofile
            _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, soft if hard_too else hard))
    return apply


def claims(node):
    """Every claim in a diagnosis, wherever it is said (verdict, release, fixes)."""
    if isinstance(node, dict):
        if "topic" in node and "alternatives" in node:
            yield node
        for v in node.values():
            yield from claims(v)
    elif isinstance(node, list):
        for v in node:
            yield from claims(v)


def remaining(claim):
    return [a["key"] for a in claim["alternatives"] if a["status"] != "excluded"]


def settled(claim):
    keys = set(remaining(claim))
    return keys.pop() if len(keys) == 1 else None


def held(d, truth, unsettled=(), about=""):
    """How the claims stand against a fault's truth: ("wrong", why) when a claim
    leaves the true key out, or a claim of a topic in `unsettled` settles at all (a
    fault with no shape has no shape to claim, and no measured cause); ("settled", "") when for every topic
    in `truth` a claim settles on it; else ("open", why): the truth among the
    alternatives the claims name as remaining. `about` keeps only the claims whose
    subject names it (the resource a fault keeps: its truth is about that one)."""
    found = [c for c in claims(d) if about in c["subject"]]
    status, why = "settled", ""
    for topic, key in truth.items():
        of_topic = [c for c in found if c["topic"] == topic]
        for c in of_topic:
            if key not in remaining(c):
                return "wrong", f"{topic}: {c['subject']} leaves out {key}: {remaining(c)}"
        if not of_topic:
            return "wrong", f"{topic}: no claim"
        if not any(settled(c) == key for c in of_topic):
            status, why = "open", f"{topic}: {key} among {remaining(of_topic[0])}"
    for c in found:
        if c["topic"] in unsettled and settled(c) not in (None, "unmeasured"):
            return "wrong", f"{c['topic']}: {c['subject']} settles on {settled(c)} for a fault without one"
    return status, why


SHAPES = ("unit", "lifetime", "scope", "peers")

CASES = {
    "random": dict(
        env={"OPENCL_LAYERS": "{faults}", "CLMULTI_FAULT": "random", "CLMULTI_FAULT_ONE_IN": "300"},
        count=3000,
        truth=lambda d: held(d, {"reproduction": "random"}, SHAPES + ("cause", "fix"))),
    "timed": dict(
        env={"OPENCL_LAYERS": "{faults}", "CLMULTI_FAULT": "timed", "CLMULTI_FAULT_SECONDS": "0.05"},
        count=20000,
        truth=lambda d: held(d, {"reproduction": "time"}, SHAPES)),
    "two-limits": dict(
        env={"OPENCL_LAYERS": "{faults}", "CLMULTI_FAULT": "two-limits", "CLMULTI_FAULT_COUNT": "1040"},
        count=3000, nofile=(1024, False),
        truth=lambda d: held(d, {"cause": "resource:open_fds"})),
    "one-sided": dict(
        env={"OPENCL_LAYERS": "{layer}", "CLMULTI_LAYER_POLICY": "fd-per-peer"},
        count=3000, nofile=(1024, True),
        truth=lambda d: held(d, {"cause": "resource:open_fds"})),
    "fds-128": dict(
        env={"OPENCL_LAYERS": "{layer}", "CLMULTI_LAYER_POLICY": "fd-per-peer"},
        count=1000, nofile=(128, False),
        truth=lambda d: held(d, {"cause": "resource:open_fds"})),
    "fds-256": dict(
        env={"OPENCL_LAYERS": "{layer}", "CLMULTI_LAYER_POLICY": "fd-per-peer"},
        count=1000, nofile=(256, False),
        truth=lambda d: held(d, {"cause": "resource:open_fds"})),
    "persistent": dict(
        env={"OPENCL_LAYERS": "{faults}", "CLMULTI_FAULT": "persistent",
             "CLMULTI_FAULT_COUNT": "1500", "CLMULTI_FAULT_FILE": "{file}"},
        count=3000,
        truth=lambda d: held(d, {"reproduction": "outside-kept"}, ("fix",))),
    "cache": dict(
        env={"OPENCL_LAYERS": "{faults}", "CLMULTI_FAULT": "cache", "CLMULTI_FAULT_BYTES": "32768"},
        count=2000,
        truth=lambda d: held(d, {"kept": "reused"}, about="what C heap in use kept")),
    "leak": dict(
        env={"OPENCL_LAYERS": "{faults}", "CLMULTI_FAULT": "leak", "CLMULTI_FAULT_BYTES": "32768"},
        count=2000,
        truth=lambda d: held(d, {"kept": "leak"}, about="what C heap in use kept")),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--clmulti", default=os.path.join(ROOT, "target/release/clmulti"))
    ap.add_argument("--only", action="append")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="clmulti-rigor-")
    faults = build_fault_layer(tmp)
    layer = os.path.join(os.path.dirname(args.clmulti), "libclmulti_layer.so")
    print(f"{'fault':<12} {'settled':>7} {'open':>5} {'wrong':>5}  {'s/diagnose':>10}")
    for name, case in CASES.items():
        if args.only and name not in args.only:
            continue
        tally, seconds, wrong, open_why = {"settled": 0, "open": 0, "wrong": 0}, [], None, None
        for i in range(args.runs):
            file = os.path.join(tmp, f"{name}-{i}.count")
            env = pocl_env()
            env.update({k: v.format(faults=faults, layer=layer, file=file)
                        for k, v in case["env"].items()})
            start = time.monotonic()
            out = subprocess.run(
                [args.clmulti, "-q", "diagnose", "--format", "json", "--size", "64KiB",
                 "--count", str(case["count"])],
                env=env, capture_output=True, text=True, preexec_fn=limits(case.get("nofile")))
            seconds.append(time.monotonic() - start)
            try:
                d = json.loads(out.stdout)
            except json.JSONDecodeError:
                tally["wrong"] += 1
                wrong = wrong or f"exit {out.returncode}: {out.stderr[-500:]}"
                continue
            status, why = case["truth"](d)
            tally[status] += 1
            if status == "wrong":
                wrong = wrong or why
            elif status == "open":
                open_why = open_why or why
        print(f"{name:<12} {tally['settled']:>7} {tally['open']:>5} {tally['wrong']:>5}  "
              f"{statistics.median(seconds):>10.2f}", flush=True)
        if open_why:
            print("  left open: " + open_why)
        if wrong:
            print("  first wrong: " + wrong[:3000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
