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
#include <pthread.h>

#include "frontend.h"

#define PD_DEFAULT_KERNEL_DEVICE "/dev/fpga0"

/* A node of a circular doubly-linked list: O(1) unlink for thousands of pinned buffers. */
struct pd_link {
	struct pd_link *prev, *next;
};

struct pd_bar_map {
	void *addr;
	size_t size;
	unsigned int flags; /* PD_MAP_* the mapping was made with */
};

struct pd_device {
	const struct pd_backend_ops *ops;
	void *priv;           /* the backend's */
	pthread_mutex_t lock; /* protects bars[], kmems and umems */
	struct pd_bar_map bars[PD_MAX_BARS];
	/* kmem/umem still owned by this handle (lock), released by pd_close */
	struct pd_link kmems;
	struct pd_link umems;
};

struct pd_kmem {
	struct pd_link link; /* first: the list code casts a link back to its object */
	pd_device *dev;
	struct pd_backend_kmem b;
};

struct pd_umem {
	struct pd_link link; /* first, as in pd_kmem */
	pd_device *dev;
	struct pd_backend_umem b;
};

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

/* The default device: $PCIDRIVER_DEVICE, else /dev/fpga0. Never a simulator: an application
 * runs on the virtual board only when someone asked for it. */
static const char *default_device(void)
{
	const char *env = getenv("PCIDRIVER_DEVICE");

	if (env && *env)
		return env;
	if (access(PD_DEFAULT_KERNEL_DEVICE, F_OK) == 0)
		return PD_DEFAULT_KERNEL_DEVICE;
	pd_backend_set_error("no board: %s does not exist and PCIDRIVER_DEVICE is not set; "
			     "load pcidriver.ko for a board, or set PCIDRIVER_DEVICE=emu: (or open "
			     "\"emu:\") for the virtual board", PD_DEFAULT_KERNEL_DEVICE);
	return NULL;
}

int pd_open(const char *name, pd_device **out)
{
	const struct pd_backend_ops *ops;
	char path[PATH_MAX];
	pd_device *dev;
	size_t plen;
	int ret;

	pd_clear_open_error();
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!name || !*name) {
		name = default_device();
		if (!name)
			return -ENODEV;
	}

	if (kernel_device_path(name, path, sizeof(path)) == 0) {
		ops = &pd_kernel_backend;
		name = path;
	} else if ((plen = pd_backend_prefix_len(name)) != 0) {
		ops = pd_backend_find(name, plen);
		if (!ops)
			return -ENODEV;
	} else {
		pd_backend_set_error("'%s' is not a device name: use /dev/fpgaN, fpgaN, N or a "
				     "backend's PREFIX[:OPTIONS] such as emu:", name);
		return -ENODEV;
	}

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->ops = ops;
	pthread_mutex_init(&dev->lock, NULL);
	dev->kmems.next = dev->kmems.prev = &dev->kmems;
	dev->umems.next = dev->umems.prev = &dev->umems;
	ret = ops->open(name, &dev->priv);
	if (ret) {
		if (!pd_open_error()[0])
			pd_backend_set_error("%s: %s", name, pd_strerror(ret));
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
	dev->ops->close(dev->priv);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

int pd_info(pd_device *dev, struct pd_info *info)
{
	if (!dev || !info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	return dev->ops->info(dev->priv, info);
}

static int cmp_names(const void *a, const void *b)
{
	const char *x = a, *y = b;
	size_t lx = strlen(x), ly = strlen(y);

	/* /dev/fpga2 before /dev/fpga10 */
	return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x, y);
}

struct name_list {
	char (*names)[64];
	size_t max, n;
};

static void add_backend(const char *prefix, void *arg)
{
	struct name_list *l = arg;
	char name[64];
	size_t i;

	snprintf(name, sizeof(name), "%s:", prefix);
	for (i = 0; i < l->n && i < l->max; i++)
		if (strcmp(l->names[i], name) == 0)
			return;   /* a plugin found in two directories */
	if (l->n < l->max)
		memcpy(l->names[l->n], name, sizeof(name));
	l->n++;
}

int pd_list(char names[][64], size_t max, size_t *count)
{
	struct name_list l = { .names = names, .max = max };
	glob_t g;
	size_t i;

	if (!count || (max && !names))
		return -EINVAL;
	if (glob("/dev/fpga[0-9]*", 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc; i++, l.n++)
			if (l.n < max)
				snprintf(names[l.n], 64, "%s", g.gl_pathv[i]);
		globfree(&g);
	}
	if (l.n && names)
		qsort(names, l.n < max ? l.n : max, 64, cmp_names);
	pd_backend_each(add_backend, &l);
	*count = l.n;
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
		ret = dev->ops->map_bar(dev->priv, bar, flags, &dev->bars[bar].addr,
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
		ret = dev->ops->unmap_bar(dev->priv, bar, dev->bars[bar].addr, dev->bars[bar].size);
		dev->bars[bar].addr = NULL;
		dev->bars[bar].size = 0;
	}
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int pd_regs_get(pd_device *dev, unsigned int bar, struct pd_regs *regs)
{
	size_t size = 0;
	void *addr;
	int ret;

	if (!dev || bar >= PD_MAX_BARS || !regs)
		return -EINVAL;
	memset(regs, 0, sizeof(*regs));
	ret = dev->ops->regs_get(dev->priv, bar, regs);
	if (ret != PD_BACKEND_REGS_MAPPED)
		return ret;
	ret = pd_map_bar(dev, bar, 0, &addr, &size);
	if (ret)
		return ret;
	regs->mmio = addr;
	regs->size = size;
	return 0;
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

	return ret ? ret : dev->ops->cfg_read(dev->priv, offset, buf, len);
}

int pd_cfg_write(pd_device *dev, uint32_t offset, const void *buf, size_t len)
{
	int ret = cfg_range(dev, offset, buf, len);

	return ret ? ret : dev->ops->cfg_write(dev->priv, offset, buf, len);
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
	km->b.size = size;
	ret = dev->ops->kmem_alloc(dev->priv, &km->b);
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
	ret = dev->ops->kmem_free(dev->priv, &km->b);
	free(km);
	return ret;
}

void *pd_kmem_ptr(const pd_kmem *km) { return km ? km->b.ptr : NULL; }
uint64_t pd_kmem_bus_addr(const pd_kmem *km) { return km ? km->b.bus_addr : 0; }
size_t pd_kmem_size(const pd_kmem *km) { return km ? km->b.size : 0; }
uint32_t pd_kmem_id(const pd_kmem *km) { return km ? km->b.id : 0; }

/* ---- user memory ---- */

/* After the backend's umem_map or dmabuf_import returned ret: the handle owns um, or um is
 * freed. */
static int umem_finish(pd_umem *um, int ret, pd_umem **out)
{
	if (ret) {
		free(um->b.sg);
		free(um);
		return ret;
	}
	own(um->dev, &um->dev->umems, &um->link);
	*out = um;
	return 0;
}

int pd_umem_map(pd_device *dev, void *addr, size_t size, enum pd_dma_dir dir, pd_umem **out)
{
	pd_umem *um;

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
	um->b.addr = addr;
	um->b.size = size;
	um->b.dir = dir;
	return umem_finish(um, dev->ops->umem_map(dev->priv, &um->b), out);
}

int pd_umem_unmap(pd_umem *um)
{
	pd_device *dev;
	int ret;

	if (!um)
		return -EINVAL;
	dev = um->dev;
	disown(dev, &um->link);
	ret = dev->ops->umem_unmap(dev->priv, &um->b);
	free(um->b.sg);
	free(um);
	return ret;
}

int pd_dmabuf_import(pd_device *dev, int fd, enum pd_dma_dir dir, pd_umem **out)
{
	pd_umem *um;
	int ret;

	if (!dev || !out)
		return -EINVAL;
	*out = NULL;
	if (fd < 0)
		return -EBADF;
	if (dir != PD_DMA_TO_DEVICE && dir != PD_DMA_FROM_DEVICE && dir != PD_DMA_BIDIRECTIONAL)
		return -EINVAL;
	if (!dev->ops->dmabuf_import)
		return -EOPNOTSUPP;
	um = calloc(1, sizeof(*um));
	if (!um)
		return -ENOMEM;
	um->dev = dev;
	um->b.dir = dir;
	ret = dev->ops->dmabuf_import(dev->priv, fd, &um->b);
	um->b.addr = NULL;	/* the CPU's view is the exporter's business */
	return umem_finish(um, ret, out);
}

size_t pd_umem_sg_count(const pd_umem *um) { return um ? um->b.sg_count : 0; }

int pd_umem_sglist(pd_umem *um, struct pd_sg_entry *entries, size_t max)
{
	size_t n;

	if (!um || (max && !entries))
		return -EINVAL;
	n = um->b.sg_count < max ? um->b.sg_count : max;
	memcpy(entries, um->b.sg, n * sizeof(*entries));
	return (int)n;
}

int pd_umem_sync(pd_umem *um, enum pd_sync_dir dir)
{
	if (!um || (dir != PD_SYNC_FOR_CPU && dir != PD_SYNC_FOR_DEVICE))
		return -EINVAL;
	return um->dev->ops->umem_sync(um->dev->priv, &um->b, dir);
}

void *pd_umem_ptr(const pd_umem *um) { return um ? um->b.addr : NULL; }
size_t pd_umem_size(const pd_umem *um) { return um ? um->b.size : 0; }
uint32_t pd_umem_id(const pd_umem *um) { return um ? um->b.id : 0; }

/* ---- interrupts ---- */

int pd_irq_wait(pd_device *dev, unsigned int source, uint32_t timeout_ms)
{
	if (!dev)
		return -EINVAL;
	return dev->ops->irq_wait(dev->priv, source, timeout_ms);
}

int pd_irq_clear(pd_device *dev, unsigned int source)
{
	if (!dev)
		return -EINVAL;
	return dev->ops->irq_clear(dev->priv, source);
}

/* Constant strings only: safe from any thread, never invalidated by a later call. */
const char *pd_strerror(int err)
{
	const char *s;

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
		s = err < 0 ? strerrordesc_np(-err) : NULL;
		return s ? s : "unknown error (not a negative errno)";
	}
}

/* ---- sizes ---- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The power of two of a unit suffix (see pd_parse_size): 0, 10, 20, 30 or 40; -1 if the text
 * is not one. */
static int unit_shift(const char *u)
{
	static const char units[] = "kmgt";
	char lower[4] = "";
	const char *k;
	size_t n = strlen(u), i;

	if (n > 3)
		return -1;
	for (i = 0; i < n; i++)
		lower[i] = (char)(u[i] >= 'A' && u[i] <= 'Z' ? u[i] - 'A' + 'a' : u[i]);
	lower[n] = '\0';
	if (!strcmp(lower, "") || !strcmp(lower, "b"))
		return 0;
	k = strchr(units, lower[0]);
	if (!k || !*k || (n == 2 && lower[1] != 'b') || (n == 3 && strcmp(lower + 1, "ib")))
		return -1;
	return 10 * (int)(k - units + 1);
}

/*
 * Plain 64-bit arithmetic (the library is built for 32-bit processes too). A fraction of n
 * digits f / 10^n scaled by 2^e is whole exactly when f is a multiple of 5^n and the quotient
 * q (< 2^n) a multiple of 2^(n - e); its value is then q * 2^(e - n) < 2^e.
 */
int pd_parse_size(const char *text, uint64_t *out)
{
	uint64_t whole = 0, frac = 0, pow5 = 1, q, part;
	const char *p = text;
	int d, e, n = 0, digits = 0;

	if (!text || !out)
		return -EINVAL;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && hexval(p[2]) >= 0) {
		for (p += 2; (d = hexval(*p)) >= 0; p++) {
			if (whole > (UINT64_MAX - (uint64_t)d) / 16)
				return -EINVAL;
			whole = whole * 16 + (uint64_t)d;
		}
	} else {
		for (; *p >= '0' && *p <= '9'; p++, digits++) {
			d = *p - '0';
			if (whole > (UINT64_MAX - (uint64_t)d) / 10)
				return -EINVAL;
			whole = whole * 10 + (uint64_t)d;
		}
		if (*p == '.') {
			for (p++; *p >= '0' && *p <= '9'; p++, digits++, n++) {
				if (n == 19)
					return -EINVAL;	/* more fraction digits than bytes can need */
				frac = frac * 10 + (uint64_t)(*p - '0');
				pow5 *= 5;
			}
		}
		if (!digits)
			return -EINVAL;
	}
	e = unit_shift(p);
	if (e < 0 || frac % pow5)
		return -EINVAL;
	q = frac / pow5;
	if (e >= n) {
		part = q << (e - n);
	} else {
		if (q & ((1ULL << (n - e)) - 1))
			return -EINVAL;		/* not a whole number of bytes */
		part = q >> (n - e);
	}
	if (whole > (UINT64_MAX >> e) || (whole << e) > UINT64_MAX - part)
		return -EINVAL;
	*out = (whole << e) + part;
	return 0;
}
