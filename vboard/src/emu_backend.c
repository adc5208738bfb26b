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

#include "emu.h"

struct emu_kmem {
	struct emu_map map;
	struct emu_run run;
	struct emu_kmem_range range;
	void *host;
	size_t alloc;
};

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
	emu_iommu_destroy(&d->mmu);
	for (i = 0; i < MP_CH_COUNT; i++)
		emu_chan_destroy(&d->ch[i]);
	emu_test_destroy(&d->test);
	emu_irq_destroy(&d->irq);
	pthread_mutex_destroy(&d->cfg_lock);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static int emu_open(const char *name, void **dev)
{
	struct emu_dev *d;
	size_t sz = (sizeof(*d) + EMU_CACHELINE - 1) & ~(size_t)(EMU_CACHELINE - 1);
	double rate = 0, r;
	unsigned int i;
	int ret;

	d = aligned_alloc(EMU_CACHELINE, sz);
	if (!d)
		return -ENOMEM;
	memset(d, 0, sz);
	ret = emu_parse_options(name, &d->cfg);
	if (ret) {
		free(d);
		return ret;
	}
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

	pthread_mutex_init(&d->lock, NULL);
	d->next_kmem_id = d->next_umem_id = 1;
	atomic_init(&d->scratch, 0);
	atomic_init(&d->cycle_hi, 0);
	emu_cfg_init(d);
	emu_irq_init(&d->irq, d->cfg.msi, d->cfg.dropirq);
	for (i = 0; i < MP_CH_COUNT; i++)
		emu_chan_init(d, i);
	emu_iommu_init(&d->mmu, d->cfg.iova_base, d->cfg.seed);
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

	/* the front end has freed every kmem/umem: the engine can touch nothing any more */
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

	if (bar == MP_ENGINE_BAR)
		return -EOPNOTSUPP;   /* registers with side effects: use pd_regs_get */
	if (bar != EMU_MEM_BAR || !d->mem)
		return -EINVAL;       /* no such BAR */
	*addr = d->mem;
	*size = d->cfg.mem;
	return 0;
}

static int emu_unmap_bar(void *dev, unsigned int bar, void *addr, size_t size)
{
	return 0;   /* the on-board memory lives until pd_close */
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
		regs->write32 = emu_reg_write;
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

/* ------------------------------------------------------------------ kernel memory */

static int emu_kmem_alloc(void *dev, struct pd_backend_kmem *km)
{
	struct emu_dev *d = dev_of(dev);
	struct emu_kmem *k;
	int ret;

	if (km->size > d->cfg.kmem_max)
		return -ENOMEM;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->alloc = (km->size + EMU_PAGE - 1) & ~(size_t)(EMU_PAGE - 1);
	/* zeroed like dma_alloc_coherent memory */
	k->host = mmap(NULL, k->alloc, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (k->host == MAP_FAILED) {
		free(k);
		return -ENOMEM;
	}
	k->run.iova = 0;
	k->run.len = km->size;   /* the bytes past size in the last page fault */
	k->run.host = k->host;
	k->map.win_len = k->alloc;
	k->map.access = EMU_ACC_READ | EMU_ACC_WRITE;
	k->map.nruns = 1;
	k->map.runs = &k->run;
	ret = emu_iommu_add(&d->mmu, &k->map);
	if (ret) {
		munmap(k->host, k->alloc);
		free(k);
		return ret;
	}
	k->range.start = (uintptr_t)k->host;
	k->range.end = (uintptr_t)k->host + k->alloc;
	pthread_mutex_lock(&d->lock);
	k->range.next = d->kmem_ranges;
	d->kmem_ranges = &k->range;
	km->id = d->next_kmem_id++;
	pthread_mutex_unlock(&d->lock);
	km->ptr = k->host;
	km->bus_addr = k->run.iova;
	km->priv = k;
	return 0;
}

static int emu_kmem_free(void *dev, struct pd_backend_kmem *km)
{
	struct emu_dev *d = dev_of(dev);
	struct emu_kmem *k = km->priv;
	struct emu_kmem_range **p;

	pthread_mutex_lock(&d->lock);
	for (p = &d->kmem_ranges; *p && *p != &k->range; p = &(*p)->next)
		;
	if (*p)
		*p = k->range.next;
	pthread_mutex_unlock(&d->lock);
	/* after this the engine cannot reach the memory: a DMA still using it faults */
	emu_iommu_remove(&d->mmu, &k->map);
	munmap(k->host, k->alloc);
	free(k);
	return 0;
}

/* ------------------------------------------------------------------ user memory */

struct emu_umem {
	struct emu_map map;
};

struct group {
	uint64_t first, pages;   /* pages of the buffer, in buffer order */
	uint64_t iova;           /* relative IOVA of its first page */
};

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static int cmp_run(const void *a, const void *b)
{
	const struct emu_run *x = a, *y = b;

	return x->iova < y->iova ? -1 : x->iova > y->iova;
}

/* Does every page of [start, end) lie in mappings of this process with the permissions
 * `perms` ("r" or "rw")? Read from /proc/self/maps, as pin_user_pages checks the VMAs. */
static bool vmas_allow(uintptr_t start, uintptr_t end, const char *perms)
{
	unsigned long lo, hi;
	char line[512], p[5];
	uintptr_t covered = start;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return true;   /* no procfs: mincore's check stands alone */
	while (covered < end && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) != 3 || hi <= covered)
			continue;
		if (lo > covered)
			break;   /* a hole */
		if (p[0] != 'r' || (perms[1] == 'w' && p[1] != 'w'))
			break;
		covered = hi;
	}
	fclose(f);
	return covered >= end;
}

/* Like pin_user_pages: every page must be mapped, readable, and writable when the device
 * writes to it (FOLL_WRITE); driver memory (kmem, a VM_PFNMAP mapping on the kernel backend)
 * cannot be pinned. */
static int check_pages(struct emu_dev *d, uintptr_t start, uint64_t npages, enum pd_dma_dir dir)
{
	struct emu_kmem_range *r;
	unsigned char *vec;
	uintptr_t end = start + npages * EMU_PAGE;
	int ret = 0;

	vec = malloc(npages ? npages : 1);
	if (!vec)
		return -ENOMEM;
	if (mincore((void *)start, npages * EMU_PAGE, vec))
		ret = -EFAULT;
	free(vec);
	if (ret)
		return ret;
	if (!vmas_allow(start, end, dir == PD_DMA_TO_DEVICE ? "r" : "rw"))
		return -EFAULT;
	pthread_mutex_lock(&d->lock);
	for (r = d->kmem_ranges; r; r = r->next)
		if (start < r->end && r->start < end)
			ret = -EFAULT;
	pthread_mutex_unlock(&d->lock);
	return ret;
}

static int emu_umem_map(void *dev, struct pd_backend_umem *um)
{
	struct emu_dev *d = dev_of(dev);
	uintptr_t addr = (uintptr_t)um->addr, start = addr & ~(uintptr_t)(EMU_PAGE - 1);
	uint64_t off = addr - start, size = um->size;
	uint64_t npages = (off + size + EMU_PAGE - 1) / EMU_PAGE;
	uint64_t ngroups, i, j, len, cur, seed, b0, b1, tmp, seg;
	struct group *g = NULL;
	uint64_t *order = NULL;
	struct emu_run *bo = NULL;
	struct emu_umem *u = NULL;
	size_t nsg;
	int ret;

	ret = check_pages(d, start, npages, um->dir);
	if (ret)
		return ret;
	pthread_mutex_lock(&d->lock);
	seed = d->cfg.seed * 0x2545f4914f6cdd1dull + ++d->umem_count;
	pthread_mutex_unlock(&d->lock);

	/* 1. split the pages into groups that will be contiguous in IOVA space */
	g = malloc(npages * sizeof(*g));
	order = malloc(npages * sizeof(*order));
	if (!g || !order) {
		ret = -ENOMEM;
		goto err;
	}
	for (i = ngroups = 0; i < npages; i += len, ngroups++) {
		switch (d->cfg.sg) {
		case EMU_SG_MERGED: len = npages; break;
		case EMU_SG_PAGES: len = 1; break;
		default: len = 1 + rnd(&seed) % 16; break;
		}
		if (len > npages - i)
			len = npages - i;
		g[ngroups].first = i;
		g[ngroups].pages = len;
		order[ngroups] = ngroups;
	}
	/* 2. place them in a shuffled order, with unmapped gaps of 1 to 4 pages between */
	if (d->cfg.sg != EMU_SG_MERGED)
		for (i = ngroups - 1; i > 0; i--) {
			j = rnd(&seed) % (i + 1);
			tmp = order[i];
			order[i] = order[j];
			order[j] = tmp;
		}
	for (i = cur = 0; i < ngroups; i++) {
		if (i)
			cur += EMU_PAGE * (1 + rnd(&seed) % 4);
		g[order[i]].iova = cur;
		cur += g[order[i]].pages * EMU_PAGE;
	}
	free(order);
	order = NULL;

	/* 3. runs: exactly the bytes of the buffer, in buffer order */
	bo = malloc(ngroups * sizeof(*bo));
	u = calloc(1, sizeof(*u));
	if (!bo || !u) {
		ret = -ENOMEM;
		goto err;
	}
	u->map.runs = malloc(ngroups * sizeof(*u->map.runs));
	if (!u->map.runs) {
		ret = -ENOMEM;
		goto err;
	}
	for (i = 0; i < ngroups; i++) {
		b0 = g[i].first * EMU_PAGE;
		b0 = b0 > off ? b0 - off : 0;
		b1 = (g[i].first + g[i].pages) * EMU_PAGE - off;
		if (b1 > size)
			b1 = size;
		bo[i].iova = g[i].iova + (b0 + off - g[i].first * EMU_PAGE);
		bo[i].len = b1 - b0;
		bo[i].host = (uint8_t *)um->addr + b0;
	}
	free(g);
	g = NULL;
	memcpy(u->map.runs, bo, ngroups * sizeof(*bo));
	qsort(u->map.runs, ngroups, sizeof(*bo), cmp_run);
	u->map.nruns = ngroups;
	u->map.win_len = cur;
	u->map.access = (um->dir == PD_DMA_TO_DEVICE ? EMU_ACC_READ : 0) |
			(um->dir == PD_DMA_FROM_DEVICE ? EMU_ACC_WRITE : 0) |
			(um->dir == PD_DMA_BIDIRECTIONAL ? EMU_ACC_READ | EMU_ACC_WRITE : 0);
	ret = emu_iommu_add(&d->mmu, &u->map);
	if (ret)
		goto err;

	/* 4. the SG list: runs in buffer order, IOVA-contiguous neighbours merged. With maxseg=
	 * entries are cut as the kernel cuts them at the device's max segment size: chunks of
	 * maxseg/4K pages from the run's first page, merged only while they stay <= maxseg. */
	seg = d->cfg.maxseg ? d->cfg.maxseg : UINT64_MAX;
	for (i = nsg = 0; i < ngroups; i++)
		nsg += (size_t)(bo[i].len / (seg < UINT64_MAX ? seg : bo[i].len) + 2);
	um->sg = malloc(nsg * sizeof(*um->sg));
	if (!um->sg) {
		emu_iommu_remove(&d->mmu, &u->map);
		ret = -ENOMEM;
		goto err;
	}
	for (i = nsg = 0; i < ngroups; i++) {
		uint64_t iova = bo[i].iova + u->map.win_start, left = bo[i].len, n;
		uint64_t base = iova & ~(uint64_t)(EMU_PAGE - 1);

		while (left) {
			n = seg == UINT64_MAX ? left : min_u64(left, seg - (iova - base) % seg);
			if (nsg && um->sg[nsg - 1].bus_addr + um->sg[nsg - 1].length == iova &&
			    um->sg[nsg - 1].length + n <= seg) {
				um->sg[nsg - 1].length += n;
			} else {
				um->sg[nsg].bus_addr = iova;
				um->sg[nsg].length = n;
				nsg++;
			}
			iova += n;
			left -= n;
		}
	}
	free(bo);
	um->sg_count = nsg;
	pthread_mutex_lock(&d->lock);
	um->id = d->next_umem_id++;
	pthread_mutex_unlock(&d->lock);
	um->priv = u;
	return 0;

err:
	if (u)
		free(u->map.runs);
	free(u);
	free(bo);
	free(order);
	free(g);
	return ret;
}

static int emu_umem_unmap(void *dev, struct pd_backend_umem *um)
{
	struct emu_umem *u = um->priv;

	emu_iommu_remove(&dev_of(dev)->mmu, &u->map);
	free(u->map.runs);
	free(u);
	return 0;
}

static int emu_umem_sync(void *dev, struct pd_backend_umem *um, enum pd_sync_dir dir)
{
	return 0;   /* host memory is coherent with the model */
}

static int emu_irq_wait_op(void *dev, unsigned int source, uint32_t timeout_ms)
{
	return emu_irq_wait(dev_of(dev), source, timeout_ms);
}

static int emu_irq_clear_op(void *dev, unsigned int source)
{
	return emu_irq_clear(dev_of(dev), source);
}

const struct pd_backend_ops emu_backend_ops = {
	.abi = PD_BACKEND_ABI,
	.prefix = "emu",
	.open = emu_open,
	.close = emu_close,
	.info = emu_info,
	.map_bar = emu_map_bar,
	.unmap_bar = emu_unmap_bar,
	.regs_get = emu_regs_get,
	.cfg_read = emu_cfg_read_op,
	.cfg_write = emu_cfg_write_op,
	.kmem_alloc = emu_kmem_alloc,
	.kmem_free = emu_kmem_free,
	.umem_map = emu_umem_map,
	.umem_unmap = emu_umem_unmap,
	.umem_sync = emu_umem_sync,
	.irq_wait = emu_irq_wait_op,
	.irq_clear = emu_irq_clear_op,
};
