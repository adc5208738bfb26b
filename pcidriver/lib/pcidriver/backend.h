/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The backend seam of libpcidriver: where an implementation of a device plugs in under the
 * pd_* API. The kernel char device (pcidriver.ko) is built in; every other implementation
 * (the virtual board "emu:", the simulated RTL "sim:") is a backend that serves the device
 * names starting with its prefix:
 *
 *   "emu" or "emu:OPTIONS"  ->  the backend whose prefix is "emu", open("emu:OPTIONS")
 *
 * pd_open finds a backend in this order:
 *   1. one registered in this process with pd_backend_register() (link-time: the application
 *      links the backend's library and calls its register function; works in static builds);
 *   2. shared builds only: a plugin PREFIX.so in the directories of $PCIDRIVER_BACKEND_PATH
 *      (colon-separated; ignored in set-user-ID programs), then in LIBDIR/pcidriver/backends.
 *      A plugin exports `const struct pd_backend_ops *pd_backend_plugin(void)`; it is loaded
 *      on the first pd_open of its prefix and stays loaded.
 * An application that never names a backend's prefix loads none of its code, and a static
 * one links none of it (docs/architecture.md, "The backend seam").
 *
 * The front end (pcidriver.c) checks every argument before a backend sees it: sizes,
 * alignment, directions, BAR and offset ranges are valid; kmem/umem handed to an op were
 * created by this backend on this device. It keeps the ownership lists and frees whatever a
 * handle still owns before close(). Ops may be called from several threads at once, except
 * open and close.
 */
#ifndef PCIDRIVER_BACKEND_H
#define PCIDRIVER_BACKEND_H

#include "pcidriver/pcidriver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when struct pd_backend_ops or the structs below change incompatibly; a backend
 * built for another version is refused (-EPROTO). A new optional op needs no new number:
 * it goes at the end of struct pd_backend_ops, and a backend whose `size` ends before it is
 * read as not having it. */
#define PD_BACKEND_ABI 3

/* regs_get's answer for "use the BAR's mapping" */
#define PD_BACKEND_REGS_MAPPED 1

/* The longest prefix, without the ':' */
#define PD_BACKEND_PREFIX_MAX 15

/* A DMA-coherent buffer. The front end sets size (bytes, 1 .. PD_KMEM_MAX_SIZE); kmem_alloc
 * fills the rest. */
struct pd_backend_kmem {
	size_t size;
	uint32_t id;        /* unique among this device's live kmem */
	void *ptr;          /* the CPU's view, at least `size` bytes */
	uint64_t bus_addr;  /* the device's view: one contiguous range */
	void *priv;         /* the backend's */
};

/* A user buffer made reachable by the device. The front end sets addr, size, dir; umem_map
 * fills the rest, sg with malloc() (the front end frees it after umem_unmap). An imported
 * dma-buf is one too: the front end sets dir (addr NULL, size 0), dmabuf_import fills size
 * and the rest; umem_unmap and umem_sync then serve it. */
struct pd_backend_umem {
	void *addr;
	size_t size;
	enum pd_dma_dir dir;
	uint32_t id;
	struct pd_sg_entry *sg;
	size_t sg_count;
	void *priv;
};

/*
 * Every op returns 0 or a negative errno (the values pcidriver.h documents for the pd_*
 * call it serves); `dev` is what open() stored.
 */
struct pd_backend_ops {
	uint32_t abi;        /* PD_BACKEND_ABI */
	uint32_t size;       /* sizeof(struct pd_backend_ops) as the backend was built */
	const char *prefix;  /* "emu": lower-case letters and digits, starting with a letter */
	/* name is the whole device name ("emu:link=gen3x8"); -EINVAL for bad options (say why
	 * through pd_backend_set_error), -ENODEV when there is no such device */
	int (*open)(const char *name, void **dev);
	void (*close)(void *dev);            /* after every kmem/umem was released */
	int (*info)(void *dev, struct pd_info *info);   /* info is zeroed */
	int (*map_bar)(void *dev, unsigned int bar, unsigned int flags, void **addr,
		       size_t *size);
	int (*unmap_bar)(void *dev, unsigned int bar, void *addr, size_t size);
	/* regs is zeroed; fill it, or return PD_BACKEND_REGS_MAPPED when the registers are the
	 * BAR's memory mapping: the front end then maps the BAR (the handle's mapping, as
	 * pd_map_bar does) and points regs->mmio at it */
	int (*regs_get)(void *dev, unsigned int bar, struct pd_regs *regs);
	int (*cfg_read)(void *dev, uint32_t offset, void *buf, size_t len);
	int (*cfg_write)(void *dev, uint32_t offset, const void *buf, size_t len);
	int (*kmem_alloc)(void *dev, struct pd_backend_kmem *km);
	int (*kmem_free)(void *dev, struct pd_backend_kmem *km);
	int (*umem_map)(void *dev, struct pd_backend_umem *um);
	int (*umem_unmap)(void *dev, struct pd_backend_umem *um);
	int (*umem_sync)(void *dev, struct pd_backend_umem *um, enum pd_sync_dir dir);
	int (*irq_wait)(void *dev, unsigned int source, uint32_t timeout_ms);
	int (*irq_clear)(void *dev, unsigned int source);
	/* optional (NULL: pd_dmabuf_import fails with -EOPNOTSUPP): make dma-buf `fd` (open,
	 * the caller's) reachable by the device */
	int (*dmabuf_import)(void *dev, int fd, struct pd_backend_umem *um);
};

/*
 * Makes `ops` serve its prefix in this process. ops must stay valid for the life of the
 * process. Returns 0 (also when these very ops are registered already), -EINVAL for a bad
 * prefix, a missing op or a `size` that ends before the last op every backend must have,
 * -EPROTO for another ABI version, -EEXIST when other ops serve the prefix, -ENOSPC beyond 16
 * backends. (Every op but the optional ones must be set.) Thread-safe.
 */
int pd_backend_register(const struct pd_backend_ops *ops);

/*
 * For open(): says why it failed, in words, for pd_open_error() of the calling thread
 * (printf-style; the text is cut at 255 bytes).
 */
void pd_backend_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The function a plugin exports, and its name. */
typedef const struct pd_backend_ops *pd_backend_plugin_fn(void);
#define PD_BACKEND_PLUGIN_SYMBOL "pd_backend_plugin"

#ifdef __cplusplus
}
#endif

#endif /* PCIDRIVER_BACKEND_H */
