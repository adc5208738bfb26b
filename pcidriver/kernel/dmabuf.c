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
 */
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/module.h>
#include <linux/uaccess.h>

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
	ret = pcidrv_dmabuf_map(um, dmabuf);
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
