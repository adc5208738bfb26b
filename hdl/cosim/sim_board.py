# SPDX-License-Identifier: GPL-2.0
"""The board behind libpcidriver's "sim:" device (docs/cosim.md): the RTL engine (mprace_dma_top)
between cocotbext-pcie's UltraScalePcieDevice and RootComplex, as in the HDL suite, driven by an
application instead of a test.

launch.py starts GHDL with this module. Two sockets, inherited as file descriptors, connect it to
the application's libpcidriver (vboard/src/sim_backend.c):
  * requests: register reads and writes (TLPs on CQ/CC), config space, quit. Answered in order.
  * device:   what the engine asks of the host: memory reads (answered by the application from
    the buffers it handed out, or refused: an Unsupported Request, as an IOMMU fault), memory
    writes, and MSI messages. Simulated time stands still while the application answers.
The messages are wire.py's (checked against sim_backend.c by tests/vboard/sim-wire.sh). The simulation ends when either socket closes (the application closed the device
or died): nothing outlives it.
"""
import os
import random
import select
import socket
import struct

import cocotb
from cocotb.triggers import Timer
from cocotbext.axi.address_space import Region
from cocotbext.pcie.core.tlp import Tlp
from cocotbext.pcie.core.utils import PcieId

from pcie_env import TB, HostCompleter, S, SPEC  # the PCIe environment (next to this file)
from wire import HDR, REQ_RD32, REQ_WR32, REQ_CFGRD, REQ_CFGWR, REQ_QUIT  # the socket protocol
from wire import DEV_MEMRD, DEV_MEMWR, DEV_MSI, DEV_HELLO, HOST_BASE

HOST_SIZE = 1 << 56


def opt(name, default):
    return int(os.environ.get(f"MPRACE_SIM_{name}", str(default)), 0)


class App:
    """The application at the other end of the sockets."""

    def __init__(self, req_fd, dev_fd):
        self.req = socket.socket(fileno=req_fd)
        self.dev = socket.socket(fileno=dev_fd)

    @staticmethod
    def _recv(sock, n):
        buf = bytearray()
        while len(buf) < n:
            part = sock.recv(n - len(buf))
            if not part:
                os._exit(0)      # the application is gone: so is the board
            buf += part
        return bytes(buf)

    def _send(self, sock, data):
        try:
            sock.sendall(data)
        except OSError:
            os._exit(0)

    def mem_read(self, addr, length):
        """Host memory at bus address addr, or None where it is not mapped for the device."""
        self._send(self.dev, HDR.pack(DEV_MEMRD, length, addr))
        status = struct.unpack("<i", self._recv(self.dev, 4))[0]
        return self._recv(self.dev, length) if status == 0 else None

    def mem_write(self, addr, data):
        self._send(self.dev, HDR.pack(DEV_MEMWR, len(data), addr) + bytes(data))

    def msi(self, vector):
        self._send(self.dev, HDR.pack(DEV_MSI, vector, 0))

    def pending(self):
        return bool(select.select([self.req], [], [], 0)[0])

    def request(self):
        op, length, addr = HDR.unpack(self._recv(self.req, HDR.size))
        data = self._recv(self.req, length) if op == REQ_CFGWR else b""
        return op, length, addr, data

    def reply(self, data):
        self._send(self.req, data)


class AppMemory(Region):
    """The application's memory as the root complex sees it (memory writes land here)."""

    def __init__(self, app):
        super().__init__(HOST_SIZE)
        self.app = app

    async def read(self, address, length, **kwargs):
        data = self.app.mem_read(address, length)
        if data is None:
            raise ValueError(f"no host memory mapped at {address:#x}")
        return data

    async def write(self, address, data, **kwargs):
        self.app.mem_write(address, data)


class AppCompleter(HostCompleter):
    """Answers the engine's memory reads from the application's memory: an address it did not
    hand out is an Unsupported Request. Split and reordered completions as in the HDL suite."""

    def __init__(self, tb, app):
        super().__init__(tb)
        self.app = app

    async def handle(self, tlp):
        data = self.app.mem_read(tlp.address, tlp.length * 4)
        if data is None:
            cpls = [Tlp.create_ur_completion_for_tlp(tlp, PcieId(0, 0, 0))]
        else:
            cpls = self._completions(tlp, data)
        if self.split or self.reorder:
            self.pending.append(cpls)
            self.wake.set()
        else:
            for cpl in cpls:
                await self.rc.send(cpl)


@cocotb.test()
async def board(dut):
    fds = [int(x) for x in os.environ["MPRACE_SIM_FDS"].split(",")]
    app = App(*fds)
    msi = opt("MSI", 4)
    tb = TB(dut, mps=opt("MPS", 256), mrrs=opt("MRRS", 512), msi_count=msi,
            seed=opt("SEED", 1), monitor=False)
    tb.completer = AppCompleter(tb, app)
    tb.completer.split = bool(opt("SPLIT", 0))
    tb.completer.reorder = bool(opt("REORDER", 0))
    tb.rc.mem_address_space.register_region(AppMemory(app), HOST_BASE, offset=None)
    busy = opt("PAUSE", 0) / 100     # backpressure on the block's streams
    if busy:
        tb.pause_block(random.Random(opt("SEED", 1) ^ 0xBAC), busy)
    ids = SPEC["ids"]            # what the PCIe IP of a board is configured with
    fn = tb.dev.functions[0]
    fn.vendor_id, fn.device_id, fn.class_code = ids["vendor"], ids["device"], ids["class"]
    fn.subsystem_vendor_id, fn.subsystem_id = ids["subsystem_vendor"], ids["subsystem_device"]
    tb.h2c.tready.value = 1      # no user logic: H2C data offered to the user side is taken
    await tb.init(mem_size=4096)
    granted = len(tb.msi_vectors) if hasattr(tb.msi_vectors, "__len__") else int(tb.msi_vectors)
    for k in range(granted):
        tb.pdev.request_irq(k, _msi_sender(app, k))
    poll_ns = opt("POLL_NS", 200)

    app.reply(HDR.pack(DEV_HELLO, granted, S.engine["bar0_size"]))
    while True:
        if not app.pending():
            await Timer(poll_ns, "ns")
            continue
        op, length, addr, data = app.request()
        if op == REQ_RD32:
            try:
                value = await tb.bar.read_dword(addr)
            except Exception:               # no completion: what a CPU reads then
                value = 0xFFFFFFFF
            app.reply(struct.pack("<I", value))
        elif op == REQ_WR32:
            await tb.bar.write_dword(addr, length)
        elif op == REQ_CFGRD:
            cfg = await tb.rc.config_read(tb.pdev.pcie_id, addr, length)
            app.reply(struct.pack("<i", 0) + bytes(cfg))
        elif op == REQ_CFGWR:
            await tb.rc.config_write(tb.pdev.pcie_id, addr, data)
            app.reply(struct.pack("<i", 0))
        else:                               # REQ_QUIT or a message we do not know
            os._exit(0)


def _msi_sender(app, k):
    async def handler():
        app.msi(k)
    return handler
