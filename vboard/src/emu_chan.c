// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The register side of the virtual board's channels and its test logic: what a write of a
 * channel register (CONTROL, TAIL, RING_*), of the test registers (TEST_CONTROL, PATGEN_*,
 * CHECK_SEED) or of the global RESET does, and the state transitions a writer makes itself
 * when the channel has nothing in flight. With work in flight it leaves ABORT and RESET to
 * the engine thread and waits until they have taken effect: see the protocol at the top of
 * emu_engine.c.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "emu.h"

/* ================================================================== test logic */

int emu_test_init(struct emu_test *t, uint64_t fifo)
{
	memset(t, 0, sizeof(*t));
	t->fifo.buf = mmap(NULL, fifo, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->fifo.buf == MAP_FAILED) {
		t->fifo.buf = NULL;
		return -ENOMEM;
	}
	t->fifo.cap = fifo;
	pthread_mutex_init(&t->lock, NULL);
	atomic_init(&t->control, 0);
	atomic_init(&t->pg_seed, 0);
	atomic_init(&t->pg_state, 0);
	atomic_init(&t->pg_rate, 0);
	atomic_init(&t->ck_seed, 0);
	atomic_init(&t->ck_words, 0);
	atomic_init(&t->ck_errors, 0);
	atomic_init(&t->fifo.wpos, 0);
	atomic_init(&t->fifo.rpos, 0);
	return 0;
}

void emu_test_destroy(struct emu_test *t)
{
	if (t->fifo.buf) {
		munmap(t->fifo.buf, t->fifo.cap);
		pthread_mutex_destroy(&t->lock);
	}
}

uint32_t emu_chan_state(struct emu_chan *ch)
{
	return atomic_load_explicit(&ch->status, memory_order_relaxed) & MP_CHREG_STATUS_STATE_MASK;
}

void emu_test_write(struct emu_dev *d, uint64_t off, uint32_t v)
{
	struct emu_test *t = &d->test;

	switch (off) {
	case MP_REG_TEST_CONTROL:
		/* changed only while no channel is RUNNING or BUSY (spec section 7): other writes
		 * are ignored, so that software which forgets to halt first fails in tests */
		pthread_mutex_lock(&d->ch[MP_CH_C2H].lock);
		pthread_mutex_lock(&d->ch[MP_CH_H2C].lock);
		if (emu_chan_state(&d->ch[MP_CH_C2H]) != MP_STATE_RUNNING &&
		    emu_chan_state(&d->ch[MP_CH_H2C]) != MP_STATE_RUNNING &&
		    !atomic_load(&d->ch[MP_CH_C2H].inflight) && !atomic_load(&d->ch[MP_CH_H2C].inflight))
			atomic_store(&t->control, v & (MP_REG_TEST_CONTROL_C2H_SOURCE_MASK |
						       MP_REG_TEST_CONTROL_H2C_SINK_MASK));
		pthread_mutex_unlock(&d->ch[MP_CH_H2C].lock);
		pthread_mutex_unlock(&d->ch[MP_CH_C2H].lock);
		break;
	case MP_REG_PATGEN_SEED:
		pthread_mutex_lock(&t->lock);
		atomic_store(&t->pg_seed, v);
		atomic_store_explicit(&t->pg_state, (atomic_load(&t->pg_state) & ~0xffffffffull) +
				      (1ull << 32) + v, memory_order_release);
		pthread_mutex_unlock(&t->lock);
		break;
	case MP_REG_PATGEN_RATE:
		atomic_store(&t->pg_rate, v);
		break;
	case MP_REG_CHECK_SEED:
		pthread_mutex_lock(&t->lock);
		atomic_store(&t->ck_seed, v);
		t->ck_gen++;
		atomic_store(&t->ck_words, 0);
		atomic_store(&t->ck_errors, 0);
		pthread_mutex_unlock(&t->lock);
		break;
	default:
		break;
	}
}

/* ================================================================== channel registers */

void emu_chan_init(struct emu_dev *d, unsigned int idx)
{
	struct emu_chan *ch = &d->ch[idx];
	pthread_condattr_t attr;

	memset(ch, 0, sizeof(*ch));
	ch->dev = d;
	ch->idx = idx;
	pthread_mutex_init(&ch->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&ch->wake, &attr);
	pthread_condattr_destroy(&attr);
	pthread_cond_init(&ch->ack, NULL);
	atomic_init(&ch->tail, 0);
	atomic_init(&ch->tail_ns, 0);
	atomic_init(&ch->ctl, 0);
	atomic_init(&ch->ring_lo, 0);
	atomic_init(&ch->ring_hi, 0);
	atomic_init(&ch->ring_size, 0);
	atomic_init(&ch->timeout_us, 0);
	atomic_init(&ch->run_ns, 0);
	atomic_init(&ch->head, 0);
	atomic_init(&ch->status, MP_STATE_IDLE);
	atomic_init(&ch->inflight, 0);
	atomic_init(&ch->waiting, 0);
	atomic_init(&ch->bytes, 0);
	atomic_init(&ch->bytes_hi, 0);
	atomic_init(&ch->gen, 0);
	atomic_init(&ch->completing, 0);
}

void emu_chan_destroy(struct emu_chan *ch)
{
	pthread_cond_destroy(&ch->ack);
	pthread_cond_destroy(&ch->wake);
	pthread_mutex_destroy(&ch->lock);
}

void emu_chan_wake(struct emu_chan *ch)
{
	if (atomic_load(&ch->waiting)) {
		pthread_mutex_lock(&ch->lock);
		pthread_cond_broadcast(&ch->wake);
		pthread_mutex_unlock(&ch->lock);
	}
}

/* Wakes the engine thread if it waits for doorbells or FIFO data/space. */
void emu_chan_kick(struct emu_chan *ch)
{
	if (atomic_load(&ch->waiting) == EMU_WAIT_ANY) {
		pthread_mutex_lock(&ch->lock);
		pthread_cond_broadcast(&ch->wake);
		pthread_mutex_unlock(&ch->lock);
	}
}

void emu_chan_write_tail(struct emu_chan *ch, uint32_t v)
{
	if (ch->dev->link.paced)
		atomic_store_explicit(&ch->tail_ns, emu_now_ns(), memory_order_relaxed);
	/* seq_cst: publishes the descriptors (release) and orders against `waiting` */
	atomic_store(&ch->tail, v);
	emu_chan_kick(ch);
}

void emu_chan_write_ring(struct emu_chan *ch, uint64_t off, uint32_t v)
{
	pthread_mutex_lock(&ch->lock);
	if (emu_chan_state(ch) != MP_STATE_RUNNING) {   /* ignored while RUNNING */
		if (off == MP_CHREG_RING_BASE_LO)
			atomic_store(&ch->ring_lo, v);
		else if (off == MP_CHREG_RING_BASE_HI)
			atomic_store(&ch->ring_hi, v);
		else
			atomic_store(&ch->ring_size, v);
	}
	pthread_mutex_unlock(&ch->lock);
}

void emu_chan_set_status_locked(struct emu_chan *ch, uint32_t state, uint32_t code)
{
	atomic_store_explicit(&ch->status, state | (code << MP_CHREG_STATUS_ERROR_CODE_SHIFT),
			      memory_order_release);
}

/* ERROR with `code`; RUN and a pending ABORT are cleared; raises IRQ_STATUS.ERROR. Nothing
 * is in flight any more (the engine calls this as the last act on a failed descriptor), so
 * BUSY is clear when a writer waiting for the abort reads STATUS. */
void emu_chan_error_locked(struct emu_chan *ch, uint32_t code)
{
	atomic_store(&ch->inflight, 0);
	/* STATE = ERROR together with IRQ_STATUS.ERROR: software that sees one sees the other */
	emu_irq_raise_status(ch->dev, MP_IRQ_ERROR_BIT, &ch->status,
			     MP_STATE_ERROR | (code << MP_CHREG_STATUS_ERROR_CODE_SHIFT));
	atomic_fetch_and(&ch->ctl, ~(EMU_CTL_RUN | EMU_CTL_ABORT));
	pthread_cond_broadcast(&ch->ack);
}

/* CONTROL.RESET with nothing in flight. */
void emu_chan_reset_locked(struct emu_chan *ch)
{
	atomic_store(&ch->head, 0);
	atomic_store(&ch->tail, 0);
	atomic_store(&ch->bytes, 0);
	atomic_fetch_add(&ch->gen, 1);
	emu_chan_set_status_locked(ch, MP_STATE_IDLE, 0);
	atomic_fetch_and(&ch->ctl, ~(EMU_CTL_RUN | EMU_CTL_ABORT | EMU_CTL_RESET));
	pthread_cond_broadcast(&ch->ack);
}

/* Leaves `req` to the engine thread and waits until it has been handled. */
static void wait_engine_locked(struct emu_chan *ch, uint32_t req)
{
	pthread_cond_broadcast(&ch->wake);
	ch->ack_waiters++;
	while (atomic_load(&ch->ctl) & req)
		pthread_cond_wait(&ch->ack, &ch->lock);
	ch->ack_waiters--;
}

static void chan_reset(struct emu_chan *ch)
{
	pthread_mutex_lock(&ch->lock);
	atomic_store(&ch->ctl, (atomic_load(&ch->ctl) & ~EMU_CTL_RUN) | EMU_CTL_RESET);
	if (!atomic_load(&ch->inflight))
		emu_chan_reset_locked(ch);
	else
		wait_engine_locked(ch, EMU_CTL_RESET);
	pthread_mutex_unlock(&ch->lock);
}

static void chan_abort(struct emu_chan *ch)
{
	pthread_mutex_lock(&ch->lock);
	if (emu_chan_state(ch) != MP_STATE_ERROR) {     /* an ERROR channel keeps its code */
		atomic_fetch_or(&ch->ctl, EMU_CTL_ABORT);
		if (!atomic_load(&ch->inflight))
			emu_chan_error_locked(ch, MP_ERR_ABORTED);
		else
			wait_engine_locked(ch, EMU_CTL_ABORT);
	}
	pthread_mutex_unlock(&ch->lock);
}

void emu_chan_write_control(struct emu_chan *ch, uint32_t v)
{
	uint32_t st;

	if (v & MP_CHREG_CONTROL_RESET_MASK) {
		chan_reset(ch);
		return;
	}
	if (v & MP_CHREG_CONTROL_ABORT_MASK) {
		chan_abort(ch);
		return;
	}
	pthread_mutex_lock(&ch->lock);
	st = emu_chan_state(ch);
	if (v & MP_CHREG_CONTROL_RUN_MASK) {
		if (st == MP_STATE_IDLE) {
			atomic_store(&ch->run_ns, emu_now_ns());
			emu_chan_set_status_locked(ch, MP_STATE_RUNNING, 0);
			atomic_fetch_or(&ch->ctl, EMU_CTL_RUN);
			pthread_cond_broadcast(&ch->wake);
		} else if (st == MP_STATE_RUNNING) {
			atomic_fetch_or(&ch->ctl, EMU_CTL_RUN);   /* cancels a pending halt */
		}
		/* ERROR: ignored until RESET */
	} else {
		atomic_fetch_and(&ch->ctl, ~EMU_CTL_RUN);
		if (st == MP_STATE_RUNNING && !atomic_load(&ch->inflight))
			emu_chan_set_status_locked(ch, MP_STATE_IDLE, 0);
		/* else the engine goes IDLE when the descriptor in flight is done */
	}
	pthread_mutex_unlock(&ch->lock);
}

void emu_global_reset(struct emu_dev *d)
{
	struct emu_test *t = &d->test;
	unsigned int i;

	for (i = 0; i < MP_CH_COUNT; i++) {
		struct emu_chan *ch = &d->ch[i];

		/* a channel RESET; the ring configuration stays (spec section 5) */
		chan_reset(ch);
		pthread_mutex_lock(&ch->lock);
		if (i == MP_CH_C2H)   /* both channels are stopped: drop the loopback data */
			atomic_store(&t->fifo.rpos, atomic_load(&t->fifo.wpos));
		pthread_mutex_unlock(&ch->lock);
	}
	pthread_mutex_lock(&t->lock);
	atomic_store(&t->control, 0);
	atomic_store(&t->pg_seed, 0);
	atomic_store(&t->pg_rate, 0);
	atomic_store(&t->pg_state, (atomic_load(&t->pg_state) & ~0xffffffffull) + (1ull << 32));
	t->src_gen++;
	atomic_store(&t->ck_seed, 0);
	t->ck_gen++;
	atomic_store(&t->ck_words, 0);
	atomic_store(&t->ck_errors, 0);
	pthread_mutex_unlock(&t->lock);
	emu_irq_reset(d);
	atomic_store(&d->scratch, 0);
}
