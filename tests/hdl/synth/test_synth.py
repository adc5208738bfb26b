# SPDX-License-Identifier: GPL-2.0
"""The engine stays synthesizable at both widths: GHDL's synthesis (ghdl --synth) elaborates
each top (Xilinx, Intel P-tile, Intel H-tile/L-tile) and each board wrapper into a netlist
without errors and without inferring a latch. A rough resource estimate from Yosys
is made by yosys_estimate.py in this directory (not part of the suite)."""
import subprocess

import pytest

import rtl_build


BOARD = rtl_build.TOP / "hdl" / "board"


def ghdl_synth(extra=(), top="mprace_dma_top", more_sources=()):
    work = rtl_build.build_root() / "synth"
    work.mkdir(parents=True, exist_ok=True)
    files = [str(f) for f in list(rtl_build.SOURCES) + list(more_sources)]
    subprocess.run(["ghdl", "-a", "--std=08", f"--workdir={work}"] + files, check=True,
                   capture_output=True, text=True)
    return subprocess.run(["ghdl", "--synth", "--std=08", f"--workdir={work}", *extra, top],
                          capture_output=True, text=True)


@pytest.mark.parametrize("width", [256, 512], ids=lambda w: f"w{w}")
def test_ghdl_synth(width):
    res = ghdl_synth([f"-gdata_w_g={width}"])
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.returncode == 0, res.stderr[-2000:]
    assert "latch" not in res.stderr.lower(), res.stderr[-2000:]
    assert "entity mprace_dma_top" in res.stdout
    # the data rings became RAMs, not registers: one bank per dword lane (GHDL names each
    # bank once for both rings)
    assert res.stderr.count('found RAM "g_bank') >= width // 32, res.stderr[-2000:]


@pytest.mark.parametrize("width", [256, 512], ids=lambda w: f"w{w}")
@pytest.mark.parametrize("top", ["mprace_dma_top_ptile", "mprace_dma_top_htile"])
def test_ghdl_synth_intel(top, width):
    """The Intel tops: a netlist without latches, no port left undriven."""
    res = ghdl_synth([f"-gdata_w_g={width}"], top=top)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "latch" not in res.stderr.lower(), res.stderr[-2000:]
    assert "no assignment for port" not in res.stderr, res.stderr[-2000:]
    assert f"entity {top}" in res.stdout


# board wrapper, its PCIe block and reference-clock buffer (black boxes; Intel's hard IPs take
# the reference clocks themselves)
BOARDS = {"mprace_board_us_gen3x8": ("pcie3_ultrascale_0", "ibufds_gte3"),
          "mprace_board_usp_gen3x16": ("pcie4_uscale_plus_0", "ibufds_gte4"),
          "mprace_board_s10_htile_gen3x8": ("pcie_s10_hip_avst_0",),
          "mprace_board_ptile_gen4x16": ("pcie_ptile_avst_0",)}


@pytest.mark.parametrize("board", list(BOARDS))
def test_board_wrapper_synth(board):
    """The board wrappers (hdl/board) synthesize with the engine inside and exactly the black
    boxes named: the PCIe block and, on Xilinx, the reference-clock buffer."""
    res = ghdl_synth(top=board, more_sources=[BOARD / f"{board}.vhd"])
    assert res.returncode == 0, res.stderr[-2000:]
    assert "latch" not in res.stderr.lower(), res.stderr[-2000:]
    unbound = [line for line in res.stderr.splitlines() if "is not bound" in line]
    boxes = BOARDS[board]
    assert len(unbound) == len(boxes), unbound
    for box in boxes:
        assert any(f'"{box}"' in u.lower() for u in unbound), unbound
    assert f"entity {board}" in res.stdout
