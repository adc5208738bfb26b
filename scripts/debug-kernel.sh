#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# debug-kernel.sh BUILD_DIR: builds Linux 6.1 from Debian's linux-source-6.1 with a small
# config plus KASAN, lockdep (PROVE_LOCKING), DEBUG_ATOMIC_SLEEP and DMA_API_DEBUG
# (tests/kernel/debug-kernel/debug.config) in BUILD_DIR/debug-kernel, and pcidriver.ko
# against it. Both are cached: a second run rebuilds only what changed. Prints the kernel
# release on the last line. `make -C tests/kernel check-debug-kernel` runs the QEMU suite on it.
set -eu
build=$1
top=$(cd "$(dirname "$0")/.." && pwd)
tarball=/usr/src/linux-source-6.1.tar.xz
frag=$top/tests/kernel/debug-kernel/debug.config
dir=$build/debug-kernel
src=$dir/linux-source-6.1
obj=$dir/obj
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

[ -r "$tarball" ] || { echo "debug-kernel: $tarball missing: ./bootstrap.sh debug-kernel installs it" >&2; exit 1; }
mkdir -p "$dir" "$obj"
if [ ! -f "$src/Makefile" ]; then
	echo "debug-kernel: unpacking $tarball" >&2
	tar -xJf "$tarball" -C "$dir"
fi
if [ ! -f "$obj/.config" ] || [ "$frag" -nt "$obj/.config" ]; then
	make -s -C "$src" O="$obj" tinyconfig >&2
	"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$frag" >&2
	make -s -C "$src" O="$obj" olddefconfig >&2
	# every option of the fragment must have survived olddefconfig (a dependency missing)
	grep '^CONFIG_.*=y' "$frag" | while read -r want; do
		grep -qx "$want" "$obj/.config" || { echo "debug-kernel: $want did not take" >&2; exit 1; }
	done
fi
echo "debug-kernel: building (first time: about 6 minutes on two cores)" >&2
make -s -C "$src" O="$obj" -j"$jobs" bzImage modules_prepare >&2
make -s -C "$src" O="$obj" -j"$jobs" modules >&2 2>/dev/null || true
kmod=$dir/pcidriver
mkdir -p "$kmod"
for f in "$top"/pcidriver/kernel/*.c "$top"/pcidriver/kernel/*.h "$top"/pcidriver/kernel/Kbuild \
	"$top"/pcidriver/include/pcidriver_uapi.h "$top"/spec/kernel/pcidriver_ids.h \
	"$build"/pcidriver/kernel/pcidrv_version.h; do
	cmp -s "$f" "$kmod/$(basename "$f")" || cp -f "$f" "$kmod/"
done
make -s -C "$obj" M="$kmod" modules >&2
cat "$obj/include/config/kernel.release"
