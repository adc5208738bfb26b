# SPDX-License-Identifier: GPL-2.0
"""The RTL's source list (one place: the HDL suite, the co-simulation's launch.py and the
synthesis estimate read it) and the GHDL build and cocotb run of the HDL suite.

Paths are found from this file: hdl/cosim/../rtl and ../../spec, in the source tree and in an
installed data directory alike (share/mprace mirrors that layout). Build products go to
$MPRACE_HDL_BUILD (the test script points it into the build tree), one directory per
pytest-xdist worker and top level, never into the source tree.
"""
import os
import tempfile
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
RTL = TOP / "hdl" / "rtl"
SPEC_PKG = TOP / "spec" / "vhdl" / "engine_spec_pkg.vhd"   # generated from the spec

# in dependency order (GHDL analyses them in this order), after SPEC_PKG
RTL_FILES = [
    "mprace_dma_pkg.vhd", "mprace_pcie_us_pkg.vhd", "mprace_fifo.vhd", "mprace_dword_ring.vhd",
    "mprace_dma_req_mux.vhd", "mprace_pcie_us_rq.vhd", "mprace_pcie_us_cq_cc.vhd",
    "mprace_pcie_us_rc.vhd", "mprace_dma_msi.vhd", "mprace_pcie_us_irq.vhd", "mprace_pcie_avst_tx.vhd",
    "mprace_pcie_avst_credits.vhd",
    "mprace_pcie_avst_rx.vhd",
    "mprace_dma_regs.vhd", "mprace_dma_desc_fetch.vhd",
    "mprace_dma_c2h_src.vhd", "mprace_dma_wr.vhd", "mprace_dma_c2h.vhd", "mprace_dma_rd.vhd",
    "mprace_dma_h2c.vhd", "mprace_dma_patgen.vhd", "mprace_dma_checker.vhd",
    "mprace_dma_core.vhd", "mprace_dma_top.vhd", "mprace_dma_avst.vhd", "mprace_dma_top_ptile.vhd",
    "mprace_dma_top_htile.vhd",
]


SOURCES = [SPEC_PKG] + [RTL / f for f in RTL_FILES]


def build_root():
    base = os.environ.get("MPRACE_HDL_BUILD")
    if not base:
        base = os.path.join(tempfile.gettempdir(), f"mprace-hdl-{os.getuid()}")
    return Path(base) / os.environ.get("PYTEST_XDIST_WORKER", "main")


def run(toplevel, module, testcase, name, env=None, parameters=None, extra_sources=()):
    """Run cocotb test `testcase` of `module` against `toplevel` (with generics `parameters`);
    extra_sources are the test's own wrappers (paths). Raises if the test fails."""
    # imported here: the source list above serves tools without cocotb (yosys_estimate.py)
    from cocotb_tools.runner import get_runner
    runner = get_runner("ghdl")
    bdir = build_root() / toplevel
    sources = SOURCES + [Path(f) for f in extra_sources]
    runner.build(sources=sources, hdl_toplevel=toplevel,
                 build_dir=bdir, build_args=["--std=08"])
    extra = {"COCOTB_LOG_LEVEL": "WARNING", "PYTHONDONTWRITEBYTECODE": "1"}
    extra.update({k: str(v) for k, v in (env or {}).items()})
    test_dir = bdir / "runs" / name
    test_dir.mkdir(parents=True, exist_ok=True)
    runner.test(hdl_toplevel=toplevel, test_module=module, testcase=testcase,
                build_dir=bdir, test_dir=test_dir, extra_env=extra,
                parameters=parameters or {}, test_args=["--std=08", f"--workdir={bdir}"],
                plusargs=["--ieee-asserts=disable-at-0"] + os.environ.get("MPRACE_GHDL_RUNOPTS", "").split(),
                log_file=test_dir / "sim.log")
