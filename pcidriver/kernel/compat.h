/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pcidriver.ko: the differences between the kernels we build against (6.1 ... 6.12), in one
 * place. Everything else is written against the current API.
 */
#ifndef PCIDRV_COMPAT_H
#define PCIDRV_COMPAT_H

#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/iosys-map.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/swiotlb.h>
#include <linux/version.h>

/* vm_flags became read-only in 6.3; before that the helpers did not exist. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}
#endif

/*
 * Pins with the slow path (VMA checks). From 6.5 the unlocked variant, whose faults may drop
 * mmap_lock and wait (userfaultfd-managed memory then works; 6.1 warns when it is given
 * FOLL_LONGTERM); before, under mmap_lock, where such a fault fails with -EFAULT.
 */
static inline long pcidrv_pin_user_pages(unsigned long start, unsigned long nr,
					 unsigned int gup_flags, struct page **pages)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0)
	long ret;

	mmap_read_lock(current->mm);
	ret = pin_user_pages(start, nr, gup_flags, pages, NULL);
	mmap_read_unlock(current->mm);
	return ret;
#else
	return pin_user_pages_unlocked(start, nr, pages, gup_flags);
#endif
}

/*
 * The last byte of the swiotlb bounce pool that dev's streaming mappings use, if dev has
 * one. The pool moved into struct io_tlb_pool in 6.6; newer kernels no longer export
 * is_swiotlb_active(), so the structure is read directly (dev->dma_io_tlb_mem is what the
 * DMA core itself uses; its default pool is allocated once at boot).
 */
static inline bool pcidrv_bounce_pool_last(struct device *dev, phys_addr_t *last)
{
#ifdef CONFIG_SWIOTLB
	struct io_tlb_mem *mem = dev->dma_io_tlb_mem;

	if (!mem || !mem->nslabs)
		return false;
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 6, 0)
	*last = mem->end - 1;
#else
	*last = mem->defpool.end - 1;
#endif
	return true;
#else
	return false;
#endif
}

/*
 * Keeps the offset within its page of every byte a bounce buffer (swiotlb) carries, so that
 * page-granular address lists (NVMe PRPs) built from bounced bus addresses stay valid.
 * Only from 6.3: before it, swiotlb's slot search with a min_align_mask above its 2 KiB slot
 * size steps past its starting slot and never stops when no free run fits a buffer whose
 * page offset has bit 11 set, a hard lockup under the pool's lock. Older kernels keep the
 * offset where nothing bounces (direct mapping, IOMMU) and only there (docs/pcidriver.md).
 */
static inline void pcidrv_keep_page_offset(struct device *dev)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	dma_set_min_align_mask(dev, PAGE_SIZE - 1);
#endif
}

/*
 * A kernel mapping of a dma-buf: dma_buf_vmap() took the reservation lock itself before 6.2;
 * from 6.2 its callers hold it, and the _unlocked variants take it.
 */
static inline int pcidrv_dma_buf_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
	return dma_buf_vmap(dmabuf, map);
#else
	return dma_buf_vmap_unlocked(dmabuf, map);
#endif
}

static inline void pcidrv_dma_buf_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
	dma_buf_vunmap(dmabuf, map);
#else
	dma_buf_vunmap_unlocked(dmabuf, map);
#endif
}

/* dma-buf's exports live in namespace DMA_BUF; from 6.13 the macro takes a string. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
#define PCIDRV_MODULE_IMPORT_NS_DMA_BUF MODULE_IMPORT_NS(DMA_BUF)
#else
#define PCIDRV_MODULE_IMPORT_NS_DMA_BUF MODULE_IMPORT_NS("DMA_BUF")
#endif

#endif /* PCIDRV_COMPAT_H */
