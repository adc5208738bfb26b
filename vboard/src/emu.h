/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The virtual board: a user-space model of the DMA engine of docs/dma-engine.md behind the
 * libpcidriver backend seam (pcidriver/backend.h). Internal header, not installed.
 *
 * Pieces (one file each):
 *   emu_link.c     the link timing model (presets, TLP cost, pacing waits) and clocks
 *   emu_cfg.c      PCI config space (IDs, BARs, MSI and PCIe capabilities) and its write rules
 *   emu_regs.c     BAR0: register reads/writes with their side effects
 *   emu_irq.c      IRQ_STATUS/IRQ_ENABLE and the MSI messages they send to the host
 *   emu_chan.c     the register side of the channels and the test logic (CONTROL, TAIL,
 *                  RING_*, TEST_CONTROL, seeds, global reset): the writers' state transitions
 *   emu_engine.c   the channel threads (descriptor ring, read-ahead window, completion
 *                  records), feeding and draining the test logic (pattern generator,
 *                  checker, loopback FIFO) and the user-stream model
 *   emu_pool.c     the copy pool: fill/check/copy kernels and the worker threads that run
 *                  the engine's data jobs ("segments") from one queue per channel
 *   emu_backend.c  emu_backend_ops, the backend: open/close, BARs, config space, registers
 * and, shared with the other backends of this library:
 *   host.h         the host object every non-kernel backend embeds: the IOMMU model,
 *                  kmem/umem, MSI event counters (host.c, host_iommu.c, host_mem.c)
 *   options.h      the one options table of "emu:" and "sim:" (options.c)
 *   sim_backend.c  sim_backend_ops: the RTL under a simulator (hdl/cosim, docs/cosim.md);
 *                  it embeds the host object and includes nothing of the model
 *   register.c     vboard_register() (link-time registration, vboard/vboard.h)
 *   plugin.c       the plugin entry libpcidriver loads for "emu:" (shared builds)
 *   sim_plugin.c   ... and for "sim:"
 *
 * Threads: one engine thread per channel (C2H, H2C), plus `workers` copy threads shared by
 * both channels. Callers' threads only touch registers (atomics, short mutexes) and the IOMMU
 * table; they never move data. An engine thread dispatches the data of up to `window=` pieces
 * (of one or several descriptors) to the pool before it completes the oldest one, in order.
 *
 * Locking (lock order, outermost first; no lock is held while sleeping except the one a
 * condition variable releases):
 *   emu_chan.lock        channel state transitions (STATE, RUN, requests, ERROR_CODE, reset);
 *                        C2H's before H2C's where both are needed (TEST_CONTROL writes)
 *   vb_iommu.lock        the IOVA allocator; serialises map/unmap (host.h)
 *   vb_iommu.reader[i]   held by channel thread i while it translates bus addresses and
 *                        while any data it dispatched to the pool is still being copied
 *                        (the workers take no IOMMU lock: they run under the engine's); it
 *                        is dropped, after those copies have finished, before every sleeping
 *                        wait, before a channel lock is taken, when idle and as soon as a
 *                        map/unmap waits for it (vb_iommu.writers). map/unmap hold all of
 *                        them while they change the table. Nobody takes a channel lock while
 *                        holding a reader lock.
 *   emu_test.lock        user-stream model and checker seed/counters (the pattern
 *                        generator's seed is read lock-free)
 *   emu_pool.lock        sleeping and waking of workers and of engines waiting for them
 *   emu_irq.lock         IRQ_STATUS, IRQ_ENABLE, the MSI messages sent
 *   vb_events.lock       the host's per-vector event counters (host.h)
 *   vb_host.lock         the list of live kmem host ranges (umem overlap check), IDs
 *   emu_dev.cfg_lock     config space bytes
 * Register reads are lock-free atomics. The doorbell (TAIL write) is a store plus, only when
 * the engine thread sleeps, a mutex-protected signal.
 */
#ifndef VBOARD_EMU_H
#define VBOARD_EMU_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pcidriver/backend.h"
#include "mprace-spec/engine_spec.h"
#include "doorbell.h"
#include "host.h"
#include "options.h"

#define EMU_MAX_VECTORS VB_MAX_VECTORS
#define EMU_PAGE VB_PAGE
#define EMU_CFG_SIZE 4096u
#define EMU_MEM_BAR 2u                   /* the on-board memory BAR */
#define EMU_CACHELINE VB_CACHELINE

_Static_assert(MP_CH_COUNT <= VB_IOMMU_READERS, "one IOMMU reader lock per channel thread");


/* ------------------------------------------------------------------ time and link model */

uint64_t emu_now_ns(void);
void emu_cpu_relax(void);
/* One step of a spin-wait: a CPU pause, or sched_yield() where the board's threads may share
 * a CPU with the application's (emu_dev.spin_yields), so that a spinning thread gives way. */
void emu_spin_step(bool yields);

struct emu_link {
	bool paced;                       /* any added delay at all (not ideal, or lat/tlp set) */
	double ns_per_byte[MP_CH_COUNT];  /* payload */
	double ns_per_tlp[MP_CH_COUNT];   /* header/framing overhead + tlp= */
	/* the engine's interface (presets; beat_ns 0 otherwise): a TLP takes at least its
	 * descriptor and payload in slots of slot_bytes, a beat of beat_bytes per beat_ns
	 * (docs/virtual-board.md, "Timing model") */
	unsigned int hdr_bytes[MP_CH_COUNT];
	unsigned int slot_bytes[MP_CH_COUNT];
	unsigned int beat_bytes;
	double beat_ns;
	double lat_ns;
};

void emu_link_init(struct emu_link *link, const struct emu_config *cfg);
/* Model time in ns for bytes [from, to) of a transfer starting at bus address addr, in
 * direction ch, with max payload mps: payload time plus one overhead per TLP, TLPs split at
 * MPS-aligned boundaries (so none crosses 4 KiB). */
double emu_link_cost_ns(const struct emu_link *link, unsigned int ch, uint32_t mps,
			uint64_t addr, uint64_t from, uint64_t to);
/* Effective payload rate in bytes/s of large aligned transfers (for docs, info and tests). */
double emu_link_rate(const struct emu_link *link, unsigned int ch, uint32_t mps);

/* ------------------------------------------------------------------ device state */

/* emu_chan.ctl: RUN is the level of CONTROL.RUN; the others are requests to the engine. */
#define EMU_CTL_RUN   1u
#define EMU_CTL_ABORT 2u
#define EMU_CTL_RESET 4u
#define EMU_CTL_QUIT  8u

#define EMU_OBS 64u   /* doorbell observations kept per channel */

/* emu_chan.waiting: what the engine thread sleeps for */
#define EMU_WAIT_ANY 1u   /* doorbells, FIFO data/space and requests */
#define EMU_WAIT_REQ 2u   /* requests (ABORT, RESET, close) only */

struct emu_dev;
struct emu_win;

struct emu_chan {
	struct emu_dev *dev;
	unsigned int idx;            /* MP_CH_C2H or MP_CH_H2C */
	pthread_t thread;
	bool thread_started;

	pthread_mutex_t lock;
	pthread_cond_t wake;         /* the engine thread waits here (lock) */
	pthread_cond_t ack;          /* register writers wait here for the engine (lock) */
	unsigned int ack_waiters;    /* lock */
	atomic_uint_least64_t run_ns;        /* when RUN last went 0 -> 1 (written under lock) */

	/* written by register writers; the engine reads */
	_Alignas(EMU_CACHELINE) atomic_uint tail;
	atomic_uint_least64_t tail_ns;       /* time of the last TAIL write (paced links) */
	atomic_uint ctl;                     /* EMU_CTL_* */
	atomic_uint ring_lo, ring_hi, ring_size, timeout_us;

	/* read on every doorbell, written only when the engine goes to sleep: its own line */
	_Alignas(EMU_CACHELINE) atomic_uint waiting;  /* the engine is (about to be) in a cond wait */

	/* written by the engine (and by reset with the engine stopped); readers load */
	_Alignas(EMU_CACHELINE) atomic_uint head;
	atomic_uint status;                  /* STATE | ERROR_CODE << 8 (BUSY is `inflight`) */
	atomic_uint inflight;                /* a descriptor is being processed */
	atomic_uint_least64_t bytes;
	atomic_uint bytes_hi;                /* latched by BYTES_LO reads */
	atomic_uint gen;                     /* counts resets */
	atomic_uint completing;              /* odd while a record, HEAD and BYTES are written */

	/* engine-thread private */
	_Alignas(EMU_CACHELINE) uint64_t seq;        /* descriptors started since open (faults) */
	struct emu_win *win;                 /* the read-ahead window (emu_engine.c) */
	double cursor_ns;                    /* model time where the link is free again */
	unsigned int seen_gen;
	uint32_t obs_tail[EMU_OBS];          /* doorbell observations: tail value ... */
	uint64_t obs_ns[EMU_OBS];            /* ... and the time of the write that set it */
	unsigned int obs_first, obs_count;
	uint32_t obs_last_tail;
	bool stall_fired, buserr_fired, linkdown_fired;
	bool mmu_held;                       /* holds its IOMMU reader lock (emu_engine.c) */
};

struct emu_fifo {
	uint8_t *buf;
	uint64_t cap;                        /* power of two */
	_Alignas(EMU_CACHELINE) atomic_uint_least64_t wpos;  /* H2C engine writes */
	_Alignas(EMU_CACHELINE) atomic_uint_least64_t rpos;  /* C2H engine writes */
};

struct emu_test {
	pthread_mutex_t lock;        /* seed writes vs. the engines' use of them */
	atomic_uint control;         /* TEST_CONTROL */
	atomic_uint pg_seed, pg_rate;
	atomic_uint_least64_t pg_state;  /* PATGEN_SEED writes << 32 | seed (written under lock) */
	atomic_uint ck_seed;
	uint32_t ck_gen;             /* lock: bumped by CHECK_SEED writes */
	uint32_t src_gen;            /* lock: bumped by the global reset (user-stream model) */
	atomic_uint_least64_t ck_words, ck_errors;
	/* C2H-engine private */
	uint32_t pg_seen_gen;
	uint64_t pg_pos;             /* words produced since the seed write */
	uint32_t user_seen_gen;
	uint64_t user_words;         /* user-stream model: words produced */
	uint64_t user_pkt_off;       /* bytes into the current packet */
	struct emu_fifo fifo;
};

struct emu_irq {
	pthread_mutex_t lock;
	atomic_uint status, enable;
	uint64_t msgs;                       /* MSI messages generated (lock) */
	uint32_t vectors;                    /* granted */
	int64_t drop;                        /* message index to drop, -1 none (lock) */
};

/* ------------------------------------------------------------------ copy pool (emu_pool.c) */

/* A group of segments that completes together: a window entry, or a synchronous job. */
struct emu_done {
	_Alignas(EMU_CACHELINE) atomic_uint pending;   /* segments not finished yet */
	atomic_uint_least64_t bad;                     /* checker mismatches found by them */
};

enum emu_seg_kind { EMU_SEG_FILL, EMU_SEG_FILL_NT, EMU_SEG_CHECK, EMU_SEG_COPY };

/* One piece of work: fill `len` bytes at dst with pattern words w0, w0+1, ..., compare them
 * at src, or copy them from src to dst. */
struct emu_seg {
	atomic_uint len;              /* read before the segment is claimed: atomic */
	unsigned int kind;            /* enum emu_seg_kind */
	uint32_t w0;
	uint8_t *dst;
	const uint8_t *src;
	struct emu_done *done;
};

#define EMU_QSEGS 1024u           /* segments per channel queue (power of two) */

/* One channel's segments: its engine thread writes slots and publishes them (`pub`),
 * workers and the engine itself claim them in order (`claim`, compare-and-swap). A slot is
 * rewritten only after its segment has finished (the engine knows: its group completed). */
struct emu_queue {
	_Alignas(EMU_CACHELINE) atomic_uint_least64_t pub;
	uint64_t pushed;              /* engine private: slots written, not yet published */
	uint64_t free;                /* engine private: every segment below this has finished */
	_Alignas(EMU_CACHELINE) atomic_uint_least64_t claim;
	_Alignas(EMU_CACHELINE) struct emu_seg seg[EMU_QSEGS];
};

struct emu_pool {
	pthread_mutex_t lock;
	pthread_cond_t work;          /* idle workers sleep here */
	pthread_cond_t done;          /* engines waiting for their segments sleep here */
	struct emu_queue q[MP_CH_COUNT];
	unsigned int nthreads, started;
	pthread_t *threads;
	bool inited;
	_Alignas(EMU_CACHELINE) atomic_uint sleepers;  /* workers in (or going to) cond_wait */
	atomic_uint waking;           /* signals not taken up yet (changed under `lock`) */
	atomic_uint done_waiters;     /* engines in (or going to) cond_wait on `done` */
	atomic_bool quit;
	_Alignas(EMU_CACHELINE) atomic_uint idle;      /* workers spinning for work */
};

/* Below this many CPUs the model starts no copy workers (emu_engine.c, auto_workers). */
#define EMU_SMALL_HOST_CPUS 4

struct emu_dev {
	struct vb_host host;          /* bus addresses, kmem/umem, MSI event counters (host.h) */
	struct emu_config cfg;
	struct emu_link link;
	uint64_t t0_ns;
	uint64_t idle_spin_ns;        /* cfg.spin_ns, auto resolved for this host */
	bool spin_yields;             /* fewer usable CPUs than EMU_SMALL_HOST_CPUS: spins yield */
	uint64_t chunk;               /* bytes per paced piece (power of two) */
	uint64_t split_min;           /* a piece is split into parts of at least this size */
	uint64_t win_bytes;           /* data in a channel's read-ahead window (soft limit) */

	/* The link went down (linkdown=): from then on every register and config-space read
	 * returns all-ones, writes are lost, no interrupt and no new descriptor comes. */
	atomic_bool link_down;

	/* BAR0 globals */
	atomic_uint scratch;
	atomic_uint cycle_hi;
	atomic_uint mps_code, mrrs_code;     /* from Device Control, see emu_cfg.c */

	struct emu_chan ch[MP_CH_COUNT];
	struct emu_test test;
	struct emu_irq irq;
	struct emu_pool pool;

	/* on-board memory BAR */
	void *mem;

	/* BAR0 mapped by pd_map_bar: its channels' TAIL words are doorbells (doorbell.h) */
	struct vb_doorbell doorbell;

	/* config space */
	pthread_mutex_t cfg_lock;
	uint8_t cfgspace[EMU_CFG_SIZE];
	uint8_t cfg_wmask[EMU_CFG_SIZE];
};

/* emu_cfg.c */
void emu_cfg_init(struct emu_dev *d);
int emu_cfg_read(struct emu_dev *d, uint32_t off, void *buf, size_t len);
int emu_cfg_write(struct emu_dev *d, uint32_t off, const void *buf, size_t len);
/* The engine supports MPS up to 1024 and MRRS up to 2048 bytes and uses the smaller of that and
 * what the host configured in the PCIe Device Control register (spec section 3). */
#define EMU_MPS_CODE_MAX 3u
#define EMU_MRRS_CODE_MAX 4u
static inline uint32_t emu_mps_code(const struct emu_dev *d)
{
	uint32_t c = atomic_load_explicit(&d->mps_code, memory_order_relaxed);

	return c < EMU_MPS_CODE_MAX ? c : EMU_MPS_CODE_MAX;
}

static inline uint32_t emu_mrrs_code(const struct emu_dev *d)
{
	uint32_t c = atomic_load_explicit(&d->mrrs_code, memory_order_relaxed);

	return c < EMU_MRRS_CODE_MAX ? c : EMU_MRRS_CODE_MAX;
}

/* The max payload size in use by the engine. */
static inline uint32_t emu_mps(const struct emu_dev *d)
{
	return 128u << emu_mps_code(d);
}

/* emu_regs.c */
uint32_t emu_reg_read(void *ctx, uint64_t off);
void emu_reg_write(void *ctx, uint64_t off, uint32_t val);

/* emu_irq.c */
void emu_irq_init(struct emu_irq *irq, uint32_t vectors, int64_t drop);
void emu_irq_destroy(struct emu_irq *irq);
void emu_irq_raise(struct emu_dev *d, uint32_t bit);
/* emu_irq_raise with *reg = val stored between setting the IRQ_STATUS bit and sending the
 * MSI: whoever reads the new register value finds the bit set, and a handler woken by the
 * MSI reads the new value. */
void emu_irq_raise_status(struct emu_dev *d, uint32_t bit, atomic_uint *reg, uint32_t val);
void emu_irq_reset(struct emu_dev *d);
uint32_t emu_irq_read_status(struct emu_dev *d);            /* IRQ_STATUS: after its messages */
void emu_irq_write_status(struct emu_dev *d, uint32_t v);  /* IRQ_STATUS: write 1 to clear */
void emu_irq_write_enable(struct emu_dev *d, uint32_t v);

/* emu_pool.c */
int emu_pool_start(struct emu_dev *d);       /* worker threads */
void emu_pool_stop(struct emu_dev *d);       /* joins them (the engines have stopped) */
/* Engine side, channel ch only: */
struct emu_seg *emu_pool_slot(struct emu_dev *d, unsigned int ch);  /* next free slot */
void emu_pool_push(struct emu_dev *d, unsigned int ch);              /* it is written */
void emu_pool_publish(struct emu_dev *d, unsigned int ch);           /* workers may take them */
unsigned int emu_pool_room(struct emu_dev *d, unsigned int ch);      /* free slots */
/* Runs unclaimed segments: those below queue position `own` (that the caller waits for), later
 * ones only while no worker is free to take them. False if it found none. */
bool emu_pool_help(struct emu_dev *d, unsigned int ch, uint64_t own);
/* Waits until `done` has no segments pending, those below `own` being its (helping). */
void emu_pool_wait(struct emu_dev *d, unsigned int ch, struct emu_done *done, uint64_t own);
/* Runs one segment on the calling thread; returns the mismatches (EMU_SEG_CHECK). */
uint64_t emu_seg_run(unsigned int kind, uint8_t *dst, const uint8_t *src, uint64_t len,
		     uint32_t w0);

/* emu_engine.c */
int emu_engine_start(struct emu_dev *d);     /* threads; call once after init */
void emu_engine_stop(struct emu_dev *d);     /* joins every thread, even mid-transfer */

/* emu_chan.c */
void emu_chan_init(struct emu_dev *d, unsigned int idx);
void emu_chan_destroy(struct emu_chan *ch);
int emu_test_init(struct emu_test *t, uint64_t fifo);
void emu_test_destroy(struct emu_test *t);
/* Register-side operations of emu_regs.c that need the engine's cooperation. */
void emu_chan_write_control(struct emu_chan *ch, uint32_t val);
void emu_chan_write_tail(struct emu_chan *ch, uint32_t val);
void emu_chan_write_ring(struct emu_chan *ch, uint64_t off, uint32_t val);
void emu_chan_wake(struct emu_chan *ch);
void emu_global_reset(struct emu_dev *d);
void emu_test_write(struct emu_dev *d, uint64_t off, uint32_t val);
/* Shared with the engine thread (emu_engine.c). */
uint32_t emu_chan_state(struct emu_chan *ch);                 /* STATUS.STATE */
void emu_chan_kick(struct emu_chan *ch);   /* wakes it if it waits for doorbells or the FIFO */
void emu_chan_set_status_locked(struct emu_chan *ch, uint32_t state, uint32_t code);
/* ERROR with `code` (RUN and a pending ABORT cleared, IRQ_STATUS.ERROR raised); nothing may be
 * in flight any more. */
void emu_chan_error_locked(struct emu_chan *ch, uint32_t code);
void emu_chan_reset_locked(struct emu_chan *ch);              /* RESET, nothing in flight */

static inline uint64_t emu_fifo_avail(struct emu_fifo *f)
{
	return atomic_load(&f->wpos) - atomic_load_explicit(&f->rpos, memory_order_relaxed);
}

static inline uint64_t emu_fifo_space(struct emu_fifo *f)
{
	return f->cap - (atomic_load_explicit(&f->wpos, memory_order_relaxed) - atomic_load(&f->rpos));
}

#endif /* VBOARD_EMU_H */
