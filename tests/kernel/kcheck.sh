#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kcheck.sh: pcidriver.ko builds without a diagnostic under W=1 and sparse against every kernel
# the QEMU suite boots (make -C pcidriver/kernel kcheck), one TAP line per kernel.
# Environment (set by tests/kernel/Makefile.am): KERNEL_RELEASES, KMOD_BUILD_DIR.
set -u
: "${KERNEL_RELEASES:?run through make check}" "${KMOD_BUILD_DIR:?run through make check}"
command -v sparse >/dev/null || { echo "1..0 # SKIP sparse not installed"; exit 0; }
n=0
echo "1..$(echo $KERNEL_RELEASES | wc -w)"
for r in $KERNEL_RELEASES; do
	n=$((n + 1))
	if out=$(${MAKE:-make} -s -C "$KMOD_BUILD_DIR" kcheck KCHECK_RELEASES="$r" 2>&1); then
		echo "ok $n - $r: W=1 and sparse clean"
	else
		echo "not ok $n - $r: W=1 and sparse clean"
		echo "$out" | tail -n 40 | sed 's/^/# /'
	fi
done
