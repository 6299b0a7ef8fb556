"""The public reports' stack on two GPUs: SYCL (Intel's runtime, intel-sycl-rt) over its
Level Zero adapter (intel-cmplr-lib-ur), through dpctl's prebuilt bindings (PyPI has no
SYCL compiler): a context over two GPUs, `sycl::malloc_device` on the first
(dpctl.memory.MemoryUSMDevice), then each allocation read from the second GPU's queue
(queue.memcpy), counted per allocation as bench/level-zero/peer_resident.c counts.

    COUNT=50 python peer_access.py     # under `clmulti emulate --driver xe --devices 2`
"""
import os

import dpctl
import dpctl.memory as dpmem

KEYS = ("exports", "exports-created", "imports", "imports-created", "vm-binds",
        "objects-0-vram0", "objects-1-vram0", "deferred-objects-0-vram0",
        "resident-bytes-0-vram0", "resident-bytes-1-vram0", "execs")


def counts():
    try:
        with open("/run/clmulti-kmd-emu/counts") as f:
            pairs = (l.split(":", 1) for l in f if ":" in l and not l.startswith("#"))
            return {k.strip(): int(v) for k, v in pairs if v.strip().isdigit()}
    except OSError:
        return {}


def descriptors():
    return len(os.listdir("/proc/self/fd"))


def per(label, before, after, fds, n):
    print(f"{label}.descriptors_per_allocation={(descriptors() - fds) / n:.3f}")
    for k in KEYS:
        if after.get(k, 0) != before.get(k, 0):
            print(f"{label}.{k}_per_allocation={(after.get(k, 0) - before.get(k, 0)) / n:.3f}")


def main():
    n = int(os.environ.get("COUNT", "50"))
    devices = dpctl.get_devices(backend="level_zero", device_type="gpu")
    print(f"sycl_devices={len(devices)}")
    print(f"device_name={devices[0].name}")
    context = dpctl.SyclContext(devices[:2])
    q0 = dpctl.SyclQueue(context, devices[0])
    q1 = dpctl.SyclQueue(context, devices[1])
    fds, before = descriptors(), counts()
    allocations = [dpmem.MemoryUSMDevice(1 << 20, queue=q0) for _ in range(n)]
    allocated = counts()
    per("allocated", before, allocated, fds, n)
    host = dpmem.MemoryUSMHost(1 << 20, queue=q1)
    for a in allocations:
        q1.memcpy(host, a, 1 << 20)
    per("read_from_peer", before, counts(), fds, n)


if __name__ == "__main__":
    main()
