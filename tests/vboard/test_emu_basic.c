// SPDX-License-Identifier: GPL-2.0
/*
 * Virtual board conformance, part 1: identification, BAR0 registers without DMA, config
 * space, pd_info, BARs, option parsing, and the bus addresses handed out for kmem/umem.
 */
#include <sys/mman.h>

#include "test_emu_util.h"

START_TEST(test_identification)
{
	struct eb b;
	uint32_t caps;

	eb_open(&b, "emu:");
	ck_assert_uint_eq(rd(&b, MP_REG_MAGIC), MP_ENGINE_MAGIC);
	ck_assert_uint_eq(rd(&b, MP_REG_MAGIC), 0x4d505243u);
	ck_assert_uint_eq((rd(&b, MP_REG_VERSION) & MP_REG_VERSION_MAJOR_MASK) >>
			  MP_REG_VERSION_MAJOR_SHIFT, MP_ENGINE_VERSION_MAJOR);
	ck_assert_uint_eq((rd(&b, MP_REG_VERSION) & MP_REG_VERSION_MINOR_MASK) >>
			  MP_REG_VERSION_MINOR_SHIFT, MP_ENGINE_VERSION_MINOR);
	caps = rd(&b, MP_REG_CAPS);
	ck_assert_uint_eq((caps & MP_REG_CAPS_DATAPATH_BYTES_MASK) >> MP_REG_CAPS_DATAPATH_BYTES_SHIFT, 32);
	ck_assert_uint_eq((caps & MP_REG_CAPS_C2H_CHANNELS_MASK) >> MP_REG_CAPS_C2H_CHANNELS_SHIFT, 1);
	ck_assert_uint_eq((caps & MP_REG_CAPS_H2C_CHANNELS_MASK) >> MP_REG_CAPS_H2C_CHANNELS_SHIFT, 1);
	/* defaults: MPS 256 (code 1), MRRS 512 (code 2), 4 MSI vectors, all test logic */
	ck_assert_uint_eq((caps & MP_REG_CAPS_MPS_MASK) >> MP_REG_CAPS_MPS_SHIFT, 1);
	ck_assert_uint_eq((caps & MP_REG_CAPS_MRRS_MASK) >> MP_REG_CAPS_MRRS_SHIFT, 2);
	ck_assert_uint_eq((caps & MP_REG_CAPS_MSI_VECTORS_MASK) >> MP_REG_CAPS_MSI_VECTORS_SHIFT, 4);
	ck_assert(caps & MP_REG_CAPS_PATGEN_MASK);
	ck_assert(caps & MP_REG_CAPS_CHECKER_MASK);
	ck_assert(caps & MP_REG_CAPS_LOOPBACK_MASK);
	ck_assert_uint_eq(rd(&b, MP_REG_CLOCK_MHZ), 250);
	/* reset values */
	ck_assert_uint_eq(rd(&b, MP_REG_CONTROL), 0);
	ck_assert_uint_eq(rd(&b, MP_REG_IRQ_STATUS), 0);
	ck_assert_uint_eq(rd(&b, MP_REG_IRQ_ENABLE), 0);
	ck_assert_uint_eq(rd(&b, MP_REG_TEST_CONTROL), 0);
	for (unsigned int ch = 0; ch < MP_CH_COUNT; ch++) {
		ck_assert_uint_eq(crd(&b, ch, MP_CHREG_STATUS), MP_STATE_IDLE);
		ck_assert_uint_eq(crd(&b, ch, MP_CHREG_HEAD), 0);
		ck_assert_uint_eq(crd(&b, ch, MP_CHREG_TAIL), 0);
		ck_assert_uint_eq(crd(&b, ch, MP_CHREG_CONTROL), 0);
	}
	/* unlisted offsets read 0 and ignore writes */
	wr(&b, 0x040, 0xffffffffu);
	ck_assert_uint_eq(rd(&b, 0x040), 0);
	ck_assert_uint_eq(rd(&b, MP_CH_BASE(0) + 0x30), 0);
	ck_assert_uint_eq(rd(&b, 0xffc), 0);
	/* read-only registers ignore writes */
	wr(&b, MP_REG_MAGIC, 0);
	ck_assert_uint_eq(rd(&b, MP_REG_MAGIC), MP_ENGINE_MAGIC);
	cwr(&b, MP_CH_C2H, MP_CHREG_HEAD, 5);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_HEAD), 0);
	eb_close(&b);
}
END_TEST

/* The datapath follows the link: the 512-bit engine behind presets faster than a 256-bit
 * interface carries at 250 MHz (docs/virtual-board.md). */
START_TEST(test_datapath_per_link)
{
	static const struct { const char *name; unsigned int bytes; } boards[] = {
		{ "emu:link=gen3x8", 32 }, { "emu:link=gen2x16", 32 }, { "emu:link=gen4x4", 32 },
		{ "emu:link=ideal", 32 }, { "emu:bw=20000", 32 }, { "emu:link=gen3x16", 64 },
		{ "emu:link=gen4x8", 64 }, { "emu:link=gen4x16", 64 },
		/* width= chooses it as on sim: */
		{ "emu:width=512", 64 }, { "emu:link=gen3x8,width=256", 32 },
		{ "emu:link=gen4x16,width=512", 64 }, { "emu:link=ideal,width=512", 64 },
	};
	struct eb b;
	unsigned int i;

	for (i = 0; i < sizeof(boards) / sizeof(boards[0]); i++) {
		eb_open(&b, boards[i].name);
		ck_assert_msg((rd(&b, MP_REG_CAPS) & MP_REG_CAPS_DATAPATH_BYTES_MASK) >>
			      MP_REG_CAPS_DATAPATH_BYTES_SHIFT == boards[i].bytes, "%s: datapath",
			      boards[i].name);
		eb_close(&b);
	}
}
END_TEST

START_TEST(test_caps_options)
{
	struct eb b;
	uint32_t caps;

	eb_open(&b, "emu:mps=512,mrrs=4096,msi=1,clock=100");
	caps = rd(&b, MP_REG_CAPS);
	ck_assert_uint_eq(128u << ((caps & MP_REG_CAPS_MPS_MASK) >> MP_REG_CAPS_MPS_SHIFT), 512);
	/* the host configured 4096; the engine supports 2048 and reports what it uses */
	ck_assert_uint_eq(128u << ((caps & MP_REG_CAPS_MRRS_MASK) >> MP_REG_CAPS_MRRS_SHIFT), 2048);
	ck_assert_uint_eq((caps & MP_REG_CAPS_MSI_VECTORS_MASK) >> MP_REG_CAPS_MSI_VECTORS_SHIFT, 1);
	ck_assert_uint_eq(rd(&b, MP_REG_CLOCK_MHZ), 100);
	eb_close(&b);
}
END_TEST

START_TEST(test_scratch_and_reset)
{
	struct eb b;

	eb_open(&b, "emu:");
	wr(&b, MP_REG_SCRATCH, 0xdeadbeefu);
	ck_assert_uint_eq(rd(&b, MP_REG_SCRATCH), 0xdeadbeefu);
	wr(&b, MP_REG_SCRATCH, 0x12345678u);
	ck_assert_uint_eq(rd(&b, MP_REG_SCRATCH), 0x12345678u);
	wr(&b, MP_REG_IRQ_ENABLE, 7);
	wr(&b, MP_REG_PATGEN_SEED, 99);
	wr(&b, MP_REG_TEST_CONTROL, 0x21);
	cwr(&b, MP_CH_H2C, MP_CHREG_TIMEOUT_US, 1000);
	cwr(&b, MP_CH_H2C, MP_CHREG_RING_SIZE, 64);
	ck_assert_uint_eq(rd(&b, MP_REG_TEST_CONTROL), 0x21);
	/* the global reset restores SCRATCH, IRQ_ENABLE, the test logic and the channels */
	wr(&b, MP_REG_CONTROL, MP_REG_CONTROL_RESET_MASK);
	ck_assert_uint_eq(rd(&b, MP_REG_CONTROL), 0);
	ck_assert_uint_eq(rd(&b, MP_REG_SCRATCH), 0);
	ck_assert_uint_eq(rd(&b, MP_REG_IRQ_ENABLE), 0);
	ck_assert_uint_eq(rd(&b, MP_REG_PATGEN_SEED), 0);
	ck_assert_uint_eq(rd(&b, MP_REG_TEST_CONTROL), 0);
	/* ... but keeps the ring configuration, like a channel RESET */
	ck_assert_uint_eq(crd(&b, MP_CH_H2C, MP_CHREG_TIMEOUT_US), 1000);
	ck_assert_uint_eq(crd(&b, MP_CH_H2C, MP_CHREG_RING_SIZE), 64);
	eb_close(&b);
}
END_TEST

START_TEST(test_cycle_counter)
{
	struct eb b;
	uint64_t c0, c1, t0, t1;
	uint32_t lo, hi;
	double mhz;

	eb_open(&b, "emu:");
	t0 = now_ns();
	lo = rd(&b, MP_REG_CYCLE_LO);
	hi = rd(&b, MP_REG_CYCLE_HI);
	c0 = (uint64_t)hi << 32 | lo;
	sleep_us(50000);
	lo = rd(&b, MP_REG_CYCLE_LO);
	hi = rd(&b, MP_REG_CYCLE_HI);
	t1 = now_ns();
	c1 = (uint64_t)hi << 32 | lo;
	ck_assert_uint_gt(c1, c0);
	/* the counter runs at CLOCK_MHZ: generous bounds, the machine is shared */
	mhz = (double)(c1 - c0) * 1000.0 / (double)(t1 - t0);
	ck_assert_msg(mhz > 250 * 0.5 && mhz < 250 * 1.05, "cycle counter at %.1f MHz", mhz);
	/* CYCLE_HI is latched by CYCLE_LO reads: it does not change on its own */
	ck_assert_uint_eq(rd(&b, MP_REG_CYCLE_HI), hi);
	eb_close(&b);
}
END_TEST

static uint16_t cfg16(pd_device *dev, uint32_t off)
{
	uint16_t v;

	ck_assert_int_eq(pd_cfg_read(dev, off, &v, 2), 0);
	return v;
}

static uint32_t cfg32(pd_device *dev, uint32_t off)
{
	uint32_t v;

	ck_assert_int_eq(pd_cfg_read(dev, off, &v, 4), 0);
	return v;
}

/* Offset of capability `id` in the standard list, or 0. */
static uint32_t find_cap(pd_device *dev, uint8_t id)
{
	uint8_t p, hdr[2];
	int n = 0;

	ck_assert_int_eq(pd_cfg_read(dev, 0x34, &p, 1), 0);
	while (p && n++ < 48) {
		ck_assert_int_eq(pd_cfg_read(dev, p, hdr, 2), 0);
		if (hdr[0] == id)
			return p;
		p = hdr[1];
	}
	return 0;
}

START_TEST(test_config_space)
{
	struct eb b;
	uint32_t msi, pcie, cls, bar;
	uint8_t big[4096];

	eb_open(&b, "emu:link=gen2x4,mps=512,mrrs=1024,msi=4,mem=1M");
	ck_assert_uint_eq(cfg16(b.dev, 0x00), MP_ID_VENDOR);
	ck_assert_uint_eq(cfg16(b.dev, 0x02), MP_ID_DEVICE);
	ck_assert_uint_eq(cfg16(b.dev, 0x2c), MP_ID_SUBSYSTEM_VENDOR);
	ck_assert_uint_eq(cfg16(b.dev, 0x2e), MP_ID_SUBSYSTEM_DEVICE);
	cls = cfg32(b.dev, 0x08) >> 8;
	ck_assert_uint_eq(cls, MP_ID_CLASS);
	ck_assert(cfg16(b.dev, 0x04) & 0x4);           /* bus master */
	ck_assert(cfg16(b.dev, 0x06) & 0x10);          /* capabilities list */
	bar = cfg32(b.dev, 0x10);
	ck_assert_uint_eq(bar & 0xf, 0);               /* BAR0: 32-bit memory */
	bar = cfg32(b.dev, 0x18);
	ck_assert_uint_eq(bar & 0xf, 0xc);             /* BAR2: 64-bit prefetchable */

	msi = find_cap(b.dev, 0x05);
	ck_assert_uint_ne(msi, 0);
	ck_assert(cfg16(b.dev, msi + 2) & 1);          /* enabled */
	ck_assert_uint_eq((cfg16(b.dev, msi + 2) >> 4) & 7, 2);  /* 4 vectors granted */
	pcie = find_cap(b.dev, 0x10);
	ck_assert_uint_ne(pcie, 0);
	ck_assert_uint_eq((cfg16(b.dev, pcie + 8) >> 5) & 7, 2);  /* MPS 512 */
	ck_assert_uint_eq((cfg16(b.dev, pcie + 8) >> 12) & 7, 3); /* MRRS 1024 */
	ck_assert_uint_eq(cfg16(b.dev, pcie + 0x12) & 0xf, 2);    /* Gen2 */
	ck_assert_uint_eq((cfg16(b.dev, pcie + 0x12) >> 4) & 0x3f, 4); /* x4 */

	/* the whole 4 KiB can be read; beyond is rejected by the front end */
	ck_assert_int_eq(pd_cfg_read(b.dev, 0, big, sizeof(big)), 0);
	ck_assert_int_eq(pd_cfg_read(b.dev, 4096, big, 4), -EINVAL);
	eb_close(&b);
}
END_TEST

START_TEST(test_config_write)
{
	struct eb b;
	uint32_t pcie, caps, all = 0xffffffffu, v;
	uint16_t devctl;

	eb_open(&b, "emu:cfgwr=deny");
	ck_assert_int_eq(pd_cfg_write(b.dev, 0x3c, "\x05", 1), -EPERM);
	eb_close(&b);

	eb_open(&b, "emu:cfgwr=allow,mem=1M");
	/* read-only bytes ignore writes */
	ck_assert_int_eq(pd_cfg_write(b.dev, 0x00, &all, 4), 0);
	ck_assert_uint_eq(cfg16(b.dev, 0x00), MP_ID_VENDOR);
	/* BAR sizing: all ones reads back the size mask */
	ck_assert_int_eq(pd_cfg_write(b.dev, 0x10, &all, 4), 0);
	ck_assert_uint_eq(cfg32(b.dev, 0x10), ~(MP_ENGINE_BAR0_SIZE - 1u));
	ck_assert_int_eq(pd_cfg_write(b.dev, 0x18, &all, 4), 0);
	ck_assert_uint_eq(cfg32(b.dev, 0x18), ~((1u << 20) - 1u) | 0xc);
	v = 0;
	ck_assert_int_eq(pd_cfg_write(b.dev, 0x10, &v, 4), 0);
	/* Device Control: the MPS in use follows it (CAPS and pd_info) */
	pcie = find_cap(b.dev, 0x10);
	devctl = cfg16(b.dev, pcie + 8);
	devctl = (uint16_t)((devctl & ~(7u << 5)) | (0u << 5));   /* 128 bytes */
	ck_assert_int_eq(pd_cfg_write(b.dev, pcie + 8, &devctl, 2), 0);
	caps = rd(&b, MP_REG_CAPS);
	ck_assert_uint_eq((caps & MP_REG_CAPS_MPS_MASK) >> MP_REG_CAPS_MPS_SHIFT, 0);
	eb_close(&b);
}
END_TEST

START_TEST(test_info_and_bars)
{
	struct eb b;
	struct pd_info info;
	struct pd_regs r2;
	void *p;
	size_t sz;
	uint32_t v;

	eb_open(&b, "emu:mem=1M,msi=2,link=gen1x1");
	ck_assert_int_eq(pd_info(b.dev, &info), 0);
	ck_assert_uint_eq(info.backend, PD_BACKEND_EMU);
	ck_assert_uint_eq(info.vendor, MP_ID_VENDOR);
	ck_assert_uint_eq(info.device, MP_ID_DEVICE);
	ck_assert_uint_eq(info.subsystem_vendor, MP_ID_SUBSYSTEM_VENDOR);
	ck_assert_uint_eq(info.subsystem_device, MP_ID_SUBSYSTEM_DEVICE);
	ck_assert_uint_eq(info.class_code, MP_ID_CLASS);
	ck_assert_uint_eq(info.bar[0].size, MP_ENGINE_BAR0_SIZE);
	ck_assert(info.bar[0].flags & PD_BAR_PRESENT);
	ck_assert_uint_eq(info.bar[2].size, 1u << 20);
	ck_assert(info.bar[2].flags & PD_BAR_PREFETCH);
	ck_assert(!(info.bar[1].flags & PD_BAR_PRESENT));
	ck_assert_uint_eq(info.irq_mode, PD_IRQ_MSI);
	ck_assert_uint_eq(info.irq_count, 2);
	ck_assert_uint_eq(info.max_payload, 256);
	ck_assert_uint_eq(info.max_read_request, 512);
	ck_assert_uint_eq(info.dma_mask_bits, 64);
	ck_assert(strstr(info.name, "gen1x1"));

	/* BAR0 maps as the doorbell page (test_emu_dma.c rings it): the identification
	 * registers as read when mapped; not prefetchable */
	ck_assert_int_eq(pd_map_bar(b.dev, 0, PD_MAP_WC, &p, &sz), -EINVAL);
	ck_assert_int_eq(pd_map_bar(b.dev, 0, 0, &p, &sz), 0);
	ck_assert_uint_eq(sz, MP_ENGINE_BAR0_SIZE);
	ck_assert_uint_eq(((volatile uint32_t *)p)[MP_REG_MAGIC / 4], MP_ENGINE_MAGIC);
	ck_assert_uint_eq(((volatile uint32_t *)p)[MP_REG_CAPS / 4], rd(&b, MP_REG_CAPS));
	ck_assert_uint_eq(((volatile uint32_t *)p)[MP_REG_SCRATCH / 4], 0);
	ck_assert_int_eq(pd_unmap_bar(b.dev, 0), 0);
	ck_assert_int_eq(pd_map_bar(b.dev, 1, 0, &p, &sz), -EINVAL);
	/* BAR2 is plain memory, mapped and through accessors alike */
	ck_assert_int_eq(pd_map_bar(b.dev, 2, PD_MAP_WC, &p, &sz), 0);
	ck_assert_uint_eq(sz, 1u << 20);
	((volatile uint32_t *)p)[1000] = 0xa5a5f00du;
	ck_assert_int_eq(pd_regs_get(b.dev, 2, &r2), 0);
	ck_assert_uint_eq(pd_reg_read32(&r2, 4000), 0xa5a5f00du);
	pd_reg_write32(&r2, 8, 77);
	ck_assert_uint_eq(((volatile uint32_t *)p)[2], 77);
	ck_assert_int_eq(pd_bar_read(b.dev, 2, 4000, &v, 4), 0);
	ck_assert_uint_eq(v, 0xa5a5f00du);
	ck_assert_int_eq(pd_bar_read(b.dev, 0, MP_REG_MAGIC, &v, 4), 0);
	ck_assert_uint_eq(v, MP_ENGINE_MAGIC);
	ck_assert_int_eq(pd_unmap_bar(b.dev, 2), 0);
	eb_close(&b);

	eb_open(&b, "emu:mem=0");
	ck_assert_int_eq(pd_info(b.dev, &info), 0);
	ck_assert(!(info.bar[2].flags & PD_BAR_PRESENT));
	ck_assert_int_eq(pd_map_bar(b.dev, 2, 0, &p, &sz), -EINVAL);
	eb_close(&b);
}
END_TEST

/* ---- option parsing ---- */

static int open_close(void *arg)
{
	pd_device *dev = NULL;
	int rc = pd_open(arg, &dev);

	if (!rc)
		pd_close(dev);
	return rc;
}

static const char *const good_names[] = {
	"emu", "emu:", "emu:link=gen1x1", "emu:link=gen4x16", "emu:link=ideal", "emu:link=gen2x8",
	"emu:bw=1500,lat=2us", "emu:bw=800.5,tlp=10ns,lat=0", "emu:mem=256M", "emu:mem=0",
	"emu:mps=128,mrrs=4096", "emu:msi=1", "emu:msi=2", "emu:msi=4", "emu:sg=pages",
	"emu:sg=merged", "emu:sg=random,seed=42", "emu:workers=0", "emu:workers=3",
	"emu:workers=auto", "emu:stall=c2h", "emu:stall=h2c:3,stall=c2h:0",
	"emu:buserr=c2h:5,buserr=h2c", "emu:dropirq=0", "emu:user=stream", "emu:user=pkt:4K",
	"emu:user=none", "emu:cfgwr=deny", "emu:clock=125", "emu:kmax=4M", "emu:iova=0x1000",
	"emu:fifo=4K", "emu:spin=0", "emu:spin=100us", "emu:lat=1.5us,link=gen3x8",
	"emu:link=ideal,lat=500ns", "emu:maxseg=64K", "emu:maxseg=0",
};

struct bad_name {
	const char *name, *needle;
};

static const struct bad_name bad_names[] = {
	{ "emu:link=gen5x8", "link=gen5x8" },
	{ "emu:link=gen3x3", "link=gen3x3" },
	{ "emu:link=gen3x8x", "link=gen3x8x" },
	{ "emu:link=fast", "link=fast" },
	{ "emu:frobnicate=1", "frobnicate" },
	{ "emu:poll=200", "unknown option 'poll'" },        /* a sim: row */
	{ "emu:width=128", "width=128" },
	{ "emu:link=gen3x16,width=256", "256-bit engine" },
	{ "emu:link", "link" },
	{ "emu:mem=3M", "mem=3M" },
	{ "emu:mem=12Q", "mem=12Q" },
	{ "emu:mem=-4K", "mem=-4K" },
	{ "emu:mps=100", "mps=100" },
	{ "emu:mps=8192", "mps=8192" },
	{ "emu:mrrs=64", "mrrs=64" },
	{ "emu:msi=3", "msi=3" },
	{ "emu:msi=8", "msi=8" },
	{ "emu:bw=0", "bw=0" },
	{ "emu:bw=fast", "bw=fast" },
	{ "emu:bw=100,link=gen1x1", "bw=" },
	{ "emu:lat=5parsecs", "lat=5parsecs" },
	{ "emu:piord=slow", "piord=slow" },
	{ "emu:piowr=2s", "piowr=2s" },
	{ "emu:lat=-1us", "lat=-1us" },
	{ "emu:sg=chaos", "sg=chaos" },
	{ "emu:workers=many", "workers=many" },
	{ "emu:stall=both", "stall=both" },
	{ "emu:stall=c2h,stall=c2h:1", "stall=c2h:1" },
	{ "emu:buserr=c2h:x", "buserr=c2h:x" },
	{ "emu:dropirq=-1", "dropirq=-1" },
	{ "emu:user=pkt:6", "user=pkt:6" },
	{ "emu:cfgwr=maybe", "cfgwr=maybe" },
	{ "emu:iova=0", "iova=0" },
	{ "emu:iova=0x1234", "iova=0x1234" },
	{ "emu:fifo=1000", "fifo=1000" },
	{ "emu:link=ideal,link=gen1x1", "link=gen1x1" },
	{ "emu:mem=1M,", "" },
	{ "emu:,mem=1M", "" },
	{ "emu:mem=", "mem=" },
	{ "emu:clock=0", "clock=0" },
	{ "emu:kmax=1G", "kmax=1G" },
	{ "emu:maxseg=1000", "maxseg=1000" },
	{ "emu:linkdown=c2h,linkdown=h2c", "linkdown=h2c" },
	{ "emu:block=ptile", "unknown option 'block'" },
};

/* sim: parses its options before it starts a simulator: the same rules as emu: (a key given
 * twice, an empty item, trailing garbage after a size) and the same size grammar. */
static const struct bad_name sim_bad_names[] = {
	{ "sim:mps=256,mps=512", "given twice" },
	{ "sim:maxseg=1G,maxseg=1M", "given twice" },
	{ "sim:mps=256,,msi=1", "empty option" },
	{ "sim:mps=256,", "empty option" },
	{ "sim:maxseg=1Gx", "maxseg=1Gx" },
	{ "sim:kmax=4Kx", "kmax=4Kx" },
	{ "sim:mps=-256", "mps=-256" },
	/* the one table: a row of the other backend is unknown here, the sim: rows keep their
	 * own ranges, and the host's rows their own rules */
	{ "sim:link=gen3x8", "unknown option 'link'" },
	{ "sim:mps=2048", "mps=2048" },
	{ "sim:width=384", "width=384" },
	{ "sim:block=altera", "block=altera" },
	{ "sim:block=ltile", "block=ltile" },
	{ "sim:block=", "missing value" },
	{ "sim:iova=0x1000", "4 GiB" },
	{ "sim:maxseg=6K", "maxseg=6K" },
	{ "sim:sg=pagez", "sg=pagez" },
	{ "sim:wave=", "missing value" },
};

/* Options sim: takes in the same grammar as emu: are parsed before any simulator starts: with
 * no simulator to be found, a good name gets ENODEV (not EINVAL) and the reason says so. */
START_TEST(test_sim_options_good)
{
	static const char *const names[] = {
		"sim:maxseg=1G,sg=pages", "sim:kmax=4M,seed=7,iova=0x200000000", "sim:width=512",
		"sim:block=ptile,width=512", "sim:block=xilinx", "sim:block=htile,width=512",
		"sim:mrrs=4K,mps=1K,msi=2", "sim:split=1,reorder=1,pause=30,poll=1000",
		"sim:wave=/tmp/x.ghw,sg=merged,maxseg=64K",
	};
	const char *old = getenv("MPRACE_SIM_PYTHON");
	char *saved = old ? strdup(old) : NULL;
	size_t i;
	int rc;

	setenv("MPRACE_SIM_PYTHON", "/nonexistent/python", 1);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		capture_stderr(open_close, (void *)names[i], &rc);
		ck_assert_msg(rc == -ENODEV && strstr(pd_open_error(), "no simulator environment"),
			      "%s: %d (%s)", names[i], rc, pd_open_error());
	}
	if (saved)
		setenv("MPRACE_SIM_PYTHON", saved, 1);
	else
		unsetenv("MPRACE_SIM_PYTHON");
	free(saved);
}
END_TEST

START_TEST(test_sim_options_bad)
{
	const char *err, *out;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(sim_bad_names) / sizeof(sim_bad_names[0]); i++) {
		out = capture_stderr(open_close, (void *)sim_bad_names[i].name, &rc);
		ck_assert_msg(rc == -EINVAL, "%s: %d (%s)", sim_bad_names[i].name, rc, pd_open_error());
		ck_assert_msg(!*out, "%s: printed on stderr: %s", sim_bad_names[i].name, out);
		err = pd_open_error();
		ck_assert_msg(strstr(err, "sim") && strstr(err, sim_bad_names[i].needle),
			      "%s: reason '%s' does not name '%s'", sim_bad_names[i].name, err,
			      sim_bad_names[i].needle);
	}
}
END_TEST

START_TEST(test_options_good)
{
	size_t i;
	int rc;

	for (i = 0; i < sizeof(good_names) / sizeof(good_names[0]); i++) {
		capture_stderr(open_close, (void *)good_names[i], &rc);
		ck_assert_msg(rc == 0, "%s: %d", good_names[i], rc);
	}
}
END_TEST

/* The reason is pd_open_error()'s; the library itself prints nothing. */
START_TEST(test_options_bad)
{
	size_t i;
	const char *err, *out;
	int rc;

	for (i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		out = capture_stderr(open_close, (void *)bad_names[i].name, &rc);
		ck_assert_msg(rc == -EINVAL, "%s: %d", bad_names[i].name, rc);
		ck_assert_msg(!*out, "%s: printed on stderr: %s", bad_names[i].name, out);
		err = pd_open_error();
		ck_assert_msg(strstr(err, "emu") && strstr(err, bad_names[i].needle),
			      "%s: message does not name the option: %s", bad_names[i].name, err);
	}
	ck_assert_int_eq(open_close("emu:"), 0);
	ck_assert_str_eq(pd_open_error(), "");
}
END_TEST

/* ---- bus addresses ---- */

START_TEST(test_kmem_bus_addresses)
{
	struct eb b;
	pd_kmem *k[8];
	uint64_t prev_end = 0;
	int i;

	eb_open(&b, "emu:");
	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(pd_kmem_alloc(b.dev, 4096u * (unsigned int)(i + 1) - 12, &k[i]), 0);
		ck_assert_uint_ne(pd_kmem_bus_addr(k[i]), 0);
		ck_assert_uint_eq(pd_kmem_bus_addr(k[i]) % 4096, 0);
		ck_assert_uint_eq((uintptr_t)pd_kmem_ptr(k[i]) % 4096, 0);
		/* never adjacent: at least one unmapped guard page between mappings */
		if (i)
			ck_assert_uint_ge(pd_kmem_bus_addr(k[i]), prev_end + 4096);
		prev_end = pd_kmem_bus_addr(k[i]) + pd_kmem_size(k[i]);
		/* zeroed, writable */
		ck_assert_uint_eq(((uint8_t *)pd_kmem_ptr(k[i]))[100], 0);
		memset(pd_kmem_ptr(k[i]), 0x5a, pd_kmem_size(k[i]));
	}
	ck_assert_uint_ne(pd_kmem_id(k[0]), pd_kmem_id(k[1]));
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(pd_kmem_free(k[i]), 0);
	/* kmax= mimics a kernel without CMA */
	eb_close(&b);
	eb_open(&b, "emu:kmax=4M,iova=0x1000");
	ck_assert_int_eq(pd_kmem_alloc(b.dev, (4u << 20) + 4096, &k[0]), -ENOMEM);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 4u << 20, &k[0]), 0);
	ck_assert_uint_eq(pd_kmem_bus_addr(k[0]), 0x1000);   /* the first mapping at iova= */
	eb_close(&b);
}
END_TEST

static size_t sg_of(pd_umem *um, struct pd_sg_entry **out)
{
	size_t n = pd_umem_sg_count(um);

	*out = calloc(n, sizeof(**out));
	ck_assert_int_eq(pd_umem_sglist(um, *out, n), (int)n);
	return n;
}

START_TEST(test_umem_layouts)
{
	static const char *const names[] = { "emu:sg=merged", "emu:sg=pages", "emu:sg=random" };
	const size_t size = 64 * 4096 + 1000, off = 100;
	uint8_t *buf = aligned_alloc(4096, 66 * 4096);
	struct pd_sg_entry *sg;
	pd_umem *um;
	struct eb b;
	size_t n, i, total;
	int m, nonmono;

	for (m = 0; m < 3; m++) {
		eb_open(&b, names[m]);
		ck_assert_int_eq(pd_umem_map(b.dev, buf + off, size, PD_DMA_BIDIRECTIONAL, &um), 0);
		n = sg_of(um, &sg);
		total = 0;
		nonmono = 0;
		for (i = 0; i < n; i++) {
			ck_assert_uint_ne(sg[i].bus_addr, 0);
			ck_assert_uint_gt(sg[i].length, 0);
			total += sg[i].length;
			/* the offset in the page is kept */
			if (i == 0)
				ck_assert_uint_eq(sg[i].bus_addr % 4096, (uintptr_t)(buf + off) % 4096);
			else
				ck_assert_uint_eq(sg[i].bus_addr % 4096, 0);
			/* coalesced: no entry continues the previous one */
			if (i)
				ck_assert_uint_ne(sg[i - 1].bus_addr + sg[i - 1].length, sg[i].bus_addr);
			if (i && sg[i].bus_addr < sg[i - 1].bus_addr)
				nonmono++;
		}
		ck_assert_uint_eq(total, size);
		if (m == 0)
			ck_assert_uint_eq(n, 1);
		else if (m == 1)
			ck_assert_uint_eq(n, 65);   /* one per page touched */
		else
			ck_assert(n > 3 && n < 65);
		if (m > 0)
			ck_assert_msg(nonmono > 0, "scattered layouts are not in address order");
		free(sg);
		ck_assert_int_eq(pd_umem_unmap(um), 0);
		eb_close(&b);
	}
	free(buf);
}
END_TEST

/* maxseg= cuts entries like the kernel's max segment size; they may then continue each other */
START_TEST(test_umem_maxseg)
{
	const size_t size = 1u << 20;
	uint8_t *buf = aligned_alloc(4096, size + 4096);
	struct pd_sg_entry *sg;
	pd_umem *um;
	struct eb b;
	size_t n, i, total = 0;

	eb_open(&b, "emu:sg=merged,maxseg=64K");
	ck_assert_int_eq(pd_umem_map(b.dev, buf + 4, size, PD_DMA_TO_DEVICE, &um), 0);
	n = sg_of(um, &sg);
	ck_assert_uint_eq(n, 17);
	for (i = 0; i < n; i++) {
		ck_assert_uint_le(sg[i].length, 65536);
		if (i)
			ck_assert_uint_eq(sg[i - 1].bus_addr + sg[i - 1].length, sg[i].bus_addr);
		total += sg[i].length;
	}
	ck_assert_uint_eq(total, size);
	free(sg);
	eb_close(&b);
	free(buf);
}
END_TEST

START_TEST(test_umem_refused)
{
	struct eb b;
	pd_kmem *km;
	pd_umem *um;
	void *hole;

	eb_open(&b, "emu:");
	/* driver memory cannot be pinned (VM_PFNMAP on the kernel backend) */
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 8192, &km), 0);
	ck_assert_int_eq(pd_umem_map(b.dev, pd_kmem_ptr(km), 4096, PD_DMA_TO_DEVICE, &um), -EFAULT);
	/* unmapped memory cannot be pinned */
	hole = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(hole, MAP_FAILED);
	munmap((char *)hole + 4096, 4096);
	ck_assert_int_eq(pd_umem_map(b.dev, hole, 3 * 4096, PD_DMA_FROM_DEVICE, &um), -EFAULT);
	ck_assert_int_eq(pd_umem_map(b.dev, hole, 4096, PD_DMA_FROM_DEVICE, &um), 0);
	ck_assert_uint_ne(pd_umem_id(um), 0);
	ck_assert_int_eq(pd_umem_sync(um, PD_SYNC_FOR_CPU), 0);
	ck_assert_int_eq(pd_umem_unmap(um), 0);
	munmap(hole, 4096);
	munmap((char *)hole + 2 * 4096, 4096);
	eb_close(&b);
}
END_TEST

/* As pin_user_pages does: the device may read only readable and write only writable memory
 * (before, read-only memory mapped for FROM_DEVICE was accepted and the first DMA into it
 * killed the process). */
START_TEST(test_umem_protection)
{
	struct eb b;
	pd_umem *um;
	char *p;
	const enum pd_dma_dir writes[] = { PD_DMA_FROM_DEVICE, PD_DMA_BIDIRECTIONAL };
	unsigned int i;

	eb_open(&b, "emu:");
	p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	memset(p, 1, 3 * 4096);
	ck_assert_int_eq(mprotect(p + 4096, 4096, PROT_READ), 0);
	ck_assert_int_eq(mprotect(p + 2 * 4096, 4096, PROT_NONE), 0);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(pd_umem_map(b.dev, p + 4096, 4096, writes[i], &um), -EFAULT);
		ck_assert_int_eq(pd_umem_map(b.dev, p + 100, 8000, writes[i], &um), -EFAULT);
		ck_assert_int_eq(pd_umem_map(b.dev, p + 2 * 4096, 16, writes[i], &um), -EFAULT);
	}
	ck_assert_int_eq(pd_umem_map(b.dev, p + 2 * 4096 + 8, 16, PD_DMA_TO_DEVICE, &um), -EFAULT);
	ck_assert_int_eq(pd_umem_map(b.dev, p + 4000, 4096, PD_DMA_TO_DEVICE, &um), 0);
	ck_assert_int_eq(pd_umem_unmap(um), 0);
	ck_assert_int_eq(pd_umem_map(b.dev, p, 4096, PD_DMA_BIDIRECTIONAL, &um), 0);
	ck_assert_int_eq(pd_umem_unmap(um), 0);
	munmap(p, 3 * 4096);
	eb_close(&b);
}
END_TEST

Suite *test_suite(void)
{
	Suite *s = suite_create("emu-basic");
	TCase *tc = tcase_create("emu-basic");

	tcase_add_test(tc, test_identification);
	tcase_add_test(tc, test_caps_options);
	tcase_add_test(tc, test_datapath_per_link);
	tcase_add_test(tc, test_scratch_and_reset);
	tcase_add_test(tc, test_cycle_counter);
	tcase_add_test(tc, test_config_space);
	tcase_add_test(tc, test_config_write);
	tcase_add_test(tc, test_info_and_bars);
	tcase_add_test(tc, test_options_good);
	tcase_add_test(tc, test_options_bad);
	tcase_add_test(tc, test_sim_options_bad);
	tcase_add_test(tc, test_sim_options_good);
	tcase_add_test(tc, test_kmem_bus_addresses);
	tcase_add_test(tc, test_umem_layouts);
	tcase_add_test(tc, test_umem_maxseg);
	tcase_add_test(tc, test_umem_refused);
	tcase_add_test(tc, test_umem_protection);
	suite_add_tcase(s, tc);
	return s;
}
