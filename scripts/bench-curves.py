#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""How smooth dmabench's curves are: per CSV (PREFIX.csv of a run), the raw DMA modes' lowest
throughput from 1 MiB on as a share of the modelled link's rate, the same for the double and
pooled buffers, and the largest drop between neighbouring sizes in any mode with its place.

    scripts/bench-curves.py [--model MB/s] run1.csv run2.csv ...

--model: the link's rate in MB/s (default 7111.1, the virtual board's gen3x8 preset,
docs/virtual-board.md). Exit status 1 if a file holds no raw mode, 2 on bad usage."""
import argparse
import collections
import csv
import sys

RAW = ("c2h", "h2c", "c2h-umem", "h2c-umem")
MiB = 1 << 20


def size_name(n):
    return f"{n // MiB}M" if n >= MiB else f"{n // 1024}K"


def judge(path, model):
    points = collections.defaultdict(list)
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            points[r["mode"]].append((int(r["bytes"]), float(r["throughput_MBps"])))
    raw = [v for m in RAW for s, v in points.get(m, []) if s >= MiB]
    if not raw:
        print(f"{path}: no raw DMA mode at 1 MiB or more", file=sys.stderr)
        return False
    bufs = [v for m, pts in points.items() if m[:2] in ("db", "pb") for s, v in pts if s >= MiB]
    worst = (0.0, "-")
    for m, pts in points.items():
        for (a, x), (b, y) in zip(pts, pts[1:]):
            if x > 0 and (x - y) / x > worst[0]:
                worst = ((x - y) / x, f"{m} {size_name(a)} -> {size_name(b)}")
    line = f"{path}: raw modes from 1 MiB >= {100 * min(raw) / model:.1f} % of {model:g} MB/s"
    if bufs:
        line += f"; db/pb from 1 MiB >= {100 * min(bufs) / model:.1f} %"
    print(line + f"; largest drop between neighbouring sizes {100 * worst[0]:.1f} % ({worst[1]})")
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=float, default=7111.1, help="the link's rate, MB/s")
    ap.add_argument("csv", nargs="+", help="dmabench PREFIX.csv files")
    a = ap.parse_args()
    if a.model <= 0:
        ap.error("--model must be positive")
    ok = all([judge(p, a.model) for p in a.csv])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
