// SPDX-License-Identifier: GPL-2.0
/*
 * pdtest group wc: write-combining BAR mappings, which edu (no prefetchable BAR) cannot show.
 * QEMU's ivshmem-plain has a 64-bit prefetchable BAR2 backed by a host file: it is mapped
 * write-combining and uncached in turn, the kernel's PAT bookkeeping is checked for the cache
 * mode each mapping really got, and what was written is checked in the file from the host
 * side afterwards (run-qemu-tests.sh).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "pdtest.h"

#define IVSHMEM_VENDOR	0x1af4
#define IVSHMEM_DEVICE	0x1110
#define SHM_BAR		2
#define SHM_SIZE	(1u << 20)	/* given on QEMU's command line */
#define HALF_WORDS	(SHM_SIZE / 8)

static const char *const wc_checks[] = {
	"wc: ivshmem's prefetchable BAR2 maps write-combining (the kernel's PAT says so)",
	"wc: the same BAR maps uncached (the kernel's PAT says uncached-minus)",
	"wc: words written through each mapping read back through the other, word for word",
	"wc: write-combining on the non-prefetchable BAR0 fails with EINVAL",
	NULL,
};

/* Word i of each half; run-qemu-tests.sh checks the same rule in the file. */
static uint32_t word(unsigned int half, uint32_t i)
{
	return half ? 0x55430000u ^ (i * 40503u) : 0x57430000u ^ (i * 2654435761u);
}

/* The cache mode the PAT recorded for [start, end), e.g. "write-combining"; "" if none. */
static void pat_mode(uint64_t start, uint64_t end, char *mode, size_t len)
{
	static char list[1 << 16];
	char want[64], *p;
	int n;

	mode[0] = '\0';
	n = read_file("/sys/kernel/debug/x86/pat_memtype_list", list, sizeof(list) - 1);
	if (n <= 0)
		return;
	list[n] = '\0';
	snprintf(want, sizeof(want), "[mem 0x%016" PRIx64 "-0x%016" PRIx64 "] ", start, end);
	p = strstr(list, want);
	if (p)
		sscanf(p + strlen(want), "%63s", mode);
}

/* Maps BAR2 with flags and returns its mode in the PAT; NULL on failure. */
static volatile uint32_t *map_shm(pd_device *dev, unsigned int flags, uint64_t start,
				  char *mode, size_t len, int *err)
{
	void *addr;
	size_t size;

	*err = pd_map_bar(dev, SHM_BAR, flags, &addr, &size);
	if (*err)
		return NULL;
	if (size < SHM_SIZE) {
		*err = -EINVAL;
		return NULL;
	}
	pat_mode(start, start + size, mode, len);
	return addr;
}

static void wc_run(void)
{
	char addr[256], path[320], node[32], line[256], mode[64] = "";
	unsigned long long start = 0, end = 0;
	volatile uint32_t *shm;
	pd_device *dev;
	void *p;
	size_t size;
	uint32_t i, bad = 0;
	int minor, ret, e;

	if (find_pci(IVSHMEM_VENDOR, IVSHMEM_DEVICE, addr, sizeof(addr))) {
		for (i = 0; wc_checks[i]; i++)
			printf("ok - %s # SKIP no ivshmem device in this guest\n", wc_checks[i]);
		return;
	}
	mkdir("/sys/kernel/debug", 0755);
	mount("none", "/sys/kernel/debug", "debugfs", 0, NULL);
	/* line 3 of sysfs resource: BAR2 as "start end flags" */
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", addr);
	ret = read_file(path, line, sizeof(line) - 1);
	if (ret > 0) {
		char *l = line;

		line[ret] = '\0';
		for (i = 0; i < SHM_BAR && l; i++)
			l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL;
		if (l)
			sscanf(l, "%llx %llx", &start, &end);
	}
	minor = bind_pci(addr);
	snprintf(node, sizeof(node), "/dev/fpga%d", minor);
	ret = minor < 0 ? minor : pd_open(node, &dev);
	if (ret) {
		pdt_diag("bind and open ivshmem (%s): %s", addr, errname(ret));
		unbind_pci(addr);
		return;
	}

	shm = map_shm(dev, PD_MAP_WC, start, mode, sizeof(mode), &ret);
	CHECK(wc_checks[0], shm && !strcmp(mode, "write-combining"), "map %s, PAT \"%s\" for %#llx",
	      errname(ret), mode, start);
	for (i = 0; shm && i < HALF_WORDS; i++)
		shm[i] = word(0, i);
	__sync_synchronize();			/* drains the write-combining buffers */
	pd_unmap_bar(dev, SHM_BAR);

	shm = map_shm(dev, 0, start, mode, sizeof(mode), &ret);
	CHECK(wc_checks[1], shm && !strcmp(mode, "uncached-minus"), "map %s, PAT \"%s\"",
	      errname(ret), mode);
	for (i = 0; shm && i < HALF_WORDS; i++) {
		bad += shm[i] != word(0, i);
		shm[HALF_WORDS + i] = word(1, i);
	}
	pd_unmap_bar(dev, SHM_BAR);
	shm = map_shm(dev, PD_MAP_WC, start, mode, sizeof(mode), &e);
	for (i = 0; shm && i < HALF_WORDS; i++)
		bad += shm[HALF_WORDS + i] != word(1, i);
	pd_unmap_bar(dev, SHM_BAR);
	CHECK(wc_checks[2], !ret && !e && !bad, "maps %s %s, %u words differ", errname(ret),
	      errname(e), bad);

	ret = pd_map_bar(dev, 0, PD_MAP_WC, &p, &size);
	CHECK(wc_checks[3], ret == -EINVAL, "%s", errname(ret));
	pd_close(dev);
	ret = unbind_pci(addr);
	if (ret)
		pdt_diag("unbind ivshmem: %s", errname(ret));
}

const struct pdt_group grp_wc = { "wc", wc_checks, wc_run };
