# SPDX-License-Identifier: GPL-2.0
"""network -> remote host -> GPU from Python (Receiver.gpu(): libbufmgr's ReceiverToGpu): the
board's pattern checked byte for byte in GPU memory (CuPy or PyTorch), bad destinations refused
before a chunk is taken, the receiver's next() kept apart while the GPU stage is open, close
from another thread and with the receiver. Without a GPU only the errors are tested (the rest
skips with the reason); without UCX all of it skips."""
import errno
import threading
import time

import numpy as np
import pytest

import mprace
from conftest import pattern

pytestmark = pytest.mark.skipif(not mprace.network_available(), reason="this build has no network stage (no UCX)")
gpu = pytest.mark.skipif(not mprace.cuda_available(), reason=mprace.cuda_unavailable_reason() or "?")


def gpu_library():
    """(name, module) of a GPU array library importable here."""
    for name in ("cupy", "torch"):
        try:
            return name, __import__(name)
        except Exception:  # noqa: BLE001 - absent, or present without a usable GPU build
            pass
    pytest.skip("neither CuPy nor PyTorch is installed")


def gpu_words(lib, mod, n):
    """n int32 zeros on CUDA device 0 (PyTorch has no uint32 arithmetic on a GPU)."""
    return mod.zeros(n, dtype=mod.int32) if lib == "cupy" else mod.zeros(n, dtype=mod.int32, device="cuda")


def host_copy(lib, x):
    return x.get() if lib == "cupy" else x.cpu().numpy()


def send(board, port, nbytes, seed, buffer_bytes=256 << 10):
    """board -> network: `nbytes` of the pattern from word `seed` to 127.0.0.1:port, then the end."""
    with board.net_sender(f"127.0.0.1:{port}", buffer_bytes=buffer_bytes, count=4, source=3) as tx:
        board.route(source="pattern")
        board.pattern(seed=seed)
        assert tx.send(nbytes) == nbytes


def test_gpu_bad_device_arguments(monkeypatch):
    monkeypatch.setenv("UCX_TLS", "tcp")
    with mprace.Receiver(":0") as rx:
        for bad, exc in ((-1, ValueError), ("0", ValueError), (True, ValueError), (1.0, ValueError)):
            with pytest.raises(exc):
                rx.gpu(bad)


@pytest.mark.skipif(mprace.cuda_available(), reason="a CUDA GPU is usable here")
def test_without_a_gpu_the_receiver_raises_and_goes_on(board, monkeypatch):
    """CudaError (ENODEV) with the reason; the receiver is as before: next() gets every chunk."""
    monkeypatch.setenv("UCX_TLS", "tcp")
    with mprace.Receiver(":0") as rx:
        with pytest.raises(mprace.CudaError) as e:
            rx.gpu()
        assert e.value.errno == errno.ENODEV and str(e.value)
        got = []

        def receive():
            for chunk in rx:
                with chunk:
                    got.append((chunk.offset, np.array(chunk).view(np.uint32)))
        t = threading.Thread(target=receive)
        t.start()
        send(board, rx.port, 1 << 20, seed=11)
        t.join(30)
        assert not t.is_alive()
    assert sum(len(w) for _, w in got) == (1 << 20) // 4
    for offset, words in got:
        assert np.array_equal(words, pattern(11 + offset // 4, len(words)))


@gpu
def test_chunks_land_in_gpu_memory_byte_for_byte(board, monkeypatch):
    """Every chunk into a CuPy/PyTorch array, compared there with the pattern at its offset; the
    headers cover the stream without a gap; read() returns None at the end of the stream."""
    monkeypatch.setenv("UCX_TLS", "tcp")
    lib, mod = gpu_library()
    total = (3 << 20) + 4000  # 12 chunks of 256 KiB and a short one
    with mprace.Receiver(":0", max_chunk=256 << 10) as rx, rx.gpu() as g:
        assert g.device == 0 and not g.closed
        sender = threading.Thread(target=send, args=(board, rx.port, total, 123))
        sender.start()
        dst = gpu_words(lib, mod, rx.max_chunk // 4)
        at, chunks = 0, []
        while (c := g.read(dst, timeout=30)) is not None:
            assert c.offset == at and c.source == 3 and c.link_sequence == len(chunks)
            words = c.nbytes // 4
            expect = pattern(123 + c.offset // 4, words).astype(np.int32)
            assert np.array_equal(host_copy(lib, dst[:words]), expect), f"chunk at {c.offset}"
            at += c.nbytes
            chunks.append(c)
        sender.join(30)
        (conn,) = rx.connections
    assert at == total and len(chunks) == 13
    assert conn["ended"] and conn["missing"] == conn["duplicates"] == conn["incomplete"] == 0


@gpu
def test_bad_destinations_are_refused_before_a_chunk_is_taken(board, monkeypatch):
    monkeypatch.setenv("UCX_TLS", "tcp")
    lib, mod = gpu_library()
    with mprace.Receiver(":0", max_chunk=64 << 10) as rx, rx.gpu() as g:
        sender = threading.Thread(target=send, args=(board, rx.port, 256 << 10, 5, 64 << 10))
        sender.start()
        with pytest.raises(TypeError):
            g.read([0] * (16 << 10))  # no __dlpack__
        with pytest.raises(ValueError, match="not in CUDA device memory"):
            g.read(np.zeros(16 << 10, dtype=np.int32))  # host memory
        with pytest.raises(ValueError, match="max_chunk"):
            g.read(gpu_words(lib, mod, (16 << 10) - 1))  # one word short of a chunk
        dst = gpu_words(lib, mod, 16 << 10)
        first = g.read(dst, timeout=30)  # nothing was lost: the stream starts at 0
        assert first.offset == 0 and first.link_sequence == 0
        assert np.array_equal(host_copy(lib, dst[:first.nbytes // 4]), pattern(5, first.nbytes // 4).astype(np.int32))
        while g.read(dst, timeout=30) is not None:
            pass
        sender.join(30)


@gpu
def test_next_is_refused_while_the_gpu_stage_is_open(monkeypatch):
    monkeypatch.setenv("UCX_TLS", "tcp")
    lib, mod = gpu_library()
    with mprace.Receiver(":0", max_chunk=4096) as rx:
        g = rx.gpu()
        with pytest.raises(OSError) as e:
            rx.next(0.01)
        assert e.value.errno == errno.EBUSY
        with pytest.raises(OSError) as e:
            rx.gpu()
        assert e.value.errno == errno.EBUSY
        g.close()
        assert g.closed
        with pytest.raises(mprace.TransferTimeout):
            rx.next(0.05)  # the receiver's own next() again
        with pytest.raises(ValueError, match="closed"):
            g.read(gpu_words(lib, mod, 1024))


@gpu
def test_read_times_out_and_closes_with_the_receiver(monkeypatch):
    monkeypatch.setenv("UCX_TLS", "tcp")
    lib, mod = gpu_library()
    rx = mprace.Receiver(":0", max_chunk=4096)
    g = rx.gpu()
    dst = gpu_words(lib, mod, 1024)
    t0 = time.monotonic()
    with pytest.raises(mprace.TransferTimeout):
        g.read(dst, timeout=0.2)
    assert time.monotonic() - t0 < 5
    rx.close()
    assert g.closed
    with pytest.raises(ValueError, match="closed"):
        g.read(dst)


@gpu
def test_close_from_another_thread_ends_a_read(monkeypatch):
    monkeypatch.setenv("UCX_TLS", "tcp")
    lib, mod = gpu_library()
    for closer in ("stage", "receiver"):
        rx = mprace.Receiver(":0", max_chunk=4096)
        g = rx.gpu()
        dst = gpu_words(lib, mod, 1024)
        outcome = []

        def reader():
            try:
                outcome.append(g.read(dst, timeout=None))
            except ValueError as e:
                outcome.append(e)
        t = threading.Thread(target=reader)
        t.start()
        time.sleep(0.3)
        t0 = time.monotonic()
        (g if closer == "stage" else rx).close()
        t.join(10)
        assert not t.is_alive() and time.monotonic() - t0 < 5, closer
        assert isinstance(outcome[0], ValueError) and "closed" in str(outcome[0]), (closer, outcome)
        assert g.closed
        rx.close()
