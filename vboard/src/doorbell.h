/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * BAR0 mapped as memory on a board whose registers are function calls (emu:, sim:): the
 * doorbell page of docs/dma-engine.md ("Doorbells from other bus masters"). A real board's
 * BAR0 is device memory that a GPU (or any master that maps it) writes a channel's TAIL in
 * directly; here pd_map_bar(0) returns a page of process memory in which each channel's TAIL
 * is live, and a thread of this object watches those words and forwards every change as a
 * TAIL register write. Nothing else in the page is live: the identification registers (MAGIC,
 * VERSION, CAPS, CLOCK_MHZ) hold what they read when the page was mapped, TAIL what was last
 * written by either way in, every other word 0; writes to other words are ignored.
 *
 * The forwarding thread spins while doorbells come (for 200 us after the last one; yielding the
 * CPU between looks on hosts of fewer than 4 CPUs), then polls every 20 us, and after 20 ms
 * without a doorbell every 1 ms: a doorbell rung through the page is seen at once, within
 * about 50 us (the sleep's own slack), or after a long silence within about 1 ms.
 *
 * The backend's own register write path calls vb_doorbell_note() after each write so that a
 * TAIL written through pd_regs, or cleared by a channel or global RESET, is also the page's:
 * the thread then forwards only what a master wrote into the page itself.
 */
#ifndef VBOARD_DOORBELL_H
#define VBOARD_DOORBELL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mprace-spec/engine_spec.h"

struct vb_doorbell {
	/* the backend's register file (what pd_regs calls) */
	uint32_t (*read32)(void *ctx, uint64_t off);
	void (*write32)(void *ctx, uint64_t off, uint32_t v);
	void *ctx;

	atomic_bool mapped;           /* read without the lock by vb_doorbell_note */
	pthread_mutex_t lock;         /* forwarding against vb_doorbell_note; seen[] */
	_Atomic uint32_t *page;       /* MP_ENGINE_BAR0_SIZE bytes, shared with the mapper */
	uint32_t seen[MP_CH_COUNT];   /* each channel's TAIL as last forwarded or noted */
	pthread_t thread;
	atomic_bool stop;
	bool spin_yields;             /* few CPUs: the spinning thread yields between looks */
};

/* Before first use. */
void vb_doorbell_init(struct vb_doorbell *db, uint32_t (*read32)(void *, uint64_t),
		      void (*write32)(void *, uint64_t, uint32_t), void *ctx);
/* The page (creating it and its thread on the first call); 0 or -ENOMEM/-errno. */
int vb_doorbell_map(struct vb_doorbell *db, void **addr, size_t *size);
/* Stops the thread and frees the page (nothing if not mapped). */
void vb_doorbell_unmap(struct vb_doorbell *db);
/* After a register write through the backend's accessors: keeps the page's TAIL words equal
 * to the registers'. Costs one relaxed load while nothing is mapped. */
void vb_doorbell_note(struct vb_doorbell *db, uint64_t off, uint32_t v);

#endif /* VBOARD_DOORBELL_H */
