#!/usr/bin/env python3
"""Repeats `clmulti diagnose` over each fault class of the test fault layer
(crates/cli/tests/hostile/layer/faults.c) and clmulti's emulation layer, on PoCL, and
counts the diagnoses whose verdict is right and says nothing false.

    bench/rigor/run.py [--runs 20] [--clmulti target/release/clmulti] [--only NAME]

Prints one line per fault class: right / runs, median seconds per diagnose, and the
first wrong verdict's lines when one is wrong. Needs gcc (builds the fault layer) and
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


def verdict_text(d):
    def tag(basis):
        return basis if isinstance(basis, str) else next(iter(basis), "")
    return "".join(f"[{tag(s['basis'])}] {s['text']}\n" for s in d["verdict"])


def tests(d):
    inv = d.get("investigation") or {}
    return [c["test"] for c in inv.get("candidates", [])]


def fds_test(d):
    inv = d.get("investigation") or {}
    for c in inv.get("candidates", []):
        if c.get("resource") == "open_fds":
            return c["test"]
    return {}


def kept(d, strategy):
    """The rounds' reading of C heap in use and host RSS for the shared case."""
    for f in d.get("release", []):
        if f["run_name"].startswith("shared") and f["run_name"].endswith(strategy):
            rounds = f.get("second_round") or {}
            return {r["resource"]: r for r in rounds.get("readings", [])}
    return {}


def leak_like(reading):
    after = reading["after_rounds"]
    inc = [b - a for a, b in zip(after, after[1:])]
    return len(inc) >= 3 and sum(1 for i in inc if i > reading["tolerance"]) >= len(inc) - 1


def never_says(v, *fragments):
    return all(f not in v for f in fragments)


# What a shape answer says; a question's name alone ("live or cumulative") is no claim.
SHAPES = ("the limit counts", "the limit is cumulative", "the limit is on live", "the limit is per")

CASES = {
    "random": dict(
        env={"OPENCL_LAYERS": "{faults}", "CLMULTI_FAULT": "random", "CLMULTI_FAULT_ONE_IN": "300"},
        count=3000,
        right=lambda d, v: "not reproducible" in v
        and never_says(v, "confirmed:", *SHAPES, "worked:", "did not work")),
    "timed": dict(
        env={"OPENCL_LAYERS": "{faults}", "CLMULTI_FAULT": "timed", "CLMULTI_FAULT_SECONDS": "0.05"},
        count=20000,
        right=lambda d, v: "a time limit (after about" in v
        and never_says(v, "confirmed:", *SHAPES, "not reproducible")),
    "two-limits": dict(
        env={"OPENCL_LAYERS": "{faults}", "CLMULTI_FAULT": "two-limits", "CLMULTI_FAULT_COUNT": "1040"},
        count=3000, nofile=(1024, False),
        right=lambda d, v: fds_test(d).get("test") == "confirmed"
        and fds_test(d).get("second_limit_after") is not None and "refuted" not in v),
    "one-sided": dict(
        env={"OPENCL_LAYERS": "{layer}", "CLMULTI_LAYER_POLICY": "fd-per-peer"},
        count=3000, nofile=(1024, True),
        right=lambda d, v: fds_test(d).get("test") == "consistent" and "confirmed:" not in v),
    "fds-128": dict(
        env={"OPENCL_LAYERS": "{layer}", "CLMULTI_LAYER_POLICY": "fd-per-peer"},
        count=1000, nofile=(128, False),
        right=lambda d, v: fds_test(d).get("test") == "confirmed" and "not explained" not in v),
    "fds-256": dict(
        env={"OPENCL_LAYERS": "{layer}", "CLMULTI_LAYER_POLICY": "fd-per-peer"},
        count=1000, nofile=(256, False),
        right=lambda d, v: fds_test(d).get("test") == "confirmed" and "not explained" not in v),
    "persistent": dict(
        env={"OPENCL_LAYERS": "{faults}", "CLMULTI_FAULT": "persistent",
             "CLMULTI_FAULT_COUNT": "1500", "CLMULTI_FAULT_FILE": "{file}"},
        count=3000,
        right=lambda d, v: "persists across processes" in v
        and all(f["outcome"]["outcome"] == "untested" for f in d["fixes"])),
    "cache": dict(
        env={"OPENCL_LAYERS": "{faults}", "CLMULTI_FAULT": "cache", "CLMULTI_FAULT_BYTES": "32768"},
        count=2000,
        right=lambda d, v: all(
            kept(d, s).get("heap_in_use") and not leak_like(kept(d, s)["heap_in_use"])
            for s in ("create", "fill"))
        and "it keeps growing, a leak" not in v),
    "leak": dict(
        env={"OPENCL_LAYERS": "{faults}", "CLMULTI_FAULT": "leak", "CLMULTI_FAULT_BYTES": "32768"},
        count=2000,
        right=lambda d, v: all(
            kept(d, s).get("heap_in_use") and leak_like(kept(d, s)["heap_in_use"])
            for s in ("create", "fill"))
        and "it keeps growing, a leak" in v),
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
    print(f"{'fault':<12} {'right':>7}  {'s/diagnose':>10}")
    for name, case in CASES.items():
        if args.only and name not in args.only:
            continue
        right, seconds, wrong = 0, [], None
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
                wrong = wrong or f"exit {out.returncode}: {out.stderr[-500:]}"
                continue
            v = verdict_text(d)
            if case["right"](d, v):
                right += 1
            else:
                wrong = wrong or v
        print(f"{name:<12} {right:>3}/{args.runs:<3}  {statistics.median(seconds):>10.2f}", flush=True)
        if wrong:
            print("  first wrong verdict:\n    " + wrong.strip().replace("\n", "\n    ")[:3000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
