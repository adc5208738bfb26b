/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The backend seam of libpcidriver (internal, not installed). pd_open picks a backend by device
 * name; every public function checks its arguments and then calls the backend through these ops.
 * A backend keeps its own state behind `priv`.
 */
#ifndef PCIDRIVER_BACKEND_H
#define PCIDRIVER_BACKEND_H

#include <pthread.h>

#include "pcidriver/pcidriver.h"

struct pd_backend_ops {
	const char *name;
	int (*open)(pd_device *dev, const char *name);  /* sets dev->priv */
	void (*close)(pd_device *dev);                  /* after all kmem/umem were released */
	int (*info)(pd_device *dev, struct pd_info *info);
	int (*map_bar)(pd_device *dev, unsigned int bar, unsigned int flags, void **addr, size_t *size);
	int (*unmap_bar)(pd_device *dev, unsigned int bar, void *addr, size_t size);
	int (*regs_get)(pd_device *dev, unsigned int bar, struct pd_regs *regs);
	int (*cfg_read)(pd_device *dev, uint32_t offset, void *buf, size_t len);
	int (*cfg_write)(pd_device *dev, uint32_t offset, const void *buf, size_t len);
	/* fill km->id, km->ptr, km->bus_addr, km->priv (km->size is set by the caller) */
	int (*kmem_alloc)(pd_device *dev, pd_kmem *km);
	int (*kmem_free)(pd_device *dev, pd_kmem *km);
	/* fill um->id, um->sg, um->sg_count, um->priv (addr/size/dir set by the caller) */
	int (*umem_map)(pd_device *dev, pd_umem *um);
	int (*umem_unmap)(pd_device *dev, pd_umem *um);
	int (*umem_sync)(pd_device *dev, pd_umem *um, enum pd_sync_dir dir);
	int (*irq_wait)(pd_device *dev, unsigned int source, uint32_t timeout_ms);
	int (*irq_clear)(pd_device *dev, unsigned int source);
};

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
	void *priv;
	pthread_mutex_t lock; /* protects bars[], kmems and umems */
	struct pd_bar_map bars[PD_MAX_BARS];
	/* kmem/umem still owned by this handle (lock), released by pd_close */
	struct pd_link kmems;
	struct pd_link umems;
};

struct pd_kmem {
	struct pd_link link; /* first: the list code casts a link back to its object */
	pd_device *dev;
	uint32_t id;
	void *ptr;
	uint64_t bus_addr;
	size_t size;
	void *priv;
};

struct pd_umem {
	struct pd_link link; /* first, as in pd_kmem */
	pd_device *dev;
	uint32_t id;
	void *addr;
	size_t size;
	enum pd_dma_dir dir;
	struct pd_sg_entry *sg; /* malloc'd by the backend, freed by the caller after umem_unmap */
	size_t sg_count;
	void *priv;
};

extern const struct pd_backend_ops pd_kernel_backend; /* backend_kernel.c */
extern const struct pd_backend_ops pd_emu_backend;    /* emu/ */

#endif /* PCIDRIVER_BACKEND_H */
