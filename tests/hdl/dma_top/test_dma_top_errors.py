# SPDX-License-Identifier: GPL-2.0
"""mprace_dma_top: abort and reset (also during transfers), timeouts, descriptor errors and
data read errors.

dma_top_env.py says how the cases run."""
import os

import cocotb
import pytest
from cocotb.triggers import Timer
from cocotb.utils import get_sim_time
from cocotbext.pcie.core.tlp import TlpType

from dma_top_env import (alloc_buffers, check_record, DESC, expect_state, halt, make_tb,
                         reset_channel, run, run_ring, SRC_GEN, SRC_USER, TEST_CONTROL, tlp_ends,
                         wait_for, wait_not_busy, WIDTHS)
from pcie_env import (C2H, env_int, H2C, pattern_bytes, pause_pattern, Ring, S)

MODULE = "test_dma_top_errors"
pytestmark = pytest.mark.parametrize("width", WIDTHS, ids=lambda w: f"w{w}")


# ------------------------------------------------------------------------------ abort and reset

@cocotb.test()
async def abort_reset(dut):
    tb = make_tb(dut)
    await tb.init()
    rng = tb.rng
    cring, hring = Ring(tb, C2H, 8), Ring(tb, H2C, 8)
    await cring.configure()
    await hring.configure()

    # C2H: the source stops part way; ABORT writes the record of what was written
    (a, o, n), = alloc_buffers(tb, [16 << 10])
    tb.mem[o:o + n] = bytes(n)
    sent = tb.rand_bytes(6000)
    tb.c2h.send(sent)
    await cring.submit([(a, n, S.ctrl(irq=1))])
    await tb.ch_control(C2H, run=1)
    await tb.c2h.idle.wait()
    await Timer(2, "us")
    await tb.ch_control(C2H, abort=1)
    await tb.wait_state(C2H, "ERROR")
    await expect_state(tb, C2H, "ERROR", S.err["ABORTED"])
    written = max(e for e in tlp_ends(a, n, tb.mps) if e <= len(sent))
    check_record(cring, 0, written, code=S.err["ABORTED"])
    assert bytes(tb.mem[o:o + written]) == sent[:written]
    assert bytes(tb.mem[o + written:o + n]) == bytes(n - written)
    assert await tb.ch_rd(C2H, "HEAD") == 0
    assert await tb.rd("IRQ_STATUS") == 1 << S.irq_bit["ERROR"]
    # RESET forgets the data already taken from the source; the channel works again
    await reset_channel(tb, C2H, cring)
    assert await tb.bytes_moved(C2H) == 0
    fresh = tb.rand_bytes(4096 + 64)
    tb.c2h.send(fresh)
    bufs = alloc_buffers(tb, [4096, 64])
    await tb.ch_control(C2H, run=1)
    await run_ring(tb, cring, [(a, n, 0) for a, o, n in bufs])
    assert bytes(tb.mem[bufs[0][1]:bufs[0][1] + 4096]) == fresh[:4096]
    assert bytes(tb.mem[bufs[1][1]:bufs[1][1] + 64]) == fresh[4096:]
    check_record(cring, 1, 64)

    # H2C: abort a long descriptor while the sink is slow; the record counts the bytes handed
    # to the sink, and exactly those arrive
    tb.h2c.start()
    tb.h2c.pause = pause_pattern(rng, busy=0.9, burst=30)
    (a, o, n), = alloc_buffers(tb, [128 << 10])
    data = tb.rand_bytes(n)
    tb.mem[o:o + n] = data
    await hring.submit([(a, n, 0)])
    await tb.ch_control(H2C, run=1)
    await wait_for(lambda: len(tb.h2c.data) > 4096, 200, "H2C data")
    await tb.ch_control(H2C, abort=1)
    await tb.wait_state(H2C, "ERROR")
    await expect_state(tb, H2C, "ERROR", S.err["ABORTED"])
    await hring.wait_done(0)
    rb, st = hring.result(0)
    check_record(hring, 0, rb, code=S.err["ABORTED"])
    assert 4096 < rb < n and rb % 4 == 0
    tb.h2c.pause = None
    await wait_not_busy(tb, H2C)
    await Timer(1, "us")
    assert bytes(tb.h2c.data) == data[:rb]
    await reset_channel(tb, H2C, hring)
    tb.h2c.data.clear()
    tb.h2c.lasts.clear()
    (a, o, n), = alloc_buffers(tb, [3000])
    tb.mem[o:o + n] = data[:n]
    await tb.ch_control(H2C, run=1)
    await run_ring(tb, hring, [(a, n, S.ctrl(eop=1))])
    assert bytes(tb.h2c.data) == data[:n] and tb.h2c.lasts == [n]

    # RESET in the middle of transfers (channel and global), then the engine is usable
    await halt(tb, C2H)
    await halt(tb, H2C)
    await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_GEN, H2C_SINK=1))
    for how in ("channel", "global"):
        (ca, co, cn), (ha, ho, hn) = alloc_buffers(tb, [256 << 10, 256 << 10])
        slots = {C2H: cring.tail % cring.entries, H2C: hring.tail % hring.entries}
        await cring.submit([(ca, cn, 0)])
        await hring.submit([(ha, hn, 0)])
        await tb.ch_control(C2H, run=1)
        await tb.ch_control(H2C, run=1)
        await Timer(rng.randint(2, 8), "us")
        if how == "channel":
            await tb.ch_control(C2H, reset=1)
            await tb.ch_control(H2C, reset=1)
        else:
            await tb.wr("CONTROL", S.val("CONTROL", RESET=1))
            await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_GEN, H2C_SINK=1))
        for ch, ring in ((C2H, cring), (H2C, hring)):
            await wait_not_busy(tb, ch)
            await expect_state(tb, ch, "IDLE", busy=0)
            assert await tb.ch_rd(ch, "HEAD") == 0 and await tb.ch_rd(ch, "TAIL") == 0
            assert ring.result(slots[ch])[1] == 0, f"{ch}: record written for a reset descriptor"
            ring.tail = ring.head = 0
        await tb.wr("PATGEN_SEED", 0x55)
        await tb.wr("CHECK_SEED", 0x66)
        (ca, co, cn), (ha, ho, hn) = alloc_buffers(tb, [8192, 8192])
        tb.mem[ho:ho + hn] = pattern_bytes(0x66, hn // 4)
        await tb.ch_control(C2H, run=1)
        await tb.ch_control(H2C, run=1)
        await run_ring(tb, cring, [(ca, cn, 0)])
        await run_ring(tb, hring, [(ha, hn, 0)])
        assert bytes(tb.mem[co:co + cn]) == pattern_bytes(0x55, cn // 4)
        await tb.clocks(4)
        assert (await tb.rd("CHECK_WORDS"), await tb.rd("CHECK_ERRORS")) == (hn // 4, 0)
        await halt(tb, C2H)
        await halt(tb, H2C)
        for ch, ring in ((C2H, cring), (H2C, hring)):
            await tb.ch_control(ch, reset=1)
            ring.tail = ring.head = 0
    tb.check_protocol()


@cocotb.test()
async def reset_during_transfers(dut):
    """RESET (a channel's, or the global one) at random moments while short descriptors
    complete on both channels: afterwards HEAD, TAIL and BYTES read 0, the channel is IDLE,
    and a fresh ring from slot 0 moves correct data. A completion the engine reported around
    the reset must not count into the new ring (it left HEAD = 1 and BYTES != 0, and the next
    ring then never ran)."""
    tb = make_tb(dut)
    await tb.init()
    rng = tb.rng
    cring, hring = Ring(tb, C2H, 4), Ring(tb, H2C, 4)
    await cring.configure()
    await hring.configure()
    for k in range(env_int("HDL_RESET_ITERS", 48 if os.environ.get("HDL_SOAK") else 24)):
        how = "global" if k % 4 == 3 else "channel"
        await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_GEN, H2C_SINK=1))
        for ring in (cring, hring):
            bufs = alloc_buffers(tb, [4 * rng.randint(8, 200) for _ in range(ring.entries)])
            await ring.submit([(a, n, 0) for a, o, n in bufs])
        await tb.ch_control(C2H, run=1)
        await tb.ch_control(H2C, run=1)
        await tb.clocks(rng.randint(1, 600))     # completions are dense: resets meet them
        if how == "channel":
            for ch in rng.sample([C2H, H2C], 2):
                await tb.ch_control(ch, reset=1)
        else:
            await tb.wr("CONTROL", S.val("CONTROL", RESET=1))
        for ch, ring in ((C2H, cring), (H2C, hring)):
            await wait_not_busy(tb, ch)
            await expect_state(tb, ch, "IDLE", busy=0)
            regs = (await tb.ch_rd(ch, "HEAD"), await tb.ch_rd(ch, "TAIL"), await tb.bytes_moved(ch))
            assert regs == (0, 0, 0), \
                f"{how} reset {k}: {ch} HEAD {regs[0]}, TAIL {regs[1]}, BYTES {regs[2]} afterwards"
            ring.tail = ring.head = 0
        # a fresh ring from slot 0, both ways, with known data
        await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_GEN, H2C_SINK=1))
        cseed, hseed = rng.getrandbits(32), rng.getrandbits(32)
        await tb.wr("PATGEN_SEED", cseed)
        await tb.wr("CHECK_SEED", hseed)
        (ca, co, cn), (ha, ho, hn) = alloc_buffers(tb, [4 * rng.randint(1, 300)] * 2)
        tb.mem[ho:ho + hn] = pattern_bytes(hseed, hn // 4)
        await tb.ch_control(C2H, run=1)
        await tb.ch_control(H2C, run=1)
        await run_ring(tb, cring, [(ca, cn, 0)], timeout_us=200)
        await run_ring(tb, hring, [(ha, hn, 0)], timeout_us=200)
        check_record(cring, 0, cn)
        check_record(hring, 0, hn)
        assert bytes(tb.mem[co:co + cn]) == pattern_bytes(cseed, cn // 4), f"{how} reset {k}: C2H data"
        await tb.clocks(4)
        assert (await tb.rd("CHECK_WORDS"), await tb.rd("CHECK_ERRORS")) == (hn // 4, 0), \
            f"{how} reset {k}: H2C data"
        await halt(tb, C2H)
        await halt(tb, H2C)
        for ch, ring in ((C2H, cring), (H2C, hring)):
            await tb.ch_control(ch, reset=1)
            await wait_not_busy(tb, ch)
            ring.tail = ring.head = 0
    tb.check_protocol()

# ------------------------------------------------------------------------------ timeouts

@cocotb.test()
async def timeouts(dut):
    tb = make_tb(dut)
    await tb.init()
    TMO = S.err["TIMEOUT"]
    cring, hring = Ring(tb, C2H, 8), Ring(tb, H2C, 8)

    # C2H: no source data for TIMEOUT_US
    await cring.configure(timeout_us=5)
    (a, o, n), = alloc_buffers(tb, [1024])
    await cring.submit([(a, n, 0)])
    t0 = get_sim_time("ns")
    await tb.ch_control(C2H, run=1)
    await cring.wait_done(0, poll_ns=100)
    elapsed = get_sim_time("ns") - t0
    assert 5000 <= elapsed < 8000, f"C2H timed out after {elapsed} ns, TIMEOUT_US 5"
    check_record(cring, 0, 0, code=TMO)
    await expect_state(tb, C2H, "ERROR", TMO)
    await reset_channel(tb, C2H, cring)
    # data that stops part way: the record counts what was written
    sent = tb.rand_bytes(1000)
    tb.c2h.send(sent)
    (a, o, n), = alloc_buffers(tb, [3000])
    await cring.submit([(a, n, 0)])
    await tb.ch_control(C2H, run=1)
    await cring.wait_done(0)
    written = max(e for e in tlp_ends(a, n, tb.mps) if e <= len(sent))
    check_record(cring, 0, written, code=TMO)
    assert bytes(tb.mem[o:o + written]) == sent[:written]
    await reset_channel(tb, C2H, cring)
    # a slow source is not a stalled one: the generator at 50 MB/s needs 5 us per 256-byte TLP,
    # but every beat that arrives is progress
    await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_GEN))
    await tb.wr("PATGEN_RATE", 50)
    await tb.wr("PATGEN_SEED", 3)
    await tb.ch_wr(C2H, "TIMEOUT_US", 2)
    (a, o, n), = alloc_buffers(tb, [2048])
    await cring.submit([(a, n, 0)])
    await tb.ch_control(C2H, run=1)
    await cring.wait_done(0, timeout_us=100)
    check_record(cring, 0, n)
    assert bytes(tb.mem[o:o + n]) == pattern_bytes(3, n // 4)
    await halt(tb, C2H)
    await tb.wr("PATGEN_RATE", 0)
    await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_USER))
    await reset_channel(tb, C2H, cring)
    await cring.configure(timeout_us=5)

    # a descriptor fetch that gets no answer: TIMEOUT, no record
    hole = 0x2000_0000_0000
    tb.completer.black_hole(hole, 1 << 20, core_timeout_ns=30_000)
    cring2 = Ring(tb, C2H, 8, base=(hole, 0))
    await cring2.configure(timeout_us=4)
    await tb.ch_wr(C2H, "TAIL", 1)
    await tb.ch_control(C2H, run=1)
    await tb.wait_state(C2H, "ERROR", timeout_us=20)
    await expect_state(tb, C2H, "ERROR", TMO, busy=1)   # the fetch is still out
    await wait_not_busy(tb, C2H, timeout_us=60)          # until the core times it out
    await reset_channel(tb, C2H, cring)

    # H2C: a sink that stalls is not a missing completion: no timeout while no read is awaited
    await hring.configure(timeout_us=2)
    tb.h2c.start()
    tb.h2c.pause = iter(lambda: True, False)            # stalled until released
    (a, o, n), = alloc_buffers(tb, [32 << 10])
    data = tb.rand_bytes(n)
    tb.mem[o:o + n] = data
    await hring.submit([(a, n, 0)])
    await tb.ch_control(H2C, run=1)
    await Timer(20, "us")
    await expect_state(tb, H2C, "RUNNING")
    tb.h2c.pause = None
    await hring.wait_done(0)
    check_record(hring, 0, n)
    assert bytes(tb.h2c.data) == data
    await halt(tb, H2C)
    await reset_channel(tb, H2C, hring)
    tb.h2c.data.clear()

    # H2C: reads into a black hole; the engine times out first, the core's completion timeout
    # (emulated) frees the tag later; until then the channel stays BUSY
    await hring.configure(timeout_us=10)
    hole2 = 0x3000_0000_0000
    tb.completer.black_hole(hole2, 1 << 20, core_timeout_ns=40_000)
    t0 = get_sim_time("ns")
    await hring.submit([(hole2 + 0x40, 8192, 0)])
    await tb.ch_control(H2C, run=1)
    await hring.wait_done(0, poll_ns=100)
    elapsed = get_sim_time("ns") - t0
    assert 10_000 <= elapsed < 14_000, f"H2C timed out after {elapsed} ns, TIMEOUT_US 10"
    check_record(hring, 0, 0, code=TMO)
    await expect_state(tb, H2C, "ERROR", TMO, busy=1)
    await tb.ch_control(H2C, reset=1)
    await expect_state(tb, H2C, "IDLE", busy=1)          # RESET: BUSY until the reads are gone
    await wait_not_busy(tb, H2C, timeout_us=60)
    assert get_sim_time("ns") - t0 >= 40_000
    hring.tail = hring.head = 0
    # with TIMEOUT_US = 0 the core's completion timeout ends the descriptor
    await hring.configure(timeout_us=0)
    tb.completer.holes = [(hole2, hole2 + (1 << 20), 15_000)]
    (a, o, n), = alloc_buffers(tb, [4096])
    data = tb.rand_bytes(n)
    tb.mem[o:o + n] = data
    await hring.submit([(a, n, 0), (hole2, 4096, 0)])
    await tb.ch_control(H2C, run=1)
    await hring.wait_done(1, timeout_us=50)
    check_record(hring, 0, n)
    check_record(hring, 1, 0, code=TMO)
    assert bytes(tb.h2c.data) == data
    await reset_channel(tb, H2C, hring)
    # and the channel works again
    tb.h2c.data.clear()
    await tb.ch_control(H2C, run=1)
    await run_ring(tb, hring, [(a, n, 0)])
    assert bytes(tb.h2c.data) == data
    tb.check_protocol()

# ------------------------------------------------------------------------------ descriptor errors

@cocotb.test()
async def desc_errors(dut):
    tb = make_tb(dut)
    await tb.init()
    ch = os.environ.get("MPRACE_CHANNEL", C2H)
    E = S.err
    max_len = S.engine["max_desc_len"]
    if ch == C2H:
        await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_GEN))
    else:
        await tb.wr("TEST_CONTROL", TEST_CONTROL(H2C_SINK=1))
    ring = Ring(tb, ch, 8)
    await ring.configure()
    buf, boff = tb.alloc(8192)
    errbit = 1 << S.irq_bit["ERROR"]

    async def case(name, bad, code, record=True):
        """descriptor 0 fine, 1 bad, 2 fine: 0 completes, 1 fails with code, 2 is untouched"""
        await ring.submit([(buf, 64, 0), bad, (buf, 64, 0)])
        await tb.ch_control(ch, run=1)
        await tb.wait_state(ch, "ERROR")
        await expect_state(tb, ch, "ERROR", code)
        check_record(ring, 0, 64)
        if record:
            check_record(ring, 1, 0, code=code)
        else:
            assert ring.result(1) == (0, 0), f"{name}: record written"
        assert ring.result(2) == (0, 0), f"{name}: descriptor after the error processed"
        assert await tb.ch_rd(ch, "HEAD") == 1, name
        assert await tb.rd("IRQ_STATUS") & errbit, name
        await tb.wr("IRQ_STATUS", errbit)
        await reset_channel(tb, ch, ring)

    # the largest length is valid: the descriptor starts moving data (then it is aborted)
    big, big_off = tb.alloc(max_len)
    await ring.submit([(big, max_len, 0)])
    await tb.ch_control(ch, run=1)
    await Timer(3, "us")
    await expect_state(tb, ch, "RUNNING")
    await tb.ch_control(ch, abort=1)
    await tb.wait_state(ch, "ERROR")
    await ring.wait_done(0)
    rb, st = ring.result(0)
    assert S.status(st) == (1, 1, 0, E["ABORTED"]) and 0 < rb < max_len, (rb, st)
    assert await tb.ch_rd(ch, "BYTES_LO") == 0, "an aborted descriptor is not completed"
    await tb.wr("IRQ_STATUS", errbit)
    await reset_channel(tb, ch, ring)

    await case("length 0", (buf, 0, 0), E["DESC_LENGTH"])
    await case("length above max", (buf, max_len + 4, 0), E["DESC_LENGTH"])
    await case("reserved LEN bit", (buf, 64, 0, 64 | 1 << 25), E["DESC_RESERVED"])
    await case("reserved LEN bit 31", (buf, 0, 0, 1 << 31), E["DESC_RESERVED"])
    await case("reserved CTRL bit 3", (buf, 64, 1 << 3), E["DESC_RESERVED"])
    await case("reserved CTRL bit 31", (buf, 64, 1 << 31 | 1), E["DESC_RESERVED"])
    await case("address not aligned", (buf + 2, 64, 0), E["DESC_ALIGN"])
    await case("length not aligned", (buf, 66, 0), E["DESC_ALIGN"])
    # order of the checks: reserved before length before alignment
    await case("reserved and length", (buf + 1, 0, 1 << 4), E["DESC_RESERVED"])
    await case("length and alignment", (buf + 1, 0, 0), E["DESC_LENGTH"])
    if ch == H2C:
        # a read the host cannot serve (UR): the data before it arrives, then BUS_ERROR
        hi = 0x1_0000_0000
        tb.high_region(hi, 8192)
        await case("unmapped buffer", (0x4000_0000_0000, 64, 0), E["BUS_ERROR"])
        await tb.wr("TEST_CONTROL", TEST_CONTROL(H2C_SINK=SRC_USER))
        tb.h2c.start()
        tb.h2c.data.clear()
        await ring.submit([(hi + 4096, 8192, 0)])
        await tb.ch_control(ch, run=1)
        await tb.wait_state(ch, "ERROR")
        await expect_state(tb, ch, "ERROR", E["BUS_ERROR"])
        check_record(ring, 0, 4096, code=E["BUS_ERROR"])
        assert len(tb.h2c.data) == 4096
        # BYTES counts completed descriptors only: the sum of RESULT_BYTES before HEAD
        assert await tb.ch_rd(ch, "BYTES_LO") == 0
        await reset_channel(tb, ch, ring)
    else:
        # a posted write cannot fail on the device side: the record says DONE (the virtual
        # board is stricter, docs/dma-engine.md section 5)
        await ring.submit([(0x4000_0000_0000, 64, 0)])
        await tb.ch_control(ch, run=1)
        await ring.wait_done(0)
        check_record(ring, 0, 64)
        await halt(tb, ch)
        await reset_channel(tb, ch, ring)

    # ring configuration: nothing is fetched and no record is written
    async def ring_case(name, base, size, tail):
        await tb.ch_wr(ch, "RING_BASE_LO", base & 0xFFFFFFFF)
        await tb.ch_wr(ch, "RING_BASE_HI", base >> 32)
        await tb.ch_wr(ch, "RING_SIZE", size)
        before = bytes(tb.mem[ring.off:ring.off + 8 * DESC])
        reads = tb.completer_reads
        await tb.ch_wr(ch, "TAIL", tail)
        await tb.ch_control(ch, run=1)
        await tb.wait_state(ch, "ERROR")
        await expect_state(tb, ch, "ERROR", E["RING_CONFIG"])
        assert bytes(tb.mem[ring.off:ring.off + 8 * DESC]) == before, name
        assert tb.completer_reads == reads, f"{name}: descriptors were fetched"
        assert await tb.ch_rd(ch, "HEAD") == 0
        await reset_channel(tb, ch, ring)

    tb.completer_reads = 0
    orig = tb.completer.handle

    async def counting(tlp):
        tb.completer_reads += 1
        await orig(tlp)
    tb.rc.register_rx_tlp_handler(TlpType.MEM_READ, counting)
    tb.rc.register_rx_tlp_handler(TlpType.MEM_READ_64, counting)
    ring.put(0, buf, 64, 0)
    await ring_case("base not 32-byte aligned", ring.addr + 16, 8, 1)
    await ring_case("size not a power of two", ring.addr, 6, 1)
    await ring_case("size below minimum", ring.addr, 1, 1)
    await ring_case("size above maximum", ring.addr, 2 * S.engine["ring_max_entries"], 1)
    await ring_case("TAIL - HEAD above size", ring.addr, 4, 5)
    await ring.configure()

    # a descriptor fetch the host cannot serve: BUS_ERROR, no record
    await tb.ch_wr(ch, "RING_BASE_LO", 0)
    await tb.ch_wr(ch, "RING_BASE_HI", 0x4000)
    await tb.ch_wr(ch, "TAIL", 1)
    await tb.ch_control(ch, run=1)
    await tb.wait_state(ch, "ERROR")
    await expect_state(tb, ch, "ERROR", E["BUS_ERROR"])
    await reset_channel(tb, ch, ring)
    await ring.configure()
    # and the channel still works
    await tb.ch_control(ch, run=1)
    await run_ring(tb, ring, [(buf, 4096, 0)])
    check_record(ring, 0, 4096)
    tb.check_protocol()

# ------------------------------------------------------------------------------ data read errors

@cocotb.test()
async def h2c_read_errors(dut):
    """A data read that fails in the middle of a descriptor (Unsupported Request, Completer
    Abort, poisoned completion), the descriptor at a random 4-byte offset: the data before
    the failed read reaches the sink in whole beats, the record says BUS_ERROR with those
    bytes, the channel stops in ERROR with the error interrupt, and nothing after it runs."""
    tb = make_tb(dut)
    await tb.init()
    rng = tb.rng
    tb.completer.reorder = bool(env_int("MPRACE_REORDER", 0))
    tb.completer.split = tb.completer.reorder
    E = S.err
    errbit = 1 << S.irq_bit["ERROR"]
    beat = tb.beat_bytes
    await tb.wr("TEST_CONTROL", TEST_CONTROL(H2C_SINK=SRC_USER))
    tb.h2c.start()
    ring = Ring(tb, H2C, 8)
    await ring.configure()
    for k in range(env_int("MPRACE_COUNT", 6)):
        kind = ("ur", "ca", "poison")[k % 3]
        n = 4 * rng.randint(3 * tb.mrrs // 4, 2 * tb.mrrs)
        (fa, fo, fn), (a, o, _), (la, lo, ln) = alloc_buffers(tb, [64, n, 64])
        for off, length in ((fo, fn), (o, n), (lo, ln)):
            tb.mem[off:off + length] = tb.rand_bytes(length)
        # a point past the first read of the descriptor (reads are at most MRRS bytes)
        f = 4 * rng.randrange((tb.mrrs + 4) // 4, (n - 4) // 4)
        tb.completer.faults.clear()
        tb.completer.failed.clear()
        tb.completer.fail_reads(a + f, 4, kind)
        tb.h2c.data.clear()
        await ring.submit([(fa, fn, 0), (a, n, 0), (la, ln, 0)])
        await tb.ch_control(H2C, run=1)
        await tb.wait_state(H2C, "ERROR")
        what = f"round {k}: {kind} at byte {f} of {n}, buffer at {a:#x}"
        await expect_state(tb, H2C, "ERROR", E["BUS_ERROR"])
        assert tb.completer.failed, what
        before = tb.completer.failed[0].address - a
        got = before // beat * beat
        check_record(ring, ring.tail - 3, fn)
        check_record(ring, ring.tail - 2, got, code=E["BUS_ERROR"])
        assert ring.result(ring.tail - 1) == (0, 0), f"{what}: descriptor after the error ran"
        assert bytes(tb.h2c.data) == bytes(tb.mem[fo:fo + fn]) + bytes(tb.mem[o:o + got]), \
            f"{what}: sink got {len(tb.h2c.data)} bytes, expected {fn + got}"
        assert await tb.rd("IRQ_STATUS") & errbit, what
        await tb.wr("IRQ_STATUS", errbit)
        await reset_channel(tb, H2C, ring)
    # and the channel works again
    tb.completer.faults.clear()
    tb.h2c.data.clear()
    (a, o, n), = alloc_buffers(tb, [4096])
    tb.mem[o:o + n] = tb.rand_bytes(n)
    await tb.ch_control(H2C, run=1)
    await run_ring(tb, ring, [(a, n, 0)])
    assert bytes(tb.h2c.data) == bytes(tb.mem[o:o + n])
    tb.check_protocol()


def test_abort_reset(width):
    run(MODULE, "abort_reset", seed=31, width=width)


def test_reset_during_transfers(width):
    run(MODULE, "reset_during_transfers", seed=83, width=width)


def test_timeouts(width):
    run(MODULE, "timeouts", seed=41, width=width)


@pytest.mark.parametrize("channel", [C2H, H2C])
def test_desc_errors(channel, width):
    run(MODULE, "desc_errors", f"desc_errors_{channel}", channel=channel, width=width)


@pytest.mark.parametrize("reorder", [0, 1])
def test_h2c_read_errors(reorder, width):
    run(MODULE, "h2c_read_errors", f"h2c_read_errors_r{reorder}", reorder=reorder, mrrs=256,
        seed=71 + reorder, width=width)
