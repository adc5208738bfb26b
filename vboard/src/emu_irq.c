// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The interrupt logic of the virtual board (docs/dma-engine.md section 6): IRQ_STATUS and
 * IRQ_ENABLE and the MSI vectors they map to; the messages go to the host object's event
 * counters that pd_irq_wait sleeps on (host.c). Its own file so that the register file (emu_regs.c) and the
 * channels (emu_chan.c) both call down into it instead of into each other.
 */
#include <errno.h>

#include "emu.h"

#define IRQ_BITS (MP_REG_IRQ_STATUS_C2H_DONE_MASK | MP_REG_IRQ_STATUS_H2C_DONE_MASK | \
		  MP_REG_IRQ_STATUS_ERROR_MASK)

void emu_irq_init(struct emu_irq *irq, uint32_t vectors, int64_t drop)
{
	pthread_mutex_init(&irq->lock, NULL);
	atomic_init(&irq->status, 0);
	atomic_init(&irq->enable, 0);
	irq->msgs = 0;
	irq->vectors = vectors;
	irq->drop = drop;
}

void emu_irq_destroy(struct emu_irq *irq)
{
	pthread_mutex_destroy(&irq->lock);
}

/* The MSI vector of an IRQ_STATUS bit: its own with at least 4 granted, else vector 0. */
static unsigned int vector_of(const struct emu_irq *irq, uint32_t bit)
{
	static const unsigned int vec[MP_IRQ_SOURCES] = {
		[MP_IRQ_C2H_DONE_BIT] = MP_IRQ_C2H_DONE_VECTOR,
		[MP_IRQ_H2C_DONE_BIT] = MP_IRQ_H2C_DONE_VECTOR,
		[MP_IRQ_ERROR_BIT] = MP_IRQ_ERROR_VECTOR,
	};

	return irq->vectors >= 4 ? vec[bit] : 0;
}

/* One MSI message (irq->lock held): the host's handler counts it and wakes the waiters. */
static void send_locked(struct emu_dev *d, uint32_t bit)
{
	struct emu_irq *irq = &d->irq;
	uint64_t idx = irq->msgs++;

	if (irq->drop >= 0 && idx == (uint64_t)irq->drop)
		return;   /* fault injection: this message is lost */
	vb_host_msi(&d->host, vector_of(irq, bit));
}

void emu_irq_raise(struct emu_dev *d, uint32_t bit)
{
	emu_irq_raise_status(d, bit, NULL, 0);
}

void emu_irq_raise_status(struct emu_dev *d, uint32_t bit, atomic_uint *reg, uint32_t val)
{
	struct emu_irq *irq = &d->irq;
	uint32_t m = 1u << bit, old;

	if (atomic_load_explicit(&d->link_down, memory_order_relaxed))
		return;   /* no message crosses a dead link */
	pthread_mutex_lock(&irq->lock);
	old = atomic_fetch_or_explicit(&irq->status, m, memory_order_release);
	if (reg)
		atomic_store_explicit(reg, val, memory_order_release);
	if (!(old & m) && (atomic_load_explicit(&irq->enable, memory_order_relaxed) & m))
		send_locked(d, bit);
	pthread_mutex_unlock(&irq->lock);
}

/* IRQ_STATUS as a read sees it: under the lock of the raise, so that a read that shows a bit
 * comes after the message that bit sent, as on PCIe, where the read's completion cannot pass
 * the board's earlier posted writes (the MSI). */
uint32_t emu_irq_read_status(struct emu_dev *d)
{
	uint32_t v;

	pthread_mutex_lock(&d->irq.lock);
	v = atomic_load_explicit(&d->irq.status, memory_order_relaxed);
	pthread_mutex_unlock(&d->irq.lock);
	return v;
}

void emu_irq_write_status(struct emu_dev *d, uint32_t v)
{
	pthread_mutex_lock(&d->irq.lock);
	atomic_fetch_and_explicit(&d->irq.status, ~(v & IRQ_BITS), memory_order_release);
	pthread_mutex_unlock(&d->irq.lock);
}

void emu_irq_write_enable(struct emu_dev *d, uint32_t v)
{
	struct emu_irq *irq = &d->irq;
	uint32_t old, pending, bit;

	v &= IRQ_BITS;
	pthread_mutex_lock(&irq->lock);
	old = atomic_exchange_explicit(&irq->enable, v, memory_order_relaxed);
	/* enabling a source that is already pending raises it */
	pending = v & ~old & atomic_load_explicit(&irq->status, memory_order_relaxed);
	for (bit = 0; bit < MP_IRQ_SOURCES; bit++)
		if (pending & (1u << bit))
			send_locked(d, bit);
	pthread_mutex_unlock(&irq->lock);
}

/* Global reset: IRQ_STATUS and IRQ_ENABLE to 0 (the event counters belong to the driver). */
void emu_irq_reset(struct emu_dev *d)
{
	pthread_mutex_lock(&d->irq.lock);
	atomic_store(&d->irq.status, 0);
	atomic_store(&d->irq.enable, 0);
	pthread_mutex_unlock(&d->irq.lock);
}
