// SPDX-License-Identifier: GPL-2.0
/*
 * pcidriver.ko: a generic PCI driver in the manner of MPRACE. The kernel does only what user
 * space cannot (map BARs, allocate and pin DMA memory, hand out bus addresses, deliver
 * interrupts); all device logic lives in user space (libpcidriver, libmprace).
 *
 * This file: module setup, probe/remove and the lifetime of struct pcidrv_dev.
 * See pcidrv.h for lifetime and locking rules, docs/pcidriver.md for the user's view.
 */
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/slab.h>

#include "pcidrv.h"
#include "pcidrv_version.h"

unsigned int pcidrv_dma_bits = 64;
module_param_named(dma_bits, pcidrv_dma_bits, uint, 0644);
MODULE_PARM_DESC(dma_bits,
		 "DMA addressing limit in bits (12..64) of devices bound from now on (default 64)");

static bool pcidrv_disable_msi;
module_param_named(disable_msi, pcidrv_disable_msi, bool, 0644);
MODULE_PARM_DESC(disable_msi, "use INTx even where MSI/MSI-X is available (for testing)");

static dev_t pcidrv_devt;

static struct class pcidrv_class = {
	.name = PCIDRV_NAME,
};

/* minor -> struct pcidrv_dev, NULL while a minor is reserved but not (or no more) openable */
static DEFINE_XARRAY_ALLOC(pcidrv_minors);

/*
 * Every open file of a device uses the i_mapping of one anonymous inode of this pseudo
 * filesystem (as DRM does), so that remove() can zap all user mappings of the device with one
 * unmap_mapping_range(), whatever device node they were opened through. The filesystem is
 * mounted from module init to exit; it has no .owner, else the mount would pin the module.
 */
#define PCIDRV_FS_MAGIC 0x70636964 /* "pcid" */
static struct vfsmount *pcidrv_mnt;
static int pcidrv_mnt_count;

static int pcidrv_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, PCIDRV_FS_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type pcidrv_fs_type = {
	.name = "pcidriver_inodes",
	.init_fs_context = pcidrv_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

/* Our boards, from spec/dma-engine.toml [ids]. Any other device binds through
 * driver_override or new_id. */
#define PCIDRV_BOARD_ID(vendor, device, subvendor, subdevice) \
	{ PCI_DEVICE_SUB(vendor, device, subvendor, subdevice) },
static const struct pci_device_id pcidrv_ids[] = {
#include "pcidriver_ids.h"
	{ }
};
#undef PCIDRV_BOARD_ID
MODULE_DEVICE_TABLE(pci, pcidrv_ids);

struct pcidrv_dev *pcidrv_dev_get_by_minor(unsigned int minor)
{
	struct pcidrv_dev *pd;

	xa_lock(&pcidrv_minors);
	pd = xa_load(&pcidrv_minors, minor);
	if (pd)
		kref_get(&pd->kref);
	xa_unlock(&pcidrv_minors);
	return pd;
}

static void pcidrv_dev_release(struct kref *kref)
{
	struct pcidrv_dev *pd = container_of(kref, struct pcidrv_dev, kref);

	WARN_ON(!list_empty(&pd->kmem_list) || !list_empty(&pd->mappings));
	if (pd->inode)
		iput(pd->inode);
	xa_destroy(&pd->kmem_xa);
	xa_destroy(&pd->umem_xa);
	cleanup_srcu_struct(&pd->srcu);
	kfree(pd->irqs);
	pci_dev_put(pd->pdev);
	kfree(pd);
}

void pcidrv_dev_put(struct pcidrv_dev *pd)
{
	kref_put(&pd->kref, pcidrv_dev_release);
}

static struct pcidrv_dev *pcidrv_dev_alloc(struct pci_dev *pdev)
{
	struct pcidrv_dev *pd;

	pd = kzalloc(sizeof(*pd), GFP_KERNEL);
	if (!pd)
		return NULL;
	if (init_srcu_struct(&pd->srcu)) {
		kfree(pd);
		return NULL;
	}
	kref_init(&pd->kref);
	pd->pdev = pci_dev_get(pdev);
	spin_lock_init(&pd->intx_lock);
	mutex_init(&pd->map_lock);
	INIT_LIST_HEAD(&pd->mappings);
	xa_init_flags(&pd->kmem_xa, XA_FLAGS_ALLOC1);
	xa_init_flags(&pd->umem_xa, XA_FLAGS_ALLOC1);
	mutex_init(&pd->kmem_lock);
	INIT_LIST_HEAD(&pd->kmem_list);
	return pd;
}

/*
 * The DMA mask from the dma_bits parameter, and page-offset preservation where the kernel
 * allows it (compat.h): bounce buffers (swiotlb) keep the offset of each byte within its
 * page, so that a bus address list built page by page (NVMe PRP lists, engines with
 * page-sized descriptors) stays valid.
 */
static int pcidrv_set_dma_mask(struct pcidrv_dev *pd)
{
	unsigned int bits = clamp(READ_ONCE(pcidrv_dma_bits), 12U, 64U);
	struct device *dev = &pd->pdev->dev;

	pcidrv_keep_page_offset(dev);

	if (!dma_set_mask_and_coherent(dev, DMA_BIT_MASK(bits))) {
		pd->dma_mask_bits = bits;
		return 0;
	}
	if (bits > 32 && !dma_set_mask_and_coherent(dev, DMA_BIT_MASK(32))) {
		dev_info(dev, "%u-bit DMA not supported, using 32 bits\n", bits);
		pd->dma_mask_bits = 32;
		return 0;
	}
	dev_err(dev, "no usable DMA mask\n");
	return -EIO;
}

static struct inode *pcidrv_inode_new(void)
{
	return alloc_anon_inode(pcidrv_mnt->mnt_sb);
}

static int pcidrv_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct pcidrv_dev *pd;
	u32 minor;
	int ret;

	pd = pcidrv_dev_alloc(pdev);
	if (!pd)
		return -ENOMEM;

	/* reserve a minor; the entry stays NULL (not openable) until the device is ready */
	ret = xa_alloc(&pcidrv_minors, &minor, NULL, XA_LIMIT(0, PCIDRV_MAX_DEVICES - 1),
		       GFP_KERNEL);
	if (ret)
		goto err_put;
	pd->minor = minor;

	ret = pci_enable_device(pdev);
	if (ret)
		goto err_free_minor;

	ret = pci_request_regions(pdev, PCIDRV_NAME);
	if (ret)
		goto err_disable;

	ret = pcidrv_set_dma_mask(pd);
	if (ret)
		goto err_release_regions;

	pci_set_master(pdev);

	ret = pcidrv_irq_setup(pd, !READ_ONCE(pcidrv_disable_msi));
	if (ret)
		goto err_clear_master;

	pd->inode = pcidrv_inode_new();
	if (IS_ERR(pd->inode)) {
		ret = PTR_ERR(pd->inode);
		pd->inode = NULL;
		goto err_irq_teardown;
	}

	/* a separately allocated cdev: open files keep it alive after cdev_del() */
	pd->cdev = cdev_alloc();
	if (!pd->cdev) {
		ret = -ENOMEM;
		goto err_iput;
	}
	pd->cdev->owner = THIS_MODULE;
	pd->cdev->ops = &pcidrv_fops;
	ret = cdev_add(pd->cdev, MKDEV(MAJOR(pcidrv_devt), minor), 1);
	if (ret) {
		kobject_put(&pd->cdev->kobj);
		goto err_iput;
	}

	pd->dev = device_create_with_groups(&pcidrv_class, &pdev->dev,
					    MKDEV(MAJOR(pcidrv_devt), minor), pd,
					    pcidrv_groups, "fpga%u", minor);
	if (IS_ERR(pd->dev)) {
		ret = PTR_ERR(pd->dev);
		goto err_cdev_del;
	}

	pci_set_drvdata(pdev, pd);
	xa_store(&pcidrv_minors, minor, pd, GFP_KERNEL);	/* open() finds it from now on */

	dev_info(&pdev->dev, "fpga%u: irq mode %u (%u vectors), %u-bit DMA\n", minor,
		 pd->irq_mode, pd->nr_irqs, pd->dma_mask_bits);
	return 0;

err_cdev_del:
	cdev_del(pd->cdev);
err_iput:
	iput(pd->inode);
	pd->inode = NULL;
err_irq_teardown:
	pcidrv_irq_teardown(pd);
err_clear_master:
	pci_clear_master(pdev);
err_release_regions:
	pci_release_regions(pdev);
err_disable:
	pci_disable_device(pdev);
err_free_minor:
	xa_erase(&pcidrv_minors, minor);
err_put:
	pcidrv_dev_put(pd);
	return ret;
}

/*
 * Called on unbind, hot unplug and module unload, possibly while files are open, mapped,
 * waiting for interrupts or in the middle of an ioctl. Undoes probe in reverse; the state
 * user space created (mappings, DMA memory) is torn down in between, while the device is
 * still bound but can no longer master the bus.
 */
static void pcidrv_remove(struct pci_dev *pdev)
{
	struct pcidrv_dev *pd = pci_get_drvdata(pdev);

	xa_store(&pcidrv_minors, pd->minor, NULL, GFP_KERNEL);	/* no new opens */
	device_unregister(pd->dev);
	cdev_del(pd->cdev);

	/* Every file sees the device dead from here on; wait for those that did not. */
	WRITE_ONCE(pd->dead, true);
	synchronize_srcu(&pd->srcu);
	pcidrv_irq_wake_all(pd);
	pcidrv_zap_mappings(pd);

	pcidrv_irq_teardown(pd);
	pci_clear_master(pdev);
	/* the device can no longer DMA: release what open files still own */
	pcidrv_umem_release_all(pd);
	pcidrv_kmem_release_all(pd);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
	xa_erase(&pcidrv_minors, pd->minor);
	pcidrv_dev_put(pd);
}

static struct pci_driver pcidrv_driver = {
	.name = PCIDRV_NAME,
	.id_table = pcidrv_ids,
	.probe = pcidrv_probe,
	.remove = pcidrv_remove,
};

static int __init pcidrv_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&pcidrv_devt, 0, PCIDRV_MAX_DEVICES, PCIDRV_NAME);
	if (ret)
		return ret;

	ret = class_register(&pcidrv_class);
	if (ret)
		goto err_unregister_chrdev;

	ret = simple_pin_fs(&pcidrv_fs_type, &pcidrv_mnt, &pcidrv_mnt_count);
	if (ret)
		goto err_unregister_class;

	ret = pci_register_driver(&pcidrv_driver);
	if (ret)
		goto err_release_fs;
	return 0;

err_release_fs:
	simple_release_fs(&pcidrv_mnt, &pcidrv_mnt_count);
err_unregister_class:
	class_unregister(&pcidrv_class);
err_unregister_chrdev:
	unregister_chrdev_region(pcidrv_devt, PCIDRV_MAX_DEVICES);
	return ret;
}

static void __exit pcidrv_exit(void)
{
	/* open files hold a module reference, so every device is gone after this */
	pci_unregister_driver(&pcidrv_driver);
	simple_release_fs(&pcidrv_mnt, &pcidrv_mnt_count);
	class_unregister(&pcidrv_class);
	unregister_chrdev_region(pcidrv_devt, PCIDRV_MAX_DEVICES);
	xa_destroy(&pcidrv_minors);
}

module_init(pcidrv_init);
module_exit(pcidrv_exit);

MODULE_DESCRIPTION("Generic PCI driver: BAR mapping, DMA memory, interrupts for user space");
MODULE_LICENSE("GPL");
/* The release, from pcidrv_version.h (written next to the sources by the build, installed into
 * DKMS trees): `mprace doctor` compares /sys/module/pcidriver/version with the tools'. */
MODULE_VERSION(PCIDRV_VERSION);
