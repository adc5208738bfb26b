# SPDX-License-Identifier: GPL-2.0
"""DMA buffers as NumPy arrays without a copy: buffer protocol, __array_interface__, DLPack."""
import numpy as np
import pytest


@pytest.mark.parametrize("memory", ["kernel", "user"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int32, np.uint64, np.float32, np.float64])
def test_alloc_is_an_array_without_copy(board, memory, dtype):
    buf = board.alloc((4, 256), dtype, memory=memory)
    a = np.asarray(buf)
    assert a.shape == (4, 256) and a.dtype == np.dtype(dtype)
    assert a.__array_interface__["data"][0] == buf.address
    assert np.shares_memory(a, np.asarray(buf))
    assert not a.any()  # zeroed
    a[1, 2] = 7
    assert buf[1, 2] == 7 and np.asarray(buf)[1, 2] == 7
    m = memoryview(buf)
    assert m.nbytes == buf.nbytes and m.shape == (4, 256) and not m.readonly
    d = np.from_dlpack(buf)
    assert np.shares_memory(d, a) and d[1, 2] == 7
    assert buf.__dlpack_device__() == (1, 0)
    assert buf.memory == memory


def test_segments_cover_the_buffer(board):
    for memory in ("kernel", "user"):
        buf = board.alloc(1 << 20, np.uint8, memory=memory)
        segs = buf.segments
        assert sum(s[2] for s in segs) == buf.nbytes
        assert segs[0][0] == 0 and buf.bus_address(0) == segs[0][1]
        if memory == "kernel":
            assert len(segs) == 1


def test_wrap_a_numpy_array(board):
    a = np.zeros(1 << 16, dtype=np.uint32)
    buf = board.wrap(a)
    assert buf.address == a.__array_interface__["data"][0] and buf.memory == "user"
    assert np.shares_memory(np.asarray(buf), a)


@pytest.mark.parametrize("make, exc", [
    (lambda: np.zeros(10, np.uint8)[1:9], ValueError),        # address not a multiple of 4
    (lambda: np.zeros((8, 8), np.uint32)[:, ::2], ValueError),  # strided
    (lambda: np.zeros(0, np.uint32), ValueError),
    (lambda: [1, 2, 3, 4], TypeError),
])
def test_wrap_refuses(board, make, exc):
    with pytest.raises(exc):
        board.wrap(make())


@pytest.mark.parametrize("args, exc", [
    (((-1,), np.uint8), ValueError), (((0,), np.uint8), ValueError), (((3,), np.uint8), ValueError),
    (((4,), object), TypeError), (((4,), np.complex64), TypeError), (("x", np.uint8), TypeError),
])
def test_bad_alloc(board, args, exc):
    with pytest.raises(exc):
        board.alloc(*args)


def test_bad_memory_kind(board):
    with pytest.raises(ValueError):
        board.alloc(16, memory="gpu")
