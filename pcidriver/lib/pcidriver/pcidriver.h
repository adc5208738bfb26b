/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpcidriver: the C user API of the generic PCI driver.
 *
 * One API, backends chosen by device name:
 *   "/dev/fpga0", "fpga0" or "0"  the kernel module's char device (pcidriver.ko), built in
 *   "PREFIX" or "PREFIX:OPTIONS"   the backend serving PREFIX (pcidriver/backend.h), e.g.
 *                                  "emu:OPTIONS", the virtual board (docs/virtual-board.md)
 *   NULL or ""                     $PCIDRIVER_DEVICE if set, else /dev/fpga0; never a
 *                                  simulator unless asked for (else -ENODEV)
 *
 * Every function returns 0 (or a count) on success and a negative errno on failure; a NULL
 * handle or out-pointer is -EINVAL (accessors of a NULL handle return 0 or NULL).
 * Per function: \pre what the caller guarantees, \post what holds after success, and
 * "Thread-safe" or "One thread" (the caller serialises calls on that object).
 * No global state: handles are independent. The functions of one handle may be called from
 * several threads (allocation lists are locked; register accessors are lock-free), but one
 * kmem/umem object must not be freed while another thread still uses it. Bus addresses are
 * what the device uses (IOVAs behind an IOMMU); this API never exposes physical or kernel
 * addresses.
 */
#ifndef PCIDRIVER_PCIDRIVER_H
#define PCIDRIVER_PCIDRIVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PD_MAX_BARS 6

typedef struct pd_device pd_device;
typedef struct pd_kmem pd_kmem;
typedef struct pd_umem pd_umem;

/* pd_info.backend: which implementation answers (other backends pick a value of their own) */
enum pd_backend { PD_BACKEND_KERNEL = 1, PD_BACKEND_EMU = 2, PD_BACKEND_SIM = 3 };

/* pd_bar_info.flags */
#define PD_BAR_PRESENT  (1u << 0)
#define PD_BAR_IO       (1u << 1)  /* I/O port BAR (cannot be mapped) */
#define PD_BAR_64BIT    (1u << 2)
#define PD_BAR_PREFETCH (1u << 3)

struct pd_bar_info {
	uint64_t bus_addr;  /* as the PCI bus sees it; 0 on the virtual board */
	uint64_t size;      /* bytes; 0 when the BAR is absent */
	uint32_t flags;     /* PD_BAR_* */
	uint32_t reserved;
};

enum pd_irq_mode { PD_IRQ_NONE = 0, PD_IRQ_INTX = 1, PD_IRQ_MSI = 2, PD_IRQ_MSIX = 3 };

struct pd_info {
	uint16_t vendor, device;
	uint16_t subsystem_vendor, subsystem_device;
	uint32_t class_code;          /* 24 bits: base class, subclass, prog-if */
	uint8_t revision;
	uint8_t reserved[3];
	uint32_t backend;             /* enum pd_backend */
	struct pd_bar_info bar[PD_MAX_BARS];
	uint32_t irq_mode;            /* enum pd_irq_mode */
	uint32_t irq_count;           /* interrupt sources = vectors (1 for INTx) */
	uint32_t dma_mask_bits;       /* the device's DMA addressing limit */
	uint32_t max_payload;         /* bytes, from the PCIe device control register */
	uint32_t max_read_request;    /* bytes */
	uint32_t abi_version;         /* kernel module ABI (0 on the virtual board) */
	char name[64];                /* PCI address ("0000:01:00.0") or virtual board description */
};

/* ---- device ---- */
/* -ENODEV when there is no such device or no backend for its prefix, -EINVAL for bad backend
 * options, -EACCES, -EPROTO (module of another API version), -ENOMEM; pd_open_error() says
 * why in words.
 * \post *out is a new handle (NULL on failure); nothing else changes on failure.
 * Thread-safe (handles are independent). */
int pd_open(const char *name, pd_device **out);
/* Why the last pd_open of the calling thread failed, in one line that names what to do
 * ("" after a success). Valid until this thread's next pd_open. */
const char *pd_open_error(void);
/* Frees everything the handle still owns (kmem, umem, BAR mappings), then the handle.
 * \pre no other thread uses dev or its kmem/umem. \post dev and its objects are invalid.
 * One thread. NULL is ignored. */
void pd_close(pd_device *dev);
/* \post *info describes the device (zeroed first). Thread-safe. */
int pd_info(pd_device *dev, struct pd_info *info);
/* Device names: /dev/fpgaN in order, then "PREFIX:" of each backend available (registered,
 * or a plugin); *count is the total even when more than max. Thread-safe. */
int pd_list(char names[][64], size_t max, size_t *count);

/* ---- BARs ---- */
#define PD_MAP_WC (1u << 0) /* write-combining (prefetchable BARs only; else -EINVAL) */

/* Map a whole BAR into this process. -EOPNOTSUPP for the virtual board's register BAR, whose
 * registers have side effects: use the register accessors below. A handle keeps one mapping per
 * BAR: mapping it again returns the same address, or -EBUSY when other flags are asked for
 * (unmap first). Unmapped by pd_unmap_bar or pd_close.
 * \pre bar < PD_MAX_BARS, flags only PD_MAP_*. \post *addr maps the whole BAR (*size bytes,
 * if size is not NULL). Thread-safe. */
int pd_map_bar(pd_device *dev, unsigned int bar, unsigned int flags, void **addr, size_t *size);
/* \pre no thread still uses the mapping. \post the BAR is unmapped (0 if it was not). */
int pd_unmap_bar(pd_device *dev, unsigned int bar);

/*
 * Register access. pd_regs_get fills a small accessor for one BAR (valid until pd_close).
 * On the kernel backend `mmio` is the mapped BAR and the inline functions below compile to
 * volatile loads and stores; the virtual board provides read32/write32 instead. Offsets must be
 * 4-byte aligned and inside the BAR (pd_bar_read/pd_bar_write check them; the inline accessors
 * do not, for speed).
 */
struct pd_regs {
	volatile uint8_t *mmio;
	uint64_t size;
	void *ctx;
	uint32_t (*read32)(void *ctx, uint64_t offset);
	void (*write32)(void *ctx, uint64_t offset, uint32_t value);
};

/* \post *regs accesses the BAR until pd_close (a mapped BAR stays mapped). Thread-safe; the
 * accessors are lock-free and may be used from any thread. */
int pd_regs_get(pd_device *dev, unsigned int bar, struct pd_regs *regs);

static inline uint32_t pd_reg_read32(const struct pd_regs *r, uint64_t offset)
{
	if (r->mmio)
		return *(volatile uint32_t *)(r->mmio + offset);
	return r->read32(r->ctx, offset);
}

static inline void pd_reg_write32(const struct pd_regs *r, uint64_t offset, uint32_t value)
{
	if (r->mmio)
		*(volatile uint32_t *)(r->mmio + offset) = value;
	else
		r->write32(r->ctx, offset, value);
}

/* Checked bulk copies between a BAR and memory, in 32-bit accesses.
 * \pre offset and len multiples of 4, inside the BAR (else -EINVAL). Thread-safe. */
int pd_bar_read(pd_device *dev, unsigned int bar, uint64_t offset, void *buf, size_t len);
int pd_bar_write(pd_device *dev, unsigned int bar, uint64_t offset, const void *buf, size_t len);

/* ---- config space ---- */
/* \pre 0 < len, offset + len <= 4096 (else -EINVAL). Thread-safe. */
int pd_cfg_read(pd_device *dev, uint32_t offset, void *buf, size_t len);
/* As pd_cfg_read; needs CAP_SYS_ADMIN (-EPERM). Thread-safe. */
int pd_cfg_write(pd_device *dev, uint32_t offset, const void *buf, size_t len);

/* ---- kernel memory: DMA-coherent, physically contiguous for the device ---- */
/* Largest request the library passes on; a backend may refuse smaller ones with -ENOMEM
 * (the kernel's buddy allocator guarantees 4 MiB; more needs CMA). */
#define PD_KMEM_MAX_SIZE ((size_t)256 << 20)
/* \pre 0 < size <= PD_KMEM_MAX_SIZE (else -EINVAL). \post *out is zeroed memory mapped into
 * this process, one bus address range, owned by dev until freed (-ENOMEM: none).
 * Thread-safe. */
int pd_kmem_alloc(pd_device *dev, size_t size, pd_kmem **out);
/* \pre the device no longer accesses it; no other thread uses km. \post km is invalid. */
int pd_kmem_free(pd_kmem *km);
/* Accessors: constant for km's lifetime; thread-safe. */
void *pd_kmem_ptr(const pd_kmem *km);
uint64_t pd_kmem_bus_addr(const pd_kmem *km);
size_t pd_kmem_size(const pd_kmem *km);
uint32_t pd_kmem_id(const pd_kmem *km);

/* ---- user memory: an existing buffer pinned and mapped for DMA ---- */
enum pd_dma_dir { PD_DMA_TO_DEVICE = 1, PD_DMA_FROM_DEVICE = 2, PD_DMA_BIDIRECTIONAL = 3 };
enum pd_sync_dir { PD_SYNC_FOR_CPU = 1, PD_SYNC_FOR_DEVICE = 2 };

#define PD_UMEM_MAX_SIZE ((uint64_t)64 << 30) /* uint64_t: 64 GiB does not fit a 32-bit size_t */

struct pd_sg_entry {
	uint64_t bus_addr;
	uint64_t length;
};

/* -EFAULT when a page of [addr, addr + size) is not mapped, not readable, or not writable
 * while the device is to write it (PD_DMA_FROM_DEVICE, PD_DMA_BIDIRECTIONAL).
 * \pre 0 < size <= PD_UMEM_MAX_SIZE, dir one of enum pd_dma_dir (else -EINVAL); the memory
 * stays mapped until pd_umem_unmap. \post the device reaches the buffer through the bus
 * addresses of its SG list; the pages are pinned and charged to RLIMIT_MEMLOCK (-ENOMEM
 * beyond it). Thread-safe. */
int pd_umem_map(pd_device *dev, void *addr, size_t size, enum pd_dma_dir dir, pd_umem **out);
/* \pre the device no longer accesses it; no other thread uses um. \post um is invalid. */
int pd_umem_unmap(pd_umem *um);
size_t pd_umem_sg_count(const pd_umem *um);
/* Copies min(max, count) entries; returns the number copied. */
int pd_umem_sglist(pd_umem *um, struct pd_sg_entry *entries, size_t max);
/* FOR_DEVICE after the CPU wrote, FOR_CPU before it reads what the device wrote (bounce
 * buffers, non-coherent platforms). \pre dir one of enum pd_sync_dir. Thread-safe. */
int pd_umem_sync(pd_umem *um, enum pd_sync_dir dir);
void *pd_umem_ptr(const pd_umem *um);
size_t pd_umem_size(const pd_umem *um);
uint32_t pd_umem_id(const pd_umem *um);

/* ---- dma-buf import: memory another driver exports (udmabuf, DMA-BUF heaps, GPUs) ---- */
/* Makes dma-buf `fd` reachable by the device, as a pd_umem: pd_umem_sg_count, _sglist,
 * _sync, _size (the dma-buf's), _id and _unmap serve it like a mapped buffer; pd_umem_ptr
 * is NULL (the CPU reaches the memory through the exporter: mmap of fd, DMA_BUF_IOCTL_SYNC).
 * fd stays the caller's and may be closed afterwards. -EBADF fd is not open; -EINVAL fd is
 * not a dma-buf, bad dir; -EACCES the device would write (PD_DMA_FROM_DEVICE or both) a
 * dma-buf whose file is read-only; -ENOMEM over RLIMIT_MEMLOCK (the size is charged as for
 * pd_umem_map) or out of memory / bounce-buffer space; -E2BIG the exporter's segments are
 * longer than a bounce buffer; -ERANGE a page beyond the device's DMA mask; -EOPNOTSUPP the backend cannot import (an older
 * pcidriver.ko; the virtual board: a dma-buf the CPU cannot map, such as GPU memory);
 * the exporter's own errors otherwise (docs/pcidriver.md). Thread-safe. */
int pd_dmabuf_import(pd_device *dev, int fd, enum pd_dma_dir dir, pd_umem **out);

/* ---- interrupts ---- */
#define PD_WAIT_FOREVER UINT32_MAX

/* Wait until interrupt source `source` (= vector) fired since this handle last waited on or
 * cleared it; returns the number of events (>= 1), -ETIMEDOUT after timeout_ms (0: do not
 * wait), -EINTR on a signal. Safe to call from another thread than the one doing register IO. */
int pd_irq_wait(pd_device *dev, unsigned int source, uint32_t timeout_ms);
/* Forgets the events not waited for yet. Thread-safe. */
int pd_irq_clear(pd_device *dev, unsigned int source);

/* Human-readable text for a negative errno returned by this library: a constant string,
 * thread-safe. */
const char *pd_strerror(int err);

/* A byte count written as every backend's options and every tool take it: decimal digits,
 * `0x` and hexadecimal digits, or a decimal fraction ("1.5"), then optionally a binary unit
 * K, M, G or T (1024-based, any case), which may be followed by "B" or "iB" (KiB, MB and K
 * are the same), or "B" alone. The result is a whole number of bytes below 2^64 ("1.5K" is
 * 1536; "0.3K" is not whole). Nothing else is accepted: no sign, no spaces, no trailing
 * text. 0, or -EINVAL with *out unchanged. Thread-safe. */
int pd_parse_size(const char *text, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* PCIDRIVER_PCIDRIVER_H */
