# SPDX-License-Identifier: GPL-2.0
"""mprace_dma_rd on its own, behind the RC adapter (docs/dma-engine.md sections 3-5).

The test plays the host and the H2C channel. It queues seeded random jobs (any dword address,
4 bytes to 64 KiB, ring positions that wrap the 32-bit counter) and answers every read request
with completions split at random read-completion boundaries, the requests answered in random
order (completions of different tags interleave), stalling the request stream at random. Every
request must be a memory read of at most MRRS that does not cross an MRRS-aligned boundary, on a
tag not in flight, for the next bytes of its job (in order); the data must land in the ring at
its position (the tag table puts each completion where its request's data goes) and be released
in order through ready_pos while the channel, consuming behind it at its own pace, frees ring
space. A failed completion (UR, CA, poisoned: BUS_ERROR; the core's timeout: TIMEOUT) must
stop ready_pos at the failed request's position and report it there. The completions a request
may bring at worst (one per read-completion boundary it touches) must fit the completion budget
with those of every request still unanswered; a slow host lets the engine fill budgets wider
than 127 headers and 1023 data credits (the Intel tops' defaults are)."""
import random
from pathlib import Path

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiStreamBus, AxiStreamSink

import rtl_build
from pcie_env import (WIDTHS, RcDriver, env_int, pause_pattern, quiet_logs, rc_completion,
                       rcb_cut, req_tlp, width_generics)

RING_LOG2 = 12
RING = 1 << RING_LOG2    # dwords
MASK32 = 0xFFFFFFFF
FIRST_TAG, TAGS = 2, 32


def mem(seed, a):
    """The host's dword at byte address a."""
    x = (a * 0x9E3779B1 + seed) & 0xFFFFFFFFFFFFFFFF
    return (x ^ (x >> 29) ^ (a >> 17)) & MASK32


@cocotb.test()
async def read(dut):
    quiet_logs(dut)
    rng = random.Random(env_int("MPRACE_SEED", 1))
    seed = rng.getrandbits(32)
    busy = env_int("MPRACE_BUSY", 30) / 100
    mrrs = env_int("MPRACE_MRRS", 512)
    rcb = env_int("MPRACE_RCB", 64)
    count = env_int("MPRACE_COUNT", 40)
    fail = ["none", "bus", "timeout"][env_int("MPRACE_FAIL", 0)]
    hdr_budget = env_int("MPRACE_HDR_BUDGET", 54)
    data_budget = env_int("MPRACE_DATA_BUDGET", 972)
    hold = env_int("MPRACE_HOLD", 0)    # the host answers once this many requests wait

    cocotb.start_soon(Clock(dut.clk, 4, "ns").start())
    dut.rst.value = 1
    for sig in ("job_valid", "discard", "s_axis_rc_tvalid"):
        getattr(dut, sig).value = 0
    dut.mps_dw.value = 64
    dut.mrrs_dw.value = mrrs // 4
    dut.rcb128.value = int(rcb == 128)
    # positions start just below the wrap of the 32-bit counter
    pos0 = ((1 << 32) - rng.randint(1, 3 * RING)) & MASK32
    dut.space_base.value = pos0
    for _ in range(4):
        await RisingEdge(dut.clk)
    rq = AxiStreamSink(AxiStreamBus.from_prefix(dut, "rq"), dut.clk, dut.rst)
    rc = RcDriver(dut, "s_axis_rc", dut.clk, straddle=bool(env_int("MPRACE_STRADDLE", 0)),
                  rng=random.Random(f"rc{env_int('MPRACE_SEED', 1)}"), idle=0.15)
    if busy:
        rq.set_pause_generator(pause_pattern(rng, busy))
    dut.rst.value = 0

    jobs, expected = [], []   # expected[i]: the dword at position pos0 + i
    pos = pos0
    for _ in range(count):
        addr = (rng.getrandbits(46) << 2) | (rng.choice([0, 4096 - 8, rng.getrandbits(12)]) & ~3 & 0xFFF)
        length = 4 * rng.choice([1, 2, 16, 33, rng.randint(1, 16384)])
        jobs.append(dict(addr=addr, len=length, pos=pos))
        expected += [mem(seed, addr + 4 * i) for i in range(length // 4)]
        pos = (pos + length // 4) & MASK32
    total = len(expected)
    fail_request = rng.randint(5, 30) if fail != "none" else None
    st = {"consumed": 0, "failed_pos": None, "requests": 0, "last_request": 0,
          "hdr": 0, "data": 0, "max_hdr": 0, "max_data": 0}
    errors = []
    ring = [None] * RING

    async def submit_jobs():
        for j in jobs:
            await RisingEdge(dut.clk)
            dut.job_addr.value = j["addr"]
            dut.job_len.value = j["len"]
            dut.job_pos.value = j["pos"]
            dut.job_valid.value = 1
            while True:
                await RisingEdge(dut.clk)
                if dut.job_ready.value == 1:
                    break
            dut.job_valid.value = 0
    cocotb.start_soon(submit_jobs())

    outstanding = {}            # tag -> request still to answer
    order = {"job": 0, "off": 0}

    async def take_requests():
        while True:
            t = req_tlp(await rq.recv())
            addr, dwords, tag = t["addr"], t["dwords"], t["tag"]
            st["requests"] += 1
            n = st["requests"]
            if t["write"]:
                errors.append(f"request {n}: not a memory read")
            if not FIRST_TAG <= tag < TAGS or tag in outstanding:
                errors.append(f"request {n}: tag {tag} not a free data tag")
            if dwords == 0 or 4 * dwords > mrrs or addr % mrrs + 4 * dwords > mrrs:
                errors.append(f"request {n}: {4 * dwords} bytes at {addr:#x} exceed MRRS {mrrs} or cross its boundary")
            # the next bytes of the jobs, in order
            j = jobs[order["job"]]
            if addr != j["addr"] + order["off"]:
                errors.append(f"request {n}: at {addr:#x}, want {j['addr'] + order['off']:#x} (job {order['job']})")
            rpos = (j["pos"] + order["off"] // 4) & MASK32
            order["off"] += 4 * dwords
            if order["off"] >= j["len"]:
                if order["off"] > j["len"]:
                    errors.append(f"request {n}: runs past the end of job {order['job']}")
                order["job"] += 1
                order["off"] = 0
            # the engine's worst case: a completion per read-completion boundary touched, each
            # with up to 2 credits of overhead; released here before the engine sees the last
            # completion, so these sums never exceed the engine's own
            blocks = (addr % rcb + 4 * dwords + rcb - 1) // rcb
            hdr, data = blocks, (4 * dwords + 15) // 16 + 2 * blocks
            st["hdr"] += hdr
            st["data"] += data
            if st["hdr"] > hdr_budget or st["data"] > data_budget:
                errors.append(f"request {n}: {st['hdr']} completion headers / {st['data']} data "
                              f"credits may be in flight, budget {hdr_budget} / {data_budget}")
            st["max_hdr"] = max(st["max_hdr"], st["hdr"])
            st["max_data"] = max(st["max_data"], st["data"])
            st["last_request"] = get_sim_time("ns")
            outstanding[tag] = dict(addr=addr, left=4 * dwords, pos=rpos, fail=n == fail_request,
                                    hdr=hdr, data=data)

    def release(r):
        st["hdr"] -= r["hdr"]
        st["data"] -= r["data"]

    async def answer():
        arng = random.Random(rng.getrandbits(32))
        while True:
            if not outstanding or (len(outstanding) < hold and
                                   get_sim_time("ns") - st["last_request"] < 400):
                await RisingEdge(dut.clk)
                continue
            if arng.random() < 0.2:
                await Timer(4 * arng.randint(1, 30), "ns")
            tag = arng.choice(list(outstanding))
            r = outstanding[tag]
            if r["fail"]:
                del outstanding[tag]
                release(r)
                if st["failed_pos"] is None:
                    st["failed_pos"] = r["pos"]
                code = 0x9 if fail == "timeout" else arng.choice([0x1, 0x2, 0x3])
                await rc.send(rc_completion(r["addr"], [], r["left"], True, tag, err=code))
                continue
            # the next completion: up to one or more read-completion boundaries
            size = rcb_cut(r["addr"], r["left"], rcb, arng)
            done = size == r["left"]
            frame = rc_completion(r["addr"], [mem(seed, r["addr"] + 4 * i) for i in range(size // 4)],
                                  r["left"], done, tag)
            r["addr"] += size
            r["left"] -= size
            if done:
                del outstanding[tag]
                release(r)
            await rc.send(frame)

    cocotb.start_soon(take_requests())
    cocotb.start_soon(answer())

    # the channel: records ring writes, checks what ready_pos releases, frees space behind it
    crng = random.Random(rng.getrandbits(32))
    lag = 0
    cycles = 0
    still = 0       # clocks without a ring write, a request or data released
    last_requests = 0
    err_seen = None
    while st["consumed"] < total and cycles < 400 * total + 200_000 and not errors:
        await RisingEdge(dut.clk)
        cycles += 1
        still += 1
        if still > 20_000:
            errors.append(f"nothing moved for {still} clocks: {st['consumed']} of {total} dwords "
                          f"released, {len(outstanding)} requests unanswered")
            break
        en = int(dut.ring_wr_en.value)
        if en:
            still = 0
            wpos = int(dut.ring_wr_pos.value)
            data = int(dut.ring_wr_data.value)
            for lane in range(len(dut.ring_wr_en)):
                if en >> lane & 1:
                    ring[(wpos + lane) % RING] = (data >> (32 * lane)) & MASK32
        raw_ready = int(dut.ready_pos.value)
        # 0 until the first request completes (the engine counts from 0 after reset; the
        # jobs here start near the wrap of the counter)
        ready = 0 if raw_ready == 0 and st["consumed"] == 0 else (raw_ready - pos0) & MASK32
        if dut.err_valid.value == 1 and err_seen is None:
            err_seen = (int(dut.err_pos.value), int(dut.err_code.value))
        if ready > total:
            errors.append(f"ready_pos {ready} past the {total} dwords queued")
            break
        if st["failed_pos"] is not None:
            fp = (st["failed_pos"] - pos0) & MASK32
            if ready > fp:
                errors.append(f"ready_pos {ready} passed the failed request at {fp}")
                break
        c = st["consumed"]
        while c < ready:
            p = (pos0 + c) % RING
            if ring[p] != expected[c]:
                errors.append(f"dword {c} (position {(pos0 + c) & MASK32:#x}): {ring[p]} in the ring, want {expected[c]}")
                break
            ring[p] = None
            c += 1
        if c != st["consumed"] or st["requests"] != last_requests:
            still = 0
            last_requests = st["requests"]
        st["consumed"] = c
        if err_seen:
            break
        # free the space behind it, now and then (the ring fills meanwhile)
        if lag <= 0:
            dut.space_base.value = (pos0 + c) & MASK32
            lag = crng.randint(0, 60) if busy else 0
        lag -= 1
    assert not errors, errors[:3]
    rc.check_straddled()
    if fail == "none":
        assert st["consumed"] == total, f"stuck at {st['consumed']} of {total} dwords ({st['requests']} requests)"
        for _ in range(50):
            await RisingEdge(dut.clk)
        assert dut.idle.value == 1 and dut.busy.value == 0, "not idle after the last job"
        assert not outstanding
        if hold:
            # a budget, not the tags or the ring, held the engine back, and past what 7 and
            # 10 bits count
            most = f"at most {st['max_hdr']} headers / {st['max_data']} data credits in flight"
            assert st["max_hdr"] > hdr_budget - 17 or st["max_data"] > data_budget - 50, most
            assert st["max_hdr"] > 127 or st["max_data"] > 1023, most
    else:
        for _ in range(2000):
            if err_seen:
                break
            await RisingEdge(dut.clk)
            if dut.err_valid.value == 1:
                err_seen = (int(dut.err_pos.value), int(dut.err_code.value))
        want = 6 if fail == "timeout" else 5
        assert err_seen is not None, f"no error reported (failed request at {st['failed_pos']})"
        assert err_seen == (st["failed_pos"], want), f"error {err_seen}, want position {st['failed_pos']:#x}, code {want}"
        ready = (int(dut.ready_pos.value) - pos0) & MASK32
        assert ready == (st["failed_pos"] - pos0) & MASK32, f"ready_pos {ready} stops not at the failed request"


CASES = {
    # name: MRRS, RCB, backpressure %, failure[, header budget, data budget, host holds]
    "mrrs512_rcb64": (512, 64, 30, 0),
    "mrrs128_rcb128": (128, 128, 0, 0),
    "mrrs256_rcb64_busy70": (256, 64, 70, 0),
    "mrrs1024_rcb128": (1024, 128, 30, 0),
    "bus_error": (512, 64, 30, 1),
    "timeout": (256, 128, 0, 2),
    # a slow host: the headers bind past 127, then the data credits past 1023
    "budget_hdr160": (512, 64, 0, 0, 160, 2048, 24),
    "budget_data1100": (512, 64, 0, 0, 512, 1100, 28),
}


@pytest.mark.parametrize("width", WIDTHS, ids=lambda w: f"w{w}")
@pytest.mark.parametrize("case", list(CASES))
def test_rd(case, width):
    mrrs, rcb, busy, fail, *budget = CASES[case]
    hdr_budget, data_budget, hold = budget or (54, 972, 0)
    rtl_build.run("rd_tb", "test_rd", "read", f"rd_{case}_w{width}",
                   parameters={**width_generics(width), "hdr_budget_g": hdr_budget,
                               "data_budget_g": data_budget},
                   env={"MPRACE_SEED": env_int("MPRACE_SEED", 0) or (len(case) * 15485863 + mrrs),
                        "MPRACE_MRRS": mrrs, "MPRACE_RCB": rcb, "MPRACE_BUSY": busy,
                        "MPRACE_FAIL": fail, "MPRACE_COUNT": 30, "MPRACE_HOLD": hold,
                        "MPRACE_HDR_BUDGET": hdr_budget, "MPRACE_DATA_BUDGET": data_budget,
                        "MPRACE_STRADDLE": int(width.endswith("s"))},
                   extra_sources=[Path(__file__).parent / "rd_tb.vhd"])
