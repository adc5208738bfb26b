// SPDX-License-Identifier: GPL-2.0
/*
 * pdtest groups: kmem, umem, twodev. Data moves through edu's DMA engine (at most 4 KiB per
 * transfer, through its buffer at 0x40000, 28-bit bus addresses) and is compared byte for byte.
 * Under swiotlb=force the umem test fails unless the syncs are right (bounce buffers).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pdtest.h"

void fill(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + seed + (i >> 8));
}

size_t diff(const uint8_t *a, const uint8_t *b, size_t len, size_t *first)
{
	size_t i, n = 0;

	*first = len;
	for (i = 0; i < len; i++) {
		if (a[i] != b[i]) {
			if (!n)
				*first = i;
			n++;
		}
	}
	return n;
}

/* ---------------------------------------------------------------- kmem */

static const char *const kmem_checks[] = {
	"kmem: alloc 64 KiB: mapped, page-aligned bus address below the 28-bit mask",
	"kmem: sysfs counts the allocation",
	"kmem: edu DMA kmem -> device -> kmem, 4000 bytes compared",
	"kmem: a second kmem has another ID and bus address",
	"kmem: free returns the sysfs counts to zero",
	NULL,
};

static void kmem_run(void)
{
	const size_t size = 64 << 10;
	pd_kmem *km = NULL, *km2 = NULL;
	struct pd_regs regs;
	size_t first = 0, nd;
	pd_device *dev;
	uint8_t *p;
	uint64_t bus;
	int ret, r1, r2;

	if (pd_open("/dev/fpga0", &dev) || pd_regs_get(dev, 0, &regs))
		return;
	ret = pd_kmem_alloc(dev, size, &km);
	p = km ? pd_kmem_ptr(km) : NULL;
	bus = km ? pd_kmem_bus_addr(km) : 0;
	CHECK(kmem_checks[0],
	      !ret && p && pd_kmem_size(km) == size && pd_kmem_id(km) && bus &&
	      !(bus & 4095) && bus + size <= (1ULL << EDU_DMA_BITS),
	      "ret %s bus %#" PRIx64, errname(ret), bus);
	if (ret)
		goto out;
	CHECK(kmem_checks[1], stat_long(0, "kmem_count") == 1 &&
	      stat_long(0, "kmem_bytes") == (long)size, "count %ld bytes %ld",
	      stat_long(0, "kmem_count"), stat_long(0, "kmem_bytes"));

	fill(p, 4096, 1);
	memset(p + 8192, 0, 4096);
	r1 = edu_dma(&regs, bus, 0, 4000, 0, 0);
	r2 = edu_dma(&regs, bus + 8192, 0, 4000, 1, 0);
	nd = diff(p, p + 8192, 4000, &first);
	nd += p[8192 + 4000] != 0;	/* nothing beyond */
	CHECK(kmem_checks[2], !r1 && !r2 && !nd, "dma %s/%s, %zu bytes differ from %zu",
	      errname(r1), errname(r2), nd, first);

	ret = pd_kmem_alloc(dev, 4096, &km2);
	CHECK(kmem_checks[3], !ret && pd_kmem_id(km2) != pd_kmem_id(km) &&
	      pd_kmem_bus_addr(km2) != bus && stat_long(0, "kmem_count") == 2,
	      "ret %s", errname(ret));
	if (km2)
		pd_kmem_free(km2);
	r1 = pd_kmem_free(km);
	km = NULL;
	CHECK(kmem_checks[4], !r1 && stat_long(0, "kmem_count") == 0 &&
	      stat_long(0, "kmem_bytes") == 0, "free %s, count %ld", errname(r1),
	      stat_long(0, "kmem_count"));
out:
	pd_close(dev);
}

const struct pdt_group grp_kmem = { "kmem", kmem_checks, kmem_run };

/* ---------------------------------------------------------------- umem */

static const char *const umem_checks[] = {
	"umem: map an unaligned 4-page malloc'd range for the device to read",
	"umem: its SG list covers exactly the range, within max segment size and DMA mask",
	"umem: map an unaligned 5-page range for the device to write",
	"umem: sysfs counts the mappings and pinned bytes",
	"umem: edu DMA per SG entry, source -> device -> destination, byte for byte",
	"umem: bytes around the destination range are untouched",
	"umem: unmap returns the sysfs counts to zero",
	NULL,
};

static int sg_ok(const pd_umem *um, uint32_t max_seg, size_t size)
{
	struct pd_sg_entry sg[64];
	size_t total = 0;
	int n, i;

	n = pd_umem_sglist((pd_umem *)um, sg, 64);
	if (n <= 0 || (size_t)n != pd_umem_sg_count(um))
		return 0;
	for (i = 0; i < n; i++) {
		if (!sg[i].length || sg[i].length > max_seg ||
		    sg[i].bus_addr + sg[i].length > (1ULL << EDU_DMA_BITS))
			return 0;
		total += sg[i].length;
	}
	return total == size;
}

int copy_through_edu(const struct pd_regs *regs, pd_umem *src, pd_umem *dst, size_t size,
			    int *ops)
{
	struct pd_sg_entry s[64], d[64];
	int ns = pd_umem_sglist(src, s, 64), ndst = pd_umem_sglist(dst, d, 64);
	size_t is = 0, id = 0, os = 0, od = 0, done = 0;
	int ret;

	if (ns <= 0 || ndst <= 0)
		return -EINVAL;
	while (done < size) {
		size_t n = size - done;

		if (is >= (size_t)ns || id >= (size_t)ndst)
			return -EINVAL;
		if (n > s[is].length - os)
			n = s[is].length - os;
		if (n > d[id].length - od)
			n = d[id].length - od;
		if (n > 2048)	/* below EDU_DMA_MAX, and the pieces vary in alignment */
			n = 2048;
		ret = edu_dma(regs, s[is].bus_addr + os, 0, (uint32_t)n, 0, 0);
		if (!ret)
			ret = edu_dma(regs, d[id].bus_addr + od, 0, (uint32_t)n, 1, 0);
		if (ret)
			return ret;
		*ops += 2;
		done += n;
		os += n;
		od += n;
		if (os == s[is].length) {
			is++;
			os = 0;
		}
		if (od == d[id].length) {
			id++;
			od = 0;
		}
	}
	return 0;
}

static void umem_run(void)
{
	const size_t size = 3 * 4096 + 1000;
	uint8_t *sbuf = NULL, *dbuf = NULL, *expect = NULL, *src, *dst;
	pd_umem *us = NULL, *ud = NULL;
	struct pd_regs regs;
	struct pd_info info;
	size_t first = 0, nd, nguard = 0, i;
	uint32_t max_seg;
	pd_device *dev;
	int ret, ops = 0;

	if (pd_open("/dev/fpga0", &dev) || pd_regs_get(dev, 0, &regs) || pd_info(dev, &info))
		return;
	if (posix_memalign((void **)&sbuf, 4096, 5 * 4096) ||
	    posix_memalign((void **)&dbuf, 4096, 6 * 4096))
		return;
	expect = malloc(size);
	memset(sbuf, 0, 5 * 4096);
	memset(dbuf, 0xee, 6 * 4096);
	src = sbuf + 100;
	dst = dbuf + 4000;
	max_seg = 65536;	/* the PCI core's default, which the driver keeps */

	ret = pd_umem_map(dev, src, size, PD_DMA_TO_DEVICE, &us);
	CHECK(umem_checks[0], !ret && pd_umem_sg_count(us) >= 1 && pd_umem_id(us),
	      "ret %s", errname(ret));
	if (ret)
		goto out;
	CHECK(umem_checks[1], sg_ok(us, max_seg, size), "%zu entries", pd_umem_sg_count(us));
	ret = pd_umem_map(dev, dst, size, PD_DMA_FROM_DEVICE, &ud);
	CHECK(umem_checks[2], !ret && sg_ok(ud, max_seg, size) && pd_umem_id(ud) != pd_umem_id(us),
	      "ret %s", errname(ret));
	if (ret)
		goto out;
	CHECK(umem_checks[3], stat_long(0, "umem_count") == 2 &&
	      stat_long(0, "umem_pinned_bytes") == (4 + 5) * 4096,
	      "count %ld pinned %ld", stat_long(0, "umem_count"),
	      stat_long(0, "umem_pinned_bytes"));

	/* written after the map: only the sync makes it visible through bounce buffers */
	fill(src, size, 3);
	memcpy(expect, src, size);
	ret = pd_umem_sync(us, PD_SYNC_FOR_DEVICE);
	if (!ret)
		ret = copy_through_edu(&regs, us, ud, size, &ops);
	if (!ret)
		ret = pd_umem_sync(ud, PD_SYNC_FOR_CPU);
	nd = diff(expect, dst, size, &first);
	CHECK(umem_checks[4], !ret && !nd, "ret %s after %d DMAs, %zu bytes differ from %zu",
	      errname(ret), ops, nd, first);
	for (i = 0; i < 6 * 4096; i++)
		if ((dbuf + i < dst || dbuf + i >= dst + size) && dbuf[i] != 0xee)
			nguard++;
	CHECK(umem_checks[5], !nguard, "%zu bytes outside the range changed", nguard);

	ret = pd_umem_unmap(us);
	us = NULL;
	if (!ret)
		ret = pd_umem_unmap(ud);
	ud = NULL;
	CHECK(umem_checks[6], !ret && stat_long(0, "umem_count") == 0 &&
	      stat_long(0, "umem_pinned_bytes") == 0, "ret %s count %ld", errname(ret),
	      stat_long(0, "umem_count"));
	pdt_diag("umem: %d edu DMA transfers", ops);
out:
	pd_close(dev);
	free(sbuf);
	free(dbuf);
	free(expect);
}

const struct pdt_group grp_umem = { "umem", umem_checks, umem_run };

/* ---------------------------------------------------------------- twodev */

static const char *const twodev_checks[] = {
	"twodev: /dev/fpga0 and /dev/fpga1 are different PCI devices",
	"twodev: their registers are independent",
	"twodev: an interrupt of one device does not wake the other",
	"twodev: kmem DMA on the second device",
	NULL,
};

static void twodev_run(void)
{
	pd_device *d0, *d1;
	struct pd_info i0, i1;
	struct pd_regs r0, r1;
	pd_kmem *km = NULL;
	size_t first, nd = 1;
	int ret, w0, w1, e1 = 0, e2 = 0;
	uint8_t *p;

	if (pd_open("/dev/fpga0", &d0) || pd_open("/dev/fpga1", &d1))
		return;
	ret = pd_info(d0, &i0) | pd_info(d1, &i1) | pd_regs_get(d0, 0, &r0) |
	      pd_regs_get(d1, 0, &r1);
	CHECK(twodev_checks[0], !ret && strcmp(i0.name, i1.name) &&
	      i0.bar[0].bus_addr != i1.bar[0].bus_addr, "%s vs %s", i0.name, i1.name);
	if (ret)
		return;
	pd_reg_write32(&r0, EDU_LIVE, 0x11111111);
	pd_reg_write32(&r1, EDU_LIVE, 0x22222222);
	CHECK(twodev_checks[1], pd_reg_read32(&r0, EDU_LIVE) == ~0x11111111u &&
	      pd_reg_read32(&r1, EDU_LIVE) == ~0x22222222u, "cross talk");

	pd_irq_clear(d0, 0);
	pd_irq_clear(d1, 0);
	pd_reg_write32(&r1, EDU_IRQ_RAISE, 1);
	w1 = pd_irq_wait(d1, 0, 2000);
	w0 = pd_irq_wait(d0, 0, 200);
	pd_reg_write32(&r1, EDU_IRQ_ACK, 1);
	CHECK(twodev_checks[2], w1 == 1 && w0 == -ETIMEDOUT, "fpga1 %d, fpga0 %d", w1, w0);

	ret = pd_kmem_alloc(d1, 8192, &km);
	if (!ret) {
		p = pd_kmem_ptr(km);
		fill(p, 4096, 9);
		memset(p + 4096, 0, 4096);
		e1 = edu_dma(&r1, pd_kmem_bus_addr(km), 0, 4000, 0, 0);
		e2 = edu_dma(&r1, pd_kmem_bus_addr(km) + 4096, 0, 4000, 1, 0);
		nd = diff(p, p + 4096, 4000, &first);
	}
	CHECK(twodev_checks[3], !ret && !e1 && !e2 && !nd, "alloc %s dma %s/%s diff %zu",
	      errname(ret), errname(e1), errname(e2), nd);
	pd_close(d1);
	pd_close(d0);
}

const struct pdt_group grp_twodev = { "twodev", twodev_checks, twodev_run };
