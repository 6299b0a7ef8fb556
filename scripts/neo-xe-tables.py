#!/usr/bin/env python3
"""The per-buffer tables of results/intel-neo-xe/README.md, from the diagnoses there
(diagnose.json of each folder): what NEO asked of the emulated xe driver per 1 MiB
buffer, and what it cost on the host, at 2, 4 and 8 Arc B580s, shared and per device,
create and fill.

    scripts/neo-xe-tables.py [RESULTS_DIR]   # prints markdown
"""
import json
import re
import sys
from pathlib import Path

KIB = 1024


def per_buffer(diagnosis, role, strategy):
    for k in diagnosis["kernel_counts"]:
        if k["role"] == role and k["strategy"] == strategy:
            return k["per_buffer"]
    return {}


def cost(diagnosis, strategy, resource, role):
    for c in diagnosis["sharing_costs"]:
        if c["strategy"] == strategy and c["resource"] == resource:
            return c.get(role)
    return None


def summed(counts, pattern):
    return sum(v for k, v in counts.items() if re.fullmatch(pattern, k))


def fmt(value, unit=""):
    if value is None:
        return "-"
    if unit == "KiB":
        return f"{value / KIB:.2f} KiB"
    if unit == "MiB":
        return f"{value / KIB / KIB:.2f} MiB"
    return f"{value:.2f}"


def rows(results):
    for name in ["diagnose-2-devices", "diagnose-4-devices", "diagnose-8-devices", "defer-backing-off"]:
        path = results / name / "diagnose.json"
        if not path.exists():
            continue
        d = json.loads(path.read_text())
        devices = len(d["devices"])
        setting = "EnableDeferBacking=0" if name == "defer-backing-off" else "default"
        for strategy in ["create", "fill"]:
            for role, label in [("shared", "shared"), ("per-device", "per device")]:
                k = per_buffer(d, role, strategy)
                objects = summed(k, r"objects-\d+-(vram0|gtt)")
                deferred = summed(k, r"deferred-objects-\d+-(vram0|gtt)")
                yield [
                    str(devices),
                    setting,
                    label,
                    strategy,
                    fmt(objects),
                    fmt(deferred),
                    fmt(objects - deferred),
                    fmt(summed(k, r"vm-binds")),
                    fmt(k.get("exports", 0.0)),
                    fmt(k.get("imports", 0.0)),
                    fmt(summed(k, r"resident-bytes-\d+-vram0"), "MiB"),
                    fmt(cost(d, strategy, "open_fds", role.replace("-", "_"))),
                    fmt(cost(d, strategy, "host_rss", role.replace("-", "_")), "KiB"),
                    fmt(cost(d, strategy, "heap_in_use", role.replace("-", "_")), "MiB"),
                ]


def main():
    results = Path(sys.argv[1] if len(sys.argv) > 1 else "results/intel-neo-xe")
    head = [
        "B580s", "NEO keys", "context", "strategy", "GEM objects (all devices)",
        "created with DEFER_BACKING", "created backed", "VM binds", "dma-bufs kept",
        "imports", "VRAM resident", "descriptors", "host RSS", "C heap in use",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows(results):
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
