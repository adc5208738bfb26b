#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Rough resource estimate of mprace_dma_top (or of the vendor-neutral core alone, --top
mprace_dma_core, or of an Intel top, --top mprace_dma_top_ptile|mprace_dma_top_htile): GHDL
synthesizes the VHDL to a Verilog netlist, Yosys maps it with synth_xilinx (UltraScale; for the
Intel tops a yardstick in the same units, not an Intel fit). Needs ghdl and yosys (Debian
packages); takes a few minutes.
Usage: yosys_estimate.py [--width 256|512] [--top TOP] [WORKDIR]

GHDL 2.0 writes its one-hot selections as `case` without a default, which Yosys would turn into
latches; they are complete, so a `default: x` is added before Yosys reads the netlist. The
simulation-only checks it keeps (`$fatal` of an assert: the Intel receive queue's overflow
check) are dropped, as synthesis drops them."""
import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "hdl" / "cosim"))
import rtl_build  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description="Yosys resource estimate of an engine top or its core")
    ap.add_argument("--width", type=int, choices=(256, 512), default=256,
                    help="datapath width (the generic data_w_g)")
    ap.add_argument("--top", choices=("mprace_dma_top", "mprace_dma_core", "mprace_dma_top_ptile",
                                      "mprace_dma_top_htile"), default="mprace_dma_top",
                    help="the engine with the Xilinx adapters, the core alone, or an Intel top")
    ap.add_argument("workdir", nargs="?", help="where the netlist and the log go")
    args = ap.parse_args()
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="mprace-synth-"))
    work.mkdir(parents=True, exist_ok=True)
    files = [str(f) for f in rtl_build.SOURCES]
    subprocess.run(["ghdl", "-a", "--std=08", f"--workdir={work}"] + files, check=True)
    net = subprocess.run(["ghdl", "--synth", "--std=08", f"--workdir={work}", "--out=verilog",
                          f"-gdata_w_g={args.width}", args.top], check=True, capture_output=True, text=True).stdout
    # an assert's check: "always @*" / "if (...)" / "$fatal(...);" -> the three lines go
    net = re.sub(r"\n\s*always @\*\n\s*if \([^\n]*\)\n\s*\$fatal\([^\n]*\);", "", net)
    lines, out, i = net.split("\n"), [], 0
    while i < len(lines):
        out.append(lines[i])
        if lines[i].strip() == "always @*" and lines[i + 1].strip().startswith("case"):
            j = i + 1
            while not lines[j].strip().startswith("endcase"):
                out.append(lines[j])
                j += 1
            block = "\n".join(lines[i + 1:j])
            m = re.search(r":\s*(\w+)\s*<=", block)
            if m and "default" not in block:
                out.append(f"      default: {m.group(1)} <= 'bx;")
            out.append(lines[j])
            i = j
        i += 1
    (work / f"{args.top}.v").write_text("\n".join(out))
    script = (f"read_verilog {args.top}.v; hierarchy -top {args.top}; "
              f"synth_xilinx -family xcu -top {args.top} -flatten; stat")
    log = subprocess.run(["yosys", "-q", "-p", script, "-l", "yosys.log"], cwd=work,
                         capture_output=True, text=True)
    text = (work / "yosys.log").read_text()
    stat = text[text.rfind(f"=== {args.top} ==="):]
    print(stat)
    cells = dict(re.findall(r"^\s+(\w+)\s+(\d+)$", stat, re.M))
    luts = sum(int(v) for k, v in cells.items() if re.fullmatch(r"LUT\d", k))
    ffs = sum(int(v) for k, v in cells.items() if k.startswith("FD"))
    print(f"{args.top} width {args.width}: LUTs {luts}  FFs {ffs}  RAMB18E2 {cells.get('RAMB18E2', 0)}  "
          f"RAMB36E2 {cells.get('RAMB36E2', 0)}  RAM32M16 {cells.get('RAM32M16', 0)}  "
          f"RAM64M8 {cells.get('RAM64M8', 0)}  latches {cells.get('LDCE', 0)}")
    return log.returncode


if __name__ == "__main__":
    sys.exit(main())
