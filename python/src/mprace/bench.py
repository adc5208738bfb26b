# SPDX-License-Identifier: LGPL-2.1-or-later
"""What Python costs on top of the C++ library, measured against dmabench in one run:

    python -m mprace.bench [--device emu:] [--dmabench PATH] [--sizes 1M,4M,16M] [--gpu] [--net]
                           [--csv FILE]

For each size S: a stream of S-byte buffers (8 of them, the pattern generator as source) consumed
in Python (the fastest of three windows of --seconds, as dmabench counts the fastest of its
three repeats), against dmabench's pooled-buffer mode pbSx8-c2h (libbufmgr's same pool of 8 buffers
of S, in C++) reading 16 S at a time; and the median of blocking 4 KiB reads from Python against
dmabench's lat-c2h at 4 KiB. With --gpu (a CUDA build of both, CuPy or PyTorch, a GPU): the
GPU stage (Board.gpu_stage, 4 buffers of S) reading 16 S at a time into a GPU array, against
dmabench's fi-pbSx4 (libbufmgr's same stage in C++). With --net (a build with UCX): the network
stage (Board.net_sender, 8 buffers of S, sending 16 S per call over loopback to a Python
mprace.Receiver in another process that releases every chunk unread), against dmabench's
net-pbSx8 sending to mprace-recv --no-check (UCX_TLS as set in the environment). With both
--net and --gpu, also the same with each chunk taken on into the receiver's GPU (Receiver.gpu():
read into a GPU array) against mprace-recv --gpu 0 --no-check. Prints a table and the ratios;
--csv writes them. The figures of docs/python.md come from this command.
"""
import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import mprace


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("B").rstrip("I")
    return int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)


def size_name(size: int) -> str:
    """dmabench's spelling of a size in a mode name: 1M, 64K, 4100."""
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def fastest(windows: int, seconds: float, step) -> float:
    """Bytes per second of the fastest of `windows` windows of `seconds`, each calling step()
    (which returns the bytes it moved) until its time is up: dmabench's --repeat 3 does the same."""
    best = 0.0
    for _ in range(windows):
        n = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            n += step()
        best = max(best, n / (time.perf_counter() - t0))
    return best


def python_stream(device: str, size: int, seconds: float) -> float:
    """Bytes per second of a stream of `size`-byte buffers consumed (released) in Python."""
    with mprace.open(device) as board:
        board.route(source="pattern")
        with board.stream(buffer_bytes=size, count=8) as s:
            for _ in range(8):  # warm up: every buffer filled once
                s.next().release()

            def one() -> int:
                s.next().release()
                return size
            return fastest(3, seconds, one)


def python_read_latency(device: str, reads: int) -> float:
    """Median microseconds of a blocking 4 KiB read from Python."""
    with mprace.open(device) as board:
        buf = board.alloc(4096, np.uint8)
        board.route(source="pattern")
        for _ in range(20):
            board.read(buf)
        times = []
        for _ in range(reads):
            t0 = time.perf_counter()
            board.read(buf)
            times.append((time.perf_counter() - t0) * 1e6)
        return statistics.median(times)


def gpu_zeros(nbytes: int):
    """nbytes of GPU memory as a CuPy array, else a PyTorch tensor."""
    try:
        import cupy
        return cupy.zeros(nbytes, dtype=cupy.uint8)
    except ImportError:
        import torch
        return torch.zeros(nbytes, dtype=torch.uint8, device="cuda")


def python_gpu_stage(device: str, size: int, seconds: float) -> float:
    """Bytes per second of Board.gpu_stage (4 buffers of `size`) reading 16 `size` at a time."""
    with mprace.open(device) as board:
        board.route(source="pattern")
        dst = gpu_zeros(16 * size)
        with board.gpu_stage(buffer_bytes=size, count=4) as stage:
            stage.read(dst)  # warm up
            return fastest(3, seconds, lambda: stage.read(dst))


RECEIVER = """
import sys, mprace
with mprace.Receiver("127.0.0.1:0", max_chunk=int(sys.argv[1])) as rx:
    print(rx.port, flush=True)
    for chunk in rx:
        chunk.release()
"""


RECEIVER_GPU = """
import sys, mprace
from mprace.bench import gpu_zeros
with mprace.Receiver("127.0.0.1:0", max_chunk=int(sys.argv[1])) as rx, rx.gpu() as g:
    dst = gpu_zeros(int(sys.argv[1]))
    print(rx.port, flush=True)
    while g.read(dst) is not None:
        pass
"""


def python_net(device: str, size: int, seconds: float, gpu: bool = False) -> float:
    """Bytes per second of Board.net_sender (8 buffers of `size`) sending 16 `size` per call to
    a Python Receiver in another process (with gpu: reading every chunk into a GPU array)."""
    rx = subprocess.Popen([sys.executable, "-c", RECEIVER_GPU if gpu else RECEIVER, str(size)],
                          stdout=subprocess.PIPE, text=True)
    try:
        port = int(rx.stdout.readline())
        with mprace.open(device) as board:
            board.route(source="pattern")
            with board.net_sender(f"127.0.0.1:{port}", buffer_bytes=size, count=8) as tx:
                tx.send(16 * size)  # warm up
                rate = fastest(3, seconds, lambda: tx.send(16 * size))
        rx.wait(30)
        return rate
    finally:
        rx.kill()
        rx.wait()


def dmabench_net(exe: str, recv: str, device: str, size: int, seconds: float, gpu: bool = False) -> float:
    """MB/s of dmabench's net-pb<size>x8 to mprace-recv --no-check (with gpu: --gpu 0), 16 `size`
    per transfer."""
    with tempfile.TemporaryDirectory() as tmp:
        port_file = os.path.join(tmp, "port")
        rx = subprocess.Popen([recv, "-l", "127.0.0.1:0", "--port-file", port_file, "-q", "--senders", "1",
                               "--no-check", "--max-chunk", str(size)] + (["--gpu", "0"] if gpu else []),
                              stdout=subprocess.DEVNULL)
        try:
            for _ in range(200):
                if os.path.exists(port_file) and os.path.getsize(port_file):
                    break
                time.sleep(0.05)
            with open(port_file) as f:
                port = f.read().strip()
            mode = f"net-pb{size_name(size)}x8"
            out = dmabench(exe, device, mode, str(16 * size), seconds, ["--net-to", f"127.0.0.1:{port}"])
            rx.wait(30)
            return out.get((mode, 16 * size), [0.0])[0]
        finally:
            rx.kill()
            rx.wait()


def dmabench(exe: str, device: str, modes: str, sizes: str, seconds: float, extra=()) -> dict:
    """{(mode, bytes): (MB/s, p50 µs or None)} from one dmabench run."""
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "run")
        # dmabench on the CPUs this process may use, as Python runs: without --cpus, on a small
        # host it would put itself and the virtual board on one CPU (docs/dmabench.md)
        cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
        r = subprocess.run([exe, "-d", device, "-m", modes, "-s", sizes, "-t", str(seconds), "-r", "3",
                            "--cpus", cpus, "-o", prefix, *extra], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"mprace.bench: {exe} failed:\n{r.stderr}")
        out = {}
        with open(prefix + ".csv") as f:
            for row in csv.DictReader(f):
                out[(row["mode"], int(row["bytes"]))] = [float(row["throughput_MBps"]), None]
        lat = prefix + "-latency.csv"
        if os.path.exists(lat):
            with open(lat) as f:
                for row in csv.DictReader(f):
                    out.setdefault((row["mode"], int(row["bytes"])), [0.0, None])[1] = float(row["p50_us"])
        return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mprace.bench", description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="emu:", help="board (default emu:)")
    ap.add_argument("--dmabench", default=shutil.which("dmabench"), help="dmabench to compare with (default: on PATH)")
    ap.add_argument("--sizes", default="1M,4M,16M", help="stream buffer sizes (default 1M,4M,16M)")
    ap.add_argument("--seconds", type=float, default=1.0, help="time per stream measurement (default 1)")
    ap.add_argument("--reads", type=int, default=2000, help="4 KiB reads timed (default 2000)")
    ap.add_argument("--gpu", action="store_true", help="also the GPU stage against dmabench's fi-pb<S>x4")
    ap.add_argument("--net", action="store_true", help="also the network stage against dmabench's net-pb<S>x8")
    ap.add_argument("--mprace-recv", help="mprace-recv for --net (default: beside dmabench, else on PATH)")
    ap.add_argument("--csv", help="write the rows to this file")
    a = ap.parse_args(argv)
    if not a.dmabench:
        ap.error("no dmabench on PATH: give --dmabench PATH")
    try:
        sizes = [parse_size(s) for s in a.sizes.split(",")]
    except (ValueError, KeyError):
        ap.error(f"bad --sizes {a.sizes!r}")
    if any(s <= 0 or s % 4 for s in sizes) or a.seconds <= 0 or a.reads <= 0:
        ap.error("sizes must be positive multiples of 4; --seconds and --reads positive")
    ref = {}
    for s in sizes:  # the pool pipelines only over reads of several buffers
        ref.update(dmabench(a.dmabench, a.device, f"pb{size_name(s)}x8-c2h", str(16 * s), a.seconds))
    ref.update(dmabench(a.dmabench, a.device, "lat-c2h", "4096", a.seconds))
    if a.gpu:
        if not mprace.cuda_available():
            sys.exit(f"mprace.bench: --gpu: {mprace.cuda_unavailable_reason()}")
        for s in sizes:
            ref.update(dmabench(a.dmabench, a.device, f"fi-pb{size_name(s)}x4", str(16 * s), a.seconds))
    rows = []
    for s in sizes:
        py = python_stream(a.device, s, a.seconds) / 1e6
        c = ref.get((f"pb{size_name(s)}x8-c2h", 16 * s), [0.0])[0]
        rows.append(("stream", s, py, c, py / c if c else float("nan"), "MB/s"))
    for s in sizes if a.gpu else []:
        py = python_gpu_stage(a.device, s, a.seconds) / 1e6
        c = ref.get((f"fi-pb{size_name(s)}x4", 16 * s), [0.0])[0]
        rows.append(("gpu stage", s, py, c, py / c if c else float("nan"), "MB/s"))
    if a.net:
        if not mprace.network_available():
            sys.exit("mprace.bench: --net: this build has no network stage (no UCX)")
        recv = a.mprace_recv or os.path.join(os.path.dirname(a.dmabench), "mprace-recv")
        if not os.access(recv, os.X_OK):
            recv = shutil.which("mprace-recv")
        if not recv:
            ap.error("--net: no mprace-recv beside dmabench or on PATH: give --mprace-recv PATH")
        for s in sizes:
            c = dmabench_net(a.dmabench, recv, a.device, s, a.seconds)
            py = python_net(a.device, s, a.seconds) / 1e6
            rows.append(("net", s, py, c, py / c if c else float("nan"), "MB/s"))
        for s in sizes if a.gpu else []:
            c = dmabench_net(a.dmabench, recv, a.device, s, a.seconds, gpu=True)
            py = python_net(a.device, s, a.seconds, gpu=True) / 1e6
            rows.append(("net to gpu", s, py, c, py / c if c else float("nan"), "MB/s"))
    py_lat = python_read_latency(a.device, a.reads)
    c_lat = ref.get(("lat-c2h", 4096), [0.0, None])[1] or float("nan")
    rows.append(("read 4 KiB p50", 4096, py_lat, c_lat, py_lat - c_lat, "us (last column: Python - C)"))
    print(f"device {a.device}; reference {a.dmabench}")
    print(f"{'what':<16} {'bytes':>10} {'Python':>10} {'C++':>10} {'ratio/diff':>11}  unit")
    for what, size, py, c, r, unit in rows:
        print(f"{what:<16} {size:>10} {py:>10.1f} {c:>10.1f} {r:>11.3f}  {unit}")
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["what", "bytes", "python", "cpp", "ratio_or_diff", "unit"])
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
