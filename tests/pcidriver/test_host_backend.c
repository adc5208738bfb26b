// SPDX-License-Identifier: GPL-2.0
/*
 * A fourth backend in a page: how a board that is not a kernel device (a remote board,
 * another simulator) gets the strict host side of emu: and sim: by embedding the host object
 * (vboard/src/host.h). "demo:" is a toy device with one command register: write a pattern to
 * a bus address, or read from one and sum the bytes, 4 KiB per device access, then an MSI on
 * vector 0. Everything on the host's side (the host options of the one options table, bus
 * addresses that fault unless handed out, kmem, umem and its SG layouts, MSI counters and
 * waits) is the host object's, so the checks below hold for it as they do for emu: and sim:.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "pcidriver/backend.h"
#include "host.h"
#include "options.h"

#define has(hay, needle) (strstr((hay), (needle)) != NULL)

/* ------------------------------------------------------------------ the backend */

enum { R_ADDR_LO = 0x00, R_ADDR_HI = 0x04, R_LEN = 0x08, R_CMD = 0x0c, R_STATUS = 0x10,
       R_SEED = 0x14, R_SUM = 0x18, R_SIZE = 0x40 };
enum { CMD_WRITE = 1, CMD_READ = 2 };
enum { ST_OK = 0, ST_FAULT = 1 };

struct demo {
	struct vb_host host;          /* the whole host side: one struct */
	uint32_t reg[R_SIZE / 4];
};

/* The device's command: in the caller's thread, one device access per 4 KiB (reader lock 0). */
static void demo_run(struct demo *d, uint32_t cmd)
{
	uint64_t addr = d->reg[R_ADDR_LO / 4] | (uint64_t)d->reg[R_ADDR_HI / 4] << 32;
	uint32_t len = d->reg[R_LEN / 4], off, n, i, sum = 0;
	uint8_t buf[4096];

	d->reg[R_STATUS / 4] = ST_OK;
	for (off = 0; off < len; off += n) {
		n = len - off < sizeof(buf) ? len - off : (uint32_t)sizeof(buf);
		if (cmd == CMD_WRITE)
			for (i = 0; i < n; i++)
				buf[i] = (uint8_t)(d->reg[R_SEED / 4] + off + i);
		if (!vb_host_dma(&d->host, 0, addr + off, buf, n,
				 cmd == CMD_WRITE ? VB_ACC_WRITE : VB_ACC_READ)) {
			d->reg[R_STATUS / 4] = ST_FAULT;
			break;
		}
		if (cmd == CMD_READ)
			for (i = 0; i < n; i++)
				sum += buf[i];
	}
	d->reg[R_SUM / 4] = sum;
	vb_host_msi(&d->host, 0);
}

static uint32_t demo_read(void *ctx, uint64_t off)
{
	return off < R_SIZE ? ((struct demo *)ctx)->reg[off / 4] : 0xffffffffu;
}

static void demo_write(void *ctx, uint64_t off, uint32_t v)
{
	struct demo *d = ctx;

	if (off == R_CMD)
		demo_run(d, v);
	else if (off < R_SIZE)
		d->reg[off / 4] = v;
}

static int demo_open(const char *name, void **dev)
{
	struct vb_options opts;
	struct demo *d;
	int ret = vb_parse_options(VB_HOST, name, &opts);   /* sg=, maxseg=, kmax=, iova=, seed= */

	if (ret)
		return ret;
	d = aligned_alloc(VB_CACHELINE, (sizeof(*d) + VB_CACHELINE - 1) & ~(size_t)(VB_CACHELINE - 1));
	if (!d)
		return -ENOMEM;
	memset(d, 0, sizeof(*d));
	ret = vb_host_init(&d->host, &opts.host, 1);
	if (ret) {
		free(d);
		return ret;
	}
	*dev = d;
	return 0;
}

static void demo_close(void *dev)
{
	struct demo *d = dev;

	vb_host_destroy(&d->host);
	free(d);
}

static int demo_info(void *dev, struct pd_info *info)
{
	info->backend = 99;
	info->irq_count = 1;
	info->bar[0].size = R_SIZE;
	info->bar[0].flags = PD_BAR_PRESENT;
	return 0;
}

static int demo_map_bar(void *dev, unsigned int bar, unsigned int flags, void **addr, size_t *size)
{
	return -EOPNOTSUPP;   /* registers through pd_regs_get */
}

static int demo_unmap_bar(void *dev, unsigned int bar, void *addr, size_t size)
{
	return -EINVAL;
}

static int demo_regs_get(void *dev, unsigned int bar, struct pd_regs *regs)
{
	if (bar)
		return -EINVAL;
	*regs = (struct pd_regs){ .size = R_SIZE, .ctx = dev, .read32 = demo_read,
				  .write32 = demo_write };
	return 0;
}

static int demo_cfg_read(void *dev, uint32_t off, void *buf, size_t len)
{
	memset(buf, 0, len);
	return 0;
}

static int demo_cfg_write(void *dev, uint32_t off, const void *buf, size_t len)
{
	return -EPERM;
}

/* The host side: one line each. */
static int demo_kmem_alloc(void *dev, struct pd_backend_kmem *km)
{
	return vb_kmem_alloc(&((struct demo *)dev)->host, km);
}

static int demo_kmem_free(void *dev, struct pd_backend_kmem *km)
{
	return vb_kmem_free(&((struct demo *)dev)->host, km);
}

static int demo_umem_map(void *dev, struct pd_backend_umem *um)
{
	return vb_umem_map(&((struct demo *)dev)->host, um);
}

static int demo_umem_unmap(void *dev, struct pd_backend_umem *um)
{
	return vb_umem_unmap(&((struct demo *)dev)->host, um);
}

static int demo_umem_sync(void *dev, struct pd_backend_umem *um, enum pd_sync_dir dir)
{
	return 0;
}

static int demo_irq_wait(void *dev, unsigned int source, uint32_t timeout_ms)
{
	return vb_irq_wait(&((struct demo *)dev)->host, source, timeout_ms);
}

static int demo_irq_clear(void *dev, unsigned int source)
{
	return vb_irq_clear(&((struct demo *)dev)->host, source);
}

static int demo_dmabuf_import(void *dev, int fd, struct pd_backend_umem *um)
{
	return vb_dmabuf_import(&((struct demo *)dev)->host, fd, um);
}

static const struct pd_backend_ops demo_ops = {
	.abi = PD_BACKEND_ABI,
	.size = sizeof(struct pd_backend_ops),
	.prefix = "demo",
	.open = demo_open,
	.close = demo_close,
	.info = demo_info,
	.map_bar = demo_map_bar,
	.unmap_bar = demo_unmap_bar,
	.regs_get = demo_regs_get,
	.cfg_read = demo_cfg_read,
	.cfg_write = demo_cfg_write,
	.kmem_alloc = demo_kmem_alloc,
	.kmem_free = demo_kmem_free,
	.umem_map = demo_umem_map,
	.umem_unmap = demo_umem_unmap,
	.umem_sync = demo_umem_sync,
	.irq_wait = demo_irq_wait,
	.irq_clear = demo_irq_clear,
	.dmabuf_import = demo_dmabuf_import,
};

/* ------------------------------------------------------------------ the checks */

static pd_device *dev;
static struct pd_regs regs;

static void open_demo(const char *name)
{
	ck_assert_int_eq(pd_backend_register(&demo_ops), 0);
	ck_assert_msg(pd_open(name, &dev) == 0, "%s: %s", name, pd_open_error());
	ck_assert_int_eq(pd_regs_get(dev, 0, &regs), 0);
}

/* Runs a command on [bus, bus + len); the device's status. */
static uint32_t command(uint32_t cmd, uint64_t bus, uint32_t len, uint32_t seed)
{
	pd_reg_write32(&regs, R_ADDR_LO, (uint32_t)bus);
	pd_reg_write32(&regs, R_ADDR_HI, (uint32_t)(bus >> 32));
	pd_reg_write32(&regs, R_LEN, len);
	pd_reg_write32(&regs, R_SEED, seed);
	pd_reg_write32(&regs, R_CMD, cmd);
	ck_assert_int_eq(pd_irq_wait(dev, 0, 1000), 1);   /* one MSI per command */
	return pd_reg_read32(&regs, R_STATUS);
}

static void check_pattern(const uint8_t *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		ck_assert_msg(p[i] == (uint8_t)(seed + i), "byte %zu: %u, expected %u", i, p[i],
			      (uint8_t)(seed + i));
}

/* The host rows of the one options table, under the new backend's own prefix. */
START_TEST(test_host_options)
{
	static const struct { const char *name, *needle; } bad[] = {
		{ "demo:link=gen3x8", "demo: bad option 'link=gen3x8': unknown option 'link'" },
		{ "demo:sg=pages,sg=merged", "given twice" },
		{ "demo:kmax=4Kx", "kmax=4Kx" },
		{ "demo:maxseg=6K", "multiple of 4K" },
		{ "demo:seed=1,", "empty option" },
	};
	pd_device *d = NULL;
	size_t i;

	ck_assert_int_eq(pd_backend_register(&demo_ops), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(pd_open(bad[i].name, &d), -EINVAL);
		ck_assert_msg(has(pd_open_error(), bad[i].needle), "%s: %s", bad[i].name,
			      pd_open_error());
	}
	ck_assert_int_eq(pd_open("demo:sg=pages,maxseg=1G,kmax=1M,seed=9,iova=0x10000000", &d), 0);
	pd_close(d);
}
END_TEST

/* umem as emu: lays it out (sg=pages: every page on its own), data moved byte for byte
 * through the bus addresses, and nothing else reachable. */
START_TEST(test_host_umem)
{
	enum { SIZE = 64 << 10 };
	struct pd_sg_entry sg[32];
	uint8_t *buf;
	pd_umem *um;
	size_t n, i, scattered = 0;

	open_demo("demo:sg=pages,seed=5");
	ck_assert_int_eq(posix_memalign((void **)&buf, 4096, SIZE), 0);
	memset(buf, 0xee, SIZE);
	ck_assert_int_eq(pd_umem_map(dev, buf, SIZE, PD_DMA_FROM_DEVICE, &um), 0);
	n = pd_umem_sg_count(um);
	ck_assert_uint_eq(n, SIZE / 4096);
	ck_assert_int_eq(pd_umem_sglist(um, sg, 32), (int)n);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(sg[i].length, 4096);
		ck_assert_uint_eq(command(CMD_WRITE, sg[i].bus_addr, 4096, (uint32_t)i * 7),
				  ST_OK);
		check_pattern(buf + i * 4096, 4096, (uint32_t)i * 7);
		scattered += i && sg[i].bus_addr != sg[i - 1].bus_addr + 4096;
	}
	ck_assert_uint_gt(scattered, 0);
	/* an access that runs past an entry (refused whole, as an IOMMU refuses a TLP), a read
	 * the mapping does not allow, and a stale address */
	memset(buf, 0xee, SIZE);
	ck_assert_uint_eq(command(CMD_WRITE, sg[0].bus_addr + 4000, 200, 1), ST_FAULT);
	ck_assert_uint_eq(command(CMD_READ, sg[0].bus_addr, 16, 0), ST_FAULT);  /* FROM_DEVICE only */
	ck_assert_int_eq(pd_umem_unmap(um), 0);
	ck_assert_uint_eq(command(CMD_WRITE, sg[0].bus_addr, 4, 1), ST_FAULT);
	for (i = 0; i < SIZE; i++)
		ck_assert_msg(buf[i] == 0xee, "byte %zu written by a faulting access", i);
	pd_close(dev);
	free(buf);
}
END_TEST

/* kmem: zeroed, one bus range the device reads and writes, kmax= honoured. */
START_TEST(test_host_kmem)
{
	pd_kmem *km, *big;
	uint8_t *p;
	size_t i, sum = 0;

	open_demo("demo:kmax=64K");
	ck_assert_int_eq(pd_kmem_alloc(dev, 128 << 10, &big), -ENOMEM);
	ck_assert_int_eq(pd_kmem_alloc(dev, 10000, &km), 0);
	p = pd_kmem_ptr(km);
	for (i = 0; i < 10000; i++)
		ck_assert_uint_eq(p[i], 0);
	ck_assert_uint_eq(command(CMD_WRITE, pd_kmem_bus_addr(km), 10000, 3), ST_OK);
	check_pattern(p, 10000, 3);
	for (i = 0; i < 10000; i++)
		sum += (uint8_t)(3 + i);
	ck_assert_uint_eq(command(CMD_READ, pd_kmem_bus_addr(km), 10000, 0), ST_OK);
	ck_assert_uint_eq(pd_reg_read32(&regs, R_SUM), (uint32_t)sum);
	/* the rest of the last page is not the buffer's */
	ck_assert_uint_eq(command(CMD_READ, pd_kmem_bus_addr(km) + 10000, 1, 0), ST_FAULT);
	ck_assert_int_eq(pd_irq_wait(dev, 0, 0), -ETIMEDOUT);   /* each command's MSI taken */
	ck_assert_int_eq(pd_kmem_free(km), 0);
	pd_close(dev);
}
END_TEST

Suite *test_suite(void)
{
	Suite *s = suite_create("host-backend");
	TCase *tc = tcase_create("host-backend");

	tcase_add_test(tc, test_host_options);
	tcase_add_test(tc, test_host_umem);
	tcase_add_test(tc, test_host_kmem);
	suite_add_tcase(s, tc);
	return s;
}
