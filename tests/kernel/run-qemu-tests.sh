#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# run-qemu-tests.sh: the QEMU suite of pcidriver.ko, as TAP on stdout.
#
# Packs busybox, pcidriver.ko and pdtest (with the shared libraries it needs) into an
# initramfs per kernel and boots each kernel of KERNEL_RELEASES with its build of the module,
# under TCG, with two edu devices (28-bit DMA), in these configurations:
#   plain        q35, 256 MiB
#   iommu        q35,kernel-irqchip=split + intel-iommu, guest intel_iommu=on (IOVAs)
#   swiotlb      guest swiotlb=8192,force (16 MiB of bounce buffers: a missing sync corrupts data)
#   plain-1g, iommu-1g, swiotlb-1g
#                the same with 1 GiB, so that buffers land above edu's 256 MiB reach
#                (only the groups that expect it: load reach)
# Each boot also has QEMU's NVMe controller on a fresh disk image and an ivshmem-plain device
# on a fresh file: the nvme and wc groups drive them from user space, and the image and the
# file are checked here afterwards (one more TAP line each); and an e1000e behind a
# pcie-root-port set to 2.5 GT/s x1, the PCI Express board of the bringup group, which runs the
# mprace tool (MPRACE, copied in as /mprace with its libraries) on the real sysfs.
# Each check is one TAP line per kernel and configuration, plus one line per boot for a dmesg
# free of BUG, WARNING, Oops, refcount, "scheduling while atomic" and OOM kills. A check that
# never reported (crash, hang) is a failure.
#
# Environment (set by tests/kernel/Makefile.am): QEMU, CPIO, BUSYBOX, KERNEL_RELEASE and KMOD
# (the module's kernel and pcidriver.ko), KERNEL_RELEASES (every kernel to boot; the others'
# modules are KMOD_BUILD_DIR/kmod-RELEASE/pcidriver.ko), PDTEST (the guest program),
# PDTEST32 (its 32-bit part, optional), MPRACE (the tool; without it the bringup checks report
# no result). Optional: PCIDRIVER_QEMU_CONFIGS (a subset of the
# configurations), PCIDRIVER_QEMU_KERNELS (a subset of the kernels), PCIDRIVER_QEMU_GROUPS
# (the groups of the 256 MiB boots, for debugging), PCIDRIVER_QEMU_TIMEOUT (seconds per boot,
# default 240), PCIDRIVER_QEMU_SMP (default 2), PCIDRIVER_QEMU_IMAGE (a kernel image to boot
# instead of /boot/vmlinuz-RELEASE, with one kernel: the debug kernel). Logs of every boot are
# kept in ./qemu-logs.
set -u

CONFIGS=${PCIDRIVER_QEMU_CONFIGS:-"plain iommu swiotlb plain-1g iommu-1g swiotlb-1g"}
KERNELS=${PCIDRIVER_QEMU_KERNELS:-${KERNEL_RELEASES:-${KERNEL_RELEASE:-}}}
PDT_GROUPS=${PCIDRIVER_QEMU_GROUPS:-"load info bar config kmem umem dmabuf irq twodev ownership lifetime \
unpriv memlock churn badinput compat32 reach nvme wc bringup unbind stall reload intx unload"}
PDT_GROUPS_1G="load reach"
TIMEOUT=${PCIDRIVER_QEMU_TIMEOUT:-240}
SMP=${PCIDRIVER_QEMU_SMP:-2}
# (KASAN, lockdep and DMA-API debugging report through BUG or WARNING)
DMESG_BAD='BUG|WARNING|Oops|refcount|scheduling while atomic|invoked oom-killer'

bail() {
	echo "Bail out! $*"
	exit 1
}

for v in QEMU CPIO BUSYBOX KERNEL_RELEASE KMOD PDTEST; do
	eval "val=\${$v:-}"
	[ -n "$val" ] || bail "$v is not set (run through make check)"
done
[ -x "$PDTEST" ] || bail "$PDTEST not built"
image_for() {
	if [ -n "${PCIDRIVER_QEMU_IMAGE:-}" ]; then echo "$PCIDRIVER_QEMU_IMAGE"
	else echo "/boot/vmlinuz-$1"; fi
}
kmod_for() {
	if [ "$1" = "$KERNEL_RELEASE" ]; then echo "$KMOD"
	else echo "${KMOD_BUILD_DIR:-}/kmod-$1/pcidriver.ko"; fi
}
for k in $KERNELS; do
	[ -r "$(image_for "$k")" ] || bail "$(image_for "$k") not readable"
	[ -r "$(kmod_for "$k")" ] || bail "$(kmod_for "$k") not built"
done
# 1 if the configuration runs group $2 (whose result is also checked here afterwards), else 0
has_group() {
	case " $(groups_of "$1") " in
	*" $2 "*) echo 1 ;;
	*) echo 0 ;;
	esac
}
# The blocks the nvme group writes (t_nvme.c: 4 threads x 128 blocks of 512 bytes, fill_block)
check_nvme_image() {
	python3 - "$1" <<'PYEOF'
import sys
data = open(sys.argv[1], "rb").read()
bad = []
for k in range(4 * 128):
    want = bytearray(((k * 131 + i * 7 + 0x5A) & 0xFF) for i in range(512))
    want[0:6] = b"PDTB" + bytes([k & 0xFF, (k >> 8) & 0xFF])
    if data[k * 512:(k + 1) * 512] != want:
        bad.append(k)
if bad:
    print(f"{len(bad)} of 512 blocks differ, first {bad[0]}")
    sys.exit(1)
PYEOF
}
# The words the wc group writes (t_wc.c: word()), in the ivshmem file
check_wc_file() {
	python3 - "$1" <<'PYEOF'
import struct, sys
data = open(sys.argv[1], "rb").read()
half = len(data) // 8
words = struct.unpack(f"<{2 * half}I", data[:8 * half])
def word(h, i):
    return (0x55430000 ^ (i * 40503)) & 0xFFFFFFFF if h else (0x57430000 ^ (i * 2654435761)) & 0xFFFFFFFF
bad = [i for i in range(2 * half) if words[i] != word(i >= half, i % half)]
if bad:
    print(f"{len(bad)} of {2 * half} words differ, first at word {bad[0]}")
    sys.exit(1)
PYEOF
}
# host_check GROUP DESCRIPTION CHECK ARG: after a boot that ran GROUP, one TAP line for
# what CHECK (a function above) finds in ARG
host_check() {
	[ "$(has_group "$cfg" "$1")" = 1 ] || return 0
	n=$((n + 1))
	if why=$("$3" "$4" 2>&1); then
		echo "ok $n - $tag: $1: $2"
	else
		echo "not ok $n - $tag: $1: $2"
		echo "# [$tag] $why"
	fi
}
groups_of() {
	case $1 in
	*-1g) echo "$PDT_GROUPS_1G" ;;
	*) echo "$PDT_GROUPS" ;;
	esac
}

work=$(mktemp -d "${TMPDIR:-/tmp}/pcidriver-qemu.XXXXXX") || bail "mktemp failed"
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
logs=$PWD/qemu-logs
rm -rf "$logs"
mkdir -p "$logs"

total=0
for cfg in $CONFIGS; do
	# shellcheck disable=SC2046 # word splitting of the group list is intended
	"$PDTEST" --list $(groups_of "$cfg") > "$work/names-$cfg" || bail "pdtest --list failed"
	total=$((total + $(wc -l < "$work/names-$cfg") + 1 + $(has_group "$cfg" nvme) + \
		$(has_group "$cfg" wc)))
done
echo "1..$((total * $(echo $KERNELS | wc -w)))"

# ---------------------------------------------------------------- initramfs
root=$work/root
mkdir -p "$root/bin" "$root/dev" "$root/proc" "$root/sys" "$root/tmp" "$root/etc"
cp "$BUSYBOX" "$root/bin/busybox"
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
# The mprace tool of the bringup group: the binary itself (not libtool's wrapper script)
mprace_bin=
if [ -n "${MPRACE:-}" ]; then
	mprace_bin=$MPRACE
	[ -x "$(dirname "$MPRACE")/.libs/$(basename "$MPRACE")" ] &&
		mprace_bin=$(dirname "$MPRACE")/.libs/$(basename "$MPRACE")
	cp "$mprace_bin" "$root/mprace"
fi
for prog in "$PDTEST" $mprace_bin; do
	ldd "$prog" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
done | sort -u |
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
# the groups come on the kernel command line: pdtest.groups=a,b,c
groups=\$(tr ' ' '\\n' < /proc/cmdline | sed -n 's/^pdtest.groups=//p' | tr ',' ' ')
/pdtest --module /pcidriver.ko \$groups > /dev/ttyS1 2>&1
echo "=== PDTEST END \$?" > /dev/ttyS1
echo "=== DMESG BEGIN" > /dev/ttyS1
dmesg > /dev/ttyS1
echo "=== DMESG END" > /dev/ttyS1
poweroff -f
EOF
chmod 755 "$root/init"
# vgem (and what it needs), the dma-buf exporter of kernels without udmabuf and DMA-BUF heaps
# (Debian's 6.1), where the kernel has it as plain modules; elsewhere its checks do without.
vgem_for() {
	for m in drm drm_shmem_helper vgem/vgem; do
		f=/lib/modules/$1/kernel/drivers/gpu/drm/$m.ko
		[ -r "$f" ] || return 0
	done
	mkdir -p "$root/vgem"
	for m in drm drm_shmem_helper vgem/vgem; do
		cp "/lib/modules/$1/kernel/drivers/gpu/drm/$m.ko" "$root/vgem/"
	done
}
for k in $KERNELS; do
	cp "$(kmod_for "$k")" "$root/pcidriver.ko"
	rm -rf "$root/vgem"
	vgem_for "$k"
	(cd "$root" && find . | "$CPIO" -o -H newc --quiet) | gzip -1 > "$work/initrd-$k.gz" ||
		bail "initramfs failed"
done

# ---------------------------------------------------------------- boots
n=0
for kernel in $KERNELS; do
for cfg in $CONFIGS; do
	machine=q35
	extra_dev=
	append=
	mem=256
	case $cfg in
	*-1g) mem=1024 ;;
	esac
	case ${cfg%-1g} in
	plain) ;;
	iommu)
		machine=q35,kernel-irqchip=split
		extra_dev="-device intel-iommu,intremap=on"
		append="intel_iommu=on" ;;
	swiotlb) append="swiotlb=8192,force" ;;	# a 16 MiB pool: room for KASAN kernels
	*) bail "unknown configuration $cfg" ;;
	esac
	groups=$(groups_of "$cfg" | tr -s ' \n' ',' | sed 's/,$//')
	tag="$kernel $cfg"
	log="$logs/$kernel-$cfg"
	out=$log-results.log
	con=$log-console.log
	# A guest kernel that dies before it runs init (seen rarely under TCG: an int3 while
	# patching its own code during boot) never loaded our module: boot it again, at most twice.
	# A guest that passed every check but never printed its dmesg (seen once in ~100 CI boots: it
	# hung until the timeout after its last check, with the module already tested) is booted
	# once more, and that boot's results count; one whose checks did not all pass is not.
	hung_retried=0
	for try in 1 2 3; do
		rm -f "$work/nvme.img" "$work/ivshmem"
		truncate -s 4M "$work/nvme.img"
		truncate -s 1M "$work/ivshmem"
		t0=$(date +%s)
		# shellcheck disable=SC2086 # extra_dev is a list of arguments
		timeout -k 10 "$TIMEOUT" "$QEMU" -machine "$machine" -accel tcg -m "$mem" -smp "$SMP" \
			-nodefaults -display none -no-reboot -monitor none \
			-serial "file:$con" -serial "file:$out" \
			$extra_dev -device edu -device edu \
			-device pcie-root-port,id=bringup_port,chassis=1,x-speed=2_5,x-width=1 \
			-device e1000e,bus=bringup_port \
			-drive "file=$work/nvme.img,if=none,id=nvm,format=raw" \
			-device nvme,serial=pdtest-nvme,drive=nvm \
			-object "memory-backend-file,id=shm,share=on,mem-path=$work/ivshmem,size=1M" \
			-device ivshmem-plain,memdev=shm \
			-kernel "$(image_for "$kernel")" -initrd "$work/initrd-$kernel.gz" \
			-append "console=ttyS0 loglevel=4 panic=-1 rdinit=/init pdtest.groups=$groups $append" \
			> "$log-qemu.log" 2>&1
		rc=$?
		t1=$(date +%s)
		boot_s=$((t1 - t0))
		echo "# $tag: boot took $boot_s s (qemu exit status $rc)"
		if grep -q '^=== PDTEST BEGIN' "$out"; then
			grep -q '^=== DMESG END' "$out" && break
			[ $hung_retried = 0 ] || break
			reported=$(tr -d '\r' < "$out" | grep -c '^ok - ')
			[ "$reported" = "$(wc -l < "$work/names-$cfg")" ] || break
			tr -d '\r' < "$out" | grep -q '^not ok - ' && break
			hung_retried=1
			echo "# $tag: every check passed but the guest did not finish (qemu exit status $rc after" \
				"$boot_s s; $(grep -c '^=== PDTEST END' "$out") PDTEST END line); its console ends:"
			tail -n 5 "$con" | tr -d '\r' | sed "s/^/#   /"
			cp "$con" "$log-console-hung.log"
			cp "$out" "$log-results-hung.log"
			continue
		fi
		echo "# $tag: the guest died before init started; its console:"
		grep -E 'Oops|RIP|panic' "$con" | head -n 5 | sed "s/^/#   /"
		cp "$con" "$log-console-try$try.log"
	done

	tr -d '\r' < "$out" > "$work/out"
	# one TAP line per expected check, in order; diagnostics of failures as comments
	awk -v cfg="$tag" -v n="$n" '
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
		}' "$work/out" "$work/names-$cfg"
	n=$((n + $(wc -l < "$work/names-$cfg")))

	n=$((n + 1))
	sed -n '/^=== DMESG BEGIN/,/^=== DMESG END/p' "$work/out" > "$work/dmesg"
	if ! grep -q '^=== DMESG END' "$work/dmesg"; then
		echo "not ok $n - $tag: dmesg clean # no dmesg: the guest did not finish" \
			"(qemu exit status $rc after $boot_s s; timeout $TIMEOUT s)"
		tail -n 30 "$con" | sed "s/^/# [$tag console] /"
	elif grep -E "$DMESG_BAD" "$work/dmesg" > "$work/bad"; then
		echo "not ok $n - $tag: dmesg clean"
		head -n 40 "$work/bad" | sed "s/^/# [$tag dmesg] /"
	else
		echo "ok $n - $tag: dmesg clean"
	fi
	cp "$work/dmesg" "$log-dmesg.log"

	host_check nvme "the disk image holds the blocks the guest wrote" \
		check_nvme_image "$work/nvme.img"
	host_check wc "the shared-memory file holds what both mappings wrote" \
		check_wc_file "$work/ivshmem"
done
done
exit 0
