"""mprace_dma_top against cocotbext-pcie's UltraScalePcieDevice (Gen3 x8, 256 bit) and RootComplex.

Each pytest case runs one cocotb test in a fresh simulation; the model settings (MPS, MRRS,
completion splitting, reordering, pauses, seed) come in through environment variables.
Data is compared byte for byte, errors by their code from docs/dma-engine.toml.
Set HDL_SOAK=1 for the long soak.
"""
import os
import struct

import cocotb
import pytest
from cocotb.triggers import Timer
from cocotb.utils import get_sim_time
from cocotbext.pcie.core.tlp import TlpType

import hdl_runner
from mprace_tb import (C2H, H2C, TB, Ring, S, env_int, pattern_bytes, pause_pattern)

TOPLEVEL = "mprace_dma_top"
MODULE = "test_dma_top"
DESC = S.engine["desc_size"]
PAGE = S.engine["page_size"]
TEST_CONTROL = lambda **kw: S.val("TEST_CONTROL", **kw)  # noqa: E731
SRC_USER, SRC_GEN, SRC_LOOP = 0, 1, 2


# ------------------------------------------------------------------------------ helpers

def make_tb(dut, **kw):
    """A TB with the model settings of the pytest case."""
    args = dict(mps=env_int("MPRACE_MPS", 256), mrrs=env_int("MPRACE_MRRS", 512),
                msi_count=env_int("MPRACE_MSI", 32), rcb128=bool(env_int("MPRACE_RCB128", 0)),
                split_rcb=bool(env_int("MPRACE_SPLIT", 0)))
    args.update(kw)
    return TB(dut, **args)


class TlpChecker:
    """Checks every request TLP the engine sends against MPS, MRRS and the 4 KiB rule."""

    def __init__(self, tb):
        self.tb = tb
        self.errors = []
        self.max_write = 0
        self.max_read = 0
        self.writes = 0
        self.reads = 0
        rc = tb.rc
        self._write = rc.handle_mem_write_tlp
        rc.register_rx_tlp_handler(TlpType.MEM_WRITE, self.on_write)
        rc.register_rx_tlp_handler(TlpType.MEM_WRITE_64, self.on_write)
        self._read = tb.completer.handle
        rc.register_rx_tlp_handler(TlpType.MEM_READ, self.on_read)
        rc.register_rx_tlp_handler(TlpType.MEM_READ_64, self.on_read)

    def _check(self, kind, tlp, limit):
        n = tlp.length * 4
        if tlp.first_be != 0xF or (n > 4 and tlp.last_be != 0xF):
            self.errors.append(f"{kind} at {tlp.address:#x}: partial byte enables")
        if n > limit:
            self.errors.append(f"{kind} of {n} bytes at {tlp.address:#x} exceeds {limit}")
        if tlp.address // PAGE != (tlp.address + n - 1) // PAGE:
            self.errors.append(f"{kind} of {n} bytes at {tlp.address:#x} crosses 4 KiB")
        return n

    async def on_write(self, tlp):
        if tlp.length > 2 or (tlp.address - S.desc["RESULT_BYTES"]) % DESC:
            self.max_write = max(self.max_write, self._check("write", tlp, self.tb.mps))
        self.writes += 1
        await self._write(tlp)

    async def on_read(self, tlp):
        self.max_read = max(self.max_read, self._check("read", tlp, self.tb.mrrs))
        self.reads += 1
        await self._read(tlp)

    def check(self):
        assert not self.errors, self.errors[:5]


def apply_pauses(tb, level):
    """Pause patterns on the four core streams (and the user streams) for level >= 1."""
    if not level:
        return
    rng = tb.rng
    busy = 0.2 if level == 1 else 0.5
    tb.dev.rq_sink.set_pause_generator(pause_pattern(rng, busy))
    tb.dev.rc_source.set_pause_generator(pause_pattern(rng, busy))
    tb.dev.cq_source.set_pause_generator(pause_pattern(rng, busy))
    tb.dev.cc_sink.set_pause_generator(pause_pattern(rng, busy))
    tb.c2h.pause = pause_pattern(rng, busy)
    tb.h2c.pause = pause_pattern(rng, busy)


def rand_len(rng, small=False):
    """Descriptor lengths: mostly small and odd, sometimes many pages."""
    r = rng.random()
    if r < 0.3:
        return 4 * rng.randint(1, 16)
    if r < 0.7 or small:
        return 4 * rng.randint(17, 700)
    return 4 * rng.randint(700, 5000)


def alloc_buffers(tb, lengths, guard=64):
    """Buffers at random 4-byte offsets in their page (so many cross pages), with a random
    guard area before and after that must survive."""
    bufs = []
    for n in lengths:
        off = 4 * tb.rng.randrange(PAGE // 4)
        addr, o = tb.alloc(n + 2 * guard + PAGE, offset=0)
        addr, o = addr + off + guard, o + off + guard
        tb.mem[o - guard:o] = tb.rand_bytes(guard)
        tb.mem[o + n:o + n + guard] = tb.rand_bytes(guard)
        bufs.append((addr, o, n))
    return bufs


def guards(tb, bufs, guard=64):
    return [(bytes(tb.mem[o - guard:o]), bytes(tb.mem[o + n:o + n + guard])) for _, o, n in bufs]


async def run_ring(tb, ring, descs, timeout_us=2000):
    """Queue descriptors, never more than the ring holds, and wait for all records. Each record
    is captured (and its cookie checked) before its slot is used again."""
    first = ring.tail
    k = 0
    while k < len(descs) or ring.head < ring.tail:
        room = ring.entries - (ring.tail - ring.head)
        if room and k < len(descs):
            chunk = descs[k:k + room]
            await ring.submit(chunk)
            k += len(chunk)
        await ring.wait_done(ring.head, timeout_us=timeout_us)
        while ring.head < ring.tail and ring.done(ring.head):
            ring.capture(ring.head)
            ring.head += 1
    return list(range(first, ring.tail))


def check_record(ring, n, nbytes, code=0, eop=0):
    rb, st = ring.results[n] if n in ring.results else ring.result(n)
    done, err, e, c = S.status(st)
    assert (done, err, e, c) == (1, int(code != 0), eop, code), \
        f"{ring.ch} descriptor {n}: status {st:#x}, expected code {code} eop {eop}"
    assert rb == nbytes, f"{ring.ch} descriptor {n}: RESULT_BYTES {rb}, expected {nbytes}"
    if n not in ring.results:
        ring.check_cookie(n)


async def expect_state(tb, ch, state, code=0, busy=None):
    st, b, c = await tb.ch_status(ch)
    assert (st, c) == (S.state[state], code), f"{ch}: STATUS state {st} code {c}"
    if busy is not None:
        assert b == busy, f"{ch}: STATUS.BUSY {b}"


async def wait_not_busy(tb, ch, timeout_us=200):
    for _ in range(timeout_us):
        if not (await tb.ch_status(ch))[1]:
            return
        await Timer(1, "us")
    raise AssertionError(f"{ch}: still BUSY after {timeout_us} us")


async def reset_channel(tb, ch, ring):
    await tb.ch_control(ch, reset=1)
    await wait_not_busy(tb, ch)
    await expect_state(tb, ch, "IDLE", busy=0)
    assert await tb.ch_rd(ch, "HEAD") == 0 and await tb.ch_rd(ch, "TAIL") == 0
    ring.tail = ring.head = 0


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
    assert g("DATAPATH_BYTES") == 32
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


# ------------------------------------------------------------------------------ C2H

def c2h_expect(lengths, packets):
    """What each descriptor takes from a stream of packets (lengths; None: no packet ends).
    Returns [(bytes, eop)] per descriptor and the total number of bytes consumed."""
    res = []
    pk = list(packets) if packets else []
    left = pk.pop(0) if pk else None
    for n in lengths:
        if left is None:
            res.append((n, 0))
            continue
        take = min(n, left)
        left -= take
        if left == 0:
            res.append((take, 1))
            left = pk.pop(0) if pk else None
        else:
            res.append((take, 0))
    return res


@cocotb.test()
async def c2h_random(dut):
    tb = make_tb(dut)
    await tb.init()
    apply_pauses(tb, env_int("MPRACE_PAUSE", 0))
    chk = TlpChecker(tb)
    packets = env_int("MPRACE_PACKETS", 0)
    count = env_int("MPRACE_COUNT", 24)
    ring = Ring(tb, C2H, env_int("MPRACE_RING", 8))
    await ring.configure()
    await tb.wr("IRQ_ENABLE", 0x7)

    lengths = [rand_len(tb.rng) for _ in range(count)]
    if packets:
        plens, total = [], sum(lengths)
        while sum(plens) < total:
            plens.append(4 * tb.rng.randint(1, 3000))
        expect = c2h_expect(lengths, plens)
        stream = tb.rand_bytes(sum(plens))
        pos = 0
        for p in plens:
            tb.c2h.send(stream[pos:pos + p], last=True, beat_bytes=4 * tb.rng.choice([8, 8, 8, 3, 1]))
            pos += p
    else:
        expect = [(n, 0) for n in lengths]
        stream = tb.rand_bytes(sum(lengths))
        # beats of 1..8 dwords exercise the dense packing of the source side
        pos = 0
        while pos < len(stream):
            b = 4 * tb.rng.choice([8, 8, 8, 8, 5, 2, 1])
            tb.c2h.send(stream[pos:pos + b], beat_bytes=b)
            pos += b
    bufs = alloc_buffers(tb, lengths)
    g = guards(tb, bufs)
    last = count - 1
    descs = [(a, n, S.ctrl(irq=int(k == last))) for k, (a, o, n) in enumerate(bufs)]
    await tb.ch_control(C2H, run=1)
    await run_ring(tb, ring, descs)

    pos = 0
    for k, ((a, o, n), (nb, eop)) in enumerate(zip(bufs, expect)):
        check_record(ring, k, nb, eop=eop)
        assert bytes(tb.mem[o:o + nb]) == stream[pos:pos + nb], f"descriptor {k}: data"
        pos += nb
    assert guards(tb, bufs) == g, "a write went outside its buffer"
    assert await tb.ch_rd(C2H, "HEAD") == count
    assert await tb.bytes_moved(C2H) == pos
    await Timer(2, "us")
    assert tb.msi[S.irq_vector["C2H_DONE"]] == 1
    assert await tb.rd("IRQ_STATUS") == 1 << S.irq_bit["C2H_DONE"]
    chk.check()
    if lengths and max(lengths) > 2 * tb.mps:
        assert chk.max_write == tb.mps, f"largest write {chk.max_write}, MPS {tb.mps}"
    tb.check_protocol()


# ------------------------------------------------------------------------------ H2C

@cocotb.test()
async def h2c_random(dut):
    tb = make_tb(dut)
    await tb.init()
    apply_pauses(tb, env_int("MPRACE_PAUSE", 0))
    tb.completer.reorder = bool(env_int("MPRACE_REORDER", 0))
    tb.completer.split = bool(env_int("MPRACE_REORDER", 0))
    chk = TlpChecker(tb)
    count = env_int("MPRACE_COUNT", 24)
    ring = Ring(tb, H2C, env_int("MPRACE_RING", 8))
    await ring.configure()
    await tb.wr("IRQ_ENABLE", 0x7)
    tb.h2c.start()

    lengths = [rand_len(tb.rng) for _ in range(count)]
    bufs = alloc_buffers(tb, lengths)
    eops = [tb.rng.random() < 0.3 for _ in lengths]
    data = b""
    for a, o, n in bufs:
        d = tb.rand_bytes(n)
        tb.mem[o:o + n] = d
        data += d
    last = count - 1
    descs = [(a, n, S.ctrl(irq=int(k == last), eop=int(e)))
             for k, ((a, o, n), e) in enumerate(zip(bufs, eops))]
    await tb.ch_control(H2C, run=1)
    await run_ring(tb, ring, descs)

    for k, (a, o, n) in enumerate(bufs):
        check_record(ring, k, n)
    assert bytes(tb.h2c.data) == data
    # every descriptor starts on a new beat; tlast ends exactly the descriptors with EOP
    ends, pos = [], 0
    for n in lengths:
        pos += n
        ends.append(pos)
    beat_ends, pos = set(), 0
    for b in tb.h2c.beats:
        pos += b
        beat_ends.add(pos)
    assert set(ends) <= beat_ends, "a descriptor did not start on a new beat"
    assert tb.h2c.lasts == [e for e, f in zip(ends, eops) if f]
    assert not tb.h2c.errors, tb.h2c.errors[:3]
    assert await tb.ch_rd(H2C, "HEAD") == count
    assert await tb.bytes_moved(H2C) == len(data)
    await Timer(2, "us")
    assert tb.msi[S.irq_vector["H2C_DONE"]] == 1
    chk.check()
    if max(lengths) > 2 * tb.mrrs:
        assert chk.max_read == tb.mrrs, f"largest read {chk.max_read}, MRRS {tb.mrrs}"
    if tb.completer.reorder:
        assert tb.completer.out_of_order > 10, "the completer did not reorder"
    tb.check_protocol()


# ------------------------------------------------------------------------------ pytest cases

def run(testcase, name=None, **env):
    hdl_runner.run(TOPLEVEL, MODULE, testcase, name or testcase,
                   env={f"MPRACE_{k.upper()}": v for k, v in env.items()})


def test_registers():
    run("registers")


@pytest.mark.parametrize("mps", [128, 256, 512])
def test_c2h_mps(mps):
    run("c2h_random", f"c2h_mps{mps}", mps=mps, seed=mps)


def test_c2h_packets_pauses():
    run("c2h_random", "c2h_packets_pauses", packets=1, pause=2, seed=7, ring=4, count=30)


@pytest.mark.parametrize("mrrs", [128, 256, 512, 1024, 2048])
def test_h2c_mrrs(mrrs):
    run("h2c_random", f"h2c_mrrs{mrrs}", mrrs=mrrs, seed=mrrs)


def test_h2c_split_rcb_pauses():
    run("h2c_random", "h2c_split_rcb_pauses", split=1, pause=2, seed=11, mps=128)


def test_h2c_split_rcb128():
    run("h2c_random", "h2c_split_rcb128", split=1, rcb128=1, mrrs=1024, seed=12)


def test_h2c_reordered():
    run("h2c_random", "h2c_reordered", reorder=1, pause=1, seed=13, mrrs=256)
