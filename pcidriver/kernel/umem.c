// SPDX-License-Identifier: GPL-2.0
/*
 * pcidriver.ko: user memory (umem). An existing user buffer pinned with FOLL_LONGTERM, put in
 * an sg_table and mapped for DMA, owned by one open file. Also the RLIMIT_MEMLOCK accounting
 * shared with kmem.
 *
 * A umem is reference counted: its handle (the entry in pd->umem_xa) and lookups in progress,
 * which all run inside the device's SRCU read side; so after remove()'s synchronize_srcu()
 * only handles remain and remove() can release everything while still bound.
 */
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "pcidrv.h"

/* ---------------------------------------------------------------- RLIMIT_MEMLOCK */

/*
 * Charge pages to current->mm->pinned_vm, as RDMA's ib_umem does: refused with -ENOMEM above
 * RLIMIT_MEMLOCK unless the caller has CAP_IPC_LOCK. The mm is remembered (mmgrab) so that
 * the charge is returned to it whoever releases the memory later.
 */
int pcidrv_acct_charge(struct pcidrv_acct *acct, unsigned long pages)
{
	struct mm_struct *mm = current->mm;
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	s64 pinned;

	if (!mm)
		return -EFAULT;
	pinned = atomic64_add_return(pages, &mm->pinned_vm);
	if (pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(pages, &mm->pinned_vm);
		return -ENOMEM;
	}
	mmgrab(mm);
	acct->mm = mm;
	acct->pages = pages;
	return 0;
}

void pcidrv_acct_uncharge(struct pcidrv_acct *acct)
{
	if (!acct->mm)
		return;
	atomic64_sub(acct->pages, &acct->mm->pinned_vm);
	mmdrop(acct->mm);
	acct->mm = NULL;
}

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

	if (um->dma_mapped) {
		dma_unmap_sgtable(&pd->pdev->dev, &um->sgt.sgt, um->dir, 0);
		atomic_dec(&pd->umem_count);
		atomic64_sub(um->acct.pages << PAGE_SHIFT, &pd->umem_pinned_bytes);
	}
	pcidrv_umem_unpin(um);
	sg_free_append_table(&um->sgt);
	pcidrv_acct_uncharge(&um->acct);
	kfree(um);
}

static void pcidrv_umem_put(struct pcidrv_umem *um)
{
	kref_put(&um->kref, pcidrv_umem_release);
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
 * Walks the DMA segments of um, merging neighbours that are contiguous in bus address space
 * while the merged entry stays within the device's max segment size and segment boundary.
 * Calls emit(ctx, index, addr, len) per resulting entry; stops early if emit returns non-zero.
 * Returns the number of entries, or emit's error.
 */
static long pcidrv_umem_walk(struct pcidrv_umem *um,
			     int (*emit)(void *ctx, u32 index, u64 addr, u64 len), void *ctx)
{
	struct device *dev = &um->pd->pdev->dev;
	u64 max_seg = dma_get_max_seg_size(dev);
	u64 boundary = dma_get_seg_boundary(dev);
	u64 cur_addr = 0, cur_len = 0;
	struct scatterlist *sg;
	u32 n = 0;
	unsigned int i;
	int ret;

	for_each_sgtable_dma_sg(&um->sgt.sgt, sg, i) {
		u64 addr = sg_dma_address(sg);
		u64 len = sg_dma_len(sg);

		if (cur_len && cur_addr + cur_len == addr && cur_len + len <= max_seg &&
		    (cur_addr | boundary) == ((addr + len - 1) | boundary)) {
			cur_len += len;
			continue;
		}
		if (cur_len) {
			ret = emit ? emit(ctx, n, cur_addr, cur_len) : 0;
			if (ret)
				return ret;
			n++;
		}
		cur_addr = addr;
		cur_len = len;
	}
	if (cur_len) {
		ret = emit ? emit(ctx, n, cur_addr, cur_len) : 0;
		if (ret)
			return ret;
		n++;
	}
	return n;
}

#define PCIDRV_SG_BATCH 32

struct pcidrv_sg_copy {
	struct pcidriver_sg_entry __user *dst;
	u32 first, count;		/* range requested */
	u32 copied;
	u32 batched;
	struct pcidriver_sg_entry batch[PCIDRV_SG_BATCH];
};

static int pcidrv_sg_flush(struct pcidrv_sg_copy *c)
{
	if (copy_to_user(c->dst + c->copied, c->batch, c->batched * sizeof(c->batch[0])))
		return -EFAULT;
	c->copied += c->batched;
	c->batched = 0;
	return 0;
}

static int pcidrv_sg_emit(void *ctx, u32 index, u64 addr, u64 len)
{
	struct pcidrv_sg_copy *c = ctx;

	if (index < c->first || index - c->first >= c->count)
		return 0;
	c->batch[c->batched].bus_addr = addr;
	c->batch[c->batched].length = len;
	if (++c->batched == PCIDRV_SG_BATCH)
		return pcidrv_sg_flush(c);
	return 0;
}

/* ---------------------------------------------------------------- ioctls */

/* pin_user_pages() lost its vmas argument in 6.5. */
static long pcidrv_pin_pages(unsigned long start, unsigned long nr, unsigned int gup_flags,
			     struct page **pages)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0)
	return pin_user_pages(start, nr, gup_flags, pages, NULL);
#else
	return pin_user_pages(start, nr, gup_flags, pages);
#endif
}

/*
 * Pin [vaddr, vaddr + size) a page of page pointers at a time, appending to um->sgt. Every
 * chunk but the last ends on a page boundary, as sg_alloc_append_table_from_pages() needs.
 * The slow path (pin_user_pages under mmap_lock) checks every VMA: VM_IO and VM_PFNMAP
 * mappings, such as BARs and kmem of this driver, fail with -EFAULT. pin_user_pages_fast()
 * would pin kmem pages that an IOMMU's dma_mmap_coherent() inserted as normal pages.
 */
static int pcidrv_umem_pin(struct pcidrv_umem *um, unsigned long vaddr, unsigned long npages)
{
	unsigned int max_seg = max_t(unsigned int,
				     dma_get_max_seg_size(&um->pd->pdev->dev) & PAGE_MASK,
				     PAGE_SIZE);
	unsigned int gup_flags = FOLL_LONGTERM;
	unsigned int offset = offset_in_page(vaddr);
	unsigned long cur = vaddr & PAGE_MASK;
	struct mm_struct *mm = current->mm;
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
		mmap_read_lock(mm);
		pinned = pcidrv_pin_pages(cur, n, gup_flags, pages);
		mmap_read_unlock(mm);
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

int pcidrv_ioctl_umem_map(struct pcidrv_file *f, struct pcidriver_umem_map __user *arg)
{
	unsigned long minsz = offsetofend(struct pcidriver_umem_map, sg_count);
	u32 dirs = PCIDRIVER_UMEM_TO_DEVICE | PCIDRIVER_UMEM_FROM_DEVICE;
	struct pcidrv_dev *pd = f->pd;
	struct pcidriver_umem_map req;
	struct pcidrv_umem *um;
	unsigned long npages;
	long count;
	u32 id;
	int ret;

	if (copy_from_user(&req, arg, minsz))
		return -EFAULT;
	if (req.argsz < minsz || (req.flags & ~dirs) || !(req.flags & dirs))
		return -EINVAL;
	if (!req.size || req.size > PCIDRIVER_UMEM_MAX_SIZE || req.vaddr + req.size < req.vaddr ||
	    req.vaddr + req.size > ULONG_MAX)
		return -EINVAL;
	npages = (offset_in_page(req.vaddr) + req.size + PAGE_SIZE - 1) >> PAGE_SHIFT;

	um = kzalloc(sizeof(*um), GFP_KERNEL);
	if (!um)
		return -ENOMEM;
	kref_init(&um->kref);
	um->pd = pd;
	um->owner = f;
	um->size = req.size;
	um->dir = req.flags == dirs ? DMA_BIDIRECTIONAL :
		  req.flags == PCIDRIVER_UMEM_TO_DEVICE ? DMA_TO_DEVICE : DMA_FROM_DEVICE;

	ret = pcidrv_acct_charge(&um->acct, npages);
	if (ret)
		goto err_free;

	ret = pcidrv_umem_pin(um, req.vaddr, npages);
	if (ret)
		goto err_release;

	ret = dma_map_sgtable(&pd->pdev->dev, &um->sgt.sgt, um->dir, 0);
	if (ret)
		goto err_release;
	um->dma_mapped = true;
	atomic_inc(&pd->umem_count);
	atomic64_add((u64)npages << PAGE_SHIFT, &pd->umem_pinned_bytes);

	count = pcidrv_umem_walk(um, NULL, NULL);
	um->sg_count = count;

	ret = xa_alloc_cyclic(&pd->umem_xa, &id, um, XA_LIMIT(1, PCIDRIVER_ID_MAX),
			      &pd->umem_next_id, GFP_KERNEL);
	if (ret < 0) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto err_release;
	}
	um->id = id;

	req.id = id;
	req.sg_count = um->sg_count;
	if (copy_to_user(arg, &req, minsz)) {
		ret = -EFAULT;
		/* unless another thread of this file guessed the ID and unmapped it already */
		if (xa_cmpxchg(&pd->umem_xa, id, um, NULL, GFP_KERNEL) != um)
			return ret;
		goto err_release;
	}
	return 0;

err_release:
	pcidrv_umem_put(um);	/* unmaps, unpins what was pinned, uncharges */
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

	if (copy_from_user(&req, arg, minsz))
		return -EFAULT;
	if (req.argsz < minsz || req.flags || req.__reserved)
		return -EINVAL;

	xa_lock(&pd->umem_xa);
	um = xa_load(&pd->umem_xa, req.id);
	if (um && um->owner == f)
		__xa_erase(&pd->umem_xa, req.id);
	else
		um = NULL;
	xa_unlock(&pd->umem_xa);
	if (!um)
		return -ENOENT;
	pcidrv_umem_put(um);
	return 0;
}

int pcidrv_ioctl_umem_sglist(struct pcidrv_file *f, struct pcidriver_umem_sglist __user *arg)
{
	unsigned long minsz = offsetofend(struct pcidriver_umem_sglist, entries);
	struct pcidriver_umem_sglist req;
	struct pcidrv_sg_copy *c;
	struct pcidrv_umem *um;
	long n;
	int ret;

	if (copy_from_user(&req, arg, minsz))
		return -EFAULT;
	if (req.argsz < minsz || req.flags)
		return -EINVAL;
	um = pcidrv_umem_get(f, req.id);
	if (!um)
		return -ENOENT;

	ret = -EINVAL;
	if (req.first > um->sg_count)
		goto out_put;
	ret = -ENOMEM;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		goto out_put;
	c->dst = u64_to_user_ptr(req.entries);
	c->first = req.first;
	c->count = min(req.count, um->sg_count - req.first);
	n = pcidrv_umem_walk(um, pcidrv_sg_emit, c);
	ret = n < 0 ? n : 0;
	if (!ret && c->batched)
		ret = pcidrv_sg_flush(c);
	if (!ret) {
		req.count = c->copied;
		req.total = um->sg_count;
		if (copy_to_user(arg, &req, minsz))
			ret = -EFAULT;
	}
	kfree(c);
out_put:
	pcidrv_umem_put(um);
	return ret;
}

int pcidrv_ioctl_umem_sync(struct pcidrv_file *f, struct pcidriver_umem_sync __user *arg)
{
	unsigned long minsz = offsetofend(struct pcidriver_umem_sync, __reserved);
	struct device *dev = &f->pd->pdev->dev;
	struct pcidriver_umem_sync req;
	struct pcidrv_umem *um;

	if (copy_from_user(&req, arg, minsz))
		return -EFAULT;
	if (req.argsz < minsz || req.__reserved ||
	    (req.flags != PCIDRIVER_SYNC_FOR_CPU && req.flags != PCIDRIVER_SYNC_FOR_DEVICE))
		return -EINVAL;
	um = pcidrv_umem_get(f, req.id);
	if (!um)
		return -ENOENT;
	if (req.flags == PCIDRIVER_SYNC_FOR_CPU)
		dma_sync_sgtable_for_cpu(dev, &um->sgt.sgt, um->dir);
	else
		dma_sync_sgtable_for_device(dev, &um->sgt.sgt, um->dir);
	pcidrv_umem_put(um);
	return 0;
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
