#!/usr/bin/env python3
"""The GPU kernels of one profiled training step, summed by name from Chrome traces that Kineto wrote.

usage: scripts/kernel_breakdown.py NAME=TRACE [NAME=TRACE ...] [--top N]

A trace comes from `bench --trace FILE` (convrep: libtorch's Kineto profiler around one step after the timed
ones) or `scripts/bench_pytorch.py --trace FILE` (torch.profiler, the same profiler). For each trace it prints
a Markdown table of the kernels (the events of category "kernel") by total time: calls, milliseconds, share
of the step's kernel time. Then one line per trace: the kernels' total, their count, and the span from the
first kernel's start to the last one's end (the gap is the GPU idle between kernels). Standard library only.
"""
import argparse
import collections
import json
import sys


def kernels(path):
    """(name, duration µs, start µs) of every GPU kernel in the trace at path."""
    with open(path, encoding="utf-8") as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    out = []
    for e in events:
        if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel":
            out.append((e.get("name", "?"), float(e.get("dur", 0)), float(e.get("ts", 0))))
    return out


def short(name, width=90):
    return name if len(name) <= width else name[: width - 1] + "…"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("traces", nargs="+", help="NAME=TRACE.json")
    p.add_argument("--top", type=int, default=20, help="kernels listed per trace (the rest summed in one row)")
    a = p.parse_args()
    totals = []
    for arg in a.traces:
        name, sep, path = arg.partition("=")
        if not sep:
            p.error(f"{arg}: want NAME=TRACE")
        ks = kernels(path)
        if not ks:
            print(f"{name}: no kernel events in {path} (was the profiler run on a GPU?)", file=sys.stderr)
            totals.append((name, 0.0, 0, 0.0))
            continue
        by = collections.defaultdict(lambda: [0, 0.0])
        for k, dur, _ in ks:
            by[k][0] += 1
            by[k][1] += dur
        total = sum(d for _, d, _ in ks)
        span = max(ts + d for _, d, ts in ks) - min(ts for _, _, ts in ks)
        print(f"### {name}\n\n| kernel | calls | ms | share |\n|---|---:|---:|---:|")
        rows = sorted(by.items(), key=lambda kv: -kv[1][1])
        for k, (n, d) in rows[: a.top]:
            print(f"| `{short(k)}` | {n} | {d / 1000:.3f} | {100 * d / total:.1f} % |")
        rest = rows[a.top:]
        if rest:
            n, d = sum(v[0] for _, v in rest), sum(v[1] for _, v in rest)
            print(f"| {len(rest)} other kernels | {n} | {d / 1000:.3f} | {100 * d / total:.1f} % |")
        print()
        totals.append((name, total, len(ks), span))
    print("| trace | kernels | kernel ms | span ms |\n|---|---:|---:|---:|")
    for name, total, n, span in totals:
        print(f"| {name} | {n} | {total / 1000:.3f} | {span / 1000:.3f} |")


if __name__ == "__main__":
    main()
