# SPDX-License-Identifier: GPL-2.0
"""Transfers on the virtual board, checked byte for byte: C2H from the pattern generator, H2C
into the checker, both through the loopback; slices, async, errors, Ctrl-C, threads."""
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


@pytest.mark.parametrize("memory", ["kernel", "user"])
@pytest.mark.parametrize("words", [1, 3, 1023, 4099, 262147])
def test_c2h_pattern_byte_for_byte(board, memory, words):
    buf = board.alloc(words, np.uint32, memory=memory)
    board.route(source="pattern")
    board.pattern(seed=0x1000 + words)
    assert board.read(buf) == words * 4
    assert np.array_equal(np.asarray(buf), pattern(0x1000 + words, words))


@pytest.mark.parametrize("memory", ["kernel", "user"])
def test_h2c_into_the_checker(board, memory):
    buf = board.alloc(65536, np.uint32, memory=memory)
    np.asarray(buf)[:] = pattern(77, 65536)
    board.route(sink="checker")
    board.reset_checker(77)
    assert board.write(buf) == 65536 * 4
    assert board.checker == (65536, 0)
    buf[1000] ^= 0x10000
    board.reset_checker(77)
    board.write(buf)
    assert board.checker == (65536, 1)


def test_slice_transfers_only_its_part(board):
    buf = board.alloc(4096, np.uint32, memory="user")
    a = np.asarray(buf)
    a[:] = 0xFFFFFFFF
    board.route(source="pattern")
    board.pattern(seed=9)
    view = a[100:300]
    assert board.read(view) == 200 * 4
    assert np.array_equal(a[100:300], pattern(9, 200))
    assert (a[:100] == 0xFFFFFFFF).all() and (a[300:] == 0xFFFFFFFF).all()
    b2 = buf[10:20]  # Buffer.__getitem__ gives the same kind of view
    board.pattern(seed=1)
    board.read(b2)
    assert np.array_equal(a[10:20], pattern(1, 10))


def test_bad_regions(board):
    buf = board.alloc(64, np.uint8)
    a = np.asarray(buf)
    with pytest.raises(ValueError, match="multiples of 4"):
        board.read(a[1:9])
    with pytest.raises(ValueError, match="multiples of 4"):
        board.read(a[0:6])
    with pytest.raises(ValueError, match="strided"):
        board.read(np.asarray(board.alloc((8, 8), np.uint32))[:, ::2])
    with pytest.raises(ValueError, match="not a view"):
        board.read(np.zeros(16, np.uint32))
    with pytest.raises(TypeError):
        board.read(b"1234")
    with pytest.raises(ValueError, match="timeout"):
        board.read(buf, timeout=-1)


def test_timeouts_nan_refused_infinity_is_no_limit(board):
    """NaN compares false with everything: taken as it was, it waited without a limit."""
    board.route(source="pattern")
    board.pattern(seed=3)
    buf = board.alloc(1024, np.uint32)
    for bad in (float("nan"), "1", True):
        with pytest.raises(ValueError, match="timeout"):
            board.read(buf, timeout=bad)
        t = board.read_async(buf)
        with pytest.raises(ValueError, match="timeout"):
            t.wait(timeout=bad)
        assert t.wait(timeout=5) == 4096
    assert board.read(buf, timeout=float("inf")) == 4096
    assert board.read_async(buf).wait(timeout=float("inf")) == 4096
    assert (np.asarray(buf) == 3 + 4 * 1024 + np.arange(1024, dtype=np.uint32)).all()  # the 5th transfer


def test_buffer_of_another_board(board):
    with mprace.open("emu:") as other:
        buf = other.alloc(64, np.uint8)
        with pytest.raises(ValueError, match="another board"):
            board.read(buf)


def test_loopback_both_channels_async(board):
    src = board.alloc(1 << 18, np.uint8, memory="user")
    dst = board.alloc(1 << 18, np.uint8, memory="user")
    np.asarray(src)[:] = np.random.default_rng(5).integers(0, 256, 1 << 18, dtype=np.uint8)
    board.route(source="loopback", sink="loopback")
    r = board.read_async(dst)
    w = board.write_async(src)
    assert w.wait(10) == 1 << 18 and r.wait(10) == 1 << 18
    assert r.done and r.result["bytes"] == 1 << 18 and r.result["engine_error_name"] == "NONE"
    assert np.array_equal(np.asarray(src), np.asarray(dst))


def test_engine_error():
    with mprace.open("emu:buserr=c2h") as b:
        buf = b.alloc(4096, np.uint8)
        b.route(source="pattern")
        with pytest.raises(mprace.EngineError) as e:
            b.read(buf)
        assert e.value.engine_error_name == "BUS_ERROR" and isinstance(e.value, OSError)
        assert e.value.errno != 0


def test_timeout_aborts_and_the_board_goes_on(board):
    buf = board.alloc(1 << 22, np.uint8)
    board.route(source="pattern")
    board.pattern(seed=3, rate=1)  # 1 MB/s: 4 s for the buffer
    with pytest.raises(mprace.TransferTimeout) as e:
        board.read(buf, timeout=0.05)
    assert isinstance(e.value, TimeoutError)
    board.pattern(seed=3, rate=0)
    small = board.alloc(1024, np.uint32)
    board.read(small)
    assert np.array_equal(np.asarray(small), pattern(3, 1024))


def test_abort_async(board):
    buf = board.alloc(1 << 22, np.uint8)
    board.route(source="pattern")
    board.pattern(seed=3, rate=1)
    t = board.read_async(buf)
    assert not t.done
    assert t.abort()
    with pytest.raises(mprace.EngineError):
        t.wait(5)
    assert t.result["done"]


def test_two_threads_two_channels(board):
    board.route(source="pattern", sink="checker")
    board.pattern(seed=11)
    board.reset_checker(11)
    rd = board.alloc(1 << 16, np.uint32, memory="user")
    wr = board.alloc(1 << 16, np.uint32, memory="user")
    np.asarray(wr)[:] = pattern(11, 1 << 16)
    errors = []

    def run(f):
        try:
            f()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=run, args=(lambda: board.read(rd),)),
               threading.Thread(target=run, args=(lambda: board.write(wr),))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert np.array_equal(np.asarray(rd), pattern(11, 1 << 16))
    assert board.checker == (1 << 16, 0)


def test_ctrl_c_interrupts_a_wait_and_aborts():
    prog = textwrap.dedent("""
        import signal, sys, time, numpy as np, mprace
        # Ctrl-C as in a terminal: a background job of a shell without job control (how CI
        # may run) inherits SIGINT ignored, and Python then installs no handler for it
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with mprace.open("emu:") as b:
            buf = b.alloc(1 << 24, np.uint8)
            b.route(source="pattern")
            b.pattern(seed=1, rate=1)
            print("waiting", flush=True)
            t0 = time.monotonic()
            try:
                n = b.read(buf, timeout=None)
                # (a diagnosis for the assertion below: a lost signal lets the read run 16 s)
                print("read %d bytes in %.2f s" % (n, time.monotonic() - t0), flush=True)
            except KeyboardInterrupt:
                print("interrupted", flush=True)
            b.pattern(seed=1, rate=0)
            small = b.alloc(64, np.uint32)
            b.read(small)
            print("again", int(np.asarray(small)[63]), flush=True)
    """)
    p = subprocess.Popen([sys.executable, "-c", prog], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "waiting"
    import time
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 0
    assert "interrupted" in out and "again 64" in out


# ---- streaming


@pytest.mark.parametrize("memory", ["kernel", "user"])
def test_stream_in_order_byte_for_byte(board, memory):
    board.route(source="pattern")
    board.pattern(seed=100)
    seen = 0
    with board.stream(buffer_bytes=64 << 10, count=4, dtype=np.uint32, memory=memory, max_buffers=20) as s:
        for chunk in s:
            with chunk:
                a = np.asarray(chunk)
                assert a.dtype == np.uint32 and a.size == 16384
                assert np.shares_memory(a, chunk.array)
                # the stream is one pattern: buffer k starts at word k * 16384
                assert np.array_equal(a, pattern(100 + chunk.sequence * 16384, 16384))
                assert chunk.sequence == seen
            assert chunk.released
            seen += 1
        st = s.stats
    assert seen == 20 and st["buffers"] == 20 and st["bytes"] == 20 * (64 << 10) and st["overruns"] == 0


def test_stream_slow_consumer_backpressure_and_drop(board):
    board.route(source="pattern")
    for overflow in ("block", "drop"):
        with board.stream(buffer_bytes=16 << 10, count=2, overflow=overflow, max_buffers=30) as s:
            got = 0
            for chunk in s:
                time.sleep(0.002)
                chunk.release()
                got += 1
            st = s.stats
        if overflow == "block":
            assert got == 30 and st["backpressure"] > 0 and st["overruns"] == 0
        else:
            assert got + st["overruns"] == 30 and st["overruns"] > 0


def test_stream_holding_every_buffer_is_an_error(board):
    board.route(source="pattern")
    with board.stream(buffer_bytes=4096, count=2) as s:
        a, b = s.next(), s.next()
        with pytest.raises(OSError) as e:
            s.next()
        assert e.value.errno == errno.EDEADLK
        a.release()
        assert s.next() is not None


def test_stream_excludes_other_transfers_and_stops_with_the_board():
    b = mprace.open("emu:")
    b.route(source="pattern")
    s = b.stream(buffer_bytes=4096, count=3)
    c = s.next()
    view = np.asarray(c)
    with pytest.raises(OSError) as e:
        b.read(b.alloc(16, np.uint32))
    assert e.value.errno == errno.EBUSY
    b.close()
    assert s.stopped and c.released
    with pytest.raises((BufferError, ValueError), match="released"):
        np.asarray(c)
    view.sum()  # the memory stays mapped: no crash


@pytest.mark.parametrize("kwargs, exc", [
    (dict(buffer_bytes=6), ValueError), (dict(count=1), ValueError), (dict(overflow="wait"), ValueError),
    (dict(memory="gpu"), ValueError), (dict(buffer_bytes=12, dtype=np.uint64), ValueError),
    (dict(max_buffers=-1), ValueError), (dict(dtype=object), TypeError),
])
def test_stream_bad_arguments(board, kwargs, exc):
    with pytest.raises(exc):
        board.stream(**kwargs)


@pytest.mark.skipif(not os.access(os.environ.get("MPRACE_SIM_PYTHON", ""), os.X_OK),
                    reason="no simulator environment (tests/hdl builds its venv)")
def test_sim_short():
    with mprace.open("sim:") as b:
        assert b.info["backend"] == "sim"
        buf = b.alloc(1024, np.uint32, memory="user")
        b.route(source="pattern")
        b.pattern(seed=42)
        assert b.read(buf, timeout=120) == 4096
        assert np.array_equal(np.asarray(buf), pattern(42, 1024))


def test_close_from_another_thread_while_waiting():
    """A wait in one thread, close() in another: the wait ends with an error, nothing crashes."""
    b = mprace.open("emu:")
    b.route(source="pattern")
    b.pattern(rate=1)
    buf = b.alloc(1 << 22, np.uint8, memory="user")
    s_board = mprace.open("emu:")
    s_board.route(source="pattern")
    s_board.pattern(rate=1)
    stream = s_board.stream(buffer_bytes=1 << 20, count=2)
    outcome = {}

    def wait_read():
        try:
            b.read(buf, timeout=None)
            outcome["read"] = "done"
        except Exception as e:
            outcome["read"] = type(e).__name__

    def wait_stream():
        try:
            outcome["stream"] = stream.next()
        except Exception as e:
            outcome["stream"] = type(e).__name__
    threads = [threading.Thread(target=wait_read), threading.Thread(target=wait_stream)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    b.close()
    s_board.close()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    assert outcome["read"] in ("EngineError", "ValueError"), outcome
    assert outcome["stream"] is None, outcome
