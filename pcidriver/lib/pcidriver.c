// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libpcidriver front end: argument checks, ownership lists and the choice of backend.
 * Everything device-specific happens behind struct pd_backend_ops (backend.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <glob.h>

#include "backend.h"

#define PD_DEFAULT_KERNEL_DEVICE "/dev/fpga0"

/* The ownership lists of a handle: every kmem/umem it still holds, for pd_close. */
static void own(pd_device *dev, struct pd_link *head, struct pd_link *l)
{
	pthread_mutex_lock(&dev->lock);
	l->next = head->next;
	l->prev = head;
	head->next->prev = l;
	head->next = l;
	pthread_mutex_unlock(&dev->lock);
}

static void disown(pd_device *dev, struct pd_link *l)
{
	pthread_mutex_lock(&dev->lock);
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->next = l->prev = l;
	pthread_mutex_unlock(&dev->lock);
}

/* Is `name` one of "emu", "emu:..."? */
static int is_emu_name(const char *name)
{
	return strncmp(name, "emu", 3) == 0 && (name[3] == '\0' || name[3] == ':');
}

/* Map "/dev/fpgaN", "fpgaN" and "N" to a char device path; -EINVAL for anything else. */
static int kernel_device_path(const char *name, char *path, size_t len)
{
	const char *digits = NULL;

	if (strncmp(name, "/dev/", 5) == 0) {
		if (snprintf(path, len, "%s", name) >= (int)len)
			return -EINVAL;
		return 0;
	}
	if (strncmp(name, "fpga", 4) == 0)
		digits = name + 4;
	else
		digits = name;
	if (*digits == '\0' || strspn(digits, "0123456789") != strlen(digits) || strlen(digits) > 6)
		return -EINVAL;
	snprintf(path, len, "/dev/fpga%s", digits);
	return 0;
}

/*
 * Resolve the default device: $PCIDRIVER_DEVICE, else /dev/fpga0 when present, else the
 * virtual board. The fallback is announced on stderr once per process so that nobody
 * mistakes emulated figures for hardware ones.
 */
static const char *default_device(void)
{
	static int announced;
	const char *env = getenv("PCIDRIVER_DEVICE");

	if (env && *env)
		return env;
	if (access(PD_DEFAULT_KERNEL_DEVICE, F_OK) == 0)
		return PD_DEFAULT_KERNEL_DEVICE;
	if (!__atomic_exchange_n(&announced, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "libpcidriver: no %s found, using the virtual board (emu:); "
			"set PCIDRIVER_DEVICE to choose a device\n", PD_DEFAULT_KERNEL_DEVICE);
	return "emu:";
}

int pd_open(const char *name, pd_device **out)
{
	const struct pd_backend_ops *ops;
	char path[PATH_MAX];
	pd_device *dev;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!name || !*name)
		name = default_device();

	if (is_emu_name(name)) {
		ops = &pd_emu_backend;
		snprintf(path, sizeof(path), "%s", name);
	} else {
		ops = &pd_kernel_backend;
		ret = kernel_device_path(name, path, sizeof(path));
		if (ret)
			return -ENODEV;
	}

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->ops = ops;
	pthread_mutex_init(&dev->lock, NULL);
	dev->kmems.next = dev->kmems.prev = &dev->kmems;
	dev->umems.next = dev->umems.prev = &dev->umems;
	ret = ops->open(dev, path);
	if (ret) {
		pthread_mutex_destroy(&dev->lock);
		free(dev);
		return ret;
	}
	*out = dev;
	return 0;
}

void pd_close(pd_device *dev)
{
	unsigned int bar;

	if (!dev)
		return;
	while (dev->umems.next != &dev->umems)
		pd_umem_unmap((pd_umem *)dev->umems.next);
	while (dev->kmems.next != &dev->kmems)
		pd_kmem_free((pd_kmem *)dev->kmems.next);
	for (bar = 0; bar < PD_MAX_BARS; bar++)
		pd_unmap_bar(dev, bar);
	dev->ops->close(dev);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

int pd_info(pd_device *dev, struct pd_info *info)
{
	if (!dev || !info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	return dev->ops->info(dev, info);
}

static int cmp_names(const void *a, const void *b)
{
	const char *x = a, *y = b;
	size_t lx = strlen(x), ly = strlen(y);

	/* /dev/fpga2 before /dev/fpga10 */
	return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x, y);
}

int pd_list(char names[][64], size_t max, size_t *count)
{
	glob_t g;
	size_t n = 0, i;

	if (!count || (max && !names))
		return -EINVAL;
	if (glob("/dev/fpga[0-9]*", 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc; i++, n++)
			if (n < max)
				snprintf(names[n], 64, "%s", g.gl_pathv[i]);
		globfree(&g);
	}
	if (n && names)
		qsort(names, n < max ? n : max, 64, cmp_names);
	if (n < max)
		snprintf(names[n], 64, "emu:");
	n++;
	*count = n;
	return 0;
}

/* ---- BARs ---- */

int pd_map_bar(pd_device *dev, unsigned int bar, unsigned int flags, void **addr, size_t *size)
{
	int ret = 0;

	if (!dev || bar >= PD_MAX_BARS || !addr || (flags & ~PD_MAP_WC))
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	if (!dev->bars[bar].addr) {
		ret = dev->ops->map_bar(dev, bar, flags, &dev->bars[bar].addr,
					&dev->bars[bar].size);
		if (ret)
			dev->bars[bar].addr = NULL;
		else
			dev->bars[bar].flags = flags;
	} else if (dev->bars[bar].flags != flags) {
		/* one mapping per BAR and handle: never hand out other caching than asked for */
		ret = -EBUSY;
	}
	if (!ret) {
		*addr = dev->bars[bar].addr;
		if (size)
			*size = dev->bars[bar].size;
	}
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int pd_unmap_bar(pd_device *dev, unsigned int bar)
{
	int ret = 0;

	if (!dev || bar >= PD_MAX_BARS)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	if (dev->bars[bar].addr) {
		ret = dev->ops->unmap_bar(dev, bar, dev->bars[bar].addr, dev->bars[bar].size);
		dev->bars[bar].addr = NULL;
		dev->bars[bar].size = 0;
	}
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int pd_regs_get(pd_device *dev, unsigned int bar, struct pd_regs *regs)
{
	if (!dev || bar >= PD_MAX_BARS || !regs)
		return -EINVAL;
	memset(regs, 0, sizeof(*regs));
	return dev->ops->regs_get(dev, bar, regs);
}

static int bar_range(pd_device *dev, unsigned int bar, uint64_t offset, size_t len,
		     struct pd_regs *regs)
{
	int ret;

	if (!dev || bar >= PD_MAX_BARS || (offset | len) & 3)
		return -EINVAL;
	ret = pd_regs_get(dev, bar, regs);
	if (ret)
		return ret;
	if (offset > regs->size || len > regs->size - offset)
		return -EINVAL;
	return 0;
}

int pd_bar_read(pd_device *dev, unsigned int bar, uint64_t offset, void *buf, size_t len)
{
	struct pd_regs regs;
	uint32_t v;
	size_t i;
	int ret = bar_range(dev, bar, offset, len, &regs);

	if (ret)
		return ret;
	if (len && !buf)
		return -EINVAL;
	for (i = 0; i < len; i += 4) {
		v = pd_reg_read32(&regs, offset + i);
		memcpy((char *)buf + i, &v, 4);
	}
	return 0;
}

int pd_bar_write(pd_device *dev, unsigned int bar, uint64_t offset, const void *buf, size_t len)
{
	struct pd_regs regs;
	uint32_t v;
	size_t i;
	int ret = bar_range(dev, bar, offset, len, &regs);

	if (ret)
		return ret;
	if (len && !buf)
		return -EINVAL;
	for (i = 0; i < len; i += 4) {
		memcpy(&v, (const char *)buf + i, 4);
		pd_reg_write32(&regs, offset + i, v);
	}
	return 0;
}

/* ---- config space ---- */

#define PD_CFG_SPACE_SIZE 4096u

static int cfg_range(pd_device *dev, uint32_t offset, const void *buf, size_t len)
{
	if (!dev || !buf || !len || offset >= PD_CFG_SPACE_SIZE || len > PD_CFG_SPACE_SIZE - offset)
		return -EINVAL;
	return 0;
}

int pd_cfg_read(pd_device *dev, uint32_t offset, void *buf, size_t len)
{
	int ret = cfg_range(dev, offset, buf, len);

	return ret ? ret : dev->ops->cfg_read(dev, offset, buf, len);
}

int pd_cfg_write(pd_device *dev, uint32_t offset, const void *buf, size_t len)
{
	int ret = cfg_range(dev, offset, buf, len);

	return ret ? ret : dev->ops->cfg_write(dev, offset, buf, len);
}

/* ---- kernel memory ---- */

int pd_kmem_alloc(pd_device *dev, size_t size, pd_kmem **out)
{
	pd_kmem *km;
	int ret;

	if (!dev || !out)
		return -EINVAL;
	*out = NULL;
	if (size == 0 || size > PD_KMEM_MAX_SIZE)
		return -EINVAL;
	km = calloc(1, sizeof(*km));
	if (!km)
		return -ENOMEM;
	km->dev = dev;
	km->size = size;
	ret = dev->ops->kmem_alloc(dev, km);
	if (ret) {
		free(km);
		return ret;
	}
	own(dev, &dev->kmems, &km->link);
	*out = km;
	return 0;
}

int pd_kmem_free(pd_kmem *km)
{
	pd_device *dev;
	int ret;

	if (!km)
		return -EINVAL;
	dev = km->dev;
	disown(dev, &km->link);
	ret = dev->ops->kmem_free(dev, km);
	free(km);
	return ret;
}

void *pd_kmem_ptr(const pd_kmem *km) { return km ? km->ptr : NULL; }
uint64_t pd_kmem_bus_addr(const pd_kmem *km) { return km ? km->bus_addr : 0; }
size_t pd_kmem_size(const pd_kmem *km) { return km ? km->size : 0; }
uint32_t pd_kmem_id(const pd_kmem *km) { return km ? km->id : 0; }

/* ---- user memory ---- */

int pd_umem_map(pd_device *dev, void *addr, size_t size, enum pd_dma_dir dir, pd_umem **out)
{
	pd_umem *um;
	int ret;

	if (!dev || !out)
		return -EINVAL;
	*out = NULL;
	if (!addr || size == 0 || size > PD_UMEM_MAX_SIZE ||
	    (uintptr_t)addr + size < (uintptr_t)addr)
		return -EINVAL;
	if (dir != PD_DMA_TO_DEVICE && dir != PD_DMA_FROM_DEVICE && dir != PD_DMA_BIDIRECTIONAL)
		return -EINVAL;
	um = calloc(1, sizeof(*um));
	if (!um)
		return -ENOMEM;
	um->dev = dev;
	um->addr = addr;
	um->size = size;
	um->dir = dir;
	ret = dev->ops->umem_map(dev, um);
	if (ret) {
		free(um->sg);
		free(um);
		return ret;
	}
	own(dev, &dev->umems, &um->link);
	*out = um;
	return 0;
}

int pd_umem_unmap(pd_umem *um)
{
	pd_device *dev;
	int ret;

	if (!um)
		return -EINVAL;
	dev = um->dev;
	disown(dev, &um->link);
	ret = dev->ops->umem_unmap(dev, um);
	free(um->sg);
	free(um);
	return ret;
}

size_t pd_umem_sg_count(const pd_umem *um) { return um ? um->sg_count : 0; }

int pd_umem_sglist(pd_umem *um, struct pd_sg_entry *entries, size_t max)
{
	size_t n;

	if (!um || (max && !entries))
		return -EINVAL;
	n = um->sg_count < max ? um->sg_count : max;
	memcpy(entries, um->sg, n * sizeof(*entries));
	return (int)n;
}

int pd_umem_sync(pd_umem *um, enum pd_sync_dir dir)
{
	if (!um || (dir != PD_SYNC_FOR_CPU && dir != PD_SYNC_FOR_DEVICE))
		return -EINVAL;
	return um->dev->ops->umem_sync(um->dev, um, dir);
}

void *pd_umem_ptr(const pd_umem *um) { return um ? um->addr : NULL; }
size_t pd_umem_size(const pd_umem *um) { return um ? um->size : 0; }
uint32_t pd_umem_id(const pd_umem *um) { return um ? um->id : 0; }

/* ---- interrupts ---- */

int pd_irq_wait(pd_device *dev, unsigned int source, uint32_t timeout_ms)
{
	if (!dev)
		return -EINVAL;
	return dev->ops->irq_wait(dev, source, timeout_ms);
}

int pd_irq_clear(pd_device *dev, unsigned int source)
{
	if (!dev)
		return -EINVAL;
	return dev->ops->irq_clear(dev, source);
}

const char *pd_strerror(int err)
{
	switch (-err) {
	case 0:
		return "success";
	case ENODEV:
		return "no such device (or it was removed)";
	case ENOENT:
		return "no such memory ID owned by this handle";
	case EOPNOTSUPP:
		return "operation not supported by this backend or BAR";
	case ETIMEDOUT:
		return "timed out waiting for the interrupt";
	default:
		return strerror(-err);
	}
}
