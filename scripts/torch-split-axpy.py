#!/usr/bin/env python3
"""PyTorch's peer of `clmulti axpy --split`: the same split axpy, timed the same way.

    python3 scripts/torch-split-axpy.py --n 536870912 --gpus 2 --repeat 20 [--format json]

y += alpha * x over n floats, cut into one contiguous part per GPU (equal, the last
taking the rest, as clmulti cuts them); each GPU adds its own part (`y_i.add_(x_i,
alpha=...)`), launched one after the other from this thread, then every GPU is
synchronized. The aggregate is 3 * n * 4 bytes over the host clock from the first
launch to the last completion seen, best (and median) of --repeat after --warmup
repetitions, waiting for completion the fastest of four ways (by median of ten trials
each, as clmulti chooses its launch); the same launch of the whole vector on GPU 0
alone gives the one-device figure, and aggregate / (GPUs x one device) the scaling
efficiency. Each part's
kernel is also timed by CUDA events (separate repetitions), like clmulti's per-device
figures. Inputs are random, and every part is checked against a float64 reference
after all repetitions (relative error of y, which must stay far under 1e-5).
"""

import argparse
import json
import statistics
import sys
import time

ALPHA = 0.75


def parts_of(n, gpus):
    base = n // gpus
    return [base] * (gpus - 1) + [n - base * (gpus - 1)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, required=True, help="elements (floats) of the whole vector")
    parser.add_argument("--gpus", type=int, default=None, help="GPUs to split over (default: all)")
    parser.add_argument("--repeat", type=int, default=20, help="timed repetitions")
    parser.add_argument("--warmup", type=int, default=5, help="untimed repetitions first")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    args = parser.parse_args()
    if args.n < 1 or args.repeat < 1 or args.warmup < 0:
        parser.error("--n and --repeat must be at least 1, --warmup at least 0")

    import torch

    if not torch.cuda.is_available():
        sys.exit("error: PyTorch sees no CUDA device (torch.cuda.is_available() is False)")
    available = torch.cuda.device_count()
    gpus = args.gpus or available
    if gpus > available:
        sys.exit(f"error: --gpus {gpus}, but PyTorch sees {available} GPU(s)")
    devices = [torch.device("cuda", i) for i in range(gpus)]
    sync_all = lambda: [torch.cuda.synchronize(d) for d in devices]
    byte_count = 3 * args.n * 4

    def random_vector(length, device, seed):
        generator = torch.Generator(device=device).manual_seed(seed)
        return torch.rand(length, device=device, generator=generator) * 2 - 1

    streams = [torch.cuda.current_stream(d) for d in devices]
    marks = []
    for d in devices:
        with torch.cuda.device(d):
            marks.append(torch.cuda.Event())

    def wait_synchronize(ys):
        for y in ys:
            torch.cuda.synchronize(y.device)

    def wait_stream(ys):
        for y in ys:
            streams[y.device.index].synchronize()

    def wait_event(ys):
        for y in ys:
            marks[y.device.index].synchronize()

    def wait_poll(ys):
        pending = [marks[y.device.index] for y in ys]
        while pending:
            pending = [m for m in pending if not m.query()]

    # Ways of seeing the parts complete (PyTorch's peers of clmulti's strategies);
    # the fastest by median is timed, as clmulti does.
    ways = {
        "torch.cuda.synchronize per device": (wait_synchronize, False),
        "stream.synchronize per device": (wait_stream, False),
        "event per part, event.synchronize": (wait_event, True),
        "event per part, polling event.query": (wait_poll, True),
    }

    def one_rep(xs, ys, way):
        wait, mark = ways[way]
        sync_all()
        start = time.perf_counter()
        launched = []
        for x, y in zip(xs, ys):
            y.add_(x, alpha=ALPHA)
            if mark:
                marks[y.device.index].record(streams[y.device.index])
            launched.append(time.perf_counter() - start)
        wait(ys)
        return time.perf_counter() - start, launched

    def host_timed(xs, ys, applications):
        """The fastest way's best and median host seconds, first launch to last
        completion seen; every way's median, last launch call's end and total."""
        trials = {way: [] for way in ways}
        for rep in range(args.warmup + 10):
            for way in ways:
                total, launched = one_rep(xs, ys, way)
                applications[0] += 1
                if rep >= args.warmup:
                    trials[way].append((total, launched[-1]))
        figures = {
            way: {"total_us": statistics.median(t for t, _ in v) * 1e6,
                  "launched_us": statistics.median(l for _, l in v) * 1e6}
            for way, v in trials.items()
        }
        chosen = min(figures, key=lambda way: figures[way]["total_us"])
        times = []
        for _ in range(args.repeat):
            times.append(one_rep(xs, ys, chosen)[0])
            applications[0] += 1
        return min(times), statistics.median(times), chosen, figures

    def event_timed(x, y, applications):
        """Best seconds of one part's kernel by CUDA events."""
        best = float("inf")
        with torch.cuda.device(y.device):
            for _ in range(args.repeat):
                begin = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                begin.record()
                y.add_(x, alpha=ALPHA)
                end.record()
                end.synchronize()
                applications[0] += 1
                best = min(best, begin.elapsed_time(end) * 1e-3)
        return best

    def relative_error(x, y0, y, applications):
        expected = y0.double() + applications * ALPHA * x.double()
        return ((y.double() - expected).norm() / expected.norm()).item()

    # One GPU, whole vector.
    x = random_vector(args.n, devices[0], 1)
    y = random_vector(args.n, devices[0], 2)
    y0 = y.clone()
    applied = [0]
    one_best, one_median, one_way, one_ways = host_timed([x], [y], applied)
    one_events = event_timed(x, y, applied)
    errors = [relative_error(x, y0, y, applied[0])]
    del x, y, y0
    torch.cuda.empty_cache()

    # The split.
    sizes = parts_of(args.n, gpus)
    xs = [random_vector(p, d, 10 + i) for i, (p, d) in enumerate(zip(sizes, devices))]
    ys = [random_vector(p, d, 20 + i) for i, (p, d) in enumerate(zip(sizes, devices))]
    y0s = [y.clone() for y in ys]
    applied = [0]
    split_best, split_median, split_way, split_ways = host_timed(xs, ys, applied)
    part_events = [event_timed(x, y, [0]) for x, y in zip(xs, ys)]
    # Each part had the split's applications and --repeat event-timed ones of its own.
    for x, y0, y in zip(xs, y0s, ys):
        errors.append(relative_error(x, y0, y, applied[0] + args.repeat))
    worst = max(errors)
    if not worst < 1e-5:
        sys.exit(f"error: results differ from the float64 reference (relative error {worst:.3g})")

    one = byte_count / one_best / 1e9
    aggregate = byte_count / split_best / 1e9
    report = {
        "tool": "torch-split-axpy",
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "n": args.n,
        "gpus": gpus,
        "parts": sizes,
        "repeat": args.repeat,
        "warmup": args.warmup,
        "one_device_gb_per_s": one,
        "one_device_gb_per_s_median": byte_count / one_median / 1e9,
        "one_device_events_gb_per_s": byte_count / one_events / 1e9,
        "aggregate_gb_per_s_best": aggregate,
        "aggregate_gb_per_s_median": byte_count / split_median / 1e9,
        "scaling_efficiency": aggregate / (one * gpus),
        "parts_events_gb_per_s": [3 * p * 4 / t / 1e9 for p, t in zip(sizes, part_events)],
        "max_relative_error": worst,
        "one_device_way": one_way,
        "split_way": split_way,
        "split_ways": split_ways,
        "one_device_ways": one_ways,
    }
    if args.format == "json":
        print(json.dumps(report))
        return
    print(f"PyTorch {report['torch']} on {gpus} x {report['device']}: y.add_(x, alpha) over n = {args.n}, "
          f"parts {' + '.join(map(str, sizes))}; host clock, first launch to last completion, "
          f"best and median of {args.repeat} after {args.warmup} warm-up(s)")
    print(f"  one GPU       {one:9.1f} GB/s best  {report['one_device_gb_per_s_median']:9.1f} median  "
          f"({report['one_device_events_gb_per_s']:.1f} by CUDA events)")
    print(f"  split         {aggregate:9.1f} GB/s best  {report['aggregate_gb_per_s_median']:9.1f} median  "
          f"efficiency {report['scaling_efficiency']:.3f}")
    print("  parts by CUDA events: " + ", ".join(f"{g:.1f}" for g in report["parts_events_gb_per_s"]) + " GB/s")
    print(f"  verified against float64 (largest relative error {worst:.2g})")
    print(f"  waited by: {split_way} (split), {one_way} (one GPU): the fastest by median of 10 trials each")
    for way, f in split_ways.items():
        print(f"    split, {way}: {f['total_us']:.1f} us, last launch call done at {f['launched_us']:.1f} us (medians)")


if __name__ == "__main__":
    main()
