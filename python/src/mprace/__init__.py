# SPDX-License-Identifier: LGPL-2.1-or-later
"""Boards with the mprace DMA engine from Python: registers, DMA buffers that are NumPy arrays
without a copy, transfers (blocking and asynchronous) and the engine's test logic.

    import mprace, numpy as np
    with mprace.open("emu:") as board:          # or "/dev/fpga0", "sim:", $PCIDRIVER_DEVICE
        buf = board.alloc(1024, np.uint32)      # kernel memory, usable as a NumPy array
        board.route(source="pattern")
        board.read(buf)                         # C2H: the board writes buf
        print(np.asarray(buf)[:4])

With CUDA: buf.cuda() is the buffer as a GPU array for CuPy/PyTorch (DLPack, no copy) and
board.gpu_stage() moves the board's data into their arrays (libbufmgr's FPGA -> host -> GPU stage).

docs/python.md is the guide and the reference. Errors are OSError subclasses carrying the errno
(NoBoardError, TransferTimeout, EngineError, CudaError) or ValueError/TypeError for bad arguments,
raised before anything reaches the board.
"""
from __future__ import annotations

import builtins
import errno
import math
import os
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _spec
from . import _core
from ._core import Buffer, Chunk, CudaError, EngineError, NoBoardError, TransferTimeout, _Board, _Stream, _Transfer
from ._core import list_devices as _list_devices

if _core.built_with_ucx:
    from ._core import NetChunk

__all__ = ["open", "list", "Board", "Buffer", "Transfer", "Stream", "Chunk", "GpuStage", "Registers",
           "NoBoardError", "TransferTimeout", "EngineError", "CudaError", "cuda_available",
           "cuda_unavailable_reason", "NetSender", "Receiver", "GpuReceiver", "GpuChunk", "network_available",
           "SOURCES", "SINKS"]
if _core.built_with_ucx:
    __all__.append("NetChunk")
__version__ = "0.1.0"

# TEST_CONTROL's values (spec: C2H_SOURCE, H2C_SINK)
SOURCES = {"user": 0, "pattern": 1, "loopback": 2}
SINKS = {"user": 0, "checker": 1, "loopback": 2}

_MEMORY = ("kernel", "user")


def list() -> List[str]:  # noqa: A001 - the name the docs promise
    """Device names: /dev/fpgaN (kernel devices) in order, then "emu:" and "sim:"."""
    return _list_devices()


def cuda_available() -> bool:
    """Whether this build has CUDA support and a CUDA GPU can be used here."""
    return _core.cuda_device_count() > 0


def cuda_unavailable_reason() -> str:
    """Why no CUDA GPU can be used ("" when one can): no CUDA in this build, no driver, no GPU."""
    return _core.cuda_unavailable_reason()


def network_available() -> bool:
    """Whether this build has the network stage (UCX): Board.net_sender and Receiver."""
    return bool(_core.built_with_ucx)


def _need_network():
    if not _core.built_with_ucx:
        raise OSError(errno.ENOSYS, "this build of mprace has no network stage (it was built without UCX)")


class _Closable:
    """What the objects over a C++ core share: close() (idempotent), closed, with-statements."""

    def __init__(self, core):
        self._core = core

    def close(self) -> None:
        self._core.close()

    @property
    def closed(self) -> bool:
        return self._core.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _OnGpu(_Closable):
    """A stage into GPU memory (GpuStage, GpuReceiver): its CUDA device."""

    @property
    def device(self) -> int:
        return self._core.device


class Receiver(_Closable):
    """The receiving side of the network stage (libbufmgr's bufmgr::net::Receiver), no board:
    listens on `listen` ("HOST:PORT", ":PORT"; port 0 picks a free one, see .port) for any
    number of senders, lends each whole chunk as a NetChunk (a zero-copy, read-only view) and
    gives the sender a credit back when you release it. Up to `window` chunks of at most
    `max_chunk` bytes per sender are in flight.

        with mprace.Receiver(":13337") as rx:
            for chunk in rx:                    # until every sender has ended (or was lost)
                with chunk:
                    process(np.asarray(chunk), chunk.offset)
    """

    def __init__(self, listen: str = ":0", window: int = 8, max_chunk: int = 4 << 20):
        _need_network()
        if not isinstance(listen, str):
            raise TypeError(f"listen is a str (\"HOST:PORT\" or \":PORT\"), not {type(listen).__name__}")
        for v, what in ((window, "window"), (max_chunk, "max_chunk")):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise TypeError(f"{what} is an int")
        if not 1 <= window <= _core.NET_MAX_WINDOW:
            raise ValueError(f"window is 1 .. {_core.NET_MAX_WINDOW} chunks, not {window}")
        if not 1 <= max_chunk <= _core.NET_MAX_CHUNK:
            raise ValueError(f"max_chunk is 1 .. {_core.NET_MAX_CHUNK} bytes, not {max_chunk}")
        from ._core import _NetReceiver
        self._core = _NetReceiver(listen, int(window), int(max_chunk))

    def __iter__(self) -> "Receiver":
        return self

    def __next__(self):
        c = self._core.next(-1.0)
        if c is None:
            raise StopIteration
        return c

    def next(self, timeout: Optional[float] = None):
        """The next whole chunk, waiting up to `timeout` seconds (None: no limit); None once every
        sender has ended or was lost with nothing left. Raises TransferTimeout after `timeout`,
        KeyboardInterrupt on Ctrl-C."""
        return self._core.next(_timeout(timeout))

    @property
    def port(self) -> int:
        """The port it listens on."""
        return self._core.port

    @property
    def connections(self) -> List[Dict[str, object]]:
        """Per sender connection: source, ended, lost, error, chunks, bytes, missing,
        duplicates, reordered, incomplete, end_sequence (docs/network.md)."""
        return self._core.connections()

    @property
    def drained(self) -> bool:
        """Some sender connected, and every one has ended or was lost with nothing left."""
        return self._core.drained

    @property
    def pending(self) -> int:
        """Chunks that arrived and were not handed out yet."""
        return self._core.pending

    @property
    def max_chunk(self) -> int:
        """The largest chunk it takes, in bytes."""
        return self._core.max_chunk

    def gpu(self, device: Optional[int] = None) -> "GpuReceiver":
        """network -> this host -> GPU (libbufmgr's bufmgr::net::ReceiverToGpu): from now on the
        chunks go into GPU memory through the returned GpuReceiver (see GpuReceiver.read), and
        next() raises EBUSY until it is closed. device: the CUDA device (default: the current
        one). Raises CudaError where no GPU can be used."""
        if device is not None and (not isinstance(device, (int, np.integer)) or isinstance(device, bool)
                                   or device < 0):
            raise ValueError("device is a CUDA device number >= 0, or None (the current one)")
        if not _core.built_with_cuda:
            raise CudaError(errno.ENODEV, _core.cuda_unavailable_reason())
        return GpuReceiver(self._core.gpu(-1 if device is None else int(device)))

    def close(self) -> None:
        """Releases the chunks still lent and stops listening (the memory stays while arrays
        view chunks). Idempotent."""
        super().close()


class GpuChunk(NamedTuple):
    """What GpuReceiver.read() put into GPU memory: the chunk's header (as NetChunk's) and its
    payload's size."""
    source: int
    sequence: int
    link_sequence: int
    timeframe: int
    offset: int
    nbytes: int
    connection: int


class GpuReceiver(_OnGpu):
    """network -> this host -> GPU (Receiver.gpu): the GPU's copy engine takes each chunk from
    the receiver's memory, where UCX landed it (registered with CUDA once: no CPU copy, no
    staging), into GPU memory.

        with mprace.Receiver(":5000") as rx, rx.gpu() as g:
            dst = cupy.empty(rx.max_chunk // 4, dtype=cupy.uint32)
            while (c := g.read(dst)) is not None:        # until every sender has ended
                process(dst[: c.nbytes // 4], c.offset)
    """

    def read(self, dst, timeout: Optional[float] = None) -> Optional[GpuChunk]:
        """The next whole chunk into dst, a C-contiguous CUDA array on the stage's device (a CuPy
        array, a PyTorch CUDA tensor: anything with __dlpack__) of at least the receiver's
        max_chunk bytes, so that any chunk fits; its copy runs after the work queued before on
        the default stream. Returns once the chunk is in dst (and its sender has its credit
        back): its header and size; None once every sender has ended or was lost with nothing
        left. Waits up to `timeout` seconds (None: no limit), then raises TransferTimeout;
        KeyboardInterrupt on Ctrl-C; ValueError for a dst too small or on another device
        (before any chunk is taken); CudaError for CUDA's errors."""
        _check_cuda_array(dst)
        got = self._core.read(dst, _timeout(timeout))
        return None if got is None else GpuChunk(*got)

    def close(self) -> None:
        """Frees its GPU buffers and unregisters the receiver's memory; the receiver hands chunks
        out through next() again. A read() in another thread ends (ValueError). Idempotent;
        Receiver.close() calls it."""
        super().close()

    def __repr__(self) -> str:
        return f"<mprace.GpuReceiver {'closed' if self.closed else f'CUDA device {self.device}'}>"


class NetSender(_Closable):
    """board -> network (Board.net_sender): libbufmgr's network stage; the board fills `count`
    user-memory DMA buffers of `buffer_bytes` in turn and each is sent as one chunk, from where
    the board wrote it, to the receivers."""

    def send(self, nbytes: int, timeout: Optional[float] = 10.0) -> int:
        """Moves the board's next `nbytes` to the receivers (whole timeframes to one receiver in
        turn); returns the bytes sent. A receiver's credits pace it: a slow receiver stalls the
        board, nothing is dropped. Raises OSError (ECONNRESET, ...) once a chunk's receiver has
        gone (chunks to the others go on; reconnect() after it restarted), TransferTimeout after
        `timeout` and KeyboardInterrupt on Ctrl-C (both abort it)."""
        if not isinstance(nbytes, (int, np.integer)) or isinstance(nbytes, bool):
            raise TypeError("nbytes is an int")
        _check_region(0, int(nbytes))
        return self._core.send(int(nbytes), _timeout(timeout))

    def finish(self) -> None:
        """Ends the stream now: every receiver sees its end (later sends fail)."""
        self._core.finish()

    def reconnect(self) -> None:
        """Connects anew to every receiver whose connection failed (one restarted at its
        address); the stream goes on (offsets and sequence numbers continue)."""
        self._core.reconnect()

    @property
    def stats(self) -> Dict[str, int]:
        """chunks, bytes, credit_waits (chunks that waited for a receiver), stream_offset,
        receivers, max_chunk."""
        return self._core.stats()

    def close(self) -> None:
        """Ends the stream at the receivers and frees the buffers (aborting a send another
        thread runs). Idempotent; Board.close() calls it."""
        super().close()


def open(name: Optional[str] = None) -> "Board":  # noqa: A001
    """Opens a board: "/dev/fpga0", "emu:OPTIONS", "sim:OPTIONS"; default $PCIDRIVER_DEVICE,
    else /dev/fpga0. Use it in a with-statement (or call close()). Raises NoBoardError."""
    return Board(name)


class Stream:
    """A continuous C2H acquisition (Board.stream): iterate for Chunks, in order."""

    def __init__(self, core: _Stream):
        self._core = core

    def __iter__(self) -> "Stream":
        return self

    def __next__(self) -> Chunk:
        c = self._core.next()
        if c is None:
            raise StopIteration
        return c

    def next(self) -> Optional[Chunk]:
        """The next filled buffer, waiting for it; None when the stream has ended. Ctrl-C stops
        the stream and raises KeyboardInterrupt; a failed transfer raises EngineError."""
        return self._core.next()

    def stop(self) -> None:
        """Stops the stream (aborting what is in flight); chunks still lent are released.
        Idempotent."""
        self._core.stop()

    @property
    def stopped(self) -> bool:
        return self._core.stopped

    @property
    def stats(self) -> Dict[str, int]:
        """buffers and bytes delivered, overruns and dropped_bytes (overflow="drop"),
        backpressure (times the board waited for a free buffer, overflow="block")."""
        return self._core.stats()

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class GpuStage(_OnGpu):
    """board -> host -> GPU (Board.gpu_stage): libbufmgr's CUDA stage, `count` user-memory DMA
    buffers of `buffer_bytes` registered with CUDA once; the board fills one buffer while the
    GPU's copy engine moves the one before into GPU memory."""

    def read(self, dst, nbytes: Optional[int] = None, timeout: Optional[float] = 10.0) -> int:
        """C2H into GPU memory: the board's next `nbytes` (default: all of dst) land in dst, a
        C-contiguous CUDA array on the stage's device (a CuPy array, a PyTorch CUDA tensor:
        anything with __dlpack__). Returns the bytes moved (fewer only when the board ended a
        packet). Raises as Board.read; KeyboardInterrupt on Ctrl-C (the read is aborted)."""
        _check_cuda_array(dst)
        if nbytes is None:
            nbytes = _dlpack_nbytes(dst)
        if not isinstance(nbytes, (int, np.integer)) or isinstance(nbytes, bool):
            raise TypeError("nbytes is an int")
        _check_region(0, int(nbytes))
        return self._core.read(dst, int(nbytes), _timeout(timeout))

    def close(self) -> None:
        """Frees its buffers (aborting a read another thread runs). Idempotent; Board.close()
        calls it."""
        super().close()

    @property
    def buffer_bytes(self) -> int:
        return self._core.buffer_bytes

    @property
    def count(self) -> int:
        return self._core.count

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"CUDA device {self.device}"
        return f"<mprace.GpuStage {self.count} x {self.buffer_bytes} bytes, {state}>"


def _check_cuda_array(dst) -> None:
    """TypeError unless dst has __dlpack__, ValueError unless it is in CUDA device memory."""
    if not hasattr(dst, "__dlpack__"):
        raise TypeError(f"dst is a CUDA array with __dlpack__ (CuPy, PyTorch), not {type(dst).__name__}")
    dev = dst.__dlpack_device__()
    if dev[0] != 2:  # kDLCUDA
        raise ValueError(f"dst is not in CUDA device memory (its DLPack device is {tuple(dev)})")


def _dlpack_nbytes(a) -> int:
    n = getattr(a, "nbytes", None)
    if n is None:  # a PyTorch tensor
        n = a.numel() * a.element_size()
    return int(n)


def _region(buf) -> Tuple[Buffer, int, int]:
    """(the Buffer, byte offset, byte length) of a Buffer or of a C-contiguous NumPy view of one."""
    if isinstance(buf, Buffer):
        return buf, 0, buf.nbytes
    if not isinstance(buf, np.ndarray):
        raise TypeError(f"expected an mprace.Buffer or a NumPy view of one, not {type(buf).__name__}")
    base = buf.base
    while base is not None and not isinstance(base, Buffer):
        # NumPy's views chain through .base; an array over the buffer protocol ends in a
        # memoryview whose .obj is the Buffer
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    if base is None:
        raise ValueError("this array is not a view of an mprace.Buffer (Board.alloc or Board.wrap make one)")
    if not buf.flags.c_contiguous:
        raise ValueError("a transfer needs a contiguous region: this view is strided")
    offset = buf.__array_interface__["data"][0] - base.address
    if offset < 0 or offset + buf.nbytes > base.nbytes:
        raise ValueError("the view lies outside its buffer")
    return base, offset, buf.nbytes


def _check_region(offset: int, length: int):
    g = _spec.GRANULE
    if length == 0:
        raise ValueError("a transfer of 0 bytes")
    if offset % g or length % g:
        raise ValueError(f"offset ({offset}) and length ({length}) must be multiples of {g} bytes")


class Transfer:
    """A transfer started by Board.read_async / write_async."""

    def __init__(self, core: _Transfer, length: int):
        self._core = core
        self.length = length

    def wait(self, timeout: Optional[float] = None) -> int:
        """Waits for the end (timeout in seconds, None: no limit) and returns the bytes moved.
        Raises EngineError when it failed, TransferTimeout after `timeout` (it is aborted),
        KeyboardInterrupt on Ctrl-C (it is aborted)."""
        return self._core.wait(_timeout(timeout))

    @property
    def done(self) -> bool:
        """Whether it finished (successfully or not), without waiting."""
        return self._core.done()

    def abort(self) -> bool:
        """Cancels it (it ends with ECANCELED); False if it had already finished."""
        return self._core.abort()

    @property
    def result(self) -> Dict[str, object]:
        """done, error (errno), engine_error (code), engine_error_name, bytes, end_of_packet."""
        return self._core.result()


class Registers:
    """BAR0 registers by name (board.regs["SCRATCH"], case-insensitive, the spec's names) or
    byte offset (board.regs[0x14])."""

    def __init__(self, board: "Board"):
        self._board = board

    @staticmethod
    def offset(key: Union[str, int]) -> int:
        if isinstance(key, str):
            info = _spec.REGISTERS.get(key.upper())
            if info is None:
                raise KeyError(f"no register {key!r} (names: {', '.join(_spec.REGISTERS)})")
            return info[0]
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            key = int(key)
            if key < 0 or key >= _spec.BAR0_SIZE or key % 4:
                raise ValueError(f"register offset {key:#x}: a multiple of 4 below {_spec.BAR0_SIZE:#x}")
            return key
        raise TypeError(f"a register is a name or an offset, not {type(key).__name__}")

    def __getitem__(self, key: Union[str, int]) -> int:
        return self._board._core.read_register(self.offset(key))

    def __setitem__(self, key: Union[str, int], value: int):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise TypeError("a register value is an int")
        if not 0 <= int(value) <= 0xFFFFFFFF:
            raise ValueError(f"register value {value}: 0 .. 0xFFFFFFFF")
        self._board._core.write_register(self.offset(key), int(value))

    def __iter__(self) -> Iterator[str]:
        return iter(_spec.REGISTERS)

    def __len__(self) -> int:
        return len(_spec.REGISTERS)

    def dump(self) -> Dict[str, int]:
        """Every named register's value (reads have no side effects in the spec's map)."""
        return {name: self[name] for name in _spec.REGISTERS}


class Board(_Closable):
    """An open board. Use open() in a with-statement; close() frees its buffers' device
    mappings and the engine (see docs/python.md, 'Lifetime')."""

    def __init__(self, name: Optional[str] = None):
        if name is None:
            name = os.environ.get("PCIDRIVER_DEVICE", "")
        if not isinstance(name, str):
            raise TypeError(f"a device name is a str, not {type(name).__name__}")
        super().__init__(_Board(name))
        self.regs = Registers(self)

    # -- lifetime
    def close(self) -> None:
        """Aborts running transfers, destroys the engine, unmaps every buffer from the device.
        Idempotent. Arrays over user memory stay valid; see docs/python.md, 'Lifetime'."""
        super().close()

    def __repr__(self) -> str:
        if self.closed:
            return "<mprace.Board closed>"
        i = self.info
        return f"<mprace.Board {i['name']!r} ({i['backend']}), engine {i['version'][0]}.{i['version'][1]}>"

    @property
    def info(self) -> Dict[str, object]:
        """name, backend (kernel, emu, sim), PCI IDs, magic, version, caps, datapath_bytes,
        max_payload, max_read_request, irq_vectors, clock_mhz."""
        return self._core.info()

    # -- buffers
    def alloc(self, shape: Union[int, Sequence[int]], dtype=np.uint8, memory: str = "kernel") -> Buffer:
        """A DMA buffer of `shape` elements of `dtype`: "kernel" memory (one bus address,
        zeroed) or "user" memory (this process's, pinned, scatter-gather)."""
        if memory not in _MEMORY:
            raise ValueError(f"memory is 'kernel' or 'user', not {memory!r}")
        shape, dt = _shape_dtype(shape, dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        if nbytes <= 0:
            raise ValueError(f"a buffer of {nbytes} bytes")
        if nbytes % _spec.GRANULE:
            raise ValueError(f"a buffer of {nbytes} bytes: a multiple of {_spec.GRANULE} bytes")
        return self._core.alloc(nbytes, memory == "kernel", dt.char, dt.str, dt.itemsize, [*shape])

    def wrap(self, array: np.ndarray) -> Buffer:
        """Pins an existing NumPy array as user memory (C-contiguous, writeable, its address and
        size multiples of 4 bytes); the array stays alive and pinned while the buffer lives."""
        if not isinstance(array, np.ndarray):
            raise TypeError(f"wrap takes a NumPy array, not {type(array).__name__}")
        if not array.flags.c_contiguous or not array.flags.writeable:
            raise ValueError("wrap needs a C-contiguous, writeable array")
        addr = array.__array_interface__["data"][0]
        if addr % _spec.GRANULE or array.nbytes % _spec.GRANULE or array.nbytes == 0:
            raise ValueError(f"wrap needs an address and a size that are multiples of {_spec.GRANULE} bytes")
        _, dt = _shape_dtype(array.shape or (1,), array.dtype)
        return self._core.wrap(array, addr, array.nbytes, dt.char, dt.str, dt.itemsize, [*array.shape])

    # -- transfers
    def read(self, buf, timeout: Optional[float] = 10.0) -> int:
        """C2H: the board writes buf (a Buffer or a contiguous view of one). Returns the bytes
        moved. timeout in seconds (None: no limit)."""
        b, off, n = _region(buf)
        _check_region(off, n)
        return self._core.transfer(True, b, off, n, _timeout(timeout))

    def write(self, buf, timeout: Optional[float] = 10.0) -> int:
        """H2C: the board reads buf. Returns the bytes moved."""
        b, off, n = _region(buf)
        _check_region(off, n)
        return self._core.transfer(False, b, off, n, _timeout(timeout))

    def read_async(self, buf) -> Transfer:
        """Starts a C2H transfer into buf and returns its Transfer."""
        b, off, n = _region(buf)
        _check_region(off, n)
        return Transfer(self._core.start(True, b, off, n), n)

    def write_async(self, buf) -> Transfer:
        """Starts an H2C transfer from buf and returns its Transfer."""
        b, off, n = _region(buf)
        _check_region(off, n)
        return Transfer(self._core.start(False, b, off, n), n)

    def stream(self, buffer_bytes: int = 1 << 20, count: int = 8, dtype=np.uint8, memory: str = "kernel",
               overflow: str = "block", max_buffers: int = 0) -> Stream:
        """Starts a continuous C2H acquisition (libbufmgr's pooled stream) into `count` DMA
        buffers of `buffer_bytes` each, filled in turn while you consume them:

            with board.stream(buffer_bytes=1 << 20, count=8, dtype=np.uint32) as s:
                for chunk in s:
                    with chunk:
                        process(np.asarray(chunk))

        overflow "block" (the board waits for a free buffer: nothing lost) or "drop" (the
        newest buffer is refilled and counted in stats["overruns"]); max_buffers ends the
        stream after that many buffers (0: until stop()). No other transfer may run on the
        board meanwhile."""
        if memory not in _MEMORY:
            raise ValueError(f"memory is 'kernel' or 'user', not {memory!r}")
        if overflow not in ("block", "drop"):
            raise ValueError(f"overflow is 'block' or 'drop', not {overflow!r}")
        _, dt = _shape_dtype((1,), dtype)
        for v, what in ((buffer_bytes, "buffer_bytes"), (count, "count"), (max_buffers, "max_buffers")):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
                raise ValueError(f"{what} is an int >= 0")
        unit = np.lcm(_spec.GRANULE, dt.itemsize)
        if buffer_bytes <= 0 or buffer_bytes % unit:
            raise ValueError(f"buffer_bytes ({buffer_bytes}) must be a positive multiple of {unit}")
        if count < 2:
            raise ValueError("count: a stream needs at least 2 buffers")
        return Stream(self._core.stream(int(buffer_bytes), int(count), memory == "kernel", overflow == "drop",
                                        int(max_buffers), dt.char, dt.str, dt.itemsize))

    def gpu_stage(self, buffer_bytes: int = 1 << 20, count: int = 4, device: Optional[int] = None) -> GpuStage:
        """board -> host -> GPU through libbufmgr's CUDA stage (see GpuStage.read). device: the
        CUDA device (default: the current one). Raises CudaError where no GPU can be used."""
        for v, what in ((buffer_bytes, "buffer_bytes"), (count, "count")):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise TypeError(f"{what} is an int")
        if buffer_bytes <= 0 or buffer_bytes % _spec.GRANULE:
            raise ValueError(f"buffer_bytes ({buffer_bytes}) must be a positive multiple of {_spec.GRANULE}")
        if count < 2:
            raise ValueError("count: the stage needs at least 2 buffers")
        if device is not None and (not isinstance(device, (int, np.integer)) or isinstance(device, bool)
                                   or device < 0):
            raise ValueError("device is a CUDA device number >= 0, or None (the current one)")
        if not _core.built_with_cuda:
            raise CudaError(errno.ENODEV, _core.cuda_unavailable_reason())
        return GpuStage(self._core.gpu_stage(int(buffer_bytes), int(count), -1 if device is None else int(device)))

    def net_sender(self, to: Union[str, Sequence[str]], buffer_bytes: int = 1 << 20, count: int = 8,
                   source: int = 0, route: str = "round_robin", chunks_per_timeframe: int = 1,
                   connect_timeout: float = 5.0) -> NetSender:
        """board -> network through libbufmgr's network stage (see NetSender.send): connects to
        every receiver of `to` ("HOST:PORT" or a list of them; all must be listening) and waits
        for their credits. source: this sender's id in the chunk headers; route "round_robin"
        or "hash" (of the timeframe id) over the receivers, a timeframe being
        `chunks_per_timeframe` consecutive chunks. Raises OSError (ECONNREFUSED, ETIMEDOUT, ...)
        when a receiver cannot be reached, EMSGSIZE when one takes smaller chunks."""
        _need_network()
        if isinstance(to, str):
            to = [to]
        if not isinstance(to, (builtins.list, tuple)) or not to or not all(isinstance(t, str) for t in to):
            raise TypeError("to is \"HOST:PORT\" or a non-empty list of them")
        if route not in ("round_robin", "hash"):
            raise ValueError(f"route is 'round_robin' or 'hash', not {route!r}")
        for v, what in ((buffer_bytes, "buffer_bytes"), (count, "count"), (source, "source"),
                        (chunks_per_timeframe, "chunks_per_timeframe")):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise TypeError(f"{what} is an int")
        if buffer_bytes <= 0 or buffer_bytes % _spec.GRANULE:
            raise ValueError(f"buffer_bytes ({buffer_bytes}) must be a positive multiple of {_spec.GRANULE}")
        if count < 2:
            raise ValueError("count: the sender needs at least 2 buffers")
        if not 0 <= source <= 0xFFFF:
            raise ValueError("source is 0 .. 65535")
        if chunks_per_timeframe < 1:
            raise ValueError("chunks_per_timeframe must be >= 1")
        if (not isinstance(connect_timeout, (int, float)) or isinstance(connect_timeout, bool)
                or not 0 < connect_timeout < 1e6):  # NaN fails the comparison
            raise ValueError(f"connect_timeout is a number of seconds > 0 (below 1e6), not {connect_timeout!r}")
        return NetSender(self._core.net_sender(builtins.list(to), int(source), route == "hash", int(chunks_per_timeframe),
                                               int(buffer_bytes), int(count), float(connect_timeout)))

    # -- the engine's test logic (bring-up)
    def route(self, source: Optional[str] = None, sink: Optional[str] = None) -> Tuple[str, str]:
        """Sets (and returns) TEST_CONTROL: source user|pattern|loopback feeds C2H, sink
        user|checker|loopback takes H2C. None keeps the current one."""
        cur_src, cur_sink = self._core.routing()
        names_src = {v: k for k, v in SOURCES.items()}
        names_sink = {v: k for k, v in SINKS.items()}
        if source is not None and source not in SOURCES:
            raise ValueError(f"source is one of {', '.join(SOURCES)}, not {source!r}")
        if sink is not None and sink not in SINKS:
            raise ValueError(f"sink is one of {', '.join(SINKS)}, not {sink!r}")
        src = SOURCES[source] if source is not None else cur_src
        snk = SINKS[sink] if sink is not None else cur_sink
        if (src, snk) != (cur_src, cur_sink):
            self._core.set_routing(src, snk)
        return names_src[src], names_sink[snk]

    def pattern(self, seed: int = 0, rate: int = 0) -> None:
        """The pattern generator's first word and its rate limit in MB/s (0: unlimited)."""
        for v, what in ((seed, "seed"), (rate, "rate")):
            if not isinstance(v, (int, np.integer)) or not 0 <= int(v) <= 0xFFFFFFFF:
                raise ValueError(f"{what} is an int in 0 .. 0xFFFFFFFF")
        self._core.set_pattern(int(seed), int(rate))

    def reset_checker(self, seed: int = 0) -> None:
        """Restarts the checker's comparison at `seed` and clears its counts."""
        if not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) <= 0xFFFFFFFF:
            raise ValueError("seed is an int in 0 .. 0xFFFFFFFF")
        self._core.reset_checker(int(seed))

    @property
    def checker(self) -> Tuple[int, int]:
        """(words compared, mismatches) since the last reset_checker."""
        return self._core.checker()


def _timeout(t: Optional[float]) -> float:
    """Seconds for the core; -1: no limit (None, or infinity)."""
    if t is None:
        return -1.0
    if not isinstance(t, (int, float, np.integer, np.floating)) or isinstance(t, bool) or not t >= 0:
        raise ValueError(f"timeout is a number of seconds >= 0, or None, not {t!r}")  # NaN fails t >= 0
    return -1.0 if math.isinf(t) else float(t)


def _shape_dtype(shape, dtype) -> Tuple[Tuple[int, ...], np.dtype]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    if isinstance(shape, (str, bytes)) or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                                                   for s in (shape if hasattr(shape, "__iter__") else [None])):
        raise TypeError("shape is an int or a sequence of ints")
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError("shape is an int or a sequence of ints") from None
    if not shape or any(s <= 0 for s in shape):
        raise ValueError(f"shape {shape}: every dimension must be > 0")
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"dtype {dtype!r}: {e}") from None
    if dt.kind not in "uif" or dt.char not in "bBhHiIlLqQefd":
        raise TypeError(f"dtype {dt}: a DMA buffer holds integers or floats")
    return shape, dt.newbyteorder("=")
