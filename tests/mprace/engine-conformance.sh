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
# board did not open, the tool crashed) counts as one failure. CONFORMANCE_JOBS=N runs up to N
# devices at once (default 1; the report keeps the devices' order).
set -u
prog=${top_builddir:-../..}/tools/mprace
devices=${CONFORMANCE_DEVICES:-"emu: emu:link=gen4x16,sg=pages,maxseg=64K emu:link=gen1x8,mps=128,mrrs=128,sg=merged emu:msi=1,window=1"}
n=0
fails=0
seed=${CONFORMANCE_SEED:-0}
jobs=${CONFORMANCE_JOBS:-1}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# run_one K DEV: selftest on DEV, its output and status in $tmp/K.out and $tmp/K.rc
run_one() {
	s=$seed
	[ "$s" = 0 ] && s=$((1000 + $1))
	[ "$s" = random ] && s=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
	echo "$s" >"$tmp/$1.seed"
	"$prog" -d "$2" selftest ${CONFORMANCE_ARGS:---short} --seed "$s" >"$tmp/$1.out" 2>&1
	echo $? >"$tmp/$1.rc"
}

# report K DEV: the TAP lines of device K, numbered on from the devices before it
report() {
	rc=$(cat "$tmp/$1.rc")
	echo "# $2: seed $(cat "$tmp/$1.seed"), status $rc"
	while IFS= read -r line; do
		case $line in
		"ok "*|"not ok "*)
			n=$((n + 1))
			status=${line%% [0-9]*}
			rest=${line#* [0-9]* - }
			[ "$status" = "not ok" ] && fails=$((fails + 1))
			echo "$status $n - [$2] $rest" ;;
		"1.."*) ;;
		*) echo "$line" ;;
		esac
	done <"$tmp/$1.out"
	if [ "$rc" -ne 0 ] && ! grep -q '^not ok ' "$tmp/$1.out"; then
		n=$((n + 1))
		fails=$((fails + 1))
		echo "not ok $n - [$2] mprace selftest ran (status $rc without a failed check)"
	fi
}

# in batches of $jobs devices, reported in the order of the list
k=0
batch=
for dev in $devices; do
	k=$((k + 1))
	run_one "$k" "$dev" &
	batch="$batch $k=$dev"
	if [ $((k % jobs)) -eq 0 ]; then
		wait
		for e in $batch; do report "${e%%=*}" "${e#*=}"; done
		batch=
	fi
done
wait
for e in $batch; do report "${e%%=*}" "${e#*=}"; done
echo "1..$n"
[ "$fails" -eq 0 ]
