# SPDX-License-Identifier: GPL-2.0
"""The network stage from Python (Board.net_sender -> mprace.Receiver, over UCX on this
machine): the pattern checked byte for byte at two receivers, back-pressure from a slow
receiver, a receiver or a sender killed mid-run, bad addresses and arguments. Skipped where
the package was built without UCX."""
import errno
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import mprace
from conftest import pattern

pytestmark = pytest.mark.skipif(not mprace.network_available(), reason="this build has no network stage (no UCX)")


@pytest.fixture(params=["tcp", "shm,tcp"])
def transport(request, monkeypatch):
    """UCX's transports for this test (UCX reads UCX_TLS when a context is made)."""
    monkeypatch.setenv("UCX_TLS", request.param)
    return request.param


class Pump(threading.Thread):
    """Progresses a Receiver on a thread of its own (a sender's constructor waits for the
    receivers' credits, and a receiver progresses only in next()): keeps (offset, link_sequence,
    a copy of the bytes) of every chunk, or the chunks themselves (keep=True), until the
    senders have ended and stop() was called, or with until_end at the end of the stream."""

    def __init__(self, rx, delay=0.0, keep=False, until_end=True):
        super().__init__(daemon=True)
        self.rx, self.delay, self.keep, self.until_end = rx, delay, keep, until_end
        self.got, self.chunks, self.stopping = [], [], False

    def run(self):
        while not self.stopping:
            try:
                chunk = self.rx.next(0.1)
            except mprace.TransferTimeout:
                continue
            if chunk is None:
                if self.until_end:
                    return
                time.sleep(0.01)
                continue
            if self.keep:
                self.chunks.append(chunk)
                continue
            with chunk:
                self.got.append((chunk.offset, chunk.link_sequence, np.array(chunk)))
            if self.delay:
                time.sleep(self.delay)

    def stop(self):
        self.stopping = True
        self.join(30)
        assert not self.is_alive()


def check_stream(chunks, seed, total):
    """The chunks of all receivers cover [0, total) exactly, each the board's pattern."""
    chunks = sorted(chunks, key=lambda c: c[0])
    at = 0
    for offset, _, data in chunks:
        assert offset == at, f"a gap or an overlap at byte {at}"
        words = data.view(np.uint32)
        assert np.array_equal(words, pattern(seed + offset // 4, len(words))), f"chunk at {offset}"
        at += len(data)
    assert at == total


def test_two_receivers_get_the_pattern_byte_for_byte(board, transport):
    with mprace.Receiver(":0") as rx0, mprace.Receiver(":0") as rx1:
        threads = [Pump(rx0), Pump(rx1)]
        for t in threads:
            t.start()
        with board.net_sender([f"127.0.0.1:{rx0.port}", f"127.0.0.1:{rx1.port}"], buffer_bytes=256 << 10,
                              count=4, source=7) as tx:
            board.route(source="pattern")
            board.pattern(seed=1000)  # stream offset 0 is the pattern's word 0
            assert tx.send(6 << 20) == 6 << 20
            assert tx.send(1000 * 4) == 4000  # a short last chunk
            stats = tx.stats
        for t in threads:
            t.join(30)
        assert not any(t.is_alive() for t in threads)
        got = [threads[0].got, threads[1].got]
        for rx, out in ((rx0, got[0]), (rx1, got[1])):
            (conn,) = rx.connections
            assert conn["source"] == 7 and conn["ended"] and not conn["lost"]
            assert conn["missing"] == conn["duplicates"] == conn["incomplete"] == 0
            assert [c[1] for c in out] == list(range(len(out)))  # link sequence in order
            assert len(out) >= 12  # round robin: each had half
    assert stats["chunks"] == 25 and stats["bytes"] == (6 << 20) + 4000
    check_stream(got[0] + got[1], 1000, (6 << 20) + 4000)


def test_a_slow_receiver_stalls_the_board_and_loses_nothing(board, monkeypatch):
    monkeypatch.setenv("UCX_TLS", "tcp")
    with mprace.Receiver(":0", window=2) as rx:
        t = Pump(rx, delay=0.02)  # 20 ms per chunk
        t.start()
        with board.net_sender(f"127.0.0.1:{rx.port}", buffer_bytes=64 << 10, count=4) as tx:
            board.route(source="pattern")
            board.pattern(seed=5)
            t0 = time.monotonic()
            assert tx.send(2 << 20) == 2 << 20  # 32 chunks: >= 0.6 s at the receiver's pace
            took = time.monotonic() - t0
            waits = tx.stats["credit_waits"]
        t.join(30)
    assert took > 0.4 and waits > 0  # the sender waited for credits: the board was held back
    check_stream(t.got, 5, 2 << 20)


RECEIVER = textwrap.dedent("""
    import sys, time, mprace
    with mprace.Receiver(":0", window=2) as rx:
        print(rx.port, flush=True)
        for chunk in rx:
            chunk.release()
            time.sleep(float(sys.argv[1]))
        print("ended", [(c["ended"], c["lost"], c["missing"]) for c in rx.connections], flush=True)
""")


def test_a_killed_receiver_fails_the_send_clearly(board, monkeypatch):
    monkeypatch.setenv("UCX_TLS", "tcp")
    p = subprocess.Popen([sys.executable, "-c", RECEIVER, "0.05"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(p.stdout.readline())
        with board.net_sender(f"127.0.0.1:{port}", buffer_bytes=64 << 10, count=4) as tx:
            board.route(source="pattern")
            threading.Timer(0.5, p.kill).start()
            t0 = time.monotonic()
            with pytest.raises(OSError) as e:
                tx.send(1 << 30, timeout=60)  # 16384 chunks at 20 per second: ends by the kill
            assert time.monotonic() - t0 < 15  # the documented bound: UCX's error, not a hang
            assert e.value.errno not in (0, None) and str(e.value)
            assert tx.stats["stream_offset"] < 1 << 30
    finally:
        p.kill()
        p.wait()


SENDER = textwrap.dedent("""
    import sys, mprace
    with mprace.open("emu:") as b:
        tx = b.net_sender(sys.argv[1], buffer_bytes=64 << 10, count=4)
        b.route(source="pattern")
        b.pattern(seed=0, rate=1)   # 1 MB/s: still sending when it is killed
        print("sending", flush=True)
        tx.send(1 << 30, timeout=None)
""")


def test_a_killed_sender_is_reported_lost(monkeypatch):
    monkeypatch.setenv("UCX_TLS", "tcp")
    with mprace.Receiver(":0") as rx:
        p = subprocess.Popen([sys.executable, "-c", SENDER, f"127.0.0.1:{rx.port}"], stdout=subprocess.PIPE, text=True)
        try:
            t = Pump(rx)
            t.start()
            assert p.stdout.readline().strip() == "sending"
            time.sleep(0.5)
            p.send_signal(signal.SIGKILL)
            t.join(30)
            assert not t.is_alive(), "the receiver did not see the sender go"
        finally:
            p.kill()
            p.wait()
        (conn,) = rx.connections
        assert conn["lost"] and not conn["ended"] and conn["error"]
        assert rx.drained and rx.next(0.1) is None
        check_stream(t.got, 0, sum(len(c[2]) for c in t.got))  # what did arrive is intact


def test_bad_addresses_and_refused_connections(board, monkeypatch):
    monkeypatch.setenv("UCX_TLS", "tcp")
    for bad in ("no-port", "127.0.0.1:99999", ":"):
        with pytest.raises(OSError) as e:
            board.net_sender(bad)
        assert e.value.errno == errno.EINVAL, bad
    with pytest.raises(OSError) as e:  # nobody listens on port 1
        board.net_sender("127.0.0.1:1", connect_timeout=3)
    assert e.value.errno in (errno.ECONNREFUSED, errno.ETIMEDOUT, errno.EHOSTUNREACH)
    with pytest.raises(OSError) as e:
        mprace.Receiver("not an address")
    assert e.value.errno == errno.EINVAL
    board.route(source="pattern")
    assert board.read(board.alloc(1024, np.uint8)) == 1024  # the board is unharmed


def test_bad_arguments(board):
    for kw, exc in (({"to": 5}, TypeError), ({"to": []}, TypeError), ({"buffer_bytes": 6}, ValueError),
                    ({"count": 1}, ValueError), ({"route": "random"}, ValueError), ({"source": 1 << 16}, ValueError),
                    ({"chunks_per_timeframe": 0}, ValueError), ({"connect_timeout": 0}, ValueError),
                    ({"connect_timeout": float("nan")}, ValueError), ({"connect_timeout": float("inf")}, ValueError)):
        kw.setdefault("to", "127.0.0.1:1")
        with pytest.raises(exc):
            board.net_sender(**kw)
    for kw, exc in (({"window": 0}, ValueError), ({"window": 1 << 30}, ValueError), ({"max_chunk": -1}, ValueError),
                    ({"max_chunk": 1 << 40}, ValueError), ({"window": 2.0}, TypeError), ({"listen": 5}, TypeError)):
        with pytest.raises(exc):
            mprace.Receiver(**kw)


def test_chunk_lifetime_and_a_chunk_too_large(board, monkeypatch):
    monkeypatch.setenv("UCX_TLS", "tcp")
    rx = mprace.Receiver(":0", max_chunk=64 << 10)
    pump = Pump(rx, keep=True, until_end=False)
    pump.start()
    with pytest.raises(OSError) as e:  # its chunks would be larger than the receiver takes
        board.net_sender(f"127.0.0.1:{rx.port}", buffer_bytes=128 << 10)
    assert e.value.errno == errno.EMSGSIZE
    tx = board.net_sender(f"127.0.0.1:{rx.port}", buffer_bytes=64 << 10)
    board.route(source="pattern")
    board.pattern(seed=9)
    assert tx.send(64 << 10) == 64 << 10
    for _ in range(100):
        if pump.chunks:
            break
        time.sleep(0.05)
    pump.stop()
    (chunk,) = pump.chunks
    view = np.asarray(chunk)  # read-only, no copy
    assert not view.flags.writeable
    rx.close()  # the chunk is released; its memory stays for the array
    assert chunk.released and np.array_equal(view.view(np.uint32), pattern(9, 16384))
    with pytest.raises(ValueError, match="released"):
        chunk.offset
    with pytest.raises(ValueError, match="closed"):
        rx.next(0)
    del view
    board.close()  # closes the sender too
    assert tx.closed


def test_close_from_another_thread_ends_a_wait():
    rx = mprace.Receiver(":0")
    outcome = []

    def wait():
        try:
            outcome.append(rx.next(None))  # no sender: waits until closed
        except ValueError as e:
            outcome.append(e)
    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.2)
    t0 = time.monotonic()
    rx.close()
    t.join(10)
    assert not t.is_alive() and time.monotonic() - t0 < 2
    assert isinstance(outcome[0], ValueError) and "closed" in str(outcome[0])
