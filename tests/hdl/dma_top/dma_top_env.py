# SPDX-License-Identifier: GPL-2.0
"""What the tests of mprace_dma_top share: the test bench with the pytest case's model settings,
a checker of every request TLP, ring and buffer helpers, and run(), which runs one cocotb test
of a module in a fresh simulation at one of the widths.

The tests are split by concern: test_dma_top_data.py (data byte for byte, 64-bit addresses,
throughput, the largest descriptor, the soak), test_dma_top_control.py (registers, test logic,
interrupts, ring control, TEST_CONTROL, status after control) and test_dma_top_errors.py
(abort and reset, timeouts, descriptor and data read errors). Each pytest case runs one cocotb
test in a fresh simulation; the model settings (MPS, MRRS, completion splitting, reordering,
pauses, seed) come in through environment variables. Data is compared byte for byte, errors
by their code from spec/dma-engine.toml. Set HDL_SOAK=1 for the long soak, HDL_INTEL_ALL=1 for
every case on the Intel tops.
"""
import os
import struct

import pytest
from cocotb.triggers import Timer
from cocotb.utils import get_sim_time
from cocotbext.pcie.core.tlp import TlpType

import rtl_build
from pcie_env import C2H, TB, S, env_int, pause_pattern

TOPLEVEL = "mprace_dma_top"
TOPLEVEL_INTEL = {"p": "mprace_dma_top_ptile", "h": "mprace_dma_top_htile", "l": "mprace_dma_top_htile"}
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
    """Pause patterns on the block's streams (and the user streams) for level >= 1."""
    if not level:
        return
    rng = tb.rng
    busy = 0.2 if level == 1 else 0.5
    tb.pause_block(rng, busy)
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


# ------------------------------------------------------------------------------ running a case

# Every case runs at both widths: 256 bits (UltraScale, Gen3 x8) and 512 bits (UltraScale+,
# Gen3 x16, RQ and RC straddling); "512n" (512 bits with rq_straddle_g and rc_straddle_g off,
# the model without straddling) runs the cases in NO_STRADDLE. "p256" and "p512" are the Intel
# P-tile top (mprace_dma_top_ptile, Gen3 x8 / x16) against cocotbext-pcie's P-tile model,
# "h256" and "h512" the H-tile/L-tile top (mprace_dma_top_htile, Gen3 x8 / x16) against its
# Stratix 10 H-tile model: the cases in INTEL_CHECK, all of INTEL with HDL_INTEL_ALL=1
# (timeouts needs the IPs' completion timeout interfaces, not attached yet). "l256" is that top
# with l_tile_g against the L-tile model (its configuration output differs): LTILE_CHECK, or
# all of INTEL with HDL_INTEL_ALL=1.
WIDTHS = ("256", "512", "512n", "p256", "p512", "h256", "h512", "l256")
NO_STRADDLE = {"registers", "c2h_mps512", "c2h_packets_pauses", "h2c_reordered", "abort_reset",
               "throughput_mps256_mrrs512_gen3", "soak"}
INTEL = {"registers", "test_logic", "interrupts_msi32", "interrupts_msi2", "interrupts_msi1",
         "ring_control", "c2h_source_switch", "c2h_test_control_same_source",
         "status_after_control", "c2h_mps128", "c2h_mps256", "c2h_mps512", "c2h_packet_edges128",
         "c2h_packet_edges256", "c2h_packets_pauses", "h2c_mrrs128", "h2c_mrrs256", "h2c_mrrs512",
         "h2c_mrrs1024", "h2c_mrrs2048", "h2c_split_rcb_pauses", "h2c_split_rcb128",
         "h2c_reordered", "addr64", "abort_reset", "reset_during_transfers",
         "desc_errors_C2H", "desc_errors_H2C", "h2c_read_errors_r0", "h2c_read_errors_r1",
         "throughput_mps256_mrrs512_gen3", "tx_credits"}
# what `make check` runs of them (CI time): registers, MSI, data both ways with pauses and
# reordered completions, abort, failed reads, the P-tile's transmit credits
INTEL_CHECK = {"registers", "interrupts_msi32", "c2h_packets_pauses", "h2c_reordered",
               "abort_reset", "h2c_read_errors_r1", "tx_credits"}
LTILE_CHECK = {"registers"}
pytestmark = pytest.mark.parametrize("width", WIDTHS, ids=lambda w: f"w{w}")


def run(module, testcase, name=None, width="256", **env):
    """Runs cocotb test `testcase` of `module` at `width` (a WIDTHS entry), the model
    settings `env` passed as MPRACE_<NAME> variables."""
    name = name or testcase
    toplevel = TOPLEVEL
    params = {}
    if width[0] in TOPLEVEL_INTEL:
        check = LTILE_CHECK if width[0] == "l" else INTEL_CHECK
        if not (name in check or os.environ.get("HDL_INTEL_ALL") and
                (name in INTEL or name.startswith("throughput_"))):
            pytest.skip("Intel tiles: the cases in INTEL_CHECK / LTILE_CHECK (HDL_INTEL_ALL=1: INTEL)")
        toplevel = TOPLEVEL_INTEL[width[0]]
        width_bits = int(width[1:])
        if width[0] == "l":
            params["l_tile_g"] = "true"
            env["ltile"] = 1
    else:
        width_bits = int(width.rstrip("n"))
    params["data_w_g"] = width_bits
    params.update(env.pop("generics", {}))     # generics of the top (the figures only)
    if "clk_mhz" in env:                  # the user clock the model makes and the top's generic
        params["clk_mhz_g"] = env["clk_mhz"]
    if width.endswith("n"):
        if name not in NO_STRADDLE:
            pytest.skip("without straddling: the cases in NO_STRADDLE")
        params["rq_straddle_g"] = "false"
        params["rc_straddle_g"] = "false"
        env["straddle"] = 0
    rtl_build.run(toplevel, module, testcase, f"{name}_w{width}", parameters=params,
                   env={f"MPRACE_{k.upper()}": v for k, v in env.items()})
