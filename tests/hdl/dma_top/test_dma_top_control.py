# SPDX-License-Identifier: GPL-2.0
"""mprace_dma_top: registers, the test logic (pattern generator, checker, loopback,
TEST_CONTROL), interrupts, ring control and the status after control writes.

dma_top_env.py says how the cases run."""
import cocotb
import pytest
from cocotb.triggers import Timer
from cocotb.utils import get_sim_time

from dma_top_env import (alloc_buffers, check_record, expect_state, halt, make_tb, rand_len,
                         reset_channel, run, run_ring, SRC_GEN, SRC_LOOP, SRC_USER, TEST_CONTROL,
                         wait_not_busy, WIDTHS)
from pcie_env import (C2H, H2C, pattern_bytes, Ring, S)

MODULE = "test_dma_top_control"
pytestmark = pytest.mark.parametrize("width", WIDTHS, ids=lambda w: f"w{w}")


# ------------------------------------------------------------------------------ registers

@cocotb.test()
async def registers(dut):
    tb = make_tb(dut, msi_count=4)
    await tb.init()
    assert await tb.rd("MAGIC") == S.reg_reset["MAGIC"]
    ver = await tb.rd("VERSION")
    assert S.get(ver, "VERSION", "MAJOR") == S.engine["version_major"]
    assert S.get(ver, "VERSION", "MINOR") == S.engine["version_minor"]
    caps = await tb.rd("CAPS")
    g = lambda f: S.get(caps, "CAPS", f)  # noqa: E731
    assert g("DATAPATH_BYTES") == tb.beat_bytes
    assert (g("C2H_CHANNELS"), g("H2C_CHANNELS")) == (1, 1)
    assert 128 << g("MPS") == tb.mps and 128 << g("MRRS") == tb.mrrs
    assert (g("PATGEN"), g("CHECKER"), g("LOOPBACK")) == (1, 1, 1)
    assert g("MSI_VECTORS") == 4
    assert await tb.rd("CLOCK_MHZ") == 250

    # read-only registers ignore writes; unlisted offsets read 0 and ignore writes
    for reg in ("MAGIC", "VERSION", "CAPS", "CLOCK_MHZ", "CHECK_ERRORS", "CHECK_WORDS"):
        before = await tb.rd(reg)
        await tb.wr(reg, 0xA5A5A5A5)
        assert await tb.rd(reg) == before, reg
    listed = set(S.reg.values()) | {S.chan[c] + o for c in S.chan for o in S.chreg.values()}
    for off in (0x028, 0x07C, 0x098, 0x0FC, 0x128, 0x13C, 0x168, 0x17C, 0x400, 0xFFC):
        assert off not in listed
        await tb.wr(off, 0xFFFFFFFF)
        assert await tb.rd(off) == 0, f"offset {off:#x}"
    for v in (0xDEADBEEF, 0x00000000, 0x12345678):
        await tb.wr("SCRATCH", v)
        assert await tb.rd("SCRATCH") == v

    # the cycle counter runs; CYCLE_HI is latched by CYCLE_LO
    lo1 = await tb.rd("CYCLE_LO")
    hi1 = await tb.rd("CYCLE_HI")
    lo2 = await tb.rd("CYCLE_LO")
    hi2 = await tb.rd("CYCLE_HI")
    assert (hi2 << 32 | lo2) > (hi1 << 32 | lo1)
    assert await tb.rd("CYCLE_HI") == hi2

    # read/write registers
    for reg, v in (("IRQ_ENABLE", 0x5), ("PATGEN_SEED", 0xCAFE0001), ("PATGEN_RATE", 1234),
                   ("CHECK_SEED", 0x77)):
        await tb.wr(reg, v)
        assert await tb.rd(reg) == v, reg
    await tb.wr("IRQ_ENABLE", 0xFFFFFFFF)
    assert await tb.rd("IRQ_ENABLE") == 0x7
    await tb.wr("TEST_CONTROL", 0xFFFFFFFF)
    assert await tb.rd("TEST_CONTROL") == TEST_CONTROL(C2H_SOURCE=3, H2C_SINK=3)
    await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=2, H2C_SINK=1))
    assert await tb.rd("TEST_CONTROL") == TEST_CONTROL(C2H_SOURCE=2, H2C_SINK=1)
    assert await tb.rd("IRQ_STATUS") == 0

    for ch in (C2H, H2C):
        await expect_state(tb, ch, "IDLE", busy=0)
        vals = {"RING_BASE_LO": 0x10000 + 32 * 5, "RING_BASE_HI": 0x1, "RING_SIZE": 64,
                "TAIL": 0, "TIMEOUT_US": 99}
        for reg, v in vals.items():
            await tb.ch_wr(ch, reg, v)
            assert await tb.ch_rd(ch, reg) == v, f"{ch} {reg}"
        for reg in ("HEAD", "BYTES_LO", "BYTES_HI", "STATUS"):
            await tb.ch_wr(ch, reg, 0x55)
            assert await tb.ch_rd(ch, reg) == 0, f"{ch} {reg}"
        # RUN with an empty ring: RUNNING; ring set-up is ignored while RUNNING
        await tb.ch_control(ch, run=1)
        await expect_state(tb, ch, "RUNNING")
        assert await tb.ch_rd(ch, "CONTROL") == 1
        await tb.ch_wr(ch, "RING_SIZE", 128)
        await tb.ch_wr(ch, "RING_BASE_LO", 0x40000)
        await tb.ch_wr(ch, "RING_BASE_HI", 0)
        assert await tb.ch_rd(ch, "RING_SIZE") == 64
        assert await tb.ch_rd(ch, "RING_BASE_LO") == vals["RING_BASE_LO"]
        assert await tb.ch_rd(ch, "RING_BASE_HI") == 1
        await tb.ch_control(ch, run=0)
        await tb.wait_state(ch, "IDLE")
        assert await tb.ch_rd(ch, "CONTROL") == 0

    # ABORT of an idle channel: ERROR/ABORTED, IRQ_STATUS.ERROR set; w1c clears only with 1
    err_bit = 1 << S.irq_bit["ERROR"]
    await tb.ch_control(C2H, abort=1)
    await tb.wait_state(C2H, "ERROR")
    await expect_state(tb, C2H, "ERROR", S.err["ABORTED"])
    assert await tb.rd("IRQ_STATUS") == err_bit
    await tb.ch_control(C2H, run=1)             # ignored in ERROR
    await expect_state(tb, C2H, "ERROR", S.err["ABORTED"])
    await tb.wr("IRQ_STATUS", ~err_bit & 0xFFFFFFFF)
    assert await tb.rd("IRQ_STATUS") == err_bit
    await tb.wr("IRQ_STATUS", err_bit)
    assert await tb.rd("IRQ_STATUS") == 0
    await tb.ch_control(C2H, reset=1)
    await expect_state(tb, C2H, "IDLE")

    # global reset: both channels, test logic, IRQ_STATUS/ENABLE, SCRATCH; ring set-up stays
    await tb.ch_control(H2C, abort=1)
    await tb.wait_state(H2C, "ERROR")
    await tb.ch_wr(C2H, "TAIL", 3)
    await tb.wr("SCRATCH", 0x1234)
    await tb.wr("CONTROL", S.val("CONTROL", RESET=1))
    for reg in ("SCRATCH", "IRQ_STATUS", "IRQ_ENABLE", "TEST_CONTROL", "PATGEN_SEED",
                "PATGEN_RATE", "CHECK_SEED", "CHECK_ERRORS", "CHECK_WORDS"):
        assert await tb.rd(reg) == 0, reg
    assert await tb.rd("CONTROL") == 0
    for ch in (C2H, H2C):
        await expect_state(tb, ch, "IDLE", busy=0)
        assert await tb.ch_rd(ch, "TAIL") == 0 and await tb.ch_rd(ch, "HEAD") == 0
        assert await tb.ch_rd(ch, "RING_SIZE") == 64
        assert await tb.ch_rd(ch, "TIMEOUT_US") == 99
    tb.check_protocol()

# ------------------------------------------------------------------------------ test logic

@cocotb.test()
async def test_logic(dut):
    tb = make_tb(dut)
    await tb.init()
    rng = tb.rng

    # pattern generator: a counter stream that runs on across descriptors (and wraps at 2**32)
    seed = 0xFFFFFF00
    await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_GEN))
    await tb.wr("PATGEN_SEED", seed)
    cring = Ring(tb, C2H, 8)
    await cring.configure()
    lengths = [rand_len(rng, small=True) for _ in range(6)]
    bufs = alloc_buffers(tb, lengths)
    await tb.ch_control(C2H, run=1)
    await run_ring(tb, cring, [(a, n, 0) for a, o, n in bufs])
    word = seed
    for k, (a, o, n) in enumerate(bufs):
        check_record(cring, k, n)
        assert bytes(tb.mem[o:o + n]) == pattern_bytes(word, n // 4), f"pattern, descriptor {k}"
        word += n // 4
    # a new seed restarts the stream, even with words generated ahead
    await halt(tb, C2H)
    await tb.wr("PATGEN_SEED", 0x100)
    bufs2 = alloc_buffers(tb, [4096, 36])
    await tb.ch_control(C2H, run=1)
    base = cring.tail
    await run_ring(tb, cring, [(a, n, 0) for a, o, n in bufs2])
    assert bytes(tb.mem[bufs2[0][1]:bufs2[0][1] + 4096]) == pattern_bytes(0x100, 1024)
    assert bytes(tb.mem[bufs2[1][1]:bufs2[1][1] + 36]) == pattern_bytes(0x100 + 1024, 9)
    check_record(cring, base, 4096)

    # rate limit: PATGEN_RATE MB/s, measured in simulated time
    await halt(tb, C2H)
    rate, nbytes = 1000, 40 << 10
    await tb.wr("PATGEN_RATE", rate)
    await tb.wr("PATGEN_SEED", 7)
    (a, o, n), = alloc_buffers(tb, [nbytes])
    await cring.submit([(a, n, 0)])
    t0 = get_sim_time("ns")
    await tb.ch_control(C2H, run=1)
    await cring.wait_done(cring.tail - 1, poll_ns=100)
    elapsed = get_sim_time("ns") - t0
    got = nbytes / elapsed * 1000                        # MB/s
    tb.log.info("PATGEN_RATE %d MB/s: measured %.1f MB/s", rate, got)
    assert abs(got - rate) < 0.05 * rate, f"generator ran at {got:.0f} MB/s, set {rate}"
    assert bytes(tb.mem[o:o + n]) == pattern_bytes(7, n // 4)
    cring.head = cring.tail
    await halt(tb, C2H)
    await tb.wr("PATGEN_RATE", 0)

    # checker: counts words and mismatches exactly
    check_seed = rng.getrandbits(32)
    await tb.wr("TEST_CONTROL", TEST_CONTROL(H2C_SINK=1))
    await tb.wr("CHECK_SEED", check_seed)
    assert await tb.rd("CHECK_WORDS") == 0
    hring = Ring(tb, H2C, 8)
    await hring.configure()
    lengths = [rand_len(rng, small=True) for _ in range(7)]
    bufs = alloc_buffers(tb, lengths)
    word = check_seed
    for a, o, n in bufs:
        tb.mem[o:o + n] = pattern_bytes(word, n // 4)
        word += n // 4
    bad = rng.sample(range(sum(lengths) // 4), 3)
    wpos = 0
    for a, o, n in bufs:
        for b in bad:
            if wpos <= b < wpos + n // 4:
                tb.mem[o + 4 * (b - wpos)] ^= 0x40
        wpos += n // 4
    await tb.ch_control(H2C, run=1)
    await run_ring(tb, hring, [(a, n, S.ctrl(eop=1)) for a, o, n in bufs])
    await tb.clocks(4)
    assert await tb.rd("CHECK_WORDS") == sum(lengths) // 4
    assert await tb.rd("CHECK_ERRORS") == 3
    await tb.wr("CHECK_SEED", 0)
    words, errors = await tb.rd("CHECK_WORDS"), await tb.rd("CHECK_ERRORS")
    assert (words, errors) == (0, 0), f"CHECK_SEED did not restart the counts: {words}, {errors}"
    await halt(tb, H2C)
    await halt(tb, C2H)

    # loopback: H2C data comes back through C2H, split into other descriptors; the loopback
    # never ends packets, so H2C's EOP does not end C2H descriptors
    await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_LOOP, H2C_SINK=SRC_LOOP))
    hl = [rand_len(rng, small=True) for _ in range(6)]
    total = sum(hl)
    cl = []
    while sum(cl) < total:
        cl.append(min(total - sum(cl), 4 * rng.randint(1, 1500)))
    hbufs = alloc_buffers(tb, hl)
    cbufs = alloc_buffers(tb, cl)
    data = tb.rand_bytes(total)
    pos = 0
    for a, o, n in hbufs:
        tb.mem[o:o + n] = data[pos:pos + n]
        pos += n
    cbase, hbase = cring.tail, hring.tail
    await tb.ch_control(C2H, run=1)
    await tb.ch_control(H2C, run=1)
    cdone = cocotb.start_soon(run_ring(tb, cring, [(a, n, 0) for a, o, n in cbufs]))
    await run_ring(tb, hring, [(a, n, S.ctrl(eop=int(rng.random() < 0.5))) for a, o, n in hbufs])
    await cdone
    pos = 0
    for k, (a, o, n) in enumerate(cbufs):
        check_record(cring, cbase + k, n)
        assert bytes(tb.mem[o:o + n]) == data[pos:pos + n], f"loopback, C2H descriptor {k}"
        pos += n
    for k, (a, o, n) in enumerate(hbufs):
        check_record(hring, hbase + k, n)
    tb.check_protocol()

# ------------------------------------------------------------------------------ interrupts

@cocotb.test()
async def interrupts(dut):
    tb = make_tb(dut)
    await tb.init()
    nvec = 1 << ((tb.msi_vectors - 1).bit_length())
    caps = await tb.rd("CAPS")
    assert S.get(caps, "CAPS", "MSI_VECTORS") == min(nvec, 8)
    vec = {name: (S.irq_vector[name] if nvec >= 4 else 0) for name in S.irq_vector}
    bit = {name: 1 << S.irq_bit[name] for name in S.irq_bit}
    expected = [0] * 32

    async def settle():
        await Timer(1, "us")
        assert tb.msi == expected, f"MSI counts {tb.msi[:4]}, expected {expected[:4]}"

    await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_GEN, H2C_SINK=1))
    cring, hring = Ring(tb, C2H, 16), Ring(tb, H2C, 16)
    await cring.configure()
    await hring.configure()
    buf, _ = tb.alloc(4096)
    await tb.ch_control(C2H, run=1)
    await tb.ch_control(H2C, run=1)

    async def one(ring, irq=1):
        await ring.submit([(buf, 256, S.ctrl(irq=irq))])
        await ring.wait_done(ring.tail - 1)

    await tb.wr("IRQ_ENABLE", 0x7)
    await one(cring)
    expected[vec["C2H_DONE"]] += 1
    await settle()
    assert await tb.rd("IRQ_STATUS") == bit["C2H_DONE"]
    await one(cring)                   # the bit is still set: no new interrupt
    await one(cring, irq=0)            # no CTRL.IRQ: nothing
    await settle()
    await tb.wr("IRQ_STATUS", bit["C2H_DONE"])
    assert await tb.rd("IRQ_STATUS") == 0
    await one(cring, irq=0)
    await settle()
    assert await tb.rd("IRQ_STATUS") == 0
    await one(cring)                   # cleared, then set again: a new interrupt
    expected[vec["C2H_DONE"]] += 1
    await settle()
    await one(hring)
    expected[vec["H2C_DONE"]] += 1
    await settle()
    assert await tb.rd("IRQ_STATUS") == bit["C2H_DONE"] | bit["H2C_DONE"]

    # masked sources set IRQ_STATUS but raise nothing until enabled
    await tb.wr("IRQ_STATUS", 0x7)
    await tb.wr("IRQ_ENABLE", bit["ERROR"])
    await one(cring)
    await one(hring)
    await settle()
    assert await tb.rd("IRQ_STATUS") == bit["C2H_DONE"] | bit["H2C_DONE"]
    await tb.wr("IRQ_ENABLE", 0x7)     # enabled while pending: both raise now
    expected[vec["C2H_DONE"]] += 1
    if nvec >= 4:
        expected[vec["H2C_DONE"]] += 1
    await Timer(1, "us")
    if nvec < 4:
        # pending together: one message on the shared vector is enough
        assert tb.msi[0] in (expected[0], expected[0] + 1)
        expected[0] = tb.msi[0]
    await settle()

    # the error source
    await halt(tb, C2H)
    await tb.ch_control(C2H, abort=1)
    await tb.wait_state(C2H, "ERROR")
    expected[vec["ERROR"]] += 1
    await settle()
    assert await tb.rd("IRQ_STATUS") & bit["ERROR"]
    await tb.ch_control(C2H, reset=1)

    # legacy INTx while MSI is off: the line follows IRQ_STATUS and IRQ_ENABLE (the block's
    # INTA input: cfg_interrupt_int on Xilinx, app_int on the P-tile, app_int_sts on the H-tile)
    await tb.pdev.disable_msi()
    await tb.clocks(64)                # an Intel tile's configuration output goes round 32 clocks
    assert S.get(await tb.rd("CAPS"), "CAPS", "MSI_VECTORS") == 0
    inta = {"xilinx": "cfg_interrupt_int", "ptile": "app_int", "htile": "app_int_sts"}[tb.block]
    line = getattr(dut, inta)
    assert int(line.value) == 1
    await tb.wr("IRQ_STATUS", 0x7)
    await tb.rd("IRQ_STATUS")          # the write has arrived
    assert int(line.value) == 0
    await one(hring)
    await tb.clocks(4)
    assert int(line.value) == 1
    await tb.wr("IRQ_ENABLE", 0)
    await tb.rd("IRQ_ENABLE")
    assert int(line.value) == 0
    await settle()                     # and no MSI while MSI is off
    tb.check_protocol()

# ------------------------------------------------------------------------------ ring control

@cocotb.test()
async def ring_control(dut):
    tb = make_tb(dut)
    await tb.init()
    rng = tb.rng
    await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_GEN, H2C_SINK=1))
    await tb.wr("PATGEN_SEED", 0)
    await tb.wr("CHECK_SEED", 0)

    # CTRL.STOP: the channel goes IDLE after that descriptor and RUN=1 continues at HEAD
    cring = Ring(tb, C2H, 4)
    await cring.configure()
    lengths = [rand_len(rng, small=True) for _ in range(5)]
    bufs = alloc_buffers(tb, lengths)
    await cring.submit([(a, n, S.ctrl(stop=int(k == 1))) for k, (a, o, n) in enumerate(bufs[:4])])
    await tb.ch_control(C2H, run=1)
    await cring.wait_done(1)
    cring.capture(0)
    cring.capture(1)
    await tb.wait_state(C2H, "IDLE")
    assert await tb.ch_rd(C2H, "CONTROL") == 0
    assert await tb.ch_rd(C2H, "HEAD") == 2
    await Timer(2, "us")
    assert cring.result(2) == (0, 0), "descriptor after STOP processed"
    cring.head = 2
    await tb.ch_control(C2H, run=1)
    await run_ring(tb, cring, [(a, n, 0) for a, o, n in bufs[4:]])
    word = 0
    for k, (a, o, n) in enumerate(bufs):
        check_record(cring, k, n)
        assert bytes(tb.mem[o:o + n]) == pattern_bytes(word, n // 4), f"descriptor {k}"
        word += n // 4

    # the smallest ring, wrapped several times, appended to while running
    await halt(tb, C2H)
    await reset_channel(tb, C2H, cring)
    await tb.wr("PATGEN_SEED", 0)
    small = Ring(tb, C2H, S.engine["ring_min_entries"])
    await small.configure()
    lengths = [rand_len(rng, small=True) for _ in range(7)]
    bufs = alloc_buffers(tb, lengths)
    await tb.ch_control(C2H, run=1)
    await run_ring(tb, small, [(a, n, 0) for a, o, n in bufs])
    word = 0
    for k, (a, o, n) in enumerate(bufs):
        check_record(small, k, n)
        assert bytes(tb.mem[o:o + n]) == pattern_bytes(word, n // 4), f"descriptor {k}"
        word += n // 4
    assert await tb.ch_rd(C2H, "HEAD") == 7

    # RUN = 0 in the middle of a list: what is in flight finishes, the channel goes IDLE,
    # fetched descriptors are fetched again on the next RUN, and no data is lost or repeated
    hring = Ring(tb, H2C, 16)
    await hring.configure()
    lengths = [16 << 10] * 10
    bufs = alloc_buffers(tb, lengths)
    word = 0
    for a, o, n in bufs:
        tb.mem[o:o + n] = pattern_bytes(word, n // 4)
        word += n // 4
    await hring.submit([(a, n, 0) for a, o, n in bufs])
    await tb.ch_control(H2C, run=1)
    await hring.wait_done(0)
    await tb.ch_control(H2C, run=0)
    await tb.wait_state(H2C, "IDLE")
    head = await tb.ch_rd(H2C, "HEAD")
    assert 1 <= head < 10, f"HEAD {head} after RUN = 0"
    await Timer(3, "us")
    assert await tb.ch_rd(H2C, "HEAD") == head
    assert not hring.done(head)
    await tb.ch_control(H2C, run=1)
    await hring.wait_done(9)
    await tb.clocks(4)
    assert (await tb.rd("CHECK_WORDS"), await tb.rd("CHECK_ERRORS")) == (sum(lengths) // 4, 0)
    for k in range(10):
        check_record(hring, k, lengths[k])
    tb.check_protocol()

# ------------------------------------------------------------------------------ source switch

@cocotb.test()
async def c2h_source_switch(dut):
    """User data already offered on s_axis_c2h while another source is selected is taken only
    after the TEST_CONTROL write that selects the user stream, and none of it is lost: the
    data the old source left in the engine is dropped, the new source's is not."""
    tb = make_tb(dut)
    await tb.init()
    rng = tb.rng
    ring = Ring(tb, C2H, 8)
    await ring.configure()
    for k, old in enumerate((SRC_LOOP, SRC_GEN, SRC_LOOP, SRC_GEN)):
        await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=old, H2C_SINK=SRC_LOOP * (old == SRC_LOOP)))
        await tb.clocks(rng.randint(0, 200))      # the generator fills the engine ahead
        n = 4 * rng.randint(64, 1500)
        data = tb.rand_bytes(n)
        sent = tb.c2h.sent
        tb.c2h.send(data)
        await tb.clocks(rng.randint(1, 20))
        assert tb.c2h.sent == sent, f"round {k}: user data taken while source {old} is selected"
        await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_USER))
        (a, o, _), = alloc_buffers(tb, [n])
        await tb.ch_control(C2H, run=1)
        await run_ring(tb, ring, [(a, n, 0)])
        check_record(ring, ring.tail - 1, n)
        got = bytes(tb.mem[o:o + n])
        assert got == data, f"round {k} (from source {old}): first difference at byte " \
            f"{next(i for i in range(n) if got[i] != data[i])} of {n}"
        await halt(tb, C2H)
    tb.check_protocol()


@cocotb.test()
async def c2h_test_control_same_source(dut):
    """A TEST_CONTROL write that leaves the C2H source as it is (only the H2C sink changes, or
    the same value again) drops nothing: a C2H descriptor reading the user stream, with user
    data taken ahead, ends with all its bytes and no error."""
    tb = make_tb(dut)
    await tb.init()
    rng = tb.rng
    ring = Ring(tb, C2H, 8)
    await ring.configure()
    await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_USER))
    await tb.ch_control(C2H, run=1)
    for k, sink in enumerate((SRC_LOOP, SRC_LOOP, 0, 1)):   # a change, the same value, back
        n = 4 * rng.randint(700, 2000)
        data = tb.rand_bytes(n)
        (a, o, _), = alloc_buffers(tb, [n])
        await ring.submit([(a, n, 0)])
        part = 4 * rng.randint(64, n // 8)
        tb.c2h.send(data[:part])           # the engine takes it ahead and waits for more
        for _ in range(2000):
            if tb.c2h.sent >= part:
                break
            await tb.clocks(1)
        await tb.clocks(rng.randint(1, 50))
        await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_USER, H2C_SINK=sink))
        tb.c2h.send(data[part:])
        await ring.wait_done(ring.tail - 1, timeout_us=2000)
        check_record(ring, ring.tail - 1, n)
        ring.head = ring.tail
        got = bytes(tb.mem[o:o + n])
        assert got == data, f"round {k} (H2C sink {sink}): first difference at byte " \
            f"{next(i for i in range(n) if got[i] != data[i])} of {n}"
    await halt(tb, C2H)
    tb.check_protocol()

# ------------------------------------------------------------------------------ status after control

@cocotb.test()
async def status_after_control(dut):
    """A STATUS read straight after a CONTROL write sees its effect: RUN -> RUNNING; ABORT
    of an idle channel -> ERROR/ABORTED; ABORT of a running one -> ERROR/ABORTED with its
    record already in host memory; RESET -> IDLE at once, BUSY cleared once requests in
    flight have drained."""
    tb = make_tb(dut)
    await tb.init()
    E = S.err
    errbit = 1 << S.irq_bit["ERROR"]
    await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_GEN, H2C_SINK=1))
    for ch in (C2H, H2C):
        ring = Ring(tb, ch, 8)
        await ring.configure()
        await tb.ch_control(ch, abort=1)
        await expect_state(tb, ch, "ERROR", E["ABORTED"])
        await tb.wr("IRQ_STATUS", errbit)
        await tb.ch_control(ch, reset=1)
        await expect_state(tb, ch, "IDLE")
        await wait_not_busy(tb, ch)

        big, _ = tb.alloc(1 << 20)
        await ring.submit([(big, 1 << 20, 0)])
        await tb.ch_control(ch, run=1)
        await expect_state(tb, ch, "RUNNING")
        await Timer(2, "us")
        await tb.ch_control(ch, abort=1)
        await expect_state(tb, ch, "ERROR", E["ABORTED"])
        rb, st = ring.result(0)
        assert S.status(st) == (1, 1, 0, E["ABORTED"]) and 0 < rb < 1 << 20, \
            f"{ch}: the record is not in memory when STATUS says ERROR ({rb}, {st:#x})"
        await tb.wr("IRQ_STATUS", errbit)
        await tb.ch_control(ch, reset=1)
        await expect_state(tb, ch, "IDLE")
        await wait_not_busy(tb, ch)
        ring.tail = ring.head = 0
    tb.check_protocol()


def test_registers(width):
    run(MODULE, "registers", width=width)


def test_test_logic(width):
    run(MODULE, "test_logic", seed=21, width=width)


@pytest.mark.parametrize("msi", [32, 2, 1])
def test_interrupts(msi, width):
    run(MODULE, "interrupts", f"interrupts_msi{msi}", msi=msi, width=width)


def test_ring_control(width):
    run(MODULE, "ring_control", seed=51, width=width)


def test_c2h_source_switch(width):
    run(MODULE, "c2h_source_switch", seed=81, width=width)


def test_c2h_test_control_same_source(width):
    run(MODULE, "c2h_test_control_same_source", seed=82, width=width)


def test_status_after_control(width):
    run(MODULE, "status_after_control", seed=91, width=width)
