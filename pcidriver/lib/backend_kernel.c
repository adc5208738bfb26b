// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libpcidriver backend for the kernel module's char device (/dev/fpgaN, pcidriver.ko): every
 * op is one or two ioctls on the open file (pcidriver_uapi.h), BARs and kmem are mmap'd.
 * Arguments were checked by the front end (pcidriver.c).
 */
#define _FILE_OFFSET_BITS 64 /* mmap offsets above 2 GiB also in 32-bit processes */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "frontend.h"
#include "pcidriver_uapi.h"

struct kernel_dev {
	int fd;
	struct pcidriver_device_info info; /* static for the device's lifetime */
	int api_version;
};

static struct kernel_dev *kdev(void *dev)
{
	return dev;
}

/* ioctl returning 0 or a negative errno */
static int kioctl(void *dev, unsigned long cmd, void *arg)
{
	return ioctl(kdev(dev)->fd, cmd, arg) < 0 ? -errno : 0;
}

static size_t page_round(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (size + page - 1) & ~(page - 1);
}

static int kernel_open(const char *name, void **dev)
{
	struct kernel_dev *k;
	int ret;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->fd = open(name, O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		ret = -errno;
		free(k);
		if (ret == -ENOENT)
			pd_backend_set_error("%s does not exist: is pcidriver.ko loaded and bound to "
					     "the board? (docs/pcidriver.md)", name);
		else if (ret == -EACCES || ret == -EPERM)
			pd_backend_set_error("%s: permission denied: install the udev rule or join "
					     "its group (docs/pcidriver.md)", name);
		else
			pd_backend_set_error("%s: %s", name, pd_strerror(ret));
		return ret == -ENOENT ? -ENODEV : ret;
	}

	k->api_version = ioctl(k->fd, PCIDRIVER_GET_API_VERSION);
	if (k->api_version < 0) {
		/* not our driver (ENOTTY), or the device is gone */
		ret = errno == ENOTTY ? -ENODEV : -errno;
		pd_backend_set_error("%s: %s", name, ret == -ENODEV && errno == ENOTTY ?
				     "not a pcidriver device" : pd_strerror(ret));
		goto err_close;
	}
	if (k->api_version != PCIDRIVER_API_VERSION) {
		ret = -EPROTO;
		pd_backend_set_error("%s: the module speaks API version %d, this library %d: "
				     "install matching versions", name, k->api_version,
				     PCIDRIVER_API_VERSION);
		goto err_close;
	}
	k->info.argsz = sizeof(k->info);
	ret = kioctl(k, PCIDRIVER_DEVICE_GET_INFO, &k->info);
	if (ret) {
		pd_backend_set_error("%s: device info: %s", name, pd_strerror(ret));
		goto err_close;
	}
	*dev = k;
	return 0;

err_close:
	close(k->fd);
	free(k);
	return ret;
}

static void kernel_close(void *dev)
{
	struct kernel_dev *k = kdev(dev);

	close(k->fd);
	free(k);
}

static int kernel_info(void *dev, struct pd_info *info)
{
	struct kernel_dev *k = kdev(dev);
	const struct pcidriver_device_info *ki = &k->info;
	unsigned int i;

	info->vendor = ki->vendor;
	info->device = ki->device;
	info->subsystem_vendor = ki->subsystem_vendor;
	info->subsystem_device = ki->subsystem_device;
	info->class_code = ki->class_code;
	info->revision = ki->revision;
	info->backend = PD_BACKEND_KERNEL;
	for (i = 0; i < PD_MAX_BARS && i < PCIDRIVER_NUM_BARS; i++) {
		const struct pcidriver_bar_info *kb = &ki->bar[i];
		struct pd_bar_info *b = &info->bar[i];

		b->bus_addr = kb->bus_addr;
		b->size = kb->size;
		b->flags = (kb->flags & PCIDRIVER_BAR_PRESENT ? PD_BAR_PRESENT : 0) |
			   (kb->flags & PCIDRIVER_BAR_IO ? PD_BAR_IO : 0) |
			   (kb->flags & PCIDRIVER_BAR_64BIT ? PD_BAR_64BIT : 0) |
			   (kb->flags & PCIDRIVER_BAR_PREFETCH ? PD_BAR_PREFETCH : 0);
	}
	info->irq_mode = ki->irq_mode;
	info->irq_count = ki->irq_count;
	info->dma_mask_bits = ki->dma_mask_bits;
	info->max_payload = ki->max_payload;
	info->max_read_request = ki->max_read_request;
	info->abi_version = (uint32_t)k->api_version;
	memcpy(info->name, ki->name, sizeof(ki->name));
	info->name[sizeof(info->name) - 1] = '\0';
	return 0;
}

/* ---- BARs ---- */

static int kernel_map_bar(void *dev, unsigned int bar, unsigned int flags, void **addr,
			  size_t *size)
{
	const struct pcidriver_bar_info *kb = &kdev(dev)->info.bar[bar];
	off_t offset = flags & PD_MAP_WC ? PCIDRIVER_MMAP_BAR_WC(bar) : PCIDRIVER_MMAP_BAR(bar);
	void *p;

	if (!(kb->flags & PCIDRIVER_BAR_PRESENT) || (kb->flags & PCIDRIVER_BAR_IO) ||
	    kb->size > SIZE_MAX)
		return -EINVAL;
	p = mmap(NULL, (size_t)kb->size, PROT_READ | PROT_WRITE, MAP_SHARED, kdev(dev)->fd,
		 offset);
	if (p == MAP_FAILED)
		return -errno;
	*addr = p;
	*size = (size_t)kb->size;
	return 0;
}

static int kernel_unmap_bar(void *dev, unsigned int bar, void *addr, size_t size)
{
	return munmap(addr, size) ? -errno : 0;
}

/* The mapped BAR itself: pd_reg_read32/write32 become volatile loads and stores. */
static int kernel_regs_get(void *dev, unsigned int bar, struct pd_regs *regs)
{
	return PD_BACKEND_REGS_MAPPED;
}

/* ---- config space ---- */

static int kernel_cfg_rw(void *dev, unsigned long cmd, uint32_t offset, const void *buf,
			 size_t len)
{
	struct pcidriver_config_rw req = {
		.argsz = sizeof(req),
		.offset = offset,
		.count = (uint32_t)len,
		.data = (uintptr_t)buf,
	};

	return kioctl(dev, cmd, &req);
}

static int kernel_cfg_read(void *dev, uint32_t offset, void *buf, size_t len)
{
	return kernel_cfg_rw(dev, PCIDRIVER_CONFIG_READ, offset, buf, len);
}

static int kernel_cfg_write(void *dev, uint32_t offset, const void *buf, size_t len)
{
	return kernel_cfg_rw(dev, PCIDRIVER_CONFIG_WRITE, offset, buf, len);
}

/* ---- kernel memory ---- */

static int kmem_free_id(void *dev, uint32_t id)
{
	struct pcidriver_mem_id req = { .argsz = sizeof(req), .id = id };

	return kioctl(dev, PCIDRIVER_KMEM_FREE, &req);
}

static int kernel_kmem_alloc(void *dev, struct pd_backend_kmem *km)
{
	struct pcidriver_kmem_alloc req = { .argsz = sizeof(req), .size = km->size };
	void *p;
	int ret;

	ret = kioctl(dev, PCIDRIVER_KMEM_ALLOC, &req);
	if (ret)
		return ret;
	p = mmap(NULL, page_round(km->size), PROT_READ | PROT_WRITE, MAP_SHARED, kdev(dev)->fd,
		 (off_t)req.mmap_offset);
	if (p == MAP_FAILED) {
		ret = -errno;
		kmem_free_id(dev, req.id);
		return ret;
	}
	km->id = req.id;
	km->ptr = p;
	km->bus_addr = req.bus_addr;
	return 0;
}

static int kernel_kmem_free(void *dev, struct pd_backend_kmem *km)
{
	int ret = munmap(km->ptr, page_round(km->size)) ? -errno : 0;
	int ret2 = kmem_free_id(dev, km->id);

	return ret ? ret : ret2;
}

/* ---- user memory ---- */

static int umem_unmap_id(void *dev, uint32_t id)
{
	struct pcidriver_mem_id req = { .argsz = sizeof(req), .id = id };

	return kioctl(dev, PCIDRIVER_UMEM_UNMAP, &req);
}

/* Fills um's SG list, id and count from the kernel's umem `id` of `count` entries; on
 * failure unmaps that umem. */
static int umem_fetch_sglist(void *dev, struct pd_backend_umem *um, uint32_t id, uint32_t count)
{
	struct pcidriver_umem_sglist sgl = { .argsz = sizeof(sgl) };
	struct pcidriver_sg_entry *entries;
	size_t i;
	int ret;

	entries = calloc(count ? count : 1, sizeof(*entries));
	um->sg = calloc(count ? count : 1, sizeof(*um->sg));
	if (!entries || !um->sg) {
		ret = -ENOMEM;
		goto err_unmap;
	}
	sgl.id = id;
	sgl.count = count;
	sgl.entries = (uintptr_t)entries;
	ret = kioctl(dev, PCIDRIVER_UMEM_GET_SGLIST, &sgl);
	if (ret)
		goto err_unmap;
	if (sgl.count != count) {
		ret = -EIO;
		goto err_unmap;
	}
	for (i = 0; i < sgl.count; i++) {
		um->sg[i].bus_addr = entries[i].bus_addr;
		um->sg[i].length = entries[i].length;
	}
	free(entries);
	um->sg_count = sgl.count;
	um->id = id;
	return 0;

err_unmap:
	free(entries);
	free(um->sg);
	um->sg = NULL;
	umem_unmap_id(dev, id);
	return ret;
}

static uint32_t umem_flags(enum pd_dma_dir dir)
{
	return ((dir & PD_DMA_TO_DEVICE) ? PCIDRIVER_UMEM_TO_DEVICE : 0) |
	       ((dir & PD_DMA_FROM_DEVICE) ? PCIDRIVER_UMEM_FROM_DEVICE : 0);
}

static int kernel_umem_map(void *dev, struct pd_backend_umem *um)
{
	struct pcidriver_umem_map req = {
		.argsz = sizeof(req),
		.flags = umem_flags(um->dir),
		.vaddr = (uintptr_t)um->addr,
		.size = um->size,
	};
	int ret = kioctl(dev, PCIDRIVER_UMEM_MAP, &req);

	return ret ? ret : umem_fetch_sglist(dev, um, req.id, req.sg_count);
}

static int kernel_dmabuf_import(void *dev, int fd, struct pd_backend_umem *um)
{
	struct pcidriver_dmabuf_import req = {
		.argsz = sizeof(req),
		.flags = umem_flags(um->dir),
		.fd = fd,
	};
	int ret = kioctl(dev, PCIDRIVER_DMABUF_IMPORT, &req);

	if (ret == -ENOTTY)
		return -EOPNOTSUPP;	/* a pcidriver.ko from before dma-buf import */
	if (ret)
		return ret;
	if (req.size > SIZE_MAX) {
		umem_unmap_id(dev, req.id);
		return -EOVERFLOW;
	}
	um->size = (size_t)req.size;
	return umem_fetch_sglist(dev, um, req.id, req.sg_count);
}

static int kernel_umem_unmap(void *dev, struct pd_backend_umem *um)
{
	return umem_unmap_id(dev, um->id);
}

static int kernel_umem_sync(void *dev, struct pd_backend_umem *um, enum pd_sync_dir dir)
{
	struct pcidriver_umem_sync req = {
		.argsz = sizeof(req),
		.flags = dir == PD_SYNC_FOR_CPU ? PCIDRIVER_SYNC_FOR_CPU :
						  PCIDRIVER_SYNC_FOR_DEVICE,
		.id = um->id,
	};

	return kioctl(dev, PCIDRIVER_UMEM_SYNC, &req);
}

/* ---- interrupts ---- */

static int kernel_irq_wait(void *dev, unsigned int source, uint32_t timeout_ms)
{
	struct pcidriver_irq_wait req = {
		.argsz = sizeof(req),
		.source = source,
		.timeout_ms = timeout_ms == PD_WAIT_FOREVER ? PCIDRIVER_WAIT_FOREVER : timeout_ms,
	};
	int ret = kioctl(dev, PCIDRIVER_IRQ_WAIT, &req);

	if (ret)
		return ret; /* -ETIMEDOUT, -EINTR, -EINVAL, -ENODEV */
	return req.count > INT32_MAX ? INT32_MAX : (int)req.count;
}

static int kernel_irq_clear(void *dev, unsigned int source)
{
	struct pcidriver_irq_clear req = { .argsz = sizeof(req), .source = source };

	return kioctl(dev, PCIDRIVER_IRQ_CLEAR, &req);
}

const struct pd_backend_ops pd_kernel_backend = {
	.abi = PD_BACKEND_ABI,
	.size = sizeof(struct pd_backend_ops),
	.prefix = "kernel",
	.open = kernel_open,
	.close = kernel_close,
	.info = kernel_info,
	.map_bar = kernel_map_bar,
	.unmap_bar = kernel_unmap_bar,
	.regs_get = kernel_regs_get,
	.cfg_read = kernel_cfg_read,
	.cfg_write = kernel_cfg_write,
	.kmem_alloc = kernel_kmem_alloc,
	.kmem_free = kernel_kmem_free,
	.umem_map = kernel_umem_map,
	.umem_unmap = kernel_umem_unmap,
	.umem_sync = kernel_umem_sync,
	.irq_wait = kernel_irq_wait,
	.irq_clear = kernel_irq_clear,
	.dmabuf_import = kernel_dmabuf_import,
};
