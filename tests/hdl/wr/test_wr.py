# SPDX-License-Identifier: GPL-2.0
"""mprace_dma_wr with the C2H source and the dword ring in front (docs/dma-engine.md sections 2-5).

The test feeds seeded random data on the C2H stream (bursty; with or without packet ends), queues
seeded random descriptors (addresses and lengths on any dword, up to 64 KiB), stalls the request
stream at random and reads back every TLP. Each TLP must be a memory write of at most MPS that
does not cross an MPS-aligned boundary; each descriptor's data must be the next bytes of the
stream, at its address, in order; a packet end (tlast) ends the descriptor early with EOP and
the bytes received; the completion record (RESULT_BYTES, RESULT_STATUS) follows its data on the
same stream; the reports come in descriptor order with code, bytes, IRQ and STOP. Variants: a
descriptor that failed its checks (a record-only write, or with no valid slot a report alone),
and an abort while the engine waits for data (a record of the bytes written so far, ABORTED)."""
import collections
import random
from pathlib import Path

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer, with_timeout
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

import rtl_build
from pcie_env import PacketMonitor, env_int, pause_pattern, quiet_logs, req_tlp

DONE, ERROR, EOP = 1, 2, 4
ABORTED = 7


REQ_SOP_HI, REQ_EOP_MID, REQ_EOP_PTR = 0, 1, 2   # mprace_dma_pkg: the request stream's side bits


class TlpSplitter:
    """The request stream as TLPs. A packet (frame up to tlast) holds one TLP, or with straddling
    several back to back: the dwords with tkeep set are the TLPs one after the other, each its
    4-dword header slot and the payload its Length field says (0: 1024 dwords)."""

    def __init__(self, sink):
        self.sink = sink
        self.tlps = collections.deque()
        self.merged = 0          # packets of more than one TLP

    async def recv(self):
        while not self.tlps:
            frame = await self.sink.recv()
            words = list(frame.tdata)
            ends = []
            while words:
                size = 4 + ((words[0] & 0x3FF) or 1024)
                self.tlps.append(AxiStreamFrame(words[:size]))
                words = words[size:]
                ends.append(size)
            self.merged += len(ends) > 1
            # the side bits (mprace_dma_pkg REQ_*) mark the beats in which a TLP starts in lane
            # 8: that beat is the last `ptr`+1 dwords of the TLP before and the first 8 of the
            # new one (cocotbext-axi keeps one tuser per dword with tkeep set)
            users = frame.tuser if isinstance(frame.tuser, list) else [frame.tuser] * len(frame.tdata)
            flag = [u >> REQ_SOP_HI & 1 for u in users]
            assert flag == [u >> REQ_EOP_MID & 1 for u in users], "straddle bits apart"
            want, at = [0] * len(users), 0
            for size in ends[:-1]:
                at += size
                ptr = users[at] >> REQ_EOP_PTR & 0xF
                assert flag[at] and ptr < 8, f"TLP at dword {at} of a packet not marked as straddling"
                want[at - ptr - 1:at + 8] = [1] * (ptr + 9)
            assert flag == want, f"straddle marks {flag}, want {want}"
        return self.tlps.popleft()

    def empty(self):
        return not self.tlps and self.sink.empty()


@cocotb.test()
async def write(dut):
    quiet_logs(dut)
    rng = random.Random(env_int("MPRACE_SEED", 1))
    busy = env_int("MPRACE_BUSY", 30) / 100
    mps_dw = env_int("MPRACE_MPS", 256) // 4
    packets = env_int("MPRACE_PACKETS", 0)
    count = env_int("MPRACE_COUNT", 40)
    ending = ["none", "error_record", "error_report", "abort"][env_int("MPRACE_END", 0)]

    cocotb.start_soon(Clock(dut.clk, 4, "ns").start())
    dut.rst.value = 1
    for sig in ("job_valid", "abort", "s_axis_tvalid"):
        getattr(dut, sig).value = 0
    dut.mps_dw.value = mps_dw
    dut.use_tlast.value = packets
    dut.abort_code.value = ABORTED
    for _ in range(4):
        await RisingEdge(dut.clk)
    src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
    rq_frames = AxiStreamSink(AxiStreamBus.from_prefix(dut, "rq"), dut.clk, dut.rst)
    rq = TlpSplitter(rq_frames)
    mon = PacketMonitor(dut, "rq", dut.clk)
    if busy:
        rq_frames.set_pause_generator(pause_pattern(rng, busy))
        src.set_pause_generator(pause_pattern(random.Random(rng.getrandbits(32)), busy))
    dut.rst.value = 0

    # the descriptors and what each must produce, from the stream they will consume
    jobs = []
    for k in range(count):
        addr = rng.getrandbits(48) << 2
        length = 4 * rng.choice([1, 2, 7, 8, 9, 64, rng.randint(1, 16384)])
        jobs.append(dict(addr=addr, len=length, ctrl=rng.getrandbits(3) & 0b011,
                         rec_addr=rng.getrandbits(45) << 3))
    stream_dw = sum(j["len"] for j in jobs) // 4 + 64
    stream = [rng.getrandbits(32) for _ in range(stream_dw)]
    ends = set()
    if packets:   # packet ends at random, some right at a descriptor's end
        at = 0
        while at < stream_dw:
            at += rng.randint(1, 3000)
            ends.add(min(at, stream_dw))
    expected = []
    pos = 0
    for j in jobs:
        n = j["len"] // 4
        end = min([e for e in ends if pos < e <= pos + n], default=None)
        got = (end - pos) if end is not None else n
        eop = end is not None
        expected.append(dict(addr=j["addr"], data=stream[pos:pos + got], bytes=4 * got, eop=eop,
                             rec_addr=j["rec_addr"], code=0, irq=j["ctrl"] & 1, stop=0))
        pos += got
    used = pos

    async def feed():
        frng = random.Random(rng.getrandbits(32))
        cuts = sorted(ends | {stream_dw}) if packets else []
        at = 0
        while at < stream_dw:
            if ending == "abort" and at >= used:
                return   # the last descriptor waits for data that never comes
            nxt = min([c for c in cuts if c > at], default=stream_dw) if packets else stream_dw
            if ending == "abort":
                nxt = min(nxt, used)
            step = min(nxt - at, frng.randint(1, 600))
            frame = AxiStreamFrame(stream[at:at + step])
            # only the piece that reaches a packet end carries tlast (use_tlast gates the rest)
            await send_piece(frame, packets and at + step == nxt)
            at += step

    async def send_piece(frame, last):
        # a frame always ends with tlast; pieces inside a packet must not: send them with
        # use_tlast low for their duration
        if packets and not last:
            await src.wait()
            dut.use_tlast.value = 0
            await src.send(frame)
            await src.wait()
            dut.use_tlast.value = 1
        else:
            await src.send(frame)

    cocotb.start_soon(feed())

    async def submit(job, err=0, rec=1):
        dut.job_addr.value = job["addr"]
        dut.job_len.value = job["len"]
        dut.job_ctrl.value = job["ctrl"]
        dut.job_err.value = err
        dut.job_rec.value = rec
        dut.job_rec_addr.value = job["rec_addr"]
        dut.job_valid.value = 1
        while True:
            await RisingEdge(dut.clk)
            if dut.job_ready.value == 1:
                break
        dut.job_valid.value = 0

    reports = []

    async def collect_reports():
        while True:
            await RisingEdge(dut.clk)
            if dut.ev_valid.value == 1:
                reports.append(dict(code=int(dut.ev_code.value), bytes=int(dut.ev_bytes.value),
                                    irq=int(dut.ev_irq.value), stop=int(dut.ev_stop.value)))
    cocotb.start_soon(collect_reports())

    async def submit_all():
        jrng = random.Random(rng.getrandbits(32))
        for j in jobs:
            await submit(j)
            if jrng.random() < 0.3:
                await Timer(4 * jrng.randint(1, 50), "ns")
                await RisingEdge(dut.clk)
        if ending in ("error_record", "error_report"):
            bad = dict(addr=0, len=4, ctrl=1, rec_addr=rng.getrandbits(45) << 3)
            code = rng.choice([1, 2, 3])
            await submit(bad, err=code, rec=int(ending == "error_record"))
            expected.append(dict(addr=None, data=[], bytes=0, eop=False, rec_addr=bad["rec_addr"] if ending == "error_record" else None,
                                 code=code, irq=1, stop=0))
        if ending == "abort":
            long = dict(addr=rng.getrandbits(40) << 2, len=4096, ctrl=0, rec_addr=rng.getrandbits(45) << 3)
            await submit(long)
            await Timer(2000, "ns")   # it waits for data that never comes
            await RisingEdge(dut.clk)  # a Timer may end on an edge: drive after one
            dut.abort.value = 1
            await RisingEdge(dut.clk)
            dut.abort.value = 0
            expected.append(dict(addr=long["addr"], data=[], bytes=0, eop=False, rec_addr=long["rec_addr"],
                                 code=ABORTED, irq=0, stop=0))
    sub = cocotb.start_soon(submit_all())

    # read back every TLP, descriptor by descriptor
    k = 0
    while k < len(expected) or not sub.done():
        if k >= len(expected):
            await Timer(100, "ns")
            continue
        e = expected[k]
        got = []
        while len(got) < len(e["data"]):
            t = req_tlp(await with_timeout(rq.recv(), 200, "us"))
            assert t["write"], f"descriptor {k}: a memory read, want a memory write"
            assert len(t["data"]) == t["dwords"], f"descriptor {k}: {len(t['data'])} payload dwords, header says {t['dwords']}"
            assert t["dwords"] <= mps_dw, f"descriptor {k}: a TLP of {t['dwords']} dwords exceeds MPS ({mps_dw})"
            mps_b = 4 * mps_dw
            assert t["addr"] % mps_b + 4 * t["dwords"] <= mps_b, f"descriptor {k}: TLP at {t['addr']:#x} crosses an MPS boundary"
            want_addr = e["addr"] + 4 * len(got)
            assert t["addr"] == want_addr, f"descriptor {k}: TLP at {t['addr']:#x}, want {want_addr:#x}"
            got += t["data"]
        assert got == e["data"], f"descriptor {k}: data differs from the stream"
        if e["rec_addr"] is not None:
            try:
                t = req_tlp(await with_timeout(rq.recv(), 200, "us"))
            except Exception:
                raise AssertionError(f"descriptor {k} of {len(expected)}: no record within 200 us; "
                                     f"{len(reports)} reports, the last {reports[-2:]}; idle {dut.idle.value}, "
                                     f"job_valid {dut.job_valid.value}, submitted {sub.done()}")
            status = DONE | (EOP if e["eop"] else 0) | ((ERROR | (e["code"] << 8)) if e["code"] else 0)
            assert t["write"] and t["addr"] == e["rec_addr"] and t["data"] == [e["bytes"], status], \
                f"descriptor {k}: record {t}, want {[e['bytes'], status]} at {e['rec_addr']:#x}"
        k += 1
    for _ in range(200):
        await RisingEdge(dut.clk)
    want_reports = [dict(code=e["code"], bytes=e["bytes"], irq=e["irq"], stop=e["stop"]) for e in expected]
    assert reports == want_reports, f"reports differ: first {next((i, a, b) for i, (a, b) in enumerate(zip(reports + [None] * 9, want_reports)) if a != b)}"
    assert rq.empty(), "TLPs beyond the expected ones"
    if env_int("MPRACE_STRADDLE", 0) and mps_dw > 8 and not packets:
        assert rq.merged, "no TLP started in the upper half of a beat"
    assert not mon.errors, mon.errors[:3]


CASES = {
    # name: MPS bytes, backpressure %, packet ends, ending
    "mps256": (256, 30, 0, 0),
    "mps128_nobusy": (128, 0, 0, 0),
    "mps512_busy70": (512, 70, 0, 0),
    "packets_mps256": (256, 30, 1, 0),
    "error_record": (256, 30, 0, 1),
    "error_report": (128, 0, 0, 2),
    "abort": (256, 30, 0, 3),
}


@pytest.mark.parametrize("width,straddle", [(256, 0), (512, 0), (512, 1)],
                         ids=["w256", "w512", "w512s"])
@pytest.mark.parametrize("case", list(CASES))
def test_wr(case, width, straddle):
    mps, busy, packets, ending = CASES[case]
    rtl_build.run("wr_tb", "test_wr", "write", f"wr_{case}_w{width}{'s' if straddle else ''}",
                   parameters={"data_w_g": width, "straddle_g": "true" if straddle else "false"},
                   env={"MPRACE_SEED": env_int("MPRACE_SEED", 0) or (len(case) * 104729 + mps),
                        "MPRACE_STRADDLE": straddle,
                        "MPRACE_MPS": mps, "MPRACE_BUSY": busy, "MPRACE_PACKETS": packets,
                        "MPRACE_END": ending, "MPRACE_COUNT": 30},
                   extra_sources=[Path(__file__).parent / "wr_tb.vhd"])
