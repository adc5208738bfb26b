# SPDX-License-Identifier: GPL-2.0
"""mprace_pcie_avst_rx (completions on Intel's Avalon-ST receive interface as the engine's
completion stream) driven by cocotbext-pcie's P-tile receive source (hdr_bus_g true, the IP's
ready latency of 27 clocks) or its Stratix 10 H-tile/L-tile one (hdr_bus_g false: the header in
the data stream, ready latency 17 at 256 bits and 18 at 512), both of which pack a TLP into the
second segment of the beat that ends another at 512 bits: seeded random completions (1 to 300 payload dwords, the request done or not, poisoned,
UR/CA without data) mixed with BAR0 register writes (3- and 4-dword headers) and I/O writes,
sent at random times. Every completion must come out in order as payload-aligned beats (dword k
of beat j in lane k), its payload dword for dword, with tag, byte count, done and error as sent;
every register write one reg_wr with its offset and data, in order; every I/O write one pulse on
`other`; no beat is lost when the source keeps sending after rx_st_ready falls (the adapter
fails on a beat that finds its queue full). At 256 bits (one segment) and 512 bits (two)."""
import random
from pathlib import Path

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer
from cocotbext.pcie.core.tlp import CplStatus, Tlp, TlpType
from cocotbext.pcie.intel.ptile.interface import PTilePcieSource, PTileRxBus
from cocotbext.pcie.intel.s10.interface import S10PcieSource, S10RxBus

import rtl_build
from pcie_env import env_int, pause_pattern, quiet_logs

# rx_st_ready's latency: the P-tile's, the H-tile's at 256 and 512 bits (cocotbext-pcie's
# models use the same)
READY_LATENCY = {"ptile": 27, "htile256": 17, "htile512": 18}
OK, FAILED = 0, 1    # mprace_dma_pkg CPL_OK_c, CPL_FAILED_c


def completion(rng, k):
    """A random completion and what the engine must get for it."""
    tlp = Tlp()
    tlp.tag = k & 0xFF
    kind = rng.random()
    if kind < 0.1:
        tlp.fmt_type = TlpType.CPL
        tlp.status = rng.choice([CplStatus.UR, CplStatus.CA])
        tlp.byte_count = 4 * rng.randint(1, 1024) & 0xFFF
        return tlp, dict(tag=tlp.tag, data=[], bytes=tlp.byte_count or 4096, done=1, err=FAILED)
    tlp.fmt_type = TlpType.CPL_DATA
    words = rng.choice([1, 2, 7, 8, 9, 15, 16, 17, 32, rng.randint(1, 300)])
    data = [rng.getrandbits(32) for _ in range(words)]
    tlp.set_data(b"".join(w.to_bytes(4, "little") for w in data))
    more = rng.choice([0, 0, 4 * rng.randint(1, 512)])
    tlp.byte_count = (4 * words + more) & 0xFFF
    tlp.ep = kind > 0.95
    return tlp, dict(tag=tlp.tag, data=data, bytes=tlp.byte_count or 4096, done=int(more == 0),
                     err=FAILED if tlp.ep else OK)


def register_write(rng):
    """A one-dword write into BAR0 (the BAR at a random base below or above 4 GiB) and the
    register access it must give."""
    tlp = Tlp()
    base = rng.choice([0x8000_0000, 0x4_0000_0000])
    tlp.fmt_type = TlpType.MEM_WRITE_64 if base >> 32 else TlpType.MEM_WRITE
    off, val = rng.getrandbits(12) & ~3, rng.getrandbits(32)
    tlp.set_addr_be_data(base + off, val.to_bytes(4, "little"))
    return tlp, (off, val)


def io_write(rng):
    tlp = Tlp()
    tlp.fmt_type = TlpType.IO_WRITE
    tlp.set_addr_be_data(rng.getrandbits(16) & ~3, bytes(4))
    return tlp


@cocotb.test()
async def completions(dut):
    quiet_logs(dut)
    rng = random.Random(env_int("MPRACE_SEED", 1))
    busy = env_int("MPRACE_BUSY", 30) / 100
    count = env_int("MPRACE_COUNT", 300)
    lanes = len(dut.cpl_keep)
    cocotb.start_soon(Clock(dut.clk, 4, "ns").start())
    dut.rst.value = 1
    for _ in range(4):
        await RisingEdge(dut.clk)
    if env_int("MPRACE_HDR_BUS", 1):                # the generic hdr_bus_g
        src = PTilePcieSource(PTileRxBus.from_prefix(dut, "rx_st"), dut.clk, dut.rst,
                              ready_latency=READY_LATENCY["ptile"])
    else:
        for sig in (dut.rx_st_hdr, dut.rx_st_tlp_prfx, dut.rx_st_tlp_abort):
            sig.value = 0                            # the H-tile has no such ports
        src = S10PcieSource(S10RxBus.from_prefix(dut, "rx_st"), dut.clk, dut.rst,
                            ready_latency=READY_LATENCY[f"htile{lanes * 32}"])
    if busy:
        src.set_pause_generator(pause_pattern(rng, busy))
    for _ in range(4):
        await RisingEdge(dut.clk)
    dut.rst.value = 0

    expected, writes, others_sent = [], [], 0
    for k in range(count):
        if rng.random() < 0.1:
            tlp, access = register_write(rng)
            await src.send(tlp)
            writes.append(access)
        if rng.random() < 0.03:
            await src.send(io_write(rng))
            others_sent += 1
        tlp, want = completion(rng, k)
        expected.append(want)
        await src.send(tlp)

    got, others, cur, accesses = [], 0, None, []
    quiet, second = 0, 0
    while quiet < 200:
        await RisingEdge(dut.clk)
        others += int(dut.other.value)
        if int(dut.reg_wr.value):
            accesses.append((int(dut.reg_addr.value), int(dut.reg_wdata.value)))
        if lanes == 16:   # a TLP starting in the second segment (a valid beat is taken)
            second += int(dut.rx_st_sop.value) >> 1 & int(dut.rx_st_valid.value) >> 1 & 1
        if not int(dut.cpl_valid.value):
            quiet = quiet + 1 if src.empty() else 0
            continue
        quiet = 0
        keep = int(dut.cpl_keep.value)
        n = bin(keep).count("1")
        assert keep == (1 << n) - 1, f"keep {keep:#x} not contiguous from lane 0"
        words = [(int(dut.cpl_data.value) >> 32 * i) & 0xFFFFFFFF for i in range(n)]
        fields = dict(tag=int(dut.cpl_tag.value), bytes=int(dut.cpl_bytes.value),
                      done=int(dut.cpl_done.value), err=int(dut.cpl_err.value))
        if int(dut.cpl_sop.value):
            assert cur is None, f"completion {len(got)}: a new one began before the last ended"
            cur = dict(fields, data=[])
        assert cur is not None, "a beat outside a completion"
        assert fields == {k: cur[k] for k in fields}, f"completion {len(got)}: fields changed inside it"
        assert not cur["data"] or len(cur["data"]) % lanes == 0, \
            f"completion {len(got)}: a beat after one with fewer than {lanes} dwords"
        cur["data"] += words
        if int(dut.cpl_eop.value):
            got.append(cur)
            cur = None
    assert len(got) == len(expected), f"{len(got)} completions out of {len(expected)}"
    for k, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"completion {k}: got {dict(g, data=len(g['data']))}, want {dict(e, data=len(e['data']))}" \
            + ("" if g["data"] == e["data"] else " (payload differs)")
    assert accesses == writes, f"register writes {accesses[:4]}..., want {writes[:4]}..."
    assert others == others_sent, f"{others} other TLPs reported, {others_sent} I/O writes sent"
    assert lanes == 8 or second > count // 10, f"only {second} TLPs started in the second segment"


@pytest.mark.parametrize("width", [256, 512], ids=lambda w: f"w{w}")
@pytest.mark.parametrize("busy", [0, 40])
@pytest.mark.parametrize("block", ["ptile", "htile"])
def test_avst_rx(block, busy, width):
    hdr_bus = int(block == "ptile")
    latency = READY_LATENCY[block if hdr_bus else f"htile{width}"]
    rtl_build.run("avst_rx_tb", "test_avst_rx", "completions", f"{block}_rx_{busy}_w{width}",
                  parameters={"data_w_g": width, "hdr_bus_g": "true" if hdr_bus else "false",
                              "ready_latency_g": latency},
                  env={"MPRACE_SEED": busy + width + 7, "MPRACE_BUSY": busy,
                       "MPRACE_HDR_BUS": hdr_bus},
                  extra_sources=[Path(__file__).parent / "avst_rx_tb.vhd"])
