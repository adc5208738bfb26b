/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host side of a board that is not a kernel device: what pcidriver.ko and an IOMMU give
 * a real board, for the backends of this library (emu: the model, sim: the RTL under a
 * simulator) and any other that embeds it (a remote board, another simulator; the test
 * backend of tests/pcidriver/test_host_backend.c shows how). Internal header, not installed.
 *
 *   host_iommu.c  bus addresses: the IOVA allocator and the table every device access is
 *                 translated through; an address that was not handed out faults
 *   host_mem.c    kmem (zeroed pages, one bus range) and umem (a user buffer checked as
 *                 pin_user_pages checks it, laid out in IOVA space as sg= says, its SG list
 *                 cut at maxseg=), dma-buf import
 *   host.c        the object: set-up and tear-down, MSI event counters and waits, and a
 *                 checked copy between bus addresses and a buffer
 *
 * A backend embeds one struct vb_host, fills struct vb_host_config from its options (the
 * host rows of the one options table, options.h), calls vb_host_init once before it hands out
 * memory and vb_host_destroy after the last device access; its pd_backend_ops for kmem, umem,
 * dma-buf and IRQ waits are one-line calls of the functions below. Every function may be
 * called from any thread; the locks are the host's own (see the lock order in emu.h).
 */
#ifndef VBOARD_HOST_H
#define VBOARD_HOST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pcidriver/backend.h"

#define VB_PAGE 4096u
#define VB_CACHELINE 64
#define VB_IOMMU_READERS 2u     /* translating threads holding reader locks (emu: one per channel) */
#define VB_MAX_VECTORS 4u

/* ------------------------------------------------------------------ options */

enum vb_sg_mode { VB_SG_RANDOM = 0, VB_SG_MERGED, VB_SG_PAGES };

/* The host rows of the options table (sg=, maxseg=, kmax=, iova=, seed=). */
struct vb_host_config {
	enum vb_sg_mode sg;  /* umem IOVA layout */
	uint64_t maxseg;     /* longest SG entry (0: no limit) */
	uint64_t kmem_max;   /* largest kmem buffer */
	uint64_t iova_base;  /* bus address of the first mapping */
	uint64_t seed;       /* guard gaps and layouts */
};

/* ------------------------------------------------------------------ IOMMU */

#define VB_ACC_READ  1u   /* the device may read (H2C data, descriptor fetch) */
#define VB_ACC_WRITE 2u   /* the device may write (C2H data, completion record) */

struct vb_run {
	uint64_t iova;     /* bus address of the first byte */
	uint64_t len;      /* bytes */
	uint8_t *host;     /* where those bytes live in this process */
};

struct vb_map {
	uint64_t win_start, win_len;  /* IOVA window (page multiple), runs lie inside */
	unsigned int access;          /* VB_ACC_* */
	size_t nruns;
	struct vb_run *runs;         /* sorted by iova; relative to 0 until vb_iommu_add */
	uint32_t *page_run;           /* vb_iommu's: page of the window -> run index + 1 (0:
				       * unmapped), for scattered mappings (many runs) */
};

struct vb_padded_mutex {
	_Alignas(VB_CACHELINE) pthread_mutex_t m;   /* one cache line each: no false sharing */
};

struct vb_iommu {
	pthread_mutex_t lock;         /* writers: the table and the allocator */
	atomic_uint writers;          /* a writer waits for (or holds) the reader locks */
	uint64_t gen;                 /* bumped by every table change (all reader locks held) */
	struct vb_padded_mutex reader[VB_IOMMU_READERS]; /* table changes hold all of these too */
	size_t n, cap;                /* the table: mappings sorted by win_start */
	struct vb_map **maps;
	uint64_t base;                /* the first mapping starts here (iova=) */
	uint64_t next;                /* next free IOVA (lock) */
	uint64_t rng;                 /* guard-gap randomness (lock) */
};

int vb_iommu_init(struct vb_iommu *mmu, uint64_t base, uint64_t seed);
void vb_iommu_destroy(struct vb_iommu *mmu);
/* Places m's window (m->runs relative to 0) at fresh IOVAs behind a guard gap and publishes it. */
int vb_iommu_add(struct vb_iommu *mmu, struct vb_map *m);
/* Removes m; on return no engine thread touches its host memory any more. */
void vb_iommu_remove(struct vb_iommu *mmu, struct vb_map *m);
void vb_iommu_reader_lock(struct vb_iommu *mmu, unsigned int reader);
void vb_iommu_reader_unlock(struct vb_iommu *mmu, unsigned int reader);
/* With the reader lock held: the host address of bus address iova and how many of the `len`
 * bytes from there are mapped contiguously with `access` (0 = fault at iova). */
uint64_t vb_iommu_xlat(struct vb_iommu *mmu, uint64_t iova, uint64_t len,
			unsigned int access, uint8_t **host);

/* With the reader lock held: the run of a live mapping with `access` that holds bus address
 * iova (false: a fault at iova). It stays valid while mmu->gen is unchanged. */
struct vb_xrun {
	uint64_t iova, len;           /* the run */
	uint8_t *host;                /* its first byte in this process */
	uint64_t map_len;             /* the size of its mapping's window */
};
bool vb_iommu_run(struct vb_iommu *mmu, uint64_t iova, unsigned int access,
		   struct vb_xrun *out);

/* ------------------------------------------------------------------ the object */

struct vb_kmem_range {
	struct vb_kmem_range *next;
	uintptr_t start, end;
};

/* MSI messages that arrived, per vector, until pd_irq_wait/pd_irq_clear takes them. */
struct vb_events {
	pthread_mutex_t lock;
	uint32_t count[VB_MAX_VECTORS];
	pthread_cond_t cond[VB_MAX_VECTORS];
	uint32_t vectors;            /* granted */
};

struct vb_host {
	struct vb_host_config cfg;
	struct vb_iommu mmu;
	struct vb_events events;
	pthread_mutex_t lock;        /* the live kmem ranges (umem overlap check), IDs */
	uint32_t next_kmem_id, next_umem_id;
	uint64_t umem_count;         /* umem mappings made (layout randomness) */
	struct vb_kmem_range *kmem_ranges;
};

/* Set-up for `vectors` MSI vectors (1..VB_MAX_VECTORS); 0 or -EINVAL. */
int vb_host_init(struct vb_host *h, const struct vb_host_config *cfg, uint32_t vectors);
/* After the last device access: nothing may be mapped any more. */
void vb_host_destroy(struct vb_host *h);

/* The pd_backend_ops of the same names. */
int vb_kmem_alloc(struct vb_host *h, struct pd_backend_kmem *km);
int vb_kmem_free(struct vb_host *h, struct pd_backend_kmem *km);
int vb_umem_map(struct vb_host *h, struct pd_backend_umem *um);
int vb_umem_unmap(struct vb_host *h, struct pd_backend_umem *um);
int vb_dmabuf_import(struct vb_host *h, int fd, struct pd_backend_umem *um);
int vb_irq_wait(struct vb_host *h, unsigned int vec, uint32_t timeout_ms);
int vb_irq_clear(struct vb_host *h, unsigned int vec);

/* One MSI message on vector vec arrived (one out of range is ignored): counts it and wakes
 * its waiters. */
void vb_host_msi(struct vb_host *h, unsigned int vec);

/* A device access of len bytes at bus address addr, as one TLP: copies them from host memory
 * into buf (VB_ACC_READ) or from buf into host memory (VB_ACC_WRITE) if every byte is mapped
 * with that access, else touches nothing and returns false (a fault, as an IOMMU refuses a
 * TLP whole). `reader` is the caller's reader lock (below VB_IOMMU_READERS; one per thread
 * that translates at the same time). */
bool vb_host_dma(struct vb_host *h, unsigned int reader, uint64_t addr, uint8_t *buf,
		 uint32_t len, unsigned int access);

#endif /* VBOARD_HOST_H */
