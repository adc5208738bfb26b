// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * BAR0 of the virtual board: the register file of docs/dma-engine.md section 9 behind the
 * pd_regs read32/write32 accessors (the interrupt logic is emu_irq.c).
 *
 * Reads are lock-free loads. Writes with side effects call into the engine (emu_engine.c),
 * which applies them as hardware would: a TAIL write is a store plus a wake-up only when the
 * channel thread sleeps; CONTROL.RUN/ABORT/RESET take effect before the write returns (a
 * following STATUS read sees the new state), except that RUN = 0 lets a descriptor in flight
 * finish first.
 */
#include <sched.h>

#include "emu.h"

static uint64_t cycles(struct emu_dev *d)
{
	uint64_t ns = emu_now_ns() - d->t0_ns;

	return ns / 1000 * d->cfg.clock_mhz + ns % 1000 * d->cfg.clock_mhz / 1000;
}

static uint32_t caps(struct emu_dev *d)
{
	return (d->cfg.datapath << MP_REG_CAPS_DATAPATH_BYTES_SHIFT) |
	       (1u << MP_REG_CAPS_C2H_CHANNELS_SHIFT) |
	       (1u << MP_REG_CAPS_H2C_CHANNELS_SHIFT) |
	       (emu_mps_code(d) << MP_REG_CAPS_MPS_SHIFT) |
	       (emu_mrrs_code(d) << MP_REG_CAPS_MRRS_SHIFT) |
	       MP_REG_CAPS_PATGEN_MASK | MP_REG_CAPS_CHECKER_MASK | MP_REG_CAPS_LOOPBACK_MASK |
	       (d->cfg.msi << MP_REG_CAPS_MSI_VECTORS_SHIFT);
}

/* Lets a completion that is being written finish first (complete() in emu_engine.c). */
static void wait_completion(struct emu_chan *ch)
{
	while (atomic_load_explicit(&ch->completing, memory_order_acquire) & 1)
		sched_yield();
}

static uint32_t chan_read(struct emu_chan *ch, uint64_t off)
{
	uint64_t b;
	uint32_t st;

	if (off == MP_CHREG_STATUS || off == MP_CHREG_HEAD || off == MP_CHREG_BYTES_LO)
		wait_completion(ch);
	switch (off) {
	case MP_CHREG_CONTROL:
		return atomic_load_explicit(&ch->ctl, memory_order_relaxed) & EMU_CTL_RUN;
	case MP_CHREG_STATUS:
		st = atomic_load_explicit(&ch->status, memory_order_acquire);
		if (atomic_load_explicit(&ch->inflight, memory_order_relaxed))
			st |= MP_CHREG_STATUS_BUSY_MASK;
		return st;
	case MP_CHREG_RING_BASE_LO:
		return atomic_load_explicit(&ch->ring_lo, memory_order_relaxed);
	case MP_CHREG_RING_BASE_HI:
		return atomic_load_explicit(&ch->ring_hi, memory_order_relaxed);
	case MP_CHREG_RING_SIZE:
		return atomic_load_explicit(&ch->ring_size, memory_order_relaxed);
	case MP_CHREG_TAIL:
		return atomic_load_explicit(&ch->tail, memory_order_relaxed);
	case MP_CHREG_HEAD:
		return atomic_load_explicit(&ch->head, memory_order_acquire);
	case MP_CHREG_TIMEOUT_US:
		return atomic_load_explicit(&ch->timeout_us, memory_order_relaxed);
	case MP_CHREG_BYTES_LO:
		b = atomic_load_explicit(&ch->bytes, memory_order_acquire);
		atomic_store_explicit(&ch->bytes_hi, (uint32_t)(b >> 32), memory_order_relaxed);
		return (uint32_t)b;
	case MP_CHREG_BYTES_HI:
		return atomic_load_explicit(&ch->bytes_hi, memory_order_relaxed);
	default:
		return 0;
	}
}

uint32_t emu_reg_read(void *ctx, uint64_t off)
{
	struct emu_dev *d = ctx;
	uint64_t c, v;

	off &= ~(uint64_t)3;
	if (atomic_load_explicit(&d->link_down, memory_order_relaxed))
		return 0xffffffffu;   /* a read nobody completes: the root port returns all-ones */
	if (off >= MP_CH_BASE(0) && off < MP_CH_BASE(MP_CH_COUNT))
		return chan_read(&d->ch[(off - MP_CH_BASE(0)) / 0x40u],
				 (off - MP_CH_BASE(0)) % 0x40u);
	switch (off) {
	case MP_REG_MAGIC:
		return MP_ENGINE_MAGIC;
	case MP_REG_VERSION:
		return (MP_ENGINE_VERSION_MAJOR << MP_REG_VERSION_MAJOR_SHIFT) |
		       (MP_ENGINE_VERSION_MINOR << MP_REG_VERSION_MINOR_SHIFT);
	case MP_REG_CAPS:
		return caps(d);
	case MP_REG_CLOCK_MHZ:
		return d->cfg.clock_mhz;
	case MP_REG_SCRATCH:
		return atomic_load_explicit(&d->scratch, memory_order_relaxed);
	case MP_REG_CYCLE_LO:
		c = cycles(d);
		atomic_store_explicit(&d->cycle_hi, (uint32_t)(c >> 32), memory_order_relaxed);
		return (uint32_t)c;
	case MP_REG_CYCLE_HI:
		return atomic_load_explicit(&d->cycle_hi, memory_order_relaxed);
	case MP_REG_IRQ_STATUS:
		return emu_irq_read_status(d);
	case MP_REG_IRQ_ENABLE:
		return atomic_load_explicit(&d->irq.enable, memory_order_relaxed);
	case MP_REG_TEST_CONTROL:
		return atomic_load_explicit(&d->test.control, memory_order_relaxed);
	case MP_REG_PATGEN_SEED:
		return atomic_load_explicit(&d->test.pg_seed, memory_order_relaxed);
	case MP_REG_PATGEN_RATE:
		return atomic_load_explicit(&d->test.pg_rate, memory_order_relaxed);
	case MP_REG_CHECK_SEED:
		return atomic_load_explicit(&d->test.ck_seed, memory_order_relaxed);
	case MP_REG_CHECK_ERRORS:
		v = atomic_load_explicit(&d->test.ck_errors, memory_order_relaxed);
		return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
	case MP_REG_CHECK_WORDS:
		return (uint32_t)atomic_load_explicit(&d->test.ck_words, memory_order_relaxed);
	default:
		return 0;   /* CONTROL reads 0 (self-clearing); unlisted offsets read 0 */
	}
}

static void chan_write(struct emu_chan *ch, uint64_t off, uint32_t v)
{
	switch (off) {
	case MP_CHREG_CONTROL:
		emu_chan_write_control(ch, v);
		break;
	case MP_CHREG_RING_BASE_LO:
	case MP_CHREG_RING_BASE_HI:
	case MP_CHREG_RING_SIZE:
		emu_chan_write_ring(ch, off, v);
		break;
	case MP_CHREG_TAIL:
		emu_chan_write_tail(ch, v);
		break;
	case MP_CHREG_TIMEOUT_US:
		atomic_store(&ch->timeout_us, v);
		emu_chan_wake(ch);   /* a stalled descriptor re-arms its deadline */
		break;
	default:
		break;               /* read-only or unlisted */
	}
}

void emu_reg_write(void *ctx, uint64_t off, uint32_t v)
{
	struct emu_dev *d = ctx;

	off &= ~(uint64_t)3;
	if (atomic_load_explicit(&d->link_down, memory_order_relaxed))
		return;
	if (off >= MP_CH_BASE(0) && off < MP_CH_BASE(MP_CH_COUNT)) {
		chan_write(&d->ch[(off - MP_CH_BASE(0)) / 0x40u], (off - MP_CH_BASE(0)) % 0x40u, v);
		return;
	}
	switch (off) {
	case MP_REG_CONTROL:
		if (v & MP_REG_CONTROL_RESET_MASK)
			emu_global_reset(d);
		break;
	case MP_REG_SCRATCH:
		atomic_store_explicit(&d->scratch, v, memory_order_relaxed);
		break;
	case MP_REG_IRQ_STATUS:
		emu_irq_write_status(d, v);
		break;
	case MP_REG_IRQ_ENABLE:
		emu_irq_write_enable(d, v);
		break;
	case MP_REG_TEST_CONTROL:
	case MP_REG_PATGEN_SEED:
	case MP_REG_PATGEN_RATE:
	case MP_REG_CHECK_SEED:
		emu_test_write(d, off, v);
		break;
	default:
		break;
	}
}
