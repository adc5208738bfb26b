"""The engine stays synthesizable: GHDL's synthesis (ghdl --synth) elaborates mprace_dma_top into
a netlist without errors and without inferring a latch. A rough resource estimate from Yosys
is made by yosys_estimate.py in this directory (not part of the suite)."""
import subprocess

import hdl_runner


def ghdl_synth(extra=()):
    work = hdl_runner.build_root() / "synth"
    work.mkdir(parents=True, exist_ok=True)
    files = [str(f) for f in hdl_runner.SOURCES]
    subprocess.run(["ghdl", "-a", "--std=08", f"--workdir={work}"] + files, check=True,
                   capture_output=True, text=True)
    return subprocess.run(["ghdl", "--synth", "--std=08", f"--workdir={work}", *extra,
                           "mprace_dma_top"], capture_output=True, text=True)


def test_ghdl_synth():
    res = ghdl_synth()
    assert res.returncode == 0, res.stderr[-2000:]
    assert "latch" not in res.stderr.lower(), res.stderr[-2000:]
    assert "entity mprace_dma_top" in res.stdout
    # the data rings became RAMs, not registers
    assert res.stderr.count('found RAM "g_bank') >= 8, res.stderr[-2000:]
