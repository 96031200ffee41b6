#!/usr/bin/env python3
"""Per-kernel time of one decode step, from an Nsight Compute CSV.

    ncu --csv --print-units base --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
        --log-file PROFILE.csv folio bench ... --no-cuda-graphs
    python3 bench/cuda_profile/ncu_summary.py PROFILE.csv [--steps 3] [--token-ms T]

A step starts at the embedding lookup (gather_kernel, the first kernel of
every forward pass); the last --steps steps are averaged. Kernels under ncu run one at a
time, so the sum of their durations is the step's GPU busy time; --token-ms
(the step time measured without the profiler, with CUDA graphs) gives the
rest: gaps between kernels, launch latency, host work.
"""
import argparse
import csv
import collections
import re


def short(name):
    name = re.sub(r"\(.*", "", name)            # drop the argument list
    name = re.sub(r"^void ", "", name)
    name = re.sub(r"(\(anonymous namespace\)|[\w<>]*)::", "", name)  # namespaces
    return name[:90]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--token-ms", type=float, default=0.0)
    a = ap.parse_args()
    kernels = collections.OrderedDict()  # id -> dict
    with open(a.csv, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    for row in csv.DictReader(lines):
        k = kernels.setdefault(row["ID"], {"name": short(row["Kernel Name"]), "grid": row["Grid Size"],
                                           "block": row["Block Size"]})
        try:
            k[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
        except ValueError:
            pass
    seq = list(kernels.values())
    starts = [i for i, k in enumerate(seq) if k["name"].startswith("gather_kernel")]
    if len(starts) < a.steps + 1:
        raise SystemExit(f"only {len(starts)} steps in the profile")
    first, last = starts[-a.steps - 1], starts[-1]   # whole steps only: the last one may be cut
    steps = seq[first:last]
    by = collections.OrderedDict()
    for k in steps:
        key = (k["name"], k["grid"])
        e = by.setdefault(key, [0, 0.0, 0.0])
        e[0] += 1
        e[1] += k.get("gpu__time_duration.sum", 0.0)
        e[2] += k.get("dram__bytes_read.sum", 0.0) + k.get("dram__bytes_write.sum", 0.0)
    total_ns = sum(e[1] for e in by.values()) / a.steps
    total_bytes = sum(e[2] for e in by.values()) / a.steps
    print(f"{'kernel':60s} {'grid':>16s} {'per step':>8s} {'us each':>8s} {'us/step':>9s} {'share':>6s} {'GB/s':>7s}")
    for (name, grid), (n, ns, b) in sorted(by.items(), key=lambda kv: -kv[1][1]):
        print(f"{name[:60]:60s} {grid:>16s} {n / a.steps:8.1f} {ns / n / 1e3:8.2f} {ns / a.steps / 1e3:9.1f} "
              f"{100 * ns / a.steps / total_ns:5.1f}% {b / ns if ns else 0:7.0f}")
    n_kernels = len(steps) / a.steps
    print(f"\nper step: {n_kernels:.0f} kernels, {total_ns / 1e3:.1f} us of kernel time, "
          f"{total_bytes / 1e9:.3f} GB of DRAM traffic ({total_bytes / total_ns:.0f} GB/s while busy)")
    if a.token_ms > 0:
        # Under the profiler kernels run one at a time, each from a cold start
        # (no overlap of one kernel's tail with the next one's start), so the
        # sum can exceed the replayed step; below it, the rest is idle time.
        ratio = total_ns / (a.token_ms * 1e6)
        print(f"step replayed from a CUDA graph: {a.token_ms:.3f} ms; kernel sum / step = {ratio:.2f}"
              + (f" (idle {(a.token_ms * 1e6 - total_ns) / 1e3:.0f} us)" if ratio < 1 else ""))

if __name__ == "__main__":
    main()
