# SPDX-License-Identifier: GPL-2.0
"""mprace_dma_top: data byte for byte in both directions (MPS, MRRS, split and reordered
completions, pauses, packets), 64-bit addresses, throughput figures, the largest descriptor and
the soak.

dma_top_env.py says how the cases run."""
import os
import struct

import cocotb
import pytest
from cocotb.triggers import Timer
from cocotb.utils import get_sim_time

import rtl_build
from dma_top_env import (alloc_buffers, apply_pauses, check_record, DESC, guards, halt, make_tb,
                         PAGE, rand_len, run, run_ring, SRC_GEN, TEST_CONTROL, TlpChecker,
                         wait_for, WIDTHS)
from pcie_env import (C2H, env_int, H2C, pattern_bytes, Ring, S)

MODULE = "test_dma_top_data"
pytestmark = pytest.mark.parametrize("width", WIDTHS, ids=lambda w: f"w{w}")


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
    # one beat per clock (4 ns at 250 MHz): writes have a 4-dword descriptor on RQ, completions a 3-dword one on
    # RC; with straddling (512 bits) a write or a completion may start in the upper half of a
    # beat, so each takes whole half beats, else whole beats. Intel's tiles start a TLP in any
    # 256-bit segment: the P-tile carries headers on a bus of their own, so a TLP takes whole
    # segments of payload only (the bound of the interface; the engine's own stream still gives
    # each write a 4-dword header slot); the H-tile's headers take the first dwords of the data
    if tb.block == "ptile":
        unit, hdr_wr, hdr_cpl = 32, 0, 0
    elif tb.block == "htile":
        unit, hdr_wr, hdr_cpl = 32, hdr, 12
    else:
        unit, hdr_wr, hdr_cpl = (tb.beat_bytes // 2 if tb.straddle else tb.beat_bytes), 16, 12
    beats_wr = -(-(hdr_wr + mps) // unit) * unit / tb.beat_bytes
    beats_cpl = -(-(hdr_cpl + mps) // unit) * unit / tb.beat_bytes
    # both directions at once: the writes share RQ with one read request per MRRS, which
    # takes a 256-bit segment where the front end takes a TLP in either segment (the request
    # mux packs it there: the Intel tiles, UltraScale+ with straddling), else a beat
    req_beats = (32 if tb.intel or tb.straddle else tb.beat_bytes) / tb.beat_bytes
    both = 1 / (beats_wr / mps + req_beats / mrrs) / tb.clk_ns
    return dict(link=link, rq=mps / (beats_wr * tb.clk_ns), rc=mps / (beats_cpl * tb.clk_ns), rq_both=both,
                beats_wr=beats_wr, beats_rd=req_beats)


def rq_busy(lim, mps, mrrs, c2h_bytes, h2c_bytes, ns, clk_ns):
    """The share of RQ's clocks (of clk_ns) in ns that C2H's writes and H2C's read requests (one
    per MRRS, beats_rd beats each) of these sizes take: with both directions streaming, RQ is
    what they share."""
    return (c2h_bytes * lim["beats_wr"] / mps + h2c_bytes * lim["beats_rd"] / mrrs) * clk_ns / ns


@cocotb.test()
async def throughput(dut):
    """Throughput in simulated time with the pattern generator (C2H) and the checker (H2C):
    each direction alone, then both at once. The time runs from the RUN write to the last
    record in host memory, so it includes fetching the first descriptors."""
    tb = make_tb(dut, monitor=False)
    await tb.init()
    tb.completer.latency_ns = env_int("MPRACE_HOST_LATENCY_NS", 0)
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
                         max(t for nb, t in both.values()), tb.clk_ns)
    out = (rtl_build.build_root() / f"throughput-{tb.variant}-mps{tb.mps}-mrrs{tb.mrrs}-gen{tb.gen}"
                                    f"{throughput_suffix()}.csv")
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


@pytest.mark.parametrize("mps", [128, 256, 512])
def test_c2h_mps(mps, width):
    run(MODULE, "c2h_random", f"c2h_mps{mps}", mps=mps, seed=mps, width=width)


@pytest.mark.parametrize("mps", [128, 256])
def test_c2h_packet_edges(mps, width):
    run(MODULE, "c2h_packet_edges", f"c2h_packet_edges{mps}", mps=mps, width=width)


def test_c2h_packets_pauses(width):
    run(MODULE, "c2h_random", "c2h_packets_pauses", packets=1, pause=2, seed=7, ring=4, count=30, width=width)


@pytest.mark.parametrize("mrrs", [128, 256, 512, 1024, 2048])
def test_h2c_mrrs(mrrs, width):
    run(MODULE, "h2c_random", f"h2c_mrrs{mrrs}", mrrs=mrrs, seed=mrrs, width=width)


def test_h2c_split_rcb_pauses(width):
    run(MODULE, "h2c_random", "h2c_split_rcb_pauses", split=1, pause=2, seed=11, mps=128, width=width)


def test_h2c_split_rcb128(width):
    run(MODULE, "h2c_random", "h2c_split_rcb128", split=1, rcb128=1, mrrs=1024, seed=12, width=width)


def test_h2c_reordered(width):
    run(MODULE, "h2c_random", "h2c_reordered", reorder=1, pause=1, seed=13, mrrs=256, width=width)


def test_h2c_block_unstraddled(width):
    """rc_straddle_g on with the block's RC straddle option off: one completion per beat,
    found by the same sideband."""
    if width != "512":
        pytest.skip("the 512-bit engine with RC straddling")
    run(MODULE, "h2c_random", "h2c_block_unstraddled", reorder=1, pause=1, seed=14, mrrs=512,
        block_rc_straddle=0, width=width)


def top_generics():
    """Generics of the top from MPRACE_TOP_GENERICS ("name=value,..."), for the figures only."""
    generics = {}
    for item in filter(None, os.environ.get("MPRACE_TOP_GENERICS", "").split(",")):
        name, eq, value = item.partition("=")
        if not (name and eq and value):
            raise ValueError(f"MPRACE_TOP_GENERICS: {item!r} is not name=value")
        generics[name] = value
    return generics


def throughput_suffix():
    """The figures' file name ends in -lat<ns> where a host read latency was modelled, and in
    -<generic><value> for each generic of MPRACE_TOP_GENERICS."""
    latency = env_int("MPRACE_HOST_LATENCY_NS", 0)
    return (f"-lat{latency}" if latency else "") + \
        "".join(f"-{k}{v}" for k, v in top_generics().items())


def test_addr64(width):
    run(MODULE, "addr64", seed=61, width=width)


# link settings of the figures: (MPS, MRRS, PCIe generation); make check runs the first
THROUGHPUT_SETTINGS = [(256, 512, 3), (256, 1024, 3), (512, 512, 3), (512, 1024, 3),
                       (256, 512, 4), (512, 1024, 4)]


@pytest.mark.parametrize("mps,mrrs,gen", THROUGHPUT_SETTINGS,
                         ids=[f"mps{m}_mrrs{r}_gen{g}" for m, r, g in THROUGHPUT_SETTINGS])
def test_throughput(mps, mrrs, gen, width):
    """Prints the figures (and writes throughput-w<width>-mps<M>-mrrs<R>-gen<G>.csv in the build
    directory); no timing assertion. MPRACE_BENCH_BYTES sets the size of each transfer,
    MPRACE_HOST_LATENCY_NS a host read latency (the models answer at once; -lat<ns> in the
    file name), MPRACE_TOP_GENERICS generics of the top (say h2c_ring_log2_g=13).
    make check runs the first setting at 256 bits (a minute of simulation; the 512-bit data paths
    are covered by the soak and the data tests); the other settings and widths with
    HDL_FIGURES=1; generation 4 only at 512 bits (Gen4 x8 on UltraScale+; Gen4 x16 on the
    P-tile, with coreclkout_hip at 500 MHz: at 250 the 512-bit interface carries half of that
    link)."""
    if (mps, mrrs, gen) != THROUGHPUT_SETTINGS[0] and not os.environ.get("HDL_FIGURES"):
        pytest.skip("more link settings with HDL_FIGURES=1")
    if width != "256" and not os.environ.get("HDL_FIGURES"):
        pytest.skip("the figures at other widths with HDL_FIGURES=1")
    if gen == 4 and width not in ("512", "512n", "p512"):
        pytest.skip("Gen4: UltraScale+ (Gen4 x8) and the P-tile (Gen4 x16) at 512 bits only")
    size = os.environ.get("MPRACE_BENCH_BYTES", str((2 << 20) if os.environ.get("HDL_SOAK") else (512 << 10)))
    name = f"throughput_mps{mps}_mrrs{mrrs}_gen{gen}"
    clock = dict(clk_mhz=500) if width == "p512" and gen == 4 else {}
    latency = os.environ.get("MPRACE_HOST_LATENCY_NS", "0")
    run(MODULE, "throughput", name, mps=mps, mrrs=mrrs, gen=gen, bytes=size, width=width,
        host_latency_ns=latency, top_generics=os.environ.get("MPRACE_TOP_GENERICS", ""),
        generics=top_generics(), **clock)
    variant = (width if width[0] in "phl" else f"w{width}") + ("-500mhz" if clock else "")
    print((rtl_build.build_root() / f"throughput-{variant}-mps{mps}-mrrs{mrrs}-gen{gen}"
                                    f"{throughput_suffix()}.csv").read_text())


def test_max_desc(width):
    """One 16 MiB descriptor per direction (about two minutes of wall time): HDL_SOAK=1."""
    if not os.environ.get("HDL_SOAK"):
        pytest.skip("16 MiB per direction takes minutes: set HDL_SOAK=1")
    run(MODULE, "max_desc", seed=111, width=width)


def test_tx_credits(width):
    """The P-tile's transmit credits: the root port advertises a few (pcie_env FINITE_CREDITS:
    4 posted headers, 768 bytes of posted data, 2 non-posted headers), both channels run as in
    the soak, and every TLP the engine hands the IP is checked against the credit limit the IP
    reports on tx_cdts_limit."""
    if width not in ("p256", "p512"):
        pytest.skip("the P-tile reports credit limits (tx_cdts_limit)")
    run(MODULE, "soak", "tx_credits", seed=104, count=16, width=width, credits=1)


def test_soak(width):
    if os.environ.get("HDL_SOAK"):
        for seed in (101, 102, 103):
            run(MODULE, "soak", f"soak_long_{seed}", seed=seed, count=300, width=width)
    else:
        run(MODULE, "soak", seed=100, count=24, width=width)
