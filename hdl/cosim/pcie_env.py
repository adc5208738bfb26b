# SPDX-License-Identifier: GPL-2.0
"""The PCIe environment of mprace_dma_top (the HDL suite and the co-simulation's sim_board.py
import it from here): the engine between cocotbext-pcie's RootComplex and its model of
the Xilinx PCIe block at the engine's width: UltraScalePcieDevice (Gen3 x8) for data_w_g = 256,
UltraScalePlusPcieDevice (Gen3 x16, or Gen4 x8 with MPRACE_GEN=4) for 512; with helpers for
registers, descriptor rings and the user streams.

The register map, descriptor layout and error codes are read from the one specification
(spec/python/engine_spec.py, generated from spec/dma-engine.toml), so the tests check the
engine against the spec rather than against the RTL's package. What the model cannot do by itself is added here:
  * HostCompleter answers memory reads itself when asked to split completions at random read
    completion boundaries, to reorder them across tags, or to drop them (a "black hole", with the
    core's completion timeout emulated afterwards, as the hard core would report it);
  * PacketMonitor checks the AXI4-Stream rules the core relies on (no gaps inside a TLP, stable
    beats while stalled) on the engine's RQ and CC outputs;
  * StreamSource / StreamSink drive and collect the user C2H/H2C streams with pause patterns.
"""
import collections
import logging
import os
import random
import struct
import warnings
import sys
from pathlib import Path

import cocotb
from cocotb.triggers import Event, FallingEdge, RisingEdge, Timer
from cocotb.utils import get_sim_time

from cocotbext.axi import AxiStreamBus
from cocotbext.axi.address_space import MemoryRegion
from cocotbext.pcie.core import RootComplex
from cocotbext.pcie.core.dllp import FcType
from cocotbext.pcie.core.tlp import Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId
from cocotbext.pcie.intel.ptile import PTilePcieDevice, PTileRxBus, PTileTxBus
from cocotbext.pcie.intel.s10 import S10PcieDevice, S10RxBus, S10TxBus
from cocotbext.pcie.xilinx.us import UltraScalePcieDevice, UltraScalePlusPcieDevice
from cocotbext.pcie.xilinx.us.tlp import ErrorCode, Tlp_us

TOP = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "spec" / "python"))
from engine_spec import SPEC  # noqa: E402  (generated; found through the path above)
CLK_NS = 4          # 250 MHz user clock at both widths


class Spec:
    """The engine spec (spec/python/engine_spec.py, generated from spec/dma-engine.toml),
    with lookups by name."""

    def __init__(self, t=SPEC):
        self.engine = t["engine"]
        self.reg = {r["name"]: r["offset"] for r in t["register"]}
        self.reg_reset = {r["name"]: r.get("reset") for r in t["register"]}
        self.field = {}
        for group in ("register", "channel_register", "descriptor"):
            for r in t[group]:
                for name, lsb, width, _doc in r.get("fields", []):
                    self.field[(group, r["name"], name)] = (lsb, width)
        self.chan = {c["name"]: c["base"] for c in t["channel"]}
        self.chreg = {r["name"]: r["offset"] for r in t["channel_register"]}
        self.desc = {d["name"]: d["offset"] for d in t["descriptor"]}
        self.err = {e["name"]: e["code"] for e in t["error"]}
        self.irq_bit = {i["name"]: i["bit"] for i in t["irq"]}
        self.irq_vector = {i["name"]: i["vector"] for i in t["irq"]}
        self.state = {"IDLE": 0, "RUNNING": 1, "ERROR": 2}

    def get(self, value, reg, name, group="register"):
        lsb, width = self.field[(group, reg, name)]
        return (value >> lsb) & ((1 << width) - 1)

    def val(self, reg, group="register", **fields):
        v = 0
        for name, x in fields.items():
            lsb, width = self.field[(group, reg, name)]
            assert 0 <= x < (1 << width)
            v |= x << lsb
        return v

    # shorthands
    def ctrl(self, irq=0, eop=0, stop=0):
        return self.val("CTRL", "descriptor", IRQ=irq, EOP=eop, STOP=stop)

    def status(self, value):
        """RESULT_STATUS -> (done, error, eop, code)"""
        g = lambda n: self.get(value, "RESULT_STATUS", n, "descriptor")  # noqa: E731
        return g("DONE"), g("ERROR"), g("EOP"), g("ERROR_CODE")


S = Spec()
C2H, H2C = "C2H", "H2C"


def quiet_logs(dut):
    """Per-frame INFO logging of the models is slow: keep them at WARNING."""
    for name in ("cocotb", f"cocotb.{dut._name}"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # enumeration probes empty slots and warns for each
    logging.getLogger("cocotb.pcie").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    log = logging.getLogger("cocotb.tb")
    log.setLevel(logging.INFO)
    return log


def env_int(name, default):
    return int(os.environ.get(name, str(default)), 0)


class TB:
    """The engine, the PCIe model around it and host memory."""

    def __init__(self, dut, mps=256, mrrs=512, msi_count=32, rcb128=False, split_rcb=False,
                 seed=None, monitor=True):
        self.dut = dut
        self.log = quiet_logs(dut)
        self.seed = env_int("MPRACE_SEED", 1) if seed is None else seed
        self.rng = random.Random(self.seed)
        self.mps, self.mrrs = mps, mrrs
        # the user clock: 250 MHz but for an Intel tile told otherwise (MPRACE_CLK_MHZ)
        self.clk_mhz = env_int("MPRACE_CLK_MHZ", 250)
        self.clk_ns = 1000 / self.clk_mhz

        self.rc = RootComplex()
        self.rc.max_payload_size = (mps // 128).bit_length() - 1
        self.rc.split_on_all_rcb = split_rcb
        self.rc.read_completion_boundary = rcb128

        # the interface width is the engine's generic data_w_g; the top's ports say which block:
        # Intel's Avalon-ST (tx_st_*) with a header bus (P-tile) or without (H-tile/L-tile)
        if not hasattr(dut, "tx_st_data"):
            self.block = "xilinx"
            self._xilinx_device(dut, msi_count)
        elif hasattr(dut, "tx_st_hdr"):
            self.block = "ptile"
            self._ptile_device(dut, msi_count)
        else:
            self.block = "htile"
            self._htile_device(dut, msi_count)
        self.intel = self.block != "xilinx"
        self.dev.functions[0].configure_bar(0, S.engine["bar0_size"])
        port = self.rc.make_port()
        if self.block == "ptile":
            credits = env_int("MPRACE_CREDITS", 0)
            if credits:
                self._finite_credits(port, credits == 1)
            else:
                # infinite credit, as the model reports it (limits of 0), without a coroutine
                # writing them every clock
                dut.tx_cdts_limit.value = 0
                dut.tx_cdts_limit_tdm_idx.value = 0
        port.connect(self.dev)

        # user streams idle until a test starts them
        self.c2h = StreamSource(dut, "s_axis_c2h", dut.user_clk)
        self.h2c = StreamSink(dut, "m_axis_h2c", dut.user_clk)

        self.monitors = []
        if monitor and not self.intel:     # the Intel models' sinks check their own framing
            self.monitors = [
                PacketMonitor(dut, "m_axis_rq", dut.user_clk),
                PacketMonitor(dut, "m_axis_cc", dut.user_clk),
            ]
        self.completer = HostCompleter(self)
        self.msi = [0] * 32
        self.msi_event = Event()
        self.mem = None
        self._bump = 0

    def _xilinx_device(self, dut, msi_count):
        """cocotbext-pcie's UltraScale (256 bits) or UltraScale+ (512 bits) block around
        mprace_dma_top."""
        self.width = len(dut.m_axis_rq_tdata)
        self.beat_bytes = self.width // 8
        if self.width == 512:
            model = UltraScalePlusPcieDevice
            self.gen = env_int("MPRACE_GEN", 3)
            self.lanes = 16 if self.gen == 3 else 8
        else:
            model, self.gen, self.lanes = UltraScalePcieDevice, 3, 8
        # at 512 bits the engine straddles C2H writes on RQ and takes two completions per RC
        # beat (rq_straddle_g, rc_straddle_g): the model then marks and finds TLPs by the
        # sideband's start and end pointers alone. MPRACE_STRADDLE=0: neither (both generics off)
        self.straddle = self.width == 512 and bool(env_int("MPRACE_STRADDLE", 1))
        extra = dict(rq_straddle=True, rc_straddle=True) if self.straddle else {}
        # MPRACE_BLOCK_RC_STRADDLE=0: the block does not straddle RC, the engine still may take
        # two completions per beat (rc_straddle_g on reads the sideband, which says either way)
        if self.straddle and not env_int("MPRACE_BLOCK_RC_STRADDLE", 1):
            extra["rc_straddle"] = False
        # names the figures: w256, w512, w512n (512 bits without straddling)
        self.variant = f"w{self.width}" + ("n" if self.width == 512 and not self.straddle else "")
        self.dev = model(
            pcie_generation=self.gen, pcie_link_width=self.lanes, user_clk_frequency=250e6,
            alignment="dword", **extra,
            max_payload_size=1024, enable_client_tag=True, enable_extended_tag=False,
            pf0_msi_enable=True, pf0_msi_count=msi_count,
            user_clk=dut.user_clk, user_reset=dut.user_reset,
            rq_bus=AxiStreamBus.from_prefix(dut, "m_axis_rq"),
            rc_bus=AxiStreamBus.from_prefix(dut, "s_axis_rc"),
            cq_bus=AxiStreamBus.from_prefix(dut, "s_axis_cq"),
            cc_bus=AxiStreamBus.from_prefix(dut, "m_axis_cc"),
            # the model samples every connected input each clock, which costs simulation
            # speed: connect what the engine drives that the model needs; the engine's
            # constant outputs (pcie_cq_np_req = 1, MSI function/attributes/TPH = 0) stay open
            cfg_max_payload=dut.cfg_max_payload,
            cfg_max_read_req=dut.cfg_max_read_req,
            cfg_rcb_status=dut.cfg_rcb_status,
            cfg_interrupt_msi_enable=dut.cfg_interrupt_msi_enable,
            cfg_interrupt_msi_mmenable=dut.cfg_interrupt_msi_mmenable,
            cfg_interrupt_msi_int=dut.cfg_interrupt_msi_int,
            cfg_interrupt_msi_sent=dut.cfg_interrupt_msi_sent,
            cfg_interrupt_msi_fail=dut.cfg_interrupt_msi_fail,
        )
        self.dev.log.setLevel(logging.WARNING)
        for sig in (dut.cfg_interrupt_sent, dut.cfg_interrupt_msi_mask_update):
            sig.value = 0
        dut.cfg_interrupt_msi_data.value = 0

    def _ptile_device(self, dut, msi_count):
        """cocotbext-pcie's Intel P-tile around mprace_dma_top_ptile: Gen3 x8 at 256 bits, Gen3
        x16 (MPRACE_GEN=4: Gen4 x16) at 512, 250 MHz (MPRACE_CLK_MHZ: the IP's coreclkout_hip,
        the top's clk_mhz_g), MSI from the engine's memory writes."""
        self.width = len(dut.tx_st_data)
        self.beat_bytes = self.width // 8
        self.gen = env_int("MPRACE_GEN", 3) if self.width == 512 else 3
        self.lanes = 16 if self.width == 512 else 8
        self.straddle = False
        self.variant = f"p{self.width}"
        if self.clk_mhz != 250:
            self.variant += f"-{self.clk_mhz}mhz"
        self.dev = PTilePcieDevice(
            port_num=0, pcie_generation=self.gen, pcie_link_width=self.lanes,
            pld_clk_frequency=self.clk_mhz * 1e6, max_payload_size=512, enable_extended_tag=False,
            pf0_msi_enable=True, pf0_msi_count=msi_count,
            coreclkout_hip=dut.user_clk, reset_status=dut.user_reset,
            rx_bus=PTileRxBus.from_prefix(dut, "rx_st"), tx_bus=PTileTxBus.from_prefix(dut, "tx_st"),
            tl_cfg_func=dut.tl_cfg_func, tl_cfg_add=dut.tl_cfg_add, tl_cfg_ctl=dut.tl_cfg_ctl)
        self.dev.log.setLevel(logging.WARNING)

    # what the root port advertises with MPRACE_CREDITS=1 (P-tile): few enough that the engine
    # must wait for them in every direction (16-byte data credits)
    FINITE_CREDITS = dict(ph=4, pd=48, nph=2, npd=0, cplh=0, cpld=0)

    def _finite_credits(self, port, few=True):
        """The engine sees the root port's credit limits on tx_cdts_limit: FINITE_CREDITS when
        `few` (0: infinite; MPRACE_CREDITS=1), else the model's own (64 headers of each type,
        16 KiB of posted and completion data; MPRACE_CREDITS=2). Every TLP the engine hands over is checked against the limit the IP
        reports then (PCIe's rule: limit - consumed, modulo the field size, stays below half
        of it), and a test fails at the first TLP sent without credit."""
        fc = port.downstream_port.fc_state[0]
        for name, n in self.FINITE_CREDITS.items() if few else ():
            st = getattr(fc, name)
            st.rx_initial_allocation = st.rx_credits_allocated = n
        dev_fc = self.dev.upstream_port.fc_state[0]
        self.dev.tx_cdts_limit = self.dut.tx_cdts_limit
        self.dev.tx_cdts_limit_tdm_idx = self.dut.tx_cdts_limit_tdm_idx
        cocotb.start_soon(self.dev._run_tx_fc_logic())
        consumed = {}
        send = self.dev.send

        async def checked_send(tlp):
            kind = {FcType.P: ("ph", "pd"), FcType.NP: ("nph", "npd"),
                    FcType.CPL: ("cplh", "cpld")}[tlp.get_fc_type()]
            for name, need in zip(kind, (1, tlp.get_data_credits())):
                st = getattr(dev_fc, name)
                if st.tx_is_infinite() or not need:
                    continue
                bits = 12 if name.endswith("h") else 16
                consumed[name] = (consumed.get(name, 0) + need) % (1 << bits)
                left = (st.tx_credit_limit - consumed[name]) % (1 << bits)
                assert left <= 1 << (bits - 1), \
                    f"{tlp.fmt_type.name} sent without {name.upper()} credit: limit " \
                    f"{st.tx_credit_limit}, consumed {consumed[name]}"
            await send(tlp)
        self.dev.send = checked_send

    def _htile_device(self, dut, msi_count):
        """cocotbext-pcie's Intel Stratix 10 H-tile (MPRACE_LTILE=1: L-tile, for the top's
        l_tile_g) around mprace_dma_top_htile: Gen3 x8 at 256 bits, Gen3 x16 at 512, 250 MHz,
        MSI through app_msi_req."""
        self.width = len(dut.tx_st_data)
        self.beat_bytes = self.width // 8
        self.gen = 3
        self.lanes = 16 if self.width == 512 else 8
        self.straddle = False
        l_tile = bool(env_int("MPRACE_LTILE", 0))
        self.variant = f"{'l' if l_tile else 'h'}{self.width}"
        self.dev = S10PcieDevice(
            pcie_generation=self.gen, pcie_link_width=self.lanes, pld_clk_frequency=250e6,
            l_tile=l_tile,
            max_payload_size=512, enable_extended_tag=False,
            pf0_msi_enable=True, pf0_msi_count=msi_count,
            coreclkout_hip=dut.user_clk, reset_status=dut.user_reset,
            rx_bus=S10RxBus.from_prefix(dut, "rx_st"), tx_bus=S10TxBus.from_prefix(dut, "tx_st"),
            app_msi_req=dut.app_msi_req, app_msi_ack=dut.app_msi_ack,
            app_msi_num=dut.app_msi_num, app_msi_tc=dut.app_msi_tc,
            app_msi_func_num=dut.app_msi_func_num,
            tl_cfg_func=dut.tl_cfg_func, tl_cfg_add=dut.tl_cfg_add, tl_cfg_ctl=dut.tl_cfg_ctl)
        self.dev.log.setLevel(logging.WARNING)

    def pause_block(self, rng, busy):
        """Backpressure on the block's streams, `busy` (0..1) of the time: Xilinx's four (RQ,
        RC, CQ, CC), an Intel tile's two (transmit, receive)."""
        if self.intel:
            streams = (self.dev.tx_sink, self.dev.rx_source)
        else:
            streams = (self.dev.rq_sink, self.dev.rc_source, self.dev.cq_source, self.dev.cc_sink)
        for stream in streams:
            stream.set_pause_generator(pause_pattern(rng, busy))

    async def init(self, mem_size=32 << 20):
        await FallingEdge(self.dut.user_reset)
        await Timer(100, "ns")
        await self.rc.enumerate()
        self.pdev = self.rc.find_device(self.dev.functions[0].pcie_id)
        await self.pdev.enable_device()
        await self.pdev.set_master()
        await self.pdev.set_readrq((self.mrrs // 128).bit_length() - 1)
        self.msi_vectors = await self.pdev.alloc_irq_vectors(1, 32)
        for k in range(32):
            self.pdev.request_irq(k, self._msi_handler(k))
        self.bar = self.pdev.bar_window[0]
        self.mem = self.rc.mem_pool.alloc_region(mem_size)
        self.mem_base = self.mem.get_absolute_address(0)
        self._bump = 0
        # the engine sees the link settings one clock after the config writes
        await self.clocks(4)

    def _msi_handler(self, k):
        async def handler():
            self.msi[k] += 1
            self.msi_event.set()
        return handler

    async def clocks(self, n=1):
        for _ in range(n):
            await RisingEdge(self.dut.user_clk)

    def check_protocol(self):
        for m in self.monitors:
            assert not m.errors, f"{m.name}: {m.errors[:3]}"

    # ---------------------------------------------------------------- registers
    async def rd(self, reg):
        off = S.reg[reg] if isinstance(reg, str) else reg
        return await self.bar.read_dword(off)

    async def wr(self, reg, val):
        off = S.reg[reg] if isinstance(reg, str) else reg
        await self.bar.write_dword(off, val)

    @staticmethod
    def ch_off(ch, reg):
        return S.chan[ch] + S.chreg[reg]

    async def ch_rd(self, ch, reg):
        return await self.bar.read_dword(self.ch_off(ch, reg))

    async def ch_wr(self, ch, reg, val):
        await self.bar.write_dword(self.ch_off(ch, reg), val)

    async def ch_status(self, ch):
        """(STATE, BUSY, ERROR_CODE)"""
        v = await self.ch_rd(ch, "STATUS")
        g = lambda n: S.get(v, "STATUS", n, "channel_register")  # noqa: E731
        return g("STATE"), g("BUSY"), g("ERROR_CODE")

    async def ch_control(self, ch, run=0, abort=0, reset=0):
        await self.ch_wr(ch, "CONTROL", S.val("CONTROL", "channel_register", RUN=run, ABORT=abort,
                                               RESET=reset))

    async def bytes_moved(self, ch):
        lo = await self.ch_rd(ch, "BYTES_LO")
        hi = await self.ch_rd(ch, "BYTES_HI")
        return hi << 32 | lo

    async def wait_state(self, ch, state, timeout_us=200):
        for _ in range(timeout_us):
            st, busy, code = await self.ch_status(ch)
            if st == S.state[state]:
                return st, busy, code
            await Timer(1, "us")
        raise AssertionError(f"{ch} did not reach {state} (STATUS state {st})")

    # ---------------------------------------------------------------- host memory
    def alloc(self, size, align=4096, offset=0):
        """Bus address and region offset of `size` bytes of host memory."""
        pos = (self._bump + align - 1) // align * align + offset
        assert pos + size <= len(self.mem.mem), "test host memory exhausted"
        self._bump = pos + size
        return self.mem_base + pos, pos

    def high_region(self, base, size):
        """Host memory at a chosen bus address (e.g. across 4 GiB), outside the RC's pool."""
        region = MemoryRegion(size)
        self.rc.mem_address_space.register_region(region, base)
        return region

    def rand_bytes(self, n):
        return self.rng.randbytes(n)


class Ring:
    """A channel's descriptor ring in host memory and its doorbell."""

    def __init__(self, tb, ch, entries, base=None):
        self.tb, self.ch, self.entries = tb, ch, entries
        if base is None:
            self.addr, self.off = tb.alloc(entries * S.engine["desc_size"])
        else:
            self.addr, self.off = base
        self.tail = 0
        self.head = 0           # descriptors this object has seen completed
        self.cookies = {}
        self.results = {}       # records captured before their slot was reused

    async def configure(self, timeout_us=0):
        await self.tb.ch_wr(self.ch, "RING_BASE_LO", self.addr & 0xFFFFFFFF)
        await self.tb.ch_wr(self.ch, "RING_BASE_HI", self.addr >> 32)
        await self.tb.ch_wr(self.ch, "RING_SIZE", self.entries)
        await self.tb.ch_wr(self.ch, "TIMEOUT_US", timeout_us)

    def slot_off(self, n):
        return self.off + (n % self.entries) * S.engine["desc_size"]

    def put(self, n, addr, length, ctrl=0, raw_len=None):
        o = self.slot_off(n)
        d = S.desc
        m = self.tb.mem
        cookie = self.tb.rng.getrandbits(64)
        self.cookies[n] = cookie
        struct.pack_into("<Q", m.mem, o + d["ADDR_LO"], addr)
        struct.pack_into("<I", m.mem, o + d["LEN"], length if raw_len is None else raw_len)
        struct.pack_into("<I", m.mem, o + d["CTRL"], ctrl)
        struct.pack_into("<II", m.mem, o + d["RESULT_BYTES"], 0, 0)
        struct.pack_into("<Q", m.mem, o + d["SW_COOKIE_LO"], cookie)

    def result(self, n):
        """(RESULT_BYTES, RESULT_STATUS) of descriptor number n"""
        o = self.slot_off(n)
        return struct.unpack_from("<II", self.tb.mem.mem, o + S.desc["RESULT_BYTES"])

    def capture(self, n):
        self.results[n] = self.result(n)
        self.check_cookie(n)

    def check_cookie(self, n):
        o = self.slot_off(n)
        assert struct.unpack_from("<Q", self.tb.mem.mem, o + S.desc["SW_COOKIE_LO"])[0] == \
            self.cookies[n], f"{self.ch}: the engine wrote SW_COOKIE of descriptor {n}"

    async def submit(self, descs):
        """descs: iterable of (addr, length, ctrl) or (addr, length, ctrl, raw_len)."""
        for dsc in descs:
            self.put(self.tail, *dsc)
            self.tail += 1
        await self.tb.ch_wr(self.ch, "TAIL", self.tail & 0xFFFFFFFF)

    def done(self, n):
        return S.status(self.result(n)[1])[0] == 1

    async def wait_done(self, n, timeout_us=1000, poll_ns=500):
        """Wait until the record of descriptor n says DONE (no MMIO: host memory only)."""
        t_end = get_sim_time("ns") + timeout_us * 1000
        while not self.done(n):
            if get_sim_time("ns") > t_end:
                raise AssertionError(f"{self.ch}: descriptor {n} not done after {timeout_us} us")
            await Timer(poll_ns, "ns")


class StreamSource:
    """Drives a user AXI4-Stream (the engine's width, byte tkeep) from queued beats."""

    def __init__(self, dut, prefix, clk):
        self.clk = clk
        self.tdata = getattr(dut, f"{prefix}_tdata")
        self.tkeep = getattr(dut, f"{prefix}_tkeep")
        self.tlast = getattr(dut, f"{prefix}_tlast")
        self.tvalid = getattr(dut, f"{prefix}_tvalid")
        self.tready = getattr(dut, f"{prefix}_tready")
        self.tdata.value = 0
        self.tkeep.value = 0
        self.tlast.value = 0
        self.tvalid.value = 0
        self.beat_bytes = len(self.tdata) // 8
        self.beats = collections.deque()
        self.pause = None
        self.sent = 0            # bytes taken by the engine
        self.wake = Event()
        self.idle = Event()
        self.idle.set()
        cocotb.start_soon(self._run())

    def send(self, data, last=False, beat_bytes=None):
        """Queue data (a multiple of 4 bytes) as beats of up to beat_bytes bytes (default: full
        beats)."""
        beat_bytes = beat_bytes or self.beat_bytes
        assert len(data) % 4 == 0 and beat_bytes % 4 == 0 and beat_bytes <= self.beat_bytes
        for k in range(0, len(data), beat_bytes):
            chunk = data[k:k + beat_bytes]
            is_last = last and k + beat_bytes >= len(data)
            self.beats.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1,
                               int(is_last), len(chunk)))
        self.idle.clear()
        self.wake.set()

    async def _run(self):
        valid = 0
        current = None
        while True:
            if not valid and not self.beats:
                self.idle.set()
                self.wake.clear()
                await self.wake.wait()
            await RisingEdge(self.clk)
            if valid and self.tready.value:
                self.sent += current[3]
                valid = 0
            paused = self.pause is not None and next(self.pause)
            if not valid and self.beats and not paused:
                current = self.beats.popleft()
                self.tdata.value = current[0]
                self.tkeep.value = current[1]
                self.tlast.value = current[2]
                valid = 1
            elif valid and paused:
                pass        # a valid beat stays until taken
            self.tvalid.value = valid


class StreamSink:
    """Collects a user AXI4-Stream; tready follows an optional pause pattern."""

    def __init__(self, dut, prefix, clk):
        self.clk = clk
        self.tdata = getattr(dut, f"{prefix}_tdata")
        self.tkeep = getattr(dut, f"{prefix}_tkeep")
        self.tlast = getattr(dut, f"{prefix}_tlast")
        self.tvalid = getattr(dut, f"{prefix}_tvalid")
        self.tready = getattr(dut, f"{prefix}_tready")
        self.tready.value = 0
        self.data = bytearray()
        self.lasts = []          # byte counts at which tlast was seen
        self.beats = []          # byte count of every beat
        self.errors = []
        self.pause = None
        self.active = False
        self._task = None

    def start(self):
        if self._task is None:
            self._task = cocotb.start_soon(self._run())

    async def _run(self):
        ready = 0
        while True:
            await RisingEdge(self.clk)
            if ready and self.tvalid.value:
                keep = int(self.tkeep.value)
                n = (keep + 1).bit_length() - 1
                if keep != (1 << n) - 1 or n == 0 or n % 4:
                    self.errors.append(f"tkeep {keep:#x} not whole dwords from byte 0")
                self.data += int(self.tdata.value).to_bytes(len(self.tdata) // 8, "little")[:n]
                self.beats.append(n)
                if self.tlast.value:
                    self.lasts.append(len(self.data))
            ready = 0 if (self.pause is not None and next(self.pause)) else 1
            self.tready.value = ready


class PacketMonitor:
    """AXI4-Stream rules for the core's interfaces: tvalid stays high inside a packet, and a
    stalled beat does not change."""

    def __init__(self, dut, prefix, clk):
        self.name = prefix
        self.clk = clk
        self.sig = {s: getattr(dut, f"{prefix}_{s}") for s in
                    ("tdata", "tkeep", "tuser", "tlast", "tvalid", "tready")}
        self.errors = []
        self.packets = 0
        cocotb.start_soon(self._run())

    async def _run(self):
        in_pkt = False
        held = None
        s = self.sig
        while True:
            await RisingEdge(self.clk)
            try:
                valid = int(s["tvalid"].value)
                ready = int(s["tready"].value)
            except ValueError:
                continue
            if held is not None:
                now = tuple(s[k].value for k in ("tdata", "tkeep", "tuser", "tlast"))
                if not valid or now != held:
                    self.errors.append(f"stalled beat changed at {get_sim_time('ns')} ns")
            if in_pkt and not valid:
                self.errors.append(f"tvalid low inside a packet at {get_sim_time('ns')} ns")
            held = None
            if valid and not ready:
                held = tuple(s[k].value for k in ("tdata", "tkeep", "tuser", "tlast"))
            if valid and ready:
                last = int(s["tlast"].value)
                in_pkt = not last
                self.packets += last


class HostCompleter:
    """Answers the engine's memory reads in place of the root complex's own handler when a test
    asks for random splits, reordering across tags, black holes, or a host read latency (each
    read's completions leave latency_ns after the request arrives, as from a host's memory,
    reads overlapping). Otherwise it hands the request to the model unchanged."""

    def __init__(self, tb):
        self.tb = tb
        self.rc = tb.rc
        self.rng = random.Random(tb.seed ^ 0x5EED)
        self.split = False
        self.reorder = False
        self.latency_ns = 0
        self.holes = []          # (start, end, core timeout in ns or None)
        self.faults = []         # (start, end, kind): reads touching it fail, see fail_reads
        self.failed = []         # the read requests answered with an error
        self.dropped = []
        self.pending = []        # per request: list of completions still to send
        self.wake = Event()
        self.out_of_order = 0    # completions sent while an older request was unfinished
        self.completions = 0
        self.rc.register_rx_tlp_handler(TlpType.MEM_READ, self.handle)
        self.rc.register_rx_tlp_handler(TlpType.MEM_READ_64, self.handle)
        cocotb.start_soon(self._scheduler())

    def black_hole(self, start, size, core_timeout_ns=None):
        self.holes.append((start, start + size, core_timeout_ns))

    def fail_reads(self, start, size, kind):
        """Reads that touch [start, start + size) complete with an error: kind "ur"
        (Unsupported Request), "ca" (Completer Abort) or "poison" (data, poisoned)."""
        self.faults.append((start, start + size, kind))

    def _fault(self, tlp):
        for start, end, kind in self.faults:
            if tlp.address < end and start < tlp.address + tlp.length * 4:
                self.failed.append(tlp)
                if kind == "ur":
                    return [Tlp.create_ur_completion_for_tlp(tlp, PcieId(0, 0, 0))]
                if kind == "ca":
                    return [Tlp.create_ca_completion_for_tlp(tlp, PcieId(0, 0, 0))]
                cpl = Tlp.create_completion_data_for_tlp(tlp, PcieId(0, 0, 0))
                cpl.byte_count = tlp.length * 4
                cpl.lower_address = tlp.address & 0x7F
                cpl.set_data(bytes(tlp.length * 4))
                cpl.ep = True
                return [cpl]
        return None

    async def handle(self, tlp):
        for start, end, tmo in self.holes:
            if start <= tlp.address < end:
                self.dropped.append(tlp)
                if tmo is not None:
                    cocotb.start_soon(self._core_timeout(tlp, tmo))
                return
        fault = self._fault(tlp)
        if fault is not None:
            if self.split or self.reorder:
                self.pending.append(fault)
                self.wake.set()
            else:
                await self.rc.send(fault[0])
            return
        if not (self.split or self.reorder or self.latency_ns) or \
                not self.rc.mem_address_space.find_regions(tlp.address, tlp.length * 4):
            await self.rc.handle_mem_read_tlp(tlp)
            return
        data = await self.rc.mem_address_space.read(tlp.address, tlp.length * 4)
        cpls = self._completions(tlp, data)
        if self.latency_ns:
            cocotb.start_soon(self._after_latency(cpls))
            return
        self.pending.append(cpls)
        self.wake.set()

    async def _after_latency(self, cpls):
        await Timer(self.latency_ns, "ns")
        self.pending.append(cpls)
        self.wake.set()

    def _completions(self, tlp, data):
        rcb = 128 if self.rc.read_completion_boundary else 64
        mps = 128 << self.rc.max_payload_size
        cpls = []
        addr = tlp.address
        n = 0
        total = tlp.length * 4
        while n < total:
            # up to MPS, ending on an RCB boundary unless it is the end
            room = min(mps, total - n)
            if self.split:
                to_rcb = rcb - (addr % rcb)
                blocks = self.rng.randint(0, max(0, (room - to_rcb) // rcb))
                length = min(room, to_rcb + blocks * rcb)
            else:
                length = room if room == total - n else room - (addr + room) % rcb
            cpl = Tlp.create_completion_data_for_tlp(tlp, PcieId(0, 0, 0))
            cpl.byte_count = total - n
            cpl.lower_address = addr & 0x7F
            cpl.set_data(data[n:n + length])
            cpls.append(cpl)
            n += length
            addr += length
        return cpls

    async def _scheduler(self):
        while True:
            if not self.pending:
                self.wake.clear()
                await self.wake.wait()
                if self.reorder:
                    # let a few requests gather before answering in a shuffled order
                    await Timer(self.rng.randint(50, 400), "ns")
            k = self.rng.randrange(len(self.pending)) if self.reorder else 0
            if k:
                self.out_of_order += 1
            cpl = self.pending[k].pop(0)
            if not self.pending[k]:
                self.pending.pop(k)
            self.completions += 1
            await self.rc.send(cpl)

    async def _core_timeout(self, req, delay_ns):
        """What the hard core does when a read gets no completion: it reports the request on the
        RC interface with error code 1001 (PG156), and frees the tag. The model has no timer."""
        await Timer(delay_ns, "ns")
        dev = self.tb.dev
        cpl = Tlp_us()
        cpl.fmt_type = TlpType.CPL
        cpl.tag = req.tag
        cpl.requester_id = req.requester_id
        cpl.completer_id = PcieId(0, 0, 0)
        cpl.byte_count = req.length * 4
        cpl.lower_address = req.address & 0x7F
        cpl.error_code = ErrorCode.TIMEOUT
        cpl.request_completed = True
        dev.active_request[req.tag] = None
        dev.tag_available_count = dev.get_available_tag_count()
        dev.cpld_credit_count = max(dev.cpld_credit_count - req.get_data_credits(), 0)
        dev.cpld_credit_released.set()
        dev.rx_buf_cplh_fc_count += 1
        dev.rx_buf_cpld_fc_count += 1
        dev.rc_queue.put_nowait(cpl)


def pause_pattern(rng, busy=0.3, burst=8):
    """An endless pause pattern: runs of stalls and runs of free clocks."""
    while True:
        stall = rng.random() < busy
        for _ in range(rng.randint(1, burst)):
            yield stall


def pattern_bytes(seed, words):
    """The generator's counter pattern: word n = seed + n (mod 2**32), little-endian."""
    return b"".join(struct.pack("<I", (seed + n) & 0xFFFFFFFF) for n in range(words))


# ---- the engine's own request stream (mprace_dma_pkg: a PCIe TLP header in a 4-dword slot, then
# the payload), for the unit testbenches of the requesters, which play the rest of the engine

def req_tlp(frame):
    """A memory request TLP of the engine's request stream (one AXI4-Stream frame of dwords): the
    header's fields and the payload after the 4-dword slot. Checks the header: a memory
    request in the 4-dword form the core always writes (mprace_dma_pkg), byte enables of whole
    dwords."""
    d = list(frame.tdata)
    fmt, typ = d[0] >> 29, (d[0] >> 24) & 0x1F
    assert typ == 0 and fmt in (0b001, 0b011), f"not a 4-dword memory request: {d[0]:#010x}"
    addr = (d[2] << 32) | (d[3] & ~3)
    dwords = (d[0] & 0x3FF) or 1024
    first_be, last_be = d[1] & 0xF, (d[1] >> 4) & 0xF
    assert first_be == 0xF and last_be == (0xF if dwords > 1 else 0), \
        f"byte enables {first_be:#x}/{last_be:#x} for {dwords} dwords"
    return dict(addr=addr, dwords=dwords, write=bool(fmt & 2), tag=(d[1] >> 8) & 0xFF,
                data=d[4:])


# The widths the units behind the RC adapter are tested at: 256 bits, 512 bits, and 512 bits
# with RC straddling ("512s").
WIDTHS = ("256", "512", "512s")


def width_generics(width):
    """The generics of a unit testbench for one of WIDTHS."""
    return {"data_w_g": int(width.rstrip("s")), "straddle_g": str(width.endswith("s")).lower()}


def rc_completion(addr, payload, remaining, done, tag, err=0):
    """A requester completion as the core delivers it on RC, as dwords: the descriptor (lower
    address, error code, bytes of the request still to come including these, request
    completed; dword count; tag), then the payload."""
    return [(addr & 0xFFF) | (err << 12) | ((remaining & 0x1FFF) << 16) | (int(done) << 30),
            len(payload), tag] + list(payload)


class RcDriver:
    """Plays the core's requester-completion interface for the unit testbenches: completions
    (lists of dwords from rc_completion) packed into beats as the core may pack them, holding
    each beat until tready takes it.
      * Without straddling a completion starts in lane 0 of a beat; tlast marks its last beat.
      * With straddling (512 bits, PG213's 2-TLP RC straddle) a completion may also start in
        lane 8 of the beat in which the one before ended (in lanes 0..7), or in lane 8 of an
        otherwise empty beat; the sideband's is_sop/is_eop with their pointers mark starts and
        ends, and tlast stays 0, as in cocotbext-pcie's model.
    `idle` is the probability of an idle beat (also inside a completion) and, with straddling,
    of leaving lane 8 free where a completion could start, and of starting one there."""

    SOP, SOP_PTR, EOP, EOP_PTR = 64, 68, 76, 80     # PG213 RC tuser fields at 512 bits

    def __init__(self, dut, prefix, clk, straddle=False, rng=None, idle=0.0):
        self.bus = {n: getattr(dut, f"{prefix}_{n}")
                    for n in ("tdata", "tkeep", "tuser", "tlast", "tvalid", "tready")}
        self.clk = clk
        self.lanes = len(self.bus["tkeep"])
        self.straddle = straddle
        assert not straddle or self.lanes == 16, "RC straddling: 512 bits only"
        self.rng = rng or random.Random(0)
        self.idle = idle
        self.queue = collections.deque()
        self.cur, self.off = None, 0
        self.bus["tvalid"].value = 0
        self.sent = 0
        self.straddled = 0       # beats that carried two completions
        cocotb.start_soon(self._run())

    async def send(self, words):
        self.queue.append(list(words))
        self.sent += 1

    def check_straddled(self):
        """With straddling, a test that sent a few completions must have had beats with two."""
        assert not self.straddle or self.sent < 8 or self.straddled, \
            f"{self.sent} completions, no beat carried two"

    def _chance(self, p):
        return p > 0 and self.rng.random() < p

    def _next_beat(self):
        if (self.cur is None and not self.queue) or self._chance(self.idle):
            return None
        half = self.lanes // 2
        cont = self.cur is not None
        data = keep = user = last = 0
        sops, eops = [], []
        pos = 0
        while pos < self.lanes:
            if self.cur is None:
                if not self.queue:
                    break
                if pos > 0:
                    # another completion in the same beat: only straddled, only in lane 8
                    if not self.straddle or pos > half or self._chance(self.idle):
                        break
                    pos = half
                elif self.straddle and self._chance(self.idle):
                    pos = half
                self.cur, self.off = self.queue.popleft(), 0
                sops.append(pos)
            n = min(self.lanes - pos, len(self.cur) - self.off)
            for k in range(n):
                data |= self.cur[self.off + k] << (32 * (pos + k))
                keep |= 1 << (pos + k)
            pos += n
            self.off += n
            if self.off == len(self.cur):
                eops.append(pos - 1)
                self.cur = None
                last = 1
                if not self.straddle:
                    break
        if self.lanes == 16:
            for i, lane in enumerate(sops):
                user |= (1 << (self.SOP + i)) | ((lane // 4) << (self.SOP_PTR + 2 * i))
            for i, lane in enumerate(eops):
                user |= (1 << (self.EOP + i)) | (lane << (self.EOP_PTR + 4 * i))
        if cont + len(sops) == 2:
            self.straddled += 1
        return data, keep, user, 0 if self.straddle else last

    async def _run(self):
        beat = None
        while True:
            await RisingEdge(self.clk)
            if beat is not None and self.bus["tready"].value == 1:
                beat = None
            if beat is None:
                beat = self._next_beat()
                if beat is None:
                    self.bus["tvalid"].value = 0
                    continue
                for name, value in zip(("tdata", "tkeep", "tuser", "tlast"), beat):
                    self.bus[name].value = value
                self.bus["tvalid"].value = 1


def rcb_cut(addr, nbytes, rcb, rng):
    """Bytes of the next completion of a read of nbytes at addr: up to a read-completion
    boundary chosen at random (each one ends it with probability 1/2), or all of it."""
    end = addr
    while True:
        end = (end // rcb + 1) * rcb
        if end >= addr + nbytes or rng.random() < 0.5:
            return min(end, addr + nbytes) - addr
