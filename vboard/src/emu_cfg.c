// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * PCI config space of the virtual board (4 KiB, type 0 header), as the kernel driver would
 * find it after probe: memory decoding and bus mastering on, MSI enabled with the granted
 * vectors, MPS/MRRS programmed.
 *
 *   0x00  IDs, command/status, class, BAR0 (32-bit, registers), BAR2/3 (64-bit prefetchable,
 *         on-board memory, when mem= is not 0), subsystem IDs, capability pointer, INTA
 *   0x40  Power Management capability
 *   0x48  MSI capability (64-bit, 4 vectors capable, MME = granted, enabled)
 *   0x60  PCI Express capability v2, endpoint: Device Capabilities (MPS supported),
 *         Device Control (MPS, MRRS in use), Link Capabilities/Status (speed, width)
 *   0x100 no extended capabilities
 *
 * Writes go through a per-byte mask of the bits hardware lets software change: Command, the
 * BAR address bits (so BAR sizing works), Interrupt Line, Device Control (MPS and MRRS take
 * effect: CAPS and the link model follow them), Link Control. Everything else is read-only.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

#include "emu.h"

#define CAP_PM   0x40u
#define CAP_MSI  0x48u
#define CAP_PCIE 0x60u

static void put16(uint8_t *p, uint32_t off, uint16_t v)
{
	p[off] = (uint8_t)v;
	p[off + 1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t off, uint32_t v)
{
	put16(p, off, (uint16_t)v);
	put16(p, off + 2, (uint16_t)(v >> 16));
}

static uint16_t get16(const uint8_t *p, uint32_t off)
{
	return (uint16_t)(p[off] | p[off + 1] << 8);
}

static unsigned int log2u(uint64_t v)
{
	unsigned int n = 0;

	while (v > 1) {
		v >>= 1;
		n++;
	}
	return n;
}

/* Device Control -> the MPS/MRRS codes the engine uses (MPS limited to what DevCap offers). */
static void derive(struct emu_dev *d)
{
	uint16_t devctl = get16(d->cfgspace, CAP_PCIE + 0x08);
	uint32_t mpss = d->cfgspace[CAP_PCIE + 0x04] & 7u;
	uint32_t mps = (devctl >> 5) & 7u, mrrs = (devctl >> 12) & 7u;

	if (mps > mpss)
		mps = mpss;
	if (mrrs > 5)
		mrrs = 5;
	atomic_store(&d->mps_code, mps);
	atomic_store(&d->mrrs_code, mrrs);
}

void emu_cfg_init(struct emu_dev *d)
{
	uint8_t *c = d->cfgspace, *w = d->cfg_wmask;
	const struct emu_config *o = &d->cfg;
	unsigned int speed = o->gen ? o->gen : 3, width = o->lanes ? o->lanes : 8, s;
	uint32_t mps_code = log2u(o->mps / 128), mrrs_code = log2u(o->mrrs / 128);
	uint32_t mpss = mps_code > 3 ? mps_code : 3;   /* 1024 bytes, as the Xilinx Gen3 block */
	uint64_t mask;

	memset(c, 0, EMU_CFG_SIZE);
	memset(w, 0, EMU_CFG_SIZE);
	pthread_mutex_init(&d->cfg_lock, NULL);

	put16(c, 0x00, MP_ID_VENDOR);
	put16(c, 0x02, MP_ID_DEVICE);
	put16(c, 0x04, 0x0006);                 /* memory space, bus master */
	put16(w, 0x04, 0x0547);                 /* IO, mem, master, parity, SERR, INTx disable */
	put16(c, 0x06, 0x0010);                 /* capabilities list */
	c[0x08] = 0;                            /* revision */
	c[0x09] = MP_ID_CLASS & 0xff;
	c[0x0a] = (MP_ID_CLASS >> 8) & 0xff;
	c[0x0b] = (MP_ID_CLASS >> 16) & 0xff;
	c[0x0e] = 0;                            /* header type 0 */
	/* BAR0: 32-bit non-prefetchable memory, the engine registers */
	put32(c, 0x10, 0);
	put32(w, 0x10, ~(MP_ENGINE_BAR0_SIZE - 1u) & ~0xfu);
	if (o->mem) {
		/* BAR2/3: 64-bit prefetchable memory */
		mask = ~(o->mem - 1) & ~0xfull;
		put32(c, 0x18, 0x0c);
		put32(w, 0x18, (uint32_t)mask);
		put32(w, 0x1c, (uint32_t)(mask >> 32));
	}
	put16(c, 0x2c, MP_ID_SUBSYSTEM_VENDOR);
	put16(c, 0x2e, MP_ID_SUBSYSTEM_DEVICE);
	c[0x34] = CAP_PM;
	c[0x3c] = 0xff;                         /* interrupt line: not routed */
	w[0x3c] = 0xff;
	c[0x3d] = 1;                            /* INTA */

	/* Power Management v3, D0 */
	c[CAP_PM] = 0x01;
	c[CAP_PM + 1] = CAP_MSI;
	put16(c, CAP_PM + 2, 0x0003);
	put16(c, CAP_PM + 4, 0x0008);           /* no soft reset */

	/* MSI: 64-bit, 4 vectors capable, the granted ones enabled */
	c[CAP_MSI] = 0x05;
	c[CAP_MSI + 1] = CAP_PCIE;
	put16(c, CAP_MSI + 2, (uint16_t)(0x0001 | (2u << 1) | (log2u(o->msi) << 4) | 0x0080));
	put32(c, CAP_MSI + 4, 0xfee00000u);
	put32(c, CAP_MSI + 8, 0);
	put16(c, CAP_MSI + 12, 0x4021);

	/* PCI Express v2, endpoint */
	c[CAP_PCIE] = 0x10;
	c[CAP_PCIE + 1] = 0;
	put16(c, CAP_PCIE + 2, 0x0002);
	put32(c, CAP_PCIE + 0x04, mpss | (1u << 15));            /* DevCap: MPSS, role-based err */
	put16(c, CAP_PCIE + 0x08, (uint16_t)((mps_code << 5) | (mrrs_code << 12) | 0x0810));
	put16(w, CAP_PCIE + 0x08, 0x79ff);                        /* DevCtl */
	put32(c, CAP_PCIE + 0x0c, speed | (width << 4));         /* LinkCap */
	put16(c, CAP_PCIE + 0x10, 0x0040);                        /* LinkCtl: common clock */
	put16(w, CAP_PCIE + 0x10, 0x00c3);
	put16(c, CAP_PCIE + 0x12, (uint16_t)(speed | (width << 4) | 0x1000)); /* LinkSta */
	for (s = 1; s <= speed; s++)                              /* LinkCap2: speeds supported */
		c[CAP_PCIE + 0x2c] |= (uint8_t)(1u << s);
	derive(d);
}

int emu_cfg_read(struct emu_dev *d, uint32_t off, void *buf, size_t len)
{
	if (atomic_load(&d->link_down)) {
		memset(buf, 0xff, len);
		return 0;
	}
	pthread_mutex_lock(&d->cfg_lock);
	memcpy(buf, d->cfgspace + off, len);
	pthread_mutex_unlock(&d->cfg_lock);
	return 0;
}

static bool cap_sys_admin(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &h, data))
		return geteuid() == 0;
	return (data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN)) != 0;
}

int emu_cfg_write(struct emu_dev *d, uint32_t off, const void *buf, size_t len)
{
	const uint8_t *src = buf;
	size_t i;

	if (d->cfg.cfgwr == EMU_CFGWR_DENY ||
	    (d->cfg.cfgwr == EMU_CFGWR_AUTO && !cap_sys_admin()))
		return -EPERM;
	pthread_mutex_lock(&d->cfg_lock);
	for (i = 0; i < len; i++) {
		uint8_t m = d->cfg_wmask[off + i];

		d->cfgspace[off + i] = (uint8_t)((d->cfgspace[off + i] & ~m) | (src[i] & m));
	}
	derive(d);
	pthread_mutex_unlock(&d->cfg_lock);
	return 0;
}
