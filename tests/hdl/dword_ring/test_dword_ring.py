# SPDX-License-Identifier: GPL-2.0
"""mprace_dword_ring on its own: writes of up to eight dwords at any position with any lane
enables, reads of eight dwords at any position one clock later, against a Python model of the
ring (read-first when a position is written in the clock it is read)."""
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, ReadOnly

import rtl_build
from pcie_env import env_int, quiet_logs



@cocotb.test()
async def random_access(dut):
    quiet_logs(dut)
    depth = 1 << len(dut.wr_pos)
    LANES = len(dut.wr_en)
    rng = random.Random(env_int("MPRACE_SEED", 1))
    cocotb.start_soon(Clock(dut.clk, 4, "ns").start())
    dut.wr_en.value = 0
    dut.rd_en.value = 0
    dut.wr_pos.value = 0
    dut.rd_pos.value = 0
    dut.wr_data.value = 0
    model = [0] * depth
    await RisingEdge(dut.clk)
    # fill the whole ring so that every read below has a known answer
    for pos in range(0, depth, LANES):
        words = [rng.getrandbits(32) for _ in range(LANES)]
        dut.wr_en.value = (1 << LANES) - 1
        dut.wr_pos.value = pos
        dut.wr_data.value = sum(w << (32 * i) for i, w in enumerate(words))
        for i, w in enumerate(words):
            model[(pos + i) % depth] = w
        await RisingEdge(dut.clk)
    dut.wr_en.value = 0
    pending = None          # (position, expected words) of the read issued last clock
    checked = 0
    for _ in range(env_int("MPRACE_COUNT", 2000)):
        # this clock: a random write and a random read (rd_en held low now and then)
        wen = rng.getrandbits(LANES) if rng.random() < 0.7 else 0
        wpos = rng.randrange(depth)
        words = [rng.getrandbits(32) for _ in range(LANES)]
        ren = rng.random() < 0.9
        rpos = rng.randrange(depth) if rng.random() < 0.7 else (wpos + rng.randrange(-4, 5)) % depth
        dut.wr_en.value = wen
        dut.wr_pos.value = wpos
        dut.wr_data.value = sum(w << (32 * i) for i, w in enumerate(words))
        dut.rd_en.value = int(ren)
        dut.rd_pos.value = rpos
        expect = [model[(rpos + i) % depth] for i in range(LANES)] if ren else None
        await ReadOnly()
        if pending is not None:
            got = int(dut.rd_data.value)
            got_words = [(got >> (32 * i)) & 0xFFFFFFFF for i in range(LANES)]
            assert got_words == pending[1], f"read at {pending[0]}: {got_words} != {pending[1]}"
            checked += 1
        await RisingEdge(dut.clk)
        # the write lands at this edge; the read saw the old contents (read-first)
        for i in range(LANES):
            if wen >> i & 1:
                model[(wpos + i) % depth] = words[i]
        if ren:
            pending = (rpos, expect)
        # with rd_en low the output holds the last read
    assert checked > 1000


@pytest.mark.parametrize("width", [256, 512], ids=lambda w: f"w{w}")
@pytest.mark.parametrize("depth_log2", ["min", 6, 12])
def test_dword_ring(depth_log2, width):
    if depth_log2 == "min":                   # two rows of one beat
        depth_log2 = (width // 32).bit_length()
    rtl_build.run("mprace_dword_ring", "test_dword_ring", "random_access",
                   f"dword_ring_{depth_log2}_w{width}", env={"MPRACE_SEED": depth_log2},
                   parameters={"depth_log2_g": depth_log2, "data_w_g": width})
