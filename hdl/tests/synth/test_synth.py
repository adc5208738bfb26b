"""The engine stays synthesizable: GHDL's synthesis (ghdl --synth) elaborates mprace_dma_top into
a netlist without errors and without inferring a latch. A rough resource estimate from Yosys
is made by yosys_estimate.py in this directory (not part of the suite)."""
import subprocess

import hdl_runner


BOARD = hdl_runner.TOP / "hdl" / "board"


def ghdl_synth(extra=(), top="mprace_dma_top", more_sources=()):
    work = hdl_runner.build_root() / "synth"
    work.mkdir(parents=True, exist_ok=True)
    files = [str(f) for f in list(hdl_runner.SOURCES) + list(more_sources)]
    subprocess.run(["ghdl", "-a", "--std=08", f"--workdir={work}"] + files, check=True,
                   capture_output=True, text=True)
    return subprocess.run(["ghdl", "--synth", "--std=08", f"--workdir={work}", *extra, top],
                          capture_output=True, text=True)


def test_ghdl_synth():
    res = ghdl_synth()
    assert res.returncode == 0, res.stderr[-2000:]
    assert "latch" not in res.stderr.lower(), res.stderr[-2000:]
    assert "entity mprace_dma_top" in res.stdout
    # the data rings became RAMs, not registers
    assert res.stderr.count('found RAM "g_bank') >= 8, res.stderr[-2000:]


def test_board_wrapper_synth():
    """The board wrapper (hdl/board) synthesizes with the engine inside and exactly two black
    boxes: the PCIe block and the reference-clock buffer."""
    res = ghdl_synth(top="mprace_board_us_gen3x8",
                     more_sources=[BOARD / "mprace_board_us_gen3x8.vhd"])
    assert res.returncode == 0, res.stderr[-2000:]
    assert "latch" not in res.stderr.lower(), res.stderr[-2000:]
    unbound = [line for line in res.stderr.splitlines() if "is not bound" in line]
    assert len(unbound) == 2, unbound
    assert any('"pcie3_ultrascale_0"' in u for u in unbound)
    assert any('"ibufds_gte3"' in u.lower() for u in unbound)
    assert "entity mprace_board_us_gen3x8" in res.stdout
