// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The engine of the virtual board: one thread per channel walks the descriptor ring as
 * docs/dma-engine.md sections 4-7 describe, moving data through the IOMMU (host_iommu.c) with
 * the copy pool (emu_pool.c), paced by the link model (emu_link.c), to and from the test logic
 * (pattern generator, checker, loopback FIFO) and the user-stream model.
 *
 * Channel state machine and who changes what (all transitions under emu_chan.lock):
 *   IDLE -> RUNNING      a register write of CONTROL.RUN = 1
 *   RUNNING -> IDLE      RUN = 0 with nothing in flight (the writer), after the descriptors in
 *                        flight (the engine), or a descriptor with CTRL.STOP (the engine)
 *   * -> ERROR           a failing descriptor (the engine) or ABORT (the writer when nothing is
 *                        in flight, else the engine at its next check point)
 *   * -> IDLE            RESET (the writer when nothing is in flight, else the engine)
 * `inflight` is the engine's claim (BUSY): it is set while the read-ahead window holds work.
 * The engine sets it (or keeps it from the descriptor before) and then re-reads `ctl` before it
 * starts a descriptor with an empty window; a writer changes `ctl` and then reads `inflight`
 * (both sequentially consistent), so either the engine sees the request before it starts, or
 * the writer sees the claim and leaves the request to the engine, waiting on `ack` for ABORT
 * and RESET so that they have taken effect when the register write returns. The engine clears
 * the claim whenever it stops: no work, RUN = 0, a request, ERROR, STOP.
 *
 * The read-ahead window (struct emu_win). Descriptors are cut into pieces at `chunk`-aligned
 * bus addresses (about 200 us of link time each). The engine *dispatches* a piece - translates
 * it, hands its data to the pool as segments, advances the pattern generator / checker /
 * user-stream position and the link model's cursor - and moves on to the next piece, of the
 * same or the next descriptor (read-ahead), up to `window=` pieces or d->win_bytes of data.
 * It *retires* the oldest piece once its data has been moved (the pool's count, acquire) and
 * the link model says the link has carried it; the last piece of a descriptor writes its
 * completion record (release), then HEAD, BYTES and the interrupt: strictly in order. Each
 * piece is paced from its own dispatch time exactly as without read-ahead (cursor = max(cursor,
 * dispatch - 10 us) + its link time), so copying in parallel shortens no descriptor's link
 * time; it only takes the host CPU out of the critical path.
 *
 * Everything that can go wrong with a piece is known when it is dispatched (translation,
 * injected bus errors): such a piece is marked to fail the descriptor after its data, and
 * nothing behind it is dispatched. Descriptors that fail their checks, wait for something
 * outside the engine (loopback FIFO, a source without data, an injected stall) are not read
 * ahead: they are started only with an empty window, at HEAD, and run the serial path (one
 * piece at a time, the engine waiting with timeouts), as are fetch and ring errors.
 * A request (ABORT, RESET, close) ends the window: the data in flight finishes, the pieces not
 * completed yet - of the descriptor at HEAD and of those read ahead - are forgotten (their data
 * may have been written, as posted writes would be; no record, no BYTES, and the sources go
 * back to where they began); ABORT reports HEAD's completed pieces in its record. RUN = 0 stops the read-ahead; the descriptors
 * already started complete.
 *
 * The register side of all this (what a write of CONTROL or TAIL does when nothing is in
 * flight) is in emu_chan.c.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"
#include "mprace-spec/pattern.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the virtual board assumes a little-endian host (descriptors and patterns are LE)"
#endif

#define SLACK_NS 10000.0          /* a transfer may catch up this much of the engine's own lag */
#define SLEEP_MIN_NS 80000u       /* longer waits sleep; shorter ones spin */
#define SLEEP_EARLY_NS 40000u     /* wake this much before a paced deadline, spin the rest */

#define CTRL_DEFINED (MP_DESC_CTRL_IRQ_MASK | MP_DESC_CTRL_EOP_MASK | MP_DESC_CTRL_STOP_MASK)

#define WIN_MAX 256u              /* largest window= */
#define WIN_RUNS 4u               /* host ranges order_writes keeps apart */
#define PUBLISH_BYTES (64u << 10) /* segments are published to the pool in batches this large */

static inline uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* The most segments one piece or serial job is split into (split_parts). */
static inline unsigned int max_parts(const struct emu_dev *d)
{
	return 2 * (d->pool.started + 1u);
}

/* ================================================================== engine state */

/* A translation cache: the last run found, valid while the IOMMU table is unchanged. */
struct xcache {
	bool valid;
	uint64_t gen;
	struct vb_xrun r;
};

/* The C2H source position before a piece (restored for pieces that never complete). */
struct src_pos {
	uint32_t pg_gen;
	uint64_t pg_pos;
	uint32_t user_gen;
	uint64_t user_words, user_pkt_off;
};

/* The descriptor being started or dispatched. */
struct xdesc {
	uint32_t idx;         /* descriptor number (HEAD when it completes) */
	uint64_t slot;        /* bus address of its ring slot */
	uint64_t addr;
	uint32_t len, ctrl;
	uint32_t code;        /* its checks: MP_ERR_* */
	bool fetched;         /* the fetch worked (a failure writes a record) */
	uint32_t src;         /* C2H source or H2C sink (TEST_CONTROL) */
	uint64_t seq;         /* descriptors started before it (faults) */
	bool fired;           /* it fired buserr=...:N */
	uint64_t fault_at;    /* injected bus error at this byte offset (UINT64_MAX: none) */
	bool stall;           /* injected stall (serial path) */
	uint32_t mps;
	uint32_t done;        /* bytes dispatched (window) or moved (serial) */
	/* serial path */
	uint32_t err;         /* MP_ERR_* */
	bool eop;             /* C2H: the source ended a packet */
	bool intr;            /* a request (ABORT/RESET/close) stopped it */
	uint64_t progress;    /* time of the last progress (0: not taken yet) */
};

/* A piece in the window. */
struct went {
	uint32_t idx, ctrl;   /* its descriptor */
	uint64_t slot;
	uint32_t n;           /* data bytes */
	uint32_t err;         /* MP_ERR_*: the descriptor fails after this piece's data */
	bool last;            /* the descriptor ends with it (record, HEAD, BYTES, IRQ, STOP) */
	bool eop;
	bool check;           /* H2C into the checker: counted when retired */
	uint32_t ck_gen;      /* ... if CHECK_SEED was not written since it was dispatched */
	double end_ns;        /* the link has carried it (model time; 0: no wait) */
	uint64_t seg_end;     /* the pool queue position after its segments */
	struct src_pos pos;   /* C2H: the source before it */
	uint64_t seq;         /* its descriptor's number and whether it fired a bus error */
	bool fired;
};

/* C2H: a range of host memory that pieces still in the window write (see order_writes) */
struct host_run {
	uintptr_t lo, hi;
	uint64_t seg_end;     /* the pool queue position after its newest piece's segments */
};

struct emu_win {
	struct emu_done done[WIN_MAX + 1];   /* per entry; [WIN_MAX]: serial-path jobs */
	struct went e[WIN_MAX];
	unsigned int first, count, max;
	unsigned int settled;                /* the oldest entries whose data is known moved */
	struct host_run runs[WIN_RUNS];
	unsigned int nruns;
	uint64_t bytes;                      /* data in the window */
	uint64_t unpub;                      /* bytes of segments pushed, not yet published */
	bool cur;                            /* x has pieces left to dispatch */
	struct xdesc x;
	uint32_t next;                       /* number of the next descriptor to fetch */
	bool barrier;                        /* fetch nothing more until the window is empty */
	uint32_t desc_done;                  /* bytes of HEAD's descriptor retired */
	bool ck_valid;                       /* H2C checker: position after the dispatched ... */
	uint32_t ck_gen;                     /* ... pieces, for this CHECK_SEED generation */
	uint64_t ck_words;
	struct xcache fetch, record, data;   /* translations */
	uint64_t now;                        /* the last clock read (paced links): never late */
	bool now_fresh;                      /* ... taken by start_desc for the first piece */
};

static void drain(struct emu_chan *ch);

/* ================================================================== engine: the IOMMU */

/*
 * The engine thread's hold on its IOMMU reader lock. It is taken for a translation and kept
 * while data the engine dispatched is being copied (the workers run under it) and across
 * descriptors that follow back to back, so that streaming costs no lock round trips; it is
 * dropped - after the copies in flight have finished - before every sleeping wait, before any
 * channel lock is taken (no thread takes a channel lock while holding a reader lock), when
 * idle and when a map/unmap waits for it (vb_iommu.writers).
 */
static void mmu_hold(struct emu_chan *ch)
{
	if (!ch->mmu_held) {
		vb_iommu_reader_lock(&ch->dev->host.mmu, ch->idx);
		ch->mmu_held = true;
	}
}

static void mmu_drop(struct emu_chan *ch)
{
	if (ch->mmu_held) {
		drain(ch);
		ch->mmu_held = false;
		vb_iommu_reader_unlock(&ch->dev->host.mmu, ch->idx);
	}
}

/* Translates [iova, iova + len) with `access` through cache c (reader lock held): the host
 * address and how many bytes from there are mapped contiguously (0 = fault at iova). */
static uint64_t xlat(struct emu_chan *ch, struct xcache *c, uint64_t iova, uint64_t len,
		     unsigned int access, uint8_t **host, uint64_t *map_len)
{
	struct vb_iommu *mmu = &ch->dev->host.mmu;
	uint64_t off;

	mmu_hold(ch);
	if (!c->valid || c->gen != mmu->gen || iova - c->r.iova >= c->r.len) {
		c->valid = vb_iommu_run(mmu, iova, access, &c->r);
		c->gen = mmu->gen;
		if (!c->valid)
			return 0;
	}
	off = iova - c->r.iova;
	*host = c->r.host + off;
	if (map_len)
		*map_len = c->r.map_len;
	return min64(c->r.len - off, len);
}

/* ================================================================== engine: waiting */

static inline uint32_t pending_req(struct emu_chan *ch)
{
	return atomic_load_explicit(&ch->ctl, memory_order_relaxed) &
	       (EMU_CTL_ABORT | EMU_CTL_RESET | EMU_CTL_QUIT);
}

/* Sleeps on `wake` until the absolute CLOCK_MONOTONIC time `until` (0: no deadline). */
static void sleep_locked(struct emu_chan *ch, uint64_t until)
{
	struct timespec ts;

	if (!until) {
		pthread_cond_wait(&ch->wake, &ch->lock);
		return;
	}
	ts.tv_sec = (time_t)(until / 1000000000ull);
	ts.tv_nsec = (long)(until % 1000000000ull);
	pthread_cond_timedwait(&ch->wake, &ch->lock, &ts);
}

/* Waits until model time t (ns, CLOCK_MONOTONIC); false if a request interrupted it. */
static bool pace_until(struct emu_chan *ch, double t)
{
	uint64_t until = t > 0 ? (uint64_t)t : 0, now;

	for (;;) {
		now = emu_now_ns();
		if (now >= until)
			return true;
		if (pending_req(ch))
			return false;
		if (until - now > SLEEP_MIN_NS) {
			pthread_mutex_lock(&ch->lock);
			atomic_store(&ch->waiting, EMU_WAIT_REQ);
			if (!pending_req(ch))
				sleep_locked(ch, until - SLEEP_EARLY_NS);
			atomic_store(&ch->waiting, 0);
			pthread_mutex_unlock(&ch->lock);
		} else {
			/* one pause per clock read: a pause is ~140 cycles on recent x86 */
			emu_spin_step(ch->dev->spin_yields);
		}
	}
}

enum wait_for { WAIT_NEVER, WAIT_FIFO_DATA, WAIT_FIFO_SPACE };

static bool wait_ready(struct emu_chan *ch, enum wait_for what)
{
	struct emu_fifo *f = &ch->dev->test.fifo;

	switch (what) {
	case WAIT_FIFO_DATA:
		return emu_fifo_avail(f) != 0;
	case WAIT_FIFO_SPACE:
		return emu_fifo_space(f) != 0;
	default:
		return false;
	}
}

enum wait_result { WAIT_OK, WAIT_INTR, WAIT_TIMEOUT };

/*
 * Waits until `what` is ready, a request comes, or (with timeouts) TIMEOUT_US passed since
 * *progress (the time the descriptor last moved data; set on the first wait). TIMEOUT_US is
 * re-read on every wake-up, so a write to it re-arms the deadline.
 */
static enum wait_result wait_for(struct emu_chan *ch, enum wait_for what, bool timeouts,
				 uint64_t *progress)
{
	uint64_t now, deadline;
	uint32_t tmo;

	for (;;) {
		if (pending_req(ch))
			return WAIT_INTR;
		if (wait_ready(ch, what))
			return WAIT_OK;
		now = emu_now_ns();
		if (!*progress)
			*progress = now;
		tmo = timeouts ? atomic_load(&ch->timeout_us) : 0;
		deadline = tmo ? *progress + (uint64_t)tmo * 1000u : 0;
		if (deadline && now >= deadline)
			return WAIT_TIMEOUT;
		pthread_mutex_lock(&ch->lock);
		atomic_store(&ch->waiting, EMU_WAIT_ANY);
		if (!pending_req(ch) && !wait_ready(ch, what))
			sleep_locked(ch, deadline);
		atomic_store(&ch->waiting, 0);
		pthread_mutex_unlock(&ch->lock);
	}
}

/* Nothing to do: spin for `spin=` (a doorbell right after a completion costs no wake-up),
 * then sleep until a register write or close wakes us. */
static bool has_work(struct emu_chan *ch)
{
	uint32_t c = atomic_load(&ch->ctl);

	if (c & ~EMU_CTL_RUN)
		return true;
	if (c & EMU_CTL_RUN)
		return atomic_load(&ch->tail) != atomic_load_explicit(&ch->head, memory_order_relaxed);
	return emu_chan_state(ch) == MP_STATE_RUNNING;
}

static void idle_wait(struct emu_chan *ch)
{
	uint64_t spin = ch->dev->idle_spin_ns, t0;
	unsigned int i;

	if (spin) {
		t0 = emu_now_ns();
		do {
			for (i = 0; i < 64; i++) {
				if (has_work(ch))
					return;
				if (ch->dev->spin_yields) {
					sched_yield();   /* and read the clock: a yield may last long */
					break;
				}
				emu_cpu_relax();
			}
		} while (emu_now_ns() - t0 < spin);
	}
	pthread_mutex_lock(&ch->lock);
	atomic_store(&ch->waiting, EMU_WAIT_ANY);
	if (!has_work(ch))
		pthread_cond_wait(&ch->wake, &ch->lock);
	atomic_store(&ch->waiting, 0);
	pthread_mutex_unlock(&ch->lock);
}

/* ================================================================== engine: descriptors */

/* Writes the completion record: RESULT_BYTES and RESULT_STATUS in one 8-byte release store,
 * after all data of the descriptor. Returns false on an IOMMU fault. */
static bool write_record(struct emu_chan *ch, uint64_t slot, uint32_t bytes, uint32_t status)
{
	uint8_t *p;

	if (xlat(ch, &ch->win->record, slot + MP_DESC_RESULT_BYTES, 8, VB_ACC_WRITE, &p,
		 NULL) != 8)
		return false;
	/*
	 * For ThreadSanitizer only: it pairs release and acquire per address, so a reader that
	 * polls RESULT_STATUS alone with a 32-bit acquire load would not see the 64-bit store
	 * below as a release. This release store of the value software left there (0: words 4-5
	 * are cleared before queueing) publishes the data at that address first; it changes
	 * nothing a reader can observe.
	 */
	__atomic_store_n((uint32_t *)(void *)(p + 4), 0, __ATOMIC_RELEASE);
	__atomic_store_n((uint64_t *)(void *)p, (uint64_t)bytes | (uint64_t)status << 32,
			 __ATOMIC_RELEASE);
	return true;
}

static uint32_t error_status(uint32_t code)
{
	return MP_DESC_RESULT_STATUS_DONE_MASK | MP_DESC_RESULT_STATUS_ERROR_MASK |
	       (code << MP_DESC_RESULT_STATUS_ERROR_CODE_SHIFT);
}

/* The descriptor failed: record (unless its fetch failed), then ERROR. Nothing may be left in
 * the window behind it. */
static void fail(struct emu_chan *ch, uint32_t code, bool record, uint64_t slot, uint32_t bytes)
{
	if (record)
		write_record(ch, slot, bytes, error_status(code));
	mmu_drop(ch);
	pthread_mutex_lock(&ch->lock);
	emu_chan_error_locked(ch, code);
	pthread_mutex_unlock(&ch->lock);
}

/* Descriptor idx completed with `bytes` moved: record, HEAD and BYTES, interrupt, STOP.
 * False if the record could not be written (the caller fails the channel). */
static bool complete(struct emu_chan *ch, uint32_t idx, uint64_t slot, uint32_t ctrl,
		     uint32_t bytes, bool eop)
{
	struct emu_dev *d = ch->dev;
	uint32_t status = MP_DESC_RESULT_STATUS_DONE_MASK | (eop ? MP_DESC_RESULT_STATUS_EOP_MASK : 0);

	/*
	 * A register read does not pass the engine's earlier writes (PCIe: a read completion does
	 * not pass posted writes): whoever sees this record and then reads HEAD, BYTES or STATUS
	 * must see them count it. Register reads wait while `completing` is odd (emu_regs.c).
	 */
	atomic_fetch_add_explicit(&ch->completing, 1, memory_order_relaxed);
	if (!write_record(ch, slot, bytes, status)) {
		atomic_fetch_add_explicit(&ch->completing, 1, memory_order_release);
		return false;
	}
	atomic_store_explicit(&ch->head, idx + 1, memory_order_release);
	/* only this thread changes BYTES while a descriptor is in flight: no RMW needed */
	atomic_store_explicit(&ch->bytes,
			      atomic_load_explicit(&ch->bytes, memory_order_relaxed) + bytes,
			      memory_order_release);
	if (ctrl & MP_DESC_CTRL_IRQ_MASK)
		emu_irq_raise(d, ch->idx == MP_CH_C2H ? MP_IRQ_C2H_DONE_BIT : MP_IRQ_H2C_DONE_BIT);
	if (ctrl & MP_DESC_CTRL_STOP_MASK) {   /* nothing was read ahead behind it */
		mmu_drop(ch);
		pthread_mutex_lock(&ch->lock);
		atomic_fetch_and(&ch->ctl, ~EMU_CTL_RUN);
		if (emu_chan_state(ch) == MP_STATE_RUNNING) {
			atomic_store(&ch->inflight, 0);   /* IDLE and not BUSY together */
			emu_chan_set_status_locked(ch, MP_STATE_IDLE, 0);
		}
		pthread_mutex_unlock(&ch->lock);
	}
	atomic_fetch_add_explicit(&ch->completing, 1, memory_order_release);
	return true;
}

/* Doorbell bookkeeping for the latency model: when did descriptor idx become available? */
static double available_ns(struct emu_chan *ch, uint32_t idx, uint64_t now)
{
	uint32_t tail = atomic_load(&ch->tail);
	uint64_t t = atomic_load_explicit(&ch->tail_ns, memory_order_relaxed), run;
	unsigned int gen = atomic_load_explicit(&ch->gen, memory_order_relaxed), last;

	if (gen != ch->seen_gen) {
		ch->seen_gen = gen;
		ch->obs_count = 0;
		ch->obs_last_tail = 0;
	}
	if (tail != ch->obs_last_tail && ch->obs_count < EMU_OBS) {
		last = (ch->obs_first + ch->obs_count++) % EMU_OBS;
		ch->obs_tail[last] = tail;
		ch->obs_ns[last] = t;
		ch->obs_last_tail = tail;
	}
	/* drop observations that do not cover idx (tail <= idx, free-running) */
	while (ch->obs_count && (int32_t)(ch->obs_tail[ch->obs_first] - idx) <= 0) {
		ch->obs_first = (ch->obs_first + 1) % EMU_OBS;
		ch->obs_count--;
	}
	t = ch->obs_count ? ch->obs_ns[ch->obs_first] : now;
	run = atomic_load_explicit(&ch->run_ns, memory_order_relaxed);
	return (double)(t > run ? t : run);
}

/* Time a piece starts (before it is copied), for pace(): 0 when nothing is paced. */
static double piece_start(struct emu_chan *ch, uint32_t rate_mbps)
{
	return ch->dev->link.paced || rate_mbps ? (double)emu_now_ns() : 0;
}

/* Advances the link cursor by the model time of bytes [from, to) of x, which began at t0
 * (piece_start, before its data was copied), from t0 - SLACK at the earliest: the copy
 * happens inside the modeled time and idle time is never banked. Returns the cursor (the
 * time the link has carried the piece), 0 when nothing is paced. */
static double advance_cursor(struct emu_chan *ch, const struct xdesc *x, uint64_t from,
			     uint64_t to, uint32_t rate_mbps, double t0)
{
	struct emu_dev *d = ch->dev;
	double dur;

	if (!d->link.paced && !rate_mbps)
		return 0;
	if (ch->cursor_ns < t0 - SLACK_NS)
		ch->cursor_ns = t0 - SLACK_NS;     /* never bank idle time */
	dur = emu_link_cost_ns(&d->link, ch->idx, x->mps, x->addr, from, to);
	if (rate_mbps && (double)(to - from) * 1000.0 / rate_mbps > dur)
		dur = (double)(to - from) * 1000.0 / rate_mbps;
	ch->cursor_ns += dur;
	return ch->cursor_ns;
}

/* Bytes of the next piece of x: up to the next `chunk`-aligned bus address. */
static uint64_t piece_len(struct emu_dev *d, const struct xdesc *x)
{
	uint64_t a = x->addr + x->done;

	return min64(x->len - x->done, d->chunk - (a & (d->chunk - 1)));
}

static bool fault_peek(const struct emu_fault *f, bool fired, uint64_t seq)
{
	return f->mode == EMU_FAULT_ALWAYS || (f->mode == EMU_FAULT_ONCE && !fired && seq == f->n);
}

static bool fault_hits(struct emu_fault *f, bool *fired, uint64_t seq)
{
	if (!fault_peek(f, *fired, seq))
		return false;
	if (f->mode == EMU_FAULT_ONCE)
		*fired = true;
	return true;
}

/* Ring configuration, fetch and checks of descriptor idx (HEAD = head) with `tail` queued;
 * the result in x->code and x->fetched. Also notes the C2H source / H2C sink it will use. */
static void fetch_desc(struct emu_chan *ch, uint32_t idx, uint32_t tail, uint32_t head,
		       struct xdesc *x)
{
	struct emu_dev *d = ch->dev;
	uint64_t base = (uint64_t)atomic_load(&ch->ring_hi) << 32 | atomic_load(&ch->ring_lo);
	uint32_t size = atomic_load(&ch->ring_size), w[4], tc;
	uint8_t *p;

	memset(x, 0, sizeof(*x));
	x->idx = idx;
	/* 1. ring configuration */
	if ((base & (MP_ENGINE_DESC_SIZE - 1)) || size < MP_ENGINE_RING_MIN_ENTRIES ||
	    size > MP_ENGINE_RING_MAX_ENTRIES || (size & (size - 1)) || tail - head > size) {
		x->code = MP_ERR_RING_CONFIG;
		return;
	}
	/* 2. fetch: a failed fetch leaves no record */
	x->slot = base + (uint64_t)MP_ENGINE_DESC_SIZE * (idx & (size - 1));
	if (xlat(ch, &ch->win->fetch, x->slot, MP_ENGINE_DESC_SIZE, VB_ACC_READ, &p, NULL) !=
	    MP_ENGINE_DESC_SIZE) {
		x->code = MP_ERR_BUS_ERROR;
		return;
	}
	memcpy(w, p, sizeof(w));
	x->fetched = true;
	/* 3. descriptor checks, in the order of the spec */
	x->addr = (uint64_t)w[MP_DESC_ADDR_HI / 4] << 32 | w[MP_DESC_ADDR_LO / 4];
	x->len = w[MP_DESC_LEN / 4] & MP_DESC_LEN_BYTES_MASK;
	x->ctrl = w[MP_DESC_CTRL / 4];
	if ((w[MP_DESC_LEN / 4] & ~MP_DESC_LEN_BYTES_MASK) || (x->ctrl & ~CTRL_DEFINED))
		x->code = MP_ERR_DESC_RESERVED;
	else if (x->len == 0 || x->len > MP_ENGINE_MAX_DESC_LEN)
		x->code = MP_ERR_DESC_LENGTH;
	else if ((x->addr | x->len) & (MP_ENGINE_GRANULE - 1))
		x->code = MP_ERR_DESC_ALIGN;
	tc = atomic_load(&d->test.control);   /* constant while a channel is busy */
	if (ch->idx == MP_CH_C2H) {
		x->src = (tc & MP_REG_TEST_CONTROL_C2H_SOURCE_MASK) >> MP_REG_TEST_CONTROL_C2H_SOURCE_SHIFT;
		if (x->src == 3)   /* reserved: acts like 0 */
			x->src = MP_C2H_SOURCE_USER;
		if (x->src == MP_C2H_SOURCE_USER && d->cfg.user == EMU_USER_NONE)
			x->src = 3;   /* no user logic: no data */
	} else {
		x->src = (tc & MP_REG_TEST_CONTROL_H2C_SINK_MASK) >> MP_REG_TEST_CONTROL_H2C_SINK_SHIFT;
		if (x->src == 3)
			x->src = MP_H2C_SINK_USER;
	}
}

/* Descriptors that wait for something outside the engine run the serial path. */
static bool needs_serial(struct emu_chan *ch, const struct xdesc *x, uint64_t seq)
{
	if (fault_peek(&ch->dev->cfg.stall[ch->idx], ch->stall_fired, seq) ||
	    fault_peek(&ch->dev->cfg.linkdown[ch->idx], ch->linkdown_fired, seq) ||
	    atomic_load_explicit(&ch->dev->link_down, memory_order_relaxed))
		return true;
	if (ch->idx == MP_CH_C2H)
		return x->src == MP_C2H_SOURCE_LOOPBACK || x->src == 3;
	return x->src == MP_H2C_SINK_LOOPBACK;
}

/* Starts descriptor x (fetched, checked, x->seq taken): injected faults, latency model. */
static void start_desc(struct emu_chan *ch, struct xdesc *x)
{
	struct emu_dev *d = ch->dev;
	bool fired = ch->buserr_fired;
	uint64_t now;
	double start;

	x->fault_at = fault_hits(&d->cfg.buserr[ch->idx], &ch->buserr_fired, x->seq) ?
		      (x->len / 2) & ~(uint64_t)(MP_ENGINE_GRANULE - 1) : UINT64_MAX;
	x->fired = ch->buserr_fired && !fired;
	x->stall = fault_hits(&d->cfg.stall[ch->idx], &ch->stall_fired, x->seq);
	if (fault_hits(&d->cfg.linkdown[ch->idx], &ch->linkdown_fired, x->seq))
		atomic_store(&d->link_down, true);
	if (atomic_load(&d->link_down))
		x->stall = true;   /* nothing more crosses the link */
	x->mps = emu_mps(d);
	x->done = 0;
	if (d->link.paced) {
		now = emu_now_ns();
		ch->win->now = now;
		ch->win->now_fresh = true;   /* the first piece starts now too */
		start = available_ns(ch, x->idx, now) + d->link.lat_ns;
		if (start < (double)now - SLACK_NS)
			start = (double)now - SLACK_NS;
		if (ch->cursor_ns < start)
			ch->cursor_ns = start;
	}
}

/* ================================================================== engine: serial path */

/* The number of segments n bytes are handed to the pool in: parts of at least split_min,
 * up to two per thread that copies (the workers and the engine), so that workers that start
 * at different times (woken, or finishing other work) still share a large piece evenly. */
static uint64_t split_parts(const struct emu_dev *d, uint64_t n)
{
	uint64_t p = n / d->split_min;

	if (!d->pool.started || !p)
		return 1;
	return min64(p, max_parts(d));
}

/* Runs one job on the pool and waits for it (the window is empty): split into parts of at
 * least split_min across the workers when it is large, the engine working on it too. */
static uint64_t pool_sync(struct emu_chan *ch, unsigned int kind, uint8_t *dst,
			  const uint8_t *src, uint64_t n)
{
	struct emu_dev *d = ch->dev;
	struct emu_done *done = &ch->win->done[WIN_MAX];
	struct emu_queue *q = &d->pool.q[ch->idx];
	uint64_t parts, part, off;
	struct emu_seg *s;
	unsigned int k = 0;

	if (!n)
		return 0;
	parts = split_parts(d, n);
	if (parts <= 1)
		return emu_seg_run(kind, dst, src, n, 0);
	part = ((n + parts - 1) / parts + 63) & ~(uint64_t)63;
	atomic_store_explicit(&done->bad, 0, memory_order_relaxed);
	for (off = 0; off < n; off += part, k++) {
		s = emu_pool_slot(d, ch->idx);
		s->kind = kind;
		s->w0 = 0;
		s->dst = dst + off;
		s->src = src + off;
		s->done = done;
		atomic_store_explicit(&s->len, (unsigned int)min64(part, n - off), memory_order_relaxed);
		emu_pool_push(d, ch->idx);
	}
	atomic_store_explicit(&done->pending, k, memory_order_relaxed);
	emu_pool_publish(d, ch->idx);
	emu_pool_wait(d, ch->idx, done, q->pushed);
	q->free = q->pushed;
	return atomic_load_explicit(&done->bad, memory_order_relaxed);
}

/* The piece [from, to) of x began at t0: advances the link cursor and waits for it. False if
 * a request interrupted the wait. */
static bool pace(struct emu_chan *ch, struct xdesc *x, uint64_t from, uint64_t to, double t0)
{
	double until = advance_cursor(ch, x, from, to, 0, t0);

	if (until <= 0)
		return true;
	mmu_drop(ch);
	return pace_until(ch, until);
}

/* Waits out an injected stall or a source without data; sets x->err or x->intr. */
static void stall_forever(struct emu_chan *ch, struct xdesc *x)
{
	mmu_drop(ch);
	/* after the link went down not even the engine's TIMEOUT_US record reaches the host */
	switch (wait_for(ch, WAIT_NEVER, !atomic_load(&ch->dev->link_down), &x->progress)) {
	case WAIT_TIMEOUT:
		x->err = MP_ERR_TIMEOUT;
		break;
	default:
		x->intr = true;
		break;
	}
}

/* The serial path's data: C2H from the loopback FIFO, H2C into it; or a stall (a C2H source
 * that has no data, read completions that never come). */
static void move_fifo(struct emu_chan *ch, struct xdesc *x)
{
	struct emu_dev *d = ch->dev;
	struct emu_fifo *f = &d->test.fifo;
	const bool c2h = ch->idx == MP_CH_C2H;
	atomic_uint_least64_t *pos = c2h ? &f->rpos : &f->wpos;
	uint64_t want, n, at, first;
	uint8_t *host, *fifo;
	double t0;

	while (x->done < x->len) {
		if (pending_req(ch)) {
			x->intr = true;
			return;
		}
		want = piece_len(d, x);
		if (x->fault_at <= x->done) {
			x->err = MP_ERR_BUS_ERROR;
			return;
		}
		want = min64(want, x->fault_at - x->done);
		if (x->stall || (c2h && x->src != MP_C2H_SOURCE_LOOPBACK)) {
			stall_forever(ch, x);
			return;
		}
		/* C2H waits for data under the completion timeout; a full FIFO stalls H2C, which is
		 * back-pressure, not a completion timeout */
		mmu_drop(ch);
		switch (wait_for(ch, c2h ? WAIT_FIFO_DATA : WAIT_FIFO_SPACE, c2h, &x->progress)) {
		case WAIT_OK:
			break;
		case WAIT_TIMEOUT:
			x->err = MP_ERR_TIMEOUT;
			return;
		default:
			x->intr = true;
			return;
		}
		want = min64(want, c2h ? emu_fifo_avail(f) : emu_fifo_space(f));
		t0 = piece_start(ch, 0);
		/* the engine moves whole 32-bit words: a mapping ending inside one faults there */
		n = xlat(ch, &ch->win->data, x->addr + x->done, want,
			 c2h ? VB_ACC_WRITE : VB_ACC_READ, &host, NULL) &
		    ~(uint64_t)(MP_ENGINE_GRANULE - 1);
		if (!n) {
			x->err = MP_ERR_BUS_ERROR;
			return;
		}
		at = atomic_load_explicit(pos, memory_order_relaxed) & (f->cap - 1);
		fifo = f->buf + at;
		first = min64(n, f->cap - at);
		if (c2h) {
			pool_sync(ch, EMU_SEG_COPY, host, fifo, first);
			pool_sync(ch, EMU_SEG_COPY, host + first, f->buf, n - first);
		} else {
			pool_sync(ch, EMU_SEG_COPY, fifo, host, first);
			pool_sync(ch, EMU_SEG_COPY, f->buf, host + first, n - first);
		}
		atomic_fetch_add(pos, n);
		mmu_drop(ch);
		emu_chan_kick(&d->ch[c2h ? MP_CH_H2C : MP_CH_C2H]);
		x->progress = 0;
		if (!pace(ch, x, x->done, x->done + n, t0)) {
			x->done += (uint32_t)n;
			x->intr = true;
			return;
		}
		x->done += (uint32_t)n;
		if (n < want) {   /* ran past the end of a mapping */
			x->err = MP_ERR_BUS_ERROR;
			return;
		}
	}
}

/* A started descriptor on the serial path (the window is empty): data, then completion. */
static void run_serial(struct emu_chan *ch, struct xdesc *x)
{
	move_fifo(ch, x);
	if (x->intr) {
		/* ABORT ends the descriptor with a record; RESET and close forget it */
		mmu_drop(ch);
		pthread_mutex_lock(&ch->lock);
		if ((atomic_load(&ch->ctl) & (EMU_CTL_ABORT | EMU_CTL_RESET | EMU_CTL_QUIT)) ==
		    EMU_CTL_ABORT) {
			write_record(ch, x->slot, x->done, error_status(MP_ERR_ABORTED));
			mmu_drop(ch);
			emu_chan_error_locked(ch, MP_ERR_ABORTED);
		}
		pthread_mutex_unlock(&ch->lock);
		return;
	}
	if (x->err) {
		fail(ch, x->err, true, x->slot, x->done);
		return;
	}
	if (!complete(ch, x->idx, x->slot, x->ctrl, x->done, x->eop))
		fail(ch, MP_ERR_BUS_ERROR, false, 0, 0);
}

/* ================================================================== engine: the window */

static inline struct went *oldest(struct emu_win *w)
{
	return &w->e[w->first];
}

static inline unsigned int entry_at(const struct emu_win *w, unsigned int k)
{
	return (w->first + k) % WIN_MAX;
}

/* Publishes the segments pushed so far: the workers may take them. */
static void flush(struct emu_chan *ch, struct emu_win *w)
{
	if (w->unpub) {
		w->unpub = 0;
		emu_pool_publish(ch->dev, ch->idx);
	}
}

/* Waits until every segment the channel dispatched has finished. */
static void drain(struct emu_chan *ch)
{
	struct emu_win *w = ch->win;
	unsigned int k;

	flush(ch, w);
	for (k = w->settled; k < w->count; k++)
		emu_pool_wait(ch->dev, ch->idx, &w->done[entry_at(w, k)],
			      w->e[entry_at(w, k)].seg_end);
	w->settled = w->count;
}

/*
 * Host memory receives C2H writes in descriptor order, as from the link: a piece that
 * overlaps memory an earlier piece in the window is still writing waits for the window's data
 * (descriptors queued into one buffer would otherwise leave a mix of them, and race). Checking
 * every piece in the window would cost too much for small pieces; a transfer's pieces go up
 * through its buffer, so they are kept as a few runs of ascending pieces, each one range.
 * Returns the run the piece [lo, lo + n) joins; the caller sets its seg_end after moving it.
 */
static struct host_run *order_writes(struct emu_chan *ch, struct emu_win *w, uintptr_t lo,
				     uint64_t n)
{
	uint64_t retired = ch->dev->pool.q[ch->idx].free;
	uintptr_t hi = lo + n;
	struct host_run *r;
	unsigned int i, j;

	for (i = j = 0; i < w->nruns; i++)   /* forget runs whose pieces have all retired */
		if (w->runs[i].seg_end > retired)
			w->runs[j++] = w->runs[i];
	w->nruns = j;
	for (i = 0; i < w->nruns; i++)
		if (lo < w->runs[i].hi && w->runs[i].lo < hi) {
			drain(ch);
			w->nruns = 0;
			break;
		}
	r = w->nruns ? &w->runs[w->nruns - 1] : NULL;
	if (r && lo >= r->hi) {
		r->hi = hi;
		return r;
	}
	if (w->nruns == WIN_RUNS) {
		drain(ch);
		w->nruns = 0;
	}
	r = &w->runs[w->nruns++];
	r->lo = lo;
	r->hi = hi;
	return r;
}

static void save_pos(struct emu_test *t, struct src_pos *p)
{
	p->pg_gen = t->pg_seen_gen;
	p->pg_pos = t->pg_pos;
	p->user_gen = t->user_seen_gen;
	p->user_words = t->user_words;
	p->user_pkt_off = t->user_pkt_off;
}

static void restore_pos(struct emu_test *t, const struct src_pos *p)
{
	t->pg_seen_gen = p->pg_gen;
	t->pg_pos = p->pg_pos;
	t->user_seen_gen = p->user_gen;
	t->user_words = p->user_words;
	t->user_pkt_off = p->user_pkt_off;
}

/* Hands n bytes at dst/src to the pool as the segments of window entry k: one segment, or
 * parts of at least split_min for the workers when the piece is large. A small piece alone
 * in the window with nothing queued behind it the engine moves itself, at once: handing it
 * to a worker would only add a wake-up and a cache miss to its latency. */
static void move_piece(struct emu_chan *ch, struct emu_win *w, unsigned int k,
		       unsigned int kind, uint8_t *dst, const uint8_t *src, uint64_t n, uint32_t w0)
{
	struct emu_dev *d = ch->dev;
	struct emu_done *done = &w->done[k];
	uint64_t parts, part, off;
	struct emu_seg *s;
	unsigned int segs = 0;

	if (!w->count && n < 2 * d->split_min && w->x.done + n == w->x.len &&
	    atomic_load_explicit(&ch->tail, memory_order_relaxed) == w->next) {
		atomic_store_explicit(&done->bad, emu_seg_run(kind, dst, src, n, w0),
				      memory_order_relaxed);
		return;
	}
	parts = split_parts(d, n);
	part = parts > 1 ? ((n + parts - 1) / parts + 63) & ~(uint64_t)63 : n;
	for (off = 0; off < n; off += part, segs++) {
		s = emu_pool_slot(d, ch->idx);
		s->kind = kind;
		s->w0 = mp_pattern_word(w0, off / 4);
		s->dst = dst ? dst + off : NULL;
		s->src = src ? src + off : NULL;
		s->done = done;
		atomic_store_explicit(&s->len, (unsigned int)min64(part, n - off), memory_order_relaxed);
		emu_pool_push(d, ch->idx);
	}
	atomic_store_explicit(&done->bad, 0, memory_order_relaxed);
	atomic_store_explicit(&done->pending, segs, memory_order_relaxed);
	w->unpub += n;
}

/* Dispatches the next piece of w->x into a new window entry. */
static void dispatch_piece(struct emu_chan *ch, struct emu_win *w)
{
	struct emu_dev *d = ch->dev;
	struct emu_test *t = &d->test;
	struct xdesc *x = &w->x;
	unsigned int k = entry_at(w, w->count);
	struct went *e = &w->e[k];
	bool c2h = ch->idx == MP_CH_C2H;
	uint64_t want, n = 0, map_len = 0, pg;
	uint32_t w0 = 0, rate = 0;
	uint8_t *host = NULL;
	double t0;

	e->idx = x->idx;
	e->ctrl = x->ctrl;
	e->slot = x->slot;
	e->err = 0;
	e->eop = false;
	e->check = !c2h && x->src == MP_H2C_SINK_CHECKER;
	e->end_ns = 0;
	e->seq = x->seq;
	e->fired = x->fired;
	atomic_store_explicit(&w->done[k].pending, 0, memory_order_relaxed);
	if (c2h)
		save_pos(t, &e->pos);
	want = piece_len(d, x);
	if (x->fault_at <= x->done) {   /* an injected bus error in the middle of the data */
		e->err = MP_ERR_BUS_ERROR;
		goto out;
	}
	want = min64(want, x->fault_at - x->done);

	/* where the stream stands: the words of this piece follow those dispatched before */
	if (c2h && x->src == MP_C2H_SOURCE_PATTERN) {
		/* lock-free: the seed and its write count in one word */
		pg = atomic_load_explicit(&t->pg_state, memory_order_acquire);
		if ((uint32_t)(pg >> 32) != t->pg_seen_gen) {
			t->pg_seen_gen = (uint32_t)(pg >> 32);
			t->pg_pos = 0;
		}
		w0 = mp_pattern_word((uint32_t)pg, t->pg_pos);
		rate = atomic_load_explicit(&t->pg_rate, memory_order_relaxed);
	} else if (c2h) {   /* the user stream */
		pthread_mutex_lock(&t->lock);
		if (t->user_seen_gen != t->src_gen) {
			t->user_seen_gen = t->src_gen;
			t->user_words = 0;
			t->user_pkt_off = 0;
		}
		pthread_mutex_unlock(&t->lock);
		w0 = (uint32_t)t->user_words;
		if (d->cfg.user == EMU_USER_PACKETS)
			want = min64(want, d->cfg.user_pkt - t->user_pkt_off);
	} else if (e->check) {
		pthread_mutex_lock(&t->lock);
		if (!w->ck_valid || w->ck_gen != t->ck_gen) {
			w->ck_valid = true;
			w->ck_gen = t->ck_gen;
			w->ck_words = atomic_load(&t->ck_words);
		}
		w0 = mp_pattern_word(atomic_load(&t->ck_seed), w->ck_words);
		pthread_mutex_unlock(&t->lock);
		e->ck_gen = w->ck_gen;
	}

	t0 = 0;
	if (d->link.paced || rate) {   /* (piece_start, sharing start_desc's clock read) */
		if (!w->now_fresh)
			w->now = emu_now_ns();
		t0 = (double)w->now;
	}
	w->now_fresh = false;
	/* the engine moves whole 32-bit words: a mapping ending inside one faults there */
	n = xlat(ch, &w->data, x->addr + x->done, want, c2h ? VB_ACC_WRITE : VB_ACC_READ,
		 &host, &map_len) & ~(uint64_t)(MP_ENGINE_GRANULE - 1);
	if (n && c2h) {
		struct host_run *run = order_writes(ch, w, (uintptr_t)host, n);

		/* a buffer larger than the caches is not read back from them: bypass them */
		move_piece(ch, w, k, map_len >= d->cfg.nt_min ? EMU_SEG_FILL_NT : EMU_SEG_FILL, host,
			   NULL, n, w0);
		run->seg_end = d->pool.q[ch->idx].pushed;
		if (x->src == MP_C2H_SOURCE_PATTERN) {
			t->pg_pos += n / 4;
		} else {
			t->user_words += n / 4;
			if (d->cfg.user == EMU_USER_PACKETS) {
				t->user_pkt_off += n;
				if (t->user_pkt_off == d->cfg.user_pkt) {
					t->user_pkt_off = 0;
					e->eop = true;
				}
			}
		}
	} else if (n && e->check) {
		move_piece(ch, w, k, EMU_SEG_CHECK, NULL, host, n, w0);
		w->ck_words += n / 4;
	}
	/* (the user stream and undefined sinks take H2C data and drop it: nothing to move) */
	if (n < want)   /* unmapped, or ran past the end of a mapping */
		e->err = MP_ERR_BUS_ERROR;
	if (n)
		e->end_ns = advance_cursor(ch, x, x->done, x->done + n, rate, t0);
out:
	e->n = (uint32_t)n;
	x->done += (uint32_t)n;
	e->last = e->err || e->eop || x->done == x->len;
	e->seg_end = d->pool.q[ch->idx].pushed;
	w->bytes += n;
	w->count++;
	if (e->last) {
		w->cur = false;
		if (e->err)
			w->barrier = true;   /* nothing behind a failing descriptor */
	}
}

/* The checker counts a retired piece, unless CHECK_SEED was written since its dispatch. */
static void count_checked(struct emu_dev *d, const struct went *e, uint64_t bad)
{
	struct emu_test *t = &d->test;

	pthread_mutex_lock(&t->lock);
	if (e->ck_gen == t->ck_gen) {
		atomic_fetch_add(&t->ck_words, e->n / 4);
		atomic_fetch_add(&t->ck_errors, bad);
	}
	pthread_mutex_unlock(&t->lock);
}

/* Removes the oldest entry, whose data has been moved: it counts as moved. */
static struct went pop(struct emu_chan *ch, struct emu_win *w)
{
	struct went e = *oldest(w);

	if (e.check && e.n)
		count_checked(ch->dev, &e, atomic_load_explicit(&w->done[w->first].bad,
								 memory_order_relaxed));
	w->desc_done += e.n;
	w->bytes -= e.n;
	ch->dev->pool.q[ch->idx].free = e.seg_end;
	w->first = (w->first + 1) % WIN_MAX;
	w->count--;
	if (w->settled)
		w->settled--;
	return e;
}

/*
 * Ends the window early (a request, or a failure): lets the data in flight finish and forgets
 * every piece not retired yet - their data may have been written, as posted writes would be,
 * but they write no record and count no BYTES, and the C2H source, the checker's position,
 * the fault counters and the link cursor go back to where the first of them began. With
 * keep_head the descriptor at HEAD stays started (it gets the ABORT record): returns the bytes
 * of its pieces retired before, its ring slot in *slot. The window is then empty.
 */
static uint32_t end_window(struct emu_chan *ch, struct emu_win *w, bool keep_head,
			   uint64_t *slot)
{
	struct emu_dev *d = ch->dev;
	uint32_t head_idx, bytes;
	struct went *e;
	bool head;

	drain(ch);
	*slot = w->count ? oldest(w)->slot : w->x.slot;
	head_idx = w->count ? oldest(w)->idx : w->x.idx;
	if (w->count) {
		e = oldest(w);
		if (ch->idx == MP_CH_C2H)
			restore_pos(&d->test, &e->pos);
		/* descriptors started after HEAD are forgotten; HEAD keeps its number */
		ch->seq = keep_head && e->idx == head_idx ? e->seq + 1 : e->seq;
		for (; w->count; w->count--, w->first = (w->first + 1) % WIN_MAX) {
			head = keep_head && w->e[w->first].idx == head_idx;
			if (w->e[w->first].fired && !head)
				ch->buserr_fired = false;
		}
		if (ch->cursor_ns > (double)emu_now_ns())
			ch->cursor_ns = (double)emu_now_ns();   /* their link time is not spent */
	} else if (w->cur && w->x.idx != head_idx) {
		ch->seq = w->x.seq;   /* started, nothing dispatched yet */
		if (w->x.fired)
			ch->buserr_fired = false;
	}
	d->pool.q[ch->idx].free = d->pool.q[ch->idx].pushed;
	w->settled = 0;
	w->nruns = 0;
	w->bytes = 0;
	w->cur = false;
	w->barrier = false;
	w->ck_valid = false;
	bytes = w->desc_done;
	w->desc_done = 0;
	return bytes;
}

/* Retires the oldest entry: its data has moved and the link has carried it. */
static void retire(struct emu_chan *ch, struct emu_win *w)
{
	struct went e = pop(ch, w);
	uint64_t slot;
	uint32_t bytes;

	if (!e.last)
		return;
	bytes = w->desc_done;
	w->desc_done = 0;
	if (e.err) {
		end_window(ch, w, false, &slot);   /* (nothing was dispatched behind it) */
		fail(ch, e.err, true, e.slot, bytes);
	} else if (!complete(ch, e.idx, e.slot, e.ctrl, bytes, e.eop)) {
		end_window(ch, w, false, &slot);
		fail(ch, MP_ERR_BUS_ERROR, false, 0, 0);
	}
}

/* Room for one more piece (of any descriptor). */
static bool window_room(struct emu_chan *ch, const struct emu_win *w)
{
	struct emu_dev *d = ch->dev;

	return w->count < w->max && (!w->count || w->bytes < d->win_bytes) &&
	       emu_pool_room(d, ch->idx) >= max_parts(d);
}

/* A descriptor behind those in the window may be fetched. */
static bool may_fetch(struct emu_chan *ch, const struct emu_win *w, uint32_t c)
{
	return !w->cur && !w->barrier && (c & EMU_CTL_RUN) &&
	       atomic_load_explicit(&ch->tail, memory_order_acquire) != w->next;
}

/* Fetches descriptor w->next behind the window and dispatches its first piece; a descriptor
 * that fails its checks or needs the serial path stops the read-ahead instead (it is fetched
 * again at HEAD once the window is empty). */
static void read_ahead(struct emu_chan *ch, struct emu_win *w)
{
	struct xdesc *x = &w->x;

	fetch_desc(ch, w->next, atomic_load_explicit(&ch->tail, memory_order_acquire),
		   atomic_load_explicit(&ch->head, memory_order_relaxed), x);
	if (x->code || needs_serial(ch, x, ch->seq)) {
		w->barrier = true;
		return;
	}
	x->seq = ch->seq++;
	start_desc(ch, x);
	w->cur = true;
	w->next++;
	if (x->ctrl & MP_DESC_CTRL_STOP_MASK)
		w->barrier = true;   /* RUN is cleared after it */
	dispatch_piece(ch, w);
}

/* Starts descriptor `head` with an empty window. */
static void start_head(struct emu_chan *ch, struct emu_win *w, uint32_t head, uint32_t tail)
{
	struct xdesc *x = &w->x;

	w->barrier = false;
	w->next = head;
	fetch_desc(ch, head, tail, head, x);
	if (!x->fetched) {
		fail(ch, x->code, false, 0, 0);
		return;
	}
	x->seq = ch->seq++;
	if (x->code) {
		fail(ch, x->code, true, x->slot, 0);
		return;
	}
	if (needs_serial(ch, x, x->seq)) {
		start_desc(ch, x);
		run_serial(ch, x);
		return;
	}
	start_desc(ch, x);
	w->cur = true;
	w->next = head + 1;
	if (x->ctrl & MP_DESC_CTRL_STOP_MASK)
		w->barrier = true;
	dispatch_piece(ch, w);
}

/*
 * The oldest entry is not ready: wait for its data (helping the pool), or for the link model,
 * moving the data of later pieces meanwhile, returning early for a request or when a new
 * doorbell gives read-ahead work. Long waits sleep (after the data in flight has finished, the
 * IOMMU reader lock dropped); short ones spin.
 */
static void wait_window(struct emu_chan *ch, struct emu_win *w, uint32_t c)
{
	struct emu_done *done = &w->done[w->first];
	uint64_t until = (uint64_t)oldest(w)->end_ns, now;
	bool more = window_room(ch, w) && !w->cur && !w->barrier && (c & EMU_CTL_RUN);

	flush(ch, w);
	if (atomic_load_explicit(&done->pending, memory_order_acquire)) {
		emu_pool_wait(ch->dev, ch->idx, done, oldest(w)->seg_end);
		return;
	}
	for (;;) {
		now = w->now = emu_now_ns();
		if (now >= until || pending_req(ch) || (more && may_fetch(ch, w, c)))
			return;
		if (atomic_load_explicit(&ch->dev->host.mmu.writers, memory_order_relaxed))
			mmu_drop(ch);
		else if (ch->mmu_held && emu_pool_help(ch->dev, ch->idx, 0))
			continue;   /* rather than spin, move the data of later pieces */
		if (until - now > SLEEP_MIN_NS) {
			mmu_drop(ch);
			pthread_mutex_lock(&ch->lock);
			atomic_store(&ch->waiting, more ? EMU_WAIT_ANY : EMU_WAIT_REQ);
			if (!pending_req(ch) && !(more && may_fetch(ch, w, c)))
				sleep_locked(ch, until - SLEEP_EARLY_NS);
			atomic_store(&ch->waiting, 0);
			pthread_mutex_unlock(&ch->lock);
		} else {
			/* one pause per clock read: a pause is ~140 cycles on recent x86 */
			emu_spin_step(ch->dev->spin_yields);
		}
	}
}

/* One step with work in the window: retire the oldest entry if it is ready, else dispatch
 * more, else wait for the oldest. Segments are published when 64 KiB have gathered or the
 * engine turns to something else (fewer hand-offs: workers poll the queues). */
static void window_step(struct emu_chan *ch, struct emu_win *w, uint32_t c)
{
	struct went *e;

	if (atomic_load_explicit(&ch->dev->host.mmu.writers, memory_order_relaxed))
		mmu_drop(ch);   /* a map/unmap is waiting for us */
	if (w->count) {
		e = oldest(w);
		/* (the clock is read only when the last reading does not show it done yet) */
		if (!atomic_load_explicit(&w->done[w->first].pending, memory_order_acquire) &&
		    (e->end_ns <= (double)w->now || e->end_ns <= (double)(w->now = emu_now_ns()))) {
			flush(ch, w);
			retire(ch, w);
			return;
		}
	}
	if (window_room(ch, w) && (w->cur || may_fetch(ch, w, c))) {
		if (w->cur)
			dispatch_piece(ch, w);
		else
			read_ahead(ch, w);
		if (w->unpub >= PUBLISH_BYTES ||
		    !(window_room(ch, w) && (w->cur || may_fetch(ch, w, c))))
			flush(ch, w);
		return;
	}
	if (w->count)
		wait_window(ch, w, c);
}

static bool abort_only(struct emu_chan *ch)
{
	return (atomic_load(&ch->ctl) & (EMU_CTL_ABORT | EMU_CTL_RESET | EMU_CTL_QUIT)) ==
	       EMU_CTL_ABORT;
}

/*
 * A request (ABORT, RESET, close) with work in the window. ABORT ends the descriptor at HEAD
 * (the oldest one started and not completed) with a record that says ABORTED and the bytes of
 * its pieces completed (retired) so far, and enters ERROR; RESET and close forget it. Either
 * way the pieces not retired yet and the descriptors read ahead behind HEAD are forgotten
 * (end_window): a descriptor that software re-queues after the recovery gets the same data.
 */
static void interrupt_window(struct emu_chan *ch, struct emu_win *w)
{
	uint64_t slot;
	uint32_t bytes = end_window(ch, w, true, &slot);

	mmu_drop(ch);
	pthread_mutex_lock(&ch->lock);
	if (abort_only(ch)) {
		write_record(ch, slot, bytes, error_status(MP_ERR_ABORTED));
		mmu_drop(ch);
		emu_chan_error_locked(ch, MP_ERR_ABORTED);
	}
	pthread_mutex_unlock(&ch->lock);
}

/* Requests with nothing in flight; returns true when the thread must exit. */
static bool handle_requests(struct emu_chan *ch)
{
	uint32_t c;
	bool quit = false;

	pthread_mutex_lock(&ch->lock);
	c = atomic_load(&ch->ctl);
	if (c & EMU_CTL_QUIT) {
		atomic_fetch_and(&ch->ctl, ~(EMU_CTL_ABORT | EMU_CTL_RESET));
		quit = true;
	} else if (c & EMU_CTL_RESET) {
		emu_chan_reset_locked(ch);
	} else if (c & EMU_CTL_ABORT) {
		if (emu_chan_state(ch) != MP_STATE_ERROR)
			emu_chan_error_locked(ch, MP_ERR_ABORTED);
		else
			atomic_fetch_and(&ch->ctl, ~EMU_CTL_ABORT);
	}
	pthread_cond_broadcast(&ch->ack);
	pthread_mutex_unlock(&ch->lock);
	return quit;
}

static void *chan_main(void *arg)
{
	struct emu_chan *ch = arg;
	struct emu_win *w = ch->win;
	uint32_t c, head, tail;

	/* paced sleeps wake within ~1 µs of their deadline instead of the default 50 µs */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	for (;;) {
		c = atomic_load(&ch->ctl);
		if (c & ~EMU_CTL_RUN) {
			if (w->count || w->cur)
				interrupt_window(ch, w);
			mmu_drop(ch);
			atomic_store(&ch->inflight, 0);
			if (handle_requests(ch))
				break;
			continue;
		}
		if (w->count || w->cur) {
			window_step(ch, w, c);
			continue;
		}
		/* nothing in flight */
		if (!(c & EMU_CTL_RUN)) {
			mmu_drop(ch);
			atomic_store(&ch->inflight, 0);
			if (emu_chan_state(ch) == MP_STATE_RUNNING) {
				/* halted: RUN = 0 arrived while descriptors were in flight */
				pthread_mutex_lock(&ch->lock);
				if (!(atomic_load(&ch->ctl) & EMU_CTL_RUN) &&
				    emu_chan_state(ch) == MP_STATE_RUNNING)
					emu_chan_set_status_locked(ch, MP_STATE_IDLE, 0);
				pthread_mutex_unlock(&ch->lock);
				continue;
			}
			idle_wait(ch);
			continue;
		}
		head = atomic_load_explicit(&ch->head, memory_order_relaxed);
		tail = atomic_load_explicit(&ch->tail, memory_order_acquire);
		if (head == tail) {
			mmu_drop(ch);
			atomic_store(&ch->inflight, 0);
			idle_wait(ch);
			continue;
		}
		/* claim (still claimed when descriptors follow back to back), then re-check the
		 * requests: see the protocol at the top of this file */
		if (!atomic_load_explicit(&ch->inflight, memory_order_relaxed))
			atomic_store(&ch->inflight, 1);
		if (atomic_load(&ch->ctl) != EMU_CTL_RUN)
			continue;   /* the loop clears the claim and handles it */
		head = atomic_load_explicit(&ch->head, memory_order_relaxed);
		tail = atomic_load_explicit(&ch->tail, memory_order_acquire);
		if (head != tail)
			start_head(ch, w, head, tail);
	}
	mmu_drop(ch);
	return NULL;
}

/* ================================================================== start/stop */

/* Copy threads for both channels: enough that each direction sustains the link's rate with
 * small descriptors (about 6 GB/s of pattern fill or compare per thread; the engine thread
 * only dispatches, and copies when it would otherwise wait), none for links the engine
 * thread keeps up with alone, one per channel for `ideal`; at most one less than the CPUs.
 * None below EMU_SMALL_HOST_CPUS: there a worker, the engine thread and the application's
 * poller are more spinning threads than CPUs, and they run each other off the CPU (curves
 * dipped by half between neighbouring sizes on 2 CPUs); the engine thread alone keeps a
 * Gen3 x8 link's rate. */
static unsigned int auto_workers(const struct emu_dev *d, long ncpu)
{
	double rate = 0, r;
	unsigned int ch, per;

	if (ncpu < EMU_SMALL_HOST_CPUS)
		return 0;
	for (ch = 0; ch < MP_CH_COUNT; ch++) {
		r = emu_link_rate(&d->link, ch, emu_mps(d));
		if (r > rate)
			rate = r;
	}
	if (rate <= 0)
		per = 1;
	else if (rate < 2.5e9)
		per = 0;
	else
		per = (unsigned int)((rate + 6e9 - 1) / 6e9);
	if (per * MP_CH_COUNT > (unsigned int)ncpu - 1)
		return (unsigned int)ncpu - 1;
	return per * MP_CH_COUNT;
}

/* The idle spin of the channel threads: `spin=`, or for `auto` 20 µs, and 200 µs below
 * EMU_SMALL_HOST_CPUS: there an application that copies between transfers (a chunk or
 * double buffer, 13 µs for 128 KiB) outlasted 20 µs, and each doorbell then waited for a
 * sleeping thread to wake (tens of microseconds on a busy machine; throughput fell from
 * 5.2 to 2.0 GB/s between 64 KiB and 128 KiB). A spinning idle thread costs no more there
 * than the copy workers the model no longer starts. */
static uint64_t idle_spin(const struct emu_dev *d, long ncpu)
{
	if (d->cfg.spin_ns >= 0)
		return (uint64_t)d->cfg.spin_ns;
	return ncpu < EMU_SMALL_HOST_CPUS ? 200000 : 20000;
}

/* The CPUs the board's threads may run on: those of the thread that opens the board (they
 * inherit its affinity), else all online ones. */
static long usable_cpus(void)
{
	cpu_set_t set;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0 &&
	    CPU_COUNT(&set) < n)
		n = CPU_COUNT(&set);
	return n < 1 ? 1 : n;
}

int emu_engine_start(struct emu_dev *d)
{
	long ncpu = usable_cpus();
	unsigned int i;
	int ret;

	d->idle_spin_ns = idle_spin(d, ncpu);
	/* With fewer CPUs than spinning threads, a spin that does not yield holds off the very
	 * thread it waits for (on one CPU every hand-off waited out the 200 us idle spin). */
	d->spin_yields = ncpu < EMU_SMALL_HOST_CPUS;
	d->pool.nthreads = d->cfg.workers < 0 ? auto_workers(d, ncpu) : (unsigned int)d->cfg.workers;
	ret = emu_pool_start(d);
	for (i = 0; i < MP_CH_COUNT && !ret; i++) {
		d->ch[i].win = aligned_alloc(EMU_CACHELINE, sizeof(struct emu_win));
		if (!d->ch[i].win) {
			ret = -ENOMEM;
			break;
		}
		memset(d->ch[i].win, 0, sizeof(struct emu_win));
		d->ch[i].win->max = d->cfg.window;
	}
	for (i = 0; i < MP_CH_COUNT && !ret; i++) {
		ret = -pthread_create(&d->ch[i].thread, NULL, chan_main, &d->ch[i]);
		d->ch[i].thread_started = !ret;
		/* named for top -H and debuggers: the board's threads among the application's */
		if (!ret)
			pthread_setname_np(d->ch[i].thread, i == MP_CH_C2H ? "emu-c2h" : "emu-h2c");
	}
	if (ret)
		emu_engine_stop(d);
	return ret;
}

void emu_engine_stop(struct emu_dev *d)
{
	unsigned int i;

	for (i = 0; i < MP_CH_COUNT; i++) {
		struct emu_chan *ch = &d->ch[i];

		if (!ch->thread_started)
			continue;
		pthread_mutex_lock(&ch->lock);
		atomic_fetch_or(&ch->ctl, EMU_CTL_QUIT);
		pthread_cond_broadcast(&ch->wake);
		pthread_mutex_unlock(&ch->lock);
		pthread_join(ch->thread, NULL);
		ch->thread_started = false;
	}
	emu_pool_stop(d);
	for (i = 0; i < MP_CH_COUNT; i++) {
		free(d->ch[i].win);
		d->ch[i].win = NULL;
	}
}
