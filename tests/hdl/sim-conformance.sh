#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The engine conformance suite (`mprace selftest`, tools/selftest/conformance.cpp), unchanged,
# on the RTL under GHDL ("sim:", docs/cosim.md): the same program and checks as on the virtual
# board, in settings of the simulated host (payload and read-request sizes, split and
# reordered completions, backpressure, scatter-gather layouts, one MSI vector, the 512-bit
# engine) and on the engine's Intel front ends (block=ptile, block=htile). The long mode, with
# transfers sized for a simulator (selftest does so on sim:).
# Skips (77) when the HDL suite's venv is not there. Runs after run-hdl-tests.sh (Makefile.am).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
if [ ! -x "$top_builddir/tests/hdl/.venv/bin/python" ]; then
	echo "1..0 # SKIP no simulator environment (run-hdl-tests.sh builds $top_builddir/tests/hdl/.venv)"
	exit 77
fi
MPRACE_SIM_BUILD=${MPRACE_SIM_BUILD:-$top_builddir/tests/hdl/sim_build/cosim}
CONFORMANCE_DEVICES=${SIM_CONFORMANCE_DEVICES:-"sim: sim:split=1,reorder=1,pause=30,sg=pages,maxseg=64K sim:mps=128,mrrs=128,msi=1,sg=merged sim:width=512,mps=512,mrrs=1024,split=1,reorder=1,pause=20 sim:block=ptile,width=512,split=1,reorder=1,pause=20 sim:block=htile,split=1,reorder=1,pause=20,msi=1 sim:block=htile,width=512,split=1,reorder=1,pause=20"}
CONFORMANCE_ARGS=--long
# one simulator per core: each runs on one
if [ -z "${CONFORMANCE_JOBS:-}" ]; then
	CONFORMANCE_JOBS=1
	[ "$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)" -ge 2 ] && CONFORMANCE_JOBS=2
fi
export MPRACE_SIM_BUILD CONFORMANCE_DEVICES CONFORMANCE_ARGS CONFORMANCE_JOBS
exec sh "$top_srcdir/tests/mprace/engine-conformance.sh"
