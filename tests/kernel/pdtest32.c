// SPDX-License-Identifier: GPL-2.0
/*
 * pdtest32: the compat32 checks (t_compat.c declares their names), built as a static i386
 * program together with libpcidriver's front end (pcidriver.c), its backend registry and
 * kernel backend. No other backend is part of this build.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "pcidriver/pcidriver.h"
#include "pdtest.h"

extern const char *const compat32_checks[];

const char *pdt_module_path = "/pcidriver.ko";

void pdt_check(const char *name, int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s - %s\n", cond ? "ok" : "not ok", name);
	if (!cond && fmt && *fmt) {
		fputs("# ", stdout);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		fputc('\n', stdout);
	}
	fflush(stdout);
}

void pdt_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
}

int main(void)
{
	struct pd_info info;
	struct pd_sg_entry sg[16];
	struct pd_regs regs;
	pd_device *dev;
	pd_kmem *km = NULL;
	pd_umem *um = NULL;
	uint8_t *src = NULL, *dst;
	size_t i, total = 0, off = 0;
	int ret, n, e1 = 0, bad = 0, w;

	if (sizeof(void *) != 4)
		pdt_diag("warning: not a 32-bit build");
	ret = pd_open("/dev/fpga0", &dev);
	if (!ret)
		ret = pd_info(dev, &info);
	CHECK(compat32_checks[0], !ret && info.vendor == EDU_VENDOR &&
	      info.bar[0].size == 1 << 20 && info.abi_version == PCIDRIVER_API_VERSION, "%s", errname(ret));
	if (ret)
		return 1;

	ret = pd_regs_get(dev, 0, &regs);
	if (!ret)
		pd_reg_write32(&regs, EDU_LIVE, 0x600d);
	CHECK(compat32_checks[1], !ret && pd_reg_read32(&regs, EDU_ID) == 0x010000ed &&
	      pd_reg_read32(&regs, EDU_LIVE) == ~0x600du, "regs");

	ret = pd_kmem_alloc(dev, 8192, &km);
	if (!ret)
		memset(pd_kmem_ptr(km), 0, 8192);
	CHECK(compat32_checks[2], !ret && pd_kmem_ptr(km) && pd_kmem_bus_addr(km), "kmem");

	if (posix_memalign((void **)&src, 4096, 3 * 4096))
		return 1;
	for (i = 0; i < 3 * 4096; i++)
		src[i] = (uint8_t)(i * 13 + 5);
	ret = pd_umem_map(dev, src + 10, 5000, PD_DMA_TO_DEVICE, &um);
	n = ret ? ret : pd_umem_sglist(um, sg, 16);
	for (i = 0; n > 0 && i < (size_t)n; i++)
		total += sg[i].length;
	CHECK(compat32_checks[3], !ret && n >= 1 && total == 5000 &&
	      sg[0].bus_addr + total < (1ULL << EDU_DMA_BITS),
	      "map %s, %d entries, %llu bytes, first %#llx+%#llx", errname(ret), n,
	      (unsigned long long)total, (unsigned long long)sg[0].bus_addr,
	      (unsigned long long)sg[0].length);

	/* umem -> edu -> kmem in pieces of at most 2 KiB */
	for (i = 0; !ret && !e1 && i < (size_t)n; i++) {
		uint64_t done = 0;

		while (!e1 && done < sg[i].length) {
			uint32_t len = sg[i].length - done > 2048 ? 2048 :
				       (uint32_t)(sg[i].length - done);

			e1 = edu_dma(&regs, sg[i].bus_addr + done, 0, len, 0, 0);
			if (!e1)
				e1 = edu_dma(&regs, pd_kmem_bus_addr(km) + off, 0, len, 1, 0);
			done += len;
			off += len;
		}
	}
	dst = km ? pd_kmem_ptr(km) : NULL;
	for (i = 0; dst && i < 5000; i++)
		bad += dst[i] != src[10 + i];
	CHECK(compat32_checks[4], !ret && !e1 && dst && !bad, "dma %s, %d bytes differ",
	      errname(e1), bad);

	pd_reg_write32(&regs, EDU_IRQ_RAISE, 1);
	w = pd_irq_wait(dev, 0, 2000);
	pd_reg_write32(&regs, EDU_IRQ_ACK, 1);
	CHECK(compat32_checks[5], w >= 1, "wait");

	{
		struct pcidriver_kmem_alloc ka = { .argsz = sizeof(ka), .size = 4096 };
		int fd = raw_open(0), a, b, c;

		a = raw_ioctl(fd, _IO(PCIDRIVER_TYPE, 0x7e), NULL);
		b = raw_ioctl(fd, PCIDRIVER_KMEM_ALLOC, (void *)16);
		c = raw_ioctl(fd, PCIDRIVER_GET_API_VERSION, NULL);
		ret = raw_ioctl(fd, PCIDRIVER_KMEM_ALLOC, &ka);
		close(fd);
		CHECK(compat32_checks[6], a == -ENOTTY && b == -EFAULT &&
		      c == PCIDRIVER_API_VERSION && !ret && ka.id &&
		      ka.mmap_offset == PCIDRIVER_MMAP_KMEM(ka.id), "raw");
	}
	pd_close(dev);
	free(src);
	return 0;
}
