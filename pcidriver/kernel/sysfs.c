// SPDX-License-Identifier: GPL-2.0
/*
 * pcidriver.ko: read-only statistics in /sys/class/pcidriver/fpgaN/. The attributes belong
 * to the fpgaN device, which remove() unregisters before it tears anything down, so a show()
 * in progress always sees a live struct pcidrv_dev.
 */
#include <linux/device.h>
#include <linux/sysfs.h>

#include "pcidrv.h"

static ssize_t kmem_count_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct pcidrv_dev *pd = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", atomic_read(&pd->kmem_count));
}
static DEVICE_ATTR_RO(kmem_count);

static ssize_t kmem_bytes_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct pcidrv_dev *pd = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%lld\n", (long long)atomic64_read(&pd->kmem_bytes));
}
static DEVICE_ATTR_RO(kmem_bytes);

static ssize_t umem_count_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct pcidrv_dev *pd = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", atomic_read(&pd->umem_count));
}
static DEVICE_ATTR_RO(umem_count);

static ssize_t umem_pinned_bytes_show(struct device *dev, struct device_attribute *attr,
				      char *buf)
{
	struct pcidrv_dev *pd = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%lld\n", (long long)atomic64_read(&pd->umem_pinned_bytes));
}
static DEVICE_ATTR_RO(umem_pinned_bytes);

static ssize_t dmabuf_count_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct pcidrv_dev *pd = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", atomic_read(&pd->dmabuf_count));
}
static DEVICE_ATTR_RO(dmabuf_count);

static ssize_t dmabuf_bytes_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct pcidrv_dev *pd = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%lld\n", (long long)atomic64_read(&pd->dmabuf_bytes));
}
static DEVICE_ATTR_RO(dmabuf_bytes);

static ssize_t irq_mode_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	static const char * const names[] = {
		[PCIDRIVER_IRQ_NONE] = "none",
		[PCIDRIVER_IRQ_INTX] = "intx",
		[PCIDRIVER_IRQ_MSI] = "msi",
		[PCIDRIVER_IRQ_MSIX] = "msix",
	};
	struct pcidrv_dev *pd = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%s\n", names[pd->irq_mode]);
}
static DEVICE_ATTR_RO(irq_mode);

/* One count per source, space separated. */
static ssize_t irq_counts_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct pcidrv_dev *pd = dev_get_drvdata(dev);
	unsigned int i;
	int len = 0;

	for (i = 0; i < pd->nr_irqs; i++)
		len += sysfs_emit_at(buf, len, "%s%lld", i ? " " : "",
				     (long long)atomic64_read(&pd->irqs[i].count));
	len += sysfs_emit_at(buf, len, "\n");
	return len;
}
static DEVICE_ATTR_RO(irq_counts);

static ssize_t dma_mask_bits_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct pcidrv_dev *pd = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", pd->dma_mask_bits);
}
static DEVICE_ATTR_RO(dma_mask_bits);

static struct attribute *pcidrv_attrs[] = {
	&dev_attr_kmem_count.attr,
	&dev_attr_kmem_bytes.attr,
	&dev_attr_umem_count.attr,
	&dev_attr_umem_pinned_bytes.attr,
	&dev_attr_dmabuf_count.attr,
	&dev_attr_dmabuf_bytes.attr,
	&dev_attr_irq_mode.attr,
	&dev_attr_irq_counts.attr,
	&dev_attr_dma_mask_bits.attr,
	NULL
};

static const struct attribute_group pcidrv_group = {
	.attrs = pcidrv_attrs,
};

const struct attribute_group *pcidrv_groups[] = {
	&pcidrv_group,
	NULL
};
