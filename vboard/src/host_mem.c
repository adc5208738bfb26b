// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host memory the device can reach, for every backend that embeds the host object (host.h):
 * kmem (zeroed pages with one bus address range) and umem (a user
 * buffer checked as pin_user_pages would, laid out in IOVA space as an IOMMU might, with its
 * SG list), both published in the IOMMU model (host_iommu.c) that every device access goes
 * through.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "host.h"

struct vb_kmem {
	struct vb_map map;
	struct vb_run run;
	struct vb_kmem_range range;
	void *host;
	size_t alloc;
};

/* ------------------------------------------------------------------ kernel memory */

int vb_kmem_alloc(struct vb_host *h, struct pd_backend_kmem *km)
{
	struct vb_kmem *k;
	int ret;

	if (km->size > h->cfg.kmem_max)
		return -ENOMEM;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->alloc = (km->size + VB_PAGE - 1) & ~(size_t)(VB_PAGE - 1);
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
	k->map.access = VB_ACC_READ | VB_ACC_WRITE;
	k->map.nruns = 1;
	k->map.runs = &k->run;
	ret = vb_iommu_add(&h->mmu, &k->map);
	if (ret) {
		munmap(k->host, k->alloc);
		free(k);
		return ret;
	}
	k->range.start = (uintptr_t)k->host;
	k->range.end = (uintptr_t)k->host + k->alloc;
	pthread_mutex_lock(&h->lock);
	k->range.next = h->kmem_ranges;
	h->kmem_ranges = &k->range;
	km->id = h->next_kmem_id++;
	pthread_mutex_unlock(&h->lock);
	km->ptr = k->host;
	km->bus_addr = k->run.iova;
	km->priv = k;
	return 0;
}

int vb_kmem_free(struct vb_host *h, struct pd_backend_kmem *km)
{
	struct vb_kmem *k = km->priv;
	struct vb_kmem_range **p;

	pthread_mutex_lock(&h->lock);
	for (p = &h->kmem_ranges; *p && *p != &k->range; p = &(*p)->next)
		;
	if (*p)
		*p = k->range.next;
	pthread_mutex_unlock(&h->lock);
	/* after this the engine cannot reach the memory: a DMA still using it faults */
	vb_iommu_remove(&h->mmu, &k->map);
	munmap(k->host, k->alloc);
	free(k);
	return 0;
}

/* ------------------------------------------------------------------ user memory */

struct vb_umem {
	struct vb_map map;
	void *dmabuf_view;       /* an imported dma-buf: this process's mapping of it */
	size_t dmabuf_len;
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
	const struct vb_run *x = a, *y = b;

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
static int check_pages(struct vb_host *h, uintptr_t start, uint64_t npages, enum pd_dma_dir dir)
{
	struct vb_kmem_range *r;
	unsigned char *vec;
	uintptr_t end = start + npages * VB_PAGE;
	int ret = 0;

	vec = malloc(npages ? npages : 1);
	if (!vec)
		return -ENOMEM;
	if (mincore((void *)start, npages * VB_PAGE, vec))
		ret = -EFAULT;
	free(vec);
	if (ret)
		return ret;
	if (!vmas_allow(start, end, dir == PD_DMA_TO_DEVICE ? "r" : "rw"))
		return -EFAULT;
	pthread_mutex_lock(&h->lock);
	for (r = h->kmem_ranges; r; r = r->next)
		if (start < r->end && r->start < end)
			ret = -EFAULT;
	pthread_mutex_unlock(&h->lock);
	return ret;
}

int vb_umem_map(struct vb_host *h, struct pd_backend_umem *um)
{
	uintptr_t addr = (uintptr_t)um->addr, start = addr & ~(uintptr_t)(VB_PAGE - 1);
	uint64_t off = addr - start, size = um->size;
	uint64_t npages = (off + size + VB_PAGE - 1) / VB_PAGE;
	uint64_t ngroups, i, j, len, cur, seed, b0, b1, tmp, seg;
	struct group *g = NULL;
	uint64_t *order = NULL;
	struct vb_run *bo = NULL;
	struct vb_umem *u = NULL;
	size_t nsg;
	int ret;

	ret = check_pages(h, start, npages, um->dir);
	if (ret)
		return ret;
	pthread_mutex_lock(&h->lock);
	seed = h->cfg.seed * 0x2545f4914f6cdd1dull + ++h->umem_count;
	pthread_mutex_unlock(&h->lock);

	/* 1. split the pages into groups that will be contiguous in IOVA space */
	g = malloc(npages * sizeof(*g));
	order = malloc(npages * sizeof(*order));
	if (!g || !order) {
		ret = -ENOMEM;
		goto err;
	}
	for (i = ngroups = 0; i < npages; i += len, ngroups++) {
		switch (h->cfg.sg) {
		case VB_SG_MERGED: len = npages; break;
		case VB_SG_PAGES: len = 1; break;
		default: len = 1 + rnd(&seed) % 16; break;
		}
		if (len > npages - i)
			len = npages - i;
		g[ngroups].first = i;
		g[ngroups].pages = len;
		order[ngroups] = ngroups;
	}
	/* 2. place them in a shuffled order, with unmapped gaps of 1 to 4 pages between */
	if (h->cfg.sg != VB_SG_MERGED)
		for (i = ngroups - 1; i > 0; i--) {
			j = rnd(&seed) % (i + 1);
			tmp = order[i];
			order[i] = order[j];
			order[j] = tmp;
		}
	for (i = cur = 0; i < ngroups; i++) {
		if (i)
			cur += VB_PAGE * (1 + rnd(&seed) % 4);
		g[order[i]].iova = cur;
		cur += g[order[i]].pages * VB_PAGE;
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
		b0 = g[i].first * VB_PAGE;
		b0 = b0 > off ? b0 - off : 0;
		b1 = (g[i].first + g[i].pages) * VB_PAGE - off;
		if (b1 > size)
			b1 = size;
		bo[i].iova = g[i].iova + (b0 + off - g[i].first * VB_PAGE);
		bo[i].len = b1 - b0;
		bo[i].host = (uint8_t *)um->addr + b0;
	}
	free(g);
	g = NULL;
	memcpy(u->map.runs, bo, ngroups * sizeof(*bo));
	qsort(u->map.runs, ngroups, sizeof(*bo), cmp_run);
	u->map.nruns = ngroups;
	u->map.win_len = cur;
	u->map.access = (um->dir == PD_DMA_TO_DEVICE ? VB_ACC_READ : 0) |
			(um->dir == PD_DMA_FROM_DEVICE ? VB_ACC_WRITE : 0) |
			(um->dir == PD_DMA_BIDIRECTIONAL ? VB_ACC_READ | VB_ACC_WRITE : 0);
	ret = vb_iommu_add(&h->mmu, &u->map);
	if (ret)
		goto err;

	/* 4. the SG list: runs in buffer order, IOVA-contiguous neighbours merged. With maxseg=
	 * entries are cut as the kernel cuts them at the device's max segment size: chunks of
	 * maxseg/4K pages from the run's first page, merged only while they stay <= maxseg. */
	seg = h->cfg.maxseg ? h->cfg.maxseg : UINT64_MAX;
	for (i = nsg = 0; i < ngroups; i++)
		nsg += (size_t)(bo[i].len / (seg < UINT64_MAX ? seg : bo[i].len) + 2);
	um->sg = malloc(nsg * sizeof(*um->sg));
	if (!um->sg) {
		vb_iommu_remove(&h->mmu, &u->map);
		ret = -ENOMEM;
		goto err;
	}
	for (i = nsg = 0; i < ngroups; i++) {
		uint64_t iova = bo[i].iova + u->map.win_start, left = bo[i].len, n;
		uint64_t base = iova & ~(uint64_t)(VB_PAGE - 1);

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
	pthread_mutex_lock(&h->lock);
	um->id = h->next_umem_id++;
	pthread_mutex_unlock(&h->lock);
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

int vb_umem_unmap(struct vb_host *h, struct pd_backend_umem *um)
{
	struct vb_umem *u = um->priv;

	vb_iommu_remove(&h->mmu, &u->map);
	if (u->dmabuf_view)
		munmap(u->dmabuf_view, u->dmabuf_len);
	free(u->map.runs);
	free(u);
	return 0;
}

/* The size of dma-buf fd from its fdinfo ("size:" and "exp_name:" lines), -EINVAL when fd
 * is open but no dma-buf, -EBADF when it is not open. */
static int64_t dmabuf_size(int fd)
{
	char path[64], line[256];
	int64_t size = -1;
	int exporter = 0;
	FILE *f;

	if (fcntl(fd, F_GETFD) < 0)
		return -EBADF;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return -EINVAL;
	while (fgets(line, sizeof(line), f)) {
		long long v;

		if (sscanf(line, "size: %lld", &v) == 1)
			size = v;
		exporter |= strncmp(line, "exp_name:", 9) == 0;
	}
	fclose(f);
	return exporter && size > 0 ? size : -EINVAL;
}

/*
 * The model reaches memory only through this process's address space, so it imports a
 * dma-buf by mapping it (the exporter's mmap) and then treats it as a umem of that mapping.
 * A dma-buf the CPU cannot map (GPU memory) cannot be reached: -EOPNOTSUPP. As in
 * pcidriver.ko, a dma-buf whose file is read-only is imported for the board to read only
 * (-EACCES for it to write).
 */
int vb_dmabuf_import(struct vb_host *h, int fd, struct pd_backend_umem *um)
{
	int64_t size = dmabuf_size(fd);
	int writable = (fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY;
	struct vb_umem *u;
	void *view;
	int ret;

	if (size < 0)
		return (int)size;
	if (!writable && um->dir != PD_DMA_TO_DEVICE)
		return -EACCES;
	if ((uint64_t)size > PD_UMEM_MAX_SIZE || (uint64_t)size > SIZE_MAX)
		return -EINVAL;
	view = mmap(NULL, (size_t)size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd,
		    0);
	if (view == MAP_FAILED)
		return errno == ENOMEM ? -ENOMEM : -EOPNOTSUPP;
	um->addr = view;
	um->size = (size_t)size;
	ret = vb_umem_map(h, um);
	if (ret) {
		munmap(view, (size_t)size);
		return ret;
	}
	u = um->priv;
	u->dmabuf_view = view;
	u->dmabuf_len = (size_t)size;
	return 0;
}
