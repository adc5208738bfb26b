# SPDX-License-Identifier: GPL-2.0
"""mprace_dma_desc_fetch on its own (docs/dma-engine.md sections 2-5), behind the RC adapter.

The test plays software and host memory: it queues seeded random descriptors into a small ring
(so the ring wraps many times), moves TAIL ahead as room frees and HEAD as the channel (the
consumer, stalling at random) takes descriptors, and answers each read request with completion
TLPs split at random read-completion boundaries, with stray completions of another tag in
between. Every request must stay inside the ring, a 4 KiB page, MRRS and 8 descriptors; every
descriptor must come out once, in order, with its fields, its slot and the spec's check result
(reserved bits, then length, then alignment); a slot the software has not queued holds poison,
so a fetch beyond TAIL shows. Variants: a bad descriptor somewhere (queued with its error; the
fetcher may fetch ahead up to TAIL, as the spec allows), a failed completion (BUS_ERROR or
TIMEOUT in its place, then nothing more is fetched), a bad ring (RING_CONFIG, no request at
all), and the fetcher disabled and re-enabled at random (it restarts at HEAD; completions in
flight are dropped)."""
import random
from pathlib import Path

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer
from cocotbext.axi import AxiStreamBus, AxiStreamSink

import rtl_build
from pcie_env import (WIDTHS, RcDriver, env_int, pause_pattern, quiet_logs, rc_completion,
                       rcb_cut, req_tlp, width_generics)

TAG = 3            # the fetcher's tag (generic tag_g of the wrapper)
MAX_LEN = 1 << 24  # MP_ENGINE_MAX_DESC_LEN
ERR = {"none": 0, "length": 1, "align": 2, "reserved": 3, "ring": 4, "bus": 5, "timeout": 6}
POISON = [0xDEADBEEF] * 8


def check(w):
    """The spec's checks of one descriptor, in its order: the error code."""
    length = w[2] & (MAX_LEN * 2 - 1)
    if w[2] >> 25 or w[3] & ~0x7:
        return ERR["reserved"]
    if length == 0 or length > MAX_LEN:
        return ERR["length"]
    if w[0] & 3 or length & 3:
        return ERR["align"]
    return 0


def random_descriptor(rng, bad=None):
    addr = rng.getrandbits(64) & ~3
    length = rng.choice([4, 64, 4096, rng.randint(1, MAX_LEN // 4) * 4, MAX_LEN])
    ctrl = rng.getrandbits(3)
    w = [addr & 0xFFFFFFFF, addr >> 32, length, ctrl, 0, 0, 0, 0]
    if bad == "length":
        w[2] = rng.choice([0, MAX_LEN + 4])
    elif bad == "align":
        if rng.random() < 0.5:
            w[0] |= rng.choice([1, 2, 3])
        else:
            w[2] = (w[2] & ~3 | 2) if w[2] > 4 else 6
    elif bad == "reserved":
        if rng.random() < 0.5:
            w[3] |= 1 << rng.randint(3, 31)
        else:
            w[2] |= 1 << rng.randint(25, 31)
    return w


@cocotb.test()
async def fetch(dut):
    quiet_logs(dut)
    rng = random.Random(env_int("MPRACE_SEED", 1))
    busy = env_int("MPRACE_BUSY", 30) / 100
    size = env_int("MPRACE_RING", 16)
    rcb = env_int("MPRACE_RCB", 64)
    mrrs_dw = env_int("MPRACE_MRRS", 512) // 4
    total = env_int("MPRACE_COUNT", 300)
    bad_kind = ["none", "length", "align", "reserved", "bus", "timeout", "ring"][env_int("MPRACE_BAD", 0)]
    toggle = env_int("MPRACE_TOGGLE", 0)

    # the ring: 32-byte aligned, placed so that it crosses 4 KiB pages
    base = (rng.getrandbits(40) << 12) + 4096 - 32 * rng.randint(1, min(size, 8))
    descs = [random_descriptor(rng) for _ in range(total)]
    stop_at = None
    if bad_kind in ("length", "align", "reserved"):
        stop_at = rng.randint(total // 4, total - 1)
        descs[stop_at] = random_descriptor(rng, bad_kind)
    fail_request = rng.randint(3, 12) if bad_kind in ("bus", "timeout") else None
    ring = [list(POISON) for _ in range(size)]
    state = {"head": 0, "tail": 0, "requests": 0, "failed_at": None, "enabled": True}

    cocotb.start_soon(Clock(dut.clk, 4, "ns").start())
    dut.rst.value = 1
    dut.enable.value = 0
    dut.s_axis_rc_tvalid.value = 0
    dut.desc_ready.value = 0
    dut.ring_base.value = base + (8 if bad_kind == "ring" else 0)   # not 32-byte aligned
    dut.ring_size.value = size
    dut.head.value = 0
    dut.tail.value = 0
    dut.mrrs_dw.value = mrrs_dw
    for _ in range(4):
        await RisingEdge(dut.clk)
    rq = AxiStreamSink(AxiStreamBus.from_prefix(dut, "rq"), dut.clk, dut.rst)
    rc = RcDriver(dut, "s_axis_rc", dut.clk, straddle=bool(env_int("MPRACE_STRADDLE", 0)),
                  rng=random.Random(f"rc{env_int('MPRACE_SEED', 1)}"), idle=0.15)
    if busy:
        rq.set_pause_generator(pause_pattern(rng, busy))
    dut.rst.value = 0
    dut.enable.value = 1
    errors = []

    def queue_more():
        """Software: queue descriptors while the ring has room."""
        while state["tail"] < total and state["tail"] < state["head"] + size:
            k = state["tail"]
            ring[k % size] = list(descs[k])
            state["tail"] = k + 1
        dut.tail.value = state["tail"] & 0xFFFFFFFF

    async def completer():
        crng = random.Random(rng.getrandbits(32))
        while True:
            t = req_tlp(await rq.recv())
            addr, dwords, tag = t["addr"], t["dwords"], t["tag"]
            n = dwords // 8
            slot = (addr - base) // 32
            state["requests"] += 1
            if tag != TAG or t["write"]:
                errors.append(f"request at {addr:#x}: tag {tag} or type {t['type']} not a memory read")
            if addr % 32 or not 0 <= slot < size or dwords % 8 or not 1 <= n <= 8:
                errors.append(f"request at {addr:#x} for {dwords} dwords: not whole descriptors of the ring")
            if slot + n > size:
                errors.append(f"request at slot {slot} for {n} descriptors runs past the ring's end ({size})")
            if addr % 4096 + 32 * n > 4096:
                errors.append(f"request at {addr:#x} for {32 * n} bytes crosses a 4 KiB page")
            if dwords > mrrs_dw:
                errors.append(f"request for {dwords} dwords exceeds MRRS ({mrrs_dw} dwords)")
            await Timer(4 * crng.randint(1, 40), "ns")
            if crng.random() < 0.3:   # someone else's completion first: must be ignored
                await rc.send(rc_completion(0, [crng.getrandbits(32) for _ in range(8)], 32, 1, tag=TAG + 2))
            if fail_request is not None and state["requests"] == fail_request:
                # the fetch index of this request: the one at `slot` in [HEAD, HEAD + size)
                state["failed_at"] = state["head"] + (slot - state["head"]) % size
                code = 0x9 if bad_kind == "timeout" else crng.choice([0x1, 0x2, 0x3])  # timeout; poisoned, UR, CA
                await rc.send(rc_completion(addr, [], 32 * n, 1, TAG, err=code))
                continue
            payload = [w for s in range(slot, slot + n) for w in ring[s]]
            # split at random read-completion boundaries of the address
            at = 0
            while at < len(payload):
                left = 4 * (len(payload) - at)
                end = at + rcb_cut(addr + 4 * at, left, rcb, crng) // 4
                await rc.send(rc_completion(addr + 4 * at, payload[at:end], left, end == len(payload), TAG))
                at = end

    async def consumer():
        prng = random.Random(rng.getrandbits(32))
        got = 0
        ready = 1
        while True:
            dut.desc_ready.value = ready
            await RisingEdge(dut.clk)   # values read now are those the edge sampled
            taken = dut.desc_valid.value == 1 and ready
            ready = int(not busy or prng.random() >= busy)
            if not taken:
                continue
            entry = dict(addr=int(dut.desc_addr.value), len=int(dut.desc_len.value),
                         ctrl=int(dut.desc_ctrl.value), slot=int(dut.desc_slot.value),
                         err=int(dut.desc_err.value), rec=int(dut.desc_rec.value))
            k = state["head"]
            if bad_kind == "ring":
                if entry["err"] != ERR["ring"] or entry["rec"] != 0 or state["requests"]:
                    errors.append(f"bad ring: {entry} after {state['requests']} requests, want RING_CONFIG, no record")
                state["ended"] = True
                return
            if state["failed_at"] is not None and k == state["failed_at"]:
                want = ERR["timeout"] if bad_kind == "timeout" else ERR["bus"]
                if entry["err"] != want or entry["rec"] != 0 or k != state["failed_at"]:
                    errors.append(f"after the failed fetch: {entry}, want error {want} in place of descriptor {k}")
                state["ended"] = True
                return
            if k >= total:
                errors.append(f"descriptor {k} of {total}: {entry}")
                return
            w = descs[k]
            want = dict(addr=(w[1] << 32) | w[0], len=w[2] & (MAX_LEN * 2 - 1), ctrl=w[3] & 7,
                        slot=k % size, err=check(w), rec=1)
            if entry != want:
                errors.append(f"descriptor {k}: {entry}, want {want}")
                return
            got += 1
            ring[k % size] = list(POISON)   # consumed: a fetch of this slot now shows
            state["head"] = k + 1
            dut.head.value = state["head"]
            queue_more()
            if want["err"]:
                state["ended"] = True
                return
            if state["head"] == total:
                return

    async def toggler():
        trng = random.Random(rng.getrandbits(32))
        while True:
            await Timer(4 * trng.randint(50, 400), "ns")
            dut.enable.value = 0
            await Timer(4 * trng.randint(1, 8), "ns")
            dut.enable.value = 1

    queue_more()
    cocotb.start_soon(completer())
    cons = cocotb.start_soon(consumer())
    if toggle:
        cocotb.start_soon(toggler())
    limit_ns = 4 * 2000 * total + 100_000
    waited = 0
    while not cons.done() and waited < limit_ns and not errors:
        await Timer(1000, "ns")
        waited += 1000
    assert not errors, errors[:3]
    rc.check_straddled()
    assert cons.done(), f"stuck after {state['head']} of {total} descriptors ({state['requests']} requests)"
    if state.get("ended"):
        # after a ring or fetch error the fetcher stops fetching; after a bad descriptor it may
        # fetch ahead, within TAIL (the completer and the poison check that)
        before = state["requests"]
        await Timer(4000, "ns")
        assert not errors, errors[:3]
        if bad_kind in ("bus", "timeout", "ring"):
            assert state["requests"] == before, "fetched more after queueing a ring or fetch error"
            assert dut.desc_valid.value == 0, "queued more after a ring or fetch error"
    else:
        assert state["head"] == total
        assert state["requests"] >= total // 8


CASES = {
    # name: ring entries, RCB, MRRS bytes, backpressure %, bad kind, toggle enable
    "r16_rcb64_m512": (16, 64, 512, 30, 0, 0),
    "r8_rcb128_m128": (8, 128, 128, 0, 0, 0),
    "r256_rcb64_m256_busy70": (256, 64, 256, 70, 0, 0),
    "r2_rcb64_m512": (2, 64, 512, 30, 0, 0),
    "bad_length": (16, 64, 512, 30, 1, 0),
    "bad_align": (16, 128, 512, 30, 2, 0),
    "bad_reserved": (32, 64, 256, 30, 3, 0),
    "bus_error": (16, 64, 512, 30, 4, 0),
    "timeout": (16, 64, 512, 0, 5, 0),
    "bad_ring": (16, 64, 512, 0, 6, 0),
    "enable_toggles": (16, 64, 512, 30, 0, 1),
}


@pytest.mark.parametrize("width", WIDTHS, ids=lambda w: f"w{w}")
@pytest.mark.parametrize("case", list(CASES))
def test_desc_fetch(case, width):
    ring, rcb, mrrs, busy, bad, toggle = CASES[case]
    rtl_build.run("desc_fetch_tb", "test_desc_fetch", "fetch", f"desc_fetch_{case}_w{width}",
                   parameters=width_generics(width),
                   env={"MPRACE_SEED": env_int("MPRACE_SEED", 0) or (len(case) * 7919 + ring),
                        "MPRACE_RING": ring, "MPRACE_RCB": rcb, "MPRACE_MRRS": mrrs,
                        "MPRACE_BUSY": busy, "MPRACE_BAD": bad, "MPRACE_TOGGLE": toggle,
                        "MPRACE_COUNT": 200, "MPRACE_STRADDLE": int(width.endswith("s"))},
                   extra_sources=[Path(__file__).parent / "desc_fetch_tb.vhd"])
