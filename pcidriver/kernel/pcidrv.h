/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pcidriver.ko internals: the per-device state, the per-file state and the objects files own.
 *
 * Lifetime
 *   struct pcidrv_dev is reference counted (kref): probe holds one reference until remove(),
 *   every open file holds one, every kmem holds one. It is freed by the last put, which may
 *   come long after remove() (a file still open on an unbound device).
 *   remove() marks the device dead and waits (SRCU) for every ioctl/mmap/release that could
 *   have seen it alive; after that no file touches the hardware or the DMA API again, and
 *   remove() releases interrupts, user mappings and all DMA memory while still bound.
 *
 * Locking (outermost first)
 *   pd->srcu        read side (pcidrv_enter/pcidrv_leave) around every use of the device by
 *                   a file (ioctl, mmap, release). Never blocks on user space: no user memory
 *                   is touched inside it (arguments are copied in before and out after, user
 *                   pages are pinned before), so a stalled page fault (userfaultfd, FUSE)
 *                   cannot hold up remove(); it nests inside mmap_lock without ordering
 *                   problems. remove() sets pd->dead, then synchronize_srcu().
 *   mmap_lock       taken by the core around mmap and vm_ops; remove() takes it (write,
 *                   empty) on the mm of every mapping to wait for mmap() calls in flight.
 *   pd->map_lock    (mutex) pd->mappings and mapping->fenced.
 *   pd->kmem_lock   (mutex) pd->kmem_list and each kmem's DMA memory (cpu_addr); taken by the
 *                   last put of a kmem, which can run in vm_ops->close under mmap_lock.
 *   xa_lock         of pd->kmem_xa / pd->umem_xa: ID -> object of an owning file; lookups
 *                   take an object reference under it.
 *   pd->intx_lock   (spinlock, irq-safe) pd->intx_masked; nests pci_lock inside.
 *   Interrupt counters and the per-file "seen" counters are atomics.
 */
#ifndef PCIDRV_H
#define PCIDRV_H

#include <linux/atomic.h>
#include <linux/cdev.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/refcount.h>
#include <linux/scatterlist.h>
#include <linux/spinlock.h>
#include <linux/srcu.h>
#include <linux/types.h>
#include <linux/version.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "compat.h"
#include "pcidriver_uapi.h"

#define PCIDRV_NAME		"pcidriver"
#define PCIDRV_MAX_DEVICES	256	/* minors, /dev/fpga0 .. /dev/fpga255 */

struct pcidrv_irq {
	struct pcidrv_dev *pd;
	unsigned int index;
	int irq;			/* Linux IRQ number, 0 when not requested */
	atomic64_t count;		/* events since probe */
	wait_queue_head_t wq;
	char name[40];
};

struct pcidrv_dev {
	struct kref kref;
	struct pci_dev *pdev;		/* referenced (pci_dev_get) until the last put */
	unsigned int minor;
	struct cdev *cdev;
	struct device *dev;		/* fpgaN in class pcidriver */
	struct inode *inode;		/* anon inode whose i_mapping every open file uses */

	struct srcu_struct srcu;
	bool dead;			/* set once by remove(), read under srcu */

	unsigned int dma_mask_bits;

	/* interrupts, fixed between probe and remove; irqs[] lives until the last put */
	unsigned int irq_mode;		/* PCIDRIVER_IRQ_* */
	unsigned int nr_irqs;
	struct pcidrv_irq *irqs;
	spinlock_t intx_lock;
	bool intx_masked;

	/* user mappings (BARs and kmem), see fops.c */
	struct mutex map_lock;
	struct list_head mappings;

	/* DMA memory */
	struct xarray kmem_xa;		/* handles: id -> struct pcidrv_kmem */
	struct xarray umem_xa;		/* handles: id -> struct pcidrv_umem */
	u32 kmem_next_id, umem_next_id;	/* xa_alloc_cyclic state */
	struct mutex kmem_lock;
	struct list_head kmem_list;	/* every kmem whose DMA memory is held */

	/* statistics for sysfs */
	atomic_t kmem_count;
	atomic64_t kmem_bytes;
	atomic_t umem_count;
	atomic64_t umem_pinned_bytes;
	atomic_t dmabuf_count;
	atomic64_t dmabuf_bytes;
};

/* One per open file. */
struct pcidrv_file {
	struct pcidrv_dev *pd;
	atomic64_t *irq_seen;		/* [pd->nr_irqs]: counts this file has consumed */
};

/* Pinned/allocated pages charged against RLIMIT_MEMLOCK, see acct.c. */
struct pcidrv_acct {
	struct user_struct *user;	/* referenced; NULL when nothing is charged */
	struct mm_struct *mm;		/* mmgrab'd: its pinned_vm shows the charge */
	unsigned long pages;
};

struct pcidrv_kmem {
	struct kref kref;		/* handle in kmem_xa, each mapping, lookups */
	struct list_head node;		/* pd->kmem_list while cpu_addr != NULL */
	struct pcidrv_dev *pd;		/* referenced */
	struct pcidrv_file *owner;	/* compared only, never dereferenced */
	u32 id;
	size_t size;
	void *cpu_addr;			/* NULL once the DMA memory is freed; pd->kmem_lock */
	dma_addr_t dma_addr;
	struct pcidrv_acct acct;
};

/*
 * A buffer the device reaches through an SG list: pinned user pages, or an imported dma-buf
 * (attach != NULL), whose list and pages belong to the exporter and whose release() the last
 * put calls instead of unpinning.
 */
struct pcidrv_umem {
	struct kref kref;		/* handle in umem_xa, lookups */
	struct pcidrv_dev *pd;
	struct pcidrv_file *owner;	/* compared only, never dereferenced */
	u32 id;
	u64 size;
	enum dma_data_direction dir;
	bool dma_mapped;
	struct sg_append_table sgt;	/* pinned pages */
	struct dma_buf_attachment *attach;	/* import: pinned attachment, dma-buf referenced */
	struct sg_table *dma_sgt;	/* what the device uses: &sgt.sgt or the exporter's */
	void (*release)(struct pcidrv_umem *um);	/* import: undoes it (dmabuf.c) */
	u32 sg_count;			/* entries of the coalesced list */
	struct pcidrv_acct acct;
};

/*
 * The SRCU read side in which a file may use the device. Returns the index for
 * pcidrv_leave(), or -ENODEV with nothing held once remove() has begun. Callers copy from
 * and to user memory only outside it. (The __release/__acquire pair tells sparse that the
 * read side spans the two calls, which it cannot follow through the conditional return.)
 */
static inline int pcidrv_enter(struct pcidrv_dev *pd)
{
	int idx = srcu_read_lock(&pd->srcu);

	if (READ_ONCE(pd->dead)) {
		srcu_read_unlock(&pd->srcu, idx);
		return -ENODEV;
	}
	__release(&pd->srcu);
	return idx;
}

static inline void pcidrv_leave(struct pcidrv_dev *pd, int idx)
{
	__acquire(&pd->srcu);
	srcu_read_unlock(&pd->srcu, idx);
}

/*
 * Takes handle `id` out of xa if file f owns it: returns the entry, whose reference is now the
 * caller's, or NULL (no such ID, or another file's). The owner test runs under the xarray's
 * lock, where an entry (and the reference it holds) cannot go away; `owner_off` is the offset
 * of the entry's owner pointer (struct pcidrv_kmem, struct pcidrv_umem).
 */
static inline void *pcidrv_take_handle(struct xarray *xa, unsigned long id,
				       const struct pcidrv_file *f, size_t owner_off)
{
	void *entry;

	xa_lock(xa);
	entry = xa_load(xa, id);
	if (entry && *(struct pcidrv_file **)((char *)entry + owner_off) == f)
		__xa_erase(xa, id);
	else
		entry = NULL;
	xa_unlock(xa);
	return entry;
}

/* main.c */
extern unsigned int pcidrv_dma_bits;
struct pcidrv_dev *pcidrv_dev_get_by_minor(unsigned int minor);
void pcidrv_dev_put(struct pcidrv_dev *pd);

/* fops.c */
extern const struct file_operations pcidrv_fops;
void pcidrv_zap_mappings(struct pcidrv_dev *pd);

/* kmem.c */
int pcidrv_ioctl_kmem_alloc(struct pcidrv_file *f, struct pcidriver_kmem_alloc __user *arg);
int pcidrv_ioctl_kmem_free(struct pcidrv_file *f, struct pcidriver_mem_id __user *arg);
struct pcidrv_kmem *pcidrv_kmem_get(struct pcidrv_file *f, u32 id);
void pcidrv_kmem_put(struct pcidrv_kmem *km);
int pcidrv_kmem_mmap(struct pcidrv_kmem *km, struct vm_area_struct *vma);
void pcidrv_kmem_release_file(struct pcidrv_file *f);
void pcidrv_kmem_release_all(struct pcidrv_dev *pd);

/* acct.c */
int pcidrv_acct_charge(struct pcidrv_acct *acct, unsigned long pages);
void pcidrv_acct_uncharge(struct pcidrv_acct *acct);

/* umem.c */
enum pcidrv_reach {
	PCIDRV_REACH_ALL,		/* IOMMU, or a bounce pool within the mask */
	PCIDRV_REACH_NONE,		/* every page is bounced into a pool beyond the mask */
	PCIDRV_REACH_BELOW_LIMIT,	/* pages up to *limit only, nothing bounces them */
};
enum pcidrv_reach pcidrv_dma_reach(struct device *dev, u64 *limit);
int pcidrv_ioctl_umem_map(struct pcidrv_file *f, struct pcidriver_umem_map __user *arg);
int pcidrv_ioctl_umem_unmap(struct pcidrv_file *f, struct pcidriver_mem_id __user *arg);
int pcidrv_ioctl_umem_sglist(struct pcidrv_file *f, struct pcidriver_umem_sglist __user *arg);
int pcidrv_ioctl_umem_sync(struct pcidrv_file *f, struct pcidriver_umem_sync __user *arg);
void pcidrv_umem_release_file(struct pcidrv_file *f);
void pcidrv_umem_release_all(struct pcidrv_dev *pd);
struct pcidrv_umem *pcidrv_umem_new(struct pcidrv_file *f, u64 size, u32 flags);
void pcidrv_umem_put(struct pcidrv_umem *um);
int pcidrv_umem_publish(struct pcidrv_umem *um, u32 *id);
void pcidrv_umem_unpublish(struct pcidrv_umem *um, u32 id);

/* dmabuf.c, built where the kernel has dma-bufs (CONFIG_DMA_SHARED_BUFFER) */
#if IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
int pcidrv_ioctl_dmabuf_import(struct pcidrv_file *f,
			       struct pcidriver_dmabuf_import __user *arg);
#else
static inline int pcidrv_ioctl_dmabuf_import(struct pcidrv_file *f,
					     struct pcidriver_dmabuf_import __user *arg)
{
	return -EOPNOTSUPP;
}
#endif

/* irq.c */
int pcidrv_irq_setup(struct pcidrv_dev *pd, bool allow_msi);
void pcidrv_irq_teardown(struct pcidrv_dev *pd);
void pcidrv_irq_wake_all(struct pcidrv_dev *pd);
int pcidrv_ioctl_irq_wait(struct pcidrv_file *f, struct pcidriver_irq_wait __user *arg);
int pcidrv_ioctl_irq_clear(struct pcidrv_file *f, struct pcidriver_irq_clear __user *arg);

/* sysfs.c */
extern const struct attribute_group *pcidrv_groups[];

#endif /* PCIDRV_H */
