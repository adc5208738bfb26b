/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the virtual board's conformance suites (test_emu_*.c). They drive the model
 * through the public libpcidriver C API only: registers through pd_regs, descriptors written
 * byte by byte at the MP_DESC_* offsets of engine_spec.h into kernel memory, bus addresses
 * from pd_kmem_bus_addr / pd_umem_sglist.
 */
#ifndef TESTS_UNIT_TEST_EMU_UTIL_H
#define TESTS_UNIT_TEST_EMU_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"
#include "mprace-spec/engine_spec.h"
#include "mprace-spec/pattern.h"
#include "pcidriver/pcidriver.h"

/* Generous: the suites share two cores with other builds. */
#define EMU_WAIT_MS 10000u

struct eb {
	pd_device *dev;
	struct pd_regs r;
};

static inline void eb_open(struct eb *b, const char *name)
{
	int rc = pd_open(name, &b->dev);

	ck_assert_msg(rc == 0, "pd_open(%s): %d", name, rc);
	ck_assert_int_eq(pd_regs_get(b->dev, MP_ENGINE_BAR, &b->r), 0);
}

static inline void eb_close(struct eb *b)
{
	pd_close(b->dev);
	b->dev = NULL;
}

static inline uint32_t rd(struct eb *b, uint32_t off)
{
	return pd_reg_read32(&b->r, off);
}

static inline void wr(struct eb *b, uint32_t off, uint32_t v)
{
	pd_reg_write32(&b->r, off, v);
}

static inline uint32_t crd(struct eb *b, unsigned int ch, uint32_t off)
{
	return rd(b, MP_CH_BASE(ch) + off);
}

static inline void cwr(struct eb *b, unsigned int ch, uint32_t off, uint32_t v)
{
	wr(b, MP_CH_BASE(ch) + off, v);
}

static inline uint32_t state_of(uint32_t status)
{
	return (status & MP_CHREG_STATUS_STATE_MASK) >> MP_CHREG_STATUS_STATE_SHIFT;
}

static inline uint32_t code_of(uint32_t status)
{
	return (status & MP_CHREG_STATUS_ERROR_CODE_MASK) >> MP_CHREG_STATUS_ERROR_CODE_SHIFT;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void sleep_us(unsigned int us)
{
	struct timespec ts = { us / 1000000u, (long)(us % 1000000u) * 1000 };

	nanosleep(&ts, NULL);
}

/* ---- a descriptor ring in kernel memory ---- */

struct ering {
	pd_kmem *km;
	uint8_t *mem;
	uint64_t bus;
	uint32_t size;
	uint32_t tail;       /* next descriptor number to fill */
	unsigned int ch;
};

static inline void ering_init(struct eb *b, struct ering *r, unsigned int ch, uint32_t entries)
{
	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(pd_kmem_alloc(b->dev, (size_t)entries * MP_ENGINE_DESC_SIZE, &r->km), 0);
	r->mem = pd_kmem_ptr(r->km);
	r->bus = pd_kmem_bus_addr(r->km);
	r->size = entries;
	r->ch = ch;
	cwr(b, ch, MP_CHREG_RING_BASE_LO, (uint32_t)r->bus);
	cwr(b, ch, MP_CHREG_RING_BASE_HI, (uint32_t)(r->bus >> 32));
	cwr(b, ch, MP_CHREG_RING_SIZE, entries);
}

static inline uint8_t *eslot(struct ering *r, uint32_t n)
{
	return r->mem + (size_t)(n & (r->size - 1)) * MP_ENGINE_DESC_SIZE;
}

static inline void put32le(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Fills the next slot (words 0-3, completion record cleared, a cookie); no doorbell. */
static inline uint32_t ering_put_raw(struct ering *r, uint64_t addr, uint32_t len_word,
				     uint32_t ctrl)
{
	uint32_t n = r->tail++;
	uint8_t *s = eslot(r, n);

	put32le(s + MP_DESC_ADDR_LO, (uint32_t)addr);
	put32le(s + MP_DESC_ADDR_HI, (uint32_t)(addr >> 32));
	put32le(s + MP_DESC_LEN, len_word);
	put32le(s + MP_DESC_CTRL, ctrl);
	put32le(s + MP_DESC_RESULT_BYTES, 0);
	put32le(s + MP_DESC_RESULT_STATUS, 0);
	put32le(s + MP_DESC_SW_COOKIE_LO, 0xc0de0000u | n);
	put32le(s + MP_DESC_SW_COOKIE_HI, 0xfeedu);
	return n;
}

static inline void ering_doorbell(struct eb *b, struct ering *r)
{
	cwr(b, r->ch, MP_CHREG_TAIL, r->tail);
}

static inline uint32_t ering_put(struct eb *b, struct ering *r, uint64_t addr, uint32_t len,
				 uint32_t ctrl)
{
	uint32_t n = ering_put_raw(r, addr, len, ctrl);

	ering_doorbell(b, r);
	return n;
}

/* The completion record of descriptor n, read with acquire (the engine's release store). */
static inline uint32_t rec_status(struct ering *r, uint32_t n)
{
	return __atomic_load_n((uint32_t *)(void *)(eslot(r, n) + MP_DESC_RESULT_STATUS),
			       __ATOMIC_ACQUIRE);
}

static inline uint32_t rec_bytes(struct ering *r, uint32_t n)
{
	return __atomic_load_n((uint32_t *)(void *)(eslot(r, n) + MP_DESC_RESULT_BYTES),
			       __ATOMIC_ACQUIRE);
}

static inline uint32_t rec_code(uint32_t status)
{
	return (status & MP_DESC_RESULT_STATUS_ERROR_CODE_MASK) >>
	       MP_DESC_RESULT_STATUS_ERROR_CODE_SHIFT;
}

/* Polls the record of descriptor n until DONE; returns the status (0 on timeout). */
static inline uint32_t wait_done(struct ering *r, uint32_t n, unsigned int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
	uint32_t s;

	do {
		s = rec_status(r, n);
		if (s & MP_DESC_RESULT_STATUS_DONE_MASK)
			return s;
		sleep_us(20);
	} while (now_ns() < end);
	return 0;
}

/* Polls STATUS until STATE == state; returns the last STATUS. */
static inline uint32_t wait_state(struct eb *b, unsigned int ch, uint32_t state, unsigned int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
	uint32_t s;

	do {
		s = crd(b, ch, MP_CHREG_STATUS);
		if (state_of(s) == state)
			return s;
		sleep_us(20);
	} while (now_ns() < end);
	return s;
}

/* Polls STATUS until BUSY reads `busy`: set, the channel has started a descriptor (thread
 * wake-up can take milliseconds on a loaded machine, so never assume it after a fixed sleep);
 * clear, it has noticed that nothing is left (BUSY outlives the HEAD update of the last one). */
static inline bool wait_busy_is(struct eb *b, unsigned int ch, bool busy, unsigned int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000u;

	do {
		if (!!(crd(b, ch, MP_CHREG_STATUS) & MP_CHREG_STATUS_BUSY_MASK) == busy)
			return true;
		sleep_us(20);
	} while (now_ns() < end);
	return false;
}

static inline bool wait_busy(struct eb *b, unsigned int ch, unsigned int ms)
{
	return wait_busy_is(b, ch, true, ms);
}

static inline bool wait_head(struct eb *b, unsigned int ch, uint32_t head, unsigned int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000u;

	do {
		if (crd(b, ch, MP_CHREG_HEAD) == head)
			return true;
		sleep_us(20);
	} while (now_ns() < end);
	return false;
}

/* Polls global register `off` until it reads `want`; returns the last value read. For bits the
 * engine sets after a record (IRQ_STATUS's DONE bits, docs/dma-engine.md section 4): a loaded
 * host may see the record first. */
static inline uint32_t wait_reg(struct eb *b, uint32_t off, uint32_t want, unsigned int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
	uint32_t v;

	do {
		v = rd(b, off);
		if (v == want)
			return v;
		sleep_us(20);
	} while (now_ns() < end);
	return v;
}

/* Polls a register of BAR0 until every bit of `mask` is set (others may be too); returns the
 * register's mask bits as last read. */
static inline uint32_t wait_bits(struct eb *b, uint32_t off, uint32_t mask, unsigned int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
	uint32_t v;

	do {
		v = rd(b, off) & mask;
		if (v == mask)
			return v;
		sleep_us(20);
	} while (now_ns() < end);
	return v;
}

static inline void run(struct eb *b, unsigned int ch)
{
	cwr(b, ch, MP_CHREG_CONTROL, MP_CHREG_CONTROL_RUN_MASK);
}

static inline void set_test(struct eb *b, uint32_t src, uint32_t sink)
{
	wr(b, MP_REG_TEST_CONTROL, (src << MP_REG_TEST_CONTROL_C2H_SOURCE_SHIFT) |
				   (sink << MP_REG_TEST_CONTROL_H2C_SINK_SHIFT));
}

/* Index of the first of nwords words at buf that differs from the pattern from first, or -1
 * (mprace-spec/pattern.h). */
static inline long pattern_mismatch(const uint8_t *buf, size_t nwords, uint32_t first)
{
	int64_t bad = mp_pattern_find_mismatch(buf, 4 * nwords, 0, first);

	return bad < 0 ? -1 : (long)(bad / 4);
}

static inline void pattern_fill(uint8_t *buf, size_t nwords, uint32_t first)
{
	mp_pattern_fill(buf, 4 * nwords, 0, first);
}

/* Runs f with stderr captured; returns what was written (static buffer). */
static inline const char *capture_stderr(int (*f)(void *), void *arg, int *ret)
{
	static char buf[4096];
	FILE *tmp = tmpfile();
	int saved = dup(2);
	size_t n;

	ck_assert_ptr_nonnull(tmp);
	fflush(stderr);
	dup2(fileno(tmp), 2);
	*ret = f(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(buf, 1, sizeof(buf) - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
	return buf;
}

#endif
