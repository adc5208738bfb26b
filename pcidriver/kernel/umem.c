// SPDX-License-Identifier: GPL-2.0
/*
 * pcidriver.ko: user memory (umem). An existing user buffer pinned with FOLL_LONGTERM, put in
 * an sg_table and mapped for DMA, owned by one open file. An imported dma-buf (dmabuf.c) is a
 * umem too: same handles, SG list, sync and release rules, with the exporter's sg_table.
 *
 * A umem is reference counted: its handle (the entry in pd->umem_xa) and lookups in progress,
 * which all run inside the device's SRCU read side; so after remove()'s synchronize_srcu()
 * only handles remain and remove() can release everything while still bound.
 */
#include <linux/dma-direct.h>
#include <linux/dma-mapping.h>
#include <linux/iommu.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "pcidrv.h"

/* ---------------------------------------------------------------- object lifetime */

static void pcidrv_umem_unpin(struct pcidrv_umem *um)
{
	bool dirty = um->dir != DMA_TO_DEVICE;
	struct scatterlist *sg;
	unsigned int i;

	for_each_sgtable_sg(&um->sgt.sgt, sg, i)
		unpin_user_page_range_dirty_lock(sg_page(sg),
						 DIV_ROUND_UP(sg->offset + sg->length, PAGE_SIZE),
						 dirty);
}

static void pcidrv_umem_release(struct kref *kref)
{
	struct pcidrv_umem *um = container_of(kref, struct pcidrv_umem, kref);
	struct pcidrv_dev *pd = um->pd;

	if (um->release) {
		um->release(um);
	} else {
		if (um->dma_mapped) {
			dma_unmap_sgtable(&pd->pdev->dev, &um->sgt.sgt, um->dir, 0);
			atomic_dec(&pd->umem_count);
			atomic64_sub(um->acct.pages << PAGE_SHIFT, &pd->umem_pinned_bytes);
		}
		pcidrv_umem_unpin(um);
		sg_free_append_table(&um->sgt);
	}
	pcidrv_acct_uncharge(&um->acct);
	kfree(um);
}

void pcidrv_umem_put(struct pcidrv_umem *um)
{
	kref_put(&um->kref, pcidrv_umem_release);
}

/* A umem of file f for size bytes in the PCIDRIVER_UMEM_* directions of flags (checked). */
struct pcidrv_umem *pcidrv_umem_new(struct pcidrv_file *f, u64 size, u32 flags)
{
	const u32 dirs = PCIDRIVER_UMEM_TO_DEVICE | PCIDRIVER_UMEM_FROM_DEVICE;
	struct pcidrv_umem *um = kzalloc(sizeof(*um), GFP_KERNEL);

	if (!um)
		return NULL;
	kref_init(&um->kref);
	um->pd = f->pd;
	um->owner = f;
	um->size = size;
	um->dir = flags == dirs ? DMA_BIDIRECTIONAL :
		  flags == PCIDRIVER_UMEM_TO_DEVICE ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	um->dma_sgt = &um->sgt.sgt;
	return um;
}

static struct pcidrv_umem *pcidrv_umem_get(struct pcidrv_file *f, u32 id)
{
	struct pcidrv_dev *pd = f->pd;
	struct pcidrv_umem *um;

	xa_lock(&pd->umem_xa);
	um = xa_load(&pd->umem_xa, id);
	if (um && um->owner == f)
		kref_get(&um->kref);
	else
		um = NULL;
	xa_unlock(&pd->umem_xa);
	return um;
}

/* ---------------------------------------------------------------- SG list */

/*
 * Walks the DMA segments of um as the list the device gets: neighbours contiguous in bus
 * address space are merged, and entries are cut, so that each stays within the device's max
 * segment size and segment boundary (the DMA API keeps to them; an exporter of a dma-buf
 * need not). Calls emit(ctx, index, addr, len) per resulting entry; stops early if emit
 * returns non-zero. Returns the number of entries, emit's error, or -ERANGE for a segment
 * beyond the device's DMA mask.
 */
static long pcidrv_umem_walk(struct pcidrv_umem *um,
			     int (*emit)(void *ctx, u32 index, u64 addr, u64 len), void *ctx)
{
	struct device *dev = &um->pd->pdev->dev;
	u64 max_seg = dma_get_max_seg_size(dev);
	u64 boundary = dma_get_seg_boundary(dev);
	u64 limit = min_not_zero(dma_get_mask(dev), dev->bus_dma_limit);
	u64 cur_addr = 0, cur_len = 0;
	struct scatterlist *sg;
	u32 n = 0;
	unsigned int i;
	int ret;

	for_each_sgtable_dma_sg(um->dma_sgt, sg, i) {
		u64 addr = sg_dma_address(sg);
		u64 len = sg_dma_len(sg);

		if (len && (addr + len - 1 < addr || addr + len - 1 > limit))
			return -ERANGE;
		while (len) {
			/* the longest piece from addr that needs no cut (no overflow at 2^64) */
			u64 piece = min(len, max_seg);

			if (boundary - (addr & boundary) < piece - 1)
				piece = boundary - (addr & boundary) + 1;
			if (cur_len && cur_addr + cur_len == addr && cur_len + piece <= max_seg &&
			    (cur_addr | boundary) == ((addr + piece - 1) | boundary)) {
				cur_len += piece;
			} else {
				if (cur_len) {
					ret = emit ? emit(ctx, n, cur_addr, cur_len) : 0;
					if (ret)
						return ret;
					n++;
				}
				cur_addr = addr;
				cur_len = piece;
			}
			addr += piece;
			len -= piece;
		}
	}
	if (cur_len) {
		ret = emit ? emit(ctx, n, cur_addr, cur_len) : 0;
		if (ret)
			return ret;
		n++;
	}
	return n;
}

/* Entries [first, first + count) of the coalesced list, gathered into a kernel array. */
struct pcidrv_sg_copy {
	u32 first, count;
	struct pcidriver_sg_entry *entries;
};

static int pcidrv_sg_emit(void *ctx, u32 index, u64 addr, u64 len)
{
	struct pcidrv_sg_copy *c = ctx;

	if (index >= c->first && index - c->first < c->count) {
		c->entries[index - c->first].bus_addr = addr;
		c->entries[index - c->first].length = len;
	}
	return 0;
}

/* ---------------------------------------------------------------- pinning */

/*
 * Pin [vaddr, vaddr + size) a page of page pointers at a time, appending to um->sgt. Every
 * chunk but the last ends on a page boundary, as sg_alloc_append_table_from_pages() needs.
 * The slow path checks every VMA: VM_IO and VM_PFNMAP mappings, such as BARs and kmem of
 * this driver, fail with -EFAULT. pin_user_pages_fast() would pin kmem pages that an IOMMU's
 * dma_mmap_coherent() inserted as normal pages. Faulting the pages in may wait on user space
 * (userfaultfd, FUSE), so this runs outside the device's SRCU read side.
 */
static int pcidrv_umem_pin(struct pcidrv_umem *um, unsigned long vaddr, unsigned long npages)
{
	unsigned int max_seg = max_t(unsigned int,
				     dma_get_max_seg_size(&um->pd->pdev->dev) & PAGE_MASK,
				     PAGE_SIZE);
	unsigned int gup_flags = FOLL_LONGTERM;
	unsigned int offset = offset_in_page(vaddr);
	unsigned long cur = vaddr & PAGE_MASK;
	u64 bytes = 0, excess;
	struct page **pages;
	struct scatterlist *last;
	int ret = 0;

	if (um->dir != DMA_TO_DEVICE)
		gup_flags |= FOLL_WRITE;
	pages = (struct page **)__get_free_page(GFP_KERNEL);
	if (!pages)
		return -ENOMEM;

	while (npages) {
		unsigned long n = min_t(unsigned long, npages, PAGE_SIZE / sizeof(struct page *));
		long pinned;

		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		pinned = pcidrv_pin_user_pages(cur, n, gup_flags, pages);
		if (pinned <= 0) {
			ret = pinned ? pinned : -EFAULT;
			break;
		}
		npages -= pinned;
		cur += pinned << PAGE_SHIFT;
		/* whole pages; the tail of the last page is trimmed below */
		ret = sg_alloc_append_table_from_pages(&um->sgt, pages, pinned, offset,
						       ((u64)pinned << PAGE_SHIFT) - offset,
						       max_seg, npages, GFP_KERNEL);
		if (ret) {
			unpin_user_pages(pages, pinned);
			break;
		}
		bytes += ((u64)pinned << PAGE_SHIFT) - offset;
		offset = 0;
	}
	free_page((unsigned long)pages);
	if (ret)
		return ret;

	/* The list covers whole pages up to the end of the last one: cut it at vaddr + size. */
	excess = bytes - um->size;
	last = um->sgt.prv;
	if (WARN_ON_ONCE(!last || excess >= last->length))
		return -EINVAL;
	last->length -= excess;
	return 0;
}

/*
 * Which CPU pages dev reaches, directly or through a bounce buffer it can address. The DMA
 * API WARNs when handed a page beyond the device's mask with no bounce pool (dma-direct), or
 * a bounce pool beyond the mask (swiotlb), which a device with a mask below 32 bits meets on
 * an ordinary machine: callers refuse such pages (ERANGE) before anything is mapped. Behind
 * an IOMMU (a DMA domain) bus addresses are IOVAs allocated within the mask.
 */
enum pcidrv_reach pcidrv_dma_reach(struct device *dev, u64 *limit)
{
	struct iommu_domain *domain = iommu_get_domain_for_dev(dev);
	phys_addr_t pool_last;

	*limit = min_not_zero(dma_get_mask(dev), dev->bus_dma_limit);
	if (domain && iommu_is_dma_domain(domain))
		return PCIDRV_REACH_ALL;
	if (pcidrv_bounce_pool_last(dev, &pool_last) && phys_to_dma(dev, pool_last) <= *limit)
		return PCIDRV_REACH_ALL;	/* pages out of reach are bounced */
	if (is_swiotlb_force_bounce(dev))
		return PCIDRV_REACH_NONE;	/* every page would be bounced out of reach */
	return PCIDRV_REACH_BELOW_LIMIT;
}

/* -ERANGE unless the device can reach every page of um (pcidrv_dma_reach). */
static int pcidrv_umem_check_reach(struct pcidrv_umem *um)
{
	struct device *dev = &um->pd->pdev->dev;
	struct scatterlist *sg;
	unsigned int i;
	u64 limit;

	switch (pcidrv_dma_reach(dev, &limit)) {
	case PCIDRV_REACH_ALL:
		return 0;
	case PCIDRV_REACH_NONE:
		return -ERANGE;
	case PCIDRV_REACH_BELOW_LIMIT:
		break;
	}
	for_each_sgtable_sg(&um->sgt.sgt, sg, i)
		if (phys_to_dma(dev, sg_phys(sg) + sg->length - 1) > limit)
			return -ERANGE;
	return 0;
}

/* ---------------------------------------------------------------- handles */

/*
 * Lists um's SG entries and gives it an ID of its file; the handle takes over the caller's
 * reference. Called inside the SRCU read side, after the DMA mapping is made.
 */
int pcidrv_umem_publish(struct pcidrv_umem *um, u32 *id)
{
	struct pcidrv_dev *pd = um->pd;
	long n = pcidrv_umem_walk(um, NULL, NULL);
	int ret;

	if (n < 0)
		return n;
	um->sg_count = n;
	ret = xa_alloc_cyclic(&pd->umem_xa, id, um, XA_LIMIT(1, PCIDRIVER_ID_MAX),
			      &pd->umem_next_id, GFP_KERNEL);
	if (ret < 0)
		return ret == -EBUSY ? -ENOSPC : ret;
	um->id = *id;
	return 0;
}

/*
 * Undoes pcidrv_umem_publish() when the ID could not be handed to user space (outside the
 * SRCU read side): drops the handle, unless another thread of the file guessed the ID and
 * released it already, or remove() has begun (it releases every handle).
 */
void pcidrv_umem_unpublish(struct pcidrv_umem *um, u32 id)
{
	struct pcidrv_dev *pd = um->pd;
	int idx = pcidrv_enter(pd);

	if (idx < 0)
		return;
	if (xa_cmpxchg(&pd->umem_xa, id, um, NULL, GFP_KERNEL) == um)
		pcidrv_umem_put(um);
	pcidrv_leave(pd, idx);
}

/* ---------------------------------------------------------------- ioctls */

int pcidrv_ioctl_umem_map(struct pcidrv_file *f, struct pcidriver_umem_map __user *arg)
{
	unsigned long minsz = offsetofend(struct pcidriver_umem_map, sg_count);
	const u32 dirs = PCIDRIVER_UMEM_TO_DEVICE | PCIDRIVER_UMEM_FROM_DEVICE;
	struct pcidrv_dev *pd = f->pd;
	struct pcidriver_umem_map req;
	struct pcidrv_umem *um;
	unsigned long npages;
	u32 id;
	int ret, idx;

	if (copy_from_user(&req, arg, minsz))
		return -EFAULT;
	if (req.argsz < minsz || (req.flags & ~dirs) || !(req.flags & dirs))
		return -EINVAL;
	if (!req.size || req.size > PCIDRIVER_UMEM_MAX_SIZE || req.vaddr + req.size < req.vaddr ||
	    req.vaddr + req.size > ULONG_MAX)
		return -EINVAL;
	npages = (offset_in_page(req.vaddr) + req.size + PAGE_SIZE - 1) >> PAGE_SHIFT;

	um = pcidrv_umem_new(f, req.size, req.flags);
	if (!um)
		return -ENOMEM;
	ret = pcidrv_acct_charge(&um->acct, npages);
	if (ret)
		goto err_free;
	ret = pcidrv_umem_pin(um, req.vaddr, npages);
	if (!ret)
		ret = pcidrv_umem_check_reach(um);
	if (ret)
		goto err_put;	/* not mapped: unpins and uncharges */

	idx = pcidrv_enter(pd);
	if (idx < 0) {
		ret = idx;
		goto err_put;
	}
	ret = dma_map_sgtable(&pd->pdev->dev, &um->sgt.sgt, um->dir, 0);
	if (ret) {
		/* dma-direct's -EIO: the bounce pool is full, i.e. out of DMA space */
		ret = ret == -EIO ? -ENOMEM : ret;
		goto err_put_leave;
	}
	um->dma_mapped = true;
	atomic_inc(&pd->umem_count);
	atomic64_add((u64)npages << PAGE_SHIFT, &pd->umem_pinned_bytes);

	ret = pcidrv_umem_publish(um, &id);
	if (ret)
		goto err_put_leave;
	pcidrv_leave(pd, idx);

	req.id = id;
	req.sg_count = um->sg_count;
	if (copy_to_user(arg, &req, minsz)) {
		pcidrv_umem_unpublish(um, id);
		return -EFAULT;
	}
	return 0;

err_put_leave:
	pcidrv_umem_put(um);	/* unmaps while the device is alive */
	pcidrv_leave(pd, idx);
	return ret;

err_put:
	pcidrv_umem_put(um);
	return ret;

err_free:
	kfree(um);
	return ret;
}

int pcidrv_ioctl_umem_unmap(struct pcidrv_file *f, struct pcidriver_mem_id __user *arg)
{
	unsigned long minsz = offsetofend(struct pcidriver_mem_id, __reserved);
	struct pcidrv_dev *pd = f->pd;
	struct pcidriver_mem_id req;
	struct pcidrv_umem *um;
	int idx;

	if (copy_from_user(&req, arg, minsz))
		return -EFAULT;
	if (req.argsz < minsz || req.flags || req.__reserved)
		return -EINVAL;

	idx = pcidrv_enter(pd);
	if (idx < 0)
		return idx;
	um = pcidrv_take_handle(&pd->umem_xa, req.id, f, offsetof(struct pcidrv_umem, owner));
	if (um)
		pcidrv_umem_put(um);
	pcidrv_leave(pd, idx);
	return um ? 0 : -ENOENT;
}

int pcidrv_ioctl_umem_sglist(struct pcidrv_file *f, struct pcidriver_umem_sglist __user *arg)
{
	unsigned long minsz = offsetofend(struct pcidriver_umem_sglist, entries);
	struct pcidrv_sg_copy c = { };
	struct pcidrv_dev *pd = f->pd;
	struct pcidriver_umem_sglist req;
	struct pcidrv_umem *um;
	int ret, idx;

	if (copy_from_user(&req, arg, minsz))
		return -EFAULT;
	if (req.argsz < minsz || req.flags)
		return -EINVAL;

	idx = pcidrv_enter(pd);
	if (idx < 0)
		return idx;
	ret = -ENOENT;
	um = pcidrv_umem_get(f, req.id);
	if (!um)
		goto out_leave;
	ret = -EINVAL;
	if (req.first > um->sg_count)
		goto out_put;
	c.first = req.first;
	c.count = min(req.count, um->sg_count - req.first);
	ret = -ENOMEM;
	c.entries = kvmalloc_array(max(c.count, 1U), sizeof(*c.entries), GFP_KERNEL_ACCOUNT);
	if (!c.entries)
		goto out_put;
	pcidrv_umem_walk(um, pcidrv_sg_emit, &c);
	req.count = c.count;
	req.total = um->sg_count;
	ret = 0;
out_put:
	pcidrv_umem_put(um);
out_leave:
	pcidrv_leave(pd, idx);

	if (!ret && (copy_to_user(u64_to_user_ptr(req.entries), c.entries,
				  (size_t)c.count * sizeof(*c.entries)) ||
		     copy_to_user(arg, &req, minsz)))
		ret = -EFAULT;
	kvfree(c.entries);
	return ret;
}

int pcidrv_ioctl_umem_sync(struct pcidrv_file *f, struct pcidriver_umem_sync __user *arg)
{
	unsigned long minsz = offsetofend(struct pcidriver_umem_sync, __reserved);
	struct pcidrv_dev *pd = f->pd;
	struct pcidriver_umem_sync req;
	struct pcidrv_umem *um;
	int idx;

	if (copy_from_user(&req, arg, minsz))
		return -EFAULT;
	if (req.argsz < minsz || req.__reserved ||
	    (req.flags != PCIDRIVER_SYNC_FOR_CPU && req.flags != PCIDRIVER_SYNC_FOR_DEVICE))
		return -EINVAL;

	idx = pcidrv_enter(pd);
	if (idx < 0)
		return idx;
	um = pcidrv_umem_get(f, req.id);
	if (um) {
		if (req.flags == PCIDRIVER_SYNC_FOR_CPU)
			dma_sync_sgtable_for_cpu(&pd->pdev->dev, um->dma_sgt, um->dir);
		else
			dma_sync_sgtable_for_device(&pd->pdev->dev, um->dma_sgt, um->dir);
		pcidrv_umem_put(um);
	}
	pcidrv_leave(pd, idx);
	return um ? 0 : -ENOENT;
}

/* Drop the handles of file f (its last close); see pcidrv_kmem_release_file(). */
void pcidrv_umem_release_file(struct pcidrv_file *f)
{
	struct pcidrv_dev *pd = f->pd;
	struct pcidrv_umem *um;
	unsigned long id;

	xa_lock(&pd->umem_xa);
	xa_for_each(&pd->umem_xa, id, um) {
		if (um->owner != f)
			continue;
		__xa_erase(&pd->umem_xa, id);
		xa_unlock(&pd->umem_xa);
		pcidrv_umem_put(um);
		xa_lock(&pd->umem_xa);
	}
	xa_unlock(&pd->umem_xa);
}

/* remove(): no lookup is in progress any more, only handles hold references. */
void pcidrv_umem_release_all(struct pcidrv_dev *pd)
{
	struct pcidrv_umem *um;
	unsigned long id;

	xa_for_each(&pd->umem_xa, id, um) {
		xa_erase(&pd->umem_xa, id);
		pcidrv_umem_put(um);
	}
}
