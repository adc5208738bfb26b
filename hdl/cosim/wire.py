# SPDX-License-Identifier: GPL-2.0
"""The socket protocol between libpcidriver's "sim:" backend (vboard/src/sim_backend.c) and the
simulated board (sim_board.py): its one definition on this side. tests/vboard/sim-wire.sh
checks that the C side's header layout and numbers are these.

Every message starts with the same 16-byte header, little-endian: op (u8), 3 pad bytes,
len (u32), addr (u64); data, if any, follows it.
"""
import struct

HDR = struct.Struct("<B3xIQ")

# requests (application -> simulator), answered in order on the request socket
REQ_RD32 = 1       # addr: BAR0 offset; answer: u32
REQ_WR32 = 2       # addr: BAR0 offset, len: the value; posted, no answer
REQ_CFGRD = 3      # addr: config offset, len: bytes; answer: i32 status + bytes
REQ_CFGWR = 4      # addr, len, then len bytes; answer: i32 status
REQ_QUIT = 5

# device messages (simulator -> application) on the device socket; HELLO goes on the request
# socket, once, when the engine is out of reset (len: MSI vectors, addr: BAR0 size)
DEV_MEMRD = 1      # answer: i32 status (0, or -1: a fault) + len bytes if 0
DEV_MEMWR = 2      # then len bytes; no answer (a fault drops them)
DEV_MSI = 3        # len: the vector
DEV_HELLO = 4

HOST_BASE = 1 << 32    # the lowest bus address the application may hand out
MAX_DMA = 4096         # bytes of one memory read or write at most
