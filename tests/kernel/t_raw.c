// SPDX-License-Identifier: GPL-2.0
/*
 * pdtest group badinput: the ioctl and mmap ABI on a raw file descriptor, with inputs the
 * library would refuse before they reach the kernel. Every error is compared by code against
 * pcidriver_uapi.h / docs/pcidriver.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pdtest.h"

static const char *const badinput_checks[] = {
	"badinput: GET_API_VERSION returns PCIDRIVER_API_VERSION",
	"badinput: unknown ioctl commands fail with ENOTTY",
	"badinput: argsz smaller than the struct fails with EINVAL",
	"badinput: unknown flags fail with EINVAL",
	"badinput: non-zero reserved fields fail with EINVAL",
	"badinput: NULL and unmapped argument pointers fail with EFAULT",
	"badinput: a misaligned argument struct works",
	"badinput: kmem of size 0 fails with EINVAL",
	"badinput: kmem above 256 MiB fails with EINVAL (kernel and library)",
	"badinput: kmem of 64 MiB succeeds (IOMMU) or fails with ENOMEM, quietly",
	"badinput: umem of size 0 or without a direction fails with EINVAL",
	"badinput: umem above 64 GiB or wrapping around fails with EINVAL",
	"badinput: umem of unmapped memory fails with EFAULT",
	"badinput: umem of read-only memory for the device to write fails with EFAULT",
	"badinput: umem of a mapped BAR or kmem fails with EFAULT",
	"badinput: umem at an odd address works; its SG list covers exactly the range",
	"badinput: SG list into an unmapped array fails with EFAULT",
	"badinput: SG list past its end fails with EINVAL; at its end copies nothing",
	"badinput: freed, never allocated and zero IDs fail with ENOENT",
	"badinput: sync with no or both directions fails with EINVAL",
	"badinput: mmap beyond BAR0 fails with EINVAL",
	"badinput: mmap of absent BARs and unknown regions fails with EINVAL",
	"badinput: MAP_PRIVATE mmap fails with EINVAL",
	"badinput: kmem mmap longer than the buffer or at an inner offset fails with EINVAL",
	"badinput: partial munmap of a device mapping fails with EINVAL",
	"badinput: config access of 0 bytes or past the end fails with EINVAL",
	"badinput: irq wait or clear on a source out of range fails with EINVAL",
	NULL,
};

static int kmem_alloc(int fd, uint64_t size, struct pcidriver_kmem_alloc *out)
{
	struct pcidriver_kmem_alloc req = { .argsz = sizeof(req), .size = size };
	int ret = raw_ioctl(fd, PCIDRIVER_KMEM_ALLOC, &req);

	if (out)
		*out = req;
	return ret;
}

static int mem_id(int fd, unsigned long cmd, uint32_t id)
{
	struct pcidriver_mem_id req = { .argsz = sizeof(req), .id = id };

	return raw_ioctl(fd, cmd, &req);
}

static int umem_map(int fd, const void *addr, uint64_t size, uint32_t flags,
		    struct pcidriver_umem_map *out)
{
	struct pcidriver_umem_map req = {
		.argsz = sizeof(req), .flags = flags, .vaddr = (uintptr_t)addr, .size = size,
	};
	int ret = raw_ioctl(fd, PCIDRIVER_UMEM_MAP, &req);

	if (out)
		*out = req;
	return ret;
}

static int mmap_err(int fd, size_t len, int flags, uint64_t off)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, (off_t)off);

	if (p == MAP_FAILED)
		return -errno;
	munmap(p, len);
	return 0;
}

#define ALL(...) all_eq((int[]){ __VA_ARGS__ }, sizeof((int[]){ __VA_ARGS__ }) / sizeof(int))

/* Pairs (got, expected): 1 if all equal, else prints the first mismatch. */
static int all_eq(const int *v, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2) {
		if (v[i] != v[i + 1]) {
			pdt_diag("case %zu: got %s, expected %s", i / 2, errname(v[i]),
				 errname(v[i + 1]));
			return 0;
		}
	}
	return 1;
}

static void badinput_run(void)
{
	const int RW = MAP_SHARED;
	const uint32_t TO = PCIDRIVER_UMEM_TO_DEVICE, FROM = PCIDRIVER_UMEM_FROM_DEVICE;
	struct pcidriver_device_info info = { .argsz = sizeof(info) };
	struct pcidriver_kmem_alloc ka;
	struct pcidriver_umem_map um;
	struct pcidriver_sg_entry sg[8];
	struct pcidriver_umem_sglist sgl;
	struct pcidriver_mem_id mid;
	struct pcidriver_umem_sync sync;
	struct pcidriver_config_rw cfg;
	struct pcidriver_irq_wait iw;
	struct pcidriver_irq_clear ic;
	char *unmapped, *ro, *odd_buf, *mis_buf;
	void *bar, *kp;
	uint64_t total;
	uint32_t word;
	pd_device *dev;
	pd_kmem *lk = NULL;
	int fd, a, b, c, d, e, i;

	fd = raw_open(0);
	if (fd < 0)
		return;
	a = raw_ioctl(fd, PCIDRIVER_GET_API_VERSION, NULL);
	CHECK(badinput_checks[0], a == PCIDRIVER_API_VERSION, "%d", a);

	a = raw_ioctl(fd, _IO(PCIDRIVER_TYPE, 0x7f), NULL);
	b = raw_ioctl(fd, _IO('x', 1), NULL);
	c = raw_ioctl(fd, _IOWR(PCIDRIVER_TYPE, 1, struct pcidriver_device_info), &info);
	CHECK(badinput_checks[1], ALL(a, -ENOTTY, b, -ENOTTY, c, -ENOTTY), " ");

	info.argsz = 8;
	a = raw_ioctl(fd, PCIDRIVER_DEVICE_GET_INFO, &info);
	ka = (struct pcidriver_kmem_alloc){ .argsz = 4, .size = 4096 };
	b = raw_ioctl(fd, PCIDRIVER_KMEM_ALLOC, &ka);
	iw = (struct pcidriver_irq_wait){ .argsz = sizeof(iw) - 4 };
	c = raw_ioctl(fd, PCIDRIVER_IRQ_WAIT, &iw);
	CHECK(badinput_checks[2], ALL(a, -EINVAL, b, -EINVAL, c, -EINVAL), " ");

	info = (struct pcidriver_device_info){ .argsz = sizeof(info), .flags = 0x80000000 };
	a = raw_ioctl(fd, PCIDRIVER_DEVICE_GET_INFO, &info);
	ka = (struct pcidriver_kmem_alloc){ .argsz = sizeof(ka), .flags = 1, .size = 4096 };
	b = raw_ioctl(fd, PCIDRIVER_KMEM_ALLOC, &ka);
	c = umem_map(fd, &word, 4, 4 | TO, NULL);
	sync = (struct pcidriver_umem_sync){ .argsz = sizeof(sync), .flags = 4 };
	d = raw_ioctl(fd, PCIDRIVER_UMEM_SYNC, &sync);
	CHECK(badinput_checks[3], ALL(a, -EINVAL, b, -EINVAL, c, -EINVAL, d, -EINVAL), " ");

	ka = (struct pcidriver_kmem_alloc){ .argsz = sizeof(ka), .size = 4096, .__reserved = 1 };
	a = raw_ioctl(fd, PCIDRIVER_KMEM_ALLOC, &ka);
	mid = (struct pcidriver_mem_id){ .argsz = sizeof(mid), .id = 1, .__reserved = 1 };
	b = raw_ioctl(fd, PCIDRIVER_KMEM_FREE, &mid);
	iw = (struct pcidriver_irq_wait){ .argsz = sizeof(iw), .__reserved = 2 };
	c = raw_ioctl(fd, PCIDRIVER_IRQ_WAIT, &iw);
	CHECK(badinput_checks[4], ALL(a, -EINVAL, b, -EINVAL, c, -EINVAL), " ");

	/* PROT_NONE keeps the range reserved: no later mmap lands there */
	unmapped = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	a = raw_ioctl(fd, PCIDRIVER_DEVICE_GET_INFO, NULL);
	b = raw_ioctl(fd, PCIDRIVER_KMEM_ALLOC, unmapped);
	c = raw_ioctl(fd, PCIDRIVER_IRQ_WAIT, unmapped + 100);
	cfg = (struct pcidriver_config_rw){ .argsz = sizeof(cfg), .count = 4,
					    .data = (uintptr_t)unmapped };
	d = raw_ioctl(fd, PCIDRIVER_CONFIG_READ, &cfg);
	/* a struct that ends in an unmapped page */
	mis_buf = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mprotect(mis_buf + 4096, 4096, PROT_NONE);
	memset(mis_buf, 0, 4096);
	*(uint32_t *)(mis_buf + 4096 - 8) = sizeof(struct pcidriver_umem_sglist);
	e = raw_ioctl(fd, PCIDRIVER_UMEM_GET_SGLIST, mis_buf + 4096 - 8);
	CHECK(badinput_checks[5], ALL(a, -EFAULT, b, -EFAULT, c, -EFAULT, d, -EFAULT,
				      e, -EFAULT), " ");

	odd_buf = malloc(sizeof(info) + 16);
	memset(odd_buf, 0, sizeof(info) + 16);
	word = sizeof(info);
	memcpy(odd_buf + 3, &word, 4);
	a = raw_ioctl(fd, PCIDRIVER_DEVICE_GET_INFO, odd_buf + 3);
	memcpy(&info, odd_buf + 3, sizeof(info));
	CHECK(badinput_checks[6], !a && info.vendor == EDU_VENDOR && info.device == EDU_DEVICE,
	      "%s", errname(a));
	free(odd_buf);

	a = kmem_alloc(fd, 0, NULL);
	CHECK(badinput_checks[7], a == -EINVAL, "%s", errname(a));

	a = kmem_alloc(fd, PCIDRIVER_KMEM_MAX_SIZE + 1, NULL);
	b = kmem_alloc(fd, 1ULL << 40, NULL);
	c = kmem_alloc(fd, ~0ULL, NULL);
	if (!pd_open("/dev/fpga0", &dev)) {
		d = pd_kmem_alloc(dev, (size_t)1 << 40, &lk);
		pd_close(dev);
	} else {
		d = 0;
	}
	CHECK(badinput_checks[8], ALL(a, -EINVAL, b, -EINVAL, c, -EINVAL, d, -EINVAL), " ");

	a = kmem_alloc(fd, 64 << 20, &ka);
	b = a ? 0 : mem_id(fd, PCIDRIVER_KMEM_FREE, ka.id);
	pdt_diag("64 MiB kmem: %s", errname(a));
	CHECK(badinput_checks[9], (a == -ENOMEM || !a) && !b && stat_long(0, "kmem_count") == 0,
	      "%s / free %s", errname(a), errname(b));

	a = umem_map(fd, &word, 0, TO, NULL);
	b = umem_map(fd, &word, 4, 0, NULL);
	CHECK(badinput_checks[10], ALL(a, -EINVAL, b, -EINVAL), " ");

	a = umem_map(fd, &word, PCIDRIVER_UMEM_MAX_SIZE + 1, TO, NULL);
	b = umem_map(fd, (void *)(uintptr_t)~0xfffULL, 8192, TO, NULL);
	CHECK(badinput_checks[11], ALL(a, -EINVAL, b, -EINVAL), " ");

	a = umem_map(fd, unmapped, 8192, TO, NULL);
	b = umem_map(fd, unmapped + 4095, 2, FROM, NULL);
	c = umem_map(fd, mis_buf, 8192, TO, NULL);	/* second page unmapped */
	d = umem_map(fd, NULL, 4096, TO, NULL);
	CHECK(badinput_checks[12], ALL(a, -EFAULT, b, -EFAULT, c, -EFAULT, d, -EFAULT), " ");

	ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	a = umem_map(fd, ro, 8192, FROM, NULL);
	b = umem_map(fd, ro, 8192, TO, &um);	/* reading it is fine */
	c = b ? b : mem_id(fd, PCIDRIVER_UMEM_UNMAP, um.id);
	CHECK(badinput_checks[13], ALL(a, -EFAULT, b, 0, c, 0), " ");

	bar = mmap(NULL, 4096, PROT_READ | PROT_WRITE, RW, fd, (off_t)PCIDRIVER_MMAP_BAR(0));
	a = bar == MAP_FAILED ? -errno : umem_map(fd, bar, 4096, TO, NULL);
	b = kmem_alloc(fd, 8192, &ka);
	kp = b ? MAP_FAILED : mmap(NULL, 8192, PROT_READ | PROT_WRITE, RW, fd,
				   (off_t)ka.mmap_offset);
	c = kp == MAP_FAILED ? -errno : umem_map(fd, kp, 8192, TO, NULL);
	CHECK(badinput_checks[14], ALL(a, -EFAULT, b, 0, c, -EFAULT), " ");

	odd_buf = malloc(3 * 4096);
	a = umem_map(fd, odd_buf + 1, 2 * 4096 + 3, TO | FROM, &um);
	sgl = (struct pcidriver_umem_sglist){ .argsz = sizeof(sgl), .id = um.id, .count = 8,
					      .entries = (uintptr_t)sg };
	b = a ? a : raw_ioctl(fd, PCIDRIVER_UMEM_GET_SGLIST, &sgl);
	for (i = 0, total = 0; !b && i < (int)sgl.count; i++)
		total += sg[i].length;
	CHECK(badinput_checks[15], !a && !b && sgl.count == um.sg_count && sgl.total == um.sg_count &&
	      total == 2 * 4096 + 3, "%s %s, %u entries, %llu bytes", errname(a), errname(b),
	      sgl.count, (unsigned long long)total);

	sgl = (struct pcidriver_umem_sglist){ .argsz = sizeof(sgl), .id = um.id, .count = 8,
					      .entries = (uintptr_t)unmapped };
	a = raw_ioctl(fd, PCIDRIVER_UMEM_GET_SGLIST, &sgl);
	CHECK(badinput_checks[16], a == -EFAULT, "%s", errname(a));

	sgl = (struct pcidriver_umem_sglist){ .argsz = sizeof(sgl), .id = um.id, .count = 8,
					      .first = um.sg_count + 1,
					      .entries = (uintptr_t)sg };
	a = raw_ioctl(fd, PCIDRIVER_UMEM_GET_SGLIST, &sgl);
	sgl.first = um.sg_count;
	sgl.entries = (uintptr_t)unmapped;	/* nothing is copied, so never touched */
	b = raw_ioctl(fd, PCIDRIVER_UMEM_GET_SGLIST, &sgl);
	CHECK(badinput_checks[17], a == -EINVAL && !b && sgl.count == 0 &&
	      sgl.total == um.sg_count, "%s %s count %u", errname(a), errname(b), sgl.count);

	a = mem_id(fd, PCIDRIVER_UMEM_UNMAP, um.id);
	b = mem_id(fd, PCIDRIVER_UMEM_UNMAP, um.id);		/* freed */
	sync = (struct pcidriver_umem_sync){ .argsz = sizeof(sync),
					     .flags = PCIDRIVER_SYNC_FOR_CPU, .id = um.id };
	c = raw_ioctl(fd, PCIDRIVER_UMEM_SYNC, &sync);
	d = mem_id(fd, PCIDRIVER_KMEM_FREE, 0);
	e = mem_id(fd, PCIDRIVER_KMEM_FREE, PCIDRIVER_ID_MAX);	/* never allocated */
	CHECK(badinput_checks[18], ALL(a, 0, b, -ENOENT, c, -ENOENT, d, -ENOENT, e, -ENOENT),
	      " ");
	free(odd_buf);

	a = umem_map(fd, ro, 4096, TO, &um);
	sync = (struct pcidriver_umem_sync){ .argsz = sizeof(sync), .id = um.id };
	b = raw_ioctl(fd, PCIDRIVER_UMEM_SYNC, &sync);
	sync.flags = PCIDRIVER_SYNC_FOR_CPU | PCIDRIVER_SYNC_FOR_DEVICE;
	c = raw_ioctl(fd, PCIDRIVER_UMEM_SYNC, &sync);
	mem_id(fd, PCIDRIVER_UMEM_UNMAP, um.id);
	CHECK(badinput_checks[19], ALL(a, 0, b, -EINVAL, c, -EINVAL), " ");

	a = mmap_err(fd, 4096, RW, PCIDRIVER_MMAP_BAR(0) + (1 << 20));
	b = mmap_err(fd, 2 << 20, RW, PCIDRIVER_MMAP_BAR(0));
	c = mmap_err(fd, 8192, RW, PCIDRIVER_MMAP_BAR(0) + (1 << 20) - 4096);
	d = mmap_err(fd, 4096, RW, PCIDRIVER_MMAP_BAR(0) + (1 << 20) - 4096); /* last page: ok */
	CHECK(badinput_checks[20], ALL(a, -EINVAL, b, -EINVAL, c, -EINVAL, d, 0), " ");

	a = mmap_err(fd, 4096, RW, PCIDRIVER_MMAP_BAR(1));
	b = mmap_err(fd, 4096, RW, PCIDRIVER_MMAP_BAR(5));
	c = mmap_err(fd, 4096, RW, 6ULL << PCIDRIVER_MMAP_REGION_SHIFT);
	d = mmap_err(fd, 4096, RW, 0xeULL << PCIDRIVER_MMAP_REGION_SHIFT);
	e = mmap_err(fd, 4096, RW, 1ULL << 44);
	CHECK(badinput_checks[21], ALL(a, -EINVAL, b, -EINVAL, c, -EINVAL, d, -EINVAL,
				       e, -EINVAL), " ");

	a = mmap_err(fd, 4096, MAP_PRIVATE, PCIDRIVER_MMAP_BAR(0));
	b = mmap_err(fd, 4096, MAP_PRIVATE, ka.mmap_offset);
	CHECK(badinput_checks[22], ALL(a, -EINVAL, b, -EINVAL), " ");

	a = mmap_err(fd, 3 * 4096, RW, ka.mmap_offset);
	b = mmap_err(fd, 4096, RW, ka.mmap_offset + 4096);
	c = mmap_err(fd, 4096, RW, ka.mmap_offset);		/* a prefix is fine */
	CHECK(badinput_checks[23], ALL(a, -EINVAL, b, -EINVAL, c, 0), " ");

	a = kp == MAP_FAILED ? -EINVAL : (munmap((char *)kp + 4096, 4096) ? -errno : 0);
	b = bar == MAP_FAILED ? -EINVAL : (munmap(bar, 2048) ? -errno : 0); /* whole page: ok */
	bar = mmap(NULL, 8192, PROT_READ | PROT_WRITE, RW, fd, (off_t)PCIDRIVER_MMAP_BAR(0));
	c = bar == MAP_FAILED ? -errno : (mprotect(bar, 4096, PROT_READ) ? -errno : 0);
	CHECK(badinput_checks[24], ALL(a, -EINVAL, b, 0, c, -EINVAL), " ");
	if (bar != MAP_FAILED)
		munmap(bar, 8192);
	if (kp != MAP_FAILED)
		munmap(kp, 8192);
	mem_id(fd, PCIDRIVER_KMEM_FREE, ka.id);

	cfg = (struct pcidriver_config_rw){ .argsz = sizeof(cfg), .count = 0,
					    .data = (uintptr_t)&word };
	a = raw_ioctl(fd, PCIDRIVER_CONFIG_READ, &cfg);
	cfg.offset = 256;
	cfg.count = 1;
	b = raw_ioctl(fd, PCIDRIVER_CONFIG_READ, &cfg);
	cfg.offset = 0xffffffff;
	c = raw_ioctl(fd, PCIDRIVER_CONFIG_READ, &cfg);
	cfg.offset = 252;
	cfg.count = 0xffffffff;
	d = raw_ioctl(fd, PCIDRIVER_CONFIG_READ, &cfg);
	CHECK(badinput_checks[25], ALL(a, -EINVAL, b, -EINVAL, c, -EINVAL, d, -EINVAL), " ");

	iw = (struct pcidriver_irq_wait){ .argsz = sizeof(iw), .source = 1 };
	a = raw_ioctl(fd, PCIDRIVER_IRQ_WAIT, &iw);
	ic = (struct pcidriver_irq_clear){ .argsz = sizeof(ic), .source = 0xffffffff };
	b = raw_ioctl(fd, PCIDRIVER_IRQ_CLEAR, &ic);
	CHECK(badinput_checks[26], ALL(a, -EINVAL, b, -EINVAL), " ");

	munmap(mis_buf, 8192);
	munmap(unmapped, 8192);
	munmap(ro, 8192);
	close(fd);
}

const struct pdt_group grp_badinput = { "badinput", badinput_checks, badinput_run };
