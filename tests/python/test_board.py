# SPDX-License-Identifier: GPL-2.0
"""Opening boards, their info and registers, and what a closed board does."""
import errno

import pytest

import mprace
from mprace import _spec


def test_list_names_the_virtual_board():
    names = mprace.list()
    assert "emu:" in names and "sim:" in names


def test_open_from_environment(monkeypatch):
    monkeypatch.setenv("PCIDRIVER_DEVICE", "emu:link=gen4x16")
    with mprace.open() as b:
        assert b.info["backend"] == "emu"
        assert "gen4x16" in b.info["name"]


def test_info(board):
    i = board.info
    assert i["magic"] == _spec.MAGIC
    assert i["version"] == (_spec.VERSION_MAJOR, _spec.VERSION_MINOR)
    assert i["datapath_bytes"] in (32, 64)
    assert (i["vendor"], i["device"]) == (0x10EE, 0x7038)
    assert "emu" in repr(board)


def test_registers_by_name_and_offset(board):
    assert board.regs["MAGIC"] == _spec.MAGIC
    assert board.regs["magic"] == board.regs[0]
    board.regs["SCRATCH"] = 0xCAFE1234
    assert board.regs[_spec.REGISTERS["SCRATCH"][0]] == 0xCAFE1234
    dump = board.regs.dump()
    assert dump["SCRATCH"] == 0xCAFE1234 and len(dump) == len(_spec.REGISTERS)
    assert "C2H_CONTROL" in dump


@pytest.mark.parametrize("key, exc", [("NOPE", KeyError), (2, ValueError), (4096, ValueError),
                                      (-4, ValueError), (1.0, TypeError), (True, TypeError)])
def test_bad_register_keys(board, key, exc):
    with pytest.raises(exc):
        board.regs[key]


@pytest.mark.parametrize("value, exc", [(-1, ValueError), (1 << 32, ValueError), ("1", TypeError)])
def test_bad_register_values(board, value, exc):
    with pytest.raises(exc):
        board.regs["SCRATCH"] = value


def test_no_such_board():
    with pytest.raises(mprace.NoBoardError) as e:
        mprace.open("/dev/fpga97")
    assert e.value.errno == errno.ENODEV
    assert isinstance(e.value, OSError)


def test_bad_options_are_oserror_einval():
    with pytest.raises(OSError) as e:
        mprace.open("emu:link=gen9x99")
    assert e.value.errno == errno.EINVAL and "link" in str(e.value)


def test_bad_name_type():
    with pytest.raises(TypeError):
        mprace.open(7)


def test_closed_board_raises(board):
    board.close()
    board.close()  # idempotent
    assert board.closed and "closed" in repr(board)
    for call in (lambda: board.info, lambda: board.regs["MAGIC"], lambda: board.alloc(16),
                 lambda: board.route(source="pattern"), lambda: board.checker):
        with pytest.raises(ValueError, match="closed"):
            call()


def test_routing_and_test_logic(board):
    assert board.route(source="pattern", sink="checker") == ("pattern", "checker")
    assert board.route(sink="loopback") == ("pattern", "loopback")
    with pytest.raises(ValueError):
        board.route(source="nowhere")
    board.reset_checker(5)
    assert board.checker == (0, 0)
    with pytest.raises(ValueError):
        board.pattern(seed=-1)


def test_typed_and_documented():
    import pathlib
    pkg = pathlib.Path(mprace.__file__).parent
    stub = (pkg / "_core.pyi").read_text()
    assert "class Buffer" in stub and "class Chunk" in stub and "def bus_address" in stub
    assert (pkg / "py.typed").exists()
    for obj in (mprace.Board, mprace.Board.read, mprace.Board.stream, mprace.Buffer, mprace.Chunk,
                mprace.Transfer.wait, mprace.EngineError, mprace.open):
        assert obj.__doc__ and len(obj.__doc__) > 20, obj


def test_every_name_of_all_exists():
    """`from mprace import *` works in every build (with or without CUDA and UCX)."""
    names = {}
    exec("from mprace import *", names)
    assert set(mprace.__all__) <= set(names)
