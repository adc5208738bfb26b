#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The engine's core names no vendor's interface: outside the Xilinx adapters
# (hdl/rtl/mprace_pcie_us_*.vhd) and the Xilinx top (mprace_dma_top.vhd), no RTL file uses the
# Xilinx package or mentions an AXI4-Stream sideband (tuser), a PG023/PG156/PG213 interface,
# descriptor or sideband field. TAP: one test per file.
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
rtl=$top_srcdir/hdl/rtl
pattern='tuser|PG0?23|PG156|PG213|axis_(rq|rc|cq|cc)_|cfg_interrupt|is_sop|is_eop|rq_desc|rc_cpl_err|_user_w\(|RC_ERR_|REQ_MEM_|use work\.mprace_pcie_us_pkg'
files=
for f in "$rtl"/*.vhd; do
	case $(basename "$f") in mprace_pcie_us_*|mprace_dma_top.vhd) continue ;; esac
	files="$files $f"
done
[ -n "$files" ] || { echo "Bail out! no core RTL in $rtl"; exit 1; }
echo "1..$(echo $files | wc -w)"
n=0
status=0
for f in $files; do
	n=$((n + 1))
	hits=$(grep -n -i -E "$pattern" "$f" | head -n 3 | tr '\n' ' ')
	if [ -z "$hits" ]; then
		echo "ok $n - $(basename "$f") is vendor-neutral"
	else
		echo "not ok $n - $(basename "$f") names a Xilinx interface: $hits"
		status=1
	fi
done
exit $status
