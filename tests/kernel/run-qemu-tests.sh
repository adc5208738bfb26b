#!/bin/sh
# run-qemu-tests.sh: the QEMU suite of pcidriver.ko, as TAP on stdout.
#
# Packs busybox, pcidriver.ko and pdtest (with the shared libraries it needs) into an
# initramfs and boots the Debian kernel the module was built for, under TCG, with two edu
# devices, in three configurations:
#   plain    q35
#   iommu    q35,kernel-irqchip=split + intel-iommu, guest intel_iommu=on (bus addresses are IOVAs)
#   swiotlb  guest swiotlb=force (bounce buffers: a missing sync corrupts data)
# Each boot runs every pdtest group; each check is one TAP line per configuration, plus one
# line per boot for a dmesg free of BUG, WARNING, Oops, refcount and "scheduling while
# atomic". A check that never reported (crash, hang) is a failure.
#
# Environment (set by tests/kernel/Makefile.am): QEMU, CPIO, BUSYBOX, KERNEL_RELEASE, KMOD
# (pcidriver.ko), PDTEST (the guest program), PDTEST32 (its 32-bit part, optional). Optional: PCIDRIVER_QEMU_CONFIGS (a subset of
# "plain iommu swiotlb"), PCIDRIVER_QEMU_GROUPS (a subset of the groups, for debugging),
# PCIDRIVER_QEMU_TIMEOUT (seconds per boot, default 240), PCIDRIVER_QEMU_SMP (default 2).
# Logs of every boot are kept in ./qemu-logs.
set -u

CONFIGS=${PCIDRIVER_QEMU_CONFIGS:-"plain iommu swiotlb"}
PDT_GROUPS=${PCIDRIVER_QEMU_GROUPS:-"load info bar config kmem umem irq twodev ownership lifetime \
unpriv badinput compat32 unbind reload intx unload"}
TIMEOUT=${PCIDRIVER_QEMU_TIMEOUT:-240}
SMP=${PCIDRIVER_QEMU_SMP:-2}
DMESG_BAD='BUG|WARNING|Oops|refcount|scheduling while atomic'

bail() {
	echo "Bail out! $*"
	exit 1
}

for v in QEMU CPIO BUSYBOX KERNEL_RELEASE KMOD PDTEST; do
	eval "val=\${$v:-}"
	[ -n "$val" ] || bail "$v is not set (run through make check)"
done
KERNEL=/boot/vmlinuz-$KERNEL_RELEASE
[ -r "$KERNEL" ] || bail "$KERNEL not readable"
[ -r "$KMOD" ] || bail "$KMOD not built"
[ -x "$PDTEST" ] || bail "$PDTEST not built"

work=$(mktemp -d "${TMPDIR:-/tmp}/pcidriver-qemu.XXXXXX") || bail "mktemp failed"
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
logs=$PWD/qemu-logs
rm -rf "$logs"
mkdir -p "$logs"

# shellcheck disable=SC2086 # word splitting of the group list is intended
"$PDTEST" --list $PDT_GROUPS > "$work/names" || bail "pdtest --list failed"
nchecks=$(wc -l < "$work/names")
nconfigs=$(echo $CONFIGS | wc -w)
echo "1..$(( (nchecks + 1) * nconfigs ))"

# ---------------------------------------------------------------- initramfs
root=$work/root
mkdir -p "$root/bin" "$root/dev" "$root/proc" "$root/sys" "$root/tmp" "$root/etc"
cp "$BUSYBOX" "$root/bin/busybox"
cp "$KMOD" "$root/pcidriver.ko"
cp "$PDTEST" "$root/pdtest"
# optional: without it the compat32 checks report SKIP
if [ -n "${PDTEST32:-}" ] && [ -x "$PDTEST32" ]; then
	cp "$PDTEST32" "$root/pdtest32"
fi
# The shared libraries: the dynamic linker at its own path, the others in /usr/lib, which the
# linker searches by default. (Not at the build tree's path, which pdtest's RUNPATH names: a
# build tree under /tmp would be hidden by the guest's tmpfs.)
interp=$(ldd "$PDTEST" | awk '$1 ~ /^\// && /ld-linux/ { print $1 }')
mkdir -p "$root/usr/lib" "$root$(dirname "$interp")"
cp -L "$interp" "$root$interp"
ldd "$PDTEST" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' |
while read -r lib; do
	cp -L "$lib" "$root/usr/lib/"
done
printf 'root:x:0:0:root:/:/bin/sh\nfpga:x:1000:1000::/:/bin/sh\nother:x:1001:1001::/:/bin/sh\n' \
	> "$root/etc/passwd"
printf 'root:x:0:\nfpga:x:1000:\nother:x:1001:\n' > "$root/etc/group"
cat > "$root/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
stty -F /dev/ttyS1 raw -echo 2>/dev/null
echo "=== PDTEST BEGIN" > /dev/ttyS1
/pdtest --module /pcidriver.ko $PDT_GROUPS > /dev/ttyS1 2>&1
echo "=== PDTEST END \$?" > /dev/ttyS1
echo "=== DMESG BEGIN" > /dev/ttyS1
dmesg > /dev/ttyS1
echo "=== DMESG END" > /dev/ttyS1
poweroff -f
EOF
chmod 755 "$root/init"
(cd "$root" && find . | "$CPIO" -o -H newc --quiet) | gzip -1 > "$work/initrd.gz" ||
	bail "initramfs failed"

# ---------------------------------------------------------------- boots
n=0
for cfg in $CONFIGS; do
	machine=q35
	extra_dev=
	append=
	case $cfg in
	plain) ;;
	iommu)
		machine=q35,kernel-irqchip=split
		extra_dev="-device intel-iommu,intremap=on"
		append="intel_iommu=on" ;;
	swiotlb) append="swiotlb=force" ;;
	*) bail "unknown configuration $cfg" ;;
	esac
	out=$logs/$cfg-results.log
	con=$logs/$cfg-console.log
	t0=$(date +%s)
	# shellcheck disable=SC2086 # extra_dev is a list of arguments
	timeout -k 10 "$TIMEOUT" "$QEMU" -machine "$machine" -accel tcg -m 256 -smp "$SMP" \
		-nodefaults -display none -no-reboot -monitor none \
		-serial "file:$con" -serial "file:$out" \
		$extra_dev -device edu -device edu \
		-kernel "$KERNEL" -initrd "$work/initrd.gz" \
		-append "console=ttyS0 loglevel=4 panic=-1 rdinit=/init $append" \
		> "$logs/$cfg-qemu.log" 2>&1
	rc=$?
	t1=$(date +%s)
	echo "# $cfg: boot took $((t1 - t0)) s (qemu exit status $rc)"

	tr -d '\r' < "$out" > "$work/out"
	# one TAP line per expected check, in order; diagnostics of failures as comments
	awk -v cfg="$cfg" -v n="$n" '
		FNR == NR {
			if ($0 ~ /^=== PDTEST BEGIN/) { on = 1; next }
			if ($0 ~ /^=== PDTEST END/) { on = 0; next }
			if (!on) next
			if ($0 ~ /^(not )?ok - /) {
				ok = $0 ~ /^ok/
				name = substr($0, ok ? 6 : 10)
				dir = ""
				if ((i = index(name, " # ")) > 0) { dir = substr(name, i); name = substr(name, 1, i - 1) }
				res[name] = ok ? "ok" : "not ok"
				directive[name] = dir
				last = name
				next
			}
			if ($0 ~ /^#/ && last != "") diag[last] = diag[last] "# [" cfg "] " substr($0, 3) "\n"
			next
		}
		{
			n++
			if ($0 in res) {
				printf "%s %d - %s: %s%s\n", res[$0], n, cfg, $0, directive[$0]
				if (res[$0] != "ok") printf "%s", diag[$0]
			} else {
				printf "not ok %d - %s: %s # no result (guest crashed or timed out)\n", n, cfg, $0
			}
		}' "$work/out" "$work/names"
	n=$((n + nchecks))

	n=$((n + 1))
	sed -n '/^=== DMESG BEGIN/,/^=== DMESG END/p' "$work/out" > "$work/dmesg"
	if ! grep -q '^=== DMESG END' "$work/dmesg"; then
		echo "not ok $n - $cfg: dmesg clean # no dmesg: the guest did not finish"
		tail -n 30 "$con" | sed "s/^/# [$cfg console] /"
	elif grep -E "$DMESG_BAD" "$work/dmesg" > "$work/bad"; then
		echo "not ok $n - $cfg: dmesg clean"
		head -n 40 "$work/bad" | sed "s/^/# [$cfg dmesg] /"
	else
		echo "ok $n - $cfg: dmesg clean"
	fi
	cp "$work/dmesg" "$logs/$cfg-dmesg.log"
done
exit 0
