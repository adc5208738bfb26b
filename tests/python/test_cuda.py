# SPDX-License-Identifier: GPL-2.0
"""CUDA from Python: DMA buffers handed to CuPy/PyTorch through DLPack without a copy
(Buffer.cuda) and libbufmgr's board -> GPU stage into their arrays (Board.gpu_stage). Without a
GPU only the errors are tested (the rest skips with the reason); with one, the data is checked
byte for byte on the GPU side."""
import errno
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import mprace
from conftest import pattern

gpu = pytest.mark.skipif(not mprace.cuda_available(), reason=mprace.cuda_unavailable_reason() or "?")


def gpu_libraries():
    """(name, module) of the GPU array libraries importable here."""
    libs = []
    for name in ("cupy", "torch"):
        try:
            libs.append((name, __import__(name)))
        except Exception:  # noqa: BLE001 - absent, or present without a usable GPU build
            pass
    if not libs:
        pytest.skip("neither CuPy nor PyTorch is installed")
    return libs


def zeros(lib, mod, shape):
    """uint32 zeros on CUDA device 0."""
    return mod.zeros(shape, dtype=mod.uint32) if lib == "cupy" else mod.zeros(shape, dtype=mod.uint32, device="cuda")


def to_numpy(lib, x):
    return x.get() if lib == "cupy" else x.cpu().numpy()


# ---- bad input, with or without a GPU


def test_cuda_view_of_kernel_memory_is_refused(board):
    buf = board.alloc(1024, np.uint32)  # kernel memory: CUDA cannot register it
    with pytest.raises(ValueError, match="memory=\"user\""):
        buf.cuda()


def test_cuda_view_bad_device(board):
    buf = board.alloc(1024, np.uint32, memory="user")
    with pytest.raises(ValueError, match="device"):
        buf.cuda(device=-1)
    with pytest.raises(TypeError):
        buf.cuda(device="0")


def test_gpu_stage_bad_arguments(board):
    for kw, exc in (({"count": 1}, ValueError), ({"buffer_bytes": 6}, ValueError), ({"buffer_bytes": 0}, ValueError),
                    ({"buffer_bytes": 1.5}, TypeError), ({"device": -2}, ValueError)):
        with pytest.raises(exc):
            board.gpu_stage(**kw)


def test_cuda_views_of_a_freed_or_closed_buffer_raise():
    with mprace.open("emu:") as b:
        buf = b.alloc(256, np.uint32, memory="user")
        buf.free()
        with pytest.raises(ValueError, match="freed"):
            buf.cuda()
        other = b.alloc(256, np.uint32, memory="user")
    with pytest.raises(ValueError, match="closed"):
        other.cuda()


@pytest.mark.skipif(mprace.cuda_available(), reason="a CUDA GPU is usable here")
def test_without_a_gpu_cuda_calls_raise_cuda_error(board):
    buf = board.alloc(1024, np.uint32, memory="user")
    for call in (buf.cuda, board.gpu_stage):
        with pytest.raises(mprace.CudaError) as e:
            call()
        assert e.value.errno == errno.ENODEV and str(e.value)
    assert not buf.cuda_registered


# ---- on a GPU


@gpu
@pytest.mark.parametrize("words", [1024, 1000, 65536 + 3])
def test_cuda_view_is_the_buffer_itself(board, words):
    for lib, mod in gpu_libraries():
        buf = board.alloc(words, np.int32, memory="user")  # (PyTorch adds no uint32 on a GPU)
        board.route(source="pattern")
        board.pattern(seed=words)
        board.read(buf)
        g = mod.from_dlpack(buf.cuda())
        assert buf.cuda_registered
        assert (g.device.id if lib == "cupy" else g.device.index) == 0
        expect = pattern(words, words).astype(np.int32)
        assert np.array_equal(to_numpy(lib, g), expect)  # the GPU reads the DMA buffer
        g += 1  # a GPU kernel writes the very same memory
        if lib == "cupy":
            mod.cuda.runtime.deviceSynchronize()
        else:
            mod.cuda.synchronize()
        assert np.array_equal(np.asarray(buf), expect + 1)
        board.write(buf)  # and the board takes what the GPU wrote (no copy anywhere)


@gpu
def test_cuda_host_view(board):
    buf = board.alloc((64, 16), np.float32, memory="user")
    v = buf.cuda(host=True)
    assert v.__dlpack_device__() == (3, 0)  # kDLCUDAHost
    np.asarray(buf)[:] = 2.5
    a = np.from_dlpack(v)  # NumPy takes CUDA host memory as CPU memory
    assert a.shape == (64, 16) and a.dtype == np.float32 and float(a.sum()) == 2.5 * 1024
    assert np.shares_memory(a, np.asarray(buf))


@gpu
def test_gpu_views_outlive_free_close_and_the_buffer_object():
    lib, mod = gpu_libraries()[0]
    with mprace.open("emu:") as b:
        buf = b.alloc(4096, np.uint32, memory="user")
        b.route(source="pattern")
        b.pattern(seed=5)
        b.read(buf)
        g = mod.from_dlpack(buf.cuda())
        buf.free()  # unmapped from the board; the GPU's registration stays with the object
        assert np.array_equal(to_numpy(lib, g), pattern(5, 4096))
        del buf
    assert np.array_equal(to_numpy(lib, g), pattern(5, 4096))  # after close() too


@gpu
@pytest.mark.parametrize("words,buffer_bytes", [(1 << 20, 1 << 18), (3 * 65536 + 1000, 65536), (1000, 1 << 20)])
def test_gpu_stage_lands_the_pattern_byte_for_byte(board, words, buffer_bytes):
    for lib, mod in gpu_libraries():
        with board.gpu_stage(buffer_bytes=buffer_bytes, count=3) as stage:
            dst = zeros(lib, mod, words + 16)
            board.route(source="pattern")
            board.pattern(seed=words + 1)
            assert stage.read(dst, nbytes=4 * words) == 4 * words
            got = to_numpy(lib, dst)
            assert np.array_equal(got[:words], pattern(words + 1, words))
            assert not got[words:].any()  # nothing past nbytes
            assert stage.read(dst[:256]) == 1024  # the stream goes on where it stopped
            assert np.array_equal(to_numpy(lib, dst[:256]), pattern(words + 1 + words, 256))


@gpu
def test_gpu_stage_refuses_bad_destinations(board):
    lib, mod = gpu_libraries()[0]
    with board.gpu_stage(buffer_bytes=65536) as stage:
        with pytest.raises(ValueError, match="not in CUDA device memory"):
            stage.read(np.zeros(1024, np.uint32))
        with pytest.raises(TypeError):
            stage.read([0] * 1024)
        with pytest.raises(ValueError, match="exceeds"):
            stage.read(zeros(lib, mod, 1024), nbytes=8192)
        with pytest.raises(ValueError, match="multiples of 4"):
            stage.read(zeros(lib, mod, 1024), nbytes=6)
        with pytest.raises((ValueError, TypeError)):
            stage.read(zeros(lib, mod, (64, 64))[:, ::2])  # strided
    with pytest.raises(ValueError, match="closed"):
        stage.read(zeros(lib, mod, 1024))


@gpu
def test_gpu_stage_timeout_aborts_and_the_stage_works_again(board):
    lib, mod = gpu_libraries()[0]
    with board.gpu_stage(buffer_bytes=1 << 20, count=2) as stage:
        dst = zeros(lib, mod, 1 << 22)  # 16 MiB at 1 MB/s: 16 s
        board.route(source="pattern")
        board.pattern(seed=7, rate=1)
        with pytest.raises(mprace.TransferTimeout):
            stage.read(dst, timeout=0.3)
        board.pattern(seed=7, rate=0)
        assert stage.read(dst[:4096]) == 16384
        assert np.array_equal(to_numpy(lib, dst[:4096]), pattern(7, 4096))


@gpu
def test_gpu_stage_and_other_transfers_exclude_each_other(board):
    lib, mod = gpu_libraries()[0]
    buf = board.alloc(1024, np.uint32)
    with board.gpu_stage(buffer_bytes=1 << 20, count=2) as stage:
        dst = zeros(lib, mod, 1 << 22)
        board.route(source="pattern")
        board.pattern(seed=7, rate=4)
        errors = []
        t = threading.Thread(target=lambda: errors.append(pytest.raises(mprace.TransferTimeout, stage.read, dst,
                                                                        timeout=1.0)))
        t.start()
        import time
        time.sleep(0.3)
        with pytest.raises(OSError) as e:
            board.read(buf)
        assert e.value.errno == errno.EBUSY
        t.join()
        assert errors
        board.pattern(seed=0, rate=0)
    assert board.read(buf) == 4096


@gpu
@pytest.mark.parametrize("closer", ["stage", "board"])
def test_close_from_another_thread_ends_a_gpu_read(closer):
    lib, mod = gpu_libraries()[0]
    board = mprace.open("emu:")
    stage = board.gpu_stage(buffer_bytes=1 << 20, count=2)
    dst = zeros(lib, mod, 1 << 22)  # 16 MiB at 1 MB/s: 16 s
    board.route(source="pattern")
    board.pattern(seed=7, rate=1)
    outcome = []

    def reader():
        try:
            outcome.append(stage.read(dst, timeout=None))
        except OSError as e:
            outcome.append(e)
    t = threading.Thread(target=reader)
    t.start()
    import time
    time.sleep(0.3)
    t0 = time.monotonic()
    (stage if closer == "stage" else board).close()
    t.join(10)
    assert not t.is_alive() and time.monotonic() - t0 < 5
    assert isinstance(outcome[0], OSError) and outcome[0].errno == errno.ECANCELED, outcome
    assert stage.closed
    with pytest.raises(ValueError, match="closed"):
        stage.read(dst)
    board.close()


@gpu
def test_ctrl_c_interrupts_a_gpu_read_and_exit_is_clean():
    gpu_libraries()
    prog = textwrap.dedent("""
        import signal, numpy as np, mprace
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            import cupy as xp
        except ImportError:
            import torch as xp
        b = mprace.open("emu:")
        stage = b.gpu_stage(buffer_bytes=1 << 20, count=2)
        cuda = {} if xp.__name__ == "cupy" else {"device": "cuda"}
        dst = xp.zeros(1 << 22, dtype=xp.uint32, **cuda)
        b.route(source="pattern")
        b.pattern(seed=1, rate=1)
        print("waiting", flush=True)
        try:
            stage.read(dst, timeout=None)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        b.pattern(seed=1, rate=0)
        print("again", stage.read(dst[:64]), flush=True)
        buf = b.alloc(1024, np.uint32, memory="user")
        view = xp.from_dlpack(buf.cuda())
        # exit with the board, the stage, a buffer and a GPU view of it all alive
    """)
    p = subprocess.Popen([sys.executable, "-c", prog], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "waiting"
    import time
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert "interrupted" in out and "again 256" in out
    assert "Error" not in err and "leak" not in err
