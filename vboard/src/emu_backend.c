// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The virtual board as a libpcidriver backend (pcidriver/backend.h): device
 * names "emu" and "emu:OPTIONS" (docs/virtual-board.md). The front end (pcidriver.c) has
 * checked the arguments and keeps the ownership lists; this file builds the model
 * (emu_*.c), hands out kernel and user memory with bus addresses from the IOMMU model,
 * and routes register access, config space and interrupt waits to it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "backends.h"
#include "emu.h"

static struct emu_dev *dev_of(void *dev)
{
	return dev;
}

static uint64_t floor_pow2(uint64_t v)
{
	uint64_t p = 1;

	while (p <= v / 2)
		p *= 2;
	return p;
}

static void emu_free_dev(struct emu_dev *d)
{
	unsigned int i;

	if (d->mem)
		munmap(d->mem, d->cfg.mem);
	vb_host_destroy(&d->host);
	for (i = 0; i < MP_CH_COUNT; i++)
		emu_chan_destroy(&d->ch[i]);
	emu_test_destroy(&d->test);
	emu_irq_destroy(&d->irq);
	pthread_mutex_destroy(&d->cfg_lock);
	pthread_mutex_destroy(&d->doorbell.lock);
	free(d);
}

static int emu_open(const char *name, void **dev)
{
	struct vb_options opts;
	struct emu_dev *d;
	size_t sz = (sizeof(*d) + EMU_CACHELINE - 1) & ~(size_t)(EMU_CACHELINE - 1);
	double rate = 0, r;
	unsigned int i;
	int ret;

	d = aligned_alloc(EMU_CACHELINE, sz);
	if (!d)
		return -ENOMEM;
	memset(d, 0, sz);
	ret = vb_parse_options(VB_EMU, name, &opts);
	if (!ret)
		ret = vb_host_init(&d->host, &opts.host, opts.emu.msi);
	if (ret) {
		free(d);
		return ret;
	}
	d->cfg = opts.emu;
	vb_doorbell_init(&d->doorbell, emu_reg_read, emu_reg_write, d);
	emu_link_init(&d->link, &d->cfg);
	d->t0_ns = emu_now_ns();
	for (i = 0; i < MP_CH_COUNT; i++) {
		r = emu_link_rate(&d->link, i, d->cfg.mps < 1024 ? d->cfg.mps : 1024);
		if (r > rate)
			rate = r;
	}
	/* paced pieces of ~200 µs of link time: fine-grained progress, few wake-ups */
	if (rate > 0) {
		r = rate * 200e-6;
		d->chunk = floor_pow2(r < (64 << 10) ? (64 << 10) : r > (4 << 20) ? (4 << 20) : (uint64_t)r);
	} else {
		d->chunk = 1u << 20;
	}
	/* a piece is split for the copy pool into parts at least this large (pieces of many
	 * descriptors are in flight at once anyway: more parts gain nothing) */
	d->split_min = 128u << 10;
	/* data a channel may have in flight ahead of its oldest piece: two pieces, at least
	 * 512 KiB (at most ~0.4 ms of link time, less at high rates) */
	d->win_bytes = 2 * d->chunk > (512u << 10) ? 2 * d->chunk : 512u << 10;

	atomic_init(&d->scratch, 0);
	atomic_init(&d->cycle_hi, 0);
	emu_cfg_init(d);
	emu_irq_init(&d->irq, d->cfg.msi, d->cfg.dropirq);
	for (i = 0; i < MP_CH_COUNT; i++)
		emu_chan_init(d, i);
	ret = emu_test_init(&d->test, d->cfg.fifo);
	if (ret)
		goto err_free;
	if (d->cfg.mem) {
		d->mem = mmap(NULL, d->cfg.mem, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (d->mem == MAP_FAILED) {
			d->mem = NULL;
			ret = -ENOMEM;
			goto err_free;
		}
	}
	ret = emu_engine_start(d);
	if (ret)
		goto err_free;
	*dev = d;
	return 0;

err_free:
	emu_free_dev(d);
	return ret;
}

static void emu_close(void *dev)
{
	struct emu_dev *d = dev_of(dev);

	/* the front end has freed every kmem/umem and unmapped the BARs: the engine can touch
	 * nothing any more */
	vb_doorbell_unmap(&d->doorbell);
	emu_engine_stop(d);
	emu_free_dev(d);
}

static int emu_info(void *dev, struct pd_info *info)
{
	struct emu_dev *d = dev_of(dev);

	info->vendor = MP_ID_VENDOR;
	info->device = MP_ID_DEVICE;
	info->subsystem_vendor = MP_ID_SUBSYSTEM_VENDOR;
	info->subsystem_device = MP_ID_SUBSYSTEM_DEVICE;
	info->class_code = MP_ID_CLASS;
	info->revision = 0;
	info->backend = PD_BACKEND_EMU;
	info->bar[0].bus_addr = 0;
	info->bar[0].size = MP_ENGINE_BAR0_SIZE;
	info->bar[0].flags = PD_BAR_PRESENT;
	if (d->cfg.mem) {
		info->bar[EMU_MEM_BAR].size = d->cfg.mem;
		info->bar[EMU_MEM_BAR].flags = PD_BAR_PRESENT | PD_BAR_64BIT | PD_BAR_PREFETCH;
	}
	info->irq_mode = PD_IRQ_MSI;
	info->irq_count = d->cfg.msi;
	info->dma_mask_bits = 64;
	/* what the host configured (Device Control), as the kernel backend reports it; the
	 * engine uses at most its own limits (CAPS) */
	info->max_payload = 128u << atomic_load(&d->mps_code);
	info->max_read_request = 128u << atomic_load(&d->mrrs_code);
	info->abi_version = 0;
	if (d->cfg.bw_Bps > 0)
		snprintf(info->name, sizeof(info->name), "virtual board, custom link %.0f MB/s",
			 d->cfg.bw_Bps / 1e6);
	else
		snprintf(info->name, sizeof(info->name), "virtual board, %s link", d->cfg.link);
	return 0;
}

static int emu_map_bar(void *dev, unsigned int bar, unsigned int flags, void **addr,
		       size_t *size)
{
	struct emu_dev *d = dev_of(dev);

	if (bar == MP_ENGINE_BAR)   /* the doorbell page (doorbell.h); not prefetchable */
		return flags ? -EINVAL : vb_doorbell_map(&d->doorbell, addr, size);
	if (bar != EMU_MEM_BAR || !d->mem)
		return -EINVAL;       /* no such BAR */
	*addr = d->mem;
	*size = d->cfg.mem;
	return 0;
}

static int emu_unmap_bar(void *dev, unsigned int bar, void *addr, size_t size)
{
	if (bar == MP_ENGINE_BAR)
		vb_doorbell_unmap(&dev_of(dev)->doorbell);
	return 0;   /* the on-board memory lives until pd_close */
}

/* pd_regs' write: the register file, and the doorbell page follows what it must */
static void emu_reg_write_noted(void *ctx, uint64_t off, uint32_t v)
{
	struct emu_dev *d = ctx;

	emu_reg_write(d, off, v);
	vb_doorbell_note(&d->doorbell, off, v);
}

/* The CPU stalls for the whole access on real hardware too, so waiting here is honest. */
static void pio_wait(double ns)
{
	uint64_t end;

	if (ns <= 0)
		return;
	end = emu_now_ns() + (uint64_t)ns;
	while (emu_now_ns() < end)
		emu_cpu_relax();
}

static uint32_t mem_bar_read(void *ctx, uint64_t off)
{
	struct emu_dev *d = ctx;
	uint32_t v;

	pio_wait(d->cfg.pio_rd_ns);
	memcpy(&v, (const uint8_t *)d->mem + off, sizeof(v));
	return v;
}

static void mem_bar_write(void *ctx, uint64_t off, uint32_t v)
{
	struct emu_dev *d = ctx;

	pio_wait(d->cfg.pio_wr_ns);
	memcpy((uint8_t *)d->mem + off, &v, sizeof(v));
}

static int emu_regs_get(void *dev, unsigned int bar, struct pd_regs *regs)
{
	struct emu_dev *d = dev_of(dev);

	if (bar == MP_ENGINE_BAR) {
		regs->mmio = NULL;
		regs->size = MP_ENGINE_BAR0_SIZE;
		regs->ctx = d;
		regs->read32 = emu_reg_read;
		regs->write32 = emu_reg_write_noted;
		return 0;
	}
	if (bar == EMU_MEM_BAR && d->mem) {
		regs->size = d->cfg.mem;
		if (!d->cfg.pio_rd_ns && !d->cfg.pio_wr_ns) {
			regs->mmio = d->mem;   /* plain memory: the inline accessors load and store */
			return 0;
		}
		/* accessors that take as long as a CPU access over the link would (pd_map_bar
		 * still gives the plain memory: those loads and stores are not timed) */
		regs->mmio = NULL;
		regs->ctx = d;
		regs->read32 = mem_bar_read;
		regs->write32 = mem_bar_write;
		return 0;
	}
	return -EINVAL;
}

static int emu_cfg_read_op(void *dev, uint32_t off, void *buf, size_t len)
{
	return emu_cfg_read(dev_of(dev), off, buf, len);
}

static int emu_cfg_write_op(void *dev, uint32_t off, const void *buf, size_t len)
{
	return emu_cfg_write(dev_of(dev), off, buf, len);
}

static int emu_kmem_alloc_op(void *dev, struct pd_backend_kmem *km)
{
	return vb_kmem_alloc(&dev_of(dev)->host, km);
}

static int emu_kmem_free_op(void *dev, struct pd_backend_kmem *km)
{
	return vb_kmem_free(&dev_of(dev)->host, km);
}

static int emu_umem_map_op(void *dev, struct pd_backend_umem *um)
{
	return vb_umem_map(&dev_of(dev)->host, um);
}

static int emu_umem_unmap_op(void *dev, struct pd_backend_umem *um)
{
	return vb_umem_unmap(&dev_of(dev)->host, um);
}

static int emu_dmabuf_import_op(void *dev, int fd, struct pd_backend_umem *um)
{
	return vb_dmabuf_import(&dev_of(dev)->host, fd, um);
}

static int emu_umem_sync(void *dev, struct pd_backend_umem *um, enum pd_sync_dir dir)
{
	return 0;   /* host memory is coherent with the model */
}

static int emu_irq_wait_op(void *dev, unsigned int source, uint32_t timeout_ms)
{
	return vb_irq_wait(&dev_of(dev)->host, source, timeout_ms);
}

static int emu_irq_clear_op(void *dev, unsigned int source)
{
	return vb_irq_clear(&dev_of(dev)->host, source);
}

const struct pd_backend_ops emu_backend_ops = {
	.abi = PD_BACKEND_ABI,
	.size = sizeof(struct pd_backend_ops),
	.prefix = "emu",
	.open = emu_open,
	.close = emu_close,
	.info = emu_info,
	.map_bar = emu_map_bar,
	.unmap_bar = emu_unmap_bar,
	.regs_get = emu_regs_get,
	.cfg_read = emu_cfg_read_op,
	.cfg_write = emu_cfg_write_op,
	.kmem_alloc = emu_kmem_alloc_op,
	.kmem_free = emu_kmem_free_op,
	.umem_map = emu_umem_map_op,
	.umem_unmap = emu_umem_unmap_op,
	.umem_sync = emu_umem_sync,
	.irq_wait = emu_irq_wait_op,
	.irq_clear = emu_irq_clear_op,
	.dmabuf_import = emu_dmabuf_import_op,
};
