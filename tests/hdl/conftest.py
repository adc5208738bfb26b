# SPDX-License-Identifier: GPL-2.0
"""pytest setup of the HDL suite: the PCIe environment and the RTL's source list live with the
co-simulation runtime (hdl/cosim: pcie_env.py, rtl_build.py) and are imported from there; the
simulator inherits sys.path through PYTHONPATH."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hdl" / "cosim"))
