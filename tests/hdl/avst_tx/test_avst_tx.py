# SPDX-License-Identifier: GPL-2.0
"""mprace_pcie_avst_tx (the request stream on Intel's Avalon-ST transmit interface) against
cocotbext-pcie's P-tile transmit sink (hdr_bus_g true) or its Stratix 10 H-tile/L-tile one
(hdr_bus_g false: the header in the data stream), with the IPs' ready latency of 3 clocks: a cocotbext-axi
source sends seeded random memory requests as the engine's requesters do (a TLP header in a
4-dword slot, then the payload: reads without payload, writes of 1 to 200 dwords, addresses
below and above 4 GiB) at random times while the sink drops tx_st_ready at random. Each TLP must reach
the sink whole, in order, with its header (on the header bus, or as the first 3 or 4 dwords of
the data) as sent, in the 3-dword form below
4 GiB and with the function's requester ID (cocotbext-pcie reads the same address, length and
tag from it) and its payload dword for dword; the sink itself fails a
beat driven outside the ready latency or a frame that ends early or late. At 256 bits (one
segment) and 512 bits (two); at 512 bits the source packs TLPs as the engine's write engine
does with straddle_g (a TLP whose last beat uses at most 8 lanes is followed, at random, by the
next starting in lane 8, the side bits saying so), and the test checks it did. Both tiles at
512 bits must start those TLPs in the second segment, less the ones the interface's rule moves
(segment1_starts); no beat may start a TLP in segment 1 without an end of packet in segment 0."""
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer, with_timeout
from cocotbext.pcie.core.tlp import TlpType
from cocotbext.pcie.intel.ptile.interface import PTilePcieSink, PTileTxBus
from cocotbext.pcie.intel.s10.interface import S10PcieSink, S10TxBus

import rtl_build
from pcie_env import env_int, pause_pattern, quiet_logs

READY_LATENCY = 3   # tx_st_ready's latency on both tiles (cocotbext-pcie's models use the same)
SOP_HI, EOP_MID, EOP_PTR = 1 << 0, 1 << 1, 2   # mprace_dma_pkg REQ_SOP_HI_c, REQ_EOP_MID_c, REQ_EOP_PTR_c


def packed_beats(tlps, lanes, rng):
    """The request stream's beats (data, keep, side, last) for TLPs given as dword lists: at 16
    lanes a TLP whose last beat ends at or before lane 8 is followed, at random, by the next
    one in lane 8 of the same beat (one packet, tlast only at its end); else each TLP is a
    packet of its own. Returns the beats and the lane each TLP starts in (0 or 8)."""
    beats, starts = [], []
    for words in tlps:
        prev = beats[-1] if beats else None
        if lanes == 16 and prev and not prev["last"] and len(prev["w"]) <= 8 and rng.random() < 0.7:
            pos = len(prev["w"])
            prev["side"] = SOP_HI | EOP_MID | (pos - 1) << EOP_PTR
            prev["w"] += [None] * (8 - pos) + words[:8]
            rest = words[8:]
            starts.append(8)
        else:
            if prev:
                prev["last"] = True                  # the packet ends with the TLP before
            rest = words
            starts.append(0)
        while rest:
            beats.append({"w": rest[:lanes], "side": 0, "last": False})
            rest = rest[lanes:]
    beats[-1]["last"] = True
    out = []
    for b in beats:
        data = sum((w or 0) << 32 * k for k, w in enumerate(b["w"]))
        keep = sum(1 << k for k, w in enumerate(b["w"]) if w is not None)
        out.append((data, keep, b["side"], int(b["last"])))
    return out, starts


def segment1_starts(tlps, starts, shifts):
    """How many TLPs the 512-bit adapter starts in segment 1: each keeps the lane it came in,
    its data closed up behind its header by its shift (the H-tile: 1 after a 3-dword header,
    else 0; the P-tile: 4, the whole header slot going to the header bus), except that a TLP
    in lane 8 whose predecessor, going on from an earlier beat, has no dword left for that
    output beat (its last lane, less its offset and shift, falls before 0) moves eight lanes
    down, to segment 0 (the interface starts a TLP in segment 1 only beside an end of packet
    in segment 0); a moved TLP's successors in lane 8 then move too."""
    count, prev_end, prev_off, prev_sh, prev_new = 0, 0, 0, 0, False
    for words, start, sh in zip(tlps, starts, shifts):
        off = 0
        if start == 8:
            if not prev_new and prev_end - prev_off - prev_sh < 0:
                off = 8
            else:
                count += 1
        prev_end, prev_off, prev_sh = (start + len(words) - 1) % 16, off, sh
        prev_new = start + len(words) <= 8      # it starts and ends in the lower half of a beat
    return count


def request(rng):
    """A random memory request as the engine's stream carries it (dwords, the 4-dword header
    form) and what the sink must see: the 128-bit header (dword 0 in bits 127:96; the 3-dword
    form below 4 GiB) and the payload."""
    write = rng.random() < 0.7
    payload = [rng.getrandbits(32) for _ in range(rng.choice([1, 2, 3, 4, 5, 8, 12, 13, 16, 17,
                                                              rng.randint(1, 200)]))] if write else []
    dwords = len(payload) or rng.choice([1, 2, 128, 1024])
    addr = rng.getrandbits(rng.choice([30, 62])) << 2
    four = addr >> 32 != 0
    tag = rng.getrandbits(8)
    be = 0xF | (0xF0 if dwords > 1 else 0)
    dw0 = (2 if write else 0) << 29 | dwords & 0x3FF
    hdr = [dw0 | 1 << 29, tag << 8 | be, addr >> 32, addr & 0xFFFFFFFF]
    on_wire = [dw0 | four << 29, hdr[1]] + ([addr >> 32, addr & 0xFFFFFFFF] if four else [addr & 0xFFFFFFFF, 0])
    wire = on_wire[0] << 96 | on_wire[1] << 64 | on_wire[2] << 32 | on_wire[3]
    return hdr + payload, dict(hdr=wire, data=payload, addr=addr, dwords=dwords, tag=tag, write=write,
                               hdr_dwords=on_wire[:4 if four else 3])


@cocotb.test()
async def requests(dut):
    quiet_logs(dut)
    rng = random.Random(env_int("MPRACE_SEED", 1))
    busy = env_int("MPRACE_BUSY", 30) / 100
    count = env_int("MPRACE_COUNT", 200)
    cocotb.start_soon(Clock(dut.clk, 4, "ns").start())
    dut.rst.value = 1
    dut.s_tvalid.value = 0
    dut.s_side.value = 0
    req_id = rng.getrandbits(16)
    dut.req_id.value = req_id
    for _ in range(4):
        await RisingEdge(dut.clk)
    hdr_bus = env_int("MPRACE_HDR_BUS", 1)         # the generic hdr_bus_g
    sink_type, bus_type = (PTilePcieSink, PTileTxBus) if hdr_bus else (S10PcieSink, S10TxBus)
    sink = sink_type(bus_type.from_prefix(dut, "tx_st"), dut.clk, dut.rst, ready_latency=READY_LATENCY)
    src_pause = pause_pattern(random.Random(rng.getrandbits(32)), busy / 2) if busy else None
    if busy:
        sink.set_pause_generator(pause_pattern(rng, busy))
    for _ in range(4):
        await RisingEdge(dut.clk)
    dut.rst.value = 0

    expected, tlps = [], []
    frng = random.Random(rng.getrandbits(32))
    for _ in range(count):
        words, want = request(frng)
        expected.append(want)
        tlps.append(words)
    lanes = len(dut.s_tkeep)
    beats, lane_of = packed_beats(tlps, lanes, frng)
    straddled = lane_of.count(8)
    assert lanes == 8 or straddled > count // 10, f"only {straddled} TLPs start in lane 8"

    async def feed():
        for data, keep, side, last in beats:
            while src_pause is not None and next(src_pause):
                dut.s_tvalid.value = 0
                await RisingEdge(dut.clk)
            dut.s_tdata.value = data
            dut.s_tkeep.value = keep
            dut.s_side.value = side
            dut.s_tlast.value = last
            dut.s_tvalid.value = 1
            await RisingEdge(dut.clk)
            while not int(dut.s_tready.value):
                await RisingEdge(dut.clk)
        dut.s_tvalid.value = 0
    cocotb.start_soon(feed())

    # where TLPs start on the transmit interface: at 512 bits each TLP keeps the segment it has
    # on the input where the interface allows. Every beat uses segment 0, and a TLP starts in
    # segment 1 only beside an end of packet in segment 0 (Intel's 512-bit Avalon-ST rule).
    starts = [0, 0]

    async def watch():
        while True:
            await RisingEdge(dut.clk)
            valid, sop, eop = (int(dut.tx_st_valid.value), int(dut.tx_st_sop.value),
                               int(dut.tx_st_eop.value))
            if valid:
                assert valid & 1, f"a beat without segment 0 (valid {valid:#b})"
                assert not (sop & valid & 2) or eop & valid & 1, \
                    f"a TLP starts in segment 1 without an end in segment 0 (sop {sop:#b}, eop {eop:#b})"
            for seg in range(len(dut.tx_st_sop)):
                if valid >> seg & sop >> seg & 1:
                    starts[seg] += 1
    cocotb.start_soon(watch())

    for k in range(count):
        frame = await with_timeout(sink.recv(), 200, "us")
        want = expected[k]
        if hdr_bus:
            want_hdr = want["hdr"] | req_id << 80     # the requester ID: dword 1 bits 31:16
            assert frame.hdr == want_hdr, f"TLP {k}: header {frame.hdr:#034x}, want {want_hdr:#034x}"
            payload = list(frame.data)
        else:
            want_hdr = list(want["hdr_dwords"])
            want_hdr[1] |= req_id << 16
            got_hdr, payload = list(frame.data[:len(want_hdr)]), list(frame.data[len(want_hdr):])
            assert got_hdr == want_hdr, f"TLP {k}: header {got_hdr}, want {want_hdr}"
        assert payload == want["data"], \
            f"TLP {k}: {len(payload)} payload dwords differ from the {len(want['data'])} sent"
        tlp = frame.to_tlp()
        kind = {True: (TlpType.MEM_WRITE, TlpType.MEM_WRITE_64), False: (TlpType.MEM_READ, TlpType.MEM_READ_64)}
        assert tlp.fmt_type in kind[want["write"]] and tlp.address == want["addr"] and \
            tlp.length == want["dwords"] and tlp.tag == want["tag"], f"TLP {k}: {tlp}"
    await Timer(200, "ns")
    assert sink.empty(), "more TLPs than sent"
    in_place = lanes == 16
    shifts = [4 if hdr_bus else int(len(w["hdr_dwords"]) == 3) for w in expected]
    want_hi = segment1_starts(tlps, lane_of, shifts) if in_place else 0
    assert not in_place or want_hi > count // 10, f"only {want_hi} TLPs for segment 1"
    assert starts == [count - want_hi, want_hi][:len(starts)], \
        f"TLPs started per segment {starts}, want {count - want_hi} / {want_hi}"


@pytest.mark.parametrize("width", [256, 512], ids=lambda w: f"w{w}")
@pytest.mark.parametrize("busy", [0, 40])
@pytest.mark.parametrize("block", ["ptile", "htile"])
def test_avst_tx(block, busy, width):
    hdr_bus = int(block == "ptile")
    rtl_build.run("mprace_pcie_avst_tx", "test_avst_tx", "requests", f"{block}_tx_{busy}_w{width}",
                  parameters={"data_w_g": width, "hdr_bus_g": "true" if hdr_bus else "false"},
                  env={"MPRACE_SEED": busy + width, "MPRACE_BUSY": busy, "MPRACE_HDR_BUS": hdr_bus})
