/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * pcidriver_uapi.h - the ioctl and mmap ABI of pcidriver.ko, the generic PCI driver of
 * mprace-ng (/dev/fpga0, /dev/fpga1, ...). docs/pcidriver.md describes it in prose.
 *
 * Conventions (as in include/uapi/linux/vfio.h):
 * - Commands are _IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + n): the size lives in the struct, not in
 *   the command number. Every struct starts with `__u32 argsz; __u32 flags;`. The caller sets
 *   argsz to sizeof(the struct it was compiled with); the driver reads and writes only the
 *   fields it knows and fails with EINVAL when argsz is too small for them, when flags holds an
 *   unknown bit, or when a reserved field is not zero. New fields go at the end, announced by a
 *   new flag bit.
 * - Layout is identical for 32- and 64-bit processes (fixed-width fields, __aligned_u64,
 *   explicit padding), so 32-bit processes use the same structs (compat_ioctl).
 * - User pointers are passed as __aligned_u64.
 * - Addresses returned are bus addresses (what the device uses; IOVAs behind an IOMMU),
 *   never physical or kernel virtual addresses.
 *
 * Errors common to every command: ENOTTY unknown command; EFAULT the argument (or a buffer it
 * points to) is not accessible; EINVAL argsz too small, unknown flags, non-zero reserved field
 * or an argument out of range; ENODEV the device was removed (unbound or unplugged) while this
 * file was open: every later call fails this way, close the file. Per-command errors are listed
 * with each command.
 */
#ifndef _UAPI_PCIDRIVER_UAPI_H
#define _UAPI_PCIDRIVER_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define PCIDRIVER_API_VERSION	1

#define PCIDRIVER_TYPE		0xCE	/* not registered in ioctl-number.rst */
#define PCIDRIVER_BASE		0x00

#define PCIDRIVER_NUM_BARS	6
#define PCIDRIVER_MAX_IRQS	32	/* interrupt sources (vectors) per device */
#define PCIDRIVER_ID_MAX	0xffffff /* kmem/umem IDs are 1..PCIDRIVER_ID_MAX */

/* Largest kmem the driver attempts; larger requests fail with EINVAL. Without an IOMMU,
 * allocations above 4 MiB (the buddy allocator's limit) also need CMA and otherwise fail with
 * ENOMEM; behind an IOMMU any pages do. */
#define PCIDRIVER_KMEM_MAX_SIZE	(256ULL << 20)
/* Largest umem; larger requests fail with EINVAL. */
#define PCIDRIVER_UMEM_MAX_SIZE	(64ULL << 30)

/*
 * mmap offsets. Bits 40..43 of the byte offset select a region, bits 0..39 are the offset inside
 * it. Only MAP_SHARED mappings are accepted; a mapping cannot be split (partial munmap or
 * mprotect fail with EINVAL) and is not inherited by fork() (the child has no mapping there:
 * a child maps what it needs itself, through the inherited file). Errors: EINVAL unknown region, absent or I/O BAR, BAR smaller than
 * a page, write-combining on a non-prefetchable BAR, a range outside the BAR or kmem, a kmem
 * offset with bits 0..15 set, MAP_PRIVATE; ENOENT a kmem ID this file does not own; ENODEV.
 *
 * PCIDRIVER_MMAP_BAR(bar) + off     BAR bar (0..5), uncached; off page-aligned
 * PCIDRIVER_MMAP_BAR_WC(bar) + off  the same, write-combining (prefetchable BARs only)
 * PCIDRIVER_MMAP_KMEM(id)           kmem id from its start (also returned as mmap_offset by
 *                                   PCIDRIVER_KMEM_ALLOC); length at most the kmem size
 *                                   rounded up to pages
 * All offsets fit in 44 bits, so mmap2() of 32-bit processes reaches them.
 */
#define PCIDRIVER_MMAP_REGION_SHIFT	40
#define PCIDRIVER_MMAP_REGION_BAR_MASK	0x7	/* a BAR region: the BAR's number ... */
#define PCIDRIVER_MMAP_REGION_WC	0x8	/* ... and whether the mapping write-combines */
#define PCIDRIVER_MMAP_BAR(bar)		((__u64)(bar) << PCIDRIVER_MMAP_REGION_SHIFT)
#define PCIDRIVER_MMAP_BAR_WC(bar)	((__u64)((bar) | PCIDRIVER_MMAP_REGION_WC) << \
					 PCIDRIVER_MMAP_REGION_SHIFT)
#define PCIDRIVER_MMAP_KMEM_REGION	0xf
#define PCIDRIVER_MMAP_KMEM_ID_SHIFT	16
#define PCIDRIVER_MMAP_KMEM(id)		(((__u64)PCIDRIVER_MMAP_KMEM_REGION << \
					  PCIDRIVER_MMAP_REGION_SHIFT) | \
					 ((__u64)(id) << PCIDRIVER_MMAP_KMEM_ID_SHIFT))

/**
 * PCIDRIVER_GET_API_VERSION - _IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 0)
 *
 * No argument. Returns PCIDRIVER_API_VERSION (> 0) as the ioctl's return value.
 * A user of this header checks it equals the PCIDRIVER_API_VERSION it was built with.
 */
#define PCIDRIVER_GET_API_VERSION	_IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 0)

struct pcidriver_bar_info {
	__aligned_u64	bus_addr;	/* BAR address as the PCI bus sees it */
	__aligned_u64	size;		/* bytes; 0 if the BAR is absent */
	__u32		flags;
#define PCIDRIVER_BAR_PRESENT	(1 << 0)
#define PCIDRIVER_BAR_IO	(1 << 1)	/* I/O ports: cannot be mapped */
#define PCIDRIVER_BAR_64BIT	(1 << 2)
#define PCIDRIVER_BAR_PREFETCH	(1 << 3)
#define PCIDRIVER_BAR_MMAP	(1 << 4)	/* can be mmap'd (memory, at least a page) */
	__u32		__reserved;
};

/* PCIDRIVER_DEVICE_INFO.irq_mode (same values as libpcidriver's enum pd_irq_mode) */
#define PCIDRIVER_IRQ_NONE	0
#define PCIDRIVER_IRQ_INTX	1
#define PCIDRIVER_IRQ_MSI	2
#define PCIDRIVER_IRQ_MSIX	3

/**
 * PCIDRIVER_DEVICE_GET_INFO - _IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 1), struct pcidriver_device_info
 *
 * In: argsz, flags (0). Out: everything else.
 */
struct pcidriver_device_info {
	__u32	argsz;
	__u32	flags;
	__u16	vendor;
	__u16	device;
	__u16	subsystem_vendor;
	__u16	subsystem_device;
	__u32	class_code;		/* 24 bits: base class, subclass, prog-if */
	__u8	revision;
	__u8	__pad[3];
	__u32	irq_mode;		/* PCIDRIVER_IRQ_* */
	__u32	irq_count;		/* interrupt sources = vectors (1 for INTx, 0 for none) */
	__u32	dma_mask_bits;		/* the DMA mask set for the device */
	__u32	max_payload;		/* bytes (PCIe device control); 0 if not PCIe */
	__u32	max_read_request;	/* bytes; 0 if not PCIe */
	__u32	max_segment_size;	/* longest SG entry PCIDRIVER_UMEM_GET_SGLIST returns */
	__u32	num_bars;		/* PCIDRIVER_NUM_BARS */
	__u32	__reserved;
	char	name[32];		/* PCI address, "0000:01:00.0", NUL-terminated */
	struct pcidriver_bar_info bar[PCIDRIVER_NUM_BARS];
};
#define PCIDRIVER_DEVICE_GET_INFO	_IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 1)

/**
 * PCIDRIVER_CONFIG_READ - _IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 2), struct pcidriver_config_rw
 * PCIDRIVER_CONFIG_WRITE - _IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 3), struct pcidriver_config_rw
 *
 * Copies count bytes of configuration space at offset to/from the buffer at data, using the
 * widest naturally aligned accesses. Read: any opener. Write: needs CAP_SYS_ADMIN.
 * Errors: EINVAL count 0 or offset + count beyond the config space (256 bytes for conventional
 * PCI, 4096 for PCIe); EPERM write without CAP_SYS_ADMIN; EFAULT; ENODEV; EIO/other: the PCI
 * core refused the access (device blocked, e.g. during reset).
 */
struct pcidriver_config_rw {
	__u32		argsz;
	__u32		flags;
	__u32		offset;
	__u32		count;
	__aligned_u64	data;		/* user pointer to count bytes */
};
#define PCIDRIVER_CONFIG_READ		_IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 2)
#define PCIDRIVER_CONFIG_WRITE		_IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 3)

/**
 * PCIDRIVER_KMEM_ALLOC - _IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 4), struct pcidriver_kmem_alloc
 *
 * Allocates size bytes of DMA-coherent memory (dma_alloc_coherent) owned by this open file.
 * In: argsz, flags (0), size, __reserved (0). Out: id, bus_addr, mmap_offset.
 * The pages are charged like pinned memory: to the calling user's locked memory, limited by
 * the caller's RLIMIT_MEMLOCK unless it has CAP_IPC_LOCK, and to its memory cgroup. The
 * allocation never invokes the OOM killer. Errors: EINVAL size 0 or above
 * PCIDRIVER_KMEM_MAX_SIZE; ENOMEM over RLIMIT_MEMLOCK or the memory cgroup's limit, or the
 * allocation failed; ENOSPC no free ID.
 */
struct pcidriver_kmem_alloc {
	__u32		argsz;
	__u32		flags;
	__aligned_u64	size;
	__aligned_u64	bus_addr;
	__aligned_u64	mmap_offset;	/* = PCIDRIVER_MMAP_KMEM(id) */
	__u32		id;
	__u32		__reserved;
};
#define PCIDRIVER_KMEM_ALLOC		_IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 4)

/**
 * PCIDRIVER_KMEM_FREE - _IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 5), struct pcidriver_mem_id
 * PCIDRIVER_UMEM_UNMAP - _IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 7), struct pcidriver_mem_id
 *
 * Releases the kmem/umem id of this file (a umem also being a dma-buf import); the ID is not reused until the 24-bit ID space
 * wraps. A kmem still mmap'd stays allocated until its last mapping goes.
 * Errors: ENOENT id unknown, freed, or owned by another open file.
 */
struct pcidriver_mem_id {
	__u32	argsz;
	__u32	flags;
	__u32	id;
	__u32	__reserved;
};
#define PCIDRIVER_KMEM_FREE		_IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 5)

/**
 * PCIDRIVER_UMEM_MAP - _IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 6), struct pcidriver_umem_map
 *
 * Pins the user buffer [vaddr, vaddr + size) (any alignment) and maps it for DMA in the
 * direction(s) given by flags (at least one). Out: id and sg_count, the number of entries of
 * its coalesced SG list. The pinned pages are charged to RLIMIT_MEMLOCK unless the caller has
 * CAP_IPC_LOCK. Data the CPU writes after the map needs PCIDRIVER_UMEM_SYNC FOR_DEVICE before the
 * device reads it; data the device wrote needs FOR_CPU before the CPU reads it (bounce
 * buffers, non-coherent platforms).
 * Errors: EINVAL no direction, size 0 or above PCIDRIVER_UMEM_MAX_SIZE, range wraps; EFAULT
 * part of the range is not mapped (or not writable for FROM_DEVICE), or is a VM_IO/PFNMAP
 * mapping such as a BAR or kmem; ENOMEM over RLIMIT_MEMLOCK (charged to the calling user,
 * shared by every process of that user) or out of memory / IOVA / bounce-buffer space;
 * ERANGE a page lies beyond the device's DMA mask and no bounce buffer it can reach exists;
 * ENOSPC no free ID.
 */
struct pcidriver_umem_map {
	__u32		argsz;
	__u32		flags;
#define PCIDRIVER_UMEM_TO_DEVICE	(1 << 0)	/* the device reads the buffer (H2C) */
#define PCIDRIVER_UMEM_FROM_DEVICE	(1 << 1)	/* the device writes the buffer (C2H) */
	__aligned_u64	vaddr;
	__aligned_u64	size;
	__u32		id;
	__u32		sg_count;
};
#define PCIDRIVER_UMEM_MAP		_IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 6)
#define PCIDRIVER_UMEM_UNMAP		_IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 7)

struct pcidriver_sg_entry {
	__aligned_u64	bus_addr;
	__aligned_u64	length;
};

/**
 * PCIDRIVER_UMEM_GET_SGLIST - _IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 8), struct pcidriver_umem_sglist
 *
 * Copies up to count entries of the SG list of umem id, starting at entry first, into the
 * array at entries. Entries are in buffer order; contiguous DMA segments are coalesced as long
 * as an entry stays within max_segment_size and does not cross the device's segment boundary.
 * Every bus address keeps the offset within its page of the byte it maps, so page-granular
 * address lists (e.g. NVMe PRPs) can be built from it; where bounce buffers (swiotlb) carry
 * the data, only on Linux 6.3 and later (before, a bounced entry starts at any 2 KiB boundary:
 * use page-aligned buffers whose size is a whole number of pages there).
 * Out: count (entries copied), total (entries in the list). first == total copies nothing.
 * Errors: ENOENT; EINVAL first > total; EFAULT.
 */
struct pcidriver_umem_sglist {
	__u32		argsz;
	__u32		flags;
	__u32		id;
	__u32		first;
	__u32		count;
	__u32		total;
	__aligned_u64	entries;	/* user pointer to struct pcidriver_sg_entry[count] */
};
#define PCIDRIVER_UMEM_GET_SGLIST	_IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 8)

/**
 * PCIDRIVER_UMEM_SYNC - _IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 9), struct pcidriver_umem_sync
 *
 * dma_sync_sgtable_for_cpu/_for_device on the whole umem; flags holds exactly one direction.
 * Errors: ENOENT; EINVAL none or both directions.
 */
struct pcidriver_umem_sync {
	__u32	argsz;
	__u32	flags;
#define PCIDRIVER_SYNC_FOR_CPU		(1 << 0)
#define PCIDRIVER_SYNC_FOR_DEVICE	(1 << 1)
	__u32	id;
	__u32	__reserved;
};
#define PCIDRIVER_UMEM_SYNC		_IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 9)

/**
 * PCIDRIVER_IRQ_WAIT - _IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 10), struct pcidriver_irq_wait
 *
 * Waits until interrupt source `source` (= vector; 0 for INTx) has fired since this open file
 * last waited on or cleared it (or since open). Out: count, the number of events since then
 * (>= 1, saturated at 0xffffffff). Every open file sees every event.
 * timeout_ms 0 checks without sleeping; PCIDRIVER_WAIT_FOREVER waits without limit.
 * With INTx the driver masks the interrupt (PCI command register) when it fires, and unmasks
 * it when a file calls IRQ_CLEAR, or IRQ_WAIT while it has no unreported event (it has
 * handled all it was told): acknowledge the device before waiting again; an INTx still
 * asserted at that point is counted as a new event.
 * Errors: EINVAL source >= irq_count; ETIMEDOUT no event within timeout_ms; EINTR a signal
 * arrived (the call is never restarted, whatever SA_RESTART says); ENODEV the device was
 * removed, also while waiting.
 */
struct pcidriver_irq_wait {
	__u32	argsz;
	__u32	flags;
	__u32	source;
	__u32	timeout_ms;
#define PCIDRIVER_WAIT_FOREVER	0xffffffffU
	__u32	count;
	__u32	__reserved;
};
#define PCIDRIVER_IRQ_WAIT		_IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 10)

/**
 * PCIDRIVER_IRQ_CLEAR - _IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 11), struct pcidriver_irq_clear
 *
 * Forgets the events of `source` this file has not waited for (and unmasks INTx, see above).
 * Errors: EINVAL source >= irq_count.
 */
struct pcidriver_irq_clear {
	__u32	argsz;
	__u32	flags;
	__u32	source;
	__u32	__reserved;
};
#define PCIDRIVER_IRQ_CLEAR		_IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 11)

/**
 * PCIDRIVER_DMABUF_IMPORT - _IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 12), struct pcidriver_dmabuf_import
 *
 * Imports the dma-buf `fd` (memory another driver exports: udmabuf, a DMA-BUF heap, a GPU) as
 * a umem of this open file: the driver attaches the device to it (peer-to-peer allowed, so a
 * PCI BAR such as GPU memory may be handed out as is), pins it and maps it for DMA in the
 * direction(s) given by flags (at least one). Out: size (the dma-buf's), id and sg_count.
 * From then on it is a umem in every respect: PCIDRIVER_UMEM_GET_SGLIST gives its bus
 * addresses, PCIDRIVER_UMEM_SYNC syncs the mapping the exporter made for this device (needed
 * where that mapping bounces), PCIDRIVER_UMEM_UNMAP, the file's last close, the process's
 * death and the device's removal detach it. The fd may be closed after the import. Its size in
 * pages is charged to RLIMIT_MEMLOCK like pinned user memory (a pinned dma-buf cannot be moved
 * or evicted by its exporter) unless the caller has CAP_IPC_LOCK. The CPU reaches the memory,
 * if at all, through the exporter (mmap of the dma-buf fd, DMA_BUF_IOCTL_SYNC).
 * Errors: EBADF fd is not an open file; EINVAL fd is not a dma-buf, no direction, size above
 * PCIDRIVER_UMEM_MAX_SIZE; EACCES FROM_DEVICE on a dma-buf whose file is not open for writing
 * (exported read-only: the device may not write what the caller may only read); ENOMEM over
 * RLIMIT_MEMLOCK or out of memory / IOVA / bounce-buffer space (may succeed later); E2BIG
 * the exporter's segments are longer than a bounce buffer (swiotlb maps at most 256 KiB at
 * once, e.g. a system-heap buffer of 1 MiB pages under swiotlb=force: never imports on that
 * boot); ERANGE a page of the dma-buf, or a bus address the exporter handed out, lies beyond
 * the device's DMA mask and no bounce buffer it can reach exists (checked before anything is
 * mapped, as for PCIDRIVER_UMEM_MAP), or the device does not reach all memory and the
 * exporter offers no kernel mapping through which its pages could be checked; ENOSPC no free ID;
 * EINTR a signal arrived while waiting for the dma-buf's reservation lock;
 * EOPNOTSUPP the kernel was built without dma-buf support (CONFIG_DMA_SHARED_BUFFER);
 * other errors are the exporter's refusal to attach, pin or map for this device (EOPNOTSUPP,
 * EBUSY, ...: e.g. GPU memory the platform cannot reach peer-to-peer).
 */
struct pcidriver_dmabuf_import {
	__u32		argsz;
	__u32		flags;		/* PCIDRIVER_UMEM_TO_DEVICE and/or _FROM_DEVICE */
	__s32		fd;
	__u32		__reserved;
	__aligned_u64	size;
	__u32		id;
	__u32		sg_count;
};
#define PCIDRIVER_DMABUF_IMPORT		_IO(PCIDRIVER_TYPE, PCIDRIVER_BASE + 12)

#endif /* _UAPI_PCIDRIVER_UAPI_H */
