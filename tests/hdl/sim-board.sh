#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The "sim:" board as a user meets it (docs/cosim.md), through the tools: bad options and a
# missing simulator environment fail with words; kill -9 of the application leaves no simulator
# behind; libbufmgr runs through it unchanged; a simulator that dies leaves a device that is gone, not a hang; and the conformance
# suite fails on an RTL with a broken register offset (a copy of
# hdl/ with SCRATCH decoded at the wrong address), so that a pass on sim: means something.
# TAP. Skips (77) without the HDL suite's venv. Runs after run-hdl-tests.sh (Makefile.am).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
if [ ! -x "$top_builddir/tests/hdl/.venv/bin/python" ]; then
	echo "1..0 # SKIP no simulator environment (run-hdl-tests.sh builds $top_builddir/tests/hdl/.venv)"
	exit 77
fi
MPRACE_SIM_BUILD=${MPRACE_SIM_BUILD:-$top_builddir/tests/hdl/sim_build/cosim}
export MPRACE_SIM_BUILD
mprace=$top_builddir/tools/mprace
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
fails=0
check() {   # check NAME COMMAND...: one test point, the command's status
	n=$((n + 1))
	name=$1
	shift
	if "$@"; then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name"
		fails=$((fails + 1))
	fi
}

# 1. errors in words, before any simulator starts
bad_option() {
	! "$mprace" -d sim:mps=300 info >"$tmp/out" 2>&1 && grep -q "bad option 'mps=300'" "$tmp/out"
}
check "a bad option fails and names the option" bad_option
no_env() {
	! MPRACE_SIM_PYTHON=$tmp/none "$mprace" -d sim: info >"$tmp/out" 2>&1 &&
		grep -q "bootstrap.sh" "$tmp/out"
}
check "without the simulator environment the message names ./bootstrap.sh" no_env
info() {
	"$mprace" -d sim: info >"$tmp/out" 2>&1 && grep -q "^backend: sim" "$tmp/out" &&
		grep -q "magic: 0x4d505243" "$tmp/out" && grep -q "vendor 0x10ee device 0x7038" "$tmp/out"
}
check "mprace info identifies the RTL engine through the PCIe model" info
relative_cache() {   # the same cache, named relative to the directory the tool starts in
	rel=$(realpath --relative-to="$tmp" "$MPRACE_SIM_BUILD") &&
		(cd "$tmp" && MPRACE_SIM_BUILD=$rel "$mprace" -d sim: info >"$tmp/out" 2>&1) &&
		grep -q "magic: 0x4d505243" "$tmp/out"
}
check "MPRACE_SIM_BUILD relative to the current directory" relative_cache

# 2. kill -9 of the application: its simulator ends too
alive() {   # alive PID: the process exists and is not a zombie
	[ -r "/proc/$1/stat" ] && ! sed 's/^.*) //' "/proc/$1/stat" | grep -q '^Z'
}
# simulator_of PID: the simulator (ghdl) child of application PID, waiting up to 120 s for it
# to start (its first start builds the RTL); nothing when none came
simulator_of() {
	for _ in $(seq 600); do
		for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
			grep -q ghdl "/proc/$c/cmdline" 2>/dev/null && { echo "$c"; return 0; }
		done
		sleep 0.2
	done
}

# wait_answered FILE: until the application's first register read has answered (the board is up)
wait_answered() {
	for _ in $(seq 600); do
		grep -q "^SCRATCH" "$1" && return 0
		sleep 0.2
	done
}

no_orphan() {
	"$mprace" -d sim: dma read 64M -o /dev/null >/dev/null 2>&1 &
	app=$!
	sim=$(simulator_of "$app")
	[ -n "$sim" ] || { echo "# no simulator process seen"; kill -9 "$app"; return 1; }
	sleep 2
	kill -9 "$app"
	wait "$app" 2>/dev/null
	for _ in $(seq 100); do
		alive "$sim" || return 0
		sleep 0.1
	done
	echo "# simulator $sim still running 10 s after its application died"
	kill -9 "$sim"
	return 1
}
check "kill -9 of the application ends its simulator" no_orphan

# 3. libbufmgr, unmodified, through the RTL: a double buffer both ways, every byte checked
bufmgr() {
	"$top_builddir/tools/dmabench" -d sim: -m db32K -s 128K --verify -o "$tmp/bench" >"$tmp/out" 2>&1 &&
		[ "$(grep -c ' ok$' "$tmp/out")" -eq 2 ] || { sed 's/^/# /' "$tmp/out"; return 1; }
}
check "dmabench db32K --verify: libbufmgr's double buffer through the RTL, both ways" bufmgr

# a transfer that takes longer than libmprace's default wait of 10 s of host time: on sim: the
# wait is 60 times longer (EngineOptions::waitTimeout), so it completes
long_read() {
	"$mprace" -d sim: dma read 1M --verify -o /dev/null >"$tmp/out" 2>&1 &&
		grep -q "^verify: ok" "$tmp/out" || { sed 's/^/# /' "$tmp/out"; return 1; }
}
check "a 1 MiB read (about 15 s of host time) completes with the default wait, verified" long_read

# 4. a simulator that dies: the device is gone (all-ones reads, pd_irq_wait ENODEV), no hang
sim_dies() {
	{ echo "reg read SCRATCH"; sleep 4; echo "reg read SCRATCH"; echo "irq wait 0 --timeout 60000"; } |
		"$mprace" -d sim: run - >"$tmp/out" 2>&1 &
	app=$!
	sim=$(simulator_of "$app")
	[ -n "$sim" ] || { echo "# no simulator process seen"; return 1; }
	wait_answered "$tmp/out"
	kill -9 "$sim"
	wait "$app"
	rc=$?
	sed 's/^/# /' "$tmp/out"
	[ $rc -ne 0 ] && grep -q "= 0xffffffff" "$tmp/out" && grep -q "pd_irq_wait: No such device" "$tmp/out"
}
check "when the simulator dies, reads return all-ones and irq wait fails with ENODEV" sim_dies

# 4b. the same, with a DMA after the death: the board is found lost at once (ENODEV, the
# all-ones message) and the program ends within seconds (it spent 4-8 s in register polls)
sim_dies_dma() {
	{ echo "reg read SCRATCH"; sleep 4; echo "dma read 4K -o /dev/null"; } |
		"$mprace" -d sim: run - >"$tmp/out" 2>&1 &
	app=$!
	sim=$(simulator_of "$app")
	[ -n "$sim" ] || { echo "# no simulator process seen"; return 1; }
	wait_answered "$tmp/out"
	kill -9 "$sim"
	t0=$(date +%s)
	wait "$app"
	rc=$?
	t=$(( $(date +%s) - t0 ))
	sed 's/^/# /' "$tmp/out"
	echo "# ended ${t} s after the simulator died (the DMA came up to 4 s after it)"
	[ $rc -ne 0 ] && [ $t -le 7 ] && grep -q "all-ones" "$tmp/out"
}
check "when the simulator dies, a DMA fails with ENODEV at once, naming the lost board" sim_dies_dma

# 5. a broken RTL fails the conformance suite
mkdir -p "$tmp/tree/spec"
cp -r "$top_srcdir/hdl" "$tmp/tree/hdl"
cp -r "$top_srcdir/spec/vhdl" "$top_srcdir/spec/python" "$tmp/tree/spec/"
regs=$tmp/tree/hdl/rtl/mprace_dma_regs.vhd
# the write decode of SCRATCH (the first `when REG_SCRATCH_c`) moves to a free offset
awk '!done && /when REG_SCRATCH_c =>/ { sub(/REG_SCRATCH_c/, "16#028#"); done = 1 } { print }' \
	"$top_srcdir/hdl/rtl/mprace_dma_regs.vhd" >"$regs"
mutated() {
	! cmp -s "$regs" "$top_srcdir/hdl/rtl/mprace_dma_regs.vhd" &&
	! MPRACE_SIM_DIR=$tmp/tree/hdl/cosim MPRACE_SIM_BUILD=$tmp/cache \
		"$mprace" -d sim: selftest --short --seed 1 \
		>"$tmp/conf" 2>&1 && grep -q "^not ok .*SCRATCH holds" "$tmp/conf" ||
		{ sed 's/^/# /' "$tmp/conf" | head -20; return 1; }
}
check "the conformance suite fails on an RTL with SCRATCH at the wrong offset" mutated

echo "1..$n"
[ "$fails" -eq 0 ]
