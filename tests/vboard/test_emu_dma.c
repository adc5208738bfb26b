// SPDX-License-Identifier: GPL-2.0
/*
 * Virtual board conformance, part 2: the data path. C2H pattern data byte for byte at odd
 * aligned offsets, across pages, descriptors, 4 GiB and the ring wrap; H2C into the checker;
 * loopback; user memory with scattered pages; both channels at once; STOP, halt and RUN;
 * the user-stream model.
 */
#include <pthread.h>

#include "test_emu_util.h"

#define GUARD 0xeeu

static void expect_guard(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		ck_assert_msg(p[i] == GUARD, "byte %zu outside the transfer was written", i);
}

START_TEST(test_c2h_pattern_odd_offsets)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint8_t *buf;
	uint64_t bus;
	uint32_t n, word = 0, lo, hi;
	const uint32_t seed = 0x1000fff0u;   /* wraps mod 2^32 inside the stream */
	/* offset, length: tiny, crossing one page, several pages, page aligned */
	static const uint32_t t[][2] = {
		{ 4, 4 }, { 12, 4092 }, { 8192 + 4, 12288 }, { 24576, 4096 }, { 28676, 20 },
		{ 32768 + 4092, 8 }, { 40960 - 4, 4 },
	};
	size_t i;

	eb_open(&b, "emu:link=ideal");
	ering_init(&b, &r, MP_CH_C2H, 16);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 65536, &km), 0);
	buf = pd_kmem_ptr(km);
	bus = pd_kmem_bus_addr(km);
	memset(buf, GUARD, 65536);
	set_test(&b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_USER);
	wr(&b, MP_REG_PATGEN_SEED, seed);
	ck_assert_uint_eq(rd(&b, MP_REG_PATGEN_SEED), seed);
	run(&b, MP_CH_C2H);
	ck_assert_uint_eq(state_of(crd(&b, MP_CH_C2H, MP_CHREG_STATUS)), MP_STATE_RUNNING);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_CONTROL), MP_CHREG_CONTROL_RUN_MASK);
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ering_put_raw(&r, bus + t[i][0], t[i][1], 0);
	ering_doorbell(&b, &r);
	ck_assert(wait_head(&b, MP_CH_C2H, r.tail, EMU_WAIT_MS));
	for (i = 0, n = 0; i < sizeof(t) / sizeof(t[0]); i++, n++) {
		ck_assert_uint_eq(rec_status(&r, n), MP_DESC_RESULT_STATUS_DONE_MASK);
		ck_assert_uint_eq(rec_bytes(&r, n), t[i][1]);
		/* software's words are never written by the engine */
		ck_assert_uint_eq(*(uint32_t *)(void *)(eslot(&r, n) + MP_DESC_SW_COOKIE_LO),
				  0xc0de0000u | n);
		ck_assert_int_eq(pattern_mismatch(buf + t[i][0], t[i][1] / 4, seed + word), -1);
		word += t[i][1] / 4;
	}
	/* everything between the transfers is untouched */
	expect_guard(buf, 4);
	expect_guard(buf + 8, 4);
	expect_guard(buf + 4104, 8192 + 4 - 4104);
	expect_guard(buf + 28676 + 20, 32768 + 4092 - 28676 - 20);
	expect_guard(buf + 40960, 65536 - 40960);
	/* BYTES counts them; BYTES_LO latches BYTES_HI */
	lo = crd(&b, MP_CH_C2H, MP_CHREG_BYTES_LO);
	hi = crd(&b, MP_CH_C2H, MP_CHREG_BYTES_HI);
	ck_assert_uint_eq(hi, 0);
	ck_assert_uint_eq(lo, word * 4);
	ck_assert_uint_eq(state_of(crd(&b, MP_CH_C2H, MP_CHREG_STATUS)), MP_STATE_RUNNING);
	eb_close(&b);
}
END_TEST

START_TEST(test_c2h_ring_wrap)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint8_t *buf;
	uint64_t bus;
	uint32_t n, batch, k;
	const uint32_t total = 37, len = 1024 + 12;

	eb_open(&b, "emu:link=ideal");
	ering_init(&b, &r, MP_CH_C2H, 4);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, total * len, &km), 0);
	buf = pd_kmem_ptr(km);
	bus = pd_kmem_bus_addr(km);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	wr(&b, MP_REG_PATGEN_SEED, 7);
	run(&b, MP_CH_C2H);
	for (n = 0; n < total; n += batch) {
		batch = total - n < 3 ? total - n : 3;
		for (k = 0; k < batch; k++)
			ering_put_raw(&r, bus + (uint64_t)(n + k) * len, len,
				      k == batch - 1 ? MP_DESC_CTRL_IRQ_MASK : 0);
		ering_doorbell(&b, &r);
		ck_assert(wait_head(&b, MP_CH_C2H, n + batch, EMU_WAIT_MS));
		for (k = 0; k < batch; k++) {
			ck_assert_uint_eq(rec_status(&r, n + k), MP_DESC_RESULT_STATUS_DONE_MASK);
			ck_assert_uint_eq(rec_bytes(&r, n + k), len);
		}
	}
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_HEAD), total);
	ck_assert_int_eq(pattern_mismatch(buf, total * len / 4, 7), -1);
	/* the ring may be completely full: TAIL - HEAD == RING_SIZE */
	for (k = 0; k < 4; k++)
		ering_put_raw(&r, bus + (uint64_t)k * len, len, 0);
	ering_doorbell(&b, &r);
	ck_assert(wait_head(&b, MP_CH_C2H, total + 4, EMU_WAIT_MS));
	ck_assert_uint_eq(state_of(crd(&b, MP_CH_C2H, MP_CHREG_STATUS)), MP_STATE_RUNNING);
	eb_close(&b);
}
END_TEST

/* C2H into user memory whose pages are scattered in bus address space, one descriptor per
 * SG entry, and a 4-byte-aligned buffer start. */
static void c2h_umem(const char *name)
{
	const size_t size = (1u << 20) + 4092, off = 4;
	uint8_t *mem = aligned_alloc(4096, (1u << 20) + 3 * 4096), *buf = mem + off;
	struct pd_sg_entry *sg;
	struct eb b;
	struct ering r;
	pd_umem *um;
	size_t n, i;

	memset(mem, GUARD, size + 8192);
	eb_open(&b, name);
	ck_assert_int_eq(pd_umem_map(b.dev, buf, size, PD_DMA_FROM_DEVICE, &um), 0);
	n = pd_umem_sg_count(um);
	sg = calloc(n, sizeof(*sg));
	ck_assert_int_eq(pd_umem_sglist(um, sg, n), (int)n);
	ering_init(&b, &r, MP_CH_C2H, 1024);
	ck_assert_uint_le(n, 1024);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	wr(&b, MP_REG_PATGEN_SEED, 0xabc00000u);
	run(&b, MP_CH_C2H);
	for (i = 0; i < n; i++)
		ering_put_raw(&r, sg[i].bus_addr, (uint32_t)sg[i].length, 0);
	ering_doorbell(&b, &r);
	ck_assert(wait_head(&b, MP_CH_C2H, (uint32_t)n, EMU_WAIT_MS));
	ck_assert_uint_eq(rec_status(&r, (uint32_t)n - 1), MP_DESC_RESULT_STATUS_DONE_MASK);
	ck_assert_int_eq(pd_umem_sync(um, PD_SYNC_FOR_CPU), 0);
	ck_assert_int_eq(pattern_mismatch(buf, size / 4, 0xabc00000u), -1);
	expect_guard(mem, off);
	expect_guard(buf + size, 8192 - off);
	free(sg);
	eb_close(&b);
	free(mem);
}

START_TEST(test_c2h_umem_pages)
{
	c2h_umem("emu:link=ideal,sg=pages");
}
END_TEST

START_TEST(test_c2h_umem_random)
{
	c2h_umem("emu:link=ideal,sg=random,seed=9");
}
END_TEST

START_TEST(test_c2h_max_descriptor)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	const uint32_t max = MP_ENGINE_MAX_DESC_LEN;

	eb_open(&b, "emu:link=ideal,workers=1");
	ering_init(&b, &r, MP_CH_C2H, 2);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, max + 8, &km), 0);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	run(&b, MP_CH_C2H);
	ering_put(&b, &r, pd_kmem_bus_addr(km) + 4, max, 0);
	ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), MP_DESC_RESULT_STATUS_DONE_MASK);
	ck_assert_uint_eq(rec_bytes(&r, 0), max);
	ck_assert_int_eq(pattern_mismatch((uint8_t *)pd_kmem_ptr(km) + 4, max / 4, 0), -1);
	eb_close(&b);
}
END_TEST

/*
 * Once software sees a record, a register read counts its descriptor: HEAD, BYTES and (for a
 * STOP descriptor) STATUS. Each read is issued the moment the record shows, so a model that
 * wrote HEAD or BYTES after the record, unguarded, fails here now and then.
 */
START_TEST(test_registers_count_a_seen_record)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	const uint32_t n = 20000;

	eb_open(&b, "emu:link=ideal,workers=1");
	ering_init(&b, &r, MP_CH_C2H, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 4096, &km), 0);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	run(&b, MP_CH_C2H);
	for (uint32_t i = 0; i < n; i++) {
		bool stop = i % 16 == 15;

		ering_put(&b, &r, pd_kmem_bus_addr(km) + (i % 8) * 4, 4,
			  stop ? MP_DESC_CTRL_STOP_MASK : 0);
		while (!(rec_status(&r, i) & MP_DESC_RESULT_STATUS_DONE_MASK))
			;
		ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_HEAD), i + 1);
		ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_BYTES_LO), (i + 1) * 4);
		if (stop) {
			ck_assert_uint_eq(state_of(crd(&b, MP_CH_C2H, MP_CHREG_STATUS)), MP_STATE_IDLE);
			run(&b, MP_CH_C2H);
		}
	}
	eb_close(&b);
}
END_TEST

/* A mapping that straddles 4 GiB: the engine must use ADDR_HI and carry across it. */
START_TEST(test_c2h_across_4g)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint64_t bus;

	eb_open(&b, "emu:link=ideal,iova=0xffffe000");
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 16384, &km), 0);
	bus = pd_kmem_bus_addr(km);
	ck_assert_uint_eq(bus, 0xffffe000ull);
	ering_init(&b, &r, MP_CH_C2H, 2);
	ck_assert_uint_gt(r.bus, 0xffffffffull);   /* the ring itself lies above 4 GiB */
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	wr(&b, MP_REG_PATGEN_SEED, 100);
	run(&b, MP_CH_C2H);
	ering_put(&b, &r, bus + 4, 16384 - 8, 0);
	ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), MP_DESC_RESULT_STATUS_DONE_MASK);
	ck_assert_int_eq(pattern_mismatch((uint8_t *)pd_kmem_ptr(km) + 4, (16384 - 8) / 4, 100), -1);
	eb_close(&b);
}
END_TEST

START_TEST(test_patgen_seed_restarts)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint8_t *buf;

	eb_open(&b, "emu:link=ideal");
	ering_init(&b, &r, MP_CH_C2H, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 4096, &km), 0);
	buf = pd_kmem_ptr(km);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	wr(&b, MP_REG_PATGEN_SEED, 10);
	run(&b, MP_CH_C2H);
	ering_put(&b, &r, pd_kmem_bus_addr(km), 64, 0);
	ck_assert(wait_head(&b, MP_CH_C2H, 1, EMU_WAIT_MS));
	ering_put(&b, &r, pd_kmem_bus_addr(km) + 64, 64, 0);
	ck_assert(wait_head(&b, MP_CH_C2H, 2, EMU_WAIT_MS));
	ck_assert_int_eq(pattern_mismatch(buf, 32, 10), -1);     /* one stream over both */
	wr(&b, MP_REG_PATGEN_SEED, 5000);
	ering_put(&b, &r, pd_kmem_bus_addr(km) + 128, 64, 0);
	ck_assert(wait_head(&b, MP_CH_C2H, 3, EMU_WAIT_MS));
	ck_assert_int_eq(pattern_mismatch(buf + 128, 16, 5000), -1);
	eb_close(&b);
}
END_TEST

START_TEST(test_h2c_checker)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint8_t *buf;
	uint64_t bus;
	const uint32_t size = 3 * 4096 + 40, seed = 0xfffffff0u;

	eb_open(&b, "emu:link=ideal");
	ering_init(&b, &r, MP_CH_H2C, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, size + 8, &km), 0);
	buf = pd_kmem_ptr(km);
	bus = pd_kmem_bus_addr(km);
	pattern_fill(buf + 4, size / 4, seed);
	set_test(&b, MP_C2H_SOURCE_USER, MP_H2C_SINK_CHECKER);
	wr(&b, MP_REG_CHECK_SEED, seed);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), 0);
	run(&b, MP_CH_H2C);
	/* the stream continues over descriptors of odd sizes */
	ering_put_raw(&r, bus + 4, 4096 + 8, MP_DESC_CTRL_EOP_MASK);
	ering_put_raw(&r, bus + 4 + 4096 + 8, 4, 0);
	ering_put_raw(&r, bus + 4 + 4096 + 12, size - 4096 - 12, 0);
	ering_doorbell(&b, &r);
	ck_assert(wait_head(&b, MP_CH_H2C, 3, EMU_WAIT_MS));
	ck_assert_uint_eq(rec_status(&r, 2), MP_DESC_RESULT_STATUS_DONE_MASK);
	ck_assert_uint_eq(rec_bytes(&r, 2), size - 4096 - 12);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), size / 4);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_ERRORS), 0);

	/* corrupt three words: the checker counts them */
	wr(&b, MP_REG_CHECK_SEED, seed);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), 0);
	buf[4 + 100] ^= 1;
	buf[4 + 4096] ^= 0x80;
	buf[4 + size - 1] ^= 0x10;
	ering_put(&b, &r, bus + 4, size, 0);
	ck_assert(wait_head(&b, MP_CH_H2C, 4, EMU_WAIT_MS));
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), size / 4);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_ERRORS), 3);
	/* a wrong seed: every word differs */
	wr(&b, MP_REG_CHECK_SEED, seed + 1);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_ERRORS), 0);
	ering_put(&b, &r, bus + 4, 400, 0);
	ck_assert(wait_head(&b, MP_CH_H2C, 5, EMU_WAIT_MS));
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_ERRORS), 100);
	eb_close(&b);
}
END_TEST

START_TEST(test_h2c_user_sink_takes_data)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;

	eb_open(&b, "emu:link=ideal");
	ering_init(&b, &r, MP_CH_H2C, 4);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 8192, &km), 0);
	run(&b, MP_CH_H2C);
	ering_put(&b, &r, pd_kmem_bus_addr(km), 8192, MP_DESC_CTRL_EOP_MASK);
	ck_assert_uint_eq(wait_done(&r, 0, EMU_WAIT_MS), MP_DESC_RESULT_STATUS_DONE_MASK);
	ck_assert_uint_eq(rec_bytes(&r, 0), 8192);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), 0);
	eb_close(&b);
}
END_TEST

static void loopback(const char *name, uint32_t size, uint32_t h2c_len, uint32_t c2h_len,
		     bool c2h_first_late)
{
	struct eb b;
	struct ering rh, rc;
	pd_kmem *src, *dst;
	uint8_t *s, *d;
	uint32_t i, nh = 0, nc = 0;

	eb_open(&b, name);
	ering_init(&b, &rh, MP_CH_H2C, 64);
	ering_init(&b, &rc, MP_CH_C2H, 64);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, size, &src), 0);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, size, &dst), 0);
	s = pd_kmem_ptr(src);
	d = pd_kmem_ptr(dst);
	srand(size);
	for (i = 0; i < size; i++)
		s[i] = (uint8_t)rand();
	set_test(&b, MP_C2H_SOURCE_LOOPBACK, MP_H2C_SINK_LOOPBACK);
	for (i = 0; i < size; i += h2c_len, nh++)
		ering_put_raw(&rh, pd_kmem_bus_addr(src) + i, size - i < h2c_len ? size - i : h2c_len, 0);
	for (i = 0; i < size; i += c2h_len, nc++)
		ering_put_raw(&rc, pd_kmem_bus_addr(dst) + i, size - i < c2h_len ? size - i : c2h_len, 0);
	ering_doorbell(&b, &rh);
	ering_doorbell(&b, &rc);
	run(&b, MP_CH_H2C);
	if (c2h_first_late) {
		/* H2C alone fills the FIFO and then stalls: no timeout, no error */
		cwr(&b, MP_CH_H2C, MP_CHREG_TIMEOUT_US, 1000);
		ck_assert(wait_busy(&b, MP_CH_H2C, EMU_WAIT_MS));
		sleep_us(30000);
		ck_assert_uint_lt(crd(&b, MP_CH_H2C, MP_CHREG_HEAD), nh);
		ck_assert_uint_eq(crd(&b, MP_CH_H2C, MP_CHREG_STATUS),
				  MP_STATE_RUNNING | MP_CHREG_STATUS_BUSY_MASK);
	}
	run(&b, MP_CH_C2H);
	ck_assert(wait_head(&b, MP_CH_H2C, nh, EMU_WAIT_MS));
	ck_assert(wait_head(&b, MP_CH_C2H, nc, EMU_WAIT_MS));
	ck_assert_uint_eq(rec_status(&rc, nc - 1), MP_DESC_RESULT_STATUS_DONE_MASK);
	ck_assert_int_eq(memcmp(s, d, size), 0);
	eb_close(&b);
}

START_TEST(test_loopback)
{
	loopback("emu:link=ideal", 300 * 1024 + 12, 12 * 1024 + 4, 20 * 1024 + 8, false);
}
END_TEST

START_TEST(test_loopback_fifo_full)
{
	loopback("emu:link=ideal,fifo=4K", 64 * 1024, 8192, 4096 + 4, true);
}
END_TEST

START_TEST(test_loopback_paced)
{
	loopback("emu:link=gen2x4", 1024 * 1024, 64 * 1024, 100 * 1024 + 4, false);
}
END_TEST

/* Both channels at once, each fed from its own thread. */
struct side {
	struct eb *b;
	struct ering *r;
	pd_kmem *km;
	uint32_t len, count, bufs;
	bool ok;
};

static void *feed(void *arg)
{
	struct side *s = arg;
	uint32_t n = 0, head;

	while (n < s->count) {
		head = crd(s->b, s->r->ch, MP_CHREG_HEAD);
		while (n < s->count && s->r->tail - head < s->r->size) {
			ering_put_raw(s->r, pd_kmem_bus_addr(s->km) + (uint64_t)(n % s->bufs) * s->len,
				      s->len, 0);
			n++;
		}
		ering_doorbell(s->b, s->r);
		sleep_us(100);
	}
	s->ok = wait_head(s->b, s->r->ch, s->count, EMU_WAIT_MS);
	return NULL;
}

START_TEST(test_both_channels)
{
	struct eb b;
	struct ering rc, rh;
	struct side c2h, h2c;
	pthread_t tc, th;
	const uint32_t len = 16384, count = 400;
	uint32_t i;

	eb_open(&b, "emu:link=gen3x4");
	ering_init(&b, &rc, MP_CH_C2H, 16);
	ering_init(&b, &rh, MP_CH_H2C, 16);
	c2h = (struct side){ &b, &rc, NULL, len, count, 16, false };
	h2c = (struct side){ &b, &rh, NULL, len, count, count, false };
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 16 * len, &c2h.km), 0);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, count * len, &h2c.km), 0);
	/* H2C: one pattern stream over all descriptors; C2H: sixteen buffers round robin */
	pattern_fill(pd_kmem_ptr(h2c.km), count * len / 4, 0);
	set_test(&b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	wr(&b, MP_REG_CHECK_SEED, 0);
	run(&b, MP_CH_C2H);
	run(&b, MP_CH_H2C);
	ck_assert_int_eq(pthread_create(&tc, NULL, feed, &c2h), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, feed, &h2c), 0);
	pthread_join(tc, NULL);
	pthread_join(th, NULL);
	ck_assert(c2h.ok);
	ck_assert(h2c.ok);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_WORDS), count * len / 4);
	ck_assert_uint_eq(rd(&b, MP_REG_CHECK_ERRORS), 0);
	/* the last 16 C2H buffers hold the end of the pattern stream, in order */
	for (i = 0; i < 16; i++)
		ck_assert_int_eq(pattern_mismatch((uint8_t *)pd_kmem_ptr(c2h.km) + i * len, len / 4,
						  (count - 16 + i) * (len / 4)), -1);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_BYTES_LO), count * len);
	ck_assert_uint_eq(crd(&b, MP_CH_H2C, MP_CHREG_BYTES_LO), count * len);
	eb_close(&b);
}
END_TEST

START_TEST(test_stop_and_run)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint64_t bus;

	eb_open(&b, "emu:link=ideal");
	ering_init(&b, &r, MP_CH_C2H, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 4096, &km), 0);
	bus = pd_kmem_bus_addr(km);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	/* queued while IDLE: nothing moves until RUN */
	ering_put_raw(&r, bus, 64, 0);
	ering_put_raw(&r, bus + 64, 64, MP_DESC_CTRL_STOP_MASK);
	ering_put_raw(&r, bus + 128, 64, 0);
	ering_doorbell(&b, &r);
	sleep_us(20000);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_HEAD), 0);
	ck_assert_uint_eq(rec_status(&r, 0), 0);
	ck_assert_uint_eq(state_of(crd(&b, MP_CH_C2H, MP_CHREG_STATUS)), MP_STATE_IDLE);
	run(&b, MP_CH_C2H);
	/* STOP: the channel goes IDLE after descriptor 1, RUN is cleared */
	ck_assert_uint_eq(state_of(wait_state(&b, MP_CH_C2H, MP_STATE_IDLE, EMU_WAIT_MS)), MP_STATE_IDLE);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_HEAD), 2);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_CONTROL), 0);
	sleep_us(20000);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_HEAD), 2);
	ck_assert_uint_eq(rec_status(&r, 2), 0);
	/* RUN again continues at HEAD */
	run(&b, MP_CH_C2H);
	ck_assert(wait_head(&b, MP_CH_C2H, 3, EMU_WAIT_MS));
	ck_assert_int_eq(pattern_mismatch(pd_kmem_ptr(km), 48, 0), -1);
	/* RUN = 0 with nothing in flight: IDLE at once */
	ck_assert(wait_busy_is(&b, MP_CH_C2H, false, EMU_WAIT_MS));
	cwr(&b, MP_CH_C2H, MP_CHREG_CONTROL, 0);
	ck_assert_uint_eq(state_of(crd(&b, MP_CH_C2H, MP_CHREG_STATUS)), MP_STATE_IDLE);
	eb_close(&b);
}
END_TEST

/* RUN = 0 lets the descriptor in flight finish, then the channel is IDLE. */
START_TEST(test_halt_in_flight)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint64_t bus;
	uint32_t st, h, i;

	eb_open(&b, "emu:link=gen1x1");   /* 2 MiB take ~9.2 ms */
	ering_init(&b, &r, MP_CH_C2H, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 16u << 20, &km), 0);
	bus = pd_kmem_bus_addr(km);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	run(&b, MP_CH_C2H);
	for (i = 0; i < 8; i++)
		ering_put_raw(&r, bus + ((uint64_t)i << 21), 2u << 20, 0);
	ering_doorbell(&b, &r);
	ck_assert(wait_busy(&b, MP_CH_C2H, EMU_WAIT_MS));
	st = crd(&b, MP_CH_C2H, MP_CHREG_STATUS);
	ck_assert_uint_eq(st, MP_STATE_RUNNING | MP_CHREG_STATUS_BUSY_MASK);
	cwr(&b, MP_CH_C2H, MP_CHREG_CONTROL, 0);
	/* still RUNNING until the descriptor in flight is done (unless it just finished) */
	st = wait_state(&b, MP_CH_C2H, MP_STATE_IDLE, EMU_WAIT_MS);
	ck_assert_uint_eq(st, MP_STATE_IDLE);
	h = crd(&b, MP_CH_C2H, MP_CHREG_HEAD);
	ck_assert_uint_ge(h, 1);
	ck_assert_uint_lt(h, 8);
	ck_assert_uint_eq(rec_status(&r, h - 1), MP_DESC_RESULT_STATUS_DONE_MASK);
	sleep_us(20000);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_HEAD), h);
	ck_assert_uint_eq(rec_status(&r, h), 0);
	run(&b, MP_CH_C2H);
	ck_assert(wait_head(&b, MP_CH_C2H, 8, EMU_WAIT_MS));
	ck_assert_int_eq(pattern_mismatch(pd_kmem_ptr(km), (16u << 20) / 4, 0), -1);
	eb_close(&b);
}
END_TEST

/* Ring registers are ignored while RUNNING, accepted when IDLE; TEST_CONTROL likewise. */
START_TEST(test_config_locked_while_running)
{
	struct eb b;
	struct ering r;

	eb_open(&b, "emu:link=ideal");
	ering_init(&b, &r, MP_CH_C2H, 8);
	run(&b, MP_CH_C2H);
	cwr(&b, MP_CH_C2H, MP_CHREG_RING_SIZE, 16);
	cwr(&b, MP_CH_C2H, MP_CHREG_RING_BASE_LO, 0x1000);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_RING_SIZE), 8);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_RING_BASE_LO), (uint32_t)r.bus);
	set_test(&b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	ck_assert_uint_eq(rd(&b, MP_REG_TEST_CONTROL), 0);
	cwr(&b, MP_CH_C2H, MP_CHREG_CONTROL, 0);
	cwr(&b, MP_CH_C2H, MP_CHREG_RING_SIZE, 16);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_RING_SIZE), 16);
	set_test(&b, MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	ck_assert_uint_eq(rd(&b, MP_REG_TEST_CONTROL), 0x11);
	cwr(&b, MP_CH_C2H, MP_CHREG_TIMEOUT_US, 1234);
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_TIMEOUT_US), 1234);
	eb_close(&b);
}
END_TEST

/* The user-stream model: a counter with a packet end every 1000 bytes. */
START_TEST(test_user_packets)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	uint8_t *buf;
	uint64_t bus;

	eb_open(&b, "emu:link=ideal,user=pkt:1000");
	ering_init(&b, &r, MP_CH_C2H, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 16384, &km), 0);
	buf = pd_kmem_ptr(km);
	bus = pd_kmem_bus_addr(km);
	run(&b, MP_CH_C2H);   /* TEST_CONTROL = 0: the user stream */
	ering_put_raw(&r, bus, 4096, 0);          /* ends early with the packet */
	ering_put_raw(&r, bus + 4096, 600, 0);    /* first part of packet 2 */
	ering_put_raw(&r, bus + 8192, 4096, 0);   /* the rest: 400 bytes */
	ering_put_raw(&r, bus + 12288, 1000, 0);  /* exactly packet 3 */
	ering_doorbell(&b, &r);
	ck_assert(wait_head(&b, MP_CH_C2H, 4, EMU_WAIT_MS));
	ck_assert_uint_eq(rec_bytes(&r, 0), 1000);
	ck_assert_uint_eq(rec_status(&r, 0), MP_DESC_RESULT_STATUS_DONE_MASK | MP_DESC_RESULT_STATUS_EOP_MASK);
	ck_assert_uint_eq(rec_bytes(&r, 1), 600);
	ck_assert_uint_eq(rec_status(&r, 1), MP_DESC_RESULT_STATUS_DONE_MASK);
	ck_assert_uint_eq(rec_bytes(&r, 2), 400);
	ck_assert_uint_eq(rec_status(&r, 2), MP_DESC_RESULT_STATUS_DONE_MASK | MP_DESC_RESULT_STATUS_EOP_MASK);
	ck_assert_uint_eq(rec_bytes(&r, 3), 1000);
	ck_assert_uint_eq(rec_status(&r, 3), MP_DESC_RESULT_STATUS_DONE_MASK | MP_DESC_RESULT_STATUS_EOP_MASK);
	ck_assert_int_eq(pattern_mismatch(buf, 250, 0), -1);
	ck_assert_int_eq(pattern_mismatch(buf + 4096, 150, 250), -1);
	ck_assert_int_eq(pattern_mismatch(buf + 8192, 100, 400), -1);
	ck_assert_int_eq(pattern_mismatch(buf + 12288, 250, 500), -1);
	/* BYTES counts what was moved */
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_BYTES_LO), 3000);
	eb_close(&b);
}
END_TEST

/* Doorbells through BAR0 mapped as memory (the doorbell page, docs/virtual-board.md): a TAIL
 * stored into the page moves the engine; a TAIL set through the registers (a write, a channel
 * RESET, a global RESET) becomes the page's too, so that storing the same count again after a
 * reset is still a doorbell; writes to other words of the page do nothing. */
START_TEST(test_doorbell_page)
{
	struct eb b;
	struct ering r;
	pd_kmem *km;
	volatile uint32_t *page, *tail;
	uint8_t *buf;
	uint64_t bus;
	size_t sz;
	void *p;
	uint32_t k;
	const uint32_t len = 4096;

	eb_open(&b, "emu:link=ideal");
	ck_assert_int_eq(pd_map_bar(b.dev, MP_ENGINE_BAR, 0, &p, &sz), 0);
	page = p;
	tail = page + (MP_CH_BASE(MP_CH_C2H) + MP_CHREG_TAIL) / 4;
	ering_init(&b, &r, MP_CH_C2H, 8);
	ck_assert_int_eq(pd_kmem_alloc(b.dev, 16 * len, &km), 0);
	buf = pd_kmem_ptr(km);
	bus = pd_kmem_bus_addr(km);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	wr(&b, MP_REG_PATGEN_SEED, 11);
	run(&b, MP_CH_C2H);
	/* writes elsewhere in the page reach nothing */
	page[(MP_CH_BASE(MP_CH_C2H) + MP_CHREG_CONTROL) / 4] = MP_CHREG_CONTROL_RESET_MASK;
	page[MP_REG_SCRATCH / 4] = 0x1234;
	for (k = 0; k < 3; k++)
		ering_put_raw(&r, bus + (uint64_t)k * len, len, 0);
	__atomic_store_n(tail, r.tail, __ATOMIC_RELEASE);
	ck_assert(wait_head(&b, MP_CH_C2H, 3, EMU_WAIT_MS));
	ck_assert_uint_eq(crd(&b, MP_CH_C2H, MP_CHREG_TAIL), 3);
	ck_assert_uint_eq(rd(&b, MP_REG_SCRATCH), 0);
	ck_assert_uint_eq(state_of(crd(&b, MP_CH_C2H, MP_CHREG_STATUS)), MP_STATE_RUNNING);
	ck_assert_int_eq(pattern_mismatch(buf, 3 * len / 4, 11), -1);

	/* a channel RESET through the registers: TAIL 0 in the page too; 3 again rings */
	cwr(&b, MP_CH_C2H, MP_CHREG_CONTROL, MP_CHREG_CONTROL_RESET_MASK);
	ck_assert_uint_eq(*tail, 0);
	ering_init(&b, &r, MP_CH_C2H, 8);
	wr(&b, MP_REG_PATGEN_SEED, 22);
	run(&b, MP_CH_C2H);
	for (k = 0; k < 3; k++)
		ering_put_raw(&r, bus + (uint64_t)k * len, len, 0);
	__atomic_store_n(tail, r.tail, __ATOMIC_RELEASE);
	ck_assert(wait_head(&b, MP_CH_C2H, 3, EMU_WAIT_MS));
	ck_assert_int_eq(pattern_mismatch(buf, 3 * len / 4, 22), -1);

	/* a TAIL written through the registers is the page's: not taken for a doorbell again */
	ering_put_raw(&r, bus, len, 0);
	ering_doorbell(&b, &r);
	ck_assert_uint_eq(*tail, 4);
	ck_assert(wait_head(&b, MP_CH_C2H, 4, EMU_WAIT_MS));

	/* a global RESET clears every TAIL; then 11 descriptors wrap the 8-entry ring */
	wr(&b, MP_REG_CONTROL, MP_REG_CONTROL_RESET_MASK);
	ck_assert_uint_eq(*tail, 0);
	ering_init(&b, &r, MP_CH_C2H, 8);
	set_test(&b, MP_C2H_SOURCE_PATTERN, 0);
	wr(&b, MP_REG_PATGEN_SEED, 33);
	run(&b, MP_CH_C2H);
	for (k = 0; k < 11; k++) {
		ering_put_raw(&r, bus + (uint64_t)k * len, len, 0);
		if (k % 4 == 3 || k == 10) {
			__atomic_store_n(tail, r.tail, __ATOMIC_RELEASE);
			ck_assert(wait_head(&b, MP_CH_C2H, r.tail, EMU_WAIT_MS));
		}
	}
	ck_assert_int_eq(pattern_mismatch(buf, 11 * len / 4, 33), -1);
	/* a doorbell rung just before the unmap is not lost */
	ering_put_raw(&r, bus, len, 0);
	__atomic_store_n(tail, r.tail, __ATOMIC_RELEASE);
	ck_assert_int_eq(pd_unmap_bar(b.dev, MP_ENGINE_BAR), 0);
	ck_assert(wait_head(&b, MP_CH_C2H, 12, EMU_WAIT_MS));
	eb_close(&b);
}
END_TEST

Suite *test_suite(void)
{
	Suite *s = suite_create("emu-dma");
	TCase *tc = tcase_create("emu-dma");

	tcase_add_test(tc, test_c2h_pattern_odd_offsets);
	tcase_add_test(tc, test_c2h_ring_wrap);
	tcase_add_test(tc, test_c2h_umem_pages);
	tcase_add_test(tc, test_c2h_umem_random);
	tcase_add_test(tc, test_c2h_max_descriptor);
	tcase_add_test(tc, test_registers_count_a_seen_record);
	tcase_add_test(tc, test_c2h_across_4g);
	tcase_add_test(tc, test_patgen_seed_restarts);
	tcase_add_test(tc, test_h2c_checker);
	tcase_add_test(tc, test_h2c_user_sink_takes_data);
	tcase_add_test(tc, test_loopback);
	tcase_add_test(tc, test_loopback_fifo_full);
	tcase_add_test(tc, test_loopback_paced);
	tcase_add_test(tc, test_both_channels);
	tcase_add_test(tc, test_stop_and_run);
	tcase_add_test(tc, test_halt_in_flight);
	tcase_add_test(tc, test_config_locked_while_running);
	tcase_add_test(tc, test_user_packets);
	tcase_add_test(tc, test_doorbell_page);
	suite_add_tcase(s, tc);
	return s;
}
