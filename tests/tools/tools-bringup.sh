#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The bring-up commands (docs/bring-up.md): `mprace doctor` on platforms written by
# fake-sysfs.py (a board below a root port, read through MPRACE_SYSROOT: each finding from the
# one thing that is wrong, none on a healthy platform, JSON that parses), `mprace list` and
# `mprace selftest` on the virtual board. The real kernels' view is checked in the QEMU suite
# (tests/kernel, group bringup).
. "${top_srcdir:-../..}/tests/tools/tools-tap.sh"
FAKE=$top_srcdir/tests/tools/fake-sysfs.py
BOARD=0000:01:00.0

# doctor_on NAME KEY=VALUE...: doctor --json on the board of a fresh platform; the checks'
# levels as "check=level" lines in $WORK/levels, the status in $rc.
doctor_on() {
	name=$1
	shift
	rm -rf "$WORK/sys-$name"
	"$PYTHON" "$FAKE" "$WORK/sys-$name" "$@" || return 1
	MPRACE_SYSROOT=$WORK/sys-$name "$MPRACE" doctor "$BOARD" --buffers 4K --json >"$WORK/out" 2>"$WORK/err"
	rc=$?
	"$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["checks"]:
    print("%s=%s" % (c["check"], c["level"]))
print("warnings=%d" % d["warnings"])
print("serious=%d" % d["serious"])' "$WORK/out" >"$WORK/levels" 2>&1
}
has() { grep -qx "$1" "$WORK/levels"; }
findings() { grep -cE '=(warning|serious)$' "$WORK/levels"; }

if ! have_python; then
	skip "doctor on written platforms" "no python3"
else
	doctor_on healthy
	[ $rc -eq 0 ] && [ "$(findings)" = 0 ] && has link=ok && has payload=ok && has numa=ok && has iommu=ok &&
		has board=ok && has gpu=skipped &&
		ok "doctor: a healthy platform has no finding, status 0" || { not_ok "healthy platform (rc=$rc)"; diag "$WORK/levels" "$WORK/out" "$WORK/err"; }

	doctor_on downtrained board_link=2.5x8
	[ $rc -eq 1 ] && has link=serious && [ "$(findings)" = 1 ] &&
		grep -q 'trained at 2.5 GT/s x8, below the 8.0 GT/s x8 both ends can do' "$WORK/out" &&
		ok "doctor: a link trained at 2.5 GT/s of 8 is serious, status 1, the only finding" ||
		{ not_ok "downtrained link (rc=$rc)"; diag "$WORK/levels" "$WORK/out"; }

	doctor_on narrow board_link=8.0x4 board_cap=8.0x8 port_cap=8.0x8
	[ $rc -eq 1 ] && has link=serious && grep -q 'trained at 8.0 GT/s x4' "$WORK/out" &&
		ok "doctor: a link trained at x4 where both ends do x8 is serious" || { not_ok "narrow link (rc=$rc)"; diag "$WORK/out"; }

	doctor_on slot board_link=8.0x4 board_cap=8.0x8 port_cap=8.0x4
	[ $rc -eq 0 ] && has link=warning && grep -q 'the slot limits the board to 8.0 GT/s x4' "$WORK/out" &&
		grep -q 'move the board to a slot wired for 8.0 GT/s x8' "$WORK/out" &&
		ok "doctor: a slot narrower than the board is a warning with its fix" || { not_ok "slot (rc=$rc)"; diag "$WORK/out"; }

	doctor_on mps mps=128 mps_cap=512
	[ $rc -eq 0 ] && has payload=warning && [ "$(findings)" = 1 ] && grep -q 'MPS 128 B in effect although the whole path supports 512 B' "$WORK/out" &&
		grep -q 'pci=pcie_bus_perf' "$WORK/out" &&
		ok "doctor: MPS below what the path supports is a warning naming pci=pcie_bus_perf" || { not_ok "mps (rc=$rc)"; diag "$WORK/out"; }

	doctor_on mrrs mrrs=128
	[ $rc -eq 0 ] && has payload=warning && grep -q 'MRRS 128 B, below MPS 256 B' "$WORK/out" &&
		ok "doctor: MRRS below MPS is a warning" || { not_ok "mrrs (rc=$rc)"; diag "$WORK/out"; }
	doctor_on mrrs-small mrrs=128 mps=128 mps_cap=128
	[ $rc -eq 0 ] && has payload=note && [ "$(findings)" = 0 ] &&
		ok "doctor: MRRS of 128 B where MPS is 128 B is a note, not a finding" || { not_ok "mrrs = mps (rc=$rc)"; diag "$WORK/out"; }

	doctor_on oldmodule module=0.0.1
	[ $rc -eq 0 ] && has module=warning && [ "$(findings)" = 1 ] && grep -q 'the loaded module is release 0.0.1, the tools ' "$WORK/out" &&
		grep -q 'dkms install pcidriver/' "$WORK/out" &&
		ok "doctor: a loaded module of another release is a warning naming dkms" || { not_ok "module release (rc=$rc)"; diag "$WORK/out"; }
	doctor_on samemodule module="$("$MPRACE" --version | awk '{ print $NF }')"
	[ $rc -eq 0 ] && has module=ok && [ "$(findings)" = 0 ] &&
		ok "doctor: a loaded module of this release is fine" || { not_ok "module of this release (rc=$rc)"; diag "$WORK/out"; }

	doctor_on far numa=1
	[ $rc -eq 0 ] && has numa=warning && grep -q 'numactl --cpunodebind=1 --membind=1' "$WORK/out" &&
		ok "doctor: a board on a node this process cannot run on is a warning naming numactl" || { not_ok "numa (rc=$rc)"; diag "$WORK/out"; }

	doctor_on strict iommu=DMA
	[ $rc -eq 0 ] && has iommu=warning && grep -q 'iommu.strict=0' "$WORK/out" &&
		ok "doctor: a strict IOMMU is a warning naming iommu.strict=0" || { not_ok "iommu strict (rc=$rc)"; diag "$WORK/out"; }

	doctor_on blocked iommu=blocked
	[ $rc -eq 1 ] && has iommu=serious && ok "doctor: an IOMMU domain that blocks DMA is serious" || { not_ok "iommu blocked (rc=$rc)"; diag "$WORK/out"; }

	doctor_on gpu gpu=1
	[ $rc -eq 0 ] && has gpu-driver=ok && has gpu=ok && grep -q 'board and GPU sit under one root port (0000:00:01.0)' "$WORK/out" &&
		ok "doctor: a GPU beside the board, open kernel module: dma-bufs and one root port" || { not_ok "gpu (rc=$rc)"; diag "$WORK/out"; }

	doctor_on gpu-prop gpu=1 gpu_driver=proprietary
	has gpu-driver=note && grep -q 'exports no dma-bufs' "$WORK/out" &&
		ok "doctor: the proprietary NVIDIA module is named as exporting no dma-bufs" || { not_ok "gpu proprietary"; diag "$WORK/out"; }

	doctor_on nothp thp="always madvise [never]"
	has hugepages=note && grep -q 'transparent_hugepage/enabled' "$WORK/out" &&
		ok "doctor: no huge pages at all is a note with its fix" || { not_ok "thp"; diag "$WORK/out"; }

	# memlock: this process's own limit, and CAP_IPC_LOCK (held by root) lifts it
	rm -rf "$WORK/sys-ml" && "$PYTHON" "$FAKE" "$WORK/sys-ml"
	if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
		lim="setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock"
	else
		lim=""
	fi
	# shellcheck disable=SC2086 # lim is a command prefix
	(ulimit -l 64 && MPRACE_SYSROOT=$WORK/sys-ml exec $lim "$MPRACE" doctor $BOARD --buffers 16M) >"$WORK/out" 2>&1
	rc=$?
	[ $rc -eq 1 ] && grep -q '^SERIOUS  memlock .*RLIMIT_MEMLOCK (64 KiB) is below the DMA buffers asked for' "$WORK/out" &&
		grep -q "memlock unlimited" "$WORK/out" &&
		ok "doctor: RLIMIT_MEMLOCK of 64 KiB against 16 MiB of buffers is serious, with the limits.conf line" ||
		{ not_ok "memlock (rc=$rc)"; diag "$WORK/out"; }

	doctor_on unbound board_driver=
	[ $rc -eq 0 ] && has board=note && grep -q 'is bound to no driver' "$WORK/out" &&
		ok "doctor: a board bound to no driver is a note saying how to bind it" || { not_ok "unbound board (rc=$rc)"; diag "$WORK/out"; }
	run env MPRACE_SYSROOT="$WORK/sys-unbound" "$MPRACE" list
	[ $rc -eq 0 ] && grep -q '^# 0000:01:00.0 has our board.s IDs (10ee:7038) but is not bound to pcidriver (no driver)' "$WORK/out" &&
		ok "list: a function with our IDs that pcidriver does not drive is named" || { not_ok "list unbound (rc=$rc)"; diag "$WORK/out"; }
	run env MPRACE_SYSROOT="$WORK/sys-unbound" PCIDRIVER_DEVICE= "$MPRACE" doctor --buffers 4K
	[ $rc -eq 1 ] && grep -q '^SERIOUS  board       no board: no /dev/fpgaN' "$WORK/out" &&
		grep -q '0000:01:00.0 has our board.s IDs, no driver' "$WORK/out" &&
		ok "doctor without a board names the unbound function with our IDs" || { not_ok "doctor no board (rc=$rc)"; diag "$WORK/out"; }

	run env MPRACE_SYSROOT="$WORK/sys-ml" "$MPRACE" doctor 0000:07:00.0 --buffers 4K
	[ $rc -eq 1 ] && grep -q 'no PCI function 0000:07:00.0' "$WORK/out" &&
		ok "doctor: a PCI address that is not there is serious" || { not_ok "missing function (rc=$rc)"; diag "$WORK/out"; }
fi

run "$MPRACE" doctor /dev/fpga97 --buffers 4K
[ $rc -eq 1 ] && grep -q '^SERIOUS  board       /dev/fpga97 does not exist' "$WORK/out" &&
	ok "doctor: a device node that does not exist is serious, with what to load" || { not_ok "no node (rc=$rc)"; diag "$WORK/out"; }
run "$MPRACE" doctor emu: --buffers 4K
[ $rc -eq 0 ] && grep -q '^ok       engine      engine 1.0' "$WORK/out" && grep -q '^note     board       emu: is a virtual board' "$WORK/out" &&
	ok "doctor: the virtual board is our engine, and says the link checks are about real boards" || { not_ok "doctor emu: (rc=$rc)"; diag "$WORK/out" "$WORK/err"; }
run "$MPRACE" doctor --buffers lots
[ $rc -eq 2 ] && grep -q 'Usage: mprace \[--device NAME\] doctor' "$WORK/err" && ok "doctor: a bad --buffers is a usage error" || { not_ok "doctor --buffers lots (rc=$rc)"; diag "$WORK/err"; }
run "$MPRACE" doctor emu: emu:
[ $rc -eq 2 ] && ok "doctor: two devices are a usage error" || not_ok "doctor with two devices (rc=$rc)"

# ---- list
run "$MPRACE" list
[ $rc -eq 0 ] && grep -qx 'emu:' "$WORK/out" && grep -q '^  models: virtual board, gen3x8 link' "$WORK/out" &&
	grep -q '^  engine: 1.0, datapath 32 B' "$WORK/out" && grep -qx 'sim:' "$WORK/out" &&
	ok "list: the virtual board says what it models and its engine; sim: is listed" || { not_ok "list (rc=$rc)"; diag "$WORK/out"; }
run "$MPRACE" -q list
! grep -q '^ ' "$WORK/out" && grep -qx 'emu:' "$WORK/out" && ok "list -q: names only" || { not_ok "list -q"; diag "$WORK/out"; }

# ---- selftest
run "$MPRACE" -d emu: selftest --seed 7 --report "$WORK/report"
[ $rc -eq 0 ] && grep -q '^# device: emu: (virtual board, gen3x8 link), backend emu' "$WORK/out" &&
	grep -q '^# mode: short, seed 7' "$WORK/out" && grep -q '^1\.\.[0-9]' "$WORK/out" && ! grep -q '^not ok' "$WORK/out" &&
	cmp -s "$WORK/out" "$WORK/report" &&
	ok "selftest: short mode passes on emu: with a header, and --report holds the same text" || { not_ok "selftest (rc=$rc)"; diag "$WORK/out" "$WORK/err"; }
grep '^ok' "$WORK/out" >"$WORK/first"
run "$MPRACE" -d emu: selftest --seed 7
grep '^ok' "$WORK/out" >"$WORK/second"
cmp -s "$WORK/first" "$WORK/second" && ok "selftest: --seed repeats a run check for check" || { not_ok "selftest --seed"; diff "$WORK/first" "$WORK/second" | head | diag /dev/stdin; }
run "$MPRACE" -d emu: selftest --long --seed 7
n_long=$(grep -c '^ok' "$WORK/out")
[ $rc -eq 0 ] && [ "$n_long" -gt "$(wc -l <"$WORK/first")" ] && grep -q '^# mode: long' "$WORK/out" &&
	ok "selftest: --long runs more checks ($n_long)" || { not_ok "selftest --long (rc=$rc)"; diag "$WORK/out"; }
# (under a plain file: a path no one can create, whatever the machine holds)
: >"$WORK/plain"
run "$MPRACE" -d emu: selftest --report "$WORK/plain/report"
[ $rc -eq 1 ] && grep -q "cannot write the report $WORK/plain/report" "$WORK/err" && [ ! -s "$WORK/out" ] &&
	ok "selftest: a report that cannot be written fails before anything runs" || { not_ok "selftest bad report (rc=$rc)"; diag "$WORK/err"; }
run "$MPRACE" -d emu: selftest --short --long
[ $rc -eq 2 ] && ok "selftest: --short with --long is a usage error" || not_ok "selftest --short --long (rc=$rc)"
# a fault the suite must see: a bus error in every C2H descriptor
run "$MPRACE" -d emu:buserr=c2h selftest --seed 3
[ $rc -eq 1 ] && grep -q '^not ok' "$WORK/out" && grep -q 'checks failed (seed 3)' "$WORK/err" &&
	ok "selftest: a board whose C2H transfers fail fails it, status 1" || { not_ok "selftest on a corrupting board (rc=$rc)"; diag "$WORK/out" "$WORK/err"; }

done_testing
