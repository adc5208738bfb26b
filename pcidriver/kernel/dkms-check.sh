#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# DKMS as docs/pcidriver.md ("Installing") tells a user to run it, against every kernel given:
# the module's sources installed into /usr/src/pcidriver-VERSION by `make install`, then
# `dkms add`, `dkms build -k` and `dkms install -k` for each kernel (the module must land in
# that kernel's updates/dkms with our PCI alias and the kernel's vermagic), then
# `dkms remove --all` and the sources uninstalled: the system is left as it was found.
# Root only (it writes /usr/src, /var/lib/dkms and /lib/modules). Run by `make dkms-check`
# in pcidriver/kernel of the build tree (.ci/run does).
#
#   dkms-check.sh VERSION "KERNEL..."
set -u
version=$1
kernels=$2
src=/usr/src/pcidriver-$version
udev=$(mktemp -d) || exit 1
fails=0
say() { printf '%s\n' "$*"; }
fail() { say "FAILED: $*"; fails=$((fails + 1)); }
# shellcheck disable=SC2317 # called through the trap
cleanup() {
	dkms remove "pcidriver/$version" --all >/dev/null 2>&1
	make uninstall dkmssrcdir="$src" udevrulesdir="$udev" >/dev/null 2>&1
	rm -rf "$src" "$udev"
}
[ "$(id -u)" = 0 ] || { say "dkms-check: needs root"; exit 1; }
command -v dkms >/dev/null || { say "dkms-check: dkms is not installed (scripts/deps.txt)"; exit 1; }
# a tree left by an interrupted run
cleanup
trap cleanup EXIT

say "+ make install dkmssrcdir=$src"
make install dkmssrcdir="$src" udevrulesdir="$udev" >/dev/null || { fail "make install"; exit 1; }
[ -f "$src/dkms.conf" ] && grep -q "PACKAGE_VERSION=\"$version\"" "$src/dkms.conf" || fail "dkms.conf of $version in $src"
say "+ dkms add pcidriver/$version"
dkms add "pcidriver/$version" || { fail "dkms add"; exit 1; }
for k in $kernels; do
	say "+ dkms build pcidriver/$version -k $k"
	dkms build "pcidriver/$version" -k "$k" || { fail "dkms build for $k"; continue; }
	say "+ dkms install pcidriver/$version -k $k"
	dkms install "pcidriver/$version" -k "$k" || { fail "dkms install for $k"; continue; }
	ko=$(modinfo -k "$k" -n pcidriver 2>/dev/null)
	case $ko in
	/lib/modules/$k/updates/dkms/pcidriver.ko*) say "  $ko" ;;
	*) fail "modinfo -k $k finds '$ko', not the module DKMS installed" ;;
	esac
	modinfo -k "$k" -F vermagic pcidriver | grep -q "^$k " || fail "vermagic of the module for $k"
	[ "$(modinfo -k "$k" -F version pcidriver)" = "$version" ] || fail "MODULE_VERSION $version in the module for $k"
	modinfo -k "$k" -F alias pcidriver | grep -q '^pci:v000010EEd00007038' || fail "our PCI alias in the module for $k"
	dkms status "pcidriver/$version" -k "$k" | grep -q installed || fail "dkms status says installed for $k"
done
say "+ dkms remove pcidriver/$version --all"
dkms remove "pcidriver/$version" --all || fail "dkms remove"
for k in $kernels; do
	[ ! -e "/lib/modules/$k/updates/dkms/pcidriver.ko" ] && [ ! -e "/lib/modules/$k/updates/dkms/pcidriver.ko.xz" ] ||
		fail "the module for $k is still installed after dkms remove"
done
[ "$fails" -eq 0 ] && say "dkms-check: add, build, install and remove on $(echo "$kernels" | wc -w) kernel(s): ok"
[ "$fails" -eq 0 ]
