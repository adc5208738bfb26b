#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The engine conformance suite (`mprace selftest`, tools/selftest/conformance.cpp) on several
# virtual boards: link presets, payload and read-request sizes, scatter-gather layouts, one MSI
# vector. TAP, one line per check, prefixed with the device. Seeds are fixed here so that a run
# is repeatable; set CONFORMANCE_SEED (a number, or `random`) to try others, and run
#   mprace -d DEVICE selftest --seed N
# to repeat what a failing line names. CONFORMANCE_DEVICES replaces the list (e.g. /dev/fpga0),
# CONFORMANCE_ARGS selftest's options (default --short; tests/hdl/sim-conformance.sh runs the
# RTL with --long). A run that ends without a failed check but with a non-zero status (the
# board did not open, the tool crashed) counts as one failure.
set -u
prog=${top_builddir:-../..}/tools/mprace
devices=${CONFORMANCE_DEVICES:-"emu: emu:link=gen4x16,sg=pages,maxseg=64K emu:link=gen1x8,mps=128,mrrs=128,sg=merged emu:msi=1,window=1"}
n=0
fails=0
seed=${CONFORMANCE_SEED:-0}
k=0
for dev in $devices; do
	k=$((k + 1))
	s=$seed
	[ "$s" = 0 ] && s=$((1000 + k))
	[ "$s" = random ] && s=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
	# shellcheck disable=SC2086 # CONFORMANCE_ARGS is a list of options
	out=$("$prog" -d "$dev" selftest ${CONFORMANCE_ARGS:---short} --seed "$s" 2>&1)
	rc=$?
	echo "# $dev: seed $s, status $rc"
	# renumber the program's TAP lines, keep its comments
	while IFS= read -r line; do
		case $line in
		"ok "*|"not ok "*)
			n=$((n + 1))
			status=${line%% [0-9]*}
			rest=${line#* [0-9]* - }
			[ "$status" = "not ok" ] && fails=$((fails + 1))
			echo "$status $n - [$dev] $rest" ;;
		"1.."*) ;;
		*) echo "$line" ;;
		esac
	done <<TAP
$out
TAP
	if [ $rc -ne 0 ] && ! printf '%s\n' "$out" | grep -q '^not ok '; then
		n=$((n + 1))
		fails=$((fails + 1))
		echo "not ok $n - [$dev] mprace selftest ran (status $rc without a failed check)"
	fi
done
echo "1..$n"
[ "$fails" -eq 0 ]
