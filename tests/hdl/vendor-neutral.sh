#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The engine's core names no vendor's interface, and each vendor's front end names no other's:
#   Xilinx: the package mprace_pcie_us_pkg, an AXI4-Stream sideband (tuser), a PG023/PG156/PG213
#           interface, descriptor or sideband field; allowed in the Xilinx adapters
#           (mprace_pcie_us_*.vhd) and the Xilinx top (mprace_dma_top.vhd) only.
#   Intel:  the Avalon-ST hard IP's streams (rx_st_*, tx_st_*), configuration output (tl_cfg_*)
#           or MSI interface (app_msi_*); allowed in the Avalon-ST adapters (mprace_pcie_avst_*),
#           the part the Intel tops share (mprace_dma_avst.vhd) and those tops only.
# TAP: one test per RTL file.
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
rtl=$top_srcdir/hdl/rtl
xilinx='tuser|PG0?23|PG156|PG213|axis_(rq|rc|cq|cc)_|cfg_interrupt|is_sop|is_eop|rq_desc|rc_cpl_err|_user_w\(|RC_ERR_|REQ_MEM_|use work\.mprace_pcie_us_pkg'
intel='rx_st_|tx_st_|tl_cfg_|app_msi_'
files=$(ls "$rtl"/*.vhd 2>/dev/null)
[ -n "$files" ] || { echo "Bail out! no RTL in $rtl"; exit 1; }
echo "1..$(echo $files | wc -w)"
n=0
status=0
for f in $files; do
	n=$((n + 1))
	name=$(basename "$f")
	case $name in
	mprace_pcie_us_*|mprace_dma_top.vhd) own=Xilinx; foreign="$intel" ;;
	mprace_pcie_avst_*|mprace_dma_avst.vhd|mprace_dma_top_ptile.vhd|mprace_dma_top_htile.vhd)
		own=Intel; foreign="$xilinx" ;;
	*) own=; foreign="$xilinx|$intel" ;;
	esac
	hits=$(grep -n -i -E "$foreign" "$f" | head -n 3 | tr '\n' ' ')
	if [ -z "$hits" ]; then
		if [ -n "$own" ]; then
			echo "ok $n - $name names $own interfaces only"
		else
			echo "ok $n - $name names no vendor interface"
		fi
	else
		echo "not ok $n - $name names another vendor's interface: $hits"
		status=1
	fi
done
exit $status
