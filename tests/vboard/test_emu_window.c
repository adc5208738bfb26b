// SPDX-License-Identifier: GPL-2.0
/*
 * Virtual board conformance, part 6: many small descriptors in flight at once (the engine's
 * read-ahead window, docs/virtual-board.md). Scattered user memory with one descriptor per SG
 * entry, as libmprace queues it: the pattern byte for byte and the completion records strictly
 * in order, with and without copy threads and read-ahead; a bus error, a stall, ABORT, RESET
 * and a halt while a window of small descriptors is in flight (nothing after the failing or aborted
 * descriptor completes, the sources continue exactly where the reported bytes end); the
 * checker counting one bad word among many small H2C descriptors once; STOP; user-stream
 * packets spanning descriptors; an unmap in the middle of a stream of small descriptors.
 */
#include <pthread.h>

#include "test_emu_util.h"

static const uint32_t DONE = MP_DESC_RESULT_STATUS_DONE_MASK;

static uint32_t err_rec(uint32_t code)
{
	return MP_DESC_RESULT_STATUS_DONE_MASK | MP_DESC_RESULT_STATUS_ERROR_MASK |
	       (code << MP_DESC_RESULT_STATUS_ERROR_CODE_SHIFT);
}

static uint32_t err_status(uint32_t code)
{
	return MP_STATE_ERROR | (code << MP_CHREG_STATUS_ERROR_CODE_SHIFT);
}

/* Polls HEAD until it has reached at least n (it moves on quickly: wait_head needs n exactly). */
static bool wait_head_ge(struct eb *b, unsigned int ch, uint32_t n, unsigned int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000u;

	do {
		if ((int32_t)(crd(b, ch, MP_CHREG_HEAD) - n) >= 0)
			return true;
		sleep_us(20);
	} while (now_ns() < end);
	return false;
}

static uint64_t bytes_reg(struct eb *b, unsigned int ch)
{
	uint32_t lo = crd(b, ch, MP_CHREG_BYTES_LO);

	return (uint64_t)crd(b, ch, MP_CHREG_BYTES_HI) << 32 | lo;
}

/* A user buffer mapped with the device's sg= layout and its SG list: one descriptor each. */
struct ubuf {
	uint8_t *mem;        /* page aligned, size + 2 guard pages */
	uint8_t *buf;        /* mem + off */
	size_t size;
	pd_umem *um;
	struct pd_sg_entry *sg;
	size_t n;
};

static void ubuf_map(struct eb *b, struct ubuf *u, size_t size, size_t off, enum pd_dma_dir dir,
		     uint8_t fill)
{
	u->mem = aligned_alloc(4096, (size + off + 8192 + 4095) & ~(size_t)4095);
	ck_assert_ptr_nonnull(u->mem);
	memset(u->mem, fill, size + off + 8192);
	u->buf = u->mem + off;
	u->size = size;
	ck_assert_int_eq(pd_umem_map(b->dev, u->buf, size, dir, &u->um), 0);
	u->n = pd_umem_sg_count(u->um);
	u->sg = calloc(u->n, sizeof(*u->sg));
	ck_assert_ptr_nonnull(u->sg);
	ck_assert_int_eq(pd_umem_sglist(u->um, u->sg, u->n), (int)u->n);
}

static void ubuf_free(struct ubuf *u)
{
	if (u->um)
		pd_umem_unmap(u->um);
	free(u->sg);
	free(u->mem);
	memset(u, 0, sizeof(*u));
}

/*
 * Polls the records of descriptors [first, last) and HEAD while the engine completes them
 * and checks that they complete in order: a record is never DONE while an earlier one is
 * not, and every record below HEAD is DONE (the record is written before HEAD). Returns when
 * all are DONE (false on timeout).
 */
static bool watch_in_order(struct eb *b, struct ering *r, uint32_t first, uint32_t last)
{
	uint64_t end = now_ns() + EMU_WAIT_MS * 1000000ull;
	uint32_t lo = first, j, head, later;

	while (lo < last) {
		if (now_ns() > end)
			return false;
		head = crd(b, r->ch, MP_CHREG_HEAD);
		for (j = lo; (int32_t)(head - j) > 0 && j < last; j++)
			ck_assert_msg(rec_status(r, j) & DONE, "HEAD %u but record %u not DONE", head, j);
		/* the first record not DONE yet: nothing after it may be DONE (read the later
		 * one first: the engine writes them in order, so if it is DONE, so is this one) */
		while (lo < last && (rec_status(r, lo) & DONE))
			lo++;
		for (j = lo + 1; j < last && j < lo + 64; j++) {
			later = rec_status(r, j);
			if ((later & DONE) && !(rec_status(r, lo) & DONE))
				ck_abort_msg("record %u DONE before record %u", j, lo);
		}
		if (lo < last)
			sleep_us(50);
	}
	return true;
}

/* C2H from the pattern generator into user memory scattered with the device's sg= layout,
 * one descriptor per SG entry: every byte, every record in order, HEAD and BYTES. */
static void c2h_scattered(const char *name, size_t size, uint32_t seed)
{
	struct eb b;
	struct ering r;
	struct ubuf u;
	const size_t off = 12;
	size_t i;
	uint64_t total = 0;

	eb_open(&b, name);
	ubuf_map(&b, &u, size, off, PD_DMA_FROM_DEVICE, 0xee);
	ck_assert_uint_le(u.n, 4096);
	ering_init(&b, &r, MP_CH_C2H, 4096);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	wr(&b, MP_REG_PATGEN_SEED, seed);
	run(&b, MP_CH_C2H);
	for (i = 0; i < u.n; i++) {
		ering_put_raw(&r, u.sg[i].bus_addr, (uint32_t)u.sg[i].length,
			      i % 97 == 0 ? MP_DESC_CTRL_IRQ_MASK : 0);
		total += u.sg[i].length;
	}
	ering_doorbell(&b, &r);
	ck_assert_msg(watch_in_order(&b, &r, 0, (uint32_t)u.n), "%s: %zu descriptors never completed",
		      name, u.n);
	ck_assert(wait_head(&b, MP_CH_C2H, (uint32_t)u.n, EMU_WAIT_MS));
	for (i = 0; i < u.n; i++) {
		ck_assert_uint_eq(rec_status(&r, (uint32_t)i), DONE);
		ck_assert_uint_eq(rec_bytes(&r, (uint32_t)i), u.sg[i].length);
	}
	ck_assert_uint_eq(total, size);
	ck_assert_uint_eq(bytes_reg(&b, MP_CH_C2H), size);
	ck_assert_int_eq(pd_umem_sync(u.um, PD_SYNC_FOR_CPU), 0);
	ck_assert_msg(pattern_mismatch(u.buf, size / 4, seed) == -1, "%s: word %ld differs", name,
		      pattern_mismatch(u.buf, size / 4, seed));
	for (i = 0; i < off; i++)
		ck_assert_uint_eq(u.mem[i], 0xee);
	for (i = 0; i < 8192; i++)
		ck_assert_uint_eq(u.buf[size + i], 0xee);
	ck_assert_uint_eq(state_of(crd(&b, MP_CH_C2H, MP_CHREG_STATUS)), MP_STATE_RUNNING);
	ck_assert(rd(&b, MP_REG_IRQ_STATUS) & MP_REG_IRQ_STATUS_C2H_DONE_MASK);
	ubuf_free(&u);
	eb_close(&b);
}

START_TEST(test_small_pages)
{
	c2h_scattered("emu:link=ideal,sg=pages", (4u << 20) - 64, 0x10000000u);
	c2h_scattered("emu:link=gen4x16,sg=pages,workers=3", (2u << 20) + 4, 7);
	c2h_scattered("emu:link=gen3x8,sg=pages,workers=0", 1u << 20, 0xfffff000u);
}
END_TEST

START_TEST(test_small_random)
{
	c2h_scattered("emu:link=ideal,sg=random,seed=3", 8u << 20, 1);
	c2h_scattered("emu:link=gen4x16,sg=random,seed=4,workers=2", (6u << 20) + 100, 0xabc);
	c2h_scattered("emu:link=gen2x8,sg=random,seed=5,maxseg=16K", 4u << 20, 99);
	c2h_scattered("emu:link=ideal,sg=random,seed=6,window=1", 2u << 20, 5);   /* no read-ahead */
	c2h_scattered("emu:link=ideal,sg=random,seed=7,window=3,workers=1", 2u << 20, 5);
}
END_TEST

/* A stream longer than the ring, refilled as HEAD advances, and the pattern continuing over
 * all of it; mixed sizes of 4 bytes to a few pages, some crossing pages. */
START_TEST(test_small_stream_wraps)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint8_t *buf;
	uint64_t bus, off = 0;
	uint32_t n = 0, head, i;
	const uint32_t count = 3000;
	const size_t size = 16u << 20;
	uint32_t *lens = calloc(count, sizeof(*lens));

	eb_open(&b, "emu:link=gen4x16,workers=2,window=64");
	ering_init(&b, &r, MP_CH_C2H, 256);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, size, &km), 0);
	buf = pd_kmem_ptr(km);
	bus = pd_kmem_bus_addr(km);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	wr(&b, MP_REG_PATGEN_SEED, 0);
	run(&b, MP_CH_C2H);
	srand(11);
	for (i = 0; i < count; i++) {
		lens[i] = 4 * (1 + (uint32_t)rand() % (i % 3 ? 1024 : 4096));
		ck_assert_uint_lt(off + lens[i], size);
		off += lens[i];
	}
	off = 0;
	while (n < count) {
		head = crd(&b, MP_CH_C2H, MP_CHREG_HEAD);
		while (n < count && r.tail - head < r.size) {
			ering_put_raw(&r, bus + off, lens[n], 0);
			off += lens[n++];
		}
		ering_doorbell(&b, &r);
		sleep_us(50);
	}
	ck_assert(wait_head(&b, MP_CH_C2H, count, EMU_WAIT_MS));
	for (i = count - r.size; i < count; i++)
		ck_assert_uint_eq(rec_bytes(&r, i), lens[i]);
	ck_assert_uint_eq(bytes_reg(&b, MP_CH_C2H), off);
	ck_assert_int_eq(pattern_mismatch(buf, off / 4, 0), -1);
	eb_close(&b);
	free(lens);
}
END_TEST

/* buserr=c2h:N in the middle of a window of small descriptors: HEAD stops at N, N's record
 * says BUS_ERROR with the bytes before the fault, nothing after N completes (records stay 0),
 * BYTES counts the completed descriptors only, and the pattern generator continues exactly
 * after the bytes written. */
static void buserr_window(const char *name, unsigned int ch, uint32_t count, uint32_t n_bad,
			  uint32_t len)
{
	struct eb b;
	struct ering r;
	pd_kmem *km, *one;
	uint8_t *buf;
	uint64_t bus;
	uint32_t i, st;

	eb_open(&b, name);
	ering_init(&b, &r, ch, 256);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, (size_t)count * len, &km), 0);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 4096, &one), 0);
	buf = pd_kmem_ptr(km);
	bus = pd_kmem_bus_addr(km);
	memset(buf, 0xee, (size_t)count * len);
	if (ch == MP_CH_H2C)
		pattern_fill(buf, (size_t)count * len / 4, 0);
	set_test(&b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	wr(&b, MP_REG_PATGEN_SEED, 0);
	wr(&b, MP_REG_CHECK_SEED, 0);
	run(&b, ch);
	for (i = 0; i < count; i++)
		ering_put_raw(&r, bus + (uint64_t)i * len, len, MP_DESC_CTRL_IRQ_MASK);
	ering_doorbell(&b, &r);
	st = wait_state(&b, ch, MP_STATE_ERROR, EMU_WAIT_MS);
	ck_assert_msg(st == err_status(MP_ERR_BUS_ERROR), "%s: STATUS 0x%x", name, st);
	ck_assert_uint_eq(crd(&b, ch, MP_CHREG_HEAD), n_bad);
	sleep_us(20000);   /* nothing may come after */
	for (i = 0; i < n_bad; i++) {
		ck_assert_uint_eq(rec_status(&r, i), DONE);
		ck_assert_uint_eq(rec_bytes(&r, i), len);
	}
	ck_assert_uint_eq(rec_status(&r, n_bad), err_rec(MP_ERR_BUS_ERROR));
	ck_assert_uint_eq(rec_bytes(&r, n_bad), len / 2);
	for (i = n_bad + 1; i < count; i++)
		ck_assert_msg(rec_status(&r, i) == 0 && rec_bytes(&r, i) == 0,
			      "%s: record %u written after the fault at %u", name, i, n_bad);
	ck_assert_uint_eq(crd(&b, ch, MP_CHREG_HEAD), n_bad);
	ck_assert_uint_eq(bytes_reg(&b, ch), (uint64_t)n_bad * len);
	ck_assert_uint_eq(crd(&b, ch, MP_CHREG_STATUS), err_status(MP_ERR_BUS_ERROR));
	if (ch == MP_CH_C2H) {
		ck_assert_int_eq(pattern_mismatch(buf, ((size_t)n_bad * len + len / 2) / 4, 0), -1);
		/* the fault is known when its piece is dispatched: nothing is read ahead behind it */
		for (i = n_bad * len + len / 2; i < count * len; i++)
			ck_assert_msg(buf[i] == 0xee, "%s: byte %u behind the fault written", name, i);
	} else {
		ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), ((uint64_t)n_bad * len + len / 2) / 4);
		ck_assert_uint_eq(rd(&b, MP_REG_CHECK_ERRORS), 0);
	}
	/* recovery: the stream goes on right after the bytes that were moved */
	cwr(&b, ch, MP_CHREG_CONTROL, MP_CHREG_CONTROL_RESET_MASK);
	r.tail = 0;
	memset(r.mem, 0, (size_t)r.size * MP_ENGINE_DESC_SIZE);
	run(&b, ch);
	if (ch == MP_CH_C2H) {
		ering_put(&b, &r, pd_kmem_bus_addr(one), 64, 0);
		ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), DONE);
		ck_assert_int_eq(pattern_mismatch(pd_kmem_ptr(one), 16,
						  (uint32_t)(((uint64_t)n_bad * len + len / 2) / 4)), -1);
	} else {
		ering_put(&b, &r, bus + (uint64_t)n_bad * len + len / 2, 64, 0);
		ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), DONE);
		ck_assert_uint_eq(rd(&b, MP_REG_CHECK_ERRORS), 0);
	}
	eb_close(&b);
}

START_TEST(test_buserr_in_window)
{
	/* all 200 descriptors are read ahead long before the fault's turn on the link */
	buserr_window("emu:link=gen2x1,buserr=c2h:37", MP_CH_C2H, 200, 37, 4096);
	buserr_window("emu:link=ideal,buserr=c2h:150,workers=2", MP_CH_C2H, 200, 150, 4096 + 8);
	buserr_window("emu:link=gen3x4,buserr=h2c:20", MP_CH_H2C, 100, 20, 2048);
	buserr_window("emu:link=ideal,buserr=h2c:99", MP_CH_H2C, 100, 99, 1024);
}
END_TEST

/* stall=c2h:N behind a window of small descriptors: the read-ahead stops before it, the
 * descriptors before it complete, it times out at HEAD, nothing after it is touched. */
START_TEST(test_stall_behind_window)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint8_t *buf;
	uint64_t bus;
	uint32_t i;
	const uint32_t count = 100, n_stall = 60, len = 2048;

	eb_open(&b, "emu:link=gen3x4,stall=c2h:60,workers=1");
	ering_init(&b, &r, MP_CH_C2H, 128);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, count * len, &km), 0);
	buf = pd_kmem_ptr(km);
	bus = pd_kmem_bus_addr(km);
	memset(buf, 0xee, count * len);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	cwr(&b, MP_CH_C2H, MP_CHREG_TIMEOUT_US, 20000);
	run(&b, MP_CH_C2H);
	for (i = 0; i < count; i++)
		ering_put_raw(&r, bus + (uint64_t)i * len, len, 0);
	ering_doorbell(&b, &r);
	ck_assert_uint_eq(wait_state(&b, MP_CH_C2H, MP_STATE_ERROR, EMU_WAIT_MS),
			  err_status(MP_ERR_TIMEOUT));
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_HEAD), n_stall);
	for (i = 0; i < n_stall; i++)
		ck_assert_uint_eq(rec_status(&r, i), DONE);
	ck_assert_uint_eq(rec_status(&r, n_stall), err_rec(MP_ERR_TIMEOUT));
	ck_assert_uint_eq(rec_bytes(&r, n_stall), 0);
	for (i = n_stall + 1; i < count; i++)
		ck_assert_uint_eq(rec_status(&r, i), 0);
	ck_assert_int_eq(pattern_mismatch(buf, n_stall * len / 4, 0), -1);
	for (i = n_stall * len; i < count * len; i++)
		ck_assert_msg(buf[i] == 0xee, "byte %u from the stalled descriptor on was written", i);
	ck_assert_uint_eq(bytes_reg(&b, MP_CH_C2H), (uint64_t)n_stall * len);
	eb_close(&b);
}
END_TEST

/* ABORT or RESET with a full window of small descriptors on a slow link. */
static void interrupt_window(unsigned int ch, bool reset)
{
	struct eb b;
	struct ering r;
	pd_kmem *km, *one;
	uint8_t *buf;
	uint64_t bus, moved;
	uint32_t i, h, st;
	const uint32_t count = 600, len = 4096;   /* gen1x1: ~18 us each, 11 ms in all */

	eb_open(&b, "emu:link=gen1x1,workers=1");
	ering_init(&b, &r, ch, 1024);
	/* one page more than the descriptors cover: the H2C transfer after the interruption
	 * starts where the moved bytes end, which is the end of the descriptors when a loaded
	 * host let all of them complete before the RESET or ABORT came */
	ck_assert_int_eq(pd_kmem_alloc(b.dev, (size_t)count * len + 4096, &km), 0);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 4096, &one), 0);
	buf = pd_kmem_ptr(km);
	bus = pd_kmem_bus_addr(km);
	memset(buf, 0xee, (size_t)count * len + 4096);
	if (ch == MP_CH_H2C)
		pattern_fill(buf, ((size_t)count * len + 4096) / 4, 0);
	set_test(&b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	wr(&b, MP_REG_PATGEN_SEED, 0);
	wr(&b, MP_REG_CHECK_SEED, 0);
	run(&b, ch);
	for (i = 0; i < count; i++)
		ering_put_raw(&r, bus + (uint64_t)i * len, len, 0);
	ering_doorbell(&b, &r);
	ck_assert(wait_head_ge(&b, ch, 20, EMU_WAIT_MS));
	cwr(&b, ch, MP_CHREG_CONTROL, reset ? MP_CHREG_CONTROL_RESET_MASK : MP_CHREG_CONTROL_ABORT_MASK);
	if (reset) {
		/* forgotten at once */
		ck_assert_uint_eq(crd(&b, ch, MP_CHREG_STATUS), MP_STATE_IDLE);
		ck_assert_uint_eq(crd(&b, ch, MP_CHREG_HEAD), 0);
		ck_assert_uint_eq(bytes_reg(&b, ch), 0);
		/* the descriptors that completed before it */
		for (h = 0; h < count && rec_status(&r, h) == DONE; h++)
			ck_assert_uint_eq(rec_bytes(&r, h), len);
		sleep_us(20000);
		for (i = h; i < count; i++)
			ck_assert_msg(rec_status(&r, i) == 0, "record %u written after RESET (%u done)",
				      i, h);
		/* the descriptor at HEAD had not completed: forgotten like those behind it */
		moved = (uint64_t)h * len;
	} else {
		st = wait_state(&b, ch, MP_STATE_ERROR, EMU_WAIT_MS);
		ck_assert_uint_eq(st, err_status(MP_ERR_ABORTED));
		h = crd(&b, ch, MP_CHREG_HEAD);
		ck_assert_uint_ge(h, 20);
		ck_assert_uint_lt(h, count);
		sleep_us(20000);
		ck_assert_uint_eq(crd(&b, ch, MP_CHREG_HEAD), h);
		for (i = 0; i < h; i++)
			ck_assert_uint_eq(rec_status(&r, i), DONE);
		ck_assert_uint_eq(rec_status(&r, h), err_rec(MP_ERR_ABORTED));
		/* one piece each: the aborted descriptor had completed nothing */
		ck_assert_uint_eq(rec_bytes(&r, h), 0);
		for (i = h + 1; i < count; i++)
			ck_assert_msg(rec_status(&r, i) == 0, "record %u written after the abort at %u",
				      i, h);
		ck_assert_uint_eq(bytes_reg(&b, ch), (uint64_t)h * len);
		ck_assert_uint_eq(rd(&b, MP_REG_IRQ_STATUS), MP_REG_IRQ_STATUS_ERROR_MASK);
		moved = (uint64_t)h * len + rec_bytes(&r, h);
		/* the window was full: HEAD and the descriptors behind it had their data written
		 * already (as posted writes would be), they just never complete */
		if (ch == MP_CH_C2H)
			ck_assert_int_eq(pattern_mismatch(buf + (size_t)(h + 1) * len, len / 4,
							  (h + 1) * len / 4), -1);
		if (ch == MP_CH_H2C)
			ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), moved / 4);
		cwr(&b, ch, MP_CHREG_CONTROL, MP_CHREG_CONTROL_RESET_MASK);
	}
	if (ch == MP_CH_C2H)
		ck_assert_int_eq(pattern_mismatch(buf, moved / 4, 0), -1);
	else
		ck_assert_uint_eq(rd(&b, MP_REG_CHECK_ERRORS), 0);
	/* the sources continue right after the moved bytes: read-ahead descriptors that never
	 * completed did not advance them */
	r.tail = 0;
	memset(r.mem, 0, (size_t)r.size * MP_ENGINE_DESC_SIZE);
	run(&b, ch);
	if (ch == MP_CH_C2H) {
		ering_put(&b, &r, pd_kmem_bus_addr(one), 64, 0);
		ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), DONE);
		ck_assert_int_eq(pattern_mismatch(pd_kmem_ptr(one), 16, (uint32_t)(moved / 4)), -1);
	} else {
		ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), moved / 4);
		ering_put(&b, &r, bus + moved, 64, 0);
		ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), DONE);
		ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), moved / 4 + 16);
		ck_assert_uint_eq(rd(&b, MP_REG_CHECK_ERRORS), 0);
	}
	eb_close(&b);
}

START_TEST(test_abort_full_window)
{
	interrupt_window(MP_CH_C2H, false);
	interrupt_window(MP_CH_H2C, false);
}
END_TEST

START_TEST(test_reset_full_window)
{
	interrupt_window(MP_CH_C2H, true);
	interrupt_window(MP_CH_H2C, true);
}
END_TEST

/* One corrupted word among many small H2C descriptors (user memory, pages and random):
 * counted exactly once, every word compared once. */
static void checker_one_bad(const char *name, size_t size, size_t bad_word)
{
	struct eb b;
	struct ering r;
	struct ubuf u;
	size_t i;

	eb_open(&b, name);
	ubuf_map(&b, &u, size, 4, PD_DMA_TO_DEVICE, 0);
	pattern_fill(u.buf, size / 4, 0x5000);
	u.buf[4 * bad_word + 2] ^= 0x40;
	ering_init(&b, &r, MP_CH_H2C, 4096);
	set_test(&b, 0, MP_H2C_SINK_CHECKER);
	wr(&b, MP_REG_CHECK_SEED, 0x5000);
	run(&b, MP_CH_H2C);
	for (i = 0; i < u.n; i++)
		ering_put_raw(&r, u.sg[i].bus_addr, (uint32_t)u.sg[i].length, 0);
	ering_doorbell(&b, &r);
	ck_assert(watch_in_order(&b, &r, 0, (uint32_t)u.n));
	ck_assert(wait_head(&b, MP_CH_H2C, (uint32_t)u.n, EMU_WAIT_MS));
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), size / 4);
	ck_assert_msg(rd(&b, MP_REG_CHECK_ERRORS) == 1, "%s: %u errors", name,
		      rd(&b, MP_REG_CHECK_ERRORS));
	ck_assert_uint_eq(bytes_reg(&b, MP_CH_H2C), size);
	ubuf_free(&u);
	eb_close(&b);
}

START_TEST(test_checker_one_bad_word)
{
	checker_one_bad("emu:link=ideal,sg=pages", 2u << 20, 300001);
	checker_one_bad("emu:link=gen4x16,sg=pages,workers=3", 1u << 20, 5);
	checker_one_bad("emu:link=ideal,sg=random,seed=12,workers=2", 4u << 20, (4u << 20) / 4 - 1);
	checker_one_bad("emu:link=gen3x8,sg=random,seed=13,workers=0", 2u << 20, 123456);
}
END_TEST

/* RUN = 0 with a window of small descriptors in flight: the descriptors already started
 * complete, nothing after them; RUN = 1 continues at HEAD with the pattern unbroken. */
START_TEST(test_halt_full_window)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint8_t *buf;
	uint64_t bus;
	uint32_t i, h, st;
	const uint32_t count = 600, len = 4096;

	eb_open(&b, "emu:link=gen1x1");
	ering_init(&b, &r, MP_CH_C2H, 1024);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, (size_t)count * len, &km), 0);
	buf = pd_kmem_ptr(km);
	bus = pd_kmem_bus_addr(km);
	memset(buf, 0xee, (size_t)count * len);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	run(&b, MP_CH_C2H);
	for (i = 0; i < count; i++)
		ering_put_raw(&r, bus + (uint64_t)i * len, len, 0);
	ering_doorbell(&b, &r);
	ck_assert(wait_head_ge(&b, MP_CH_C2H, 10, EMU_WAIT_MS));
	cwr(&b, MP_CH_C2H, MP_CHREG_CONTROL, 0);
	st = wait_state(&b, MP_CH_C2H, MP_STATE_IDLE, EMU_WAIT_MS);
	ck_assert_uint_eq(st, MP_STATE_IDLE);
	h = crd(&b, MP_CH_C2H, MP_CHREG_HEAD);
	ck_assert_uint_ge(h, 10);
	ck_assert_uint_lt(h, count);
	sleep_us(20000);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_HEAD), h);
	ck_assert_uint_eq(bytes_reg(&b, MP_CH_C2H), (uint64_t)h * len);
	for (i = 0; i < h; i++)
		ck_assert_uint_eq(rec_status(&r, i), DONE);
	for (i = h; i < count; i++)
		ck_assert_uint_eq(rec_status(&r, i), 0);
	ck_assert_int_eq(pattern_mismatch(buf, (size_t)h * len / 4, 0), -1);
	run(&b, MP_CH_C2H);
	ck_assert(wait_head(&b, MP_CH_C2H, count, EMU_WAIT_MS));
	ck_assert_int_eq(pattern_mismatch(buf, (size_t)count * len / 4, 0), -1);
	eb_close(&b);
}
END_TEST

/* CTRL.STOP in the middle of small descriptors: nothing behind it is read ahead. */
START_TEST(test_stop_in_window)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint8_t *buf;
	uint64_t bus;
	uint32_t i;
	const uint32_t len = 1024;

	eb_open(&b, "emu:link=gen2x1,workers=2");
	ering_init(&b, &r, MP_CH_C2H, 64);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 64 * len, &km), 0);
	buf = pd_kmem_ptr(km);
	bus = pd_kmem_bus_addr(km);
	memset(buf, 0xee, 64 * len);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	run(&b, MP_CH_C2H);
	for (i = 0; i < 64; i++)
		ering_put_raw(&r, bus + (uint64_t)i * len, len, i == 20 ? MP_DESC_CTRL_STOP_MASK : 0);
	ering_doorbell(&b, &r);
	ck_assert_uint_eq(wait_state(&b, MP_CH_C2H, MP_STATE_IDLE, EMU_WAIT_MS), MP_STATE_IDLE);
	ck_assert(wait_head(&b, MP_CH_C2H, 21, EMU_WAIT_MS));
	sleep_us(20000);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_HEAD), 21);
	ck_assert_uint_eq(rec_status(&r, 21), 0);
	ck_assert_int_eq(pattern_mismatch(buf, 21 * len / 4, 0), -1);
	for (i = 21 * len; i < 64 * len; i++)
		ck_assert_msg(buf[i] == 0xee, "byte %u behind the STOP descriptor was written", i);
	run(&b, MP_CH_C2H);
	ck_assert(wait_head(&b, MP_CH_C2H, 64, EMU_WAIT_MS));
	ck_assert_int_eq(pattern_mismatch(buf, 64 * len / 4, 0), -1);
	eb_close(&b);
}
END_TEST

/* User-stream packets spanning many small descriptors: each packet end completes its
 * descriptor early with EOP, the next descriptor starts the next packet. */
START_TEST(test_user_packets_window)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint8_t *buf;
	uint64_t bus;
	uint32_t i, got, want, word = 0, pkt_off = 0;
	const uint32_t pkt = 10000, len = 4096, count = 300;

	eb_open(&b, "emu:link=gen3x8,user=pkt:10000,workers=2");
	ering_init(&b, &r, MP_CH_C2H, 512);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, (size_t)count * len, &km), 0);
	buf = pd_kmem_ptr(km);
	bus = pd_kmem_bus_addr(km);
	run(&b, MP_CH_C2H);
	for (i = 0; i < count; i++)
		ering_put_raw(&r, bus + (uint64_t)i * len, len, 0);
	ering_doorbell(&b, &r);
	ck_assert(watch_in_order(&b, &r, 0, count));
	for (i = 0; i < count; i++) {
		want = pkt - pkt_off < len ? pkt - pkt_off : len;
		got = rec_bytes(&r, i);
		ck_assert_msg(got == want, "descriptor %u: %u bytes, want %u", i, got, want);
		pkt_off += got;
		ck_assert_uint_eq(rec_status(&r, i), DONE | (pkt_off == pkt ? MP_DESC_RESULT_STATUS_EOP_MASK : 0));
		if (pkt_off == pkt)
			pkt_off = 0;
		ck_assert_int_eq(pattern_mismatch(buf + (size_t)i * len, got / 4, word), -1);
		word += got / 4;
	}
	ck_assert_uint_eq(bytes_reg(&b, MP_CH_C2H), (uint64_t)word * 4);
	eb_close(&b);
}
END_TEST

/* A user buffer unmapped while a stream of small descriptors runs into it: nothing is
 * written into it once pd_umem_unmap has returned, and the channel stops with BUS_ERROR in
 * order (everything before the failing descriptor complete). */
START_TEST(test_unmap_under_window)
{
	struct eb b;
	struct ering r;
	struct ubuf u;
	uint8_t *snap;
	uint32_t i, h;
	const size_t size = 4u << 20;

	eb_open(&b, "emu:link=gen1x1,sg=pages,workers=2");   /* ~18 ms for 4 MiB */
	ubuf_map(&b, &u, size, 0, PD_DMA_FROM_DEVICE, 0xee);
	ering_init(&b, &r, MP_CH_C2H, 2048);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	run(&b, MP_CH_C2H);
	for (i = 0; i < u.n; i++)
		ering_put_raw(&r, u.sg[i].bus_addr, (uint32_t)u.sg[i].length, 0);
	ering_doorbell(&b, &r);
	ck_assert(wait_head_ge(&b, MP_CH_C2H, 50, EMU_WAIT_MS));
	ck_assert_int_eq(pd_umem_unmap(u.um), 0);
	ck_assert_msg(crd(&b, MP_CH_C2H, MP_CHREG_HEAD) < u.n, "all done before the unmap");
	u.um = NULL;
	snap = malloc(size);
	memcpy(snap, u.buf, size);
	ck_assert_uint_eq(wait_state(&b, MP_CH_C2H, MP_STATE_ERROR, EMU_WAIT_MS),
			  err_status(MP_ERR_BUS_ERROR));
	h = crd(&b, MP_CH_C2H, MP_CHREG_HEAD);
	ck_assert_uint_ge(h, 50);
	ck_assert_uint_lt(h, u.n);
	sleep_us(10000);
	ck_assert_int_eq(memcmp(snap, u.buf, size), 0);
	for (i = 0; i < h; i++)
		ck_assert_uint_eq(rec_status(&r, i), DONE);
	ck_assert_uint_eq(rec_status(&r, h), err_rec(MP_ERR_BUS_ERROR));
	ck_assert_uint_eq(rec_bytes(&r, h), 0);
	for (i = h + 1; i < u.n; i++)
		ck_assert_uint_eq(rec_status(&r, i), 0);
	/* what completed is there */
	ck_assert_int_eq(pattern_mismatch(u.buf, (size_t)h * 4096 / 4, 0), -1);
	free(snap);
	ubuf_free(&u);
	eb_close(&b);
}
END_TEST

/* Both directions at once with small descriptors and a shared pool. */
struct dir_run {
	const char *what;
	struct eb *b;
	struct ering *r;
	struct ubuf *u;
	bool ok;
};

static void *dir_main(void *arg)
{
	struct dir_run *d = arg;
	size_t i;

	for (i = 0; i < d->u->n; i++)
		ering_put_raw(d->r, d->u->sg[i].bus_addr, (uint32_t)d->u->sg[i].length, 0);
	ering_doorbell(d->b, d->r);
	d->ok = wait_head(d->b, d->r->ch, (uint32_t)d->u->n, EMU_WAIT_MS);
	return NULL;
}

/*
 * C2H descriptors in flight at once that write the same memory (overlapping by halves): what
 * is left is what writes in descriptor order leave, as from a link, byte for byte, and no
 * two threads write the same bytes at once (TSan) - the read-ahead window and the copy
 * threads must not reorder them.
 */
static void c2h_overlapping(const char *name)
{
	enum { LEN = 128u << 10, COUNT = 48, SPAN = 3 * LEN };
	const uint32_t seed = 0x5eed0000u;
	uint8_t *want = malloc(SPAN);
	uint32_t word = seed, i, k, at;
	struct ering r;
	pd_kmem *km;
	struct eb b;

	ck_assert_ptr_nonnull(want);
	memset(want, 0xee, SPAN);
	eb_open(&b, name);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, SPAN, &km), 0);
	memset(pd_kmem_ptr(km), 0xee, SPAN);
	ering_init(&b, &r, MP_CH_C2H, 64);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	wr(&b, MP_REG_PATGEN_SEED, seed);
	run(&b, MP_CH_C2H);
	for (i = 0; i < COUNT; i++) {
		at = (i * 7 % 5) * (LEN / 2);   /* 0, 1.5, 0.5, 2, 1 lengths ... */
		ering_put_raw(&r, pd_kmem_bus_addr(km) + at, LEN, 0);
		for (k = 0; k < LEN / 4; k++, word++)
			memcpy(want + at + 4 * k, &word, 4);   /* little-endian host (x86) */
	}
	ering_doorbell(&b, &r);
	ck_assert_msg(wait_head(&b, MP_CH_C2H, COUNT, EMU_WAIT_MS), "%s: never completed", name);
	for (i = 0; i < COUNT; i++)
		ck_assert_uint_eq(rec_status(&r, i), DONE);
	for (k = 0; k < SPAN; k++)
		if (((uint8_t *)pd_kmem_ptr(km))[k] != want[k])
			ck_abort_msg("%s: byte %u is 0x%02x, written in order it would be 0x%02x", name, k,
				     ((uint8_t *)pd_kmem_ptr(km))[k], want[k]);
	pd_kmem_free(km);
	eb_close(&b);
	free(want);
}

START_TEST(test_overlapping_in_order)
{
	c2h_overlapping("emu:link=ideal,workers=4");
	c2h_overlapping("emu:link=gen4x16,workers=3");
	c2h_overlapping("emu:link=gen3x8,workers=2,window=8");
}
END_TEST

START_TEST(test_both_directions_small)
{
	struct eb b;
	struct ering rc, rh;
	struct ubuf uc, uh;
	struct dir_run dc, dh;
	pthread_t tc, th;
	const size_t size = 4u << 20;

	eb_open(&b, "emu:link=gen4x16,sg=random,seed=21,workers=2");
	ubuf_map(&b, &uc, size, 0, PD_DMA_FROM_DEVICE, 0);
	ubuf_map(&b, &uh, size, 0, PD_DMA_TO_DEVICE, 0);
	pattern_fill(uh.buf, size / 4, 77);
	ering_init(&b, &rc, MP_CH_C2H, 4096);
	ering_init(&b, &rh, MP_CH_H2C, 4096);
	set_test(&b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	wr(&b, MP_REG_PATGEN_SEED, 33);
	wr(&b, MP_REG_CHECK_SEED, 77);
	run(&b, MP_CH_C2H);
	run(&b, MP_CH_H2C);
	dc = (struct dir_run){ "C2H", &b, &rc, &uc, false };
	dh = (struct dir_run){ "H2C", &b, &rh, &uh, false };
	ck_assert_int_eq(pthread_create(&tc, NULL, dir_main, &dc), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, dir_main, &dh), 0);
	pthread_join(tc, NULL);
	pthread_join(th, NULL);
	ck_assert(dc.ok);
	ck_assert(dh.ok);
	ck_assert_int_eq(pattern_mismatch(uc.buf, size / 4, 33), -1);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), size / 4);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_ERRORS), 0);
	ubuf_free(&uc);
	ubuf_free(&uh);
	eb_close(&b);
}
END_TEST

Suite *test_suite(void)
{
	Suite *s = suite_create("emu-window");
	TCase *tc = tcase_create("emu-window");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_small_pages);
	tcase_add_test(tc, test_small_random);
	tcase_add_test(tc, test_small_stream_wraps);
	tcase_add_test(tc, test_buserr_in_window);
	tcase_add_test(tc, test_stall_behind_window);
	tcase_add_test(tc, test_abort_full_window);
	tcase_add_test(tc, test_reset_full_window);
	tcase_add_test(tc, test_checker_one_bad_word);
	tcase_add_test(tc, test_halt_full_window);
	tcase_add_test(tc, test_stop_in_window);
	tcase_add_test(tc, test_user_packets_window);
	tcase_add_test(tc, test_unmap_under_window);
	tcase_add_test(tc, test_both_directions_small);
	tcase_add_test(tc, test_overlapping_in_order);
	suite_add_tcase(s, tc);
	return s;
}
