// SPDX-License-Identifier: GPL-2.0
/*
 * pcidriver.ko: dma-buf import. Memory another driver exports (udmabuf, a DMA-BUF heap, GPU
 * memory) becomes a umem of the importing file (umem.c: handles, SG list, sync, release).
 *
 * The attachment is dynamic, so that peer-to-peer mappings are allowed (exporters offer a PCI
 * BAR only to importers that say they accept one), and pinned for as long as the import
 * lives: user space programs the device with the bus addresses directly, in descriptors the
 * driver never sees, so a mapping cannot be moved under it; move_notify is therefore never
 * called for our attachment (exporters do not move pinned buffers). The reservation lock is
 * held around pin/map and unmap/unpin, as both kernels we build against (6.1 .. 6.12)
 * require for dynamic attachments.
 *
 * For an exporter that is not dynamic (udmabuf, the system heap, vgem) the dma-buf core maps
 * the buffer for our device inside the attach call, before we see a bus address; a page the
 * device cannot reach would then meet the DMA API, which WARNs. So the exporter's CPU pages
 * are checked first, read through a kernel mapping of the dma-buf (pcidrv_dmabuf_scan); an
 * exporter without one is refused where the device does not reach all memory.
 */
#include <linux/dma-buf.h>
#include <linux/dma-direct.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/iommu.h>
#include <linux/iosys-map.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "pcidrv.h"

PCIDRV_MODULE_IMPORT_NS_DMA_BUF;

static void pcidrv_dmabuf_move_notify(struct dma_buf_attachment *attach)
{
	/* pinned: only reached if an exporter breaks that promise */
	dev_warn_ratelimited(attach->dev, "exporter %s moved a pinned dma-buf\n",
			     attach->dmabuf->exp_name);
}

static const struct dma_buf_attach_ops pcidrv_dmabuf_attach_ops = {
	.allow_peer2peer = true,
	.move_notify = pcidrv_dmabuf_move_notify,
};

/* The exporter's CPU pages as dev sees them (pcidrv_dmabuf_scan). */
struct pcidrv_dmabuf_span {
	u64 last_bus;		/* the highest bus address of any page */
	size_t max_run;		/* the longest physically contiguous run of pages, in bytes */
};

/*
 * Reads the pages behind the exporter's kernel mapping of dmabuf (its vmap), which are the
 * pages its SG table holds; the longest contiguous run bounds the longest segment it can
 * make. 1 where the memory is I/O memory (a PCI BAR: no CPU pages to check; its bus
 * addresses are checked when listed); -EOPNOTSUPP where the exporter offers no kernel
 * mapping (6.1's udmabuf), so that its pages cannot be read.
 */
static int pcidrv_dmabuf_scan(struct device *dev, struct dma_buf *dmabuf,
			      struct pcidrv_dmabuf_span *span)
{
	unsigned long i, pfn, prev = 0, npages = DIV_ROUND_UP(dmabuf->size, PAGE_SIZE);
	struct iosys_map map;
	size_t run = 0;
	int ret = 0;

	if (pcidrv_dma_buf_vmap(dmabuf, &map))
		return -EOPNOTSUPP;
	memset(span, 0, sizeof(*span));
	for (i = 0; i < npages && !map.is_iomem; i++) {
		const void *va = map.vaddr + (i << PAGE_SHIFT);
		struct page *page = NULL;

		if (is_vmalloc_addr(va))
			page = vmalloc_to_page(va);
		else if (virt_addr_valid(va))
			page = virt_to_page(va);
		if (!page) {
			ret = -EOPNOTSUPP;
			break;
		}
		pfn = page_to_pfn(page);
		run = i && pfn == prev + 1 ? run + PAGE_SIZE : PAGE_SIZE;
		span->max_run = max(span->max_run, run);
		span->last_bus = max(span->last_bus,
				     (u64)phys_to_dma(dev, PFN_PHYS(pfn) + PAGE_SIZE - 1));
		prev = pfn;
		if (!(i % 4096))
			cond_resched();
	}
	if (map.is_iomem)
		ret = 1;
	pcidrv_dma_buf_vunmap(dmabuf, &map);
	return ret;
}

/*
 * -ERANGE if the device cannot reach a CPU page of dmabuf (pcidrv_dma_reach), or might not
 * and the pages cannot be read; before attaching.
 */
static int pcidrv_dmabuf_check_reach(struct device *dev, struct dma_buf *dmabuf)
{
	struct pcidrv_dmabuf_span span;
	enum pcidrv_reach reach;
	u64 limit;
	int ret;

	reach = pcidrv_dma_reach(dev, &limit);
	if (reach == PCIDRV_REACH_ALL ||
	    (reach == PCIDRV_REACH_BELOW_LIMIT && !dma_addressing_limited(dev)))
		return 0;	/* every page of RAM is in reach */
	ret = pcidrv_dmabuf_scan(dev, dmabuf, &span);
	if (ret > 0)
		return 0;	/* I/O memory */
	if (ret < 0)
		return -ERANGE;	/* unknown pages, some RAM out of reach: refused, not risked */
	return reach == PCIDRV_REACH_NONE || span.last_bus > limit ? -ERANGE : 0;
}

/*
 * The exporter failed to map for the device. Where its mapping bounces (swiotlb without an
 * IOMMU), dma-direct says EIO both for a segment longer than the pool maps at once and for a
 * full pool: tell them apart, E2BIG (never imports on this boot) from ENOMEM (may later).
 */
static int pcidrv_dmabuf_map_error(struct device *dev, struct dma_buf *dmabuf, int err)
{
	struct iommu_domain *domain = iommu_get_domain_for_dev(dev);
	struct pcidrv_dmabuf_span span;
	phys_addr_t pool_last;

	if (err != -EIO || (domain && iommu_is_dma_domain(domain)) ||
	    !pcidrv_bounce_pool_last(dev, &pool_last))
		return err;
	if (!pcidrv_dmabuf_scan(dev, dmabuf, &span) && span.max_run > dma_max_mapping_size(dev))
		return -E2BIG;
	return -ENOMEM;
}

/* Attaches, pins and maps um->attach's dma-buf for the device; inside the SRCU read side. */
static int pcidrv_dmabuf_map(struct pcidrv_umem *um, struct dma_buf *dmabuf)
{
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
	int ret;

	attach = dma_buf_dynamic_attach(dmabuf, &um->pd->pdev->dev, &pcidrv_dmabuf_attach_ops,
					um);
	if (IS_ERR(attach))
		return PTR_ERR(attach);

	ret = dma_resv_lock_interruptible(dmabuf->resv, NULL);
	if (ret)
		goto err_detach;
	ret = dma_buf_pin(attach);
	if (ret)
		goto err_unlock;
	sgt = dma_buf_map_attachment(attach, um->dir);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		goto err_unpin;
	}
	dma_resv_unlock(dmabuf->resv);
	um->attach = attach;
	um->dma_sgt = sgt;
	return 0;

err_unpin:
	dma_buf_unpin(attach);
err_unlock:
	dma_resv_unlock(dmabuf->resv);
err_detach:
	dma_buf_detach(dmabuf, attach);
	return ret;
}

/* um->release of an import, from its last put: while the device is bound (see pcidrv.h). */
static void pcidrv_dmabuf_release(struct pcidrv_umem *um)
{
	struct dma_buf *dmabuf = um->attach->dmabuf;
	struct pcidrv_dev *pd = um->pd;

	dma_resv_lock(dmabuf->resv, NULL);
	dma_buf_unmap_attachment(um->attach, um->dma_sgt, um->dir);
	dma_buf_unpin(um->attach);
	dma_resv_unlock(dmabuf->resv);
	dma_buf_detach(dmabuf, um->attach);
	dma_buf_put(dmabuf);
	atomic_dec(&pd->dmabuf_count);
	atomic64_sub(um->size, &pd->dmabuf_bytes);
}

int pcidrv_ioctl_dmabuf_import(struct pcidrv_file *f,
			       struct pcidriver_dmabuf_import __user *arg)
{
	unsigned long minsz = offsetofend(struct pcidriver_dmabuf_import, sg_count);
	const u32 dirs = PCIDRIVER_UMEM_TO_DEVICE | PCIDRIVER_UMEM_FROM_DEVICE;
	struct pcidrv_dev *pd = f->pd;
	struct pcidriver_dmabuf_import req;
	struct dma_buf *dmabuf;
	struct pcidrv_umem *um;
	u32 id;
	int ret, idx;

	if (copy_from_user(&req, arg, minsz))
		return -EFAULT;
	if (req.argsz < minsz || (req.flags & ~dirs) || !(req.flags & dirs) || req.__reserved)
		return -EINVAL;

	dmabuf = dma_buf_get(req.fd);		/* EBADF, or EINVAL for another kind of file */
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	ret = -EACCES;		/* the device would write what the caller may only read */
	if ((req.flags & PCIDRIVER_UMEM_FROM_DEVICE) && !(dmabuf->file->f_mode & FMODE_WRITE))
		goto err_put_dmabuf;
	ret = -EINVAL;
	if (!dmabuf->size || dmabuf->size > PCIDRIVER_UMEM_MAX_SIZE)
		goto err_put_dmabuf;
	ret = -ENOMEM;
	um = pcidrv_umem_new(f, dmabuf->size, req.flags);
	if (!um)
		goto err_put_dmabuf;
	ret = pcidrv_acct_charge(&um->acct, DIV_ROUND_UP(dmabuf->size, PAGE_SIZE));
	if (ret)
		goto err_free;

	idx = pcidrv_enter(pd);
	if (idx < 0) {
		ret = idx;
		goto err_uncharge;
	}
	ret = pcidrv_dmabuf_check_reach(&pd->pdev->dev, dmabuf);
	if (!ret) {
		ret = pcidrv_dmabuf_map(um, dmabuf);
		if (ret)
			ret = pcidrv_dmabuf_map_error(&pd->pdev->dev, dmabuf, ret);
	}
	if (ret) {
		pcidrv_leave(pd, idx);
		goto err_uncharge;
	}
	/* from here the umem owns the dma-buf reference; its last put releases both */
	um->release = pcidrv_dmabuf_release;
	atomic_inc(&pd->dmabuf_count);
	atomic64_add(um->size, &pd->dmabuf_bytes);
	ret = pcidrv_umem_publish(um, &id);
	if (ret) {
		pcidrv_umem_put(um);
		pcidrv_leave(pd, idx);
		return ret;
	}
	pcidrv_leave(pd, idx);

	req.size = um->size;
	req.id = id;
	req.sg_count = um->sg_count;
	if (copy_to_user(arg, &req, minsz)) {
		pcidrv_umem_unpublish(um, id);
		return -EFAULT;
	}
	return 0;

err_uncharge:
	pcidrv_acct_uncharge(&um->acct);
err_free:
	kfree(um);
err_put_dmabuf:
	dma_buf_put(dmabuf);
	return ret;
}
