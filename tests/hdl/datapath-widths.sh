#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Every entity with a data_w_g generic refuses a width other than 256 or 512 at elaboration,
# naming itself and the width (mprace_dma_pkg.datapath_ok), and elaborates at 256 and 512.
# TAP: one test per entity. Needs only GHDL (analysis in a scratch folder of the build tree).
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
GHDL=${GHDL:-ghdl}
work=$top_builddir/tests/hdl/datapath-widths
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
rtl=$top_srcdir/hdl/rtl
# analysis order: the one list of hdl/cosim/rtl_build.py
files=$(sed -n '/^RTL_FILES = \[/,/\]/p' "$top_srcdir/hdl/cosim/rtl_build.py" | grep -o '"[a-z0-9_]*\.vhd"' | tr -d '"')
[ -n "$files" ] || { echo "Bail out! no RTL_FILES list in hdl/cosim/rtl_build.py"; exit 1; }
"$GHDL" -a --std=08 "$top_srcdir/spec/vhdl/engine_spec_pkg.vhd" || { echo "Bail out! analysis failed"; exit 1; }
for f in $files; do
	"$GHDL" -a --std=08 "$rtl/$f" || { echo "Bail out! analysis of $f failed"; exit 1; }
done
entities=$(grep -l "data_w_g *: *positive" "$rtl"/*.vhd | xargs -n1 basename | sed 's/\.vhd$//')
echo "1..$(echo "$entities" | wc -w)"
n=0
status=0
for e in $entities; do
	n=$((n + 1))
	bad=
	for w in 128 1024; do
		out=$(timeout 60 "$GHDL" --elab-run --std=08 "$e" -gdata_w_g=$w --stop-time=1ns 2>&1)
		echo "$out" | grep -q "assertion failure): $e: data_w_g is 256 or 512 bits, not $w" || bad="$bad $w accepted or refused unclearly: $(echo "$out" | head -n 1);"
	done
	for w in 256 512; do
		out=$(timeout 60 "$GHDL" --elab-run --std=08 "$e" -gdata_w_g=$w --stop-time=1ns 2>&1)
		echo "$out" | grep -q "data_w_g is 256 or 512" && bad="$bad $w refused;"
	done
	if [ -z "$bad" ]; then
		echo "ok $n - $e refuses data_w_g 128 and 1024 by name, takes 256 and 512"
	else
		echo "not ok $n - $e:$bad"
		status=1
	fi
done
exit $status
