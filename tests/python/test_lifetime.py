# SPDX-License-Identifier: GPL-2.0
"""close() frees, arrays over DMA memory never point at unmapped memory, exit is clean."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mprace


@pytest.mark.parametrize("memory", ["kernel", "user"])
def test_arrays_survive_close(memory):
    b = mprace.open("emu:")
    buf = b.alloc(1024, np.uint32, memory=memory)
    b.route(source="pattern")
    b.pattern(seed=5)
    b.read(buf)
    a = np.asarray(buf)[10:20]
    b.close()
    assert buf.closed
    assert list(a) == list(range(15, 25))  # still readable: no crash
    a[:] = 1  # and writable
    with pytest.raises(ValueError, match="closed"):
        b.read(buf)
    with pytest.raises(ValueError, match="closed"):
        buf.segments
    del buf, a


def test_with_closes():
    with mprace.open("emu:") as b:
        b.alloc(64, np.uint8)
    assert b.closed


def test_transfer_after_close():
    b = mprace.open("emu:")
    buf = b.alloc(1 << 20, np.uint8)
    b.route(source="pattern")
    b.pattern(rate=1)
    t = b.read_async(buf)
    b.close()  # aborts it
    with pytest.raises(ValueError, match="closed"):
        t.wait(1)


@pytest.mark.parametrize("how", ["open board and live views", "transfer running", "garbage only"])
def test_interpreter_exit_is_clean(how):
    prog = textwrap.dedent(f"""
        import numpy as np, mprace
        how = {how!r}
        b = mprace.open("emu:")
        k = b.alloc(1 << 16, np.uint8)
        u = b.alloc(1 << 16, np.uint8, memory="user")
        views = [np.asarray(k)[4:], np.asarray(u)[8:]]
        if how == "transfer running":
            big = b.alloc(1 << 22, np.uint8)
            b.route(source="pattern"); b.pattern(rate=1)
            t = b.read_async(big)
        if how == "garbage only":
            del b, k, u, views
        print("bye", flush=True)
    """)
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "bye" and r.stderr == ""


@pytest.mark.parametrize("memory", ["kernel", "user"])
def test_free(memory):
    with mprace.open("emu:") as b:
        b.route(source="pattern")
        b.pattern(seed=1)
        buf = b.alloc(256, np.uint32, memory=memory)
        b.read(buf)
        view = np.asarray(buf)
        if memory == "kernel":
            with pytest.raises(BufferError, match="still view"):
                buf.free()  # the array would point at unmapped memory
            assert list(view[:3]) == [1, 2, 3]
            del view
            buf.free()
            with pytest.raises((BufferError, ValueError), match="freed"):
                np.asarray(buf)
        else:
            buf.free()  # user memory stays this process's: the array stays valid
            assert list(view[:3]) == [1, 2, 3]
        assert buf.freed and "freed" in repr(buf)
        buf.free()  # idempotent
        with pytest.raises(ValueError, match="freed"):
            b.read(buf)
        with pytest.raises(ValueError, match="freed"):
            buf.segments
        with b.alloc(64, np.uint8) as scoped:
            b.read(scoped)
        assert scoped.freed
