// SPDX-License-Identifier: GPL-2.0
/*
 * pcidriver.ko: kernel memory (kmem). DMA-coherent buffers allocated for one open file, mapped
 * into user space with dma_mmap_coherent().
 *
 * A kmem is reference counted: its handle (the entry in pd->kmem_xa, owned by one file), each
 * mapping of it, and lookups in progress. The DMA memory is freed by the last put, or by
 * remove() while the device is still bound (after zapping every user mapping); a put after
 * that only frees the struct.
 */
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "pcidrv.h"

/* Frees the DMA memory of km (once). */
static void __pcidrv_kmem_free_dma(struct pcidrv_kmem *km)
{
	struct pcidrv_dev *pd = km->pd;

	lockdep_assert_held(&pd->kmem_lock);
	if (!km->cpu_addr)
		return;
	dma_free_coherent(&pd->pdev->dev, km->size, km->cpu_addr, km->dma_addr);
	km->cpu_addr = NULL;
	list_del(&km->node);
	atomic_dec(&pd->kmem_count);
	atomic64_sub(km->size, &pd->kmem_bytes);
	pcidrv_acct_uncharge(&km->acct);
}

static void pcidrv_kmem_release(struct kref *kref)
{
	struct pcidrv_kmem *km = container_of(kref, struct pcidrv_kmem, kref);
	struct pcidrv_dev *pd = km->pd;

	mutex_lock(&pd->kmem_lock);
	__pcidrv_kmem_free_dma(km);
	mutex_unlock(&pd->kmem_lock);
	kfree(km);
	pcidrv_dev_put(pd);
}

void pcidrv_kmem_put(struct pcidrv_kmem *km)
{
	kref_put(&km->kref, pcidrv_kmem_release);
}

/* A reference to kmem id if file f owns it, else NULL. */
struct pcidrv_kmem *pcidrv_kmem_get(struct pcidrv_file *f, u32 id)
{
	struct pcidrv_dev *pd = f->pd;
	struct pcidrv_kmem *km;

	xa_lock(&pd->kmem_xa);
	km = xa_load(&pd->kmem_xa, id);
	if (km && km->owner == f)
		kref_get(&km->kref);
	else
		km = NULL;
	xa_unlock(&pd->kmem_xa);
	return km;
}

/*
 * The allocation never invokes the OOM killer (__GFP_RETRY_MAYFAIL: the caller gets ENOMEM
 * instead of another process being killed) and is charged to the caller's memory cgroup
 * (__GFP_ACCOUNT), which bounds kmem where RLIMIT_MEMLOCK does not (CAP_IPC_LOCK).
 */
#define PCIDRV_KMEM_GFP (GFP_KERNEL | __GFP_NOWARN | __GFP_RETRY_MAYFAIL | __GFP_ACCOUNT)

int pcidrv_ioctl_kmem_alloc(struct pcidrv_file *f, struct pcidriver_kmem_alloc __user *arg)
{
	unsigned long minsz = offsetofend(struct pcidriver_kmem_alloc, __reserved);
	struct pcidrv_dev *pd = f->pd;
	struct pcidriver_kmem_alloc req;
	struct pcidrv_kmem *km;
	u32 id;
	int ret, idx;

	if (copy_from_user(&req, arg, minsz))
		return -EFAULT;
	if (req.argsz < minsz || req.flags || req.__reserved)
		return -EINVAL;
	if (!req.size || req.size > PCIDRIVER_KMEM_MAX_SIZE)
		return -EINVAL;

	km = kzalloc(sizeof(*km), GFP_KERNEL);
	if (!km)
		return -ENOMEM;
	kref_init(&km->kref);
	kref_get(&pd->kref);
	km->pd = pd;
	km->owner = f;
	km->size = req.size;

	ret = pcidrv_acct_charge(&km->acct, PAGE_ALIGN(km->size) >> PAGE_SHIFT);
	if (ret)
		goto err_free;

	idx = pcidrv_enter(pd);
	if (idx < 0) {
		ret = idx;
		goto err_uncharge;
	}
	km->cpu_addr = dma_alloc_coherent(&pd->pdev->dev, km->size, &km->dma_addr,
					  PCIDRV_KMEM_GFP);
	if (!km->cpu_addr) {
		pcidrv_leave(pd, idx);
		ret = -ENOMEM;
		goto err_uncharge;
	}
	mutex_lock(&pd->kmem_lock);
	list_add(&km->node, &pd->kmem_list);
	atomic_inc(&pd->kmem_count);
	atomic64_add(km->size, &pd->kmem_bytes);
	mutex_unlock(&pd->kmem_lock);

	ret = xa_alloc_cyclic(&pd->kmem_xa, &id, km, XA_LIMIT(1, PCIDRIVER_ID_MAX),
			      &pd->kmem_next_id, GFP_KERNEL);
	if (ret < 0) {
		pcidrv_kmem_put(km);	/* frees the DMA memory and uncharges */
		pcidrv_leave(pd, idx);
		return ret == -EBUSY ? -ENOSPC : ret;
	}
	km->id = id;
	pcidrv_leave(pd, idx);

	req.id = id;
	req.bus_addr = km->dma_addr;
	req.mmap_offset = PCIDRIVER_MMAP_KMEM(id);
	if (copy_to_user(arg, &req, minsz)) {
		idx = pcidrv_enter(pd);
		if (idx < 0)
			return -EFAULT;		/* remove() releases it */
		/* unless another thread of this file guessed the ID and freed it already */
		if (xa_cmpxchg(&pd->kmem_xa, id, km, NULL, GFP_KERNEL) == km)
			pcidrv_kmem_put(km);
		pcidrv_leave(pd, idx);
		return -EFAULT;
	}
	return 0;

err_uncharge:
	pcidrv_acct_uncharge(&km->acct);
err_free:
	kfree(km);
	pcidrv_dev_put(pd);
	return ret;
}

int pcidrv_ioctl_kmem_free(struct pcidrv_file *f, struct pcidriver_mem_id __user *arg)
{
	unsigned long minsz = offsetofend(struct pcidriver_mem_id, __reserved);
	struct pcidrv_dev *pd = f->pd;
	struct pcidriver_mem_id req;
	struct pcidrv_kmem *km;
	int idx;

	if (copy_from_user(&req, arg, minsz))
		return -EFAULT;
	if (req.argsz < minsz || req.flags || req.__reserved)
		return -EINVAL;

	idx = pcidrv_enter(pd);
	if (idx < 0)
		return idx;
	km = pcidrv_take_handle(&pd->kmem_xa, req.id, f, offsetof(struct pcidrv_kmem, owner));
	if (km)
		pcidrv_kmem_put(km);
	pcidrv_leave(pd, idx);
	return km ? 0 : -ENOENT;
}

/*
 * Map all of km (from its start) into vma; called by pcidrv_mmap() with the device alive.
 * VM_IO keeps get/pin_user_pages away from these pages, so a kmem can never be pinned as
 * umem and outlive its own free.
 */
int pcidrv_kmem_mmap(struct pcidrv_kmem *km, struct vm_area_struct *vma)
{
	unsigned long size = vma->vm_end - vma->vm_start;
	int ret = -EINVAL;

	if (size > PAGE_ALIGN(km->size))
		return -EINVAL;
	vma->vm_pgoff = 0;	/* dma_mmap_coherent() takes it as the offset into the buffer */
	vm_flags_set(vma, VM_IO | VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY);

	mutex_lock(&km->pd->kmem_lock);
	if (km->cpu_addr)
		ret = dma_mmap_coherent(&km->pd->pdev->dev, vma, km->cpu_addr, km->dma_addr,
					km->size);
	mutex_unlock(&km->pd->kmem_lock);
	return ret;
}

/*
 * Drop the handles of file f (its last close). The owner test runs under xa_lock, where an
 * entry (and the reference it holds) cannot go away.
 */
void pcidrv_kmem_release_file(struct pcidrv_file *f)
{
	struct pcidrv_dev *pd = f->pd;
	struct pcidrv_kmem *km;
	unsigned long id;

	xa_lock(&pd->kmem_xa);
	xa_for_each(&pd->kmem_xa, id, km) {
		if (km->owner != f)
			continue;
		__xa_erase(&pd->kmem_xa, id);
		xa_unlock(&pd->kmem_xa);
		pcidrv_kmem_put(km);
		xa_lock(&pd->kmem_xa);
	}
	xa_unlock(&pd->kmem_xa);
}

/*
 * remove(): drop every handle and free all DMA memory while the device is still bound. User
 * mappings were zapped before; kmem structs still referenced by VMAs stay until munmap.
 */
void pcidrv_kmem_release_all(struct pcidrv_dev *pd)
{
	struct pcidrv_kmem *km, *tmp;
	unsigned long id;

	xa_for_each(&pd->kmem_xa, id, km) {
		xa_erase(&pd->kmem_xa, id);
		pcidrv_kmem_put(km);
	}
	mutex_lock(&pd->kmem_lock);
	list_for_each_entry_safe(km, tmp, &pd->kmem_list, node)
		__pcidrv_kmem_free_dma(km);
	mutex_unlock(&pd->kmem_lock);
}
