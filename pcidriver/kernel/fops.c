// SPDX-License-Identifier: GPL-2.0
/*
 * pcidriver.ko: the char device. open/release, the ioctl dispatch, device info and config
 * space, and mmap of BARs and kmem with the bookkeeping that lets remove() revoke mappings.
 */
#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "pcidrv.h"

/* ---------------------------------------------------------------- open / release */

static int pcidrv_open(struct inode *inode, struct file *filp)
{
	struct pcidrv_dev *pd;
	struct pcidrv_file *f;
	unsigned int i;
	int ret, idx;

	pd = pcidrv_dev_get_by_minor(iminor(inode));
	if (!pd)
		return -ENODEV;

	ret = -ENOMEM;
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		goto err_put;
	f->pd = pd;
	if (pd->nr_irqs) {
		f->irq_seen = kcalloc(pd->nr_irqs, sizeof(*f->irq_seen), GFP_KERNEL);
		if (!f->irq_seen)
			goto err_free;
	}

	idx = pcidrv_enter(pd);
	if (idx < 0) {
		ret = idx;
		goto err_free;
	}
	/* a new file sees only interrupts that fire after it was opened */
	for (i = 0; i < pd->nr_irqs; i++)
		atomic64_set(&f->irq_seen[i], atomic64_read(&pd->irqs[i].count));
	pcidrv_leave(pd, idx);

	filp->private_data = f;
	filp->f_mapping = pd->inode->i_mapping;
	return stream_open(inode, filp);

err_free:
	kfree(f->irq_seen);
	kfree(f);
err_put:
	pcidrv_dev_put(pd);
	return ret;
}

/*
 * Last close of the file, also on process death. Releases every kmem/umem handle the file
 * owns; a kmem still mapped lives on until its last mapping goes. If the device is dead,
 * remove() already released everything.
 */
static int pcidrv_release(struct inode *inode, struct file *filp)
{
	struct pcidrv_file *f = filp->private_data;
	struct pcidrv_dev *pd = f->pd;
	int idx;

	idx = pcidrv_enter(pd);
	if (idx >= 0) {
		pcidrv_umem_release_file(f);
		pcidrv_kmem_release_file(f);
		pcidrv_leave(pd, idx);
	}

	kfree(f->irq_seen);
	kfree(f);
	pcidrv_dev_put(pd);
	return 0;
}

/* ---------------------------------------------------------------- info and config space */

static int pcidrv_ioctl_get_info(struct pcidrv_file *f,
				 struct pcidriver_device_info __user *arg)
{
	struct pcidrv_dev *pd = f->pd;
	struct pci_dev *pdev = pd->pdev;
	unsigned long minsz = offsetofend(struct pcidriver_device_info, bar);
	struct pcidriver_device_info info;
	unsigned int i;
	int idx;

	if (copy_from_user(&info, arg, offsetofend(struct pcidriver_device_info, flags)))
		return -EFAULT;
	if (info.argsz < minsz || info.flags)
		return -EINVAL;

	idx = pcidrv_enter(pd);
	if (idx < 0)
		return idx;
	memset(&info, 0, sizeof(info));
	info.argsz = minsz;
	info.vendor = pdev->vendor;
	info.device = pdev->device;
	info.subsystem_vendor = pdev->subsystem_vendor;
	info.subsystem_device = pdev->subsystem_device;
	info.class_code = pdev->class;
	info.revision = pdev->revision;
	info.irq_mode = pd->irq_mode;
	info.irq_count = pd->nr_irqs;
	info.dma_mask_bits = pd->dma_mask_bits;
	if (pci_is_pcie(pdev)) {
		info.max_payload = pcie_get_mps(pdev);
		info.max_read_request = pcie_get_readrq(pdev);
	}
	info.max_segment_size = dma_get_max_seg_size(&pdev->dev);
	info.num_bars = PCIDRIVER_NUM_BARS;
	strscpy(info.name, pci_name(pdev), sizeof(info.name));

	for (i = 0; i < PCIDRIVER_NUM_BARS; i++) {
		struct pcidriver_bar_info *bar = &info.bar[i];
		unsigned long flags = pci_resource_flags(pdev, i);
		resource_size_t len = pci_resource_len(pdev, i);

		if (!len)
			continue;
		bar->bus_addr = pci_bus_address(pdev, i);
		bar->size = len;
		bar->flags = PCIDRIVER_BAR_PRESENT;
		if (flags & IORESOURCE_IO)
			bar->flags |= PCIDRIVER_BAR_IO;
		if (flags & IORESOURCE_MEM_64)
			bar->flags |= PCIDRIVER_BAR_64BIT;
		if (flags & IORESOURCE_PREFETCH)
			bar->flags |= PCIDRIVER_BAR_PREFETCH;
		if ((flags & IORESOURCE_MEM) && PAGE_ALIGNED(pci_resource_start(pdev, i)) &&
		    PAGE_ALIGNED(len))
			bar->flags |= PCIDRIVER_BAR_MMAP;
	}
	pcidrv_leave(pd, idx);

	return copy_to_user(arg, &info, minsz) ? -EFAULT : 0;
}

/*
 * Copy config space in the widest naturally aligned accesses. The buffer holds config space
 * as the device sees it (little endian), like the sysfs config file.
 */
static int pcidrv_config_access(struct pci_dev *pdev, u32 pos, u8 *buf, u32 count, bool write)
{
	int ret = 0;

	while (count && !ret) {
		u32 n;

		if (!(pos & 3) && count >= 4) {
			__le32 le;
			u32 v;

			n = 4;
			if (write) {
				memcpy(&le, buf, n);
				ret = pci_user_write_config_dword(pdev, pos, le32_to_cpu(le));
			} else {
				ret = pci_user_read_config_dword(pdev, pos, &v);
				le = cpu_to_le32(v);
				memcpy(buf, &le, n);
			}
		} else if (!(pos & 1) && count >= 2) {
			__le16 le;
			u16 v;

			n = 2;
			if (write) {
				memcpy(&le, buf, n);
				ret = pci_user_write_config_word(pdev, pos, le16_to_cpu(le));
			} else {
				ret = pci_user_read_config_word(pdev, pos, &v);
				le = cpu_to_le16(v);
				memcpy(buf, &le, n);
			}
		} else {
			n = 1;
			if (write)
				ret = pci_user_write_config_byte(pdev, pos, *buf);
			else
				ret = pci_user_read_config_byte(pdev, pos, buf);
		}
		pos += n;
		buf += n;
		count -= n;
	}
	return ret;
}

/*
 * Reads are open to any opener, unlike sysfs's config file, whose unprivileged readers see
 * the first 64 bytes: that file is world-readable, while /dev/fpgaN is opened only by those
 * its mode admits (docs/pcidriver.md), who control the device through its BARs and DMA
 * anyway and need the capabilities (link status, MSI) that live beyond 64 bytes.
 */
static int pcidrv_ioctl_config_rw(struct pcidrv_file *f, struct pcidriver_config_rw __user *arg,
				  bool write)
{
	unsigned long minsz = offsetofend(struct pcidriver_config_rw, data);
	struct pcidrv_dev *pd = f->pd;
	struct pci_dev *pdev = pd->pdev;
	struct pcidriver_config_rw req;
	void __user *data;
	int ret, idx;
	u8 *buf;

	if (copy_from_user(&req, arg, minsz))
		return -EFAULT;
	if (req.argsz < minsz || req.flags)
		return -EINVAL;
	if (write && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (!req.count || req.offset >= pdev->cfg_size ||
	    req.count > pdev->cfg_size - req.offset)
		return -EINVAL;

	buf = kmalloc(req.count, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	data = u64_to_user_ptr(req.data);
	if (write && copy_from_user(buf, data, req.count)) {
		ret = -EFAULT;
		goto out_free;
	}
	idx = pcidrv_enter(pd);
	if (idx < 0) {
		ret = idx;
		goto out_free;
	}
	ret = pcidrv_config_access(pdev, req.offset, buf, req.count, write);
	pcidrv_leave(pd, idx);
	if (!ret && !write && copy_to_user(data, buf, req.count))
		ret = -EFAULT;
out_free:
	kfree(buf);
	return ret;
}

static int pcidrv_ioctl_api_version(struct pcidrv_file *f)
{
	int idx = pcidrv_enter(f->pd);

	if (idx < 0)
		return idx;
	pcidrv_leave(f->pd, idx);
	return PCIDRIVER_API_VERSION;
}

/* ---------------------------------------------------------------- ioctl */

/*
 * Each handler copies its argument in, enters the device's SRCU read side only for the work
 * on the device (pcidrv_enter), and copies results out after leaving it (see pcidrv.h).
 */
static long pcidrv_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct pcidrv_file *f = filp->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case PCIDRIVER_GET_API_VERSION:
		return pcidrv_ioctl_api_version(f);
	case PCIDRIVER_DEVICE_GET_INFO:
		return pcidrv_ioctl_get_info(f, uarg);
	case PCIDRIVER_CONFIG_READ:
		return pcidrv_ioctl_config_rw(f, uarg, false);
	case PCIDRIVER_CONFIG_WRITE:
		return pcidrv_ioctl_config_rw(f, uarg, true);
	case PCIDRIVER_KMEM_ALLOC:
		return pcidrv_ioctl_kmem_alloc(f, uarg);
	case PCIDRIVER_KMEM_FREE:
		return pcidrv_ioctl_kmem_free(f, uarg);
	case PCIDRIVER_UMEM_MAP:
		return pcidrv_ioctl_umem_map(f, uarg);
	case PCIDRIVER_UMEM_UNMAP:
		return pcidrv_ioctl_umem_unmap(f, uarg);
	case PCIDRIVER_UMEM_GET_SGLIST:
		return pcidrv_ioctl_umem_sglist(f, uarg);
	case PCIDRIVER_UMEM_SYNC:
		return pcidrv_ioctl_umem_sync(f, uarg);
	case PCIDRIVER_IRQ_WAIT:
		return pcidrv_ioctl_irq_wait(f, uarg);
	case PCIDRIVER_IRQ_CLEAR:
		return pcidrv_ioctl_irq_clear(f, uarg);
	case PCIDRIVER_DMABUF_IMPORT:
		return pcidrv_ioctl_dmabuf_import(f, uarg);
	default:
		return -ENOTTY;
	}
}

/* ---------------------------------------------------------------- mmap */

/*
 * Every mmap() of the device is tracked by a struct pcidrv_mapping, shared by the VMAs
 * derived from it (mremap; splitting is refused, fork does not copy them). Its purpose is
 * remove(), which revokes every mapping in the mm that made it (pcidrv_zap_mappings).
 */
struct pcidrv_mapping {
	refcount_t refs;		/* VMAs using this mapping */
	struct list_head node;		/* pd->mappings, under pd->map_lock */
	struct pcidrv_dev *pd;
	struct pcidrv_kmem *km;		/* kmem reference, NULL for a BAR */
	struct mm_struct *mm;		/* mmgrab'd: the mm of the original mmap() */
	bool fenced;			/* remove() waited for mm's mmap_lock */
};

static void pcidrv_vma_open(struct vm_area_struct *vma)
{
	struct pcidrv_mapping *map = vma->vm_private_data;

	refcount_inc(&map->refs);
}

static void pcidrv_vma_close(struct vm_area_struct *vma)
{
	struct pcidrv_mapping *map = vma->vm_private_data;
	struct pcidrv_dev *pd = map->pd;

	if (!refcount_dec_and_test(&map->refs))
		return;
	mutex_lock(&pd->map_lock);
	list_del(&map->node);
	mutex_unlock(&pd->map_lock);
	if (map->km)
		pcidrv_kmem_put(map->km);
	mmdrop(map->mm);
	kfree(map);
}

/* Partial munmap/mprotect would split the PAT and kmem bookkeeping: refuse it. */
static int pcidrv_vma_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	return -EINVAL;
}

static const struct vm_operations_struct pcidrv_vm_ops = {
	.open = pcidrv_vma_open,
	.close = pcidrv_vma_close,
	.may_split = pcidrv_vma_may_split,
};

static int pcidrv_mmap_bar(struct pcidrv_dev *pd, struct vm_area_struct *vma,
			   unsigned int bar, bool wc, u64 offset)
{
	struct pci_dev *pdev = pd->pdev;
	unsigned long flags = pci_resource_flags(pdev, bar);
	resource_size_t start = pci_resource_start(pdev, bar);
	resource_size_t len = pci_resource_len(pdev, bar);
	unsigned long size = vma->vm_end - vma->vm_start;

	if (bar >= PCIDRIVER_NUM_BARS || !len || !(flags & IORESOURCE_MEM))
		return -EINVAL;
	/* a BAR smaller than a page would expose its neighbours */
	if (!PAGE_ALIGNED(start) || !PAGE_ALIGNED(len))
		return -EINVAL;
	if (wc && !(flags & IORESOURCE_PREFETCH))
		return -EINVAL;
	if (offset >= len || size > len - offset)
		return -EINVAL;

	vma->vm_page_prot = wc ? pgprot_writecombine(vma->vm_page_prot) :
				 pgprot_noncached(vma->vm_page_prot);
	vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY);
	return io_remap_pfn_range(vma, vma->vm_start, (start + offset) >> PAGE_SHIFT, size,
				  vma->vm_page_prot);
}

static int pcidrv_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct pcidrv_file *f = filp->private_data;
	struct pcidrv_dev *pd = f->pd;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	unsigned int region = off >> PCIDRIVER_MMAP_REGION_SHIFT;
	u64 inner = off & ((1ULL << PCIDRIVER_MMAP_REGION_SHIFT) - 1);
	struct pcidrv_mapping *map;
	struct pcidrv_kmem *km = NULL;
	int ret, idx;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if ((vma->vm_pgoff >> (PCIDRIVER_MMAP_REGION_SHIFT + 4 - PAGE_SHIFT)) != 0)
		return -EINVAL;

	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return -ENOMEM;

	idx = pcidrv_enter(pd);
	if (idx < 0) {
		kfree(map);
		return idx;
	}

	if (region == PCIDRIVER_MMAP_KMEM_REGION) {
		u64 id = inner >> PCIDRIVER_MMAP_KMEM_ID_SHIFT;

		ret = -EINVAL;
		if (inner & ((1ULL << PCIDRIVER_MMAP_KMEM_ID_SHIFT) - 1) || id > PCIDRIVER_ID_MAX)
			goto out_unlock;
		ret = -ENOENT;
		km = pcidrv_kmem_get(f, id);
		if (!km)
			goto out_unlock;
		ret = pcidrv_kmem_mmap(km, vma);
	} else if ((region & PCIDRIVER_MMAP_REGION_BAR_MASK) < PCIDRIVER_NUM_BARS) {
		ret = pcidrv_mmap_bar(pd, vma, region & PCIDRIVER_MMAP_REGION_BAR_MASK,
				      region & PCIDRIVER_MMAP_REGION_WC, inner);
	} else {
		ret = -EINVAL;
	}
	if (ret)
		goto out_unlock;

	refcount_set(&map->refs, 1);
	map->pd = pd;
	map->km = km;		/* the reference taken by pcidrv_kmem_get() */
	map->mm = vma->vm_mm;
	mmgrab(map->mm);
	mutex_lock(&pd->map_lock);
	list_add(&map->node, &pd->mappings);
	mutex_unlock(&pd->map_lock);
	vma->vm_private_data = map;
	vma->vm_ops = &pcidrv_vm_ops;
	pcidrv_leave(pd, idx);
	return 0;

out_unlock:
	pcidrv_leave(pd, idx);
	if (km)
		pcidrv_kmem_put(km);
	kfree(map);
	return ret;
}

/* Removes the pages of every VMA of pd in mm, with mm's mmap_lock held for writing. */
static void pcidrv_zap_mm(struct pcidrv_dev *pd, struct mm_struct *mm)
{
	struct vm_area_struct *vma;
	VMA_ITERATOR(vmi, mm, 0);

	if (!mmget_not_zero(mm))
		return;		/* exiting: exit_mmap() unmaps everything, nothing runs in it */
	mmap_write_lock(mm);
	for_each_vma(vmi, vma) {
		struct pcidrv_mapping *map = vma->vm_private_data;

		if (vma->vm_ops == &pcidrv_vm_ops && map->pd == pd)
			zap_vma_ptes(vma, vma->vm_start, vma->vm_end - vma->vm_start);
	}
	mmap_write_unlock(mm);
	mmput(mm);
}

/*
 * Called by remove() after the device was marked dead and synchronize_srcu(): no new
 * mapping can be created. Removes every page of every mapping of the device; later accesses
 * get SIGBUS (no ->fault handler). The VMAs themselves live on until munmap or exit.
 *
 * Each mm is handled under its mmap_lock held for writing, which also waits for mmap()
 * calls that already passed ->mmap to link their VMA. The lock matters for VM_PFNMAP VMAs:
 * their first unmap also ends their PAT tracking (x86), and one that races with the
 * process's own munmap() or exit WARNs in untrack_pfn(). Mappings are VM_DONTCOPY, so they
 * exist only in the mm that called mmap(). unmap_mapping_range() then catches what
 * zap_vma_ptes() leaves (kmem inserted as pages behind an IOMMU: VM_MIXEDMAP, no tracking).
 */
void pcidrv_zap_mappings(struct pcidrv_dev *pd)
{
	struct pcidrv_mapping *map;
	struct mm_struct *mm;

	for (;;) {
		mm = NULL;
		mutex_lock(&pd->map_lock);
		list_for_each_entry(map, &pd->mappings, node) {
			if (!map->fenced && !mm) {
				mm = map->mm;
				mmgrab(mm);
			}
			if (map->mm == mm)
				map->fenced = true;
		}
		mutex_unlock(&pd->map_lock);
		if (!mm)
			break;
		pcidrv_zap_mm(pd, mm);
		mmdrop(mm);
	}
	unmap_mapping_range(pd->inode->i_mapping, 0, 0, 1);
}

const struct file_operations pcidrv_fops = {
	.owner = THIS_MODULE,
	.open = pcidrv_open,
	.release = pcidrv_release,
	.unlocked_ioctl = pcidrv_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = pcidrv_mmap,
};
