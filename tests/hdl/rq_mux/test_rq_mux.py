# SPDX-License-Identifier: GPL-2.0
"""The request path of the Xilinx top (mprace_dma_req_mux, then the RQ adapter mprace_pcie_us_rq)
with cocotbext-axi: three sources send random memory requests (a PCIe TLP header and payload, as
the engine's requesters do) at random times while the output stalls at random; each packet must
come out whole (no beats of another input inside it, tvalid high from first to last beat), with
its header (the 4-dword form, addresses below and above 4 GiB) turned into the RQ descriptor of
the same request (PG156) and the payload unchanged,
in order per input, and be reported sent. Inputs deliver each packet without gaps, as the engine's request sources do (the mux
passes gaps through: the core forbids them, so the sources must not make any). Input 0 is the
bulk input (bulk_g, the engine's C2H writes): no packet of it may start while a packet of
another input waits.

With packing (pack_g, 512 bits) a packet may start in lane 8 of the beat where the one before
ended: the RQ output is then taken apart by its sideband (PG213: is_sop / is_eop and their
pointers, the byte enables of each TLP starting in the beat) instead of by tlast, every TLP
must still come out whole and unchanged, and some must have started in lane 8 of a beat that
started another (two TLPs begun in one beat) or with no payload in lane 8 (a read request packed
behind another TLP)."""
import random
from pathlib import Path

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

import rtl_build
from pcie_env import PacketMonitor, env_int, pause_pattern, quiet_logs

PORTS = 3


@cocotb.test()
async def random_packets(dut):
    quiet_logs(dut)
    rng = random.Random(env_int("MPRACE_SEED", 1))
    busy = env_int("MPRACE_BUSY", 30) / 100
    cocotb.start_soon(Clock(dut.clk, 4, "ns").start())
    # the inputs are undriven until the models below exist: let them settle in reset first
    dut.rst.value = 1
    for p in range(PORTS):
        getattr(dut, f"s{p}_axis_tvalid").value = 0
    for _ in range(2):
        await RisingEdge(dut.clk)
    sources = [AxiStreamSource(AxiStreamBus.from_prefix(dut, f"s{p}_axis"), dut.clk, dut.rst)
               for p in range(PORTS)]
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_rq"), dut.clk, dut.rst)
    mon = PacketMonitor(dut, "m_axis_rq", dut.clk)
    if busy:
        sink.set_pause_generator(pause_pattern(rng, busy))
    sent = [0] * PORTS

    # input side: when each input's next packet began to wait, and bulk starts meanwhile
    waiting_since = [None] * PORTS
    in_packet = [False] * PORTS
    overtaken = []

    async def watch_grants():
        cycle = 0
        bulk_starts = []
        while True:
            await RisingEdge(dut.clk)
            cycle += 1
            for p in range(PORTS):
                valid = int(getattr(dut, f"s{p}_axis_tvalid").value)
                ready = int(getattr(dut, f"s{p}_axis_tready").value)
                if valid and not in_packet[p] and waiting_since[p] is None:
                    waiting_since[p] = cycle
                if valid and ready:
                    if not in_packet[p]:
                        if p == 0:
                            bulk_starts.append(cycle)
                        elif any(waiting_since[p] < c < cycle for c in bulk_starts):
                            overtaken.append((p, waiting_since[p], cycle))
                        waiting_since[p] = None
                    in_packet[p] = not int(getattr(dut, f"s{p}_axis_tlast").value)
    cocotb.start_soon(watch_grants())

    async def count_sent():
        while True:
            await RisingEdge(dut.clk)
            for p in range(PORTS):
                sent[p] += int(getattr(dut, f"s{p}_sent").value)
    cocotb.start_soon(count_sent())

    for _ in range(4):
        await RisingEdge(dut.clk)
    dut.rst.value = 0

    count = env_int("MPRACE_COUNT", 60)
    expected = [[] for _ in range(PORTS)]
    lanes = len(dut.m_axis_rq_tkeep)

    def core_user(be, n):
        """The sideband the core gets for a packet of n dwords whose TLP has byte enables `be`
        (last << 4 | first): at 256 bits the byte enables on every beat; at 512 UltraScale+'s
        layout (PG213) in the first and last beat."""
        if lanes == 8:
            return be, be
        first = (be & 0xF) | (be >> 4) << 8 | 1 << 20
        last = 1 << 26 | ((n - 1) % lanes) << 28
        if n <= lanes:
            return first | last, first | last
        return first, last

    def request(prng, p, k):
        """A memory request of input p (in its tag) as the engine's stream carries it, and the
        same request as the core must receive it."""
        payload = [prng.getrandbits(32) for _ in range(prng.randint(0, lanes * prng.choice([1, 1, 4]) - 4))]
        dwords = len(payload) or prng.choice([1, 2, 64, 512, 1024])
        addr = prng.getrandbits(prng.choice([30, 62])) << 2
        tag = p << 5 | k & 31
        be = 0xF | (0xF0 if dwords > 1 else 0)
        fmt = (2 if payload else 0) | 1                 # the core's 4-dword form, any address
        hdr = [fmt << 29 | dwords & 0x3FF, tag << 8 | be, addr >> 32, addr & 0xFFFFFFFF]
        desc = [addr & 0xFFFFFFFF, addr >> 32, dwords | (1 if payload else 0) << 11, tag]
        return hdr + payload, desc + payload, core_user(be, 4 + len(payload))

    async def feed(p):
        prng = random.Random(rng.getrandbits(32))
        for k in range(count):
            words, want, users = request(prng, p, k)
            expected[p].append((want, users))
            await sources[p].send(AxiStreamFrame(words, tuser=0))
            if busy and prng.random() < busy:
                await sources[p].wait()
                await Timer(4 * prng.randint(1, 20), "ns")
    for p in range(PORTS):
        cocotb.start_soon(feed(p))
    received = [[] for _ in range(PORTS)]
    packed = env_int("MPRACE_PACK", 0)
    if packed:
        tlps, starts = await straddled_tlps(dut, PORTS * count)
        for words, be in tlps:
            received[(words[3] & 0xFF) >> 5].append((words, be))
        expected = [[(w, (u[0] & 0xF | (u[0] >> 8 & 0xF) << 4)) for w, u in e] for e in expected]
        assert starts["two"] > 0 and starts["header_hi"] > 0, \
            f"nothing packed into the upper half: {starts}"
    else:
        for _ in range(PORTS * count):
            frame = await sink.recv()
            users = frame.tuser if isinstance(frame.tuser, list) else [frame.tuser]
            p = (frame.tdata[3] & 0xFF) >> 5            # the tag, in the RQ descriptor
            received[p].append((list(frame.tdata), (users[0], users[-1])))
    await Timer(100, "ns")
    for p in range(PORTS):
        bad = [k for k, (r, e) in enumerate(zip(received[p], expected[p])) if r != e]
        assert received[p] == expected[p], \
            (f"input {p}: packets changed, lost or reordered, first at {bad[:1]}: "
             f"{[(len(received[p][k][0]), received[p][k][1], expected[p][k][1]) for k in bad[:1]]}")
        assert sent[p] == count, f"input {p}: {sent[p]} sent pulses for {count} packets"
    assert not mon.errors, mon.errors[:3]
    assert not overtaken, f"bulk packets started while another input waited: {overtaken[:3]}"
    if not packed:
        assert mon.packets == PORTS * count


async def straddled_tlps(dut, n):
    """The first n TLPs on the 512-bit RQ interface, taken apart by the sideband (PG213):
    [(dwords, last_be << 4 | first_be)], and how often a beat began two TLPs ("two") or a TLP
    without payload began in lane 8 ("header_hi")."""
    tlps, cur, starts = [], None, dict(two=0, header_hi=0)
    while len(tlps) < n:
        await RisingEdge(dut.clk)
        if not (dut.m_axis_rq_tvalid.value == 1 and dut.m_axis_rq_tready.value == 1):
            continue
        data, keep = int(dut.m_axis_rq_tdata.value), int(dut.m_axis_rq_tkeep.value)
        user = int(dut.m_axis_rq_tuser.value)
        sops = [((user >> (22 + 2 * k)) & 3) * 4 for k in range(2) if user >> (20 + k) & 1]
        eops = [(user >> (28 + 4 * k)) & 0xF for k in range(2) if user >> (26 + k) & 1]
        bes = {lane: (user >> (4 * k) & 0xF) | (user >> (8 + 4 * k) & 0xF) << 4
               for k, lane in enumerate(sops)}
        if len(sops) == 2:
            starts["two"] += 1
        for lane in range(16):
            if lane in sops:
                assert cur is None, f"a TLP starts in lane {lane} before the last one ended"
                cur = ([], bes[lane])
                if lane == 8 and (data >> (32 * 10 + 11) & 1) == 0:   # descriptor: no payload
                    starts["header_hi"] += 1
            if cur is not None and keep >> lane & 1:
                cur[0].append(data >> (32 * lane) & 0xFFFFFFFF)
            if lane in eops:
                assert cur is not None, f"a TLP ends in lane {lane} without a start"
                tlps.append(cur)
                cur = None
    return tlps, starts


@pytest.mark.parametrize("width", [256, 512, "512p"], ids=lambda w: f"w{w}")
@pytest.mark.parametrize("busy", [0, 30, 70])
def test_rq_mux(busy, width):
    pack = width == "512p"
    bits = 512 if pack else width
    rtl_build.run("rq_mux_tb", "test_rq_mux", "random_packets", f"rq_mux_{busy}_w{width}",
                   parameters={"data_w_g": bits, "pack_g": "true" if pack else "false"},
                   env={"MPRACE_SEED": busy + 1, "MPRACE_BUSY": busy, "MPRACE_PACK": int(pack)},
                   extra_sources=[Path(__file__).parent / "rq_mux_tb.vhd"])
