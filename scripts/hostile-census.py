#!/usr/bin/env python3
"""The hostile census: the second hostile round's inputs against one build of clmulti
and its xtask, counted the way issue 26 counts them. Prints the headline table:
inputs tried, panics, crashes, hangs, blowups, exit codes outside 0/1/2, records lost,
duplicated or misattributed, guard and time overshoot; with the calls behind each
count that is not zero.

    scripts/hostile-census.py --clmulti target/debug/clmulti --xtask target/debug/xtask

The cargo tests (`cargo test -p clmulti --test it hostile::`, `cargo test -p xtask --test it
hostile::`) assert the same behaviour; this script counts it, so that an older build can
be measured too (it uses only what both understand). Runs on PoCL
(OCL_ICD_VENDORS=/etc/OpenCL/vendors/pocl.icd, POCL_MEMORY_LIMIT=2) and the fixture ICDs
of crates/cli/tests/hostile/icd, built here with cc. Takes a few minutes.
"""
import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "crates/cli/tests/hostile"
POCL = {
    "OCL_ICD_VENDORS": "/etc/OpenCL/vendors/pocl.icd",
    "POCL_MEMORY_LIMIT": "2",
    "POCL_DEVICES": "pthread pthread",
}
HANG_CAP = 20.0  # seconds a command without a bound of its own may take before it hangs


class Census:
    def __init__(self):
        self.calls = 0
        self.findings = {k: [] for k in [
            "panics", "crashes", "hangs", "blowups", "exit codes outside 0/1/2",
            "records lost", "records duplicated", "records misattributed",
            "wrong outcome"]}
        self.guard_overshoot = 0.0
        self.time_overshoot = 0.0

    def note(self, kind, what):
        self.findings[kind].append(what)


def shmem():
    for line in open("/proc/meminfo"):
        if line.startswith("Shmem:"):
            return int(line.split()[1]) * 1024
    return 0


def call(c, args, env=None, bound=None, stdout=subprocess.PIPE, preexec=None,
         signals=(), label=None, watch_shmem=False):
    """Runs one call; returns (returncode, stdout, stderr, seconds, peak_rss, shmem_growth).
    `bound`: the seconds the call promises (None: HANG_CAP); killed at 1.1 bound + 5 s."""
    c.calls += 1
    label = label or " ".join(str(a) for a in args)
    full_env = dict(os.environ)
    full_env.update(POCL)
    full_env.update(env or {})
    start = time.time()
    def defaults():
        # The signals a census sends act as they would in a terminal, whatever this
        # script inherited (started in the background, SIGINT is ignored).
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(s, signal.SIG_DFL)
        if preexec:
            preexec()
    p = subprocess.Popen([str(a) for a in args], env=full_env, stdout=stdout,
                         stderr=subprocess.PIPE, start_new_session=True,
                         preexec_fn=defaults)
    cap = (bound * 1.1 + 5.0) if bound else HANG_CAP
    shmem_start, shmem_peak = shmem(), 0
    pending = list(signals)
    out = err = b""
    import threading
    chunks = {"out": [], "err": []}

    def drain(stream, key):
        if stream:
            for block in iter(lambda: stream.read(65536), b""):
                chunks[key].append(block)
    threads = [threading.Thread(target=drain, args=(p.stdout, "out")),
               threading.Thread(target=drain, args=(p.stderr, "err"))]
    for t in threads:
        t.start()
    killed = False
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            break
        now = time.time() - start
        if watch_shmem:
            shmem_peak = max(shmem_peak, shmem() - shmem_start)
        while pending and now >= pending[0][0]:
            _, how, sig = pending.pop(0)
            os.killpg(p.pid, sig) if how == "group" else os.kill(p.pid, sig)
        if now > cap:
            os.killpg(p.pid, signal.SIGKILL)
            killed = True
        time.sleep(0.01)
    seconds = time.time() - start
    for t in threads:
        t.join()
    out, err = b"".join(chunks["out"]), b"".join(chunks["err"])
    code = os.waitstatus_to_exitcode(status)
    text = err.decode(errors="replace")
    if killed:
        c.note("hangs", f"{label}: killed after {seconds:.1f} s")
    elif "panicked" in text or code == 101:
        c.note("panics", f"{label}: {text.strip().splitlines()[0][:160] if text.strip() else code}")
    elif code < 0 and not any(-code == s for _, _, s in signals):
        c.note("crashes", f"{label}: {signal.Signals(-code).name}")
    elif code not in (0, 1, 2) and not any(code in (128 + s, -s) for _, _, s in signals):
        c.note("exit codes outside 0/1/2", f"{label}: exit {code}")
    if bound and not killed and seconds > bound * 1.1:
        c.time_overshoot = max(c.time_overshoot, seconds / bound - 1)
        c.note("hangs", f"{label}: {seconds:.1f} s, past its {bound} s + 10%")
    return code, out.decode(errors="replace"), text, seconds, usage.ru_maxrss * 1024, shmem_peak


def build_fixtures(tmp):
    vendors = {}
    for kind in ["hang", "crash", "exit0"]:
        lib = tmp / f"lib{kind}.so"
        subprocess.run(["cc", "-shared", "-fPIC", "-o", lib, HOSTILE / f"icd/{kind}.c"], check=True)
        d = tmp / kind
        d.mkdir()
        (d / f"{kind}.icd").write_text(f"{lib}\n")
        vendors[kind] = d
    return vendors


def supports_global_timeout(clmulti):
    out = subprocess.run([clmulti, "--help"], capture_output=True, text=True).stdout
    return "--timeout" in out


def first_report(out):
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def cli_corpus(c, clmulti, tmp, vendors):
    scen = tmp / "s"
    scen.mkdir()
    ok = scen / "ok.toml"
    ok.write_text('[devices]\ntype = "cpu"\n[allocation]\ncount = 10\n')
    # Scenario files: each checked and run.
    for f in sorted((HOSTILE / "scenarios").glob("*.toml")):
        call(c, [clmulti, "check", f])
        call(c, [clmulti, "run", f, "--format", "json"], bound=60)
    # Large ones.
    (scen / "indices.toml").write_text("[devices]\nindices = [" + ",".join(str(i) for i in range(150000)) + "]\n")
    code, _, err, secs, _, _ = call(c, [clmulti, "check", scen / "indices.toml"], bound=60)
    (scen / "platform.toml").write_text('[devices]\nplatform = "' + "p" * 900000 + '"\n[allocation]\ncount = 1\n')
    for args in ([clmulti, "check", scen / "platform.toml"], [clmulti, "run", scen / "platform.toml"]):
        code, _, err, *_ = call(c, args)
        if len(err) > 100000:
            c.note("wrong outcome", f"{args[1]} platform.toml: a {len(err)}-byte error (the value echoed whole)")
    # Command lines.
    for args in [
        ["run", "--timeout", "1e300", ok], ["--timeout", "1e300", "run", ok],
        ["bench", "--count", "18446744073709551615", "--rounds", "1"],
        ["diagnose", "--count", "18446744073709551615"], ["diagnose", "--size", "18446744073709551615"],
        ["axpy", "--n", "18446744073709551615"],
    ]:
        call(c, [clmulti] + args, bound=60)
    for args in [["axpy", "--repeat", "4294967295", "--n", "1024"], ["bench", "--rounds", "1000000000", "--count", "100", "--min-seconds", "0.001"]]:
        call(c, [clmulti] + args)
    # Full and closed stdout.
    for args in [["devices"], ["check", ok], ["run", "--list", ok], ["run", ok, "--format", "json"],
                 ["axpy", "--n", "4096", "--repeat", "1", "--kernel", "fast"],
                 ["bench", "--count", "200", "--rounds", "1", "--min-seconds", "0.001"],
                 ["diagnose", "--count", "10", "--no-experiments", "--format", "json"]]:
        with open("/dev/full", "w") as full:
            code, *_ = call(c, [clmulti] + args, stdout=full, label=" ".join(map(str, args)) + " > /dev/full", bound=120)
        r, w = os.pipe()
        os.close(r)
        code, *_ = call(c, [clmulti] + args, stdout=w, label=" ".join(map(str, args)) + " | (closed)", bound=120)
        os.close(w)
    # Runtimes whose loading hangs, crashes or exits.
    timeout = supports_global_timeout(clmulti)
    hang = scen / "hang.toml"
    hang.write_text("[allocation]\ncount = 10\n[guards]\nmax_seconds = 1\n")
    commands = [["devices"], ["run", hang, "--format", "json"], ["run", "--isolate", hang, "--format", "json"],
                ["axpy", "--n", "1024"], ["bench", "--count", "10"], ["diagnose", "--count", "10"]]
    for kind in ["hang", "crash", "exit0"]:
        for args in commands:
            for _ in range(3 if kind == "hang" else 1):
                if kind == "hang" and timeout:
                    full, bound = ["--timeout", "2"] + args, 2.0
                elif kind == "hang" and args[0] == "run":
                    # Before: the run's max_seconds plus the watchdog's 5 s margin.
                    full, bound = args, 6.0
                else:
                    full, bound = args, None
                code, out, err, *_ = call(c, [clmulti] + full, env={"OCL_ICD_VENDORS": str(vendors[kind])},
                                          bound=bound, label=f"{kind} ICD: {' '.join(map(str, full))}")
                if code == 0:
                    c.note("wrong outcome", f"{kind} ICD: {' '.join(map(str, full))}: exit 0 ({'nothing said' if not err.strip() else err.strip().splitlines()[-1][:100]})")
    # SIGINT and SIGTERM to a run.
    endless = scen / "endless.toml"
    endless.write_text('[devices]\ntype = "cpu"\n[allocation]\nsize = "4KiB"\ncount = "until-failure"\nkeep = false\n[guards]\nmax_seconds = 20\n[sampling]\nevery = 100000\n')
    for isolate in [[], ["--isolate"]]:
        for how, sig in [("group", signal.SIGINT), ("pid", signal.SIGTERM)]:
            code, out, err, *_ = call(c, [clmulti, "run", *isolate, endless, "--format", "json"],
                                      signals=[(2.0, how, sig)], bound=25,
                                      label=f"run {' '.join(isolate)} + {sig.name} to the {how}")
            r = first_report(out)
            if not r or r["stop"].get("kind") != "interrupted":
                c.note("wrong outcome", f"run {' '.join(isolate)} + {sig.name}: no partial report (exit {code})")
    # Time past the loop: 100000 pair checks under max_seconds = 1.
    check = scen / "check.toml"
    check.write_text('[devices]\ntype = "cpu"\n[allocation]\nsize = "8B"\ncount = 200000\n[axpy]\ncheck = "all"\n[guards]\nmax_seconds = 1\n[sampling]\nevery = 100000\n')
    call(c, [clmulti, "run", check, "--format", "json"], bound=6.0, env={"POCL_DEVICES": "pthread"})
    # Memory the guards did not see: the host mirror's Shmem under max_rss = 200MiB.
    layer = Path(clmulti).with_name("libclmulti_layer.so")
    mirror = scen / "mirror.toml"
    mirror.write_text(f'[devices]\ntype = "cpu"\ncount = 2\n[allocation]\nsize = "16MiB"\ncount = 200\n[env]\nOPENCL_LAYERS = "{layer}"\nCLMULTI_LAYER_POLICY = "host-mirror"\nCLMULTI_LAYER_MIRROR_LIMIT = "100%"\n[guards]\nmax_rss = "200MiB"\n[sampling]\nevery = 10\n')
    code, out, err, secs, rss, grown = call(c, [clmulti, "run", mirror, "--format", "json"], watch_shmem=True, bound=60)
    r = first_report(out)
    if r:
        base = r["samples"][0]["system"]["shmem_bytes"]
        held = max(s["rss_bytes"] + max(0, s["system"]["shmem_bytes"] - base) for s in r["samples"])
        over = held / (200 << 20) - 1
        c.guard_overshoot = max(c.guard_overshoot, over)
        if over > 0.1:
            c.note("blowups", f"host-mirror under max_rss 200MiB: RSS + Shmem grew to {held / 2**30:.2f} GiB")
    # ulimit -v: the shipped mitigation configs.
    def limit_as():
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, resource.RLIM_INFINITY))
    for name in ["mitigation-migrate", "mitigation-per-device"]:
        code, out, err, *_ = call(c, [clmulti, "run", ROOT / f"configs/{name}.toml", "--format", "json"],
                                  preexec=limit_as, bound=120, label=f"ulimit -v 8388608; run {name}")
        r = first_report(out)
        if not r:
            c.note("wrong outcome", f"ulimit -v 8388608; run {name}: no report (exit {code})")
    # Slurm memory of 0 or past u64: the memory guard must not become 0 B.
    for value in ["0", "99999999999999999999"]:
        code, out, err, *_ = call(c, [clmulti, "run", ok, "--format", "json"], env={"SLURM_MEM_PER_NODE": value},
                                  label=f"SLURM_MEM_PER_NODE={value} run")
        r = first_report(out)
        if r and r["stop"].get("kind") != "completed":
            c.note("wrong outcome", f"SLURM_MEM_PER_NODE={value}: {r['stop']}")
    # Temporary progress files left by a killed parent.
    before = set(os.listdir(tempfile.gettempdir()))
    call(c, [clmulti, "run", "--isolate", endless], signals=[(1.5, "pid", signal.SIGKILL)], bound=25,
         label="run --isolate, parent SIGKILLed")
    time.sleep(0.5)
    left = [f for f in set(os.listdir(tempfile.gettempdir())) - before if f.startswith("clmulti-progress")]
    if left:
        c.note("wrong outcome", f"a killed run --isolate left {left}")


def records(folder):
    """Records of a results file, scenario bases applied (either format)."""
    bases, out = {}, []
    path = Path(folder) / "results.jsonl"
    if not path.exists():
        return out

    def patch(target, p):
        if not isinstance(p, dict):
            return p
        target = dict(target) if isinstance(target, dict) else {}
        for k, v in p.items():
            if v is None:
                target.pop(k, None)
            else:
                target[k] = patch(target.get(k), v)
        return target
    for line in path.read_text().splitlines():
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if "key" not in v and "scenario_base" in v:
            bases[v["scenario_base"]] = v["scenario"]
            continue
        if "scenario_base" in v:
            v["report"]["scenario"] = patch(bases[v["scenario_base"]], v.get("scenario_patch"))
        out.append(v)
    return out


def sweep_corpus(c, clmulti, xtask, tmp):
    base_env = dict(POCL)

    def xt(args, extra=None, **kw):
        return call(c, [xtask] + args, env=extra, **kw)

    def sweep(args, extra=None, **kw):
        return xt(["sweep", *args, "--bin", clmulti], extra, **kw)
    grid = '[devices]\ntype = "cpu"\n[allocation]\nsize = "4KiB"\ncount = 10\n[grid]\n"allocation.size" = ["4KiB", "8KiB", "16KiB", "32KiB"]\n'
    d = tmp / "sweeps"
    d.mkdir()
    # Resume while PoCL's memory size drifts.
    (d / "drift").mkdir()
    (d / "drift/grid.toml").write_text(grid)
    sweep([d / "drift/grid.toml", "--out", d / "drift/out"], {"POCL_MEMORY_LIMIT": "2"}, bound=120)
    sweep([d / "drift/grid.toml", "--out", d / "drift/out", "--resume"], {"POCL_MEMORY_LIMIT": "3"}, bound=120)
    n = len(records(d / "drift/out"))
    if n > 4:
        c.note("records duplicated", f"resume with POCL_MEMORY_LIMIT 2 -> 3: {n} records of 4 runs (+{n - 4})")
    # A scenario edited mid-sweep.
    (d / "edit").mkdir()
    slow = '[devices]\ntype = "cpu"\n[allocation]\nsize = "4KiB"\ncount = "until-failure"\nkeep = false\n[guards]\nmax_seconds = 0.3\n[sampling]\nevery = 100000\n'
    f = d / "edit/grid.toml"
    f.write_text('name = "before"\n' + slow + '[grid]\n"allocation.size" = ["4KiB", "8KiB", "16KiB", "32KiB"]\n')
    p = subprocess.Popen([xtask, "sweep", f, "--out", d / "edit/out", "--bin", clmulti],
                         env={**os.environ, **base_env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    c.calls += 1
    deadline = time.time() + 60
    results = d / "edit/out/results.jsonl"
    while time.time() < deadline and not (results.exists() and '"key"' in results.read_text()):
        time.sleep(0.01)
    f.write_text('name = "after"\n' + slow + '[grid]\n"allocation.size" = ["1KiB", "2KiB", "3KiB", "5KiB"]\n')
    p.wait()
    plan = json.loads((d / "edit/out/plan.json").read_text())["keys"]
    wrong = [r for r in records(d / "edit/out") if r["report"]["run_name"].startswith("after[") and r["key"] in plan]
    sweep([f, "--out", d / "edit/out", "--resume"], bound=120)
    wrong += [r for r in records(d / "edit/out") if r["report"]["run_name"].startswith("after[") and r["key"] in plan]
    if wrong:
        c.note("records misattributed", f"scenario edited mid-sweep: {len(wrong)} run(s) of the new file under the old file's keys")
    # Shards.
    (d / "m").mkdir()
    (d / "m/grid.toml").write_text(grid)
    for k in ["1/2", "2/2"]:
        sweep([d / "m/grid.toml", "--shard", k, "--out", d / f"m/s{k[0]}"], bound=120)
    s1, s2 = d / "m/s1", d / "m/s2"
    code, _, err, *_ = xt(["merge", s1, s1, "--expect", "2", "--out", d / "m/o1"])
    if code == 0:
        c.note("wrong outcome", "merge s1 s1 --expect 2: exit 0, shard 2 not named")
    bare = d / "m/bare"
    bare.mkdir()
    lines = (s2 / "results.jsonl").read_text().splitlines(True)
    kept, seen = [], 0
    for l in lines:
        if '"key"' in l:
            if seen == 1:
                break
            seen += 1
        kept.append(l)
    (bare / "results.jsonl").write_text("".join(kept))
    code, *_ = xt(["merge", s1, bare, "--out", d / "m/o2"])
    if code == 0:
        c.note("wrong outcome", "merge of a shard without plan.json that stopped early: exit 0")
    # Retried and duplicated records.
    retried = d / "m/retried"
    retried.mkdir()
    shutil.copy(s1 / "plan.json", retried / "plan.json")
    text = (s1 / "results.jsonl").read_text()
    rec = next(l for l in text.splitlines() if '"key"' in l)
    newer, crashed = json.loads(rec), json.loads(rec)
    newer["finished_at"] += 10
    newer["report"]["buffers"] = 7
    crashed["report"]["stop"] = {"kind": "crashed", "signal": 6, "signal_name": "SIGABRT"}
    (retried / "results.jsonl").write_text(text.replace(rec, json.dumps(crashed)) + rec + "\n" + json.dumps(newer) + "\n")
    xt(["merge", retried, s2, "--expect", "2", "--out", d / "m/o3"])
    merged = [r for r in records(d / "m/o3") if r["key"] == newer["key"]]
    if not any(r["report"]["buffers"] == 7 for r in merged):
        c.note("records lost", "merge after --retry-failed: the successful retry dropped, the crash kept")
    if len(merged) > 1:
        c.note("records duplicated", f"merge after a retry and a duplicated line: {len(merged)} records of one run")
    xt(["summary", retried])
    rows = len((retried / "summary.csv").read_text().splitlines()) - 1
    if rows > 2:
        c.note("records duplicated", f"summary of a shard with a duplicated line: {rows} rows for 2 runs")
    garbage = d / "m/garbage"
    garbage.mkdir()
    shutil.copy(s2 / "results.jsonl", garbage / "results.jsonl")
    (garbage / "plan.json").write_text('{"shard": [2, 2],\n "keys": [1, 2, \x01')
    code, _, err, *_ = xt(["merge", s1, garbage, "--out", d / "m/o4"])
    n = len(records(d / "m/o4"))
    if n < 4:
        c.note("records lost", f"merge with a garbage plan.json: {4 - n} of 4 records not merged")
    if any("merging" in x for x in os.listdir(d / "m/o4")):
        c.note("wrong outcome", "merge with a garbage plan.json left its temporary file")
    before = len(records(s1))
    xt(["merge", s1, s2, "--out", s1, "--force"])
    after = len(records(s1))
    if after < before or not (s1 / "plan.json").exists():
        c.note("records lost", f"merge D --out D --force: D holds {after} of its {before} records, plan.json {'kept' if (s1 / 'plan.json').exists() else 'gone'}")
    # The sweep's own inputs.
    z = d / "zero"
    z.mkdir()
    os.symlink("/dev/zero", z / "results.jsonl")
    fifo = d / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "results.jsonl")
    for args in (["sweep", d / "m/grid.toml", "--out", z, "--resume", "--bin", clmulti],
                 ["sweep", d / "m/grid.toml", "--out", fifo, "--resume", "--bin", clmulti],
                 ["merge", z, "--out", d / "m/o5"], ["compare", "/dev/zero", s1],
                 ["sweep", d / "m/grid.toml", "--out", d / "m/o6", "--compare", "/dev/zero", "--bin", clmulti]):
        code, _, err, secs, rss, _ = xt(args)
        if rss > 4 << 30:
            c.note("blowups", f"{args[0]} reading /dev/zero: {rss / 2**30:.1f} GiB")
    # Options.
    for args in (["--timeout", "1e300"], ["--timeout", "nan"], ["--timeout", "inf"], ["--timeout=-1"],
                 ["--render-every", "inf"]):
        xt(["sweep", d / "m/grid.toml", "--out", d / "m/o7", "--bin", clmulti, *args])
    code, *_ = xt(["sweep", d / "m/grid.toml", "--out", d / "m/o8", "--bin", clmulti, "--timeout", "0"], bound=120)
    if code == 0:
        c.note("wrong outcome", "sweep --timeout 0: accepted")
    # A 245-character file name, and a 60 KiB description in a 20-run grid.
    (d / "long").mkdir()
    lf = d / "long" / ("n" * 240 + ".toml")
    lf.write_text('description = "' + "d" * (60 << 10) + '"\n[devices]\ntype = "cpu"\n[allocation]\nsize = "4KiB"\n[grid]\n"allocation.count" = [' + ", ".join(str(i) for i in range(1, 21)) + "]\n")
    code, _, err, *_ = sweep([lf, "--out", d / "long/out"], bound=120)
    if code != 0:
        c.note("wrong outcome", f"sweep of a 245-character file name: exit {code}: {err.strip().splitlines()[-1][:120] if err.strip() else ''}")
    size = (d / "long/out/results.jsonl").stat().st_size if (d / "long/out/results.jsonl").exists() else 0
    if size > 20 * (60 << 10):
        c.note("blowups", f"a 60 KiB description in a 20-run grid: results.jsonl {size / 2**20:.1f} MiB (the description in every record)")


def trust_corpus(c, clmulti, xtask, tmp):
    """The third round: scenario files that load code (each must be refused without
    its code running, then run when allowed), links planted where outputs go,
    formulas in names, shards of different plans, corrupt lines, a file of 100 000
    unknown tables."""
    d = tmp / "trust"
    d.mkdir()
    env = {"CLMULTI_TRUST_FILE": str(d / "trusted")}
    marker = d / "constructor-ran"
    src = d / "mark.c"
    src.write_text('#include <stdio.h>\n__attribute__((constructor)) static void m(void) '
                   '{ FILE *f = fopen("%s", "w"); if (f) fclose(f); }\n' % marker)
    lib = d / "libmark.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", lib, src], check=True)
    (d / "icd").mkdir()
    (d / "icd/mark.icd").write_text(f"{lib}\n")
    (d / "libs").mkdir()
    shutil.copy(lib, d / "libs/libOpenCL.so.1")
    (d / "link.so").symlink_to(lib)
    base = '[devices]\ntype = "cpu"\n[allocation]\nsize = "4KiB"\ncount = 5\n'
    loads = {
        "preload": f'[env]\nLD_PRELOAD = "{lib}"\n',
        "preload-relative": '[env]\nLD_PRELOAD = "./libmark.so"\n',
        "preload-dotdot": f'[env]\nLD_PRELOAD = "{d}/icd/../libmark.so"\n',
        "preload-link": f'[env]\nLD_PRELOAD = "{d}/link.so"\n',
        "preload-list": f'[env]\nLD_PRELOAD = "libm.so.6 {lib}"\n',
        "audit": f'[env]\nLD_AUDIT = "{lib}"\n',
        "layers": f'[env]\nOPENCL_LAYERS = "{lib}"\n',
        "vendors": f'[env]\nOCL_ICD_VENDORS = "{d}/icd"\n',
        "vendors-file": f'[env]\nOCL_ICD_VENDORS = "{d}/icd/mark.icd"\n',
        "filenames": f'[env]\nOCL_ICD_FILENAMES = "{lib}"\n',
        "library-path": f'[env]\nLD_LIBRARY_PATH = "{d}/libs"\n',
        "gconv": f'[env]\nGCONV_PATH = "{d}/libs"\n',
        "grid": f'[grid]\n"env.LD_PRELOAD" = ["libm.so.6", "{lib}"]\n',
    }
    for name, text in loads.items():
        f = d / f"{name}.toml"
        f.write_text(base + text)
        marker.unlink(missing_ok=True)
        code, out, err, *_ = call(c, [clmulti, "check", f], env=env, bound=60, label=f"check {name}")
        if "not trusted" not in out:
            c.note("wrong outcome", f"check {name}: no 'not trusted' line")
        code, out, err, *_ = call(c, [clmulti, "run", f], env=env, bound=60, label=f"run {name}")
        if code != 2 or marker.exists():
            c.note("wrong outcome", f"run {name}: exit {code}, code ran: {marker.exists()}")
        sweep_out = d / f"sweep-{name}"
        code, out, err, *_ = call(c, [xtask, "sweep", f, "--out", sweep_out, "--bin", clmulti],
                                  env=env, bound=120, label=f"sweep {name}")
        if marker.exists() or records(sweep_out):
            c.note("wrong outcome", f"sweep {name}: ran code nothing trusts")
    # Trusted, then changed.
    f = d / "preload.toml"
    call(c, [clmulti, "trust", f], env=env, bound=30)
    code, *_ = call(c, [clmulti, "run", f], env=env, bound=60, label="run trusted")
    if code != 0:
        c.note("wrong outcome", f"run of a trusted file: exit {code}")
    f.write_text(f.read_text() + "# changed\n")
    code, *_ = call(c, [clmulti, "run", f], env=env, bound=60, label="run changed")
    if code != 2:
        c.note("wrong outcome", f"run of a changed trusted file: exit {code}")
    # Links planted where outputs go; formulas in names.
    victim = d / "victim"
    victim.write_text("precious")
    out = d / "linked"
    out.mkdir()
    for name in ["summary.csv", "index.html", "summary.md", "plan.json", ".sweep.lock", "results.jsonl"]:
        (out / name).symlink_to(victim)
    (d / "names").mkdir()
    for i, name in enumerate(["=HYPERLINK(\\\"http://x\\\")", "+cmd|' /C calc'!A0", "@SUM(1)", "-2+3"]):
        (d / f"names/n{i}.toml").write_text(f'name = "{name}"\n' + base)
    call(c, [xtask, "sweep", d / "names", "--out", out, "--bin", clmulti, "--force"], env=env, bound=120,
         label="sweep into planted links")
    if victim.read_text() != "precious":
        c.note("wrong outcome", "a planted link was written through")
    clean = d / "names-out"
    call(c, [xtask, "sweep", d / "names", "--out", clean, "--bin", clmulti], env=env, bound=120)
    csv = (clean / "summary.csv").read_text() if (clean / "summary.csv").exists() else ""
    for line in csv.splitlines()[1:]:
        cell = line.split(",")[0].strip('"')
        if cell[:1] in "=+-@":
            c.note("wrong outcome", f"summary.csv: a live formula {cell[:40]}")
    # Shards of different plans, mixed counts.
    for name, count in [("a", 3), ("b", 4)]:
        (d / f"plan-{name}.toml").write_text(base.replace("count = 5", f"count = {count}")
                                             + '[grid]\n"allocation.size" = ["4KiB", "8KiB"]\n')
    call(c, [xtask, "sweep", d / "plan-a.toml", "--shard", "1/2", "--out", d / "s1", "--bin", clmulti], env=env, bound=120)
    call(c, [xtask, "sweep", d / "plan-b.toml", "--shard", "2/2", "--out", d / "s2", "--bin", clmulti], env=env, bound=120)
    call(c, [xtask, "sweep", d / "plan-a.toml", "--shard", "1/3", "--out", d / "s3", "--bin", clmulti], env=env, bound=120)
    for inputs, label in [([d / "s1", d / "s2"], "different plans"), ([d / "s1", d / "s3"], "mixed counts")]:
        code, *_ = call(c, [xtask, "merge", *inputs, "--expect", "2", "--out", d / f"m-{label}"],
                        env=env, bound=60, label=f"merge {label}")
        if code != 2:
            c.note("wrong outcome", f"merge of {label}: exit {code}")
    # A corrupt newer line carrying a run's key.
    lines = (d / "s1/results.jsonl").read_text().splitlines()
    recs = [json.loads(l) for l in lines if '"key"' in l]
    if recs:
        with open(d / "s1/results.jsonl", "a") as r:
            r.write(json.dumps({"key": recs[0]["key"], "finished_at": 9999999999, "report": "garbage"}) + "\n")
        call(c, [xtask, "summary", d / "s1"], env=env, bound=60, label="summary with a corrupt newer line")
        rows = len((d / "s1/summary.csv").read_text().splitlines()) - 1
        if rows != len({r["key"] for r in recs}):
            c.note("records lost", f"a corrupt newer line hid its run's good record ({rows} rows)")
    # 100 000 unknown tables.
    big = d / "unknown.toml"
    big.write_text("[allocation]\ncount = 3\n" + "".join(f"[u{i}]\n" for i in range(100_000)))
    call(c, [clmulti, "check", big], env=env, bound=2, label="check 100 000 unknown tables")


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--clmulti", required=True)
    a.add_argument("--xtask", required=True)
    args = a.parse_args()
    clmulti, xtask = str(Path(args.clmulti).resolve()), str(Path(args.xtask).resolve())
    c = Census()
    with tempfile.TemporaryDirectory(prefix="clmulti-census-") as t:
        tmp = Path(t)
        vendors = build_fixtures(tmp)
        cli_corpus(c, clmulti, tmp, vendors)
        sweep_corpus(c, clmulti, xtask, tmp)
        trust_corpus(c, clmulti, xtask, tmp)
    print(f"clmulti: {subprocess.run([clmulti, '--version'], capture_output=True, text=True).stdout.strip()}")
    print(f"| inputs tried | {c.calls} |")
    for kind, found in c.findings.items():
        print(f"| {kind} | {len(found)} |")
    print(f"| guard overshoot | {c.guard_overshoot * 100:.1f}% |")
    print(f"| time overshoot | {c.time_overshoot * 100:.1f}% |")
    for kind, found in c.findings.items():
        for f in found:
            print(f"  {kind}: {f}")


if __name__ == "__main__":
    main()
