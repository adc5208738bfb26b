"""mprace_dma_top against cocotbext-pcie's UltraScalePcieDevice (Gen3 x8, 256 bit) and RootComplex.

Each pytest case runs one cocotb test in a fresh simulation; the model settings (MPS, MRRS,
completion splitting, reordering, pauses, seed) come in through environment variables.
Data is compared byte for byte, errors by their code from spec/dma-engine.toml.
Set HDL_SOAK=1 for the long soak.
"""
import os
import struct

import cocotb
import pytest
from cocotb.triggers import Timer
from cocotb.utils import get_sim_time
from cocotbext.pcie.core.tlp import TlpType

import rtl_build
from pcie_env import (C2H, H2C, TB, Ring, S, env_int, pattern_bytes, pause_pattern)

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
    """Checks every request TLP the engine sends against MPS, MRRS and the 4 KiB rule; with
    watch(), also where and when it writes: every data write lands inside a buffer of a
    queued descriptor (not merely outside fixed guards), and a completion record arrives
    only after its data (C2H: every byte it counts was written before it; H2C: the sink had
    taken every byte the records so far count)."""

    def __init__(self, tb):
        self.tb = tb
        self.errors = []
        self.max_write = 0
        self.max_read = 0
        self.writes = 0
        self.reads = 0
        self.rings = []
        self.written = {}        # buffer address -> bytearray, 1 per byte written
        self.h2c_counted = 0     # bytes the H2C records so far report
        rc = tb.rc
        self._write = rc.handle_mem_write_tlp
        rc.register_rx_tlp_handler(TlpType.MEM_WRITE, self.on_write)
        rc.register_rx_tlp_handler(TlpType.MEM_WRITE_64, self.on_write)
        self._read = tb.completer.handle
        rc.register_rx_tlp_handler(TlpType.MEM_READ, self.on_read)
        rc.register_rx_tlp_handler(TlpType.MEM_READ_64, self.on_read)

    def watch(self, ring, bufs=()):
        """Check writes against ring's records and the C2H buffers bufs (addr, off, n)."""
        self.rings.append(ring)
        for a, o, n in bufs:
            self.written[a] = bytearray(n)

    def _check(self, kind, tlp, limit):
        n = tlp.length * 4
        if tlp.first_be != 0xF or (n > 4 and tlp.last_be != 0xF):
            self.errors.append(f"{kind} at {tlp.address:#x}: partial byte enables")
        if n > limit:
            self.errors.append(f"{kind} of {n} bytes at {tlp.address:#x} exceeds {limit}")
        if tlp.address // PAGE != (tlp.address + n - 1) // PAGE:
            self.errors.append(f"{kind} of {n} bytes at {tlp.address:#x} crosses 4 KiB")
        return n

    def _record(self, tlp):
        """The ring and slot of a record write, or None."""
        for ring in self.rings:
            rel = tlp.address - ring.addr - S.desc["RESULT_BYTES"]
            if 0 <= rel < ring.entries * DESC and rel % DESC == 0 and tlp.length == 2:
                return ring, rel // DESC
        return None

    def _data_write(self, tlp):
        n = tlp.length * 4
        # the root complex model places its MSI region at 2 GiB: an interrupt, not data
        if 0x8000_0000 <= tlp.address < 0x8000_0000 + self.tb.rc.msi_region.size:
            return
        for a, mask in self.written.items():
            if a <= tlp.address and tlp.address + n <= a + len(mask):
                mask[tlp.address - a:tlp.address - a + n] = b"\1" * n
                return
        self.errors.append(f"write of {n} bytes at {tlp.address:#x} outside every buffer")

    def _record_write(self, ring, slot, tlp):
        rb, st = struct.unpack("<II", bytes(tlp.get_data()))
        o = ring.off + slot * DESC
        addr, = struct.unpack_from("<Q", self.tb.mem.mem, o + S.desc["ADDR_LO"])
        if ring.ch == C2H:
            mask = self.written.get(addr)
            if mask is not None and mask[:rb] != b"\1" * rb:
                self.errors.append(f"C2H record at slot {slot} ({rb} bytes) came before "
                                   f"byte {mask.index(0)} of its data")
        else:
            self.h2c_counted += rb
            got = len(self.tb.h2c.data)
            if got < self.h2c_counted:
                self.errors.append(f"H2C record at slot {slot} came when the sink had "
                                   f"{got} of {self.h2c_counted} bytes")

    async def on_write(self, tlp):
        rec = self._record(tlp)
        if rec:
            self._record_write(*rec, tlp)
        else:
            if self.rings:
                self._data_write(tlp)
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
            full = tb.beat_bytes // 4
            tb.c2h.send(stream[pos:pos + p], last=True,
                        beat_bytes=4 * tb.rng.choice([full, full, full, 3, 1]))
            pos += p
    else:
        expect = [(n, 0) for n in lengths]
        stream = tb.rand_bytes(sum(lengths))
        # beats of 1 dword to a full beat exercise the dense packing of the source side
        full = tb.beat_bytes // 4
        pos = 0
        while pos < len(stream):
            b = 4 * tb.rng.choice([full, full, full, full, full // 2 + 1, 5, 2, 1])
            tb.c2h.send(stream[pos:pos + b], beat_bytes=b)
            pos += b
    bufs = alloc_buffers(tb, lengths)
    g = guards(tb, bufs)
    chk.watch(ring, bufs)
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


@cocotb.test()
async def c2h_packet_edges(dut):
    """Packet ends (tlast) exactly at descriptor ends, at TLP (MPS) boundaries inside a
    descriptor, after one dword, and several packets against one descriptor."""
    tb = make_tb(dut)
    await tb.init()
    mps = tb.mps
    ring = Ring(tb, C2H, 16)
    await ring.configure()
    # (descriptor length, offset of its buffer from an MPS boundary)
    descs = [(1024, 0), (2048, 0), (2048, 4), (64, 0), (1000, 8), (200, 0), (300, 12),
             (700, 0), (mps, 0), (2 * mps, 0)]
    packets = [1024,                 # ends with the descriptor
               mps * 2,              # ends at a TLP boundary inside the descriptor
               mps - 4,              # ends with the first TLP of an unaligned buffer
               4,                    # one dword
               100, 200,             # two packets: the first ends a descriptor early
               1000,                 # spans two descriptors, ends with the second
               mps, 2 * mps]         # exactly one and two full TLPs
    expect = c2h_expect([n for n, _ in descs], packets)
    stream = tb.rand_bytes(sum(packets))
    pos = 0
    for p in packets:
        tb.c2h.send(stream[pos:pos + p], last=True)
        pos += p
    bufs = []
    for n, off in descs:
        a, o = tb.alloc(n + PAGE, align=PAGE, offset=PAGE - mps + off if off else 0)
        bufs.append((a, o, n))
    await tb.ch_control(C2H, run=1)
    await run_ring(tb, ring, [(a, n, 0) for a, o, n in bufs])
    pos = 0
    for k, ((a, o, n), (nb, eop)) in enumerate(zip(bufs, expect)):
        check_record(ring, k, nb, eop=eop)
        assert bytes(tb.mem[o:o + nb]) == stream[pos:pos + nb], f"descriptor {k}: data"
        pos += nb
    assert pos == len(stream)
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
    chk.watch(ring)
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


# ------------------------------------------------------------------------------ more helpers

async def halt(tb, ch):
    """RUN = 0 and wait for IDLE (TEST_CONTROL may only change while both channels are IDLE)."""
    await tb.ch_control(ch, run=0)
    await tb.wait_state(ch, "IDLE")


def tlp_ends(addr, length, mps):
    """Byte counts at which the engine's write TLPs end for a buffer (MPS-aligned splits)."""
    ends, pos = [], 0
    while pos < length:
        pos = min(length, pos + mps - (addr + pos) % mps)
        ends.append(pos)
    return ends


async def wait_for(cond, timeout_us, what, step_ns=200):
    t_end = get_sim_time("ns") + timeout_us * 1000
    while not cond():
        if get_sim_time("ns") > t_end:
            raise AssertionError(f"timed out waiting for {what}")
        await Timer(step_ns, "ns")


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

    # legacy INTx while MSI is off: the line follows IRQ_STATUS and IRQ_ENABLE
    await tb.pdev.disable_msi()
    await tb.clocks(4)
    assert S.get(await tb.rd("CAPS"), "CAPS", "MSI_VECTORS") == 0
    assert int(dut.cfg_interrupt_int.value) & 1 == 1
    await tb.wr("IRQ_STATUS", 0x7)
    await tb.rd("IRQ_STATUS")          # the write has arrived
    assert int(dut.cfg_interrupt_int.value) & 1 == 0
    await one(hring)
    await tb.clocks(4)
    assert int(dut.cfg_interrupt_int.value) & 1 == 1
    await tb.wr("IRQ_ENABLE", 0)
    await tb.rd("IRQ_ENABLE")
    assert int(dut.cfg_interrupt_int.value) & 1 == 0
    await settle()                     # and no MSI while MSI is off
    tb.check_protocol()


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
    for k in range(env_int("HDL_RESET_ITERS", 48)):
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


# ------------------------------------------------------------------------------ 64-bit addresses

@cocotb.test()
async def addr64(dut):
    """Ring and buffers above 4 GiB, buffers crossing the 4 GiB boundary (4-dword TLPs)."""
    tb = make_tb(dut)
    await tb.init()
    base = 0x1_FFFF_0000
    region = tb.high_region(base, 0x20000)
    cring = Ring(tb, C2H, 8, base=(0x2_0000_8000, None))
    hring = Ring(tb, H2C, 8, base=(0x2_0000_9000, None))

    def put(ring, n, addr, length):
        o = ring.addr - base + (n % ring.entries) * DESC
        region.mem[o:o + DESC] = struct.pack("<QIIIIQ", addr, length, 0, 0, 0, 0)

    def result(ring, n):
        o = ring.addr - base + (n % ring.entries) * DESC
        return struct.unpack_from("<II", region.mem, o + S.desc["RESULT_BYTES"])

    for ring in (cring, hring):
        await ring.configure()
    c_addr, h_addr, n = 0x1_FFFF_D004, 0x1_FFFF_F008, 12288   # both cross 4 GiB
    data = tb.rand_bytes(n)
    region.mem[h_addr - base:h_addr - base + n] = data
    tb.c2h.send(data)
    tb.h2c.start()
    put(cring, 0, c_addr, n)
    put(hring, 0, h_addr, n)
    await tb.ch_wr(C2H, "TAIL", 1)
    await tb.ch_wr(H2C, "TAIL", 1)
    await tb.ch_control(C2H, run=1)
    await tb.ch_control(H2C, run=1)
    await wait_for(lambda: result(cring, 0)[1] and result(hring, 0)[1], 200, "records")
    assert result(cring, 0) == (n, 1) and result(hring, 0) == (n, 1)
    assert bytes(region.mem[c_addr - base:c_addr - base + n]) == data
    assert bytes(tb.h2c.data) == data
    tb.check_protocol()


# ------------------------------------------------------------------------------ throughput

def link_limits(tb, mps, mrrs, addr64=False):
    """The TLP-limited maximum of the modelled link (Gen3 x8 at 256 bits, Gen3 x16 or Gen4 x8
    at 512) and of the interface for payloads of `mps` bytes, in GB/s (10**9 bytes/s)."""
    from cocotbext.pcie.core.port import PCIE_GEN_RATE
    raw = PCIE_GEN_RATE[tb.gen] * tb.lanes / 8            # bytes/s on the wire
    hdr = 16 if addr64 else 12                            # memory write / completion header
    wire = mps + hdr + 8                                  # + sequence number, LCRC, framing
    link = raw * mps / wire / 1e9
    # one beat per 4 ns: writes have a 4-dword descriptor on RQ, completions a 3-dword one on
    # RC; with straddling (512 bits) a write or a completion may start in the upper half of a
    # beat, so each takes whole half beats, else whole beats
    unit = tb.beat_bytes // 2 if tb.straddle else tb.beat_bytes
    beats_wr = -(-(16 + mps) // unit) * unit / tb.beat_bytes
    beats_cpl = -(-(12 + mps) // unit) * unit / tb.beat_bytes
    # both directions at once: the writes share RQ with one read request (one beat) per MRRS
    both = 1 / (beats_wr / mps + 1 / mrrs) / 4
    return dict(link=link, rq=mps / (beats_wr * 4.0), rc=mps / (beats_cpl * 4.0), rq_both=both,
                beats_wr=beats_wr)


def rq_busy(lim, mps, mrrs, c2h_bytes, h2c_bytes, ns):
    """The share of RQ's clocks in ns that C2H's writes and H2C's read requests (one beat per
    MRRS) of these sizes take: with both directions streaming, RQ is what they share."""
    return (c2h_bytes * lim["beats_wr"] / mps + h2c_bytes / mrrs) * 4 / ns


@cocotb.test()
async def throughput(dut):
    """Throughput in simulated time with the pattern generator (C2H) and the checker (H2C):
    each direction alone, then both at once. The time runs from the RUN write to the last
    record in host memory, so it includes fetching the first descriptors."""
    tb = make_tb(dut, monitor=False)
    await tb.init()
    total = env_int("MPRACE_BYTES", 1 << 20)
    dlen = min(total, 256 << 10)
    lim = link_limits(tb, tb.mps, tb.mrrs)
    bound = {(C2H,): min(lim["link"], lim["rq"]), (H2C,): min(lim["link"], lim["rc"])}
    bound[(C2H, H2C)] = min(bound[(C2H,)], lim["rq_both"])
    await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_GEN, H2C_SINK=1))
    rings = {C2H: Ring(tb, C2H, 16), H2C: Ring(tb, H2C, 16)}
    for ring in rings.values():
        await ring.configure()
    src, src_off = tb.alloc(total)
    tb.mem[src_off:src_off + total] = pattern_bytes(0, total // 4)
    rows = []

    async def one(ch, t0):
        ring = rings[ch]
        await ring.wait_done(ring.tail - 1, timeout_us=5000, poll_ns=20)
        return get_sim_time("ns") - t0

    for mode in ((C2H,), (H2C,), (C2H, H2C)):
        dst, dst_off = tb.alloc(total)
        await tb.wr("PATGEN_SEED", 0)
        await tb.wr("CHECK_SEED", 0)
        if C2H in mode:
            await rings[C2H].submit([(dst + k, dlen, 0) for k in range(0, total, dlen)])
        if H2C in mode:
            await rings[H2C].submit([(src + k, dlen, 0) for k in range(0, total, dlen)])
        t0 = get_sim_time("ns")
        for ch in mode:
            await tb.ch_control(ch, run=1)
        tasks = {ch: cocotb.start_soon(one(ch, t0)) for ch in mode}
        for ch in mode:
            t = await tasks[ch]
            limit = bound[mode] if ch == C2H else bound[(H2C,)]
            rows.append(("+".join(mode), ch, total, t, total / t, limit))
        if C2H in mode:
            assert bytes(tb.mem[dst_off:dst_off + total]) == pattern_bytes(0, total // 4)
        if H2C in mode:
            await tb.clocks(4)
            assert (await tb.rd("CHECK_WORDS"), await tb.rd("CHECK_ERRORS")) == (total // 4, 0)
        for ch in mode:
            await halt(tb, ch)
    both = {ch: (nb, t) for run_, ch, nb, t, g, limit in rows if "+" in run_}
    busy = 100 * rq_busy(lim, tb.mps, tb.mrrs, both[C2H][0], both[H2C][0],
                         max(t for nb, t in both.values()))
    out = (rtl_build.build_root() /
           f"throughput-{tb.variant}-mps{tb.mps}-mrrs{tb.mrrs}-gen{tb.gen}.csv")
    with open(out, "w") as f:
        f.write("run,direction,bytes,ns,GBps,tlp_max_GBps,link_tlp_max_GBps,percent,"
                "rq_busy_percent\n")
        for run_, ch, nb, t, g, limit in rows:
            f.write(f"{run_},{ch},{nb},{t:.0f},{g:.3f},{limit:.3f},{lim['link']:.3f},"
                    f"{100 * g / limit:.1f},{f'{busy:.1f}' if '+' in run_ else ''}\n")
    for run_, ch, nb, t, g, limit in rows:
        msg = (f"THROUGHPUT {run_:7s} {ch} {tb.width} bit Gen{tb.gen} x{tb.lanes} MPS {tb.mps} "
               f"MRRS {tb.mrrs}: {nb} bytes in {t:.0f} ns = {g:.3f} GB/s; "
               f"TLP-limited max {limit:.3f} GB/s (link {lim['link']:.3f}, {tb.width}-bit "
               f"interface {lim['rq' if ch == C2H else 'rc']:.3f}) = {100 * g / limit:.1f} %")
        tb.log.info(msg)
    tb.log.info(f"THROUGHPUT both at once: RQ busy {busy:.1f} % of its clocks (C2H's writes "
                f"and H2C's read requests)")
    tb.log.info("figures written to %s", out)


# ------------------------------------------------------------------------------ largest descriptor

@cocotb.test()
async def max_desc(dut):
    """One descriptor of the largest length (16 MiB) per direction, moved in full: the C2H
    generator's words compared in host memory, the H2C data counted by the checker."""
    tb = make_tb(dut, monitor=False)
    await tb.init(mem_size=40 << 20)
    n = S.engine["max_desc_len"]
    await tb.wr("TEST_CONTROL", TEST_CONTROL(C2H_SOURCE=SRC_GEN, H2C_SINK=1))
    await tb.wr("PATGEN_SEED", 0x1234)
    await tb.wr("CHECK_SEED", 0x5678)
    cring, hring = Ring(tb, C2H, 2), Ring(tb, H2C, 2)
    await cring.configure()
    await hring.configure()
    ca, co = tb.alloc(n)
    ha, ho = tb.alloc(n)
    tb.mem[ho:ho + n] = pattern_bytes(0x5678, n // 4)
    await cring.submit([(ca, n, 0)])
    await hring.submit([(ha, n, 0)])
    await tb.ch_control(C2H, run=1)
    await tb.ch_control(H2C, run=1)
    await cring.wait_done(0, timeout_us=20000, poll_ns=20000)
    await hring.wait_done(0, timeout_us=20000, poll_ns=20000)
    check_record(cring, 0, n)
    check_record(hring, 0, n)
    assert bytes(tb.mem[co:co + n]) == pattern_bytes(0x1234, n // 4), "C2H data"
    await tb.clocks(8)
    assert (await tb.rd("CHECK_WORDS"), await tb.rd("CHECK_ERRORS")) == (n // 4, 0)
    assert await tb.bytes_moved(C2H) == n and await tb.bytes_moved(H2C) == n
    tb.check_protocol()


# ------------------------------------------------------------------------------ soak

@cocotb.test()
async def soak(dut):
    """Both channels at once with user streams, packet ends, random completion splitting and
    reordering, and pauses on every stream."""
    tb = make_tb(dut)
    await tb.init()
    apply_pauses(tb, 1)
    tb.completer.reorder = True
    tb.completer.split = True
    chk = TlpChecker(tb)
    count = env_int("MPRACE_COUNT", 30)
    cring, hring = Ring(tb, C2H, 16), Ring(tb, H2C, 8)
    await cring.configure()
    await hring.configure()
    tb.h2c.start()
    clens = [rand_len(tb.rng) for _ in range(count)]
    hlens = [rand_len(tb.rng) for _ in range(count)]
    plens, total = [], sum(clens)
    while sum(plens) < total:
        plens.append(4 * tb.rng.randint(1, 4000))
    expect = c2h_expect(clens, plens)
    stream = tb.rand_bytes(sum(plens))
    pos = 0
    for p in plens:
        tb.c2h.send(stream[pos:pos + p], last=True)
        pos += p
    cbufs, hbufs = alloc_buffers(tb, clens), alloc_buffers(tb, hlens)
    cg, hg = guards(tb, cbufs), guards(tb, hbufs)
    chk.watch(cring, cbufs)
    chk.watch(hring)
    hdata = b""
    for a, o, n in hbufs:
        d = tb.rand_bytes(n)
        tb.mem[o:o + n] = d
        hdata += d
    await tb.ch_control(C2H, run=1)
    await tb.ch_control(H2C, run=1)
    ctask = cocotb.start_soon(run_ring(tb, cring, [(a, n, 0) for a, o, n in cbufs], 20000))
    await run_ring(tb, hring, [(a, n, S.ctrl(eop=1)) for a, o, n in hbufs], 20000)
    await ctask
    pos = 0
    for k, ((a, o, n), (nb, eop)) in enumerate(zip(cbufs, expect)):
        check_record(cring, k, nb, eop=eop)
        assert bytes(tb.mem[o:o + nb]) == stream[pos:pos + nb], f"C2H descriptor {k}"
        pos += nb
    for k, (a, o, n) in enumerate(hbufs):
        check_record(hring, k, n)
    assert bytes(tb.h2c.data) == hdata
    assert guards(tb, cbufs) == cg and guards(tb, hbufs) == hg
    assert await tb.bytes_moved(C2H) == pos and await tb.bytes_moved(H2C) == len(hdata)
    chk.check()
    tb.check_protocol()
    tb.log.info("soak: %d + %d descriptors, %d + %d bytes, %d completions (%d out of order)",
                count, count, pos, len(hdata), tb.completer.completions,
                tb.completer.out_of_order)


# ------------------------------------------------------------------------------ pytest cases

# Every case runs at both widths: 256 bits (UltraScale, Gen3 x8) and 512 bits (UltraScale+,
# Gen3 x16, RQ and RC straddling); "512n" (512 bits with rq_straddle_g and rc_straddle_g off,
# the model without straddling) runs the cases in NO_STRADDLE.
WIDTHS = ("256", "512", "512n")
NO_STRADDLE = {"registers", "c2h_mps512", "c2h_packets_pauses", "h2c_reordered", "abort_reset",
               "throughput_mps256_mrrs512_gen3", "soak"}
pytestmark = pytest.mark.parametrize("width", WIDTHS, ids=lambda w: f"w{w}")


def run(testcase, name=None, width="256", **env):
    name = name or testcase
    params = {"data_w_g": int(width.rstrip("n"))}
    if width.endswith("n"):
        if name not in NO_STRADDLE:
            pytest.skip("without straddling: the cases in NO_STRADDLE")
        params["rq_straddle_g"] = "false"
        params["rc_straddle_g"] = "false"
        env["straddle"] = 0
    rtl_build.run(TOPLEVEL, MODULE, testcase, f"{name}_w{width}", parameters=params,
                   env={f"MPRACE_{k.upper()}": v for k, v in env.items()})


def test_registers(width):
    run("registers", width=width)


@pytest.mark.parametrize("mps", [128, 256, 512])
def test_c2h_mps(mps, width):
    run("c2h_random", f"c2h_mps{mps}", mps=mps, seed=mps, width=width)


@pytest.mark.parametrize("mps", [128, 256])
def test_c2h_packet_edges(mps, width):
    run("c2h_packet_edges", f"c2h_packet_edges{mps}", mps=mps, width=width)


def test_c2h_packets_pauses(width):
    run("c2h_random", "c2h_packets_pauses", packets=1, pause=2, seed=7, ring=4, count=30, width=width)


@pytest.mark.parametrize("mrrs", [128, 256, 512, 1024, 2048])
def test_h2c_mrrs(mrrs, width):
    run("h2c_random", f"h2c_mrrs{mrrs}", mrrs=mrrs, seed=mrrs, width=width)


def test_h2c_split_rcb_pauses(width):
    run("h2c_random", "h2c_split_rcb_pauses", split=1, pause=2, seed=11, mps=128, width=width)


def test_h2c_split_rcb128(width):
    run("h2c_random", "h2c_split_rcb128", split=1, rcb128=1, mrrs=1024, seed=12, width=width)


def test_h2c_reordered(width):
    run("h2c_random", "h2c_reordered", reorder=1, pause=1, seed=13, mrrs=256, width=width)


def test_h2c_block_unstraddled(width):
    """rc_straddle_g on with the block's RC straddle option off: one completion per beat,
    found by the same sideband."""
    if width != "512":
        pytest.skip("the 512-bit engine with RC straddling")
    run("h2c_random", "h2c_block_unstraddled", reorder=1, pause=1, seed=14, mrrs=512,
        block_rc_straddle=0, width=width)


def test_test_logic(width):
    run("test_logic", seed=21, width=width)


@pytest.mark.parametrize("msi", [32, 2, 1])
def test_interrupts(msi, width):
    run("interrupts", f"interrupts_msi{msi}", msi=msi, width=width)


def test_abort_reset(width):
    run("abort_reset", seed=31, width=width)


def test_reset_during_transfers(width):
    run("reset_during_transfers", seed=83, width=width)


def test_timeouts(width):
    run("timeouts", seed=41, width=width)


@pytest.mark.parametrize("channel", [C2H, H2C])
def test_desc_errors(channel, width):
    run("desc_errors", f"desc_errors_{channel}", channel=channel, width=width)


def test_ring_control(width):
    run("ring_control", seed=51, width=width)


@pytest.mark.parametrize("reorder", [0, 1])
def test_h2c_read_errors(reorder, width):
    run("h2c_read_errors", f"h2c_read_errors_r{reorder}", reorder=reorder, mrrs=256,
        seed=71 + reorder, width=width)


def test_c2h_source_switch(width):
    run("c2h_source_switch", seed=81, width=width)


def test_c2h_test_control_same_source(width):
    run("c2h_test_control_same_source", seed=82, width=width)


def test_status_after_control(width):
    run("status_after_control", seed=91, width=width)


def test_addr64(width):
    run("addr64", seed=61, width=width)


# link settings of the figures: (MPS, MRRS, PCIe generation); make check runs the first
THROUGHPUT_SETTINGS = [(256, 512, 3), (256, 1024, 3), (512, 512, 3), (512, 1024, 3),
                       (512, 1024, 4)]


@pytest.mark.parametrize("mps,mrrs,gen", THROUGHPUT_SETTINGS,
                         ids=[f"mps{m}_mrrs{r}_gen{g}" for m, r, g in THROUGHPUT_SETTINGS])
def test_throughput(mps, mrrs, gen, width):
    """Prints the figures (and writes throughput-w<width>-mps<M>-mrrs<R>-gen<G>.csv in the build
    directory); no timing assertion. MPRACE_BENCH_BYTES sets the size of each transfer.
    Settings beyond the first with HDL_FIGURES=1; generation 4 (Gen4 x8) only at 512 bits."""
    if (mps, mrrs, gen) != THROUGHPUT_SETTINGS[0] and not os.environ.get("HDL_FIGURES"):
        pytest.skip("more link settings with HDL_FIGURES=1")
    if gen == 4 and width == "256":
        pytest.skip("Gen4 x8 is an UltraScale+ (512-bit) setting")
    size = os.environ.get("MPRACE_BENCH_BYTES", str((2 << 20) if os.environ.get("HDL_SOAK") else (512 << 10)))
    name = f"throughput_mps{mps}_mrrs{mrrs}_gen{gen}"
    run("throughput", name, mps=mps, mrrs=mrrs, gen=gen, bytes=size, width=width)
    print((rtl_build.build_root() / f"throughput-w{width}-mps{mps}-mrrs{mrrs}-gen{gen}.csv").read_text())


def test_max_desc(width):
    """One 16 MiB descriptor per direction (about two minutes of wall time): HDL_SOAK=1."""
    if not os.environ.get("HDL_SOAK"):
        pytest.skip("16 MiB per direction takes minutes: set HDL_SOAK=1")
    run("max_desc", seed=111, width=width)


def test_soak(width):
    if os.environ.get("HDL_SOAK"):
        for seed in (101, 102, 103):
            run("soak", f"soak_long_{seed}", seed=seed, count=300, width=width)
    else:
        run("soak", seed=100, count=24, width=width)
